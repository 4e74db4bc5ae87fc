/// An asynchronous sequence of the notifications of a family posted from now on: every type that
/// conforms to a protocol, or every subclass of a class. Made by
/// ``NotificationHub/notifications(every:from:bufferingPolicy:replayLatest:fileID:line:)``.
///
/// It behaves like ``NotificationSequence``, with one buffer for every type of the family: a
/// consumer sees the posts of one thread in post order, across types.
public struct FamilyNotificationSequence<Family: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Family
    public typealias Failure = Never

    let base: NotificationSequence<FamilyDelivery<Family>>

    /// The notifications a bounded buffering policy dropped because the consumer fell behind.
    public var droppedCount: Int { base.droppedCount }

    /// The buffering policy the sequence was made with.
    public var bufferingPolicy: NotificationBufferingPolicy { base.bufferingPolicy }

    /// Ends the sequence and its observation: a waiting `next()` returns `nil`.
    public func cancel() { base.cancel() }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator())
    }

    /// The iterator of a ``FamilyNotificationSequence``.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = Family
        public typealias Failure = Never

        fileprivate var base: NotificationSequence<FamilyDelivery<Family>>.Iterator

        /// The next notification, or `nil` once the sequence has ended.
        public mutating func next() async -> Family? {
            await base.next()?.value
        }

        /// The next notification, or `nil` once the sequence has ended.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Family? {
            await base.next(isolation: actor)?.value
        }
    }
}

@available(*, unavailable, message: "An iterator belongs to the task that iterates; share the sequence instead")
extension FamilyNotificationSequence.Iterator: Sendable {}
