import Dispatch
import Synchronization

/// A typed notification hub: post a `Sendable` value from any thread, and each observer receives it
/// on the delivery target it chose.
///
/// ```swift
/// let hub = NotificationHub()
/// let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
///     loginView.dismiss()                     // checked by the compiler as @MainActor
/// }
/// hub.post(UserCreated(userID: 7, status: 201))
/// ```
///
/// Hubs are cheap: make one per feature or per test. ``default`` is there for app-wide use.
///
/// ## Threading and guarantees
/// - ``post(_:from:)`` can be called from any thread. Posting-thread observers run synchronously,
///   in registration order, before it returns; observers on other targets are enqueued.
/// - Each observer on an asynchronous target has its own serial mailbox: its deliveries never
///   overlap, and it sees the posts of one thread in the order they were made, on every target.
/// - An observer registered during a post does not receive that post. An observer cancelled
///   during a post, or while notifications are queued for it, is not called again.
/// - Handlers are never called while Herald holds a lock, so they may post, observe and cancel.
/// - A throwing handler never stops the others; its error goes to ``errorHandler``.
public final class NotificationHub: Sendable {
    let core = HubCore()

    /// The app-wide hub. Prefer your own instances in libraries and tests.
    public static let `default` = NotificationHub()

    /// Creates an empty hub.
    public init() {}

    deinit {
        // Observers keep the core alive, so deliveries already queued still run and report errors.
        core.removeAll()
    }

    // MARK: - Observing

