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
        let storage = StreamBuffer<N>(policy: bufferingPolicy)
        let observer = Observer<N>(
            registry: core.registry, stream: storage, filters: subject.map { Filters(subject: $0, owner: nil) },
            location: SourceLocation(fileID: fileID, line: UInt32(clamping: line)))
        core.add(observer, replayLatest: replayLatest)
        storage.attach(ObservationToken(registration: observer))
        return NotificationSequence(storage: storage)
    }

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
        let storage = StreamBuffer<FamilyDelivery<Family>>(policy: bufferingPolicy)
        if refusesFamily(Family.self, fileID: fileID, line: line) {
            storage.finish()  // the sequence ends at once
            return FamilyNotificationSequence(base: NotificationSequence(storage: storage))
        }
        let observer = Observer<FamilyDelivery<Family>>(
            registry: core.registry, stream: storage, filters: subject.map { Filters(subject: $0, owner: nil) },
            location: SourceLocation(fileID: fileID, line: UInt32(clamping: line)), family: FamilyOf<Family>())
        core.add(observer, replayLatest: replayLatest)
        storage.attach(ObservationToken(registration: observer))
        return FamilyNotificationSequence(base: NotificationSequence(storage: storage))
    }
}
