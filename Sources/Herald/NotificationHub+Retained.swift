/// Retained ("sticky") notifications: the latest value of a type, kept for observers that come later.
///
/// A post made with `retain: true` is delivered as usual and also kept as the latest value of its
/// type for its subject. An observer registered with `replayLatest: true` receives that value
/// first, on its own target, and then every later post, with no gap and no duplicate, even when
/// a post races with the registration.
///
/// ```swift
/// hub.post(ConnectionState.online, retain: true)             // before anyone listens
///
/// let token = hub.observe(ConnectionState.self, on: .main, replayLatest: true) { state in
///     banner.show(state)                                       // .online first, then changes
/// }
/// ```
extension NotificationHub {
    // MARK: - Posting

    /// Posts a notification and, when `retain` is `true`, keeps it as the latest value of its type
    /// for `subject`.
    ///
    /// The post is delivered exactly like ``post(_:from:)``. With `retain: true` the value also
    /// replaces the one retained for the same subject (or for no subject), and observers
    /// registered later with `replayLatest: true` receive it first. Storing the value and choosing
    /// the observers happen atomically, so a registration that races with this post either
    /// replays this value or receives it live, never both and never neither.
    ///
    /// ```swift
    /// hub.post(ConnectionState.online, retain: true)
    /// hub.post(DocumentState.saved, from: document, retain: true)   // retained for `document`
    /// ```
    ///
    /// A retaining post that reaches no observer is not counted in ``unobservedPostCount``: it is
    /// kept, not lost. A post without `retain` leaves the retained value as it is.
    ///
    /// The hub keeps the value until it is replaced, removed with
    /// ``removeRetainedValue(of:from:)``, or the hub is deallocated. It does not retain
    /// `subject`: once the subject is deallocated its value can no longer be read or replayed, and
    /// it is discarded the next time the hub tidies up.
    ///
    /// ## Threading
    /// Same as ``post(_:from:)``: callable from any thread; posting-thread observers run before it
    /// returns, others are enqueued.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about, or `nil`.
    ///   - retain: Whether to keep `notification` as the latest value of its type for `subject`.
    /// - Complexity: O(*n*) in the observers of this type, plus amortised O(1) to retain.
    public func post<N: TypedNotification>(_ notification: N, from subject: AnyObject? = nil, retain: Bool) {
        guard retain else {
            post(notification, from: subject)
            return
        }
        let snapshot = core.retainAndSnapshot(notification, subject: subject)
        _ = send(notification, from: subject, to: snapshot)
    }

    // MARK: - Reading and removing

    /// The latest value of `type` retained for `subject`.
    ///
    /// ```swift
    /// if let state = hub.retainedValue(of: ConnectionState.self) { banner.show(state) }
    /// ```
    ///
    /// A value retained for a subject that has since been deallocated is never returned, even if
    /// a new object now lives at the same address.
    ///
    /// ## Threading
    /// Callable from any thread.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - subject: The subject the value was retained for, or `nil` for posts without a subject.
    /// - Returns: The retained value, or `nil` if none is retained.
    /// - Complexity: O(1).
    public func retainedValue<N: TypedNotification>(of type: N.Type, from subject: AnyObject? = nil) -> N? {
        core.retainedValue(of: type, subject: subject)
    }

    /// Removes the value of `type` retained for `subject`, so that later observers do not replay it.
    ///
    /// ```swift
    /// hub.removeRetainedValue(of: ConnectionState.self)
    /// ```
    ///
    /// ## Threading
    /// Callable from any thread. Deliveries already made or enqueued are not affected.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - subject: The subject the value was retained for, or `nil` for posts without a subject.
    /// - Returns: The value that was removed, or `nil` if none was retained.
    /// - Complexity: O(1).
    @discardableResult
    public func removeRetainedValue<N: TypedNotification>(of type: N.Type, from subject: AnyObject? = nil) -> N? {
        core.removeRetainedValue(of: type, subject: subject)
    }

    /// Removes every value of `type` retained, for every subject and for no subject.
    ///
    /// ```swift
    /// hub.removeAllRetainedValues(of: DocumentState.self)
    /// ```
    ///
    /// ## Threading
    /// Callable from any thread.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: The number of values removed (values of deallocated subjects are not counted).
    /// - Complexity: O(*k*) in the values retained for `type`.
    @discardableResult
    public func removeAllRetainedValues<N: TypedNotification>(of type: N.Type) -> Int {
        core.removeAllRetainedValues(of: type)
    }

    // MARK: - Observing with replay

