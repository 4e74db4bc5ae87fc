/// A main-queue executor whose jobs run only when someone runs them: its owner, or a waiting post
/// whose caller occupies the main actor, on which the executor runs its jobs.
///
/// Not public API: `HeraldTesting`'s `TestMainActor` is one, and tests use that. A hub given one
/// (`NotificationHub/_useMainQueueExecutor(_:)`) hands it the delivery jobs of its main-actor
/// observers instead of the main queue (``DeliveryEnvironment/mainQueueExecutor``);
/// `MainActor.perform` and `perform(after:)` hand their work to the one of the calling task
/// (``MainQueueExecutorScope``). The executor runs each job on the main actor.
///
/// Since nothing runs its jobs unasked, the hub's waits treat it as follows:
/// - A waiting post runs the deliveries it waits for on the executor its caller occupies, as a
///   blocked `postAndWait` drains the observers of the caller's own target. An `await postAndWait`
///   made on the main actor occupies this executor's thread: it runs the executor's jobs
///   (``runJobs(until:)``) until its deliveries are done, as the main queue would run them while
///   the caller is suspended.
/// - One made elsewhere waits until the owner runs them; the executor knows of it (``hold(_:)``)
///   and ends it if it will never run them (``MainQueueWaitingPost/abandon()``).
/// - `waitUntilIdle` throws at once instead of waiting for jobs that nobody runs
///   (``isRunningJobs``).
@_spi(Testing)
public protocol ManualMainQueueExecutor: MainQueueExecutor {
    /// Whether someone is running the executor's jobs right now, so that a wait for them can end.
    var isRunningJobs: Bool { get }

    /// Runs the executor's due jobs in order, on the main actor, which the caller occupies, and
    /// waits for the async handlers they start, until `isDone` returns `true` or nothing is left to
    /// run: what an `await postAndWait` made on the main actor does, since in the app the main
    /// queue would run those jobs while it is suspended.
    ///
    /// - Parameter isDone: Whether the waiting post has what it waits for.
    @MainActor
    func runJobs(until isDone: @escaping @Sendable () -> Bool) async

    /// An `await postAndWait` made off the main actor waits for deliveries that this executor
    /// holds, until its owner runs them. If the executor will never run them, it calls
    /// ``MainQueueWaitingPost/abandon()``, so the wait never hangs.
    func hold(_ post: MainQueueWaitingPost)

    /// The waiting post has returned.
    func release(_ post: MainQueueWaitingPost)

    /// A main-actor observer was registered, in the task of this executor's scope
    /// (``MainQueueExecutorScope``), on `hub`, which has no main-queue executor: its deliveries go
    /// to the real main queue, which this executor's owner does not run.
    func noteMainQueueObserver(on hub: NotificationHub)

    /// `hub` refused a registration, in the task of this executor's scope (see ``FamilyMismatch``
    /// and `NotificationHub/_takeRegistrationMisuses()`).
    func noteRefusedRegistration(on hub: NotificationHub)
}

extension ManualMainQueueExecutor {
    public func noteMainQueueObserver(on hub: NotificationHub) {}
    public func noteRefusedRegistration(on hub: NotificationHub) {}
}

/// An `await postAndWait` made off the main actor that waits for deliveries held by a manual
/// main-queue executor (see ``ManualMainQueueExecutor/hold(_:)``).
@_spi(Testing)
public final class MainQueueWaitingPost: Sendable, CustomStringConvertible {
    /// The posted notification's type, for failure messages.
    public let notificationType: String
    let group: WaitGroup
    let core: HubCore
    /// The executor's description, for the failure that ends an abandoned wait.
    let executor: String
    /// The observers whose deliveries went to the executor.
    private let observerList = Lock<[AnyObserver]>([], rank: .mainQueueWaitingPost)

    init(notificationType: String, group: WaitGroup, core: HubCore, executor: String) {
        self.notificationType = notificationType
        self.group = group
        self.core = core
        self.executor = executor
    }

    /// The post's delivery to `observer` goes to the executor.
    func add(_ observer: AnyObserver) {
        observerList.withLock { $0.append(observer) }
    }

    var observers: [AnyObserver] { observerList.withLock { $0 } }

    public var description: String { "postAndWait(\(notificationType))" }

    /// Whether every delivery the post waits for has been recorded.
    public var isComplete: Bool { group.isComplete }

    /// Ends the wait: each delivery still outstanding is reported to the hub's error handler,
    /// once, and listed in the post's report as skipped, with a ``PendingWorkError`` naming the
    /// executor (``PendingWorkError/waitsForManualExecutor(_:pending:)``).
    public func abandon() {
        let error = PendingWorkError.waitsForManualExecutor(
            executor, pending: observers.compactMap(\.pendingDelivery))
        let site = observers.first?.location
        let failures = group.abandon {
            ObserverFailure(
                error: error, notificationType: notificationType, fileID: site?.fileString ?? "",
                line: Int(site?.line ?? 0))
        }
        for failure in failures { core.environment.report(failure) }
    }
}

/// The manual main-queue executor of the current task, if one was installed for it.
@_spi(Testing)
public enum MainQueueExecutorScope {
    /// The executor that `MainActor.perform` and `MainActor.perform(after:)` use instead of the
    /// main queue.
    @TaskLocal public static var current: (any ManualMainQueueExecutor)?
}

@_spi(Testing)
extension NotificationHub {
    /// Hands the delivery jobs of this hub's main-actor observers (registered with
    /// `on: MainActor.shared` or on ``DeliveryTarget/mainQueue``) to `executor` instead of the main
    /// queue, or to the main queue again when `nil`.
    ///
    /// Registrations still report ``DeliveryTarget/mainQueue``. A `postAndWait` made on the main
    /// actor still runs those observers inline.
    ///
    /// - Parameter executor: The executor, or `nil`.
    public func _useMainQueueExecutor(_ executor: (any ManualMainQueueExecutor)?) {
        core.environment.mainQueueExecutor = executor
    }
}
