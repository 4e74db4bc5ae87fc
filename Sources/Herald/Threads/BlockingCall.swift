import Synchronization

/// A value handed from one thread to another, once: the one transfer box Herald uses to move a
/// caller's non-`Sendable` value to another thread.
///
/// The sender gives the value up (`sending`), and the receiver takes it out exactly once; the
/// mutex makes the box `Sendable` without an unchecked promise.
final class HandOver<Value>: Sendable {
    private let slot: Mutex<Value?>

    init(_ value: sending Value) {
        slot = Mutex(value)
    }

    /// Takes the value out; `nil` if it was taken before.
    func take() -> sending Value? {
        slot.withLock { $0.take() }
    }
}

/// A caller's closure, handed to the thread that runs it, and its result, handed back, while the
/// caller is blocked: what every `performAndWait` hands over.
///
/// Both hand-overs are `sending` (see ``HandOver``): the caller gives up the closure, and whatever
/// it captures, when it makes the call, and the result comes back as a value nobody else holds.
/// So no value is ever shared between the two threads.
final class BlockingCall<T, E: Error>: Sendable {
    private let work: HandOver<() throws(E) -> T>
    private let outcome = Mutex<HandOver<Result<T, E>>?>(nil)

    init(_ work: sending @escaping () throws(E) -> T) {
        self.work = HandOver(work)
    }

    /// Runs the work on the calling thread, on behalf of `waiter`, keeps its outcome for
    /// ``result()`` and wakes `waiter`; does nothing if the work was taken before, so that it runs
    /// once, whoever gets to it first: the target or a helping waiter.
    private func run(for waiter: Waiter) {
        // The work, and all it captured, is released before the waiter wakes: `MainActor.performAndWait`
        // runs it inside `withoutActuallyEscaping`, which traps if the closure outlives the call.
        do {
            guard let work = work.take() else { return }
            let box = HandOver(Waiter.chain.withValue(waiter) { Result(catching: work) })
            outcome.withLock { $0 = box }
        }
        waiter.finish()
    }

    /// Hands the work to `target` with `submit`, and blocks the calling thread until it has run:
    /// the one way every `performAndWait` waits. Read the outcome with ``result()`` afterwards.
    ///
    /// While it blocks, the thread serves help requests (see ``Waiter``), and the waiters up its
    /// chain are offered the job, so that a nested wait A → B → A completes; the job runs once,
    /// whoever gets to it first.
    ///
    /// - Parameters:
    ///   - target: The target the job is for.
    ///   - isolation: The caller's actor isolation.
    ///   - submit: Hands the job to `target`; throws, and nothing waits, if the target refuses it.
    /// - Throws: What `submit` throws.
    func runWaiting(
        for target: DeliveryTarget, isolation: (any Actor)?,
        submittingWith submit: (_ job: @escaping @Sendable () -> Void) throws -> Void
    ) rethrows {
        let waiter = Waiter(isolation: isolation)
        let job: @Sendable () -> Void = { self.run(for: waiter) }
        try submit(job)
        Waiter.askChainForHelp { HelpRequest(target: target, work: job) }
        _ = waiter.wait()
    }

    /// The outcome of the work, which must have run.
    func result() throws(E) -> sending T {
        guard let result = outcome.withLock({ $0 })?.take() else {
            preconditionFailure("Herald: a completed wait has no result")
        }
        return try result.get()
    }
}
