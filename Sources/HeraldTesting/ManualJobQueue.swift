#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("ManualJobQueue: unsupported platform")
#endif

/// The job queue of HeraldTesting's manual schedulers, ``TestDeliveryTarget`` and
/// ``TestMainActor``: jobs wait in (due time, enqueue order) until the test runs them, due on a
/// manual clock that moves only when the test moves it.
///
/// A value kept in its owner's `Locked` state, so every method runs under the owner's lock;
/// ``run(dueBy:in:_:)`` runs the job itself outside that lock, so a job may enqueue more work, post,
/// or run its scheduler again.
struct ManualJobQueue: Sendable {
    private struct Job {
        let due: Duration
        let work: @Sendable () -> Void
    }

    /// The time on the manual clock.
    private(set) var now: Duration = .zero
    /// Sorted by due time, then by enqueue order.
    private var jobs: [Job] = []
    /// The threads running a job of this queue right now (a stack per nested run).
    private(set) var runners: [UInt] = []
    /// The number of jobs run so far.
    private(set) var executedCount = 0

    // MARK: - Inspecting

    /// The number of queued jobs, due now or later.
    var pendingCount: Int { jobs.count }

    /// The number of queued jobs that are due now.
    var dueCount: Int { jobs.count { $0.due <= now } }

    /// When the earliest queued job is due, or `nil` if nothing is queued.
    var nextDueTime: Duration? { jobs.first?.due }

    /// Whether a job is due by `deadline` (by ``now`` when `nil`, or when `deadline` is earlier).
    func hasJob(dueBy deadline: Duration?) -> Bool {
        guard let first = jobs.first else { return false }
        return first.due <= Swift.max(deadline ?? now, now)
    }

    // MARK: - Changing

    /// Queues `work`, due once the clock has advanced by `delay` (negative counts as zero).
    mutating func insert(_ work: @escaping @Sendable () -> Void, after delay: Duration = .zero) {
        let due = now + Swift.max(delay, .zero)
        // After every job with the same or an earlier due time: searched from the end, where a job
        // due now goes at once.
        let index = jobs.lastIndex { $0.due <= due }.map { $0 + 1 } ?? 0
        jobs.insert(Job(due: due, work: work), at: index)
    }

    /// Moves the clock to `instant`, if that is later than ``now``.
    mutating func advanceClock(to instant: Duration) {
        now = Swift.max(now, instant)
    }

    /// Takes the first job due by `deadline`, moving the clock to it, and notes `thread` as its runner.
    private mutating func takeJob(dueBy deadline: Duration?, runner thread: UInt) -> (@Sendable () -> Void)? {
        guard hasJob(dueBy: deadline) else { return nil }
        let first = jobs.removeFirst()
        now = Swift.max(now, first.due)
        runners.append(thread)
        return first.work
    }

    /// Notes that the job `thread` took has run.
    private mutating func finishJob(runner thread: UInt) {
        if let index = runners.lastIndex(of: thread) {
            runners.remove(at: index)
        }
        executedCount += 1
    }

    // MARK: - Running

    /// Runs the first job due by `deadline` (by ``now`` when `nil`) on the calling thread, moving
    /// the clock to it; the queue is `state[keyPath: queue]`, and the job runs outside the lock.
    ///
    /// - Returns: `true` if a job ran.
    static func run<State: Sendable>(
        dueBy deadline: Duration?, in state: Locked<State>, _ queue: WritableKeyPath<State, ManualJobQueue>
    ) -> Bool {
        let me = currentThread()
        guard let work = state.withLock({ $0[keyPath: queue].takeJob(dueBy: deadline, runner: me) }) else {
            return false
        }
        work()
        state.withLock { $0[keyPath: queue].finishJob(runner: me) }
        return true
    }

    /// What is queued, and how many async handlers the owner still runs, for a failure message:
    /// "`owner` expected no pending work, found N jobs: D due now (run them with `runCall`)", when
    /// the first job due later is due, and the tasks; `nil` if there is neither a job nor a task.
    func pendingWorkFailure(of owner: String, runCall: String, runningTasks tasks: Int = 0) -> String? {
        guard !jobs.isEmpty || tasks > 0 else { return nil }
        let later = jobs.filter { $0.due > now }.map(\.due)
        var message = "\(owner) expected no pending work, found \(jobs.count) job\(jobs.count == 1 ? "" : "s")"
        message += ": \(dueCount) due now (run them with \(runCall))"
        if let first = later.first {
            message += ", \(later.count) due later, the first at \(first) (clock at \(now); use advance(by:))"
        }
        if tasks > 0 { message += ", and \(tasks) async handler\(tasks == 1 ? "" : "s") still running" }
        return message
    }

    /// An identity of the calling thread.
    static func currentThread() -> UInt {
        #if canImport(Darwin)
        return UInt(bitPattern: pthread_self())
        #else
        return UInt(pthread_self())
        #endif
    }
}
