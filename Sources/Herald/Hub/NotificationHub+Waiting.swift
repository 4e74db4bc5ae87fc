import Dispatch

/// Waiting posts: `postAndWait`, blocking or suspending, with or without a timeout.
extension NotificationHub {
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
    /// on its own mailbox) is enqueued and not waited for, because waiting would never end; so is a
    /// post to an `async` handler isolated to the caller's own target (the main actor, or the actor
    /// itself), whose call needs the target this call blocks; and a
    /// ``DeliveryThread`` that was shut down rejects the delivery, which is reported and counted in
    /// ``DeliveryReport/skippedCount``. It waits for every other `async` handler to return.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about (see ``post(_:from:)``).
    ///   - isolation: The caller's actor isolation; leave the default.
    /// - Returns: What happened: how many observers ran, and the errors they threw (which also
    ///   went to ``errorHandler``).
    @available(
        *, noasync,
        message:
            "this postAndWait blocks the calling thread; use `await hub.postAndWait(_:from:)`, which suspends instead"
    )
    @discardableResult
    @inlinable
    public func postAndWait<N: TypedNotification>(
        _ notification: N,
        from subject: AnyObject? = nil,
        isolation: (any Actor)? = #isolation
    ) -> DeliveryReport {
        // Inlined into the caller, where `N` is concrete, as `post(_:from:)` is: the rest is not
        // generic, so it runs without asking the runtime for generic metadata.
        withUnsafePointer(to: notification) { payload in
            waitingPost(UnsafeRawPointer(payload), of: N.self, subject: subject, timeout: nil, isolation: isolation)
                .report
        }
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
        message:
            "this postAndWait blocks the calling thread; use `try await hub.postAndWait(_:from:timeout:)`, which suspends instead"
    )
    @discardableResult
    @inlinable
    public func postAndWait<N: TypedNotification>(
        _ notification: N,
        from subject: AnyObject? = nil,
        timeout: Duration,
        isolation: (any Actor)? = #isolation
    ) throws(DeliveryTimeout) -> DeliveryReport {
        try withUnsafePointer(to: notification) { payload throws(DeliveryTimeout) in
            let outcome = waitingPost(
                UnsafeRawPointer(payload), of: N.self, subject: subject, timeout: timeout, isolation: isolation)
            return try outcome.report(orTimeoutAfter: timeout, of: N.self)
        }
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
    /// reported and counted in ``DeliveryReport/skippedCount``. It waits for `async` handlers to
    /// return.
    ///
    /// In a test that gave the hub a main-queue executor whose jobs run only when the test runs
    /// them (`HeraldTesting`'s `TestMainActor`), this call returns what it returns in the app. Made
    /// on the main actor, which that executor's jobs need, it runs the executor's jobs in order
    /// (those held before this post, then its own) until its deliveries are done, as the main
    /// queue would while the caller is suspended; made elsewhere, it waits until the test runs
    /// them. If the executor will no longer run them (its test's scope has ended), the wait ends
    /// and each delivery still held is listed as skipped, with a ``PendingWorkError`` failure
    /// naming the executor.
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
        await asyncWaitingPost(notification, subject: subject, timeout: nil, isolation: isolation).report
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
        try await asyncWaitingPost(notification, subject: subject, timeout: timeout, isolation: isolation)
            .report(orTimeoutAfter: timeout, of: N.self)
    }

