import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Herald

@Suite("BackgroundQueue")
struct BackgroundQueueTests {
    @Test func twentyTasksWithConcurrencyTwoRespectTheLimitDependenciesAndCancellation() async throws {
        let queue = try BackgroundQueue(name: "herald.test.twenty", maxConcurrentTasks: 2)
        let recorder = RunRecorder()
        let gate = DispatchSemaphore(value: 0)

        // Task 0 holds a slot until the test lets it go, so task 1, which depends on it, is still
        // queued when it is cancelled.
        var tasks: [BackgroundTask<Int>] = []
        tasks.append(queue.enqueue { recorder.run(0) { gate.wait() } })
        tasks.append(queue.enqueue(after: [tasks[0]]) { recorder.run(1) {} })
        tasks[1].cancel()
        for index in 2..<20 {
            // Each task depends on the one enqueued three before it, which forms chains; task 4
            // depends on the cancelled task 1.
            let dependencies: [any BackgroundTaskDependency] = index >= 3 ? [tasks[index - 3]] : []
            tasks.append(queue.enqueue(after: dependencies) { recorder.run(index) { simulateWork() } })
        }
        gate.signal()

        var values: [Int] = []
        for (index, task) in tasks.enumerated() where index != 1 {
            values.append(try await task.value)
        }
        await #expect(throws: CancellationError.self) { try await tasks[1].value }

        #expect(values == (0..<20).filter { $0 != 1 }.map { $0 * $0 })
        #expect(recorder.maxRunning <= 2)
        #expect(!recorder.didStart(1))
        #expect(tasks[1].isCancelled)
        #expect(recorder.didStart(4))  // a dependent of a cancelled task still runs
        for index in 3..<20 where index - 3 != 1 {
            #expect(recorder.finish(of: index - 3)! < recorder.start(of: index)!, "task \(index) started too early")
        }
    }

    @Test func concurrencyOneRunsTasksOneAtATimeInPriorityThenEnqueueOrder() async throws {
        let queue = try BackgroundQueue(name: "herald.test.serial", maxConcurrentTasks: 1)
        let recorder = RunRecorder()
        let gate = DispatchSemaphore(value: 0)
        let first = queue.enqueue { recorder.run(0) { gate.wait() } }
        var rest: [BackgroundTask<Int>] = []
        for index in 1...6 {
            let priority: BackgroundTaskPriority = index.isMultiple(of: 3) ? .high : .normal
            rest.append(queue.enqueue(priority: priority) { recorder.run(index) { simulateWork() } })
        }
        gate.signal()
        _ = try await first.value
        for task in rest { _ = try await task.value }
        #expect(recorder.maxRunning == 1)
        #expect(recorder.startOrder == [0, 3, 6, 1, 2, 4, 5])
    }

    @Test func awaitingATaskReturnsItsValueAndWaitReturnsItToo() async throws {
        let queue = BackgroundQueue(name: "herald.test.value")
        let task = queue.enqueue { "thumbnail-\(6 * 7)" }
        let awaited = try await task.value
        let waited = try await onThread { try task.wait() }
        #expect(awaited == "thumbnail-42")
        #expect(waited == "thumbnail-42")
        #expect(task.isFinished)
        #expect(try task.result?.get() == "thumbnail-42")
    }

    @Test func theWorksErrorReachesEveryWaiter() async throws {
        let queue = BackgroundQueue(name: "herald.test.error")
        let task = queue.enqueue { () throws -> Int in throw DecodeFailure(field: "status") }
        await #expect(throws: DecodeFailure(field: "status")) { try await task.value }
        #expect(throws: DecodeFailure(field: "status")) { try task.result?.get() }
        let waited = try await onThread { () -> DecodeFailure? in
            do {
                _ = try task.wait()
                return nil
            } catch let failure as DecodeFailure {
                return failure
            }
        }
        #expect(waited == DecodeFailure(field: "status"))
    }

    @Test func aCancelledTaskNeverRunsAndItsWaitersReturnAtOnce() async throws {
        let queue = try BackgroundQueue(name: "herald.test.cancel", maxConcurrentTasks: 1)
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked<[String]>([])
        let blocker = queue.enqueue { gate.wait() }
        let cancelled = queue.enqueue { ran.withLock { $0.append("cancelled task") } }
        cancelled.cancel()
        // While the only slot is still taken, both waiting forms already return.
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        let waitError = try await onThread { () -> Bool in
            do {
                try cancelled.wait()
                return false
            } catch {
                return error is CancellationError
            }
        }
        #expect(waitError)
        gate.signal()
        try await blocker.value
        let after = queue.enqueue { ran.withLock { $0.append("later task") } }
        try await after.value
        #expect(ran.withLock { $0 } == ["later task"])
    }

