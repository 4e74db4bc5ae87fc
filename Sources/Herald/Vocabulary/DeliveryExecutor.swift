import Dispatch

/// A custom place where Herald can run work: an event loop, a run loop, a test scheduler.
///
/// Conform a type to plug it in as a delivery target with ``DeliveryTarget/executor(_:)``.
/// Herald only needs two things from an executor:
/// - ``enqueue(_:)`` runs a job later, on the executor, in the order jobs were enqueued;
/// - ``isCurrent`` says whether the calling code already runs on the executor, so that waiting
///   calls such as `postAndWait(_:from:)` can run inline instead of
///   waiting for themselves.
///
/// Herald never enqueues more than one job at a time per observer, so an executor that runs jobs
/// concurrently still sees each observer's deliveries one after another.
///
/// ```swift
/// final class EventLoopExecutor: DeliveryExecutor {
///     let loop: MyEventLoop
///     func enqueue(_ job: @escaping @Sendable () -> Void) { loop.execute(job) }
///     var isCurrent: Bool { loop.inEventLoop }
/// }
/// ```
public protocol DeliveryExecutor: AnyObject, Sendable {
    /// Schedules `job` to run later on this executor.
    ///
    /// Jobs enqueued from one thread must run in the order they were enqueued. The call must not
    /// run `job` before returning.
    ///
    /// - Parameter job: The work to run on this executor.
    func enqueue(_ job: @escaping @Sendable () -> Void)

    /// Schedules `job` to run on this executor once `delay` has passed.
    ///
    /// The default implementation waits on a background dispatch queue, then calls ``enqueue(_:)``.
    ///
    /// - Parameters:
    ///   - delay: The minimum time to wait before the job runs.
    ///   - job: The work to run on this executor.
    func enqueue(after delay: Duration, _ job: @escaping @Sendable () -> Void)

    /// Whether the calling code is running on this executor right now.
    var isCurrent: Bool { get }

    /// Schedules `job` like ``enqueue(_:)``, or says why this executor will never run it.
    ///
    /// Herald hands every delivery job to this method. Return `nil` when the job was accepted.
    /// Return an error when the executor can no longer run work at all (it has been shut down): the
    /// job is then dropped, and Herald ends the observation that needed it, reports the error to the
    /// hub's ``NotificationHub/errorHandler`` once per refused delivery batch, and completes any
    /// waiting post with the failure, so nothing is lost silently and no wait hangs.
    ///
    /// The default implementation calls ``enqueue(_:)`` and returns `nil`.
    ///
    /// - Parameter job: The work to run on this executor.
    /// - Returns: `nil` if `job` will run; otherwise the reason it never will.
    func tryEnqueue(_ job: @escaping @Sendable () -> Void) -> (any Error)?
}

extension DeliveryExecutor {
    /// Calls ``enqueue(_:)`` and returns `nil`: an executor that never refuses work.
    public func tryEnqueue(_ job: @escaping @Sendable () -> Void) -> (any Error)? {
        enqueue(job)
        return nil
    }

    /// Waits on a background dispatch queue for `delay`, then calls ``enqueue(_:)``.
    public func enqueue(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: delay.deadlineFromNow) { [self] in
            enqueue(job)
        }
    }
}
