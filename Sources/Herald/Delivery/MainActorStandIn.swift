/// A stand-in for the main actor in tests: Herald hands it what it would send to the main queue.
///
/// Not public API: `HeraldTesting`'s `TestMainActor` conforms, and tests use that. A hub given a
/// stand-in (`NotificationHub/_useMainActorStandIn(_:)`) hands the delivery jobs of its main-actor
/// observers to it; `MainActor.perform` and `perform(after:)` hand their work to the stand-in of
/// the calling task (``MainActorStandInScope``). The stand-in runs each job on the main actor
/// when the test tells it to.
@_spi(Testing)
public protocol MainActorStandIn: DeliveryExecutor {
    /// Whether a test is running the stand-in's jobs right now, so that a wait for them can end.
    var isRunning: Bool { get }

    /// Starts the task of an async main-actor handler, begun by one of the stand-in's jobs. The
    /// stand-in does not count as idle until the task has finished.
    ///
    /// - Parameter work: The task's body.
    /// - Returns: The task, which Herald cancels when the observation ends while it runs.
    func startTask(_ work: @escaping @Sendable () async -> Void) -> Task<Void, Never>
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
