import Synchronization

/// What a ``NotificationSequence`` does with notifications that arrive faster than they are consumed.
///
/// ```swift
/// for await tick in hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(1)) {
///     render(tick)                       // always the newest tick; older ones are dropped and counted
/// }
/// ```
///
/// A bounded policy never drops silently: every notification it discards is counted in
/// ``NotificationSequence/droppedCount``.
public enum NotificationBufferingPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Keeps every notification until it is consumed. Nothing is ever dropped.
    case unbounded
    /// Keeps at most the newest *n* unconsumed notifications: a new one pushes out the oldest.
    ///
    /// A limit of zero or less keeps nothing: only a consumer already waiting gets a notification.
    case bufferingNewest(Int)
    /// Keeps at most the oldest *n* unconsumed notifications: a new one is dropped while the buffer
    /// is full.
    ///
    /// A limit of zero or less keeps nothing: only a consumer already waiting gets a notification.
    case bufferingOldest(Int)

    /// The policy and its limit, for example `bufferingNewest(100)`.
    public var description: String {
        switch self {
        case .unbounded: return "unbounded"
        case .bufferingNewest(let limit): return "bufferingNewest(\(limit))"
        case .bufferingOldest(let limit): return "bufferingOldest(\(limit))"
        }
    }
}

/// An asynchronous sequence of the notifications of one type posted to a hub.
///
/// Make one with ``NotificationHub/notifications(of:from:bufferingPolicy:replayLatest:fileID:line:)``.
/// The hub observes on the posting thread and puts each notification into the sequence's buffer,
/// so nothing posted after the sequence was made is missed, even before iteration starts.
///
/// ```swift
/// let events = hub.notifications(of: UserCreated.self, bufferingPolicy: .bufferingOldest(100))
/// Task {
///     for await event in events {
///         await store.insert(event.userID)
///     }
/// }
/// // …later, in a diagnostic view:
/// print("dropped \(events.droppedCount) user events")
/// ```
///
/// ## Threading and lifetime
/// - Elements come out in the order they were posted by each thread.
/// - A post never waits for the consumer: when a bounded buffer is full, the policy decides which
///   notification is dropped, and ``droppedCount`` counts it.
/// - The sequence ends, and its observation is cancelled, when a task waiting in `next()` is
///   cancelled (or calls it after being cancelled), when you call ``cancel()``, or when the
///   sequence and all its iterators are gone. Notifications still buffered then are discarded.
/// - It is meant for one consumer. Iterators made from the same sequence share its buffer: each
///   notification goes to one of them, in the order they asked.
/// - It does not end by itself when the hub or a `from:` subject is deallocated; it just receives
///   nothing more. Cancel the consuming task to stop.
public struct NotificationSequence<N: TypedNotification>: AsyncSequence, Sendable {
    /// The notifications the sequence yields.
    public typealias Element = N
    /// The sequence never throws: it ends instead.
    public typealias Failure = Never

    private let lifetime: Lifetime

    init(storage: Storage) {
        self.lifetime = Lifetime(storage: storage)
    }

    /// How many notifications the buffering policy has dropped so far.
    ///
    /// Always zero with ``NotificationBufferingPolicy/unbounded``. Readable from any thread.
    public var droppedCount: Int {
        lifetime.storage.droppedCount
    }

    /// The buffering policy this sequence was made with.
    public var bufferingPolicy: NotificationBufferingPolicy {
        lifetime.storage.policy
    }

    /// Ends the sequence: stops observing, discards what is buffered, and makes every waiting and
    /// later `next()` return `nil`.
    ///
    /// ```swift
    /// let events = hub.notifications(of: UserCreated.self)
    /// defer { events.cancel() }
    /// ```
    ///
    /// Callable from any thread, any number of times. Once it returns, the hub has no observer
    /// for this sequence any more.
    public func cancel() {
        lifetime.storage.finish()
    }

    /// Makes an iterator over the notifications.
    ///
    /// - Returns: An iterator that shares this sequence's buffer.
    public func makeAsyncIterator() -> Iterator {
        Iterator(lifetime: lifetime)
    }

    /// The iterator of a ``NotificationSequence``.
    ///
    /// It returns `nil` once the sequence has ended (see ``NotificationSequence``), and at once if
    /// its task is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        /// The notifications the iterator yields.
        public typealias Element = N
        /// The iterator never throws: it returns `nil` at the end.
        public typealias Failure = Never

        private let lifetime: Lifetime

        fileprivate init(lifetime: Lifetime) {
            self.lifetime = lifetime
        }

        /// The next notification, waiting for one if the buffer is empty.
        ///
        /// - Returns: The next notification, or `nil` when the sequence has ended or the task is
        ///   cancelled.
        public mutating func next() async -> N? {
            await lifetime.storage.next(isolation: nil)
        }

