import Dispatch

/// Quiescence: waiting until every delivery of a hub has run.
extension NotificationHub {
    /// Suspends until no observer of this hub has work left: every mailbox is empty, no delivery
    /// job is with a target, and no `async` handler is still running.
    ///
    /// Use it in integration tests where the code under test is the poster, and the test only
    /// needs to know that everything it set off has been delivered:
    ///
    /// ```swift
    /// importer.start()                      // posts from a background queue
    /// try await hub.waitUntilIdle(timeout: .seconds(5))
    /// #expect(store.rows.count == 2)
    /// ```
    ///
    /// Work that handlers post meanwhile counts too: the hub is idle only when that has run as
    /// well. A post made after the hub became idle, by code that this call does not wait for,
    /// may still be running when it returns. Streams are read by their consumers and do not
    /// count, nor does work sent with `perform`.
    ///
    /// When the hub was given a main-queue executor whose jobs run only when a test runs them
    /// (`HeraldTesting`'s `TestMainActor`), and nothing runs them, the deliveries it holds can only
    /// run once the test runs them, which it cannot while it waits here. The call then throws at
    /// once, naming them, instead of hanging.
    ///
    /// - Throws: ``PendingWorkError`` when only the test can run what is left.
    public func waitUntilIdle(isolation: isolated (any Actor)? = #isolation) async throws(PendingWorkError) {
        try await waitUntilIdle(deadline: .distantFuture, timeout: nil)
    }

    /// Suspends until no observer of this hub has work left, or until `timeout` has passed.
    ///
    /// ```swift
    /// do {
    ///     try await hub.waitUntilIdle(timeout: .seconds(2))
    /// } catch {
    ///     print(error.pending)   // who still has work, and how much
    /// }
    /// ```
    ///
    /// On timeout nothing is cancelled: the pending deliveries still run later.
    ///
    /// - Parameters:
    ///   - timeout: The longest time to wait.
    ///   - isolation: The caller's actor isolation; leave the default.
    /// - Throws: ``PendingWorkError`` naming what was still pending when `timeout` passed, or at
    ///   once when only the test can run what is left (see ``waitUntilIdle(isolation:)``).
    public func waitUntilIdle(
        timeout: Duration, isolation: isolated (any Actor)? = #isolation
    ) async throws(PendingWorkError) {
        try await waitUntilIdle(deadline: timeout.deadlineFromNow, timeout: timeout)
    }

    /// What every observer of this hub still has to do; empty when the hub is idle.
    ///
    /// - Returns: One entry per observer with queued notifications, a delivery job with its
    ///   target, or an `async` handler that has not finished; and one per observation that ended
    ///   while a handler of its ran, until that handler returns.
    public var pendingDeliveries: [PendingDelivery] {
        let (snapshots, families) = core.registry.allObservers()
        // A family observer is listed once, on its own, before every type; but the observer of a
        // family of one type, with that type's other observers (``AnyObserver/registrationOfItsType``).
        var pending: [PendingDelivery] = families.filter { $0.family?.isOneType != true }.compactMap(\.pendingDelivery)
        for snapshot in snapshots {
            snapshot.withObservers { queued, _ in
                pending += queued.compactMap { $0.takeUnretainedValue().registrationOfItsType?.pendingDelivery }
            }
        }
        // Registrations that ended while a handler of theirs ran, until it returns.
        return pending + core.environment.idleWatch.endingRegistrations().compactMap(\.pendingDelivery)
    }

    private func waitUntilIdle(
        deadline: DispatchTime, timeout: Duration?, isolation: isolated (any Actor)? = #isolation
    ) async throws(PendingWorkError) {
        let idleWatch = core.environment.idleWatch
        let result: PendingWorkError? = await idleWatch.watching {
            while true {
                let generation = idleWatch.generation
                let batchesEnded = idleWatch.batchesEnded
                let pending = self.pendingDeliveries
                // Idle, unless a handler posted to a mailbox already read and then returned: its
                // drain's end then wakes the wait below.
                if pending.isEmpty, idleWatch.batchesEnded == batchesEnded { return nil }
                if !pending.isEmpty, let executor = self.core.manualMainQueue, !executor.isRunningJobs,
                    pending.allSatisfy({ $0.target == .mainQueue && $0.waitsForTarget })
                {
                    return .waitsForManualExecutor(String(describing: executor), pending: pending)
                }
                if let timeout, DispatchTime.now() >= deadline {
                    return .timedOut(after: timeout, pending: pending)
                }
                await idleWatch.wait(since: generation, until: deadline)
            }
        }
        if let result { throw result }
    }
}
