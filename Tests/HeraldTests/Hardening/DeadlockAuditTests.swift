import Dispatch
import Foundation
import Herald
import Testing

/// A target whose own thread can run a blocking test body: a dispatch queue, a `DeliveryThread`,
/// a custom executor, or an operation queue that runs one operation at a time.
final class WaitingSite: Sendable, CustomStringConvertible {
    let description: String
    let target: DeliveryTarget
    private let stop: @Sendable () -> Void

    init(_ name: String, _ target: DeliveryTarget, stop: @escaping @Sendable () -> Void = {}) {
        self.description = name
        self.target = target
        self.stop = stop
    }

    /// Runs `body` on the site's own thread and resumes with its result. The body may block:
    /// it blocks the site, never the test's task or the main queue.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            target.perform { continuation.resume(returning: body()) }
        }
    }

    func finish() { stop() }

    static let kinds = ["serial queue", "delivery thread", "executor", "operation queue ×1"]

    static func make(_ kind: String) -> WaitingSite {
        switch kind {
        case "delivery thread":
            let thread = DeliveryThread(name: "audit.thread")
            return WaitingSite(kind, .thread(thread), stop: { thread.shutdown() })
        case "executor":
            return WaitingSite(kind, .executor(QueueExecutor(label: "audit.executor")))
        case "operation queue ×1":
            let operations = makeKeptOperationQueue()
            operations.maxConcurrentOperationCount = 1
            return WaitingSite(kind, .operationQueue(operations))
        default:
            return WaitingSite(kind, .queue(DispatchQueue(label: "audit.\(kind)")))
        }
    }

    /// Every ordered pair of two different kinds.
    static var pairs: [(String, String)] {
        kinds.flatMap { a in kinds.filter { $0 != a }.map { (a, $0) } }
    }
}

/// Every waiting API, in every situation its documentation says it handles: waiting on itself, a
/// nested cross-target wait A → B → A (and A → B → C → A), and a main-queue wait from the main
/// queue. Each case that deadlocked would hang the test; each is bounded by a time limit.
///
/// The situations where a wait is documented to block forever (a target that never runs again)
/// are checked with the timeout form, which must return.
@Suite("Deadlock audit", .timeLimit(.minutes(2)))
struct DeadlockAuditTests {
    // MARK: Waiting on itself

    @Test("postAndWait from a target to an observer on that same target runs it inline", arguments: WaitingSite.kinds)
    func postAndWaitOnItself(kind: String) async {
        let site = WaitingSite.make(kind)
        defer { site.finish() }
        let hub = NotificationHub()
        let ranInline = Log<Bool>()
        let token = hub.observe(Ping.self, on: site.target) { _ in ranInline.append(true) }
        let report = await site.run { () -> (DeliveryReport, Int) in
            let report = hub.postAndWait(Ping(value: 1))
            return (report, ranInline.count)  // ran before postAndWait returned, on this thread
        }
        #expect(report.0.deliveredCount == 1)
        #expect(report.1 == 1)
        withExtendedLifetime(token) {}
    }

    @Test("performAndWait from a target on that same target runs inline", arguments: WaitingSite.kinds)
    func performAndWaitOnItself(kind: String) async {
        let site = WaitingSite.make(kind)
        defer { site.finish() }
        let value = await site.run { site.target.performAndWait { 42 } }
        #expect(value == 42)
    }

    @Test("An actor's synchronous code posting and waiting to an observer on that actor runs it inline")
    func postAndWaitActorToItself() async {
        let hub = NotificationHub()
        actor Ledger {
            var entries: [Int] = []
            func record(_ value: Int) { entries.append(value) }
            func postAndCount(_ hub: NotificationHub) -> Int {
                hub.postAndWait(Ping(value: 1))  // isolation is this actor: runs the observer inline
                return entries.count
            }
        }
        let ledger = Ledger()
        let token = hub.observe(Ping.self, on: ledger) { ledger, note in ledger.record(note.value) }
        #expect(await ledger.postAndCount(hub) == 1)
        withExtendedLifetime(token) {}
    }