        /// The next notification, waiting for one in the caller's isolation.
        ///
        /// - Parameter actor: The caller's actor isolation; leave the default.
        /// - Returns: The next notification, or `nil` when the sequence has ended or the task is
        ///   cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> N? {
            await lifetime.storage.next(isolation: actor)
        }
    }

    /// Ends the sequence when the last copy of the sequence and of its iterators is gone.
    final class Lifetime: Sendable {
        let storage: Storage

        init(storage: Storage) {
            self.storage = storage
        }

        deinit {
            storage.finish()
        }
    }

    /// The buffer shared by the hub's observer and the consumers.
    ///
    /// A post appends to the buffer *held* while it still reaches other lanes and streams (see
    /// ``LaneStateMachine``): a consumer takes only the elements before the first held one, so it
    /// cannot react to a post before every other observer has it. Whatever the buffer lets go of
    /// (a value pushed out by the policy, the rest of the buffer when the sequence ends) is
    /// released after its lock.
    final class Storage: Sendable {
        private struct Hold: Sendable {
            let token: UInt
            let sequence: Int
        }

        private struct State: Sendable {
            var buffer = FIFOBuffer<N>()
            /// Elements appended to the buffer so far.
            var appendedCount = 0
            /// Elements taken out of the buffer so far, by consumers or by the policy.
            var removedCount = 0
            /// Elements still held, oldest first.
            var holds: [Hold] = []
            /// Consumers waiting for a notification, in the order they asked.
            var waiters: [CheckedContinuation<N?, Never>] = []
            var droppedCount = 0
            var isFinished = false
            var observation: ObservationToken?

            /// Elements a consumer may take now.
            var readyCount: Int { (holds.first?.sequence ?? appendedCount) - removedCount }

            mutating func popFirst() -> N? {
                guard readyCount > 0, let element = buffer.popFirst() else { return nil }
                removedCount += 1
                return element
            }

            /// Drops the oldest element, held or not.
            mutating func dropFirst() -> N? {
                guard let element = buffer.popFirst() else { return nil }
                if holds.first?.sequence == removedCount { holds.removeFirst() }
                removedCount += 1
                droppedCount += 1
                return element
            }

            /// Pairs waiting consumers with ready elements.
            mutating func matchWaiters() -> [(CheckedContinuation<N?, Never>, N)] {
                var matched: [(CheckedContinuation<N?, Never>, N)] = []
                while !waiters.isEmpty, let element = popFirst() {
                    matched.append((waiters.removeFirst(), element))
                }
                return matched
            }
        }

        let policy: NotificationBufferingPolicy
        private let state = Lock(State())

        init(policy: NotificationBufferingPolicy) {
            self.policy = policy
        }

        var droppedCount: Int {
            state.withLock { $0.droppedCount }
        }

        /// Keeps the observation that feeds this storage, or cancels it if the sequence already ended.
        func attach(_ observation: ObservationToken) {
            let isFinished = state.withLock { state -> Bool in
                if !state.isFinished { state.observation = observation }
                return state.isFinished
            }
            if isFinished { observation.cancel() }
        }

        /// Called by the post, on the posting thread, for every notification.
        ///
        /// - Parameter hold: The post's hold token, or 0 if a consumer may take it at once.
        /// - Returns: `false` if the sequence has ended.
        func push(_ notification: N, hold: UInt) -> Bool {
            let (accepted, dropped, matched) = state.withLock {
                state -> (Bool, N?, [(CheckedContinuation<N?, Never>, N)]) in
                if state.isFinished { return (false, nil, []) }
                let dropped = append(notification, hold: hold, to: &state)
                return (true, dropped, state.matchWaiters())
            }
            withExtendedLifetime(dropped) {}  // released here, after the lock
            for (waiter, element) in matched {
                waiter.resume(returning: element)
            }
            return accepted
        }

        /// Puts replayed values into the buffer of a sequence nobody consumes yet.
        ///
        /// - Returns: The values the policy dropped, to release after the registry lock.
        func preload(_ notifications: [N]) -> [N] {
            state.withLock { state in
                notifications.compactMap { append($0, hold: 0, to: &state) }
            }
        }

        /// Appends `notification` under the buffering policy. Call under the lock.
        ///
        /// - Returns: The element the policy pushed out, to release after the lock.
        private func append(_ notification: N, hold: UInt, to state: inout State) -> N? {
            // A waiting consumer takes an element as soon as it is released: room for it too.
            let limit: Int
            switch policy {
            case .unbounded: limit = .max
            case .bufferingNewest(let value), .bufferingOldest(let value): limit = Swift.max(value, 0) + state.waiters.count
            }
            var dropped: N?
            if state.buffer.count >= limit {
                guard case .bufferingNewest = policy, limit > 0 else {
                    state.droppedCount += 1  // the new one is dropped
                    return nil
                }
                dropped = state.dropFirst()
            }
            if hold != 0 {
                state.holds.append(Hold(token: hold, sequence: state.appendedCount))
            }
            state.appendedCount += 1
            state.buffer.append(notification)
            return dropped
        }

        /// The post that appended under `hold` has reached every lane and stream.
        func release(hold: UInt) {
            let matched = state.withLock { state -> [(CheckedContinuation<N?, Never>, N)] in
                guard let index = state.holds.firstIndex(where: { $0.token == hold }) else { return [] }
                state.holds.remove(at: index)
                return state.matchWaiters()
            }
            for (waiter, element) in matched {
                waiter.resume(returning: element)
            }
        }

        func next(isolation actor: isolated (any Actor)?) async -> N? {
            if Task.isCancelled {
                finish()
                return nil
            }
            let immediate = state.withLock { state -> N?? in
                if let element = state.popFirst() { return .some(element) }
                if state.isFinished { return .some(nil) }
                return nil
            }
            if let immediate { return immediate }
            return await withTaskCancellationHandler {
                await withCheckedContinuation(isolation: actor) { (continuation: CheckedContinuation<N?, Never>) in
                    let resumeNow = state.withLock { state -> N?? in
                        if let element = state.popFirst() { return .some(element) }
                        if state.isFinished { return .some(nil) }
                        state.waiters.append(continuation)
                        return nil
                    }
                    if let resumeNow { continuation.resume(returning: resumeNow) }
                }
            } onCancel: {
                finish()
            }
        }

        /// Ends the sequence: cancels the observation, discards the buffer, wakes every waiter.
        func finish() {
            let (waiters, observation, buffer) = state.withLock {
                state -> ([CheckedContinuation<N?, Never>], ObservationToken?, FIFOBuffer<N>) in
                if state.isFinished { return ([], nil, FIFOBuffer()) }
                state.isFinished = true
                defer {
                    state.buffer = FIFOBuffer()
                    state.holds = []
                    state.waiters = []
                    state.observation = nil
                }
                return (state.waiters, state.observation, state.buffer)
            }
            observation?.cancel()
            withExtendedLifetime(buffer) {}  // the discarded elements go here, after the lock
            for waiter in waiters {
                waiter.resume(returning: nil)
            }
        }
    }
}

