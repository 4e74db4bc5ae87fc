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
    final class Storage: Sendable {
        private struct State: Sendable {
            var buffer = FIFOBuffer<N>()
            /// Consumers waiting for a notification, in the order they asked.
            var waiters: [CheckedContinuation<N?, Never>] = []
            var droppedCount = 0
            var isFinished = false
            var observation: ObservationToken?
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

        /// Called by the observer, on the posting thread, for every notification.
        func push(_ notification: N) {
            let waiter = state.withLock { state -> CheckedContinuation<N?, Never>? in
                if state.isFinished { return nil }
                if !state.waiters.isEmpty { return state.waiters.removeFirst() }
                switch policy {
                case .unbounded:
                    state.buffer.append(notification)
                case .bufferingNewest(let limit):
                    if limit <= 0 {
                        state.droppedCount += 1
                    } else {
                        if state.buffer.count >= limit {
                            _ = state.buffer.popFirst()
                            state.droppedCount += 1
                        }
                        state.buffer.append(notification)
                    }
                case .bufferingOldest(let limit):
                    if state.buffer.count >= Swift.max(limit, 0) {
                        state.droppedCount += 1
                    } else {
                        state.buffer.append(notification)
                    }
                }
                return nil
            }
            waiter?.resume(returning: notification)
        }

        func next(isolation actor: isolated (any Actor)?) async -> N? {
            if Task.isCancelled {
                finish()
                return nil
            }
            let immediate = state.withLock { state -> N?? in
                if let element = state.buffer.popFirst() { return .some(element) }
                if state.isFinished { return .some(nil) }
                return nil
            }
            if let immediate { return immediate }
            return await withTaskCancellationHandler {
                await withCheckedContinuation(isolation: actor) { (continuation: CheckedContinuation<N?, Never>) in
                    let resumeNow = state.withLock { state -> N?? in
                        if let element = state.buffer.popFirst() { return .some(element) }
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
            let (waiters, observation) = state.withLock { state -> ([CheckedContinuation<N?, Never>], ObservationToken?) in
                if state.isFinished { return ([], nil) }
                state.isFinished = true
                state.buffer = FIFOBuffer()
                defer {
                    state.waiters = []
                    state.observation = nil
                }
                return (state.waiters, state.observation)
            }
            observation?.cancel()
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
        let observation = register(
            target: .posting, subject: subject, owner: nil, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { [storage] note in storage.push(note) }
        )
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
