/// `observe(every:)` given a notification type instead of a family.
///
/// `every:` takes a protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
/// Given a concrete notification type, it observes that one type, as `observe(_:)` does, but the
/// compiler warns: these overloads are more specific than the family ones, so they are chosen for
/// a `TypedNotification` type, and they are deprecated, not unavailable, because an unavailable
/// overload would be ranked below the generic family one and the call would compile silently.
/// Each forwards to the matching `observe(_:)`.
extension NotificationHub {
    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:)"
    )
    public func observe<N: TypedNotification>(
        every type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N) throws -> Void
    ) -> ObservationToken {
        observe(
            type, from: subject, on: target, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler)
    }

    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:)"
    )
    public func observe<N: TypedNotification>(
        every type: N.Type,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (N) throws -> Void
    ) -> ObservationToken {
        observe(
            type, from: subject, on: mainActor, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler)
    }

    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:)"
    )
    public func observe<N: TypedNotification, A: Actor>(
        every type: N.Type,
        from subject: AnyObject? = nil,
        on actor: A,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (isolated A, N) throws -> Void
    ) -> ObservationToken {
        observe(
            type, from: subject, on: actor, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler)
    }

    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:owner:)"
    )
    @discardableResult
    public func observe<N: TypedNotification, Owner: AnyObject & Sendable>(
        every type: N.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Owner, N) throws -> Void
    ) -> ObservationToken {
        observe(
            type, owner: owner, from: subject, on: target, priority: priority, bufferingPolicy: bufferingPolicy,
            fileID: fileID, line: line, handler)
    }

    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:owner:)"
    )
    @discardableResult
    public func observe<N: TypedNotification, Owner: AnyObject & Sendable>(
        every type: N.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Owner, N) throws -> Void
    ) -> ObservationToken {
        observe(
            type, owner: owner, from: subject, on: mainActor, priority: priority, bufferingPolicy: bufferingPolicy,
            fileID: fileID, line: line, handler)
    }

    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:)"
    )
    public func observe<N: TypedNotification>(
        every type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N) async throws -> Void
    ) -> ObservationToken {
        observe(
            type, from: subject, on: target, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler)
    }

    @available(
        *, deprecated,
        message:
            "'every:' takes a family (a protocol's existential or a base class); observe one notification type with observe(_:)"
    )
    public func observe<N: TypedNotification>(
        every type: N.Type,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (N) async throws -> Void
    ) -> ObservationToken {
        observe(
            type, from: subject, on: mainActor, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler)
    }
}
