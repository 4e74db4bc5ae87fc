import Herald
import Testing

/// A delivery target for tests: work waits in a queue until the test runs it, on the test's thread.
///
/// Inject it where production code uses `.mainQueue` or a queue, and the code under test becomes
/// synchronous and deterministic: no real main queue, no sleeps, no expectations with timeouts.
///
/// ```swift
/// let main = TestDeliveryTarget(name: "main")
/// let model = ProfileViewModel(hub: hub, deliveringOn: main.target)   // `.mainQueue` in production
///
/// hub.post(ProfileLoaded(name: "Ada"))
/// #expect(model.title == "Loading…")      // queued, not run yet
/// main.runUntilIdle()
/// #expect(model.title == "Ada")
/// main.expectNoPendingWork()
/// ```
///
/// ## Time
/// The target has a manual clock, ``now``, that starts at zero and moves only when the test calls
/// ``advance(by:)`` or ``advance(to:)``. Work enqueued with a delay (such as
/// `target.perform(after: .milliseconds(300)) { … }`) is due at `now + delay`. Work runs in order
/// of due time, then of enqueueing: the same order every run.
///
/// ## Threading
/// Jobs run synchronously on the thread that calls ``runNext()``, ``runUntilIdle(maxJobs:fileID:filePath:line:column:)`` or
/// ``advance(by:)``, never while the target's lock is held, so a job may enqueue more work, post,
/// or run the target again. While a job runs, ``isCurrent`` is `true` on that thread: a
/// `postAndWait` or `performAndWait` made from inside a job to this same target runs inline
/// instead of waiting. `enqueue` may be called from any thread. A waiting call made from another
/// thread (`postAndWait`, `performAndWait`) blocks until the test runs the work, so call it from a
/// job of this target, or use the `async` `postAndWait`.
public final class TestDeliveryTarget: DeliveryExecutor, CustomStringConvertible {
    /// A name for failure messages, such as `"main"`.
    public let name: String
    private let state = Locked(ManualJobQueue())

    /// Creates a target with an empty queue and its clock at zero.
    ///
    /// ```swift
    /// let main = TestDeliveryTarget(name: "main")
    /// ```
    ///
    /// - Parameter name: A name used in failure messages and descriptions.
    public init(name: String = "TestDeliveryTarget") {
        self.name = name
    }

    /// This target as a `DeliveryTarget`, to pass where production code takes one.
    ///
    /// ```swift
    /// hub.observe(UserCreated.self, on: main.target) { note in … }
    /// ```
    ///
    /// It is the same as `.executor(self)`, and equal to every other `target` of this instance.
    public var target: DeliveryTarget {
        .executor(self)
    }

    public var description: String {
        "TestDeliveryTarget(\(name))"
    }

    // MARK: - DeliveryExecutor

    /// Queues `job`, due now. It runs when the test next runs due work.
    ///
    /// Callable from any thread, including from inside a job; it never runs `job` before returning.
    ///
    /// - Parameter job: The work to queue.
    public func enqueue(_ job: @escaping @Sendable () -> Void) {
        state.withLock { $0.insert(job) }
    }

    /// Queues `job`, due once the manual clock has advanced by `delay`.
    ///
    /// Callable from any thread. Negative delays count as zero.
    ///
    /// - Parameters:
    ///   - delay: How far ``now`` must advance before `job` is due.
    ///   - job: The work to queue.
    public func enqueue(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        state.withLock { $0.insert(job, after: delay) }
    }

    /// Whether the calling thread is running a job of this target right now.
    public var isCurrent: Bool {
        let me = ManualJobQueue.currentThread()
        return state.withLock { $0.runners.contains(me) }
    }

    // MARK: - Inspecting

    /// The time on the manual clock. It starts at zero and moves only by ``advance(by:)`` and
    /// ``advance(to:)``.
    public var now: Duration {
        state.withLock { $0.now }
    }

    /// The number of queued jobs, due now or later.
    public var pendingCount: Int {
        state.withLock { $0.pendingCount }
    }

    /// The number of queued jobs that are due now.
    public var dueCount: Int {
        state.withLock { $0.dueCount }
    }

    /// When the earliest queued job is due, or `nil` if nothing is queued.
    public var nextDueTime: Duration? {
        state.withLock { $0.nextDueTime }
    }

    /// The number of jobs run so far.
    public var executedCount: Int {
        state.withLock { $0.executedCount }
    }

    // MARK: - Running

    /// Runs the first job that is due, if any, on the calling thread.
    ///
    /// ```swift
    /// hub.post(Ping())
    /// #expect(main.runNext())      // the observer's delivery ran
    /// #expect(!main.runNext())     // nothing else was due
    /// ```
    ///
    /// - Returns: `true` if a job ran, `false` if nothing was due.
    @discardableResult
    public func runNext() -> Bool {
        ManualJobQueue.run(dueBy: nil, in: state, \.self)
    }

