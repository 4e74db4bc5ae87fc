/// Hooks for `HeraldTesting`. Not public API: they may change in any release.
extension NotificationHub {
    /// Observes `N` with a handler that also learns the post's subject.
    ///
    /// `HeraldTesting`'s `NotificationRecorder` uses it to record where each notification came
    /// from.
    ///
    /// ```swift
    /// @_spi(Testing) import Herald
    /// let token = hub.observeWithContext(Ping.self, on: .posting) { note, subjectID in
    ///     print(note, subjectID as Any)
    /// }
    /// ```
    ///
    /// ## Threading
    /// As for `observe(_:)`: see <doc:ObservingNotifications>.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``. On ``DeliveryTarget/posting`` the handler runs inside
    ///     `post` and has no mailbox: the policy has no effect.
    ///   - replayLatest: Whether to start with the retained values.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, given the notification and the identity of its post's subject.
    /// - Returns: The observation.
    @_spi(Testing)
    public func observeWithContext<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N, _ subjectID: ObjectIdentifier?) throws -> Void
    ) -> ObservationToken {
        // An observer of the family of `N` alone: what it receives is a `FamilyDelivery`, which
        // carries the subject, so its handler is an ordinary one.
        register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line, bufferingPolicy: bufferingPolicy,
            replayLatest: replayLatest, family: FamilyOf(only: N.self),
            handler: .plain { (delivery: FamilyDelivery<N>) in try handler(delivery.value, delivery.subjectID) })
    }

    /// Observes the family `Family` (see `observe(every:from:on:priority:bufferingPolicy:fileID:line:_:)`)
    /// with a handler that also learns the post's subject.
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, given the notification and the identity of its post's subject.
    /// - Returns: The observation.
    @_spi(Testing)
    public func observeWithContext<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Family, _ subjectID: ObjectIdentifier?) throws -> Void
    ) -> ObservationToken {
        if refusesFamily(Family.self, fileID: fileID, line: line) { return .refused() }
        return register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line, bufferingPolicy: bufferingPolicy,
            family: FamilyOf<Family>(),
            handler: .plain { (delivery: FamilyDelivery<Family>) in try handler(delivery.value, delivery.subjectID) })
    }

    /// The main-queue executor this hub was given with `_useMainQueueExecutor(_:)`, if any.
    ///
    /// `HeraldTesting` reads it to tell a hub that delivers to the real main queue from one given a
    /// `TestMainActor`.
    @_spi(Testing)
    public var _mainQueueExecutor: (any ManualMainQueueExecutor)? {
        core.manualMainQueue
    }

    /// The per-type registry entries that registrations and cancellations on this hub have
    /// touched so far, in all.
    ///
    /// Registering or cancelling an observer of one type touches that type's entry. Registering a
    /// family observer or a tap touches none: each type joins it at its next post (see
    /// ``registryMembershipUpdates``); but an observer made with `observeWithContext(_:)`, whose
    /// type joins it at once, touches that type's. Cancelling one touches the types that joined it. Tests read
    /// the difference across a call to check what it costs without timing it.
    ///
    /// ```swift
    /// let before = hub.registryEntriesTouched
    /// hub.observe(every: (any AnalyticsEvent).self) { _ in }.cancel()
    /// #expect(hub.registryEntriesTouched - before == 0)
    /// ```
    @_spi(Testing)
    public var registryEntriesTouched: Int {
        core.registry.entriesTouched
    }

    /// The times a post found its type's observers outdated by a family registration and brought
    /// them up to date (once per type and family registration, whichever thread posts), in all.
    @_spi(Testing)
    public var registryMembershipUpdates: Int {
        core.registry.membershipUpdates
    }
}
