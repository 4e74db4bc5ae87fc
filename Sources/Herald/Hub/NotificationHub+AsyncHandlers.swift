/// Observing with `async` handlers.
///
/// An observer's async handler is called for one notification at a time: the call for the next
/// notification starts only once the previous one has returned, so each observer sees its
/// notifications in post order across suspensions, as a synchronous handler does. While a call is
/// suspended, its target runs other work: the handler holds no thread and no queue.
extension NotificationHub {
    /// Observes notifications of type `N` with an `async` handler, started from the given target.
    ///
    /// ```swift
    /// let token = hub.observe(UserCreated.self, on: .queue(database)) { note async in
    ///     await store.insert(note.userID)     // the next UserCreated waits for this call
    /// }
    /// ```
    ///
    /// The target orders the calls and runs them: each call's synchronous stretches, before and
    /// after every `await`, run on the target's queue, thread or executor (on a concurrent queue,
    /// on any of its threads). On ``DeliveryTarget/posting`` a call runs on the global concurrent
    /// executor.
    ///
    /// - Cancelling the token is final: no call starts after `cancel()` returns, and a call
    ///   already running finishes with its task cancelled.
    /// - The waiting posts (`postAndWait`) wait for the call to return, except a blocking one made
    ///   on the target itself, which enqueues the notification without waiting for this observer.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the calls are ordered and started.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``.
    ///   - fileID: The file that registers, for error reports; leave the default.
    ///   - line: The line that registers, for error reports; leave the default.
    ///   - handler: The handler. Errors it throws go to ``errorHandler``.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    public func observe<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N) async throws -> Void
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line, bufferingPolicy: bufferingPolicy,
            priority: priority,
            replayLatest: replayLatest,
            handler: .async(AsyncCall.nonisolated(handler)))
    }

    /// Observes notifications of type `N` on the main actor, with an `async` `@MainActor` handler.
    ///
    /// ```swift
    /// let token = hub.observe(ProfileChanged.self, on: MainActor.shared) { note async in
    ///     await model.reload(note.id)     // the next ProfileChanged waits for this call
    /// }
    /// ```
    ///
    /// Calls run one at a time, in post order. While one is suspended, the main actor runs other
    /// work, including this hub's other deliveries. The waiting posts wait for the call to return,
    /// except a blocking `postAndWait` made on the main actor: the call needs the main actor that
    /// it blocks, so that post enqueues the notification without waiting for this observer.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler.
    /// - Returns: The observation.
    public func observe<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (N) async throws -> Void
    ) -> ObservationToken {
        register(
            target: .mainQueue, subject: subject, owner: nil, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .async(AsyncCall.mainActor(handler)))
    }

    /// Observes notifications of type `N` on an actor, with an `async` handler isolated to it.
    ///
    /// ```swift
    /// let token = hub.observe(UserCreated.self, on: store) { store, note async in
    ///     await store.sync(note.userID)     // the next UserCreated waits for this call
    /// }
    /// ```
    ///
    /// Calls run one at a time, in post order. While one is suspended, the actor may run other
    /// work (actors are re-entrant), but not this observer's next call. The waiting posts wait for
    /// the call to return, except a blocking `postAndWait` made on the actor itself, which enqueues
    /// the notification without waiting for this observer.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - actor: The actor to deliver on. The hub retains it for as long as the observation lasts.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, called with the actor isolated.
    /// - Returns: The observation.
    public func observe<N: TypedNotification, A: Actor>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on actor: A,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (isolated A, N) async throws -> Void
    ) -> ObservationToken {
        register(
            target: DeliveryTarget(kind: .actor(actor)), subject: subject, owner: nil, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .async(AsyncCall.actor(actor, handler)))
    }

    /// Observes notifications of type `N` with an `async` handler for as long as `owner` lives.
    ///
    /// ```swift
    /// hub.observe(UserCreated.self, owner: self, on: .queue(sync)) { model, note async in
    ///     await model.refresh(note.userID)
    /// }
    /// ```
    ///
    /// Calls run one at a time, in post order, as for the async handler without an owner. The
    /// owner is held weakly, and a call runs the handler only while it lives. The observation ends
    /// when `owner` is deallocated, so the returned token may be discarded.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - owner: The object whose lifetime bounds the observation, held weakly.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the calls are ordered and started.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, given the owner.
    /// - Returns: The observation, which you may cancel early.
    @discardableResult
    public func observe<N: TypedNotification, Owner: AnyObject & Sendable>(
        _ type: N.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Owner, N) async throws -> Void
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .async(AsyncCall.nonisolated(AsyncCall.owned(by: owner, handler))))
    }

    /// Observes notifications of type `N` on the main actor with an `async` `@MainActor` handler,
    /// for as long as `owner` lives.
    ///
    /// ```swift
    /// hub.observe(AvatarChanged.self, owner: self, on: MainActor.shared) { model, note async in
    ///     await model.reloadAvatar(note.url)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - owner: The object whose lifetime bounds the observation, held weakly.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler, given the owner.
    /// - Returns: The observation, which you may cancel early.
    @discardableResult
    public func observe<N: TypedNotification, Owner: AnyObject & Sendable>(
        _ type: N.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Owner, N) async throws -> Void
    ) -> ObservationToken {
        register(
            target: .mainQueue, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .async(AsyncCall.mainActor(AsyncCall.owned(by: owner, handler))))
    }
}
