import Dispatch

extension DeliveryTarget {
    /// Runs `work` later on this target. It always enqueues, even when called on the target.
    ///
    /// This is the Swift form of "perform this block on that thread": the work runs on the main
    /// queue, a dispatch queue, an operation queue, a ``DeliveryThread`` or a custom executor, in
    /// the order it was submitted from one thread.
    ///
    /// ```swift
    /// DeliveryTarget.queue(database).perform { store.vacuum() }
    /// DeliveryTarget.mainQueue.perform { MainActor.assumeIsolated { statusLabel.text = "Saved" } }
    /// ```
    ///
    /// `perform` never runs `work` before it returns, so the caller's state is never re-entered.
    /// ``posting`` names no place of its own, so there `work` runs on a background dispatch thread,
    /// as with ``perform(after:_:)``. For `@MainActor` work, ``_Concurrency/MainActor/perform(_:)``
    /// takes a closure the compiler checks as `@MainActor`.
    ///
    /// - Parameter work: The work to run. It must be `Sendable`, because it runs on another thread.
    public func perform(_ work: @escaping @Sendable () -> Void) {
        if isPosting {
            DispatchQueue.global().async(execute: work)
        } else {
            schedule(work)
        }
    }

    /// Runs `work` on this target once `delay` has passed, never earlier.
    ///
    /// ```swift
    /// DeliveryTarget.queue(sync).perform(after: .seconds(5)) { engine.retry() }
    /// ```
    ///
    /// It always enqueues, like ``perform(_:)``. On ``posting``, where there is no thread to come
    /// back to later, `work` runs on a background dispatch thread.
    ///
    /// - Parameters:
    ///   - delay: The minimum time to wait. Zero or negative means "as soon as possible".
    ///   - work: The work to run.
    public func perform(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        schedule(after: delay, work)
    }

    /// Runs `work` on this target and waits for its result.
    ///
    /// Use it to call a method with any arguments on another thread and get its result back, the
    /// way `performSelector:onThread:withObject:waitUntilDone:` never could:
    ///
    /// ```swift
    /// let rowCount = try DeliveryTarget.queue(database).performAndWait {
    ///     try store.insert(rows)      // any argument types, any result, errors rethrown
    /// }
    /// ```
    ///
    /// `performAndWait` always completes `work` before it returns. When the caller already runs
    /// on this target (main to main, a queue to itself, an executor to itself), `work` runs inline
    /// instead of waiting for itself, so `DeliveryTarget.mainQueue.performAndWait` from the main queue
    /// never traps or deadlocks.
    ///
    /// ## When it can block forever
    /// It waits until the target runs `work`. It does not deadlock in the cases it can see: the
    /// caller on the target itself, and a nested wait A → B → A through Herald's waiting calls
    /// (the thread blocked on A runs the work meant for A). It blocks forever if the target never
    /// runs work again: a suspended queue, a main queue that nothing drains, a ``DeliveryThread``
    /// that was shut down (it cannot throw the rejection from here: use
    /// ``DeliveryThread/performAndWait(isolation:_:)``, which throws), or a target that is blocked
    /// on something the caller holds outside Herald (a lock, `DispatchQueue.sync`).
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor isolation; leave the default.
    ///   - work: The work to run on this target. It need not be `Sendable`, but it is `sending`:
    ///     the caller hands it over, with whatever it captures, and gets the result back the same
    ///     way, so no state is shared between the two threads. Return what the work produces
    ///     rather than mutating the caller's variables from inside it.
    /// - Returns: What `work` returns.
    /// - Throws: What `work` throws.
    @available(*, noasync, message: "performAndWait blocks the calling thread; use perform(_:) with a continuation")
    public func performAndWait<T, E: Error>(
        isolation: (any Actor)? = #isolation,
        _ work: sending @escaping () throws(E) -> T
    ) throws(E) -> sending T {
        if isCurrent(isolation: isolation) {
            return try work()
        }
        let call = BlockingCall(work)
        call.runWaiting(for: self, isolation: isolation, submittingWith: schedule)
        return try call.result()
    }
}

