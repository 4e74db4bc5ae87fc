/// An asynchronous sequence of the notifications of a family posted from now on: every type that
/// conforms to a protocol, or every subclass of a class. Made by
/// ``NotificationHub/notifications(every:from:bufferingPolicy:replayLatest:fileID:line:)``.
///
/// It behaves like ``NotificationSequence``, with one buffer for every type of the family: a
/// consumer sees the posts of one thread in post order, across types.
public struct FamilyNotificationSequence<Family: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Family
    public typealias Failure = Never

    private let base: NotificationSequence<FamilyDelivery<Family>>

    init(base: NotificationSequence<FamilyDelivery<Family>>) {
        self.base = base
    }

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

        private var base: NotificationSequence<FamilyDelivery<Family>>.Iterator

        fileprivate init(base: NotificationSequence<FamilyDelivery<Family>>.Iterator) {
            self.base = base
        }

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

extension NotificationHub {
    /// An asynchronous sequence of the notifications of a family posted from now on: every type
    /// that conforms to a protocol, or every subclass of a class.
    ///
    /// ```swift
    /// for await event in hub.notifications(every: (any AnalyticsEvent).self) {
    ///     tracker.send(event.name)
    /// }
    /// ```
    ///
    /// Like ``notifications(of:from:bufferingPolicy:replayLatest:fileID:line:)``, the observation
    /// starts when this method returns; the sequence has one buffer for every type of the family.
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - subject: If not `nil`, only posts made with this object as subject are delivered (held
    ///     weakly).
    ///   - bufferingPolicy: What to keep when notifications arrive faster than they are consumed.
    ///     The default keeps everything.
    ///   - replayLatest: Whether the sequence starts with the retained values of every type of the
    ///     family, in the order they were retained: <doc:ObservingNotifications#Replay>.
    ///   - fileID: The file that registers, for ``registrations(every:)``; leave the default.
    ///   - line: The line that registers; leave the default.
    /// - Returns: The sequence. It is `Sendable`: make it in one task and consume it in another.
    public func notifications<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> FamilyNotificationSequence<Family> {
        let storage = NotificationSequence<FamilyDelivery<Family>>.Storage(policy: bufferingPolicy)
        if refusesFamily(Family.self, fileID: fileID, line: line) {
            storage.finish()  // the sequence ends at once
            return FamilyNotificationSequence(base: NotificationSequence(storage: storage))
        }
        let observer = Observer<FamilyDelivery<Family>>(
            core: core, stream: storage, filters: subject.map { Filters(subject: $0, owner: nil) },
            location: SourceLocation(fileID: fileID, line: UInt32(clamping: line)), family: Herald.Family<Family>())
        if replayLatest {
            core.addReplaying(observer)
        } else {
            core.registry.addFamily(observer)
        }
        let observation = ObservationToken(registration: observer)
        storage.attach(observation)
        return FamilyNotificationSequence(base: NotificationSequence(storage: storage))
    }
}