    /// Observes notifications of type `N` on the given target, optionally starting with the
    /// retained values.
    ///
    /// With `replayLatest: true` the handler first receives, on `target`, the value retained for
    /// `subject` (see ``post(_:from:retain:)``), then every later post. An observer without a
    /// subject receives every post, so it replays the latest retained value of every live
    /// subject, oldest first. No retaining post is missed or delivered twice, even one racing
    /// with this call.
    ///
    /// ```swift
    /// let token = hub.observe(ConnectionState.self, on: .queue(sync), replayLatest: true) { state in
    ///     engine.apply(state)                    // the current state first, then changes
    /// }
    /// ```
    ///
    /// ## Threading
    /// - On an asynchronous target the replayed values are put into the observer's mailbox before
    ///   it can see any post, so they run first, on `target`, in order.
    /// - On ``DeliveryTarget/posting`` they run synchronously inside this call, on the calling
    ///   thread, before the observer can see any post. If other threads retain newer values
    ///   while the replay runs, the registration catches up by replaying those too, so the
    ///   handler may receive more than one replayed value, always newer ones after older ones; a
    ///   value that was replaced before the catch-up read it is skipped, as if it had been
    ///   replaced before this call. Every retaining post made after the catch-up is delivered
    ///   live. (Only under a constant stream of retaining posts from other threads, after several
    ///   rounds of catching up, may the last replayed value run at the same time as a live post
    ///   on another thread, as any two concurrent posts would.)
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts made with this object as subject are delivered (held
    ///     weakly), and only its retained value is replayed.
    ///   - target: Where the handler runs.
    ///   - replayLatest: Whether to start with the retained values.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler. Errors it throws, also during replay, go to ``errorHandler``.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    /// - Complexity: O(*k* log *k*) in the retained values replayed, plus amortised O(1).
    public func observe<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        replayLatest: Bool,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N) throws -> Void
    ) -> Observation {
        register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain(handler))
    }

    /// Observes notifications of type `N` on the main actor, optionally starting with the retained
    /// values.
    ///
    /// ```swift
    /// let token = hub.observe(ConnectionState.self, on: MainActor.shared, replayLatest: true) { state in
    ///     banner.show(state)                     // @MainActor, checked by the compiler
    /// }
    /// ```
    ///
    /// ## Threading
    /// The replayed values and later posts run on the main queue, the main actor's executor, in
    /// that order, as for the overload that takes a ``DeliveryTarget``.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - replayLatest: Whether to start with the retained values.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The main-actor handler.
    /// - Returns: The observation.
    public func observe<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on mainActor: MainActor,
        replayLatest: Bool,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (N) throws -> Void
    ) -> Observation {
        register(
            target: .main, subject: subject, owner: nil, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { note in try MainActor.assumeIsolated { try handler(note) } }
        )
    }

    /// Observes notifications of type `N` on an actor, optionally starting with the retained values.
    ///
    /// ```swift
    /// let token = hub.observe(ConnectionState.self, on: store, replayLatest: true) { store, state in
    ///     store.apply(state)
    /// }
    /// ```
    ///
    /// ## Threading
    /// The replayed values and later posts run isolated to `actor`, in that order.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - actor: The actor to deliver on. The hub retains it for as long as the observation lasts.
    ///   - replayLatest: Whether to start with the retained values.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, called with the actor isolated.
    /// - Returns: The observation.
    public func observe<N: TypedNotification, A: Actor>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on actor: A,
        replayLatest: Bool,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (isolated A, N) throws -> Void
    ) -> Observation {
        register(
            target: DeliveryTarget(kind: .actor(actor)), subject: subject, owner: nil, fileID: fileID, line: line,
            replayLatest: replayLatest,
            handler: .plain { note in try actor.assumeIsolated { actor in try handler(actor, note) } }
        )
    }

    /// Observes notifications of type `N` for as long as `owner` lives, optionally starting with
    /// the retained values.
    ///
    /// ```swift
    /// hub.observe(ConnectionState.self, owner: self, on: .queue(sync), replayLatest: true) { model, state in
    ///     model.apply(state)
    /// }
    /// ```
    ///
    /// ## Threading
    /// As for the overload without an owner: replayed values first, on `target`, then later posts.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - owner: The object whose lifetime bounds the observation, held weakly.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs.
    ///   - replayLatest: Whether to start with the retained values.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    ///   - handler: The handler, given the owner.
    /// - Returns: The observation, which you may cancel early.
    @discardableResult
    public func observe<N: TypedNotification, Owner: AnyObject & Sendable>(
        _ type: N.Type,
        owner: Owner,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        replayLatest: Bool,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Owner, N) throws -> Void
    ) -> Observation {
        register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { [weak owner] note in
                guard let owner else { return }
                try handler(owner, note)
            }
        )
    }

    /// Observes notifications of type `N` on the main actor for as long as `owner` lives,
    /// optionally starting with the retained values.
    ///
    /// ```swift
    /// hub.observe(ConnectionState.self, owner: self, on: MainActor.shared, replayLatest: true) { model, state in
    ///     model.banner = state
    /// }
    /// ```
    ///
    /// ## Threading
    /// The replayed values and later posts run on the main queue, in that order.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - owner: The object whose lifetime bounds the observation, held weakly.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
    ///   - replayLatest: Whether to start with the retained values.
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
        replayLatest: Bool,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Owner, N) throws -> Void
    ) -> Observation {
        register(
            target: .main, subject: subject, owner: owner, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { [weak owner] note in
                guard let owner else { return }
                try MainActor.assumeIsolated { try handler(owner, note) }
            }
        )
    }
}