/// Running work on the main actor from any thread, with or without waiting for its result.
extension MainActor {
    /// Runs `work` on the main actor and waits for its result, from any thread.
    ///
    /// This is the typed replacement for `performSelectorOnMainThread:withObject:waitUntilDone:YES`:
    /// the closure is checked by the compiler as `@MainActor`, it can take any arguments by capture,
    /// and it returns a value.
    ///
    /// ```swift
    /// let applied = MainActor.performAndWait {
    ///     view.frame = Frame(x: 0, y: 0, width: 320, height: 44)
    ///     view.isHidden = false
    ///     return view.frame
    /// }
    /// ```
    ///
    /// Called on the main actor (or the main queue), `work` runs inline: no trap, no deadlock.
    ///
    /// ## When it can block forever
    /// Called off the main queue, it waits until the main queue runs `work`: forever if nothing
    /// drains the main queue (a command-line tool that never calls `dispatchMain()` or runs
    /// `RunLoop.main`), or if the main queue is blocked on something the caller holds outside
    /// Herald (a lock, a semaphore, `DispatchQueue.sync`). When the main queue is itself blocked in
    /// a Herald wait for the caller (a nested wait main → B → main), it runs `work`, so the chain
    /// completes. See ``DeliveryTarget/performAndWait(isolation:_:)``.
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor isolation; leave the default.
    ///   - work: The work to run on the main actor.
    /// - Returns: What `work` returns.
    /// - Throws: What `work` throws.
    @available(*, noasync, message: "performAndWait blocks the calling thread; use `await MainActor.run { }`")
    public static func performAndWait<T: Sendable, E: Error>(
        isolation: (any Actor)? = #isolation,
        _ work: @MainActor () throws(E) -> T
    ) throws(E) -> T {
        // A `@MainActor` closure is `Sendable`, so it may go to the main queue as it is.
        let outcome = withoutActuallyEscaping(work) { work in
            DeliveryTarget.mainQueue.performAndWait(isolation: isolation) {
                MainActor.assumeIsolated { Result { () throws(E) -> T in try work() } }
            }
        }
        return try outcome.get()
    }

    /// Runs `work` on the main actor later. It always enqueues, even when called on the main actor.
    ///
    /// ```swift
    /// MainActor.perform { statusLabel.text = "Saved" }     // checked by the compiler as @MainActor
    /// ```
    ///
    /// Work submitted from one thread runs in the order it was submitted, on the main queue. In a
    /// test whose task has a main-queue executor of its own (`HeraldTesting`'s `TestMainActor`,
    /// installed for the task that runs the test), the work goes to that executor instead, and runs
    /// when the test runs it.
    ///
    /// - Parameter work: The work to run on the main actor.
    public static func perform(_ work: @escaping @MainActor @Sendable () -> Void) {
        if let executor = MainQueueExecutorScope.current {
            executor.enqueue { MainActor.assumeIsolated { work() } }
            return
        }
        DispatchQueue.main.async { MainActor.assumeIsolated { work() } }
    }

    /// Runs `work` on the main actor once `delay` has passed, never earlier.
    ///
    /// ```swift
    /// MainActor.perform(after: .milliseconds(300)) { toast.isHidden = true }
    /// ```
    ///
    /// It always enqueues, even when called on the main actor. In a test whose task has a
    /// main-queue executor of its own (`HeraldTesting`'s `TestMainActor`), the work is due on that
    /// executor's manual clock instead, so a debounce is tested without waiting.
    ///
    /// - Parameters:
    ///   - delay: The minimum time to wait. Zero or negative means "as soon as possible".
    ///   - work: The work to run on the main actor.
    public static func perform(after delay: Duration, _ work: @escaping @MainActor @Sendable () -> Void) {
        if let executor = MainQueueExecutorScope.current {
            executor.enqueue(after: delay) { MainActor.assumeIsolated { work() } }
            return
        }
        DispatchQueue.main.asyncAfter(deadline: delay.deadlineFromNow) { MainActor.assumeIsolated { work() } }
    }
}
