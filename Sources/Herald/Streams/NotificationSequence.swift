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

    init(storage: StreamBuffer<N>) {
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

        fileprivate let lifetime: Lifetime

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
        let storage: StreamBuffer<N>

        init(storage: StreamBuffer<N>) {
            self.storage = storage
        }

        deinit {
            storage.finish()
        }
    }
}

@available(*, unavailable, message: "An iterator belongs to the task that iterates; share the sequence instead")
extension NotificationSequence.Iterator: Sendable {}
