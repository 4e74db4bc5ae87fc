/// The job of a lingering mailbox that the target runs again (see ``BurstGauge``): while the gauge
/// says the poster is still at work, it hands only itself back to the target; then it takes the
/// items (`take`).
///
/// A look touches the gauge and this job, and neither the observer nor the mailbox: their cache
/// lines hold what the poster reads and writes at every post (the observer's flags, the mailbox's
/// lock), and a burst makes a look every few posts. The job is made once per hand-back of the
/// drain, with the closure that takes.
final class GatheringJob: Sendable {
    private let gauge: BurstGauge
    /// The target the job goes back to: the one it runs on.
    private let target: DeliveryTarget
    /// Runs the drain job; its argument says whether the poster paused (``BurstGauge/Look``).
    private let take: @Sendable (_ posterPaused: Bool) -> Void

    init(gauge: BurstGauge, target: DeliveryTarget, take: @escaping @Sendable (_ posterPaused: Bool) -> Void) {
        self.gauge = gauge
        self.target = target
        self.take = take
    }

    /// Looks at the gauge, on the target.
    func look() {
        switch gauge.look() {
        case .gather:
            // A target that refuses the job now gets the drain at once: this thread is on it.
            if target.trySchedule({ [self] in look() }) != nil { take(false) }
        case .take(let posterPaused):
            take(posterPaused)
        }
    }
}
