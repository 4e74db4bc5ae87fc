@_spi(Testing) import Herald
import Testing

/// A stand-in for the main actor in tests: main-actor deliveries and `MainActor.perform` work
/// wait until the test runs them, on the main actor, in order.
///
/// Give it to the hub, and test a `@MainActor` view model that observes with
/// `on: MainActor.shared` as it is written, without a target parameter:
///
/// ```swift
/// @Test @MainActor func renamingUpdatesTheTitle() async {
///     await withMainActorStandIn { main in
///         let hub = NotificationHub()
///         hub.useMainActorStandIn(main)
///         let model = ProfileViewModel(hub: hub)
///
///         hub.post(ProfileLoaded(name: "Ada"))
///         #expect(model.title == "Loading…")   // queued on the stand-in
///         await main.runUntilIdle()
///         #expect(model.title == "Ada")
///     }
/// }
/// ```
///
/// ## What goes to the stand-in
/// - The delivery jobs of the main-actor observers of every hub given it with
///   `NotificationHub/useMainActorStandIn(_:)` (observers registered with `on: MainActor.shared`
///   or on `.mainQueue`). Their registrations still report `.mainQueue`.
/// - `MainActor.perform(_:)` and `MainActor.perform(after:_:)` called from the task that runs
///   ``withMainActorStandIn(name:fileID:filePath:line:column:_:)``'s body, or from a task or job it started. Delayed work is
///   due on the stand-in's manual clock, ``now``.
/// - The tasks of `async` main-actor handlers that its jobs start: ``runUntilIdle(maxJobs:fileID:filePath:line:column:)``
///   waits for them, and runs the jobs they cause meanwhile.
///
/// ## Waiting under the stand-in
/// - A blocking `postAndWait` made on the main actor still runs main-actor observers inline.
/// - An `await hub.postAndWait(_:from:)` returns what it returns in the app: made on the main
///   actor, it runs the stand-in's jobs in order until its own deliveries are done; made
///   elsewhere, it waits until the test runs the stand-in: test a background function that makes
///   one with ``run(maxJobs:fileID:filePath:line:column:_:)``. One still waiting when
///   ``withMainActorStandIn(name:fileID:filePath:line:column:_:)``'s scope ends is failed and ended, with a
///   `PendingWorkError` naming the stand-in. `await hub.waitUntilIdle()` throws that error at
///   once while the stand-in holds deliveries that nothing runs.
///
/// ## Threading
/// Jobs run on the main actor, in the task that calls ``runUntilIdle(maxJobs:fileID:filePath:line:column:)``,
/// ``runNext()`` or ``advance(by:fileID:filePath:line:column:)``, never while the stand-in's lock is held.
/// Work may be enqueued from any thread.
public final class TestMainActor: DeliveryExecutor, CustomStringConvertible {
    fileprivate struct State {
        /// The jobs, the manual clock, and the threads running a job of the stand-in right now.
        var queue = ManualJobQueue()
        /// Tasks of async handlers started by jobs that have not finished.
        var taskCount = 0
        /// The number of `runUntilIdle` / `advance` calls in progress.
        var drivers = 0
        /// The drives waiting for a job to be enqueued or a task to end, each resumed with
        /// `false`: two may wait at once (a test's `runUntilIdle` and a main-actor waiting post).
        var wakeUps: [CheckedContinuation<Bool, Never>] = []
        /// Waiting for as many drives to wait at once (``waitUntilDrivesWait(_:)``).
        var driveWatches: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// `await postAndWait` calls made off the main actor that wait for this stand-in's jobs;
        /// `nil` once ``withMainActorStandIn(name:fileID:filePath:line:column:_:)``'s scope ended.
        var heldPosts: [MainQueueWaitingPost]? = []
    }

    /// A name for failure messages, such as `"main"`.
    public let name: String
    fileprivate let state = Locked(State())
    /// The hubs seen in the stand-in's scope, checked for deliveries to the real main queue.
    let strayHubs = StrayHubWatch()

