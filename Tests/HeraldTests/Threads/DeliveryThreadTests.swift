import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

@Suite("DeliveryThread")
struct DeliveryThreadTests {
    // MARK: Running work

    @Test func performRunsWorkOnTheNamedThreadInSubmissionOrder() async throws {
        let thread = DeliveryThread(name: "herald-fifo")
        defer { thread.shutdown() }
        let log = Locked<[(Int, Bool, String?)]>([])
        let done = DispatchSemaphore(value: 0)
        for index in 0..<100 {
            thread.perform {
                log.withLock { $0.append((index, thread.isCurrent, Thread.current.name)) }
                if index == 99 { done.signal() }
            }
        }
        try await onThread { done.wait() }
        let entries = log.withLock { $0 }
        #expect(entries.map(\.0) == Array(0..<100))
        #expect(entries.allSatisfy { $0.1 })
        #expect(entries.allSatisfy { $0.2 == "herald-fifo" })
    }

    @Test func aLongNameIsKeptWholeAndNamesTheOSThreadAsFarAsTheOSAllows() async throws {
        let thread = DeliveryThread(name: "herald.test.a-rather-long-thread-name")
        defer { thread.shutdown() }
        let osName = try await onThread { try thread.performAndWait { Thread.current.name } }
        #expect(thread.name == "herald.test.a-rather-long-thread-name")
        #if os(Linux)
        #expect(osName == "herald.test.a-r")
        #else
        #expect(osName == "herald.test.a-rather-long-thread-name")
        #endif
    }

    @Test func isCurrentIsFalseOffTheThread() {
        let thread = DeliveryThread(name: "herald.test.current")
        defer { thread.shutdown() }
        #expect(!thread.isCurrent)
    }

    @Test func performAndWaitReturnsTheValueComputedOnTheThread() async throws {
        let thread = DeliveryThread(name: "herald.test.value")
        defer { thread.shutdown() }
        let (value, ranOnThread) = try await onThread {
            try thread.performAndWait { (21 * 2, thread.isCurrent) }
        }
        #expect(value == 42)
        #expect(ranOnThread)
    }

    @Test func performAndWaitRethrowsTheWorkError() async throws {
        let thread = DeliveryThread(name: "herald.test.rethrow")
        defer { thread.shutdown() }
        let caught = try await onThread { () -> ParseFailure? in
            do {
                _ = try thread.performAndWait { () throws -> Int in throw ParseFailure(offset: 7) }
                return nil
            } catch let failure as ParseFailure {
                return failure
            }
        }
        #expect(caught == ParseFailure(offset: 7))
    }

    @Test func performAndWaitOnTheThreadItselfRunsInlineInsteadOfDeadlocking() async throws {
        let thread = DeliveryThread(name: "herald.test.self-wait")
        defer { thread.shutdown() }
        let outcome = try await onThread {
            try thread.performAndWait { () throws -> [String] in
                var steps = ["outer"]
                steps.append(try thread.performAndWait { "inner on thread: \(thread.isCurrent)" })
                steps.append("after")
                return steps
            }
        }
        #expect(outcome == ["outer", "inner on thread: true", "after"])
    }

    @Test func nestedWaitsBetweenTwoThreadsComplete() async throws {
        let a = DeliveryThread(name: "herald-A")
        let b = DeliveryThread(name: "herald-B")
        defer {
            a.shutdown()
            b.shutdown()
        }
        // A waits for B, which waits for A: A's blocked thread runs the innermost work.
        let path = try await onThread {
            try a.performAndWait {
                try b.performAndWait {
                    try a.performAndWait { [Thread.current.name ?? "?", a.isCurrent ? "A" : "not A"] }
                        + [b.isCurrent ? "B" : "not B"]
                }
            }
        }
        #expect(path == ["herald-A", "A", "B"])
    }

    @Test func nestedWaitThroughDeliveryTargetCompletes() async throws {
        let a = DeliveryThread(name: "herald.test.target-A")
        let b = DeliveryThread(name: "herald.test.target-B")
        defer {
            a.shutdown()
            b.shutdown()
        }
        let onA = try await onThread {
            try a.performAndWait {
                DeliveryTarget.thread(b).performAndWait {
                    DeliveryTarget.thread(a).performAndWait { a.isCurrent }
                }
            }
        }
        #expect(onA)
    }

