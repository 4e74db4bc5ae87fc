import Dispatch
import Foundation
import Herald
@_spi(Testing) import HeraldTesting
import Synchronization
import Testing

/// Handler calls that started after `cancel()` had returned on the handler's own isolation.
private final class LateCalls: Sendable {
    private let state = Locked((isCancelled: false, late: 0, calls: 0))
    /// Opened by the first call, so that the cancel races the calls that follow it.
    let firstCall = AsyncLatch()

    /// The cancel has returned; call on the handler's isolation, right after `cancel()`.
    func noteCancelled() {
        state.withLock { $0.isCancelled = true }
    }

    /// A handler call starts; call on the handler's isolation, first thing.
    func noteCall() {
        state.withLock { state in
            state.calls += 1
            if state.isCancelled { state.late += 1 }
        }
        firstCall.open()
    }

    var late: Int { state.withLock { $0.late } }
    var calls: Int { state.withLock { $0.calls } }
}

/// An actor that observers are isolated to.
private actor Desk {
    func cancel(_ token: ObservationToken, _ late: LateCalls) {
        token.cancel()
        late.noteCancelled()
    }
}

/// Posts `count` notifications from each of `threads` threads, and returns once all are posted.
private func postFromThreads(_ hub: NotificationHub, threads: Int = 3, count: Int = 50) async {
    await withTaskGroup(of: Void.self) { group in
        for poster in 0..<threads {
            group.addTask {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    Thread {
                        for index in 0..<count { hub.post(Numbered(poster: poster, index: index)) }
                        done.resume()
                    }.start()
                }
            }
        }
    }
}

private let rounds = 200

@Suite("Async handlers: cancel is final on the handler's own isolation")
struct AsyncCancelTests {
    @Test("main actor: no call starts after a cancel made on the main actor, racing posts from three threads")
    func mainActorCancelIsFinal() async throws {
        var late = 0
        for _ in 0..<rounds {
            let hub = NotificationHub()
            let calls = LateCalls()
            let token = hub.observe(Numbered.self, on: MainActor.shared) { _ async in
                calls.noteCall()
                await Task.yield()
            }
            async let posted: Void = postFromThreads(hub)
            await calls.firstCall.wait()
            await MainActor.run {
                token.cancel()
                calls.noteCancelled()
            }
            await posted
            try await hub.waitUntilIdle(timeout: asyncPatience)
            late += calls.late
        }
        #expect(late == 0)
    }

    @Test("actor: no call starts after a cancel made on the actor by another observer, racing posts from three threads")
    func actorCancelIsFinal() async throws {
        var late = 0
        for _ in 0..<rounds {
            let hub = NotificationHub()
            let desk = Desk()
            let calls = LateCalls()
            let token = hub.observe(Numbered.self, on: desk) { _, _ async in
                calls.noteCall()
                await Task.yield()
            }
            // Another observer on the same actor cancels the first one in the middle of the posts.
            let canceller = hub.observe(Numbered.self, on: desk) { _, note in
                guard note.poster == 0, note.index == 10 else { return }
                token.cancel()
                calls.noteCancelled()
            }
            await postFromThreads(hub)
            try await hub.waitUntilIdle(timeout: asyncPatience)
            late += calls.late
            canceller.cancel()
        }
        #expect(late == 0)
    }

    @Test("serial queue: no call starts after a cancel made on the queue, racing posts from three threads")
    func serialQueueCancelIsFinal() async throws {
        var late = 0
        for _ in 0..<rounds {
            let hub = NotificationHub()
            let queue = DispatchQueue(label: "cancel.serial")
            let calls = LateCalls()
            let token = hub.observe(Numbered.self, on: .queue(queue)) { _ async in
                calls.noteCall()
                await Task.yield()
            }
            async let posted: Void = postFromThreads(hub)
            await calls.firstCall.wait()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                queue.async {
                    token.cancel()
                    calls.noteCancelled()
                    done.resume()
                }
            }
            await posted
            try await hub.waitUntilIdle(timeout: asyncPatience)
            late += calls.late
        }
        #expect(late == 0)
    }

    @Test("main-actor stand-in: no call starts after a cancel made on the main actor between runs")
    @MainActor
    func standInCancelIsFinal() async throws {
        var late = 0
        for _ in 0..<rounds {
            let hub = NotificationHub()
            let main = TestMainActor()
            hub.useMainActorStandIn(main)
            let calls = LateCalls()
            let token = hub.observe(Numbered.self, on: MainActor.shared) { _ async in
                calls.noteCall()
                await Task.yield()
            }
            async let posted: Void = postFromThreads(hub)
            while !calls.firstCall.isOpen {  // run the stand-in until the first call has started
                if !main.runNext() { await Task.yield() }
            }
            main.runNext()  // the next job, racing the posters
            token.cancel()
            calls.noteCancelled()
            await posted
            await main.runUntilIdle()
            late += calls.late
        }
        #expect(late == 0)
    }

    @Test("cancel() cancels the task of a call that is running: Task.isCancelled is true once it returns")
    func cancelCancelsTheRunningTask() async {
        let hub = NotificationHub()
        let started = AsyncLatch()
        let gate = AsyncLatch()
        let seen = Log<Bool>()
        let finished = AsyncLatch()
        let token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "running"))) { _ async in
            started.open()
            await gate.wait()
            seen.append(Task.isCancelled)
            finished.open()
        }
        hub.post(Ping(value: 1))
        await started.wait()
        token.cancel()
        gate.open()
        await finished.wait()  // the observation has ended, so the hub no longer waits for the call
        #expect(seen.values == [true])
    }

    @Test("a main-actor call that is running sees Task.isCancelled once cancel() returned on the main actor")
    @MainActor
    func cancelCancelsTheRunningMainActorTask() async {
        let hub = NotificationHub()
        let started = AsyncLatch()
        let gate = AsyncLatch()
        let seen = Log<Bool>()
        let finished = AsyncLatch()
        let token = hub.observe(Ping.self, on: MainActor.shared) { _ async in
            started.open()
            await gate.wait()
            seen.append(Task.isCancelled)
            finished.open()
        }
        hub.post(Ping(value: 1))
        await started.wait()
        token.cancel()
        gate.open()
        await finished.wait()  // the observation has ended, so the hub no longer waits for the call
        #expect(seen.values == [true])
    }
}