    /// Creates a stand-in with nothing queued and its clock at zero.
    ///
    /// - Parameter name: A name used in failure messages.
    public init(name: String = "main") {
        self.name = name
    }

    public var description: String {
        "TestMainActor(\(name))"
    }

    // MARK: - Receiving work

    /// Queues `job`, due now. Callable from any thread; it never runs `job` before returning.
    ///
    /// - Parameter job: The work to queue.
    public func enqueue(_ job: @escaping @Sendable () -> Void) {
        changeAndWake { $0.queue.insert(job) }
    }

    /// Queues `job`, due once the manual clock has advanced by `delay` (negative counts as zero).
    ///
    /// - Parameters:
    ///   - delay: How far ``now`` must advance before `job` is due.
    ///   - job: The work to queue.
    public func enqueue(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        changeAndWake { $0.queue.insert(job, after: delay) }
    }

    /// Whether the calling thread is running a job of the stand-in right now.
    public var isCurrent: Bool {
        let me = ManualJobQueue.currentThread()
        return state.withLock { $0.queue.runners.contains(me) }
    }

    /// Starts the task of an async main-actor handler (or of ``run(maxJobs:fileID:filePath:line:column:_:)``'s
    /// operation); the stand-in is idle only once it ends.
    ///
    /// With `runsOnExecutor`, the task prefers the stand-in as its executor: a nonisolated handler
    /// on `.mainQueue`, which the main queue would run, runs as the stand-in's jobs, when the test
    /// runs them.
    func startTask<T: Sendable>(
        runsOnExecutor: Bool = false, _ work: @escaping @Sendable () async -> T
    ) -> Task<T, Never> {
        state.withLock { $0.taskCount += 1 }
        let body: @Sendable () async -> T = { [self] in
            let value = await work()
            changeAndWake { $0.taskCount -= 1 }
            return value
        }
        return runsOnExecutor
            ? Task(executorPreference: StandInTaskExecutor(standIn: self), operation: body) : Task(operation: body)
    }

    // MARK: - Inspecting

    /// The time on the manual clock; it moves only by ``advance(by:fileID:filePath:line:column:)``.
    public var now: Duration {
        state.withLock { $0.queue.now }
    }

    /// The number of queued jobs, due now or later.
    public var pendingCount: Int {
        state.withLock { $0.queue.pendingCount }
    }

    /// The number of async handler tasks started by the stand-in's jobs that have not finished.
    public var runningTaskCount: Int {
        state.withLock { $0.taskCount }
    }

    /// The number of jobs run so far.
    public var executedCount: Int {
        state.withLock { $0.queue.executedCount }
    }

    // MARK: - Running

    /// Runs the first job that is due, if any, on the main actor. It does not wait for tasks.
    ///
    /// - Returns: `true` if a job ran.
    @MainActor
    @discardableResult
    public func runNext() -> Bool {
        ManualJobQueue.run(dueBy: nil, in: state, \.queue)
    }