    @Test("DeliveryThread.performAndWait and shutdownAndWait on the thread itself do not wait for themselves")
    func deliveryThreadOnItself() async {
        let thread = DeliveryThread(name: "audit.self")
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<(Int?, Bool), Never>) in
            thread.perform {
                let value = try? thread.performAndWait { 7 }
                thread.shutdownAndWait()  // only shuts down: the drain starts when this work returns
                continuation.resume(returning: (value, thread.isAcceptingWork))
            }
        }
        #expect(outcome.0 == 7)
        #expect(outcome.1 == false)
        await thread.shutdownGracefully()
        #expect(thread.isStopped)
    }

    @Test("BackgroundTask.wait from inside a task of the same queue returns while a slot is free")
    func backgroundTaskWaitInsideQueue() async throws {
        let queue = try BackgroundQueue(name: "audit.background", maxConcurrentTasks: 2)
        let inner = queue.enqueue { 21 }
        let outer = queue.enqueue { (try? inner.wait()).map { $0 * 2 } ?? -1 }
        #expect(try await outer.value == 42)
        let gate = DispatchSemaphore(value: 0)
        let blocker = queue.enqueue { gate.wait() }
        let cancelled = queue.enqueue(after: [blocker]) { 0 }  // cannot start before the cancel
        cancelled.cancel()
        defer { gate.signal() }
        let waited = await onNewThread { () -> Bool in
            do {
                _ = try cancelled.wait()
                return false
            } catch {
                return error is CancellationError
            }
        }
        #expect(waited, "a cancelled task's wait returns at once with CancellationError")
    }

    // MARK: Nested cross-target waits

    @Test("A nested postAndWait A → B → A completes between every two kinds of target", arguments: WaitingSite.pairs)
    func nestedPostAndWait(first: String, second: String) async {
        let kinds = (first, second)
        let a = WaitingSite.make(first)
        let b = WaitingSite.make(second)
        defer { for thread in [a, b] { thread.finish() } }
        let hub = NotificationHub()
        let log = Log<String>()
        let onB = hub.observe(Ping.self, on: b.target) { note in
            log.append("B got \(note.value)")
            hub.postAndWait(Pong(value: note.value))  // its observer is on A, whose thread waits for us
            log.append("B done")
        }
        let onA = hub.observe(Pong.self, on: a.target) { note in log.append("A got \(note.value)") }
        await a.run {
            hub.postAndWait(Ping(value: 7))
            log.append("A done")
        }
        #expect(log.values == ["B got 7", "A got 7", "B done", "A done"], "\(kinds)")
        withExtendedLifetime([onA, onB]) {}
    }

    @Test("A nested performAndWait A → B → A completes between every two kinds of target", arguments: WaitingSite.pairs)
    func nestedPerformAndWait(first: String, second: String) async {
        let kinds = (first, second)
        let a = WaitingSite.make(first)
        let b = WaitingSite.make(second)
        defer { for thread in [a, b] { thread.finish() } }
        let value = await a.run {
            b.target.performAndWait {
                a.target.performAndWait { 42 }
            }
        }
        #expect(value == 42, "\(kinds)")
    }

    @Test("A three-target chain A → B → C → A completes, mixing postAndWait, performAndWait and DeliveryThread")
    func threeTargetChain() async {
        let a = DeliveryThread(name: "audit.a")
        let b = DispatchQueue(label: "audit.b")
        let c = QueueExecutor(label: "audit.c")
        defer { a.shutdown() }
        let hub = NotificationHub()
        let token = hub.observe(Ping.self, on: .queue(b)) { _ in
            // On B: wait for C, whose work waits for A, whose only thread waits for all of this.
            let fromA = DeliveryTarget.executor(c).performAndWait {
                (try? a.performAndWait { a.isCurrent }) ?? false
            }
            if !fromA { Issue.record("the innermost work did not run on A") }
        }
        let report = await withCheckedContinuation { continuation in
            a.perform { continuation.resume(returning: hub.postAndWait(Ping(value: 1))) }
        }
        #expect(report.deliveredCount == 1)
        #expect(report.isSuccess)
        withExtendedLifetime(token) {}
    }

    @Test("A nested wait main → queue → main completes: the blocked main queue runs the work meant for it")
    func nestedWaitThroughMain() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "audit.main-nested")
        let onQueue = hub.observe(Ping.self, on: .queue(queue)) { _ in
            let onMain = MainActor.performAndWait { MainQueueProbe.isOnMainQueue }
            if !onMain { Issue.record("the nested work did not run on the main queue") }
        }
        let report = await MainActor.run { hub.postAndWait(Ping(value: 1)) }
        #expect(report.deliveredCount == 1)
        let value = await MainActor.run {
            DeliveryTarget.queue(queue).performAndWait { MainActor.performAndWait { 5 } }
        }
        #expect(value == 5)
        withExtendedLifetime(onQueue) {}
    }

    // MARK: Isolation inherited by a closure that runs elsewhere

    @Test(
        "A wait inside a performAndWait closure formed on the main actor runs main work on the main queue, not inline")
    func inheritedMainActorIsolation() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "audit.inherited-main")
        let seen = Log<Bool>()
        let token = hub.observe(Ping.self, on: MainActor.shared) { _ in seen.append(MainQueueProbe.isOnMainQueue) }
        let outcome = await MainActor.run { () -> (Bool, Bool) in
            // The closure inherits the main actor's isolation, but performAndWait runs it on `queue`.
            DeliveryTarget.queue(queue).performAndWait {
                let onMain = MainActor.performAndWait { MainQueueProbe.isOnMainQueue }
                hub.postAndWait(Ping(value: 1))
                return (onMain, MainQueueProbe.isOnMainQueue)
            }
        }
        #expect(outcome.0, "MainActor.performAndWait ran its work on the main queue")
        #expect(!outcome.1, "the closure itself ran on the queue")
        #expect(seen.values == [true])
        withExtendedLifetime(token) {}
    }

    @Test("A wait inside a performAndWait closure formed on an actor delivers to that actor on its own thread")
    func inheritedActorIsolation() async {
        let hub = NotificationHub()
        let thread = DeliveryThread(name: "audit.pinned")
        defer { thread.shutdown() }
        let queue = DispatchQueue(label: "audit.inherited-actor")
        let ledger = PinnedLedger(thread: thread)
        let token = hub.observe(Ping.self, on: ledger) { ledger, note in ledger.record(note.value) }
        let outcome = await ledger.postThroughQueue(hub, queue)
        #expect(outcome.entries == [1])
        #expect(outcome.ranOnItsThread == [true])
        withExtendedLifetime(token) {}
    }

    // MARK: Main-queue waits from the main queue

    @Test("Every waiting API called on the main queue for the main queue runs inline")
    @MainActor
    func mainQueueWaitsFromMainQueue() throws {
        let hub = NotificationHub()
        let seen = Log<Bool>()
        let tokens = [
            hub.observe(Ping.self, on: .mainQueue) { _ in seen.append(MainQueueProbe.isOnMainQueue) },
            hub.observe(Ping.self, on: MainActor.shared) { _ in seen.append(MainQueueProbe.isOnMainQueue) },
        ]
        hub.postAndWait(Ping(value: 1))
        #expect(seen.count == 2)
        let report = try hub.postAndWait(Ping(value: 2), timeout: .milliseconds(1))  // inline: never times out
        #expect(report.deliveredCount == 2)
        #expect(DeliveryTarget.mainQueue.performAndWait { MainQueueProbe.isOnMainQueue })
        #expect(MainActor.performAndWait { 3 } == 3)
        let center = NotificationCenter()
        let legacy = LegacyObserver(center, Notification.Name("audit.main")) { _ in
            seen.append(MainQueueProbe.isOnMainQueue)
        }
        center.postOnMainThread(Notification(name: Notification.Name("audit.main")))
        center.postOnMainThread(name: Notification.Name("audit.main"), object: nil, userInfo: nil, waitUntilDone: false)
        #expect(seen.values == Array(repeating: true, count: 6), "each ran before the call returned, on main")
        withExtendedLifetime((tokens, legacy)) {}
    }

    @Test("A plain main-queue block (not the main actor) waiting for the main queue runs inline too")
    func plainMainQueueBlock() async {
        let hub = NotificationHub()
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .mainQueue) { _ in seen.increment() }
        let count = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                hub.postAndWait(Ping(value: 1))
                let value = DeliveryTarget.mainQueue.performAndWait { 1 }
                continuation.resume(returning: seen.count + value)
            }
        }
        #expect(count == 2)
        withExtendedLifetime(token) {}
    }

    // MARK: Documented to block forever: the bounded form returns

    @Test("Waiting for a target that never runs again: the timeout form returns; the unbounded form is documented")
    func targetThatNeverRunsAgain() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "audit.never")
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in }
        queue.suspend()
        let (timedOut, elapsed) = await timedOnNewThread { () -> Bool in
            (try? hub.postAndWait(Ping(value: 1), timeout: .milliseconds(20))) == nil
        }
        #expect(timedOut)
        #expect(elapsed < .seconds(10))
        queue.resume()
        await hub.postAndWait(Ping(value: 2))
        withExtendedLifetime(token) {}
    }
}

/// An actor pinned to a `DeliveryThread`, so that its methods may block without blocking the
/// cooperative pool.
actor PinnedLedger {
    let thread: DeliveryThread
    private(set) var entries: [Int] = []
    private(set) var ranOnItsThread: [Bool] = []

    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    init(thread: DeliveryThread) {
        self.thread = thread
    }

    func record(_ value: Int) {
        entries.append(value)
        ranOnItsThread.append(thread.isCurrent)
    }

    /// Posts and waits from a closure that inherits this actor's isolation but runs on `queue`.
    func postThroughQueue(_ hub: NotificationHub, _ queue: DispatchQueue) -> (entries: [Int], ranOnItsThread: [Bool]) {
        let report = DeliveryTarget.queue(queue).performAndWait {
            hub.postAndWait(Ping(value: 1))
        }
        return report.deliveredCount == 1 ? (entries, ranOnItsThread) : ([], [])
    }
}
