/// A `TaskExecutor` over a delivery target, so that an `async` handler registered on a serial
/// target (a serial `DispatchQueue`, an `OperationQueue` running one operation at a time, a
/// ``DeliveryThread``, a custom ``DeliveryExecutor``) runs each of its synchronous stretches on
/// that target, before and after every suspension; so do the nonisolated `async` functions it
/// awaits. (Actors and the main actor run their own code on their own executors.)
final class TargetTaskExecutor: TaskExecutor {
    private let target: DeliveryTarget

    init(_ target: DeliveryTarget) {
        self.target = target
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        if target.trySchedule({ job.runSynchronously(on: executor) }) != nil {
            // A target that runs no more work (a shut-down DeliveryThread): the task finishes on
            // the global executor rather than never, so its mailbox and its waiting posts end.
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }
}