    /// Runs due jobs on the main actor until none is due and every async handler they started
    /// has finished, including the jobs those cause. The clock does not move.
    ///
    /// ```swift
    /// hub.post(ProfileLoaded(name: "Ada"))
    /// await main.runUntilIdle()
    /// ```
    ///
    /// If jobs keep enqueueing jobs, it stops after `maxJobs` and fails the test (a Swift Testing
    /// issue, or an XCTest failure) instead of looping forever. An async handler that waits for
    /// something only the test does after this call keeps it waiting.
    ///
    /// - Parameters:
    ///   - maxJobs: The most jobs to run before reporting runaway work.
    ///   - fileID: Where to report runaway work; leave the default.
    ///   - filePath: Where to report runaway work; leave the default.
    ///   - line: Where to report runaway work; leave the default.
    ///   - column: Where to report runaway work; leave the default.
    /// - Returns: The number of jobs run.
    @MainActor
    @discardableResult
    public func runUntilIdle(
        maxJobs: Int = 100_000,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) async -> Int {
        await drive(
            until: nil, maxJobs: maxJobs,
            site: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Runs due jobs until idle, as ``runUntilIdle(maxJobs:fileID:filePath:line:column:)`` does,
    /// reporting runaway work at `sourceLocation`: the form for a Swift Testing helper that
    /// forwards its caller's location.
    ///
    /// - Parameters:
    ///   - maxJobs: The most jobs to run before reporting runaway work.
    ///   - sourceLocation: Where to report runaway work.
    /// - Returns: The number of jobs run.
    @MainActor
    @discardableResult
    public func runUntilIdle(maxJobs: Int = 100_000, sourceLocation: SourceLocation) async -> Int {
        await drive(until: nil, maxJobs: maxJobs, site: FailureSite(sourceLocation))
    }

    /// Moves the clock forward by `duration`, running on the main actor every job that falls due
    /// on the way, in (due time, enqueue order), and waiting for the async handlers they start.
    ///
    /// ```swift
    /// model.searchTextChanged("ad")           // debounced by 300 ms
    /// await main.advance(by: .milliseconds(300))
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How far to move the clock; negative counts as zero.
    ///   - fileID: Where to report runaway work; leave the default.
    ///   - filePath: Where to report runaway work; leave the default.
    ///   - line: Where to report runaway work; leave the default.
    ///   - column: Where to report runaway work; leave the default.
    /// - Returns: The number of jobs run.
    @MainActor
    @discardableResult
    public func advance(
        by duration: Duration,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) async -> Int {
        await advance(by: duration, site: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Moves the clock forward, as ``advance(by:fileID:filePath:line:column:)`` does, reporting
    /// runaway work at `sourceLocation`: the form for a Swift Testing helper that forwards its
    /// caller's location.
    ///
    /// - Parameters:
    ///   - duration: How far to move the clock; negative counts as zero.
    ///   - sourceLocation: Where to report runaway work.
    /// - Returns: The number of jobs run.
    @MainActor
    @discardableResult
    public func advance(by duration: Duration, sourceLocation: SourceLocation) async -> Int {
        await advance(by: duration, site: FailureSite(sourceLocation))
    }

    @MainActor
    private func advance(by duration: Duration, site: FailureSite) async -> Int {
        let instant = now + Swift.max(duration, .zero)
        let count = await drive(until: instant, maxJobs: 100_000, site: site)
        state.withLock { $0.queue.advanceClock(to: instant) }
        return count + (await drive(until: nil, maxJobs: 100_000, site: site))
    }

    /// Runs `operation` off the main actor and, while it runs, the stand-in's jobs as they come
    /// due, until `operation` has returned and the stand-in is idle; returns what `operation`
    /// returned.
    ///
    /// This is the way to test code that waits for its own main-actor deliveries from the
    /// background, such as a `@concurrent` function that ends with `await hub.postAndWait(…)`:
    /// awaiting that function and calling ``runUntilIdle(maxJobs:fileID:filePath:line:column:)``
    /// afterwards would never return, because the waiting post waits for the test to run the
    /// stand-in.
    ///
    /// ```swift
    /// // importAndConfirm is @concurrent and ends with `await hub.postAndWait(FileImported(…))`.
    /// let report = await main.run { await importer.importAndConfirm("a.txt") }
    /// #expect(report.deliveredCount == 1)
    /// ```
    ///
    /// - Parameters:
    ///   - maxJobs: The most jobs to run before reporting runaway work.
    ///   - fileID: Where to report runaway work; leave the default.
    ///   - filePath: Where to report runaway work; leave the default.
    ///   - line: Where to report runaway work; leave the default.
    ///   - column: Where to report runaway work; leave the default.
    ///   - operation: The work under test, run on a task of its own, off the main actor.
    /// - Returns: What `operation` returned.
    /// - Throws: What `operation` threw, once the stand-in is idle.
    @MainActor
    @discardableResult
    public func run<T: Sendable, E: Error>(
        maxJobs: Int = 100_000,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column,
        _ operation: @escaping @Sendable () async throws(E) -> T
    ) async throws(E) -> T {
        try await run(
            maxJobs: maxJobs, site: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column),
            operation)
    }

    /// Runs `operation` and the stand-in's jobs, as ``run(maxJobs:fileID:filePath:line:column:_:)``
    /// does, reporting runaway work at `sourceLocation`: the form for a Swift Testing helper that
    /// forwards its caller's location.
    ///
    /// - Parameters:
    ///   - maxJobs: The most jobs to run before reporting runaway work.
    ///   - sourceLocation: Where to report runaway work.
    ///   - operation: The work under test, run on a task of its own, off the main actor.
    /// - Returns: What `operation` returned.
    /// - Throws: What `operation` threw, once the stand-in is idle.
    @MainActor
    @discardableResult
    public func run<T: Sendable, E: Error>(
        maxJobs: Int = 100_000, sourceLocation: SourceLocation,
        _ operation: @escaping @Sendable () async throws(E) -> T
    ) async throws(E) -> T {
        try await run(maxJobs: maxJobs, site: FailureSite(sourceLocation), operation)
    }

    @MainActor
    private func run<T: Sendable, E: Error>(
        maxJobs: Int, site: FailureSite, _ operation: @escaping @Sendable () async throws(E) -> T
    ) async throws(E) -> T {
        // The operation counts as a running task: the drive below runs jobs as they come and
        // returns only once the operation has ended and nothing is left to run.
        let task = startTask { () async -> Result<T, E> in
            do throws(E) {
                return .success(try await operation())
            } catch {
                return .failure(error)
            }
        }
        _ = await drive(until: nil, maxJobs: maxJobs, site: site)
        return try await task.value.get()
    }

    // MARK: - Checking

    /// Records a test issue if jobs are still queued or async handlers still running, and says
    /// what is left.
    ///
    /// ```swift
    /// await main.runUntilIdle()
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

    /// Records a test issue if work is pending, at `sourceLocation`: the form for a Swift Testing
    /// helper that forwards its caller's location.
    ///
    /// - Parameters:
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if nothing was pending.
    @discardableResult
    public func expectNoPendingWork(_ comment: Comment? = nil, sourceLocation: SourceLocation) -> Bool {
        checkNoPendingWork(comment, at: FailureSite(sourceLocation))
    }

    /// Reports pending jobs and running async handlers at `site`, if any.
    func checkNoPendingWork(_ comment: Comment?, at site: FailureSite) -> Bool {
        let owner = description
        let failure = state.withLock { state in
            state.queue.pendingWorkFailure(of: owner, runCall: "await runUntilIdle()", runningTasks: state.taskCount)
        }
        return reportIfFailed(failure, comment: comment, at: site)
    }

    // MARK: - Waiting posts

    /// Ends the waits of the `await postAndWait` calls still waiting for this stand-in's jobs,
    /// recording a test failure that names each: the stand-in's scope is over, so nothing will
    /// run them.
    func abandonHeldPosts(at site: FailureSite) {
        let posts = state.withLock { state in
            defer { state.heldPosts = nil }
            return state.heldPosts ?? []
        }
        for post in posts where !post.isComplete {
            reportFailure(
                "\(post) still waited for deliveries held by \(self) when its scope ended: "
                    + "run them with await runUntilIdle() before the scope ends",
                at: site)
            post.abandon()
        }
    }

    // MARK: - Internals

    /// Runs jobs due by `deadline` (or by `now`), and waits for the async handlers they start,
    /// until there is nothing left to run, or until `isDone`. With a `site`, it reports runaway work
    /// there after `maxJobs` jobs, and checks the stray hubs once idle; without one, it is the
    /// stand-in's `ManualMainQueueExecutor.runJobs(until:)`.
    @MainActor
    fileprivate func drive(
        until deadline: Duration?, maxJobs: Int = .max, site: FailureSite?, isDone: () -> Bool = { false }
    ) async -> Int {
        state.withLock { $0.drivers += 1 }
        var count = 0
        while !isDone() {
            if ManualJobQueue.run(dueBy: deadline, in: state, \.queue) {
                count += 1
                guard count >= maxJobs, let site else { continue }
                reportFailure("\(self) ran \(count) jobs and more may be due: work keeps enqueueing work", at: site)
                break
            }
            // Under one lock: a job came due meanwhile (`false` at once), or tasks still run (it
            // waits until `changeAndWake` resumes it with `false`), or the stand-in is idle.
            let isIdle = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                var watches: [CheckedContinuation<Void, Never>] = []
                let isIdle = state.withLock { state -> Bool? in
                    if state.queue.hasJob(dueBy: deadline) { return false }
                    if state.taskCount > 0 {
                        state.wakeUps.append(continuation)
                        let waiting = state.wakeUps.count
                        watches = state.driveWatches.filter { $0.count <= waiting }.map(\.continuation)
                        state.driveWatches.removeAll { $0.count <= waiting }
                        return nil
                    }
                    state.drivers -= 1  // under the same lock as the check: a waiting post sees it
                    return true
                }
                for watch in watches { watch.resume() }
                if let isIdle { continuation.resume(returning: isIdle) }
            }
            if isIdle {
                if let site { strayHubs.check(self, at: site) }
                return count
            }
        }
        state.withLock { $0.drivers -= 1 }
        return count
    }

    /// Makes `change` (an enqueue, or a task's end) under the lock, and wakes the drives waiting
    /// for a change.
    private func changeAndWake(_ change: (inout State) -> Void) {
        let wakeUps = state.withLock { state in
            change(&state)
            defer { state.wakeUps = [] }
            return state.wakeUps
        }
        for wakeUp in wakeUps { wakeUp.resume(returning: false) }
    }

    /// Returns once `count` drives wait at the same time for a job or a task's end: a test's hook,
    /// which waits without polling.
    func waitUntilDrivesWait(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isDone = state.withLock { state in
                guard state.wakeUps.count < count else { return true }
                state.driveWatches.append((count, continuation))
                return false
            }
            if isDone { continuation.resume() }
        }
    }
}

/// Runs `body` on the main actor with a fresh ``TestMainActor`` installed for the task:
/// `MainActor.perform(_:)` and `MainActor.perform(after:_:)` called from `body`, or from work it
/// starts, go to the stand-in instead of the main queue.
///
/// ```swift
/// @Test @MainActor func searchIsDebounced() async {
///     await withMainActorStandIn { main in
///         let hub = NotificationHub()
///         hub.useMainActorStandIn(main)
///         …
///         await main.advance(by: .milliseconds(300))
///     }
/// }
/// ```
///
/// An `await postAndWait` still waiting for the stand-in's deliveries when `body` returns fails
/// the test at the caller's location.
///
/// - Parameters:
///   - name: The stand-in's name, for failure messages.
///   - fileID: Where to report; leave the default.
///   - filePath: Where to report; leave the default.
///   - line: Where to report; leave the default.
///   - column: Where to report; leave the default.
///   - body: The test, given the stand-in.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
@MainActor
public func withMainActorStandIn<R>(
    name: String = "main",
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: Int = #line,
    column: Int = #column,
    _ body: @MainActor (TestMainActor) async throws -> R
) async rethrows -> R {
    try await withMainActorStandIn(
        name: name, site: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column), body)
}

