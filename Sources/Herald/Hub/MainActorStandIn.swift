/// A stand-in for the main actor in tests: Herald hands it what it would send to the main queue.
///
/// Not public API: `HeraldTesting`'s `TestMainActor` conforms, and tests use that. A hub given a
/// stand-in (`NotificationHub/_useMainActorStandIn(_:)`) hands the delivery jobs of its main-actor
/// observers to it; `MainActor.perform` and `perform(after:)` hand their work to the stand-in of
/// the calling task (``MainActorStandInScope``). The stand-in runs each job on the main actor
/// when the test tells it to.
@_spi(Testing)
public protocol MainActorStandIn: MainQueueExecutor {
    /// Whether a test is running the stand-in's jobs right now, so that a wait for them can end.
    var isRunning: Bool { get }

    /// Runs the stand-in's due jobs in order, on the main actor, and waits for the async handlers
    /// they start, until `isDone` returns `true` or nothing is left to run: what an
    /// `await postAndWait` made on the main actor does, since in the app the main queue would run
    /// those jobs while it is suspended.
    ///
    /// - Parameter isDone: Whether the waiting post has what it waits for.
    @MainActor
    func runJobs(until isDone: @escaping @Sendable () -> Bool) async

    /// An `await postAndWait` made off the main actor waits for deliveries the stand-in holds,
    /// until the test runs them. If the stand-in's scope ends first, it records a test failure
    /// naming the post and calls ``StandInWaitingPost/abandon()``, so the wait never hangs.
    func hold(_ post: StandInWaitingPost)

    /// The waiting post has returned.
    func release(_ post: StandInWaitingPost)

    /// A main-actor observer was registered, in the task of this stand-in's scope, on `hub`, which
    /// has no stand-in: its deliveries will go to the real main queue, which the test does not
    /// run. The stand-in may check the hub later and name `useMainActorStandIn` in a failure.
    func noteHubWithoutStandIn(_ hub: NotificationHub)

    /// `hub` refused a registration, in the task of this stand-in's scope (see ``FamilyMismatch``
    /// and `NotificationHub/_takeRegistrationMisuses()`): the stand-in may report it later.
    func noteRefusedRegistration(on hub: NotificationHub)
}

extension MainActorStandIn {
    public func noteHubWithoutStandIn(_ hub: NotificationHub) {}
    public func noteRefusedRegistration(on hub: NotificationHub) {}
}

extension NotificationHub {
    /// Tells the stand-in of the registering task, if any, about a main-actor observer on this
    /// hub when the hub itself has no stand-in (see ``MainActorStandIn/noteHubWithoutStandIn(_:)``).
    func noteMainActorRegistration(on target: DeliveryTarget) {
        guard case .main = target.kind, core.mainActorStandIn == nil else { return }
        MainActorStandInScope.current?.noteHubWithoutStandIn(self)
    }
}

/// An `await postAndWait` made off the main actor that waits for deliveries held by a main-actor
/// stand-in (see ``MainActorStandIn/hold(_:)``).
@_spi(Testing)
public final class StandInWaitingPost: Sendable, CustomStringConvertible {
    /// The posted notification's type, for failure messages.
    public let notificationType: String
    let group: WaitGroup
    let core: HubCore
    let standIn: String
    /// The observers whose deliveries went to the stand-in.
    private let observerList = Lock<[AnyObserver]>([], rank: .standInPost)

    init(notificationType: String, group: WaitGroup, core: HubCore, standIn: String) {
        self.notificationType = notificationType
        self.group = group
        self.core = core
        self.standIn = standIn
    }

    /// The post's delivery to `observer` goes to the stand-in.
    func add(_ observer: AnyObserver) {
        observerList.withLock { $0.append(observer) }
    }

    var observers: [AnyObserver] { observerList.withLock { $0 } }

    public var description: String { "postAndWait(\(notificationType))" }

    /// Whether every delivery the post waits for has been recorded.
    public var isComplete: Bool { group.isComplete }

    /// Ends the wait: each delivery still outstanding is reported to the hub's error handler,
    /// once, and listed in the post's report as skipped, with a ``PendingWorkError`` naming the
    /// stand-in.
    public func abandon() {
        let error = PendingWorkError.waitsForStandIn(standIn, pending: observers.compactMap(\.pendingDelivery))
        let site = observers.first?.location
        let failures = group.abandon {
            ObserverFailure(
                error: error, notificationType: notificationType, fileID: site?.fileString ?? "",
                line: Int(site?.line ?? 0))
        }
        for failure in failures { core.report(failure) }
    }
}

/// The main-actor stand-in of the current task, if a test installed one.
@_spi(Testing)
public enum MainActorStandInScope {
    /// The stand-in that `MainActor.perform` and `MainActor.perform(after:)` use instead of the
    /// main queue.
    @TaskLocal public static var current: (any MainActorStandIn)?
}

@_spi(Testing)
extension NotificationHub {
    /// Hands the delivery jobs of this hub's main-actor observers (registered with
    /// `on: MainActor.shared` or on ``DeliveryTarget/mainQueue``) to `standIn` instead of the main
    /// queue, or to the main queue again when `nil`.
    ///
    /// Registrations still report ``DeliveryTarget/mainQueue``. A `postAndWait` made on the main
    /// actor still runs those observers inline.
    ///
    /// - Parameter standIn: The stand-in, or `nil`.
    public func _useMainActorStandIn(_ standIn: (any MainActorStandIn)?) {
        core.mainActorStandIn = standIn
    }
}
