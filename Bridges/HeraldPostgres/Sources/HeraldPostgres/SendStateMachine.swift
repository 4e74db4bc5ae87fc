import DequeModule

/// The sending side of a link: posts queued in sequence order, drained one `NOTIFY` at a time on one
/// connection, and sent again on a new connection when the old one is lost.
///
/// A pure state machine: each input is a mutating function that returns what to do next (an
/// ``Action``), which ``LinkCore`` performs after unlocking. It is generic over the connection and
/// over what waits for the sender to stop, so that its tests need neither a server nor a task.
struct SendStateMachine<Connection, Waiter> {
    /// What to do after an input.
    enum Action {
        case none
        /// Write one `NOTIFY` with these notifications (one, or a batch) on this connection.
        case transmit([Envelope.Item], on: Connection)
        /// The link closed and everything queued was sent or given up: close the connection, if
        /// any, then resume the waiters.
        case finish(Connection?, waiters: [Waiter])
    }

    /// Posts not yet in a `NOTIFY`, in sequence order.
    private(set) var pending = Deque<Envelope.Item>()
    /// The notifications of the `NOTIFY` in flight, or to send again once reconnected.
    private(set) var inFlight: [Envelope.Item]?
    /// `nil` before the first connection, while reconnecting, and once stopped.
    private var connection: Connection?
    private var isReconnecting = false
    /// The link is closing: once nothing is pending or in flight, the sender stops.
    private var isClosing = false
    /// Everything queued was sent or given up; the connection was handed back to be closed.
    private(set) var isStopped = false
    /// `close()` calls waiting for the sender to stop.
    private var stopWaiters: [Waiter] = []
    /// How many of the pending posts, from the first, go in the next `NOTIFY`; at least one.
    private let batchCount: (Deque<Envelope.Item>) -> Int

    init(batchCount: @escaping (Deque<Envelope.Item>) -> Int) {
        self.batchCount = batchCount
    }

    /// Posts queued and not yet sent or given up.
    var queued: Int { pending.count + (inFlight?.count ?? 0) }

    /// A post to send: queued, unless `limit` posts wait already.
    mutating func enqueue(_ item: Envelope.Item, limit: Int) -> (isQueued: Bool, action: Action) {
        guard queued < limit else { return (false, .none) }
        pending.append(item)
        return (true, next())
    }

    /// A connection is open, the first or a new one after a loss: the `NOTIFY` that was in flight
    /// when the old one was lost goes again first.
    mutating func connected(_ connection: Connection) -> Action {
        isReconnecting = false
        self.connection = connection
        if let inFlight { return .transmit(inFlight, on: connection) }
        return next()
    }

    /// The `NOTIFY` in flight completed, or failed as a statement (its notifications are given up).
    mutating func completed() -> Action {
        inFlight = nil
        return next()
    }

    /// The connection was lost with a `NOTIFY` in flight; it is kept, to send again.
    mutating func connectionLost() {
        connection = nil
        isReconnecting = true
    }

    /// The link closes: what is queued is sent first. `waiter`, if given, is resumed once the
    /// sender stopped; returns `nil` if it has stopped already (resume the waiter at once).
    mutating func close(waiter: Waiter?) -> Action? {
        isClosing = true
        guard !isStopped else { return nil }
        if let waiter { stopWaiters.append(waiter) }
        return next()
    }

    /// Reconnecting ended without a connection (the link closed meanwhile), or the first connection
    /// failed: the sender stops, and what was queued is given up.
    mutating func giveUp() -> (lost: [Envelope.Item], waiters: [Waiter]) {
        let lost = (inFlight ?? []) + Array(pending)
        inFlight = nil
        pending.removeAll()
        isReconnecting = false
        isClosing = true
        isStopped = true
        connection = nil
        let waiters = stopWaiters
        stopWaiters = []
        return (lost, waiters)
    }

    /// Stops at once (the link's run was cancelled): gives up what is queued, and hands back the
    /// connection to be closed.
    mutating func stopNow() -> (lost: [Envelope.Item], connection: Connection?, waiters: [Waiter]) {
        let connection = self.connection
        let (lost, waiters) = giveUp()
        return (lost, connection, waiters)
    }

    /// The next `NOTIFY` if the connection is idle and posts wait (as many as fit in one), or, once
    /// the link is closing and nothing waits, to stop.
    private mutating func next() -> Action {
        guard !isStopped, !isReconnecting, inFlight == nil else { return .none }
        if !pending.isEmpty, let connection {
            let count = min(max(batchCount(pending), 1), pending.count)
            let items = Array(pending.prefix(count))
            pending.removeFirst(count)
            inFlight = items
            return .transmit(items, on: connection)
        }
        guard isClosing, pending.isEmpty else { return .none }
        isStopped = true
        let connection = self.connection
        self.connection = nil
        let waiters = stopWaiters
        stopWaiters = []
        return .finish(connection, waiters: waiters)
    }
}
