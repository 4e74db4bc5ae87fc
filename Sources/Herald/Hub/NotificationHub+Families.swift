/// A notification as a tap receives it: the value, its type and the post's subject.
///
/// ```swift
/// let logging = hub.observeAll(on: .queue(logQueue)) { posted in
///     logger.debug("\(posted.type): \(posted.notification)")
/// }
/// ```
public struct PostedNotification: Sendable {
    /// The notification.
    public let notification: any TypedNotification
    /// The type the notification was posted as.
    public let type: any TypedNotification.Type
    /// The identity of the post's subject, if it had one. The hub never retains a subject, so only
    /// its identity is passed on: compare it with `ObjectIdentifier(object)`.
    public let subjectID: ObjectIdentifier?

    /// Whether the post was made with `subject` as its subject (by identity).
    public func isFrom(_ subject: AnyObject?) -> Bool {
        subjectID == subject.map(ObjectIdentifier.init)
    }
}

extension NotificationHub {
    // MARK: - Families: protocols and class hierarchies

    /// Observes every notification whose type conforms to a protocol, or is a subclass of a class.
    ///
    /// Pass the protocol's existential type, or a base class. A non-final class cannot be a
    /// notification, but its final subclasses can: observing the base class receives them all. The handler receives each posted notification that
    /// can be cast to it, whatever its concrete type:
    ///
    /// ```swift
    /// protocol AnalyticsEvent: TypedNotification { var name: String { get } }
    /// struct SignedIn: AnalyticsEvent { let name = "signed_in" }
    /// struct Purchased: AnalyticsEvent { let name = "purchased"; let cents: Int }
    ///
    /// let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(analytics)) { event in
    ///     tracker.send(event.name)           // SignedIn and Purchased alike
    /// }
    /// ```
    ///
    /// Such an observer is one observer with one mailbox, however many types it receives: it sees
    /// the posts of one thread in order, across types, and every guarantee of an observer of one
    /// type holds (order among the observers of a post, causes before effects, a final `cancel()`,
    /// the `from:` subject filter). A type that conforms to several observed protocols reaches each
    /// of their observers once.
    ///
    /// Herald decides once per posted type whether it belongs (at the first post of the type after
    /// the observer was registered) and caches the answer, so posts of other types pay nothing.
    /// The answer is Swift's `as?` cast of that notification, which for a notification made of an
    /// `Optional` looks inside the value: observe such a type by its own type. Protocol observers do
    /// not count in ``observerCount(of:)`` or ``registrations(of:)``, which count the observers of
    /// one type, and they do not replay retained values. A type that no notification can be cast
    /// to, such as `String.self`, is refused and reported (see ``FamilyMismatch``).
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs. The default, ``DeliveryTarget/posting``, runs it
    ///     synchronously inside `post`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs. See ``NotificationBufferingPolicy``. The policy applies across types:
    ///     ``NotificationBufferingPolicy/latest`` keeps the newest notification of the family.
    ///   - fileID: The file that registers, for error reports; leave the default.
    ///   - line: The line that registers, for error reports; leave the default.
    ///   - handler: The handler. Errors it throws go to ``errorHandler``.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    /// - Complexity: O(1) to register, however many types the hub has seen, and visible to every
    ///   type of the family at once; cancelling is O(the family's types posted since it registered).
    public func observe<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Family) throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: target, subject: subject, owner: nil, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line, handler: .plain(handler))
    }

    /// Observes every notification of a family (a protocol or a class) on the main actor, with a
    /// `@MainActor` handler.
    ///
    /// ```swift
    /// let token = hub.observe(every: (any AnalyticsEvent).self, on: MainActor.shared) { event in
    ///     debugOverlay.show(event.name)          // the compiler knows this is the main actor
    /// }
    /// ```
    ///
    /// See `observe(every:from:on:priority:bufferingPolicy:fileID:line:_:)` for what a family is.
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler.
    /// - Returns: The observation.
    public func observe<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Family) throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: .mainQueue, subject: subject, owner: nil, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line,
            handler: .plain(Adapt.onMainActor(handler)))
    }

    /// Observes every notification of a family (a protocol or a class) on an actor, with a handler
    /// isolated to it.
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - actor: The actor to deliver on. The hub retains it for as long as the observation lasts.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, called with the actor isolated.
    /// - Returns: The observation.
    public func observe<Family: Sendable, A: Actor>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on actor: A,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (isolated A, Family) throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: DeliveryTarget(kind: .actor(actor)), subject: subject, owner: nil, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line, handler: .plain(Adapt.on(actor, handler)))
    }

    /// Observes every notification of a family (a protocol or a class) for as long as `owner`
    /// lives.
    ///
    /// The hub holds `owner` weakly and passes it to the handler; the observation ends when `owner`
    /// is deallocated, so you may discard the token.
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - owner: The object whose lifetime bounds the observation.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, given the owner.
    /// - Returns: The observation, which you may cancel early.
    @discardableResult
    public func observe<Family: Sendable, Owner: AnyObject & Sendable>(
        every family: Family.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Owner, Family) throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: target, subject: subject, owner: owner, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line,
            handler: .plain(Adapt.owned(by: owner, handler)))
    }

    /// Observes every notification of a family (a protocol or a class) on the main actor for as
    /// long as `owner` lives.
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - owner: The object whose lifetime bounds the observation, held weakly.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler, given the owner.
    /// - Returns: The observation, which you may cancel early.
    @discardableResult
    public func observe<Family: Sendable, Owner: AnyObject & Sendable>(
        every family: Family.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Owner, Family) throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: .mainQueue, subject: subject, owner: owner, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line,
            handler: .plain(Adapt.owned(by: owner, Adapt.onMainActor(handler))))
    }

    /// Observes every notification of a family (a protocol or a class) with an `async` handler,
    /// one call at a time, in post order across the family's types.
    ///
    /// ```swift
    /// let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(analytics)) { event async in
    ///     await uploader.send(event.name)    // the next event waits for this call
    /// }
    /// ```
    ///
    /// Calls are ordered and started like those of an `async` observer of one type (see
    /// <doc:ThreadingAndDelivery#Async-handlers>).
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the calls are ordered and started.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler. Errors it throws go to ``errorHandler``.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    public func observe<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Family) async throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: target, subject: subject, owner: nil, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line,
            handler: .async(AsyncCall.nonisolated(handler)))
    }

    /// Observes every notification of a family (a protocol or a class) on the main actor, with an
    /// `async` `@MainActor` handler, one call at a time, in post order across the family's types.
    ///
    /// - Parameters:
    ///   - family: The protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the observer's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler.
    /// - Returns: The observation.
    public func observe<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Family) async throws -> Void
    ) -> ObservationToken {
        registerFamily(
            Family.self, target: .mainQueue, subject: subject, owner: nil, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line,
            handler: .async(AsyncCall.mainActor(handler)))
    }

    // MARK: - Taps: every notification

    /// Taps every notification posted to this hub, of every type: for logging, analytics and
    /// debugging.
    ///
    /// ```swift
    /// let logging = hub.observeAll(on: .queue(logQueue)) { posted in
    ///     logger.debug("\(posted.type) from \(posted.subjectID as Any): \(posted.notification)")
    /// }
    /// ```
    ///
    /// A tap is an observer with one mailbox for every type: it sees the posts of one thread in
    /// order and keeps every other guarantee of an observer. It only watches:
    /// - A post that reaches nothing but taps still counts as unobserved
    ///   (``unobservedPostCount``, ``unobservedPostHandler``), so a logging tap never hides a
    ///   missing observer.
    /// - Waiting posts (`postAndWait`) neither wait for taps nor count them in
    ///   their ``DeliveryReport``.
    /// - Taps do not count in ``observerCount(of:)`` or ``registrations(of:)``, and retained values
    ///   are not replayed to them.
    ///
    /// - Parameters:
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs. The default, ``DeliveryTarget/posting``, runs it
    ///     synchronously inside `post`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the tap's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers, for error reports; leave the default.
    ///   - line: The line that registers, for error reports; leave the default.
    ///   - handler: The handler, given the notification, its type and its subject's identity.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    /// - Complexity: O(1) to register, however many types the hub has seen; cancelling is O(the
    ///   types posted since it registered).
    public func observeAll(
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (PostedNotification) throws -> Void
    ) -> ObservationToken {
        registerTap(
            target: target, subject: subject, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler: .plain(handler))
    }

    /// Taps every notification posted to this hub on the main actor, with a `@MainActor` handler.
    ///
    /// See `observeAll(from:on:priority:bufferingPolicy:fileID:line:_:)` for what a tap
    /// sees and what it does not change.
    ///
    /// - Parameters:
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the tap's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler.
    /// - Returns: The observation.
    public func observeAll(
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (PostedNotification) throws -> Void
    ) -> ObservationToken {
        registerTap(
            target: .mainQueue, subject: subject, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler: .plain(Adapt.onMainActor(handler)))
    }

    /// Taps every notification posted to this hub on an actor, with a handler isolated to it.
    ///
    /// See `observeAll(from:on:priority:bufferingPolicy:fileID:line:_:)` for what a tap sees and
    /// what it does not change.
    ///
    /// - Parameters:
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - actor: The actor to deliver on. The hub retains it for as long as the tap lasts.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the tap's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, called with the actor isolated.
    /// - Returns: The observation.
    public func observeAll<A: Actor>(
        from subject: AnyObject? = nil,
        on actor: A,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (isolated A, PostedNotification) throws -> Void
    ) -> ObservationToken {
        registerTap(
            target: DeliveryTarget(kind: .actor(actor)), subject: subject, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line, handler: .plain(Adapt.on(actor, handler)))
    }

    /// Taps every notification posted to this hub with an `async` handler, one call at a time, in
    /// post order across types: for a logger or an uploader that awaits.
    ///
    /// ```swift
    /// let upload = hub.observeAll(on: .queue(uploads)) { posted async in
    ///     await telemetry.send("\(posted.type)")   // the next notification waits for this call
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the calls are ordered and started.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0.
    ///   - bufferingPolicy: What the tap's mailbox keeps. See ``NotificationBufferingPolicy``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler. Errors it throws go to ``errorHandler``.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    public func observeAll(
        from subject: AnyObject? = nil,
        on target: DeliveryTarget,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (PostedNotification) async throws -> Void
    ) -> ObservationToken {
        registerTap(
            target: target, subject: subject, priority: priority, bufferingPolicy: bufferingPolicy, fileID: fileID,
            line: line, handler: .async(AsyncCall.nonisolated(handler)))
    }

    /// Registers an observer of the family `Family`.
    func registerFamily<Family: Sendable>(
        _ family: Family.Type,
        target: DeliveryTarget,
        subject: AnyObject?,
        owner: AnyObject?,
        priority: Int,
        bufferingPolicy: NotificationBufferingPolicy,
        fileID: StaticString,
        line: UInt,
        handler: Handler<Family>
    ) -> ObservationToken {
        if refusesFamily(Family.self, fileID: fileID, line: line) { return .refused() }
        // A plain posting-thread family observer's stand-ins call its closure with the cast value
        // (see ``Family/direct``).
        var direct: (@Sendable (Family) throws -> Void)?
        if case .plain(let body) = handler, target.isPosting { direct = body }
        return register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, family: Herald.Family<Family>(direct: direct),
            handler: handler.pullback { (delivery: FamilyDelivery<Family>) in delivery.value })
    }

    /// Registers a tap: an observer of every notification (see
    /// ``observeAll(from:on:priority:bufferingPolicy:fileID:line:_:)``).
    func registerTap(
        target: DeliveryTarget,
        subject: AnyObject?,
        priority: Int,
        bufferingPolicy: NotificationBufferingPolicy,
        fileID: StaticString,
        line: UInt,
        handler: Handler<PostedNotification>
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority,
            family: Herald.Family<any TypedNotification>(isTap: true),
            handler: handler.pullback(PostedNotification.init))
    }
}

extension PostedNotification {
    init(_ delivery: FamilyDelivery<any TypedNotification>) {
        notification = delivery.value
        type = delivery.type
        subjectID = delivery.subjectID
    }
}