    @Test func performAfterRunsOnTheThreadNoEarlierThanTheDelay() async throws {
        let thread = DeliveryThread(name: "herald.test.after")
        defer { thread.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        let delay = Duration.milliseconds(150)
        let (elapsed, onThread) = await withCheckedContinuation { continuation in
            thread.perform(after: delay) {
                continuation.resume(returning: (clock.now - start, thread.isCurrent))
            }
        }
        #expect(elapsed >= delay)
        #expect(onThread)
    }

    @Test func delayedWorkRunsInDeadlineOrder() async throws {
        let thread = DeliveryThread(name: "herald.test.deadlines")
        defer { thread.shutdown() }
        let order = Locked<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            thread.perform(after: .milliseconds(120)) {
                order.withLock { $0.append(3) }
                continuation.resume()
            }
            thread.perform(after: .milliseconds(60)) { order.withLock { $0.append(2) } }
            thread.perform(after: .zero) { order.withLock { $0.append(1) } }
        }
        #expect(order.withLock { $0 } == [1, 2, 3])
    }

    // MARK: The network thread

    @Test func fieldsSentFromFourThreadsAreHandledOnTheThreadInPerCallerOrder() async throws {
        let network = DeliveryThread(name: "herald.test.network")
        defer { network.shutdown() }
        let socket = FakeSocket(owner: network)
        let callers = 4
        let framesPerCaller = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    try await onThread {
                        for sequence in 0..<framesPerCaller {
                            let frame = Frame(caller: caller, sequence: sequence, urgent: sequence.isMultiple(of: 3))
                            if sequence.isMultiple(of: 2) {
                                network.perform { socket.send(frame) }
                            } else {
                                try network.performAndWait { socket.send(frame) }
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        // Everything submitted before this wait has run once it returns (FIFO).
        let sent = try await onThread { try network.performAndWait { socket.sent } }
        #expect(sent.count == callers * framesPerCaller)
        let callsOffThreadValue = socket.callsOffThread.load(ordering: .relaxed)
        #expect(callsOffThreadValue == 0)
        for caller in 0..<callers {
            let frames = sent.filter { $0.caller == caller }
            #expect(frames.map(\.sequence) == Array(0..<framesPerCaller))
            #expect(frames.map(\.urgent) == (0..<framesPerCaller).map { $0.isMultiple(of: 3) })
        }
    }

    // MARK: Actors

    @Test func anActorPinnedToTheThreadRunsItsMethodsThere() async throws {
        let thread = DeliveryThread(name: "herald.test.actor")
        defer { thread.shutdown() }
        let connection = Connection(thread: thread)
        let firstOnThread = await connection.send(Frame(caller: 0, sequence: 0, urgent: false))
        let secondOnThread = await connection.send(Frame(caller: 0, sequence: 1, urgent: true))
        #expect(firstOnThread)
        #expect(secondOnThread)
        #expect(await connection.sentCount == 2)
    }

    @Test func codeInPerformCanAssumeThePinnedActorsIsolation() async throws {
        let thread = DeliveryThread(name: "herald.test.assume")
        defer { thread.shutdown() }
        let connection = Connection(thread: thread)
        let count = await withCheckedContinuation { continuation in
            thread.perform {
                // The runtime asks the thread (checkIsolated) whether this is the actor's context.
                let count = connection.assumeIsolated { connection in
                    connection.record(Frame(caller: 1, sequence: 0, urgent: false))
                    return connection.sentCount
                }
                continuation.resume(returning: count)
            }
        }
        #expect(count == 1)
    }

    @Test func hubObserversOnTheThreadRunThere() async throws {
        let thread = DeliveryThread(name: "herald.test.hub")
        defer { thread.shutdown() }
        let hub = NotificationHub()
        let seen = Locked<[Int]>([])
        let observation = hub.observe(NetworkPing.self, on: .thread(thread)) { ping in
            seen.withLock { $0.append(thread.isCurrent ? ping.value : -1) }
        }
        defer { observation.cancel() }
        let report = try await onThread {
            hub.post(NetworkPing(value: 1))
            return hub.postAndWait(NetworkPing(value: 2))
        }
        #expect(report.deliveredCount == 1)
        #expect(seen.withLock { $0 } == [1, 2])
    }

    // MARK: Shutting down

    @Test func shutdownRunsTheQueuedWorkThenRejectsNewWork() async throws {
        let rejections = Locked<[DeliveryThreadError]>([])
        let thread = DeliveryThread(name: "herald.test.drain") { error in
            rejections.withLock { $0.append(error) }
        }
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked<[Int]>([])
        thread.perform { gate.wait() }
        for index in 0..<50 {
            thread.perform { ran.withLock { $0.append(index) } }
        }
        thread.shutdown()
        #expect(!thread.isAcceptingWork)
        thread.perform { ran.withLock { $0.append(-1) } }
        gate.signal()
        await thread.shutdownGracefully()

        #expect(thread.isStopped)
        #expect(ran.withLock { $0 } == Array(0..<50))
        let reported = rejections.withLock { $0 }
        #expect(reported == [DeliveryThreadError(code: .shutDown, threadName: "herald.test.drain")])
        #expect(reported.first.map { "\($0)" }?.contains("'herald.test.drain'") == true)

        let thrown = try await onThread { () -> DeliveryThreadError? in
            do {
                try thread.performAndWait { ran.withLock { $0.append(-2) } }
                return nil
            } catch let error as DeliveryThreadError {
                return error
            }
        }
        #expect(thrown?.code == .shutDown)
        #expect(thrown?.threadName == "herald.test.drain")
        #expect(ran.withLock { $0 }.count == 50)
    }

    @Test("Notifications queued for an observer before shutdown() all run, more than one drain slice of them")
    func queuedDeliveriesRunAfterShutdown() async throws {
        let thread = DeliveryThread(name: "herald.test.queued-at-shutdown")
        let hub = NotificationHub()
        let failures = Locked<[String]>([])
        hub.errorHandler = { failure in failures.withLock { $0.append("\(failure)") } }
        let delivered = Log<Int>()
        let token = hub.observe(Ping.self, on: .thread(thread)) { delivered.append($0.value) }
        let gate = DispatchSemaphore(value: 0)
        thread.perform { gate.wait() }  // the posts queue behind this
        for index in 0..<300 { hub.post(Ping(value: index)) }  // a drain job runs at most 128 a slice
        thread.shutdown()
        gate.signal()
        await thread.shutdownGracefully()
        #expect(delivered.values.count == 300)
        #expect(delivered.values == Array(0..<300), "in order")
        #expect(failures.withLock { $0.first } == nil)
        #expect(!token.isCancelled)
    }

    @Test func workSubmittedDuringTheDrainIsRejected() async throws {
        let rejections = Locked<[DeliveryThreadError.Code]>([])
        let thread = DeliveryThread(name: "herald.test.drain-submit") { error in
            rejections.withLock { $0.append(error.code) }
        }
        let ranLate = Atomic<Bool>(false)
        thread.perform {
            thread.shutdown()
            thread.perform { ranLate.store(true, ordering: .relaxed) }
        }
        await thread.shutdownGracefully()
        let ranLateValue = ranLate.load(ordering: .relaxed)
        #expect(!ranLateValue)
        #expect(rejections.withLock { $0 } == [.shutDown])
    }

    @Test func delayedWorkStillPendingAtShutdownIsRejectedAndReported() async throws {
        let rejections = Locked<[DeliveryThreadError.Code]>([])
        let thread = DeliveryThread(name: "herald.test.delayed") { error in
            rejections.withLock { $0.append(error.code) }
        }
        let ran = Atomic<Bool>(false)
        thread.perform(after: .seconds(3600)) { ran.store(true, ordering: .relaxed) }
        await thread.shutdownGracefully()
        let ranValue = ran.load(ordering: .relaxed)
        #expect(!ranValue)
        #expect(rejections.withLock { $0 } == [.shutDownBeforeDelayEnded])
    }

    @Test func shutdownAndWaitCalledOnTheThreadItselfDoesNotDeadlock() async throws {
        let thread = DeliveryThread(name: "herald.test.self-shutdown")
        let afterShutdown = await withCheckedContinuation { continuation in
            thread.perform {
                thread.shutdownAndWait()
                continuation.resume(returning: thread.isAcceptingWork)
            }
        }
        #expect(!afterShutdown)
        await thread.shutdownGracefully()
        #expect(thread.isStopped)
    }

    @Test func shutdownAndWaitReturnsAfterTheQueuedWorkRan() async throws {
        let thread = DeliveryThread(name: "herald.test.shutdown-wait")
        let ran = Atomic<Int>(0)
        for _ in 0..<20 {
            thread.perform { ran.add(1, ordering: .relaxed) }
        }
        let stopped = try await onThread {
            thread.shutdownAndWait()
            return thread.isStopped
        }
        #expect(stopped)
        let ranValue = ran.load(ordering: .relaxed)
        #expect(ranValue == 20)
    }

    @Test func aShutDownThreadIsDeallocatedOnceReleased() async throws {
        weak var weakThread: DeliveryThread?
        do {
            let thread = DeliveryThread(name: "herald.test.release")
            weakThread = thread
            let onThread = await withCheckedContinuation { continuation in
                thread.perform { continuation.resume(returning: thread.isCurrent) }
            }
            #expect(onThread)
            await thread.shutdownGracefully()
            #expect(thread.isStopped)
        }
        #expect(weakThread == nil)
    }

    @Test func releasingTheLastReferenceStillRunsTheQueuedWork() async throws {
        let ran = Atomic<Bool>(false)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            var thread: DeliveryThread? = DeliveryThread(name: "herald.test.deinit")
            thread?.perform {
                ran.store(true, ordering: .relaxed)
                continuation.resume()
            }
            thread = nil
        }
        let ranValue = ran.load(ordering: .relaxed)
        #expect(ranValue)
    }

    @Test(
        "an observer on a shut-down thread ends with a reported failure, and postAndWait does not hang",
        .timeLimit(.minutes(5))
    )
    func observerOnShutDownThreadIsReportedNotStuck() async {
        let hub = NotificationHub()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let thread = DeliveryThread(name: "closed", rejectionHandler: { _ in })
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .thread(thread)) { _ in seen.increment() }
        await hub.postAndWait(Ping(value: 1))
        #expect(seen.count == 1)
        await thread.shutdownGracefully()

        let report = await onNewThread { hub.postAndWait(Ping(value: 2)) }
        #expect(report.deliveredCount == 0)
        #expect(report.skippedCount == 1)
        #expect(report.failures.count == 1)
        #expect((report.failures.first?.error as? DeliveryThreadError)?.code == .shutDown)
        #expect(failures.count == 1)
        #expect(token.isCancelled)
        #expect(hub.observerCount(of: Ping.self) == 0)
        hub.post(Ping(value: 3))
        #expect(hub.unobservedPostCount == 1)  // nothing piles up behind the dead thread
        #expect(seen.count == 1)
    }
}

// MARK: - Fixtures

private struct ParseFailure: Error, Equatable {
    let offset: Int
}

private struct NetworkPing: TypedNotification {
    let value: Int
}

/// Three fields sent through the network thread.
private struct Frame: Sendable, Equatable {
    let caller: Int
    let sequence: Int
    let urgent: Bool
}

/// A socket that is not thread-safe: it is confined to its owner thread and counts calls made
/// anywhere else.
private final class FakeSocket: @unchecked Sendable {  // Confined to `owner`; `send` checks it.
    let owner: DeliveryThread
    let callsOffThread = Atomic<Int>(0)
    private(set) var sent: [Frame] = []

    init(owner: DeliveryThread) {
        self.owner = owner
    }

    func send(_ frame: Frame) {
        if !owner.isCurrent {
            callsOffThread.add(1, ordering: .relaxed)
        }
        sent.append(frame)
    }
}

/// An actor pinned to a DeliveryThread.
private actor Connection {
    let thread: DeliveryThread
    private(set) var sentCount = 0

    init(thread: DeliveryThread) {
        self.thread = thread
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        thread.asUnownedSerialExecutor()
    }

    func send(_ frame: Frame) -> Bool {
        record(frame)
        return thread.isCurrent
    }

    func record(_ frame: Frame) {
        sentCount += 1
    }
}

/// Runs blocking code on a fresh thread, so that the test's own executor is never blocked.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
