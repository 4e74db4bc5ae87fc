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
        core.registry.removeAll()
    }

    // MARK: - Registering

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
        let (observerClass, site) = core.registry.registrationInfo(
            of: N.self, at: SourceLocation(fileID: fileID, line: UInt32(clamping: line)))
        let observer = observerClass.init(
            registry: core.registry, target: target, filters: filters, site: site, handler: handler,
            bufferingPolicy: bufferingPolicy, priority: priority, family: family
        )
        core.add(observer, replayLatest: replayLatest)
        // The main-queue executor of the registering task, if any, hears of a main-actor observer
        // on a hub that has none (`ManualMainQueueExecutor.noteMainQueueObserver(on:)`).
        if case .main = target.kind, core.manualMainQueue == nil {
            MainQueueExecutorScope.current?.noteMainQueueObserver(on: self)
        }
        return ObservationToken(registration: observer, cancelsOnDeinit: owner == nil)
    }

    /// Registers an observer of `N` with a plain handler (the `observe` form with a delivery
    /// target, not owned, not `async`).
    ///
    /// The most common registration (on the posting thread, without subject, priority or replay)
    /// has a path of its own: the closure is handed over as it is, with no ``Handler`` around it,
    /// and the registry makes and adds the observer in one critical section (see
    /// `Registry.addPosting`). Everything else goes to ``register(target:subject:owner:fileID:line:bufferingPolicy:priority:replayLatest:family:handler:)``.
    func registerPlain<N: TypedNotification>(
        target: DeliveryTarget,
        subject: AnyObject?,
        fileID: StaticString,
        line: UInt,
        bufferingPolicy: NotificationBufferingPolicy,
        priority: Int,
        replayLatest: Bool,
        handler: @escaping @Sendable (N) throws -> Void
    ) -> ObservationToken {
        guard target.isPosting, subject == nil, priority == 0, !replayLatest else {
            return register(
                target: target, subject: subject, owner: nil, fileID: fileID, line: line,
                bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
                handler: .plain(handler))
        }
        // A posting-thread observer has no mailbox: the buffering policy does not apply, as in
        // `Observer.init`.
        let location = SourceLocation(fileID: fileID, line: UInt32(clamping: line))
        // The registry is borrowed, not retained: the hub keeps it alive (through `core`) for the
        // whole call.
        let observer = Unmanaged.passUnretained(core.registry)._withUnsafeGuaranteedRef {
            $0.addPosting(at: location, handler: handler)
        }
        return ObservationToken(registration: observer)
    }

    /// Registers an observer of the family `Family`.
    func registerFamily<Family: Sendable>(
        _ family: Family.Type,
        target: DeliveryTarget,
        subject: AnyObject?,
        owner: AnyObject?,
        priority: Int,
        bufferingPolicy: NotificationBufferingPolicy,
        replayLatest: Bool,
        fileID: StaticString,
        line: UInt,
        handler: Handler<Family>
    ) -> ObservationToken {
        if refusesFamily(Family.self, fileID: fileID, line: line) { return .refused() }
        // A plain posting-thread family observer's members call its closure with the cast value
        // (see ``FamilyOf/direct``).
        var direct: (@Sendable (Family) throws -> Void)?
        if case .plain(let body) = handler, target.isPosting { direct = body }
        return register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            family: FamilyOf<Family>(direct: direct),
            handler: handler.pullback { (delivery: FamilyDelivery<Family>) in delivery.value })
    }

    /// Registers a tap: an observer of every notification that only watches (see
    /// <doc:ObservingNotifications>).
    func registerTap(
        target: DeliveryTarget,
        subject: AnyObject?,
        owner: AnyObject?,
        priority: Int,
        bufferingPolicy: NotificationBufferingPolicy,
        fileID: StaticString,
        line: UInt,
        handler: Handler<PostedNotification>
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority,
            family: FamilyOf<any TypedNotification>(isTap: true),
            handler: handler.pullback(PostedNotification.init))
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
            _post(UnsafeRawPointer(payload), of: N.self, from: subject, postingLoop: Observer<N>.deliver(to:_:subject:))
        }
    }

    /// The body of ``post(_:from:)``: `payload` points to a notification of type `type`.
    ///
    /// Not API: it exists so that ``post(_:from:)`` can be inlined into its caller.
    @usableFromInline
    func _post(
        _ payload: UnsafeRawPointer, of type: any TypedNotification.Type, from subject: AnyObject?,
        postingLoop: PostingLoop
    ) {
        if !core.post(payload, type: type, subject: subject, postingLoop: postingLoop) {
            core.noteUnobserved(type, hadSubject: subject != nil)
        }
    }
}