/// Runs `body` with a fresh ``TestMainActor`` installed, as
/// ``withMainActorStandIn(name:fileID:filePath:line:column:_:)`` does, reporting at
/// `sourceLocation`: the form for a Swift Testing helper that forwards its caller's location.
///
/// - Parameters:
///   - name: The stand-in's name, for failure messages.
///   - sourceLocation: Where to report.
///   - body: The test, given the stand-in.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
@MainActor
public func withMainActorStandIn<R>(
    name: String = "main",
    sourceLocation: SourceLocation,
    _ body: @MainActor (TestMainActor) async throws -> R
) async rethrows -> R {
    try await withMainActorStandIn(name: name, site: FailureSite(sourceLocation), body)
}

@MainActor
private func withMainActorStandIn<R>(
    name: String,
    site: FailureSite,
    _ body: @MainActor (TestMainActor) async throws -> R
) async rethrows -> R {
    let main = TestMainActor(name: name)
    defer {
        main.strayHubs.check(main, at: site)
        main.abandonHeldPosts(at: site)
    }
    return try await MainQueueExecutorScope.$current.withValue(StandIn(main)) {
        try await body(main)
    }
}

extension NotificationHub {
    /// Hands the deliveries of this hub's main-actor observers to `main` instead of the main
    /// queue: they run when the test runs `main`.
    ///
    /// Registrations still report `.mainQueue`, so `expectRegistered(_:on: .mainQueue)` holds.
    ///
    /// - Parameter main: The stand-in.
    public func useMainActorStandIn(_ main: TestMainActor) {
        _useMainQueueExecutor(StandIn(main))
    }
}