    /// Runs due jobs on the calling thread until none is due, including jobs that those jobs
    /// enqueue. The clock does not move: delayed jobs stay queued.
    ///
    /// ```swift
    /// hub.post(ProfileLoaded(name: "Ada"))
    /// main.runUntilIdle()
    /// ```
    ///
    /// If jobs keep enqueueing jobs, it stops after `maxJobs` and fails the test (a Swift Testing
    /// issue, or an XCTest failure) instead of looping forever.
    ///
    /// - Parameters:
    ///   - maxJobs: The most jobs to run before reporting runaway work.
    ///   - fileID: Where to report runaway work; leave the default.
    ///   - filePath: Where to report runaway work; leave the default.
    ///   - line: Where to report runaway work; leave the default.
    ///   - column: Where to report runaway work; leave the default.
    /// - Returns: The number of jobs run.
    @discardableResult
    public func runUntilIdle(
        maxJobs: Int = 100_000,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Int {
        let site = FailureSite(fileID: fileID, filePath: filePath, line: line, column: column)
        var count = 0
        while ManualJobQueue.run(dueBy: nil, in: state, \.self) {
            count += 1
            if count >= maxJobs && dueCount > 0 {
                reportFailure("\(self) ran \(count) jobs and more are still due: work keeps enqueueing work", at: site)
                break
            }
        }
        return count
    }

    /// Moves the clock forward by `duration`, running every job that falls due on the way, in
    /// (due time, enqueue order), with ``now`` set to each job's due time while it runs.
    ///
    /// ```swift
    /// model.searchTextChanged("ad")                // debounced by 300 ms
    /// main.advance(by: .milliseconds(299))
    /// #expect(recorder.values.isEmpty)
    /// main.advance(by: .milliseconds(1))
    /// #expect(recorder.values == [SearchRequested(text: "ad")])
    /// ```
    ///
    /// Jobs that are already due run first. A negative duration counts as zero.
    ///
    /// - Parameter duration: How far to move the clock.
    /// - Returns: The number of jobs run.
    @discardableResult
    public func advance(by duration: Duration) -> Int {
        advance(to: now + Swift.max(duration, .zero))
    }

    /// Moves the clock forward to `instant`, running every job due by then, as ``advance(by:)``
    /// does. An instant in the past runs only what is already due.
    ///
    /// - Parameter instant: The time to move the clock to.
    /// - Returns: The number of jobs run.
    @discardableResult
    public func advance(to instant: Duration) -> Int {
        var count = 0
        while ManualJobQueue.run(dueBy: instant, in: state, \.self) {
            count += 1
        }
        state.withLock { $0.advanceClock(to: instant) }
        return count
    }

    /// Runs everything queued, including delayed work, moving the clock to each job's due time.
    ///
    /// ```swift
    /// main.runAll()
    /// main.expectNoPendingWork()
    /// ```
    ///
    /// - Parameters:
    ///   - maxJobs: The most jobs to run before reporting runaway work.
    ///   - fileID: Where to report runaway work; leave the default.
    ///   - filePath: Where to report runaway work; leave the default.
    ///   - line: Where to report runaway work; leave the default.
    ///   - column: Where to report runaway work; leave the default.
    /// - Returns: The number of jobs run.
    @discardableResult
    public func runAll(
        maxJobs: Int = 100_000,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Int {
        let site = FailureSite(fileID: fileID, filePath: filePath, line: line, column: column)
        var count = 0
        while let due = nextDueTime {
            count += advance(to: due)
            if count >= maxJobs && pendingCount > 0 {
                reportFailure(
                    "\(self) ran \(count) jobs and more are still queued: work keeps enqueueing work", at: site)
                break
            }
        }
        return count
    }

    // MARK: - Checking

    /// Records a test issue if work is still queued, and says what is left.
    ///
    /// Call it at the end of a test to make sure nothing was posted that the test forgot to look at.
    ///
    /// ```swift
    /// main.runUntilIdle()
    /// main.expectNoPendingWork()
    /// ```
    ///
    /// - Parameters:
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if nothing was pending.
    @discardableResult
    public func expectNoPendingWork(
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        checkNoPendingWork(comment, at: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Records a test issue if work is still queued, at `sourceLocation`: the form for a Swift
    /// Testing helper that forwards its caller's location.
    ///
    /// - Parameters:
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if nothing was pending.
    @discardableResult
    public func expectNoPendingWork(_ comment: Comment? = nil, sourceLocation: SourceLocation) -> Bool {
        checkNoPendingWork(comment, at: FailureSite(sourceLocation))
    }

    /// Reports pending work at `site`, if any.
    func checkNoPendingWork(_ comment: Comment?, at site: FailureSite) -> Bool {
        let owner = description
        let failure = state.withLock { $0.pendingWorkFailure(of: owner, runCall: "runUntilIdle()") }
        return reportIfFailed(failure, comment: comment, at: site)
    }
}