    @Test func cancelAllTasksCancelsQueuedWork() async throws {
        let queue = try BackgroundQueue(name: "herald.test.cancel-all", maxConcurrentTasks: 1)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let ran = Atomic<Int>(0)
        let blocker = queue.enqueue {
            started.signal()
            gate.wait()
            return BackgroundQueue.isCurrentTaskCancelled
        }
        let queued = (0..<5).map { _ in queue.enqueue { ran.add(1, ordering: .relaxed) } }
        try await onThread { started.wait() }
        queue.cancelAllTasks()
        gate.signal()
        // The running task was not interrupted, but it can see that it was cancelled.
        #expect(try await blocker.value == true)
        for task in queued {
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        let ranCount = ran.load(ordering: .relaxed)
        #expect(ranCount == 0)
    }

    @Test func performReturnsTheValueAndCancelsWithTheCallingTask() async throws {
        let queue = try BackgroundQueue(name: "herald.test.perform", maxConcurrentTasks: 1)
        #expect(try await queue.performAndWait(priority: .high) { 6 * 7 } == 42)

        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let blocker = queue.enqueue {
            started.signal()
            gate.wait()
        }
        let ran = Atomic<Bool>(false)
        let caller = Task { try await queue.performAndWait { ran.store(true, ordering: .relaxed) } }
        try await onThread { started.wait() }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        gate.signal()
        try await blocker.value
        try await queue.performAndWait {}  // everything enqueued before has started by now
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }

    @Test func isCurrentTaskCancelledIsFalseOutsideATask() {
        #expect(!BackgroundQueue.isCurrentTaskCancelled)
    }

    @Test func aMaximumConcurrencyBelowOneIsRejectedWithAClearError() throws {
        #expect {
            _ = try BackgroundQueue(name: "herald.test.invalid", maxConcurrentTasks: 0)
        } throws: { error in
            (error as? BackgroundQueueError)?.code == .invalidMaxConcurrentTasks
                && "\(error)" == "BackgroundQueue: expected maxConcurrentTasks of at least 1, found 0"
        }
        let queue = try BackgroundQueue(name: "herald.test.adjust", maxConcurrentTasks: 3)
        #expect(throws: BackgroundQueueError.self) { try queue.setMaxConcurrentTasks(-2) }
        #expect(queue.maxConcurrentTasks == 3)
        try queue.setMaxConcurrentTasks(5)
        #expect(queue.maxConcurrentTasks == 5)
    }

    @Test func theDefaultConcurrencyIsTheActiveProcessorCount() {
        let queue = BackgroundQueue(name: "herald.test.default")
        #expect(queue.maxConcurrentTasks == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test func aHubObserverCanRunOnTheQueue() async throws {
        let queue = BackgroundQueue(name: "herald.test.hub")
        let hub = NotificationHub()
        let seen = Locked<[Int]>([])
        let observation = hub.observe(ImportProgress.self, on: queue.deliveryTarget) { note in
            seen.withLock { $0.append(note.percent) }
        }
        defer { observation.cancel() }
        _ = await hub.postAndWait(ImportProgress(percent: 50))
        #expect(seen.withLock { $0 } == [50])
    }

    // MARK: The shared queue

    @Test func setSharedAfterSharedWasUsedThrowsAndKeepsTheQueue() {
        let before = BackgroundQueue.shared
        #expect {
            try BackgroundQueue.setShared(BackgroundQueue(name: "herald.test.late"))
        } throws: { error in
            (error as? BackgroundQueueError)?.code == .sharedAlreadyInUse
        }
        #expect(BackgroundQueue.shared === before)
        #expect(before.maxConcurrentTasks == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test func theSharedSlotIsCreatedLazilyAndReplaceableOnceBeforeUse() throws {
        var made = 0
        var slot = SharedSlot<String>()
        try slot.replace(with: "configured")
        #expect(throws: BackgroundQueueError.self) { try slot.replace(with: "again") }
        #expect(
            slot.use(orMake: {
                made += 1
                return "lazy"
            }) == "configured")
        #expect(made == 0)

        var lazy = SharedSlot<String>()
        #expect(
            lazy.use(orMake: {
                made += 1
                return "lazy"
            }) == "lazy")
        #expect(
            lazy.use(orMake: {
                made += 1
                return "other"
            }) == "lazy")
        #expect(made == 1)
        #expect {
            try lazy.replace(with: "late")
        } throws: { error in
            (error as? BackgroundQueueError)?.code == .sharedAlreadyInUse
        }
    }
}

// MARK: - Fixtures

private struct DecodeFailure: Error, Equatable {
    let field: String
}

private struct ImportProgress: TypedNotification {
    let percent: Int
}

/// Stand-in for real work that gives the processor away a thousand times, so that tasks overlap
/// when the queue allows it. It waits for nothing and measures no time.
private func simulateWork() {
    for _ in 0..<1_000 { sched_yield() }
}

/// Records when each task started and finished, and how many ran at once.
private final class RunRecorder: Sendable {
    private struct State {
        var running = 0
        var maxRunning = 0
        var clock = 0
        var starts: [Int: Int] = [:]
        var finishes: [Int: Int] = [:]
        var startOrder: [Int] = []
    }

    private let state = Locked(State())

    /// Runs `body` as task `index` and returns `index * index`.
    func run(_ index: Int, _ body: () -> Void) -> Int {
        state.withLock { state in
            state.running += 1
            state.maxRunning = max(state.maxRunning, state.running)
            state.clock += 1
            state.starts[index] = state.clock
            state.startOrder.append(index)
        }
        body()
        state.withLock { state in
            state.running -= 1
            state.clock += 1
            state.finishes[index] = state.clock
        }
        return index * index
    }

    var maxRunning: Int { state.withLock { $0.maxRunning } }
    var startOrder: [Int] { state.withLock { $0.startOrder } }
    func didStart(_ index: Int) -> Bool { state.withLock { $0.starts[index] != nil } }
    func start(of index: Int) -> Int? { state.withLock { $0.starts[index] } }
    func finish(of index: Int) -> Int? { state.withLock { $0.finishes[index] } }
}

/// Runs blocking code on a fresh thread, so that the test's own executor is never blocked.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