/// Hands Herald's main-actor work to a ``TestMainActor``: the hub's main-queue executor, and the
/// executor of the task that runs ``withMainActorStandIn(name:fileID:filePath:line:column:_:)``'s
/// body (`MainQueueExecutorScope`).
final class StandIn: ManualMainQueueExecutor, CustomStringConvertible {
    let main: TestMainActor

    init(_ main: TestMainActor) {
        self.main = main
    }

    var description: String { main.description }
    /// Whether a test is inside ``TestMainActor/runUntilIdle(maxJobs:fileID:filePath:line:column:)``
    /// or ``TestMainActor/advance(by:fileID:filePath:line:column:)``.
    var isRunningJobs: Bool { main.state.withLock { $0.drivers > 0 } }
    var isCurrent: Bool { main.isCurrent }

    func noteMainQueueObserver(on hub: NotificationHub) {
        main.strayHubs.note(hub)
    }

    func noteRefusedRegistration(on hub: NotificationHub) {
        main.strayHubs.note(hub)  // its check reports the refused registration
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        main.enqueue(job)
    }

    func enqueue(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        main.enqueue(after: delay, job)
    }

    func startTask(runsOnExecutor: Bool, _ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        main.startTask(runsOnExecutor: runsOnExecutor, work)
    }

    /// Runs due jobs and waits for the tasks they start until `isDone`, or until nothing is left.
    @MainActor
    func runJobs(until isDone: @escaping @Sendable () -> Bool) async {
        _ = await main.drive(until: nil, site: nil, isDone: isDone)
    }

    func hold(_ post: MainQueueWaitingPost) {
        let isOver = main.state.withLock { state in
            state.heldPosts?.append(post)
            return state.heldPosts == nil
        }
        // A post made after the scope ended: nothing will run the stand-in, so it ends at once.
        if isOver { post.abandon() }
    }

    func release(_ post: MainQueueWaitingPost) {
        main.state.withLock { state in state.heldPosts?.removeAll { $0 === post } }
    }
}

/// Runs the jobs of a task that the stand-in started as jobs of the stand-in (see
/// ``TestMainActor/startTask(runsOnExecutor:_:)``).
private final class StandInTaskExecutor: TaskExecutor, Sendable {
    let standIn: TestMainActor

    init(standIn: TestMainActor) {
        self.standIn = standIn
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        standIn.enqueue { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
