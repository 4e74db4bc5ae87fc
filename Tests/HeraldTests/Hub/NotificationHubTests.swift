import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

/// One test (at least) per numbered guarantee of the DocC article "Guarantees" (Herald.docc/Guarantees.md).
@Suite("NotificationHub semantics")
struct NotificationHubTests {
    // MARK: 1. Posting thread

    @Test("1. posting-thread observers run synchronously on the caller's thread, in registration order")
    func postingThreadObserversRunInlineInOrder() async {
        let hub = NotificationHub()
        let log = Log<String>()
        let threads = Log<UInt>()
        let tokens = (0..<5).map { index in
            hub.observe(Ping.self) { note in
                log.append("\(index):\(note.value)")
                threads.append(UInt(bitPattern: Unmanaged.passUnretained(Thread.current).toOpaque()))
            }
        }
        let posterThread = await onNewThread { () -> UInt in
            hub.post(Ping(value: 1))
            // Every handler has already run when post returns.
            #expect(log.count == 5)
            return UInt(bitPattern: Unmanaged.passUnretained(Thread.current).toOpaque())
        }
        #expect(log.values == ["0:1", "1:1", "2:1", "3:1", "4:1"])
        #expect(threads.values.allSatisfy { $0 == posterThread })
        withExtendedLifetime(tokens) {}
    }