    /// The body of the async waiting posts: enqueues the post, runs its posting-thread observers
    /// and, when some deliveries went to a manual main-queue executor, runs its jobs or has it
    /// hold the post; then suspends until every delivery is done or `timeout`, if any, has passed.
    private func asyncWaitingPost<N: TypedNotification>(
        _ notification: N, subject: AnyObject?, timeout: Duration?, isolation: isolated (any Actor)?
    ) async -> WaitOutcome {
        let group = WaitGroup(waiter: nil)
        var wait = PostWait(group: group, isolation: nil, blocks: false, collectsHelp: false)
        if let executor = core.manualMainQueue {
            let post = MainQueueWaitingPost(
                notificationType: String(describing: N.self), group: group, core: core,
                executor: String(describing: executor))
            wait.mainQueue = (executor, post)
        }
        withUnsafePointer(to: notification) { payload in
            scan(UnsafeRawPointer(payload), of: N.self, subject: subject, wait: &wait)
        }
        group.arrive()
        let held = wait.isMainQueuePostHeld ? wait.mainQueue : nil
        // The waiting rule for an executor whose jobs run only when someone runs them: a waiting
        // post runs the deliveries it waits for on the executor its caller occupies, as a blocked
        // `postAndWait` drains the observers of the caller's own target. A manual main-queue
        // executor runs its jobs on the main actor, so a caller on the main actor occupies it: it
        // runs the executor's jobs in order (those held before this post, then its own) until its
        // deliveries are done, as the main queue would while the caller is suspended. A caller
        // elsewhere only waits; the executor holds the post (the scan handed it over), and ends
        // the wait if it will never run those jobs.
        if let held, isolation === MainActor.shared { await held.executor.runJobs(until: { group.isComplete }) }
        let completed = await group.wait(until: timeout?.deadlineFromNow ?? .distantFuture)
        if let held { held.executor.release(held.post) }
        let (delivered, pendingCount) = group.outcome
        return WaitOutcome(completed: completed, pendingCount: pendingCount, report: wait.report.merging(delivered))
    }

    /// What a waiting post learnt: whether every delivery was done in time, how many were not,
    /// and the report.
    @usableFromInline
    struct WaitOutcome {
        var completed: Bool
        var pendingCount: Int
        @usableFromInline var report: DeliveryReport

        /// The report, or ``DeliveryTimeout`` if the wait for a post of `type` ended at its timeout.
        @usableFromInline
        func report(
            orTimeoutAfter timeout: Duration, of type: any TypedNotification.Type
        ) throws(DeliveryTimeout) -> DeliveryReport {
            guard completed else {
                throw DeliveryTimeout(
                    timeout: timeout, notificationType: String(describing: type), pendingCount: pendingCount)
            }
            return report
        }
    }

    /// The body of the blocking waiting posts: `payload` points to a notification of type `type`.
    ///
    /// Not API: it exists so that `postAndWait` can be inlined into its caller. It is not generic,
    /// so it runs without generic metadata lookups.
    @usableFromInline
    func waitingPost(
        _ payload: UnsafeRawPointer,
        of type: any TypedNotification.Type,
        subject: AnyObject?,
        timeout: Duration?,
        isolation: (any Actor)?
    ) -> WaitOutcome {
        let deadline = timeout?.deadlineFromNow ?? .distantFuture
        let waiter = Waiter(isolation: isolation)
        let group = WaitGroup(waiter: waiter)
        var wait = PostWait(group: group, isolation: isolation, blocks: true, collectsHelp: waiter.parent != nil)
        scan(payload, of: type, subject: subject, wait: &wait)
        // Every waiter that may have to run one of these drains (this one for the observers on
        // the caller's own target, those up the chain for the others) is offered each later drain
        // job too, until this wait ends: an item held by another post when the drain below ran
        // becomes ready, and is handed to a target that only a blocked waiter occupies.
        let chain = Waiter.chainAbove(waiter)
        for observer in wait.inline { observer.anyMailbox?.addHelper(waiter) }
        for observer in wait.help { for helper in chain { observer.anyMailbox?.addHelper(helper) } }
        defer {
            for observer in wait.inline { observer.anyMailbox?.removeHelper(waiter) }
            for observer in wait.help { for helper in chain { observer.anyMailbox?.removeHelper(helper) } }
        }
        for observer in wait.help {
            Waiter.askChainForHelp {
                HelpRequest(target: observer.target) { observer.drainInline() }
            }
        }
        for observer in wait.inline {
            observer.drainInline()
        }
        group.arrive()
        let completed = waiter.wait(until: deadline, for: group)
        let (delivered, pendingCount) = group.outcome
        return WaitOutcome(completed: completed, pendingCount: pendingCount, report: wait.report.merging(delivered))
    }

    /// Runs the scan of a waiting post and counts an unobserved post.
    private func scan(
        _ payload: UnsafeRawPointer, of type: any TypedNotification.Type, subject: AnyObject?, wait: inout PostWait
    ) {
        let snapshot = core.registry.snapshot(of: type, payload: payload)
        if snapshot?.scan(payload, subject: subject, wait: &wait) != true {
            core.noteUnobserved(type, hadSubject: subject != nil)
        }
    }
}
