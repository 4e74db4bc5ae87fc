import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

/// A notification whose payload is a class, to see when Herald releases it.
final class Tracked: TypedNotification {
    let value: Int
    let onDeinit: (@Sendable () -> Void)?

    init(_ value: Int, onDeinit: (@Sendable () -> Void)? = nil) {
        self.value = value
        self.onDeinit = onDeinit
    }

    deinit { onDeinit?() }
}

/// The kinds of asynchronous target a mailbox policy applies to.
enum PolicyTargetKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case mainActor, queue, operationQueue, thread, actor, executor, asyncHandler

    var testDescription: String { rawValue }
}

/// An observer of `Numbered` with `policy` on a target of `kind`, appending to `log`, and what
/// keeps the target alive.
private func observeNumbered(
    _ hub: NotificationHub, on kind: PolicyTargetKind, policy: NotificationBufferingPolicy, log: Log<Numbered>
) -> (ObservationToken, Any) {
    switch kind {
    case .mainActor:
        return (hub.observe(Numbered.self, on: MainActor.shared, bufferingPolicy: policy) { log.append($0) }, ())
    case .queue:
        let queue = DispatchQueue(label: "mailbox.queue")
        return (hub.observe(Numbered.self, on: .queue(queue), bufferingPolicy: policy) { log.append($0) }, queue)
    case .operationQueue:
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 4
        return (
            hub.observe(Numbered.self, on: .operationQueue(queue), bufferingPolicy: policy) { log.append($0) }, queue
        )
    case .thread:
        let thread = DeliveryThread(name: "mailbox.thread")
        return (hub.observe(Numbered.self, on: .thread(thread), bufferingPolicy: policy) { log.append($0) }, thread)
    case .actor:
        let store = Store()
        return (hub.observe(Numbered.self, on: store, bufferingPolicy: policy) { _, note in log.append(note) }, store)
    case .executor:
        let executor = QueueExecutor(label: "mailbox.executor")
        return (
            hub.observe(Numbered.self, on: .executor(executor), bufferingPolicy: policy) { log.append($0) }, executor
        )
    case .asyncHandler:
        let queue = DispatchQueue(label: "mailbox.async")
        return (
            hub.observe(Numbered.self, on: .queue(queue), bufferingPolicy: policy) { note async in log.append(note) },
            queue
        )
    }
}

@Suite("Mailbox policies")
struct MailboxPolicyTests {
    // MARK: Deterministic, on a manual executor