@available(*, unavailable, message: "An iterator belongs to the task that iterates; share the sequence instead")
extension NotificationSequence.Iterator: Sendable {}

extension NotificationHub {
    /// An asynchronous sequence of the notifications of type `N` posted from now on.
    ///
    /// ```swift
    /// for await note in hub.notifications(of: UserCreated.self) {
    ///     print("user \(note.userID) created")
    /// }
    /// ```
    ///
    /// The observation starts when this method returns, not when iteration starts, so a post made
    /// right after it is not missed. With a bounded `bufferingPolicy`, a consumer that falls behind
    /// loses notifications, and each one lost is counted in
    /// ``NotificationSequence/droppedCount``: nothing is dropped silently.
    ///
    /// ## Threading
    /// The hub observes on the posting thread: a post appends to the buffer (or hands the
    /// notification to a waiting consumer) and returns; it never waits for the consumer. The
    /// consumer runs in its own task. Cancelling that task ends the sequence and cancels the
    /// observation, so ``observerCount(of:)`` goes back down.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - subject: If not `nil`, only posts made with this object as subject are delivered (held
    ///     weakly).
    ///   - bufferingPolicy: What to keep when notifications arrive faster than they are consumed.
    ///     The default keeps everything.
    ///   - replayLatest: Whether to start with the retained values (see
    ///     ``postAndRetain(_:from:)``).
    ///   - fileID: The file that registers, for ``registrations(of:)``; leave the default.
    ///   - line: The line that registers; leave the default.
    /// - Returns: The sequence. It is `Sendable`: make it in one task and consume it in another.
    /// - Complexity: Each post costs amortised O(1) for the sequence.
    public func notifications<N: TypedNotification>(
        of type: N.Type,
        from subject: AnyObject? = nil,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> NotificationSequence<N> {
        let storage = NotificationSequence<N>.Storage(policy: bufferingPolicy)
        let observer = Observer<N>(
            core: core, stream: storage, filters: subject.map { Filters(subject: $0, owner: nil) },
            location: SourceLocation(fileID: fileID, line: UInt32(clamping: line)))
        if replayLatest {
            core.addReplaying(observer)
        } else {
            core.add(observer)
        }
        let observation = ObservationToken(registration: observer)
        storage.attach(observation)
        return NotificationSequence(storage: storage)
    }
}

/// A first-in, first-out buffer with amortised O(1) append and removal.
struct FIFOBuffer<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }

    var isEmpty: Bool { head == storage.count }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 1024)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