    /// Observes notifications of type `N` on the given target.
    ///
    /// ```swift
    /// let token = hub.observe(UserCreated.self, on: .queue(database)) { note in
    ///     try store.insert(note.userID)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - subject: If not `nil`, only posts made with this very object as subject are delivered.
    ///     The hub holds it weakly; when it is deallocated, the observation ends.
    ///   - target: Where the handler runs. The default, ``DeliveryTarget/posting``, runs it
    ///     synchronously inside `post`.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``. On ``DeliveryTarget/posting`` the handler runs inside
    ///     `post` and has no mailbox: the policy has no effect.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``:
    ///     on an asynchronous target they run first, in order, before any later post; on the
    ///     posting thread they run inside this call. No retaining post is missed or delivered
    ///     twice, even one racing with this call.
    ///   - fileID: The file that registers, for error reports; leave the default.
    ///   - line: The line that registers, for error reports; leave the default.
    ///   - handler: The handler. Errors it throws go to ``errorHandler``.
    /// - Returns: The observation; it ends when you cancel it or let go of it.
    /// - Complexity: Amortised O(1).
    public func observe<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N) throws -> Void
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line, bufferingPolicy: bufferingPolicy,
            priority: priority,
            replayLatest: replayLatest,
            handler: .plain(handler))
    }

    /// Observes notifications of type `N` on the main actor, with a `@MainActor` handler.
    ///
    /// ```swift
    /// let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
    ///     loginView.dismiss()                     // the compiler knows this is the main actor
    /// }
    /// ```
    ///
    /// Deliveries run on the main dispatch queue, which is the main actor's executor.
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
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``:
    ///     on an asynchronous target they run first, in order, before any later post; on the
    ///     posting thread they run inside this call. No retaining post is missed or delivered
    ///     twice, even one racing with this call.
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
        _ handler: @escaping @MainActor @Sendable (N) throws -> Void
    ) -> ObservationToken {
        register(
            target: .mainQueue, subject: subject, owner: nil, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .plain(Adapt.onMainActor(handler))
        )
    }

    /// Observes notifications of type `N` on an actor, with a handler isolated to it.
    ///
    /// ```swift
    /// actor Store { func apply(_ note: UserCreated) { … } }
    /// let token = hub.observe(UserCreated.self, on: store) { store, note in
    ///     store.apply(note)                       // synchronous: the handler is isolated to `store`
    /// }
    /// ```
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
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``:
    ///     on an asynchronous target they run first, in order, before any later post; on the
    ///     posting thread they run inside this call. No retaining post is missed or delivered
    ///     twice, even one racing with this call.
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
        _ handler: @escaping @Sendable (isolated A, N) throws -> Void
    ) -> ObservationToken {
        register(
            target: DeliveryTarget(kind: .actor(actor)), subject: subject, owner: nil, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .plain(Adapt.on(actor, handler))
        )
    }

    /// Observes notifications of type `N` for as long as `owner` lives.
    ///
    /// The hub holds `owner` weakly and passes it to the handler, so the handler needs no
    /// `[weak self]` dance. The observation ends when `owner` is deallocated: you may discard the
    /// returned token, and letting go of it does not end the observation.
    ///
    /// ```swift
    /// hub.observe(UserCreated.self, owner: self, on: .queue(sync)) { model, note in
    ///     model.refresh(note.userID)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - owner: The object whose lifetime bounds the observation.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - target: Where the handler runs.
    ///   - priority: Among the observers of a post, higher priorities come first; equal ones keep
    ///     registration order. The default is 0. See <doc:ThreadingAndDelivery#Priorities>.
    ///   - bufferingPolicy: What the observer's mailbox keeps when notifications arrive faster than
    ///     the handler runs: everything (``NotificationBufferingPolicy/unbounded``, the default), the
    ///     newest one (``NotificationBufferingPolicy/latest``), or at most *n*. See
    ///     ``NotificationBufferingPolicy``. On ``DeliveryTarget/posting`` the handler runs inside
    ///     `post` and has no mailbox: the policy has no effect.
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``:
    ///     on an asynchronous target they run first, in order, before any later post; on the
    ///     posting thread they run inside this call. No retaining post is missed or delivered
    ///     twice, even one racing with this call.
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
        priority: Int = 0,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Owner, N) throws -> Void
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .plain(Adapt.owned(by: owner, handler))
        )
    }

    /// Observes notifications of type `N` on the main actor for as long as `owner` lives.
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
    ///   - replayLatest: Whether to start with the values retained by ``postAndRetain(_:from:)``:
    ///     on an asynchronous target they run first, in order, before any later post; on the
    ///     posting thread they run inside this call. No retaining post is missed or delivered
    ///     twice, even one racing with this call.
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
        _ handler: @escaping @MainActor @Sendable (Owner, N) throws -> Void
    ) -> ObservationToken {
        register(
            target: .mainQueue, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: .plain(Adapt.owned(by: owner, Adapt.onMainActor(handler)))
        )
    }

    /// Registers an observer of `N`, or of `family` when it is given (`N` is then a
    /// ``FamilyDelivery``), with its handler.
    func register<N: TypedNotification>(
        target: DeliveryTarget,
        subject: AnyObject?,
        owner: AnyObject?,
        fileID: StaticString,
        line: UInt,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        priority: Int = 0,
        replayLatest: Bool = false,
        family: AnyFamily? = nil,
        handler: Handler<N>
    ) -> ObservationToken {
        let filters = subject == nil && owner == nil ? nil : Filters(subject: subject, owner: owner)
        // The class comes from the notification type's own conformance: `Observer<N>(…)` here,
        // where `N` is not known, would ask the runtime for the class on every registration.
        let observerClass = unsafeBitCast(N._heraldObserverClass, to: Observer<N>.Type.self)
        let observer = observerClass.init(
            core: core, target: target, filters: filters,
            location: SourceLocation(fileID: fileID, line: UInt32(clamping: line)), handler: handler,
            bufferingPolicy: bufferingPolicy, priority: priority, family: family
        )
        if family != nil {
            core.registry.addFamily(observer)
        } else if replayLatest {
            core.addReplaying(observer)
        } else {
            core.registry.add(observer)
        }
        noteMainActorRegistration(on: target)
        return ObservationToken(registration: observer, cancelsOnDeinit: owner == nil)
    }

    // MARK: - Posting

    /// Posts a notification to every observer of its type.
    ///
    /// Posting-thread observers run synchronously, in registration order, before `post` returns.
    /// Observers on other targets are enqueued before the posting-thread observers run, so a post
    /// made from inside a handler reaches every queue after this one.
    ///
    /// ```swift
    /// hub.post(UserCreated(userID: 7, status: 201))
    /// hub.post(SessionExpired(), from: session)        // reaches observers of `session` only
    /// ```
    ///
    /// A post that reaches no observer is counted in ``unobservedPostCount``.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about, matched by identity against observers
    ///     registered with `from:`. Observers registered without a subject receive every post.
    /// - Complexity: O(*n*) in the observers of this type; independent of observers of other types.
    ///   No heap allocation when only posting-thread observers match.
    @inlinable
    public func post<N: TypedNotification>(_ notification: N, from subject: AnyObject? = nil) {
        // Inlined into the caller, where `N` is concrete: the rest of the post is not generic, so
        // it runs without asking the runtime for generic metadata.
        withUnsafePointer(to: notification) { payload in
            _post(UnsafeRawPointer(payload), of: N.self, from: subject)
        }
    }

    /// The body of ``post(_:from:)``: `payload` points to a notification of type `type`.
    ///
    /// Not API: it exists so that ``post(_:from:)`` can be inlined into its caller.
    @usableFromInline
    func _post(_ payload: UnsafeRawPointer, of type: any TypedNotification.Type, from subject: AnyObject?) {
        if !core.post(payload, type: type, subject: subject) {
            core.noteUnobserved(type, hadSubject: subject != nil)
        }
    }

    /// Delivers a fire-and-forget post to the observers of `snapshot` (a retaining post's).
    func send<N: TypedNotification>(_ notification: N, from subject: AnyObject?, to snapshot: ObserverSnapshot?) {
        guard let snapshot else { return }
        withUnsafePointer(to: notification) { payload in
            _ = snapshot.scan(UnsafeRawPointer(payload), subject: subject, wait: nil)
        }
    }
}