    @Test("latest delivers only the newest of a burst posted before the drain runs, and counts the rest")
    func latestCoalescesABurst() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest) { log.append($0.value) }
        for value in 1...100 { hub.post(Ping(value: value)) }
        #expect(executor.pendingCount == 1)
        executor.runUntilIdle()
        #expect(log.values == [100])
        #expect(token.replacedCount == 99)
        #expect(token.droppedCount == 0)
        #expect(token.bufferingPolicy == .latest)
    }

    @Test("latest: a burst that arrives while the handler runs leaves only its newest notification")
    func latestBurstDuringRunningHandler() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest) { note in
            log.append(note.value)
            if note.value == 0 {
                for value in 1...50 { hub.post(Ping(value: value)) }  // while this handler runs
            }
        }
        hub.post(Ping(value: 0))
        executor.runUntilIdle()
        #expect(log.values == [0, 50])  // the running notification is never replaced
        #expect(token.replacedCount == 49)
    }

    @Test("latest per subject keeps the newest of each subject, in the order of the newest posts")
    func latestPerSubject() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let a = Subject()
        let b = Subject()
        let log = Log<String>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest(perSubject: true)) {
            note in
            log.append("\(note.value)")
        }
        hub.post(Ping(value: 11), from: a)
        hub.post(Ping(value: 21), from: b)
        hub.post(Ping(value: 12), from: a)
        hub.post(Ping(value: 1))  // no subject: a subject of its own
        hub.post(Ping(value: 22), from: b)
        hub.post(Ping(value: 13), from: a)
        executor.runUntilIdle()
        #expect(log.values == ["1", "22", "13"])
        #expect(token.replacedCount == 3)
        withExtendedLifetime((a, b)) {}
    }

    @Test("latest per subject with a from: filter coalesces that subject's posts")
    func latestPerSubjectWithFilter() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let a = Subject()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, from: a, on: .executor(executor), bufferingPolicy: .latest(perSubject: true))
        {
            log.append($0.value)
        }
        for value in 1...5 {
            hub.post(Ping(value: value), from: a)
            hub.post(Ping(value: -value))
        }
        executor.runUntilIdle()
        #expect(log.values == [5])
        #expect(token.replacedCount == 4)
        withExtendedLifetime(a) {}
    }

    @Test("bufferingNewest(n) keeps the newest n and counts each one it drops")
    func boundedDropsOldest() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .bufferingNewest(3)) {
            log.append($0.value)
        }
        for value in 1...10 { hub.post(Ping(value: value)) }
        executor.runUntilIdle()
        #expect(log.values == [8, 9, 10])
        #expect(token.droppedCount == 7)
        #expect(token.replacedCount == 0)
    }

    @Test("bufferingOldest(n) keeps the oldest n and counts each new one it drops")
    func boundedDropsNewest() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .bufferingOldest(3)) {
            log.append($0.value)
        }
        for value in 1...10 { hub.post(Ping(value: value)) }
        executor.runUntilIdle()
        #expect(log.values == [1, 2, 3])
        #expect(token.droppedCount == 7)
        hub.post(Ping(value: 11))  // room again
        executor.runUntilIdle()
        #expect(log.values == [1, 2, 3, 11])
    }

    @Test("a bounded mailbox counts only pending notifications: a burst during a running handler fills it anew")
    func boundedBurstDuringRunningHandler() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .bufferingNewest(2)) { note in
            log.append(note.value)
            if note.value == 0 {
                for value in 1...10 { hub.post(Ping(value: value)) }
            }
        }
        hub.post(Ping(value: 0))
        executor.runUntilIdle()
        #expect(log.values == [0, 9, 10])
        #expect(token.droppedCount == 8)
    }

    @Test(
        "a limit of 0 keeps nothing that waits: a notification reaches the handler only while it is idle",
        arguments: [NotificationBufferingPolicy.bufferingNewest(0), .bufferingOldest(0), .bufferingNewest(-1)])
    func zeroLimitReachesOnlyAnIdleHandler(policy: NotificationBufferingPolicy) {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: policy) {
            log.append($0.value)
        }
        // The first post finds the observer idle: its drain takes it. Nothing waits behind it.
        for value in 1...3 { hub.post(Ping(value: value)) }
        executor.runUntilIdle()
        #expect(log.values == [1])
        #expect(token.droppedCount == 2)
        hub.post(Ping(value: 4))  // idle again
        executor.runUntilIdle()
        #expect(log.values == [1, 4])
        #expect(token.droppedCount == 2)
    }

    @Test("the default policy is unbounded and keeps everything")
    func unboundedByDefault() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor)) { log.append($0.value) }
        let posting = hub.observe(Ping.self, bufferingPolicy: .latest) { _ in }
        for value in 1...300 { hub.post(Ping(value: value)) }
        executor.runUntilIdle()
        #expect(log.values == Array(1...300))
        #expect(token.bufferingPolicy == .unbounded)
        #expect(token.replacedCount == 0 && token.droppedCount == 0)
        // A synchronous posting-thread observer has no mailbox: its policy is unbounded.
        #expect(posting.bufferingPolicy == .unbounded)
        #expect(posting.replacedCount == 0)
    }

    @Test("an async handler on the posting thread coalesces what arrives while it runs")
    func asyncHandlerOnPostingThread() async {
        let hub = NotificationHub()
        let log = Log<Int>()
        let started = AsyncLatch()
        let release = AsyncLatch()
        let token = hub.observe(Ping.self, on: .posting, bufferingPolicy: .latest) { note async in
            log.append(note.value)
            if note.value == 0 {
                started.open()
                await release.wait()
            }
        }
        hub.post(Ping(value: 0))
        await started.wait()
        for value in 1...20 { hub.post(Ping(value: value)) }
        release.open()
        try? await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(log.values == [0, 20])
        #expect(token.replacedCount == 19)
    }

    // MARK: Owner-bound observations

    @Test("the counts of an observation made with an owner are in the hub's registrations")
    func countsReachableFromTheHub() {
        final class Model: Sendable {}
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let model = Model()
        hub.observe(Ping.self, owner: model, on: .executor(executor), bufferingPolicy: .bufferingOldest(2)) { _, _ in }
        for value in 1...5 { hub.post(Ping(value: value)) }
        let registration = hub.registrations(of: Ping.self).first
        #expect(registration?.bufferingPolicy == .bufferingOldest(2))
        #expect(registration?.droppedCount == 3)
        #expect(registration?.replacedCount == 0)
        #expect(registration?.description.hasSuffix("buffering bufferingOldest(2) (replaced 0, dropped 3)") == true)
        executor.runUntilIdle()
        withExtendedLifetime(model) {}
    }

    // MARK: Waiting posts

    @Test("a waiting post whose notification was replaced completes once the replacement's handler returns")
    func waitingPostReplaced() async {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let completed = Locked(false)
        let sawIncompleteWait = Locked(false)
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest) { note in
            if note.value == 2 { sawIncompleteWait.withLock { $0 = !completed.withLock { $0 } } }
        }
        // A posting-thread observer runs once the post reached every mailbox.
        let posted = AsyncLatch()
        let signal = hub.observe(Ping.self, on: .posting) { if $0.value == 1 { posted.open() } }
        let waiting = Task {
            let report = await hub.postAndWait(Ping(value: 1))
            completed.withLock { $0 = true }
            return report
        }
        await posted.wait()
        hub.post(Ping(value: 2))  // replaces it
        #expect(token.replacedCount == 1)
        executor.runUntilIdle()
        let report = await waiting.value
        #expect(sawIncompleteWait.withLock { $0 })
        #expect(report.replacedCount == 1)
        #expect(report.deliveredCount == 1)  // the posting-thread observer
        #expect(report.description == "DeliveryReport(delivered: 1, skipped: 0, replaced: 1, failures: 0)")
        withExtendedLifetime(signal) {}
    }

    @Test("waiting posts replaced one after another all complete with the newest one's handler")
    func waitingPostsReplacedInChain() async throws {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest) { log.append($0.value) }
        let posted = [AsyncLatch(), AsyncLatch(), AsyncLatch()]
        // A posting-thread observer runs once the post has reached every mailbox.
        let signal = hub.observe(Ping.self) { posted[$0.value - 1].open() }
        let a = Task { await hub.postAndWait(Ping(value: 1)) }
        await posted[0].wait()
        let b = Task { await hub.postAndWait(Ping(value: 2)) }
        await posted[1].wait()
        hub.post(Ping(value: 3))
        #expect(token.replacedCount == 2)
        executor.runUntilIdle()
        let reportA = await a.value
        let reportB = await b.value
        #expect(log.values == [3])
        #expect(reportA.replacedCount == 1 && reportA.deliveredCount == 1)  // the posting-thread observer ran
        #expect(reportB.replacedCount == 1 && reportB.deliveredCount == 1)
        withExtendedLifetime(signal) {}
    }

    @Test("a waiting post whose notification was dropped completes at once")
    func waitingPostDropped() async throws {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .bufferingOldest(1)) { _ in }
        hub.post(Ping(value: 1))
        let report = try await hub.postAndWait(Ping(value: 2), timeout: asyncPatience)
        #expect(report.droppedCount == 1)
        #expect(report.deliveredCount == 0)
        #expect(token.droppedCount == 1)

        let newest = hub.observe(Pong.self, on: .executor(executor), bufferingPolicy: .bufferingNewest(1)) { _ in }
        let scheduled = AsyncLatch()
        executor.onEnqueue { _ in
            scheduled.open()
            return false
        }
        let waiting = Task { try await hub.postAndWait(Pong(value: 1), timeout: asyncPatience) }
        await scheduled.wait()
        hub.post(Pong(value: 2))  // pushes the waiting post's notification out
        let dropped = try await waiting.value
        #expect(dropped.droppedCount == 1)
        #expect(newest.droppedCount == 1)
        executor.runUntilIdle()
    }

    @Test("a blocking waiting post whose notification was replaced completes after the replacement ran")
    func blockingWaitReplaced() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "mailbox.blocking")
        let gate = Gate()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .queue(queue), bufferingPolicy: .latest) { log.append($0.value) }
        let posted = AsyncLatch()
        let signal = hub.observe(Ping.self) { if $0.value == 1 { posted.open() } }
        gate.close(queue)
        async let report = onNewThread { hub.postAndWait(Ping(value: 1)) }
        await posted.wait()
        hub.post(Ping(value: 2))  // replaces the blocked post's notification
        gate.open()
        let finished = await report
        #expect(finished.replacedCount == 1)
        #expect(log.values == [2])
        #expect(token.replacedCount == 1)
        withExtendedLifetime(signal) {}
    }

    // MARK: Cancellation and release

    @Test("cancel is final under every policy, and skips the waiting posts that were replaced")
    func cancelIsFinal() async {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let scheduled = AsyncLatch()
        executor.onEnqueue { _ in
            scheduled.open()
            return false
        }
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest) { log.append($0.value) }
        let waiting = Task { await hub.postAndWait(Ping(value: 1)) }
        await scheduled.wait()
        hub.post(Ping(value: 2))
        token.cancel()
        executor.runUntilIdle()
        let report = await waiting.value
        #expect(log.values.isEmpty)
        #expect(report.skippedCount == 1)
        #expect(token.replacedCount == 1)  // still readable after the end
    }

    @Test("replaced and dropped payloads are released outside the lane's lock")
    func discardedPayloadsReleasedOutsideTheLock() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let deinits = Counter()
        for policy in [NotificationBufferingPolicy.latest, .bufferingNewest(1), .bufferingOldest(1)] {
            let token = hub.observe(Tracked.self, on: .executor(executor), bufferingPolicy: policy) {
                log.append($0.value)
            }
            // The deinit of a discarded payload posts to the same observer: under the lane's lock it
            // would deadlock.
            hub.post(Tracked(1))
            hub.post(
                Tracked(2) {
                    _ = deinits.increment()
                    hub.post(Tracked(3))
                })
            hub.post(Tracked(4))
            executor.runUntilIdle()
            token.cancel()
        }
        #expect(deinits.count == 3)
    }

    @Test("replayed values go through the policy")
    func replayUnderPolicy() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let a = Subject()
        let b = Subject()
        hub.postAndRetain(Ping(value: 1), from: a)
        hub.postAndRetain(Ping(value: 2), from: b)
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .latest, replayLatest: true) {
            log.append($0.value)
        }
        executor.runUntilIdle()
        #expect(log.values == [2])
        #expect(token.replacedCount == 1)
        withExtendedLifetime((a, b)) {}
    }

    @Test("a stream with the latest policy keeps the newest notification")
    func streamLatest() async {
        let hub = NotificationHub()
        let stream = hub.notifications(of: Ping.self, bufferingPolicy: .latest)
        for value in 1...5 { hub.post(Ping(value: value)) }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first == Ping(value: 5))
        #expect(stream.droppedCount == 4)
    }

    // MARK: Every kind of target

    @Test(
        "every policy keeps exact counts and per-poster order on every kind of target",
        arguments: PolicyTargetKind.allCases,
        [NotificationBufferingPolicy.latest, .latest(perSubject: true), .bufferingNewest(4), .bufferingOldest(4)])
    func everyTarget(kind: PolicyTargetKind, policy: NotificationBufferingPolicy) async throws {
        let hub = NotificationHub()
        let log = Log<Numbered>()
        let (token, target) = observeNumbered(hub, on: kind, policy: policy, log: log)
        let count = 2_000
        let subjects = [Subject(), Subject()]
        await onNewThread {
            for index in 0..<count {
                hub.post(Numbered(poster: 0, index: index), from: subjects[index % 2])
            }
        }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        let delivered = log.values.map(\.index)
        #expect(delivered.count + token.replacedCount + token.droppedCount == count)
        #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0 < $1 })  // FIFO among the delivered
        switch policy {
        case .latest(let perSubject):
            #expect(token.droppedCount == 0)
            #expect(delivered.last == count - 1)
            if perSubject { #expect(delivered.contains(count - 2)) }
        case .bufferingNewest:
            #expect(token.replacedCount == 0)
            #expect(delivered.suffix(4) == Array(count - 4..<count))
        case .bufferingOldest:
            #expect(token.replacedCount == 0)
            #expect(delivered.prefix(1) == [0])
        case .unbounded:
            break
        }
        token.cancel()
        withExtendedLifetime((target, subjects)) {}
        if case .thread = kind, let thread = target as? DeliveryThread { thread.shutdown() }
    }

    @Test("a gated queue coalesces a whole burst, deterministically")
    func gatedQueue() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "mailbox.gated")
        let gate = Gate()
        let log = Log<Int>()
        let latest = hub.observe(Ping.self, on: .queue(queue), bufferingPolicy: .latest) { log.append($0.value) }
        gate.close(queue)
        for value in 1...1_000 { hub.post(Ping(value: value)) }
        gate.open()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(log.values == [1_000])
        #expect(latest.replacedCount == 999)
    }

    // MARK: Fair drains and causal order

    @Test("a drain under a policy is still sliced: it gives the target back after 128 notifications")
    func fairDrainUnderPolicy() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let log = Log<Int>()
        let token = hub.observe(Ping.self, on: .executor(executor), bufferingPolicy: .bufferingOldest(1_000)) {
            log.append($0.value)
        }
        for value in 0..<300 { hub.post(Ping(value: value)) }
        executor.runNext()
        #expect(log.count == 128)
        #expect(executor.pendingCount == 1)  // the job queued itself again, behind other work
        executor.runUntilIdle()
        #expect(log.values == Array(0..<300))
        #expect(token.droppedCount == 0)
    }

    @Test("causal order holds for a coalescing observer: an effect never arrives before its cause")
    func causalOrderUnderPolicy() async throws {
        let hub = NotificationHub()
        let causes = Subject()
        let effects = Subject()
        let reactorQueue = DispatchQueue(label: "mailbox.reactor")
        let watcherQueue = DispatchQueue(label: "mailbox.watcher")
        let reactor = hub.observe(Numbered.self, from: causes, on: .queue(reactorQueue)) { note in
            hub.post(Numbered(poster: 1, index: note.index), from: effects)
        }
        let log = Log<Numbered>()
        let watcher = hub.observe(
            Numbered.self, on: .queue(watcherQueue), bufferingPolicy: .latest(perSubject: true)
        ) { log.append($0) }
        let count = 2_000
        await onNewThread {
            for index in 0..<count { hub.post(Numbered(poster: 0, index: index), from: causes) }
        }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        let delivered = log.values
        let deliveredCauses = Set(delivered.filter { $0.poster == 0 }.map(\.index))
        var seenCauses = Set<Int>()
        var inversions = 0
        for note in delivered {
            if note.poster == 0 {
                seenCauses.insert(note.index)
            } else if deliveredCauses.contains(note.index) && !seenCauses.contains(note.index) {
                inversions += 1  // the effect came first, and its cause was delivered later
            }
        }
        #expect(inversions == 0)
        #expect(delivered.count + watcher.replacedCount == 2 * count)
        withExtendedLifetime((reactor, causes, effects)) {}
    }

    // MARK: Concurrent posters

    @Test(
        "drop and replace counts are exact under concurrent posters, and each poster's order holds",
        arguments: [NotificationBufferingPolicy.latest(perSubject: true), .bufferingNewest(16), .bufferingOldest(16)])
    func concurrentPosters(policy: NotificationBufferingPolicy) async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "mailbox.concurrent")
        let log = Log<Numbered>()
        let token = hub.observe(Numbered.self, on: .queue(queue), bufferingPolicy: policy) { log.append($0) }
        let other = hub.observe(Numbered.self, on: .queue(queue)) { _ in }  // several lanes: posts hold
        let posters = 4
        let perPoster = 5_000
        let subjects = (0..<posters).map { _ in Subject() }
        await onThreads(posters) { poster in
            for index in 0..<perPoster {
                hub.post(Numbered(poster: poster, index: index), from: subjects[poster])
            }
        }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        let delivered = log.values
        #expect(delivered.count + token.replacedCount + token.droppedCount == posters * perPoster)
        for poster in 0..<posters {
            let indices = delivered.filter { $0.poster == poster }.map(\.index)
            #expect(zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 })
            if case .latest = policy { #expect(indices.last == perPoster - 1) }
        }
        withExtendedLifetime((other, subjects)) {}
    }

    @Test("waiting posts to a bounded observer all complete under concurrent posters, with exact reports")
    func concurrentWaitingPosts() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "mailbox.waiting")
        let token = hub.observe(Numbered.self, on: .queue(queue), bufferingPolicy: .bufferingNewest(2)) { _ in }
        let latest = hub.observe(Numbered.self, on: .queue(queue), bufferingPolicy: .latest) { _ in }
        let totals = Locked(DeliveryReport())
        await onThreads(4) { poster in
            for index in 0..<500 {
                let report = hub.postAndWait(Numbered(poster: poster, index: index))
                totals.withLock { $0 = $0.merging(report) }
            }
        }
        let total = totals.withLock { $0 }
        #expect(total.deliveredCount + total.droppedCount + total.replacedCount == 2 * 2_000)
        #expect(total.droppedCount == token.droppedCount)
        #expect(total.replacedCount == latest.replacedCount)
    }
}

extension DeliveryReport {
    fileprivate func merging(_ other: DeliveryReport) -> DeliveryReport {
        DeliveryReport(
            deliveredCount: deliveredCount + other.deliveredCount, skippedCount: skippedCount + other.skippedCount,
            replacedCount: replacedCount + other.replacedCount, droppedCount: droppedCount + other.droppedCount,
            failures: failures + other.failures)
    }
}
