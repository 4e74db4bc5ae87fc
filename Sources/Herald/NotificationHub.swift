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
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (N) throws -> Void
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: nil, fileID: fileID, line: line, replayLatest: replayLatest,
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
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (N) throws -> Void
    ) -> ObservationToken {
        register(
            target: .mainQueue, subject: subject, owner: nil, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { note in try MainActor.assumeIsolated { try handler(note) } }
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
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (isolated A, N) throws -> Void
    ) -> ObservationToken {
        register(
            target: DeliveryTarget(kind: .actor(actor)), subject: subject, owner: nil, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { note in try actor.assumeIsolated { actor in try handler(actor, note) } }
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
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @Sendable (Owner, N) throws -> Void
    ) -> ObservationToken {
        register(
            target: target, subject: subject, owner: owner, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { [weak owner] note in
                guard let owner else { return }
                try handler(owner, note)
            }
        )
    }

    /// Observes notifications of type `N` on the main actor for as long as `owner` lives.
    ///
    /// - Parameters:
    ///   - type: The notification type to observe.
    ///   - owner: The object whose lifetime bounds the observation, held weakly.
    ///   - subject: If not `nil`, only posts with this object as subject are delivered (held weakly).
    ///   - mainActor: `MainActor.shared`.
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
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ handler: @escaping @MainActor @Sendable (Owner, N) throws -> Void
    ) -> ObservationToken {
        register(
            target: .mainQueue, subject: subject, owner: owner, fileID: fileID, line: line, replayLatest: replayLatest,
            handler: .plain { [weak owner] note in
                guard let owner else { return }
                try MainActor.assumeIsolated { try handler(owner, note) }
            }
        )
    }

    func register<N: TypedNotification>(
        target: DeliveryTarget,
        subject: AnyObject?,
        owner: AnyObject?,
        fileID: StaticString,
        line: UInt,
        replayLatest: Bool = false,
        handler: Handler<N>
    ) -> ObservationToken {
        let filters = subject == nil && owner == nil ? nil : Filters(subject: subject, owner: owner)
        let observer = Observer<N>(
            core: core, target: target, filters: filters,
            location: SourceLocation(fileID: fileID, line: UInt32(clamping: line)), handler: handler
        )
        if replayLatest {
            core.addReplaying(observer)
        } else {
            core.add(observer)
        }
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
        if !core.post(payload, key: ObjectIdentifier(type), subject: subject) {
            core.noteUnobserved(type, hadSubject: subject != nil)
        }
    }

    /// Delivers a fire-and-forget post to the observers of `snapshot` (a retaining post's).
    func send<N: TypedNotification>(_ notification: N, from subject: AnyObject?, to snapshot: ObserverSnapshot?) {
        guard let snapshot else { return }
        withUnsafePointer(to: notification) { payload in
            _ = core.scan(snapshot, UnsafeRawPointer(payload), subject: subject, wait: nil)
        }
    }

    /// Posts a notification and returns once every observer has run, wherever it runs.
    ///
    /// ```swift
    /// hub.postAndWait(CacheInvalidated())     // every cache is cleared when this returns
    /// ```
    ///
    /// When the caller already runs on an observer's target (main to main, a queue to itself, an
    /// executor to itself, an actor to itself), that observer runs inline instead of waiting for
    /// itself. When a handler running on behalf of this call waits for the caller's own target
    /// (a nested wait A → B → A), the blocked caller runs that work, so the chain completes.
    ///
    /// ## When it can block forever
    /// It waits for every observer's target to run its delivery. It blocks forever if a target
    /// never runs work again (a suspended queue or operation queue, a main queue that nothing
    /// drains, a custom executor that drops jobs) or is blocked on something the caller holds
    /// outside Herald (a lock, a semaphore, `DispatchQueue.sync`). Use
    /// `postAndWait(_:from:timeout:)` to bound the wait.
    ///
    /// It does not block in the cases it can see: the caller on an observer's own target (main to
    /// main, a queue, an operation queue, an executor, a ``DeliveryThread`` or an actor to itself)
    /// runs that observer inline; a nested wait A → B → A, or longer chains back to A, is served by
    /// the blocked caller; a post from inside a handler to that same observer (a re-entrant wait
    /// on its own mailbox) is enqueued and not waited for, because waiting would never end; and a
    /// ``DeliveryThread`` that was shut down rejects the delivery, which is reported and counted in
    /// ``DeliveryReport/skippedCount``.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about (see ``post(_:from:)``).
    ///   - isolation: The caller's actor isolation; leave the default.
    /// - Returns: What happened: how many observers ran, and the errors they threw (which also
    ///   went to ``errorHandler``).
    @available(*, noasync, message: "this postAndWait blocks the calling thread; use `await hub.postAndWait(_:from:)`, which suspends instead")
    @discardableResult
    public func postAndWait<N: TypedNotification>(
        _ notification: N,
        from subject: AnyObject? = nil,
        isolation: (any Actor)? = #isolation
    ) -> DeliveryReport {
        waitingPost(notification, subject: subject, isolation: isolation, deadline: .distantFuture).report
    }

    /// Posts a notification and waits at most `timeout` for every observer to run.
    ///
    /// ```swift
    /// do {
    ///     try hub.postAndWait(FlushRequested(), timeout: .seconds(2))
    /// } catch {
    ///     log("flush still running: \(error)")  // DeliveryTimeout
    /// }
    /// ```
    ///
    /// On timeout the outstanding deliveries are not cancelled: each still runs exactly once,
    /// later. Only the wait ends. This form never hangs, even when a target is blocked forever.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about (see ``post(_:from:)``).
    ///   - timeout: The longest time to wait.
    ///   - isolation: The caller's actor isolation; leave the default.
    /// - Returns: What happened, as for `postAndWait(_:from:)`.
    /// - Throws: ``DeliveryTimeout`` if some observer had not finished within `timeout`.
    @available(
        *, noasync,
        message: "this postAndWait blocks the calling thread; use `try await hub.postAndWait(_:from:timeout:)`, which suspends instead"
    )
    @discardableResult
    public func postAndWait<N: TypedNotification>(
        _ notification: N,
        from subject: AnyObject? = nil,
        timeout: Duration,
        isolation: (any Actor)? = #isolation
    ) throws(DeliveryTimeout) -> DeliveryReport {
        let outcome = waitingPost(
            notification, subject: subject, isolation: isolation, deadline: timeout.deadlineFromNow)
        guard outcome.completed else {
            throw DeliveryTimeout(
                timeout: timeout, notificationType: String(describing: N.self), pendingCount: outcome.pendingCount)
        }
        return outcome.report
    }

    /// Posts a notification and suspends until every observer has run, blocking no thread.
    ///
    /// ```swift
    /// let report = await hub.postAndWait(UserCreated(userID: 7, status: 201))
    /// ```
    ///
    /// This is the form that an `async` caller gets; the blocking form is unavailable there.
    /// Posting-thread observers run in the caller's isolation before the first suspension.
    ///
    /// ## When it can suspend forever
    /// It never blocks a thread, so it cannot deadlock its caller's target, but it stays suspended
    /// for as long as some observer's target does not run its delivery: forever if that target
    /// never runs work again (a suspended queue, a main queue that nothing drains, a custom
    /// executor that drops jobs). Use the `async` `postAndWait(_:from:timeout:)`
    /// to bound the wait. A ``DeliveryThread`` that was shut down rejects the delivery, which is
    /// reported and counted in ``DeliveryReport/skippedCount``.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about (see ``post(_:from:)``).
    ///   - isolation: The caller's actor isolation; leave the default.
    /// - Returns: What happened: how many observers ran, and the errors they threw.
    @discardableResult
    public func postAndWait<N: TypedNotification>(
        _ notification: N,
        from subject: AnyObject? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async -> DeliveryReport {
        let (group, report) = startAsyncWaitingPost(notification, subject: subject)
        _ = await group.wait()
        return report.merging(group.report)
    }

    /// Posts a notification and suspends until every observer has run or `timeout` has passed,
    /// blocking no thread.
    ///
    /// ```swift
    /// do {
    ///     try await hub.postAndWait(FlushRequested(), timeout: .seconds(2))
    /// } catch {
    ///     log("flush still running: \(error)")  // DeliveryTimeout
    /// }
    /// ```
    ///
    /// On timeout the outstanding deliveries are not cancelled: each still runs exactly once,
    /// later. Only the wait ends.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about (see ``post(_:from:)``).
    ///   - timeout: The longest time to wait.
    ///   - isolation: The caller's actor isolation; leave the default.
    /// - Returns: What happened: how many observers ran, and the errors they threw.
    /// - Throws: ``DeliveryTimeout`` if some observer had not finished within `timeout`.
    @discardableResult
    public func postAndWait<N: TypedNotification>(
        _ notification: N,
        from subject: AnyObject? = nil,
        timeout: Duration,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(DeliveryTimeout) -> DeliveryReport {
        let (group, report) = startAsyncWaitingPost(notification, subject: subject)
        guard await group.wait(until: timeout.deadlineFromNow) else {
            throw DeliveryTimeout(
                timeout: timeout, notificationType: String(describing: N.self), pendingCount: group.pendingCount)
        }
        return report.merging(group.report)
    }

    /// Enqueues a post for the async waiting forms and runs its posting-thread observers.
    private func startAsyncWaitingPost<N: TypedNotification>(
        _ notification: N,
        subject: AnyObject?
    ) -> (WaitGroup, DeliveryReport) {
        let group = WaitGroup(waiter: nil)
        let wait = PostWait(group: group, isolation: nil, blocks: false)
        withUnsafePointer(to: notification) { payload in
            scan(UnsafeRawPointer(payload), of: N.self, subject: subject, wait: wait)
        }
        group.arrive()
        return (group, wait.report)
    }

    private struct WaitOutcome {
        var completed: Bool
        var pendingCount: Int
        var report: DeliveryReport
    }

    private func waitingPost<N: TypedNotification>(
        _ notification: N,
        subject: AnyObject?,
        isolation: (any Actor)?,
        deadline: DispatchTime
    ) -> WaitOutcome {
        withUnsafePointer(to: notification) { payload in
            waitingPost(
                UnsafeRawPointer(payload), of: N.self, subject: subject, isolation: isolation, deadline: deadline)
        }
    }

    /// The body of the waiting posts; not generic, so it runs without generic metadata lookups.
    private func waitingPost(
        _ payload: UnsafeRawPointer,
        of type: any TypedNotification.Type,
        subject: AnyObject?,
        isolation: (any Actor)?,
        deadline: DispatchTime
    ) -> WaitOutcome {
        let waiter = Waiter(isolation: isolation)
        let group = WaitGroup(waiter: waiter)
        let wait = PostWait(group: group, isolation: isolation, blocks: true)
        scan(payload, of: type, subject: subject, wait: wait)
        for observer in wait.inline {
            observer.drainInline()
        }
        group.arrive()
        let completed = waiter.wait(until: deadline)
        var report = wait.report
        report.merge(group.report)
        return WaitOutcome(completed: completed, pendingCount: group.pendingCount, report: report)
    }

    /// Runs the scan of a waiting post and counts an unobserved post.
    private func scan(_ payload: UnsafeRawPointer, of type: any TypedNotification.Type, subject: AnyObject?, wait: PostWait) {
        let reached = core.registry.snapshot(for: ObjectIdentifier(type)).map {
            core.scan($0, payload, subject: subject, wait: wait)
        } ?? false
        if !reached { core.noteUnobserved(type, hadSubject: subject != nil) }
    }

    // MARK: - Errors and diagnostics

    /// Receives every error thrown by a handler of this hub, with the observer's location.
    ///
    /// The default writes one line to standard error. Replace it to log or to fail a test. It is
    /// called on the thread where the handler threw, and never while Herald holds a lock.
    public var errorHandler: @Sendable (ObserverFailure) -> Void {
        get { core.errorHandlerValue }
        set { core.errorHandlerValue = newValue }
    }

    /// Called for every post that reached no observer, when set. `nil` by default.
    ///
    /// It is called on the posting thread.
    public var unobservedPostHandler: (@Sendable (UnobservedPost) -> Void)? {
        get { core.unobservedHandlerValue }
        set { core.unobservedHandlerValue = newValue }
    }

    /// The number of posts so far that reached no observer.
    public var unobservedPostCount: Int {
        core.unobservedCount.load(ordering: .relaxed)
    }

    // MARK: - Introspection

    /// The number of live observations of `type`.
    ///
    /// Observations whose owner or subject has been deallocated are ended before counting.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: The number of observers a post of `type` could reach now.
    /// - Complexity: O(*n*) in the observers of this type.
    public func observerCount<N: TypedNotification>(of type: N.Type) -> Int {
        core.observers(of: type).count
    }

    /// Whether any live observation of `type` exists.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: `true` if ``observerCount(of:)`` is greater than zero.
    public func hasObservers<N: TypedNotification>(of type: N.Type) -> Bool {
        observerCount(of: type) > 0
    }

    /// The live registrations for `type`: where each observer runs and where it was registered.
    ///
    /// Use it in tests to check that a component registered on the target you expect.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: One entry per live observation, posting-thread observers first, each group in
    ///   registration order.
    public func registrations<N: TypedNotification>(of type: N.Type) -> [Registration] {
        core.observers(of: type).map { observer in
            Registration(
                target: observer.target,
                fileID: observer.location.fileString,
                line: Int(observer.location.line),
                hasSubject: observer.filters?.hasSubject ?? false,
                hasOwner: observer.filters?.hasOwner ?? false
            )
        }
    }
}

/// A description of one live observation, for tests and diagnostics.
public struct Registration: Sendable, Equatable, CustomStringConvertible {
    /// Where the observer's handler runs.
    public let target: DeliveryTarget
    /// The file in which the observer was registered.
    public let fileID: String
    /// The line at which the observer was registered.
    public let line: Int
    /// Whether the observation only receives posts from one subject.
    public let hasSubject: Bool
    /// Whether the observation is bound to an owner's lifetime.
    public let hasOwner: Bool

    /// The registration's location, target, and whether it has a subject or an owner.
    public var description: String {
        "\(fileID):\(line) on \(target)\(hasSubject ? " from a subject" : "")\(hasOwner ? " with an owner" : "")"
    }
}