/// Reports whether the calling code runs on one target.
private struct TargetProbe: Sendable {
    let name: String
    let isCurrent: @Sendable () -> Bool
}

private actor Elsewhere {
    func visit() -> Int { 1 }
}

@concurrent
private func awayFromTheTarget() async -> Int {
    2
}

@Suite("Async handlers run their synchronous stretches on a serial target")
struct AsyncTargetConfinementTests {
    /// Observes with an async handler on `target`, posts three notifications, and returns for
    /// each stretch of each call whether it ran on the target.
    private func stretches(on target: DeliveryTarget, probe: TargetProbe) async throws -> [Bool] {
        let hub = NotificationHub()
        let log = Log<Bool>()
        let elsewhere = Elsewhere()
        let token = hub.observe(Ping.self, on: target) { _ async in
            log.append(probe.isCurrent())
            _ = await elsewhere.visit()
            log.append(probe.isCurrent())
            // The suspension under test (issue #27 named `Task.sleep`): one resumed from another
            // thread, a global queue's, as a timer would resume it.
            await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { resumed.resume() }
            }
            log.append(probe.isCurrent())
            _ = await awayFromTheTarget()
            log.append(probe.isCurrent())
        }
        for value in 1...3 { hub.post(Ping(value: value)) }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        token.cancel()
        return log.values
    }

    @Test("a serial DispatchQueue")
    func serialQueue() async throws {
        let queue = DispatchQueue(label: "confined")
        let key = DispatchSpecificKeyBox()
        queue.setSpecific(key: key.key, value: 7)
        let probe = TargetProbe(name: "queue") { DispatchQueue.getSpecific(key: key.key) == 7 }
        let seen = try await stretches(on: .queue(queue), probe: probe)
        #expect(seen == Array(repeating: true, count: 12))
    }

    @Test("a DeliveryThread")
    func deliveryThread() async throws {
        let thread = DeliveryThread(name: "confined.thread")
        defer { thread.shutdown() }
        let probe = TargetProbe(name: "thread") { thread.isCurrent }
        let seen = try await stretches(on: .thread(thread), probe: probe)
        #expect(seen == Array(repeating: true, count: 12))
    }

    @Test("a custom executor")
    func customExecutor() async throws {
        let executor = QueueExecutor(label: "confined.executor")
        let probe = TargetProbe(name: "executor") { executor.isCurrent }
        let seen = try await stretches(on: .executor(executor), probe: probe)
        #expect(seen == Array(repeating: true, count: 12))
    }

    @Test("an OperationQueue that runs one operation at a time")
    func serialOperationQueue() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let probe = TargetProbe(name: "operationQueue") { OperationQueue.current === queue }
        let seen = try await stretches(on: .operationQueue(queue), probe: probe)
        #expect(seen == Array(repeating: true, count: 12))
    }

    @Test("the main queue, for a nonisolated async handler")
    func mainQueue() async throws {
        let key = DispatchSpecificKeyBox()
        DispatchQueue.main.setSpecific(key: key.key, value: 9)
        defer { DispatchQueue.main.setSpecific(key: key.key, value: nil) }
        let probe = TargetProbe(name: "main") { DispatchQueue.getSpecific(key: key.key) == 9 }
        let seen = try await stretches(on: .mainQueue, probe: probe)
        #expect(seen == Array(repeating: true, count: 12))
    }
}