    @Test(
        "1. plain, subject and owner observers on the posting thread run in registration order; those that do not accept a post are skipped"
    )
    func mixedPostingThreadObserversRunInOrder() {
        final class Owner: Sendable {}
        struct Failure: Error {}
        let hub = NotificationHub()
        let reported = Log<String>()
        hub.errorHandler = { reported.append("\($0.line)") }
        let log = Log<String>()
        let subject = Owner()
        let other = Owner()
        var owner: Owner? = Owner()
        let throwingLine = #line + 1
        let throwing = hub.observe(Ping.self) { note in
            log.append("throws:\(note.value)")
            throw Failure()
        }
        let plain = hub.observe(Ping.self) { note in log.append("plain:\(note.value)") }
        let fromSubject = hub.observe(Ping.self, from: subject) { note in log.append("subject:\(note.value)") }
        if let owner {
            hub.observe(Ping.self, owner: owner) { _, note in log.append("owner:\(note.value)") }
        }
        let cancelled = hub.observe(Ping.self) { note in log.append("cancelled:\(note.value)") }
        let last = hub.observe(Ping.self) { note in log.append("last:\(note.value)") }
        cancelled.cancel()

        hub.post(Ping(value: 1), from: subject)
        hub.post(Ping(value: 2), from: other)
        owner = nil  // the owner observation ends
        hub.post(Ping(value: 3))

        #expect(
            log.values == [
                "throws:1", "plain:1", "subject:1", "owner:1", "last:1",
                "throws:2", "plain:2", "owner:2", "last:2",
                "throws:3", "plain:3", "last:3",
            ])
        #expect(reported.values == Array(repeating: "\(throwingLine)", count: 3))
        withExtendedLifetime((throwing, plain, fromSubject, last, owner)) {}
    }

    // MARK: 2. Per-observer FIFO

    @Test(
        "2. one observer's deliveries never overlap and stay in order on every asynchronous target",
        arguments: ["serial queue", "concurrent queue", "operation queue x4", "executor", "actor", "main"]
    )
    func perObserverFIFO(targetName: String) async {
        let hub = NotificationHub()
        let count = 2_000
        let received = Log<Int>()
        let running = Atomic<Int>(0)
        let overlaps = Counter()
        let done = Counter()
        let store = Store()
        await confirmation("every notification arrives", expectedCount: 1) { finished in
            let (stream, continuation) = AsyncStream<Void>.makeStream()
            let handler: @Sendable (Ping) -> Void = { note in
                if running.add(1, ordering: .acquiringAndReleasing).newValue != 1 { overlaps.increment() }
                received.append(note.value)
                running.subtract(1, ordering: .acquiringAndReleasing)
                if done.increment() == count { continuation.finish() }
            }
            let token: ObservationToken
            switch targetName {
            case "serial queue":
                token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "serial")), handler)
            case "concurrent queue":
                token = hub.observe(
                    Ping.self, on: .queue(DispatchQueue(label: "concurrent", attributes: .concurrent)), handler)
            case "operation queue x4":
                let queue = OperationQueue()
                queue.maxConcurrentOperationCount = 4
                token = hub.observe(Ping.self, on: .operationQueue(queue), handler)
            case "executor":
                token = hub.observe(Ping.self, on: .executor(QueueExecutor(label: "executor")), handler)
            case "actor":
                token = hub.observe(Ping.self, on: store) { _, note in handler(note) }
            default:
                token = hub.observe(Ping.self, on: MainActor.shared) { note in handler(note) }
            }
            // Post from a thread so the burst really races the drains.
            await onNewThread {
                for value in 0..<count { hub.post(Ping(value: value)) }
            }
            for await _ in stream {}
            finished()
            withExtendedLifetime(token) {}
        }
        #expect(overlaps.count == 0)
        #expect(received.values == Array(0..<count))
    }

    @Test("2. the posts of several threads keep each thread's order at every observer")
    func perPosterFIFOAcrossThreads() async {
        let hub = NotificationHub()
        let perThread = 5_000
        let seen = Log<Int>()
        let token = hub.observe(
            Ping.self, on: .queue(DispatchQueue(label: "fifo", attributes: .concurrent))
        ) { note in seen.append(note.value) }
        await onThreads(4) { thread in
            for index in 0..<perThread { hub.post(Ping(value: thread * 1_000_000 + index)) }
        }
        // Posted after every thread finished, so it arrives after all of them (semantic 2).
        await hub.postAndWait(Ping(value: -1))
        let values = seen.values
        #expect(values.count == 4 * perThread + 1)
        #expect(values.last == -1)
        for thread in 0..<4 {
            let mine = values.filter { $0 >= thread * 1_000_000 && $0 < (thread + 1) * 1_000_000 }
            #expect(mine == (0..<perThread).map { thread * 1_000_000 + $0 })
        }
        withExtendedLifetime(token) {}
    }

    // MARK: 3. Registration order

    @Test("3. observers on one target are called in registration order")
    func registrationOrderOnOneQueue() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "order")
        let log = Log<String>()
        let names = ["a", "b", "c", "d", "e", "f", "g", "h"]
        let tokens = names.map { name in
            hub.observe(Ping.self, on: .queue(queue)) { note in log.append("\(name)\(note.value)") }
        }
        await hub.postAndWait(Ping(value: 1))
        await hub.postAndWait(Ping(value: 2))
        #expect(log.values == names.map { "\($0)1" } + names.map { "\($0)2" })
        withExtendedLifetime(tokens) {}
    }

    // MARK: 4. Membership at post time

    @Test("4. an observer added during a post does not receive that post")
    func observerAddedDuringPostMissesIt() {
        let hub = NotificationHub()
        let late = Log<Int>()
        let added = Locked<[ObservationToken]>([])
        let first = hub.observe(Ping.self) { note in
            let token = hub.observe(Ping.self) { late.append($0.value) }
            let queued = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "late"))) { late.append($0.value) }
            added.withLock { $0 += [token, queued] }
        }
        hub.post(Ping(value: 1))
        #expect(late.values.isEmpty)
        first.cancel()
        hub.post(Ping(value: 2))
        #expect(late.values.contains(2))
        #expect(!late.values.contains(1))
        withExtendedLifetime(added) {}
    }

    // MARK: 5. Cancel is final

    @Test("5. an observer cancelled while notifications are queued for it never sees them")
    func cancelDropsQueuedDeliveries() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "blocked")
        let gate = Gate()
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in seen.increment() }
        gate.close(queue)
        for value in 0..<1_000 { hub.post(Ping(value: value)) }
        token.cancel()
        #expect(token.isCancelled)
        gate.open()
        // A later observer on the same queue proves the queue drained past the cancelled lane.
        let after = hub.observe(Ping.self, on: .queue(queue)) { _ in }
        await hub.postAndWait(Ping(value: -1))
        #expect(seen.count == 0)
        withExtendedLifetime(after) {}
    }

    @Test("5. an observer removed during a post is not called by that post")
    func observerRemovedDuringPostIsSkipped() {
        let hub = NotificationHub()
        let called = Log<String>()
        let victim = Locked<ObservationToken?>(nil)
        let first = hub.observe(Ping.self) { _ in
            called.append("first")
            victim.withLock { $0?.cancel() }
        }
        victim.withLock { $0 = hub.observe(Ping.self) { _ in called.append("victim") } }
        hub.post(Ping(value: 1))
        #expect(called.values == ["first"])
        withExtendedLifetime(first) {}
    }

    @Test("5. an observation ends when its last reference goes away, and Set storage keeps it")
    func observationLifetime() {
        let hub = NotificationHub()
        let seen = Counter()
        var bag = Set<ObservationToken>()
        hub.observe(Ping.self) { _ in seen.increment() }.store(in: &bag)
        do {
            _ = hub.observe(Ping.self) { _ in seen.increment() }  // dropped at once
        }
        #expect(hub.observerCount(of: Ping.self) == 1)
        hub.post(Ping(value: 1))
        #expect(seen.count == 1)
        bag.removeAll()
        #expect(hub.observerCount(of: Ping.self) == 0)
        hub.post(Ping(value: 2))
        #expect(seen.count == 1)
    }

    // MARK: 6. Waiting without deadlock

    @Test("6. postAndWait returns after every observer ran, wherever it runs")
    func postAndWaitWaitsForEveryTarget() async {
        let hub = NotificationHub()
        let seen = Counter()
        let store = Store()
        let tokens = [
            hub.observe(Ping.self) { _ in seen.increment() },
            hub.observe(Ping.self, on: .mainQueue) { _ in seen.increment() },
            hub.observe(Ping.self, on: .queue(DispatchQueue(label: "q"))) { _ in seen.increment() },
            hub.observe(Ping.self, on: .operationQueue(OperationQueue())) { _ in seen.increment() },
            hub.observe(Ping.self, on: .executor(QueueExecutor(label: "e"))) { _ in seen.increment() },
            hub.observe(Ping.self, on: store) { store, note in
                store.append(note.value)
                seen.increment()
            },
        ]
        let report = await onNewThread { () -> DeliveryReport in
            let report = hub.postAndWait(Ping(value: 1))
            #expect(seen.count == 6)
            return report
        }
        #expect(report.deliveredCount == 6)
        #expect(report.isSuccess)
        #expect(await store.values == [1])
        withExtendedLifetime(tokens) {}
    }

    @Test("6. postAndWait from the main queue to main observers runs inline")
    func postAndWaitMainToMain() async {
        let hub = NotificationHub()
        let seen = Log<Bool>()
        let token = hub.observe(Ping.self, on: MainActor.shared) { _ in seen.append(MainQueueProbe.isOnMainQueue) }
        let plain = hub.observe(Ping.self, on: .mainQueue) { _ in seen.append(MainQueueProbe.isOnMainQueue) }
        let count = await MainActor.run { () -> Int in
            hub.postAndWait(Ping(value: 1))
            return seen.count  // both ran before postAndWait returned
        }
        #expect(count == 2)
        #expect(seen.values == [true, true])
        withExtendedLifetime([token, plain]) {}
    }

    @Test("6. postAndWait from a queue to an observer on that same queue runs inline")
    func postAndWaitQueueToSameQueue() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "self")
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in seen.increment() }
        // Something is already queued for the observer: it must still come first.
        hub.post(Ping(value: 0))
        let order = await onQueue(queue) { () -> Int in
            let report = hub.postAndWait(Ping(value: 1))
            #expect(report.deliveredCount == 1)
            return seen.count
        }
        #expect(order == 2)
        withExtendedLifetime(token) {}
    }

    @Test("6. postAndWait from an executor to an observer on that same executor runs inline")
    func postAndWaitExecutorToSameExecutor() async {
        let hub = NotificationHub()
        let executor = QueueExecutor(label: "exec-self")
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .executor(executor)) { _ in seen.increment() }
        let count = await onQueue(executor.queue) { () -> Int in
            hub.postAndWait(Ping(value: 1))
            return seen.count
        }
        #expect(count == 1)
        withExtendedLifetime(token) {}
    }

    @Test("6. a wait that timed out leaves nothing behind: the thread's next postAndWait still waits for its observer")
    func waitAfterATimeoutStillWaits() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "slow")
        let gate = DispatchSemaphore(value: 0)
        let firstRan = DispatchSemaphore(value: 0)
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in
            if note.value == 1 {
                gate.wait()
                log.append(1)
                firstRan.signal()
            } else {
                log.append(note.value)
            }
        }
        let (timedOut, seenOnReturn) = await onNewThread { () -> (Bool, [Int]) in
            let timedOut: Bool
            do {
                try hub.postAndWait(Ping(value: 1), timeout: .milliseconds(20))
                timedOut = false
            } catch {
                timedOut = true
            }
            // The first delivery finishes late: it wakes this thread's wait, which has ended.
            gate.signal()
            firstRan.wait()
            hub.postAndWait(Ping(value: 2))
            return (timedOut, log.values)
        }
        #expect(timedOut)
        #expect(seenOnReturn == [1, 2], "the second wait returned only once its observer had run")
        withExtendedLifetime(token) {}
    }

    @Test("6. a nested wait A → B → A completes")
    func nestedCrossTargetWait() async {
        let hub = NotificationHub()
        let queueA = DispatchQueue(label: "A")
        let queueB = DispatchQueue(label: "B")
        let log = Log<String>()
        let onB = hub.observe(Ping.self, on: .queue(queueB)) { note in
            log.append("B got \(note.value)")
            hub.postAndWait(Pong(value: note.value))  // waits for an observer on A, whose thread waits for us
            log.append("B done")
        }
        let onA = hub.observe(Pong.self, on: .queue(queueA)) { note in log.append("A got \(note.value)") }
        await onQueue(queueA) {
            hub.postAndWait(Ping(value: 7))
            log.append("A done")
        }
        #expect(log.values == ["B got 7", "A got 7", "B done", "A done"])
        // And with performAndWait in the same shape.
        let value = await onQueue(queueA) { () -> Int in
            DeliveryTarget.queue(queueB).performAndWait {
                DeliveryTarget.queue(queueA).performAndWait { 42 }
            }
        }
        #expect(value == 42)
        withExtendedLifetime([onA, onB]) {}
    }

    @Test("6. the timeout form returns in bounded time when the target is blocked, and the delivery still happens once")
    func postAndWaitTimesOut() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "stuck")
        let gate = Gate()
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in seen.increment() }
        gate.close(queue)
        let outcome = await onNewThread { () -> Result<DeliveryReport, DeliveryTimeout> in
            Result { () throws(DeliveryTimeout) -> DeliveryReport in
                try hub.postAndWait(Ping(value: 1), timeout: .milliseconds(50))
            }
        }
        guard case .failure(let timeout) = outcome else {
            Issue.record("expected a DeliveryTimeout, got \(outcome)")
            gate.open()
            return
        }
        #expect(timeout.pendingCount == 1)
        #expect(timeout.notificationType == "Ping")
        #expect(seen.count == 0)
        gate.open()
        await hub.postAndWait(Ping(value: 2))
        #expect(seen.count == 2)  // the late delivery ran exactly once, then the second one
        withExtendedLifetime(token) {}
    }

    @Test("6. deliver suspends until every observer ran, without blocking a thread")
    func deliverAwaitsEveryObserver() async {
        let hub = NotificationHub()
        let seen = Counter()
        let tokens = [
            hub.observe(Ping.self, on: .mainQueue) { _ in seen.increment() },
            hub.observe(Ping.self, on: .queue(DispatchQueue(label: "d"))) { _ in seen.increment() },
            hub.observe(Ping.self) { _ in seen.increment() },
        ]
        let report = await hub.postAndWait(Ping(value: 1))
        #expect(seen.count == 3)
        #expect(report.deliveredCount == 3)
        // From the main actor too: awaiting frees the main queue for the main observer.
        let onMain = await MainActor.run { seen.count }
        #expect(onMain == 3)
        _ = await Task { @MainActor in await hub.postAndWait(Ping(value: 2)) }.value
        #expect(seen.count == 6)
        withExtendedLifetime(tokens) {}
    }

    // MARK: 7. Re-entrancy

    @Test("7. a post from inside an observer is delivered depth-first on the posting thread")
    func reentrantPostIsDepthFirst() {
        let hub = NotificationHub()
        let log = Log<String>()
        let a = hub.observe(Ping.self) { note in
            log.append("a\(note.value)")
            if note.value == 1 { hub.post(Ping(value: 2)) }
        }
        let b = hub.observe(Ping.self) { note in log.append("b\(note.value)") }
        hub.post(Ping(value: 1))
        #expect(log.values == ["a1", "a2", "b2", "b1"])
        withExtendedLifetime([a, b]) {}
    }

    @Test("7. a post from inside an observer is queued after what is already queued elsewhere")
    func reentrantPostIsQueuedAfter() async {
        let hub = NotificationHub()
        let log = Log<Int>()
        let queued = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "after"))) { log.append($0.value) }
        let trigger = hub.observe(Ping.self) { note in
            if note.value == 1 { hub.post(Ping(value: 2)) }
        }
        hub.post(Ping(value: 1))
        await hub.postAndWait(Ping(value: 3))
        #expect(log.values == [1, 2, 3])
        withExtendedLifetime([queued, trigger]) {}
    }

    @Test("7. handlers can observe and cancel from inside a delivery, on any target")
    func observeAndCancelFromHandler() async {
        let hub = NotificationHub()
        let seen = Log<String>()
        let tokens = Locked<[ObservationToken]>([])
        let selfCancelling = Locked<ObservationToken?>(nil)
        selfCancelling.withLock {
            $0 = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "self-cancel"))) { note in
                seen.append("once \(note.value)")
                selfCancelling.withLock {
                    $0?.cancel()
                    $0 = nil  // the handler holds this slot: keeping the token would be a cycle
                }
                let token = hub.observe(Pong.self, on: .queue(DispatchQueue(label: "added"))) { pong in
                    seen.append("pong \(pong.value)")
                }
                tokens.withLock { $0.append(token) }
            }
        }
        await hub.postAndWait(Ping(value: 1))
        await hub.postAndWait(Ping(value: 2))
        await hub.postAndWait(Pong(value: 3))
        #expect(seen.values == ["once 1", "pong 3"])
        #expect(hub.observerCount(of: Ping.self) == 0)
    }

    // MARK: 8. Errors are isolated

    @Test("8. a throwing handler does not stop the others, and its error is reported with its location")
    func throwingHandlerIsIsolated() async {
        let hub = NotificationHub()
        let reported = Log<ObserverFailure>()
        hub.errorHandler = { reported.append($0) }
        let seen = Log<String>()
        let tokens = [
            hub.observe(Ping.self) { _ in seen.append("before") },
            hub.observe(Ping.self) { note in throw Boom(code: note.value) },
            hub.observe(Ping.self) { _ in seen.append("after") },
            hub.observe(Ping.self, on: .queue(DispatchQueue(label: "throws"))) { _ in throw Boom(code: -1) },
            hub.observe(Ping.self, on: .queue(DispatchQueue(label: "fine"))) { _ in seen.append("queued") },
        ]
        let report = await hub.postAndWait(Ping(value: 9))
        #expect(Set(seen.values) == ["before", "after", "queued"])
        #expect(report.deliveredCount == 5)
        #expect(report.failures.count == 2)
        #expect(reported.count == 2)
        let failure = reported.values.first { ($0.error as? Boom) == Boom(code: 9) }
        #expect(failure?.notificationType == "Ping")
        #expect(failure?.fileID.hasSuffix("NotificationHubTests.swift") == true)
        #expect(failure.map { "\($0)" }?.contains("NotificationHubTests.swift:") == true)
        withExtendedLifetime(tokens) {}
    }

    @Test("8. a fire-and-forget post: throwing posting-thread handlers stop none of their neighbours, in order")
    func throwingHandlersAmongPlainOnes() {
        let hub = NotificationHub()
        let reported = Log<Int>()
        hub.errorHandler = { reported.append(($0.error as? Boom)?.code ?? -1) }
        let seen = Log<String>()
        let subject = Subject()
        let tokens = [
            hub.observe(Ping.self) { _ in throw Boom(code: 1) },
            hub.observe(Ping.self) { _ in seen.append("a") },
            hub.observe(Ping.self) { _ in throw Boom(code: 2) },
            hub.observe(Ping.self) { _ in throw Boom(code: 3) },
            hub.observe(Ping.self, from: subject) { _ in seen.append("subject") },
            hub.observe(Ping.self, from: Subject()) { _ in seen.append("other subject") },
            hub.observe(Ping.self) { _ in seen.append("b") },
            hub.observe(Ping.self, from: subject) { _ in throw Boom(code: 4) },
            hub.observe(Ping.self) { _ in throw Boom(code: 5) },
        ]
        hub.post(Ping(value: 0), from: subject)
        #expect(seen.values == ["a", "subject", "b"])
        #expect(reported.values == [1, 2, 3, 4, 5])
        hub.post(Ping(value: 1))
        #expect(seen.values == ["a", "subject", "b", "a", "b"])
        #expect(reported.values == [1, 2, 3, 4, 5, 1, 2, 3, 5])
        withExtendedLifetime(tokens) {}
    }

    @Test("A subject-filtered posting-thread observer keeps its filter while cancellations renumber its type's list")
    func filtersSurviveSlotChanges() {
        let hub = NotificationHub()
        let seen = Log<Int>()
        let subject = Subject()
        // Even indexes plain, odd ones only from `subject`; cancelling two thirds compacts the
        // type's list, which renumbers every observer left in it.
        var tokens = (0..<60).map { index in
            index.isMultiple(of: 2)
                ? hub.observe(Ping.self) { _ in seen.append(index) }
                : hub.observe(Ping.self, from: subject) { _ in seen.append(index) }
        }
        for index in tokens.indices where !index.isMultiple(of: 3) { tokens[index].cancel() }
        tokens.append(hub.observe(Ping.self, from: subject) { _ in seen.append(60) })
        tokens.append(hub.observe(Ping.self) { _ in seen.append(61) })
        let live = Array(stride(from: 0, to: 60, by: 3))
        hub.post(Ping(value: 0), from: Subject())
        let plainOnes = live.filter { $0.isMultiple(of: 2) } + [61]
        #expect(seen.values == plainOnes)
        hub.post(Ping(value: 1), from: subject)
        #expect(Array(seen.values.dropFirst(plainOnes.count)) == live + [60, 61])
        withExtendedLifetime(tokens) {}
    }

    @Test("8. postAndWait returns the collected errors")
    func postAndWaitReturnsErrors() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let tokens = [
            hub.observe(Ping.self) { _ in throw Boom(code: 1) },
            hub.observe(Ping.self, on: .queue(DispatchQueue(label: "e2"))) { _ in throw Boom(code: 2) },
        ]
        let report = await onNewThread { hub.postAndWait(Ping(value: 0)) }
        #expect(Set(report.failures.compactMap { ($0.error as? Boom)?.code }) == [1, 2])
        #expect(!report.isSuccess)
        withExtendedLifetime(tokens) {}
    }

    // MARK: 9. Lifetimes

    @Test("9. the hub never retains an owner, and an owner observation ends when the owner deallocates")
    func ownerIsNotRetained() {
        let hub = NotificationHub()
        let seen = Counter()
        var owner: Subject? = Subject()
        weak let probe = owner
        if let owner {
            hub.observe(Ping.self, owner: owner) { _, _ in seen.increment() }  // token discarded on purpose
        }
        hub.post(Ping(value: 1))
        #expect(seen.count == 1)
        #expect(hub.observerCount(of: Ping.self) == 1)
        owner = nil
        #expect(probe == nil)
        hub.post(Ping(value: 2))
        #expect(seen.count == 1)
        #expect(hub.observerCount(of: Ping.self) == 0)
    }

    @Test("9. the hub never retains a subject, and a new object at a dead subject's address does not match")
    func subjectIsNotRetained() {
        let hub = NotificationHub()
        let seen = Counter()
        var subject: Subject? = Subject()
        weak let probe = subject
        let deadAddress = subject.map { ObjectIdentifier($0) }
        let token = hub.observe(Ping.self, from: subject) { _ in seen.increment() }
        hub.post(Ping(value: 1), from: subject)
        hub.post(Ping(value: 2), from: Subject())
        hub.post(Ping(value: 3))
        #expect(seen.count == 1)
        subject = nil
        #expect(probe == nil)
        // Try to get a new object at the same address; whether or not the allocator obliges, it
        // must not match.
        var sameAddress = false
        for _ in 0..<64 {
            let newcomer = Subject()
            sameAddress = ObjectIdentifier(newcomer) == deadAddress
            hub.post(Ping(value: 4), from: newcomer)
            if sameAddress { break }
        }
        #expect(seen.count == 1)
        #expect(token.isCancelled)  // it can never fire again
    }

    @Test("9. a subject observation matches only its subject, on an asynchronous target too")
    func subjectFilterOnQueue() async {
        let hub = NotificationHub()
        let mine = Subject()
        let other = Subject()
        let seen = Log<Int>()
        let token = hub.observe(Ping.self, from: mine, on: .queue(DispatchQueue(label: "s"))) { seen.append($0.value) }
        hub.post(Ping(value: 1), from: other)
        hub.post(Ping(value: 2), from: mine)
        hub.post(Ping(value: 3))
        await hub.postAndWait(Ping(value: 4), from: mine)
        #expect(seen.values == [2, 4])
        withExtendedLifetime(token) {}
    }

    @Test("9. deliveries already queued when the hub is deallocated still run")
    func hubDeallocatedWithQueuedDeliveries() async {
        let queue = DispatchQueue(label: "outlives")
        let gate = Gate()
        let seen = Counter()
        var hub: NotificationHub? = NotificationHub()
        weak let probe = hub
        let token = hub?.observe(Ping.self, on: .queue(queue)) { _ in seen.increment() }
        gate.close(queue)
        for value in 0..<10 { hub?.post(Ping(value: value)) }
        hub = nil
        #expect(probe == nil)
        gate.open()
        await onQueue(queue) {}
        #expect(seen.count == 10)
        #expect(token?.isCancelled == false)
    }

    // MARK: 10. Main is the main queue

    @Test("10. main observers run on the main queue, whichever thread drains it")
    func mainObserversRunOnMainQueue() async {
        let hub = NotificationHub()
        let checks = Log<Bool>()
        let tokens = [
            hub.observe(Ping.self, on: .mainQueue) { _ in checks.append(MainQueueProbe.isOnMainQueue) },
            hub.observe(Ping.self, on: .queue(.main)) { _ in checks.append(MainQueueProbe.isOnMainQueue) },
            hub.observe(Ping.self, on: MainActor.shared) { _ in
                MainActor.assertIsolated()
                checks.append(MainQueueProbe.isOnMainQueue)
            },
        ]
        await onNewThread { hub.post(Ping(value: 1)) }
        await hub.postAndWait(Ping(value: 2))
        #expect(checks.values == Array(repeating: true, count: 6))
        #expect(DeliveryTarget.queue(.main) == .mainQueue)
        withExtendedLifetime(tokens) {}
    }

    @Test("10. performAndWait on main from the main queue runs inline instead of trapping")
    func mainPerformAndWaitFromMain() async {
        let value = await MainActor.run {
            DeliveryTarget.mainQueue.performAndWait { MainQueueProbe.isOnMainQueue ? 1 : 0 }
        }
        #expect(value == 1)
        let fromBackground = await onNewThread {
            MainActor.performAndWait { MainQueueProbe.isOnMainQueue }
        }
        #expect(fromBackground)
    }

    // MARK: 11. Nothing is lost silently

    @Test("11. a post that reaches no observer is counted and reported")
    func unobservedPostsAreCounted() {
        let hub = NotificationHub()
        let reports = Log<UnobservedPost>()
        hub.unobservedPostHandler = { reports.append($0) }
        hub.post(Ping(value: 1))
        let token = hub.observe(Ping.self, from: Subject()) { _ in }
        hub.post(Ping(value: 2), from: Subject())
        #expect(hub.unobservedPostCount == 2)
        #expect(reports.values.map(\.notificationType) == ["Ping", "Ping"])
        #expect(reports.values.last?.hadSubject == true)
        withExtendedLifetime(token) {}
    }

    // MARK: Introspection

    @Test("registrations describe each observer's target and location")
    func registrationsAreInspectable() {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "inspect")
        #expect(!hub.hasObservers(of: Ping.self))
        let a = hub.observe(Ping.self) { _ in }
        let b = hub.observe(Ping.self, on: .queue(queue)) { _ in }
        let registrations = hub.registrations(of: Ping.self)
        #expect(registrations.map(\.target) == [.posting, .queue(queue)])
        #expect(registrations.allSatisfy { $0.fileID.hasSuffix("NotificationHubTests.swift") })
        #expect(hub.hasObservers(of: Ping.self))
        #expect(hub.observerCount(of: Pong.self) == 0)
        withExtendedLifetime([a, b]) {}
    }
}
