import Dispatch
import Foundation

// Where a target runs a job: the one place that knows each kind of target's queue, thread,
// executor or actor.
extension DeliveryTarget {
    /// Whether the calling code already runs on this target.
    ///
    /// ``posting`` is always current. For an actor target, only the `isolation` passed in can tell.
    func isCurrent(isolation: (any Actor)?) -> Bool {
        switch kind {
        case .posting: return true
        // Not `isolation === MainActor.shared`: a non-Sendable closure formed on the main actor
        // keeps that static isolation when `performAndWait` runs it on another thread, so only
        // the queue itself can tell.
        case .main: return QueueIdentity.isMain
        case .queue(_, let token): return QueueIdentity.isCurrent(token)
        case .operationQueue(let queue): return OperationQueue.current === queue
        case .thread(let thread): return thread.isCurrent
        case .executor(let executor): return executor.isCurrent
        case .actor(let actor): return isolation === actor
        }
    }

    /// Whether an async handler on this target runs on it (isolated to the main actor or an
    /// actor, or confined to the queue, thread or executor by a ``TargetTaskExecutor``), so that a
    /// thread blocked on the target keeps the handler from finishing.
    var isolatesAsyncHandlers: Bool { !isPosting }

    /// Whether a drain job that found its mailbox empty may go back to this target once more, in
    /// case the poster is still at work (see ``MailboxStateMachine/lingers``): a queue or thread
    /// of Herald's own knowing, where handing over a job from the target itself wakes no thread.
    /// Never the main queue, which other work must get at, nor executors and actors, whose cost
    /// Herald does not know.
    var drainMayLinger: Bool {
        switch kind {
        case .queue, .thread: return true
        default: return false
        }
    }

    /// Runs `job` later on this target. ``posting`` runs it right away.
    func schedule(_ job: @escaping @Sendable () -> Void) {
        switch kind {
        case .posting: job()
        case .main: DispatchQueue.main.async(execute: job)
        case .queue(let queue, _): queue.async(execute: job)
        case .operationQueue(let queue): queue.addOperation(job)
        case .thread(let thread): thread.perform(job)
        case .executor(let executor): executor.enqueue(job)
        case .actor(let actor): Task.detached { await runIsolated(to: actor, job) }
        }
    }

    /// Runs `job` later on this target, or returns why the target will never run it (a shut-down
    /// ``DeliveryThread`` or another executor that refuses work).
    func trySchedule(_ job: @escaping @Sendable () -> Void) -> (any Error)? {
        switch kind {
        case .thread(let thread): return thread.trySubmit(job)
        case .executor(let executor): return executor.tryEnqueue(job)
        default: break
        }
        schedule(job)
        return nil
    }

    /// Runs `job` on this target once `delay` has passed.
    func schedule(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        switch kind {
        case .main: DispatchQueue.main.asyncAfter(deadline: delay.deadlineFromNow, execute: job)
        case .queue(let queue, _): queue.asyncAfter(deadline: delay.deadlineFromNow, execute: job)
        case .thread(let thread): thread.perform(after: delay, job)
        case .executor(let executor): executor.enqueue(after: delay, job)
        case .posting, .operationQueue, .actor:
            // No timer of their own: a global queue waits, then schedules the job.
            DispatchQueue.global().asyncAfter(deadline: delay.deadlineFromNow) { schedule(job) }
        }
    }

}

/// Runs `job` isolated to `actor`.
private func runIsolated(to actor: isolated any Actor, _ job: @Sendable () -> Void) {
    job()
}
