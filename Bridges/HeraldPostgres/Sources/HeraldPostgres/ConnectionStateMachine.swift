import Foundation

/// The life cycle of a link's run: connecting, listening, losing the listening connection and
/// reconnecting with backoff, and stopping, gracefully or at once.
///
/// A pure state machine, in postgres-nio's style: each input is a mutating function that returns
/// what to do next (an action, or the waiters to resume), which ``LinkCore`` does after unlocking.
/// It is generic over what waits (`listening()` calls, `close()` calls and the run itself), so that
/// its tests need neither a server nor a task.
struct ConnectionStateMachine<ListeningWaiter, StopWaiter> {
    /// Where the run is.
    enum Phase: Equatable {
        /// Created; `run()` not called yet.
        case idle
        /// `run()` opens the connections and the `LISTEN`.
        case connecting
        /// `LISTEN` is in effect (or the listening connection is reconnecting).
        case running
        /// A stop was asked for, and the run is ending.
        case stopping
        /// The run ended, or never ran and was closed.
        case stopped
    }

    /// How the run is asked to end.
    enum Stop: Equatable {
        /// `close()` or a graceful shutdown: send what was accepted, then close.
        case graceful
        /// The run's task was cancelled: return promptly, reporting what was not sent.
        case immediate
    }

    /// What `run()` does when called.
    enum RunAction: Equatable {
        case connect
        /// The link runs or ran already.
        case refuse
    }

    /// What a `listening()` call does.
    enum ListeningAction {
        case wait
        case succeed
        case fail((any Error)?)
    }

    /// What to do once a stop is asked for.
    enum StopAction {
        case none
        /// The link never ran: it is stopped now; give up what it queued.
        case closeUnstarted
        /// Wake the run, which waits for the stop request (if it waits already).
        case wakeRun(StopWaiter?)
    }

    /// What the listening task does after its connection ended.
    enum ListenerLossAction: Equatable {
        /// The link is stopping: end the listening task.
        case stop
        /// Report the loss (the first of an outage), and reconnect after `delay`.
        case reconnect(after: Duration, reportLoss: Bool)
    }

    /// What the listening task does once `LISTEN` is in effect.
    enum ListenerListeningAction {
        /// The first `LISTEN` of the run: resume the `listening()` calls.
        case started([ListeningWaiter])
        /// `LISTEN` is in effect again after an outage that began at `since`: report it.
        case recovered(since: Date)
    }

    private(set) var phase = Phase.idle
    /// Why the run failed, if it did.
    private(set) var failure: (any Error)?
    /// The stop asked for, if any; an immediate one overrides a graceful one.
    private(set) var stopRequest: Stop?
    private var listeningWaiters: [ListeningWaiter] = []
    /// The run, waiting for a stop request.
    private var runWaiter: StopWaiter?
    /// `close()` calls waiting for the run to end.
    private var stoppedWaiters: [StopWaiter] = []
    /// When the listening connection was lost, while it reconnects.
    private(set) var outageStart: Date?
    private let reconnection: PostgresLink.Reconnection
    /// The waits between reconnection attempts of the listening connection.
    private var backoff: Backoff

    init(reconnection: PostgresLink.Reconnection) {
        self.reconnection = reconnection
        self.backoff = Backoff(reconnection)
    }

    // MARK: - Running

    /// `run()` was called.
    mutating func run() -> RunAction {
        guard phase == .idle else { return .refuse }
        phase = .connecting
        return .connect
    }

    /// `LISTEN` is in effect; see ``ListenerListeningAction``.
    mutating func listening(at date: Date) -> ListenerListeningAction {
        resetBackoff()
        if phase == .connecting {
            phase = .running
            return .started(listeningWaiters.take())
        }
        let since = outageStart ?? date
        outageStart = nil
        return .recovered(since: since)
    }

    /// A `listening()` call.
    mutating func waitForListening(_ waiter: ListeningWaiter) -> ListeningAction {
        switch phase {
        case .running, .stopping:  // stopping: only after listening
            return .succeed
        case .stopped:
            return .fail(failure)
        case .idle, .connecting:
            listeningWaiters.append(waiter)
            return .wait
        }
    }

    /// `close()`, a graceful shutdown, or the cancellation of the run's task.
    mutating func requestStop(_ stop: Stop) -> StopAction {
        switch phase {
        case .idle:
            phase = .stopped
            return .closeUnstarted
        case .connecting, .running:
            if stopRequest != .immediate { stopRequest = stop }
            return .wakeRun(runWaiter.take())
        case .stopping, .stopped:
            if phase == .stopping, stop == .immediate, stopRequest == .graceful { stopRequest = .immediate }
            return .none
        }
    }

    /// The run, listening, waits for a stop request: returns it if there is one already, or keeps
    /// `waiter` to be resumed by ``requestStop(_:)``.
    mutating func waitForStopRequest(_ waiter: StopWaiter) -> Stop? {
        if let stopRequest {
            phase = .stopping
            return stopRequest
        }
        runWaiter = waiter
        return nil
    }

    /// The run woke for the stop request: it is stopping.
    mutating func stopping() -> Stop {
        phase = .stopping
        return stopRequest ?? .graceful
    }

    /// A `close()` call, waiting for the run to end: `true` if it has ended (resume at once).
    mutating func waitUntilStopped(_ waiter: StopWaiter) -> Bool {
        guard phase != .stopped else { return true }
        stoppedWaiters.append(waiter)
        return false
    }

    /// The run ended, with `failure` if it failed before listening: the waiters to resume.
    mutating func stopped(failure: (any Error)?) -> (listening: [ListeningWaiter], stopped: [StopWaiter]) {
        phase = .stopped
        self.failure = failure
        outageStart = nil
        return (listeningWaiters.take(), stoppedWaiters.take())
    }

    /// Whether the link is stopping or stopped: its connections need not reconnect.
    var isEnding: Bool { phase == .stopping || phase == .stopped || stopRequest != nil }

    // MARK: - Reconnecting

    /// The listening connection ended at `date`.
    mutating func listenerLost(at date: Date) -> ListenerLossAction {
        guard !isEnding else { return .stop }
        let isFirst = outageStart == nil
        if isFirst { outageStart = date }
        return .reconnect(after: backoff.take(), reportLoss: isFirst)
    }

    /// An attempt to reconnect the listening connection failed: the wait before the next, or `nil` if
    /// the link is ending.
    mutating func reconnectFailed() -> Duration? {
        guard !isEnding else { return nil }
        return backoff.take()
    }

    private mutating func resetBackoff() {
        backoff = Backoff(reconnection)
    }
}

/// Exponential backoff for a connection of its own (the sending one): the same delays as
/// ``ConnectionStateMachine``'s.
struct Backoff: Equatable {
    private let reconnection: PostgresLink.Reconnection
    private var next: Duration

    init(_ reconnection: PostgresLink.Reconnection) {
        self.reconnection = reconnection
        self.next = reconnection.initialDelay
    }

    /// The wait before the next attempt.
    mutating func take() -> Duration {
        let delay = next
        next = min(delay * reconnection.multiplier, reconnection.maximumDelay)
        return delay
    }
}

extension Array {
    /// Returns the elements and leaves the array empty.
    mutating func take() -> Self {
        defer { self = [] }
        return self
    }
}
