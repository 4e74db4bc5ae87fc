import Dispatch
import Synchronization
import Testing

@testable import Herald

/// The lock-free post path (`Bucket.post`, `ObserverList`, `TypeIndex`) under registration,
/// cancellation and compaction, including from other threads while posts run.
@Suite("Lock-free registry")
struct LockFreeRegistryTests {
    struct Ping: TypedNotification { let value: Int }
    struct Other: TypedNotification {}
    struct Tick<T>: TypedNotification {}

    final class Log: Sendable {
        let entries = Locked<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    @Test("posting-thread observers run in registration order across list growth")
    func registrationOrderAcrossGrowth() {
        let hub = NotificationHub()
        let log = Log()
        var tokens: [ObservationToken] = []
        for index in 0..<37 {
            tokens.append(hub.observe(Ping.self) { _ in log.add("\(index)") })
        }
        hub.post(Ping(value: 1))
        #expect(log.all == (0..<37).map { "\($0)" })
        withExtendedLifetime(tokens) {}
    }

    @Test("an observer added during a post does not receive that post")
    func membershipAtPostTime() {
        let hub = NotificationHub()
        let log = Log()
        let added = Locked<[ObservationToken]>([])
        let first = hub.observe(Ping.self) { note in
            log.add("first \(note.value)")
            let token = hub.observe(Ping.self) { note in log.add("late \(note.value)") }
            added.withLock { $0.append(token) }
        }
        hub.post(Ping(value: 1))
        #expect(log.all == ["first 1"])
        hub.post(Ping(value: 2))
        #expect(log.all.prefix(3) == ["first 1", "first 2", "late 2"])
        withExtendedLifetime(first) {}
    }

    @Test("cancelled observers are skipped, and compaction keeps the others in order")
    func cancelAndCompact() {
        let hub = NotificationHub()
        let log = Log()
        var tokens: [ObservationToken] = []
        for index in 0..<100 {
            tokens.append(hub.observe(Ping.self) { _ in log.add("\(index)") })
        }
        for index in stride(from: 0, to: 100, by: 3) { tokens[index].cancel() }
        hub.post(Ping(value: 1))
        let expected = (0..<100).filter { $0 % 3 != 0 }.map { "\($0)" }
        #expect(log.all == expected)
        #expect(hub.observerCount(of: Ping.self) == expected.count)
        for token in tokens { token.cancel() }
        hub.post(Ping(value: 2))
        #expect(log.all == expected)
        #expect(hub.unobservedPostCount == 1)
    }

    @Test("a handler that cancels every observer, itself included, finishes the post safely")
    func cancelEverythingFromAHandler() {
        let hub = NotificationHub()
        let log = Log()
        let tokens = Locked<[ObservationToken]>([])
        for index in 0..<40 {
            let token = hub.observe(Ping.self) { _ in
                log.add("\(index)")
                for token in tokens.withLock({ $0 }) { token.cancel() }
            }
            tokens.withLock { $0.append(token) }
        }
        hub.post(Ping(value: 1))
        #expect(log.all == ["0"])
        tokens.withLock { $0 = [] }
        hub.post(Ping(value: 2))
        #expect(log.all == ["0"])
    }

    @Test("posts find types registered after many other types")
    func manyTypes() {
        let hub = NotificationHub()
        let log = Log()
        var tokens: [ObservationToken] = []
        func register<T: TypedNotification>(_ type: T.Type, _ name: String) {
            tokens.append(hub.observe(type) { _ in log.add(name) })
        }
        func walk<T: TypedNotification>(_ type: T.Type, depth: Int) {
            register(type, "\(depth)")
            if depth < 300 { walk(Tick<T>.self, depth: depth + 1) }
        }
        walk(Other.self, depth: 0)
        tokens.append(hub.observe(Ping.self) { _ in log.add("ping") })
        hub.post(Ping(value: 1))
        hub.post(Tick<Tick<Other>>())
        hub.post(Other())
        #expect(log.all == ["ping", "2", "0"])
    }

    @Test("concurrent registration, cancellation and posting deliver to every long-lived observer")
    func concurrentChurn() async {
        let hub = NotificationHub()
        let stable = Atomic<Int>(0)
        let stableToken = hub.observe(Ping.self) { _ in stable.add(1, ordering: .relaxed) }
        let posts = 20_000
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for index in 0..<posts { hub.post(Ping(value: index)) }
            }
            group.addTask {
                for _ in 0..<2_000 {
                    let tokens = (0..<5).map { _ in hub.observe(Ping.self) { _ in } }
                    for token in tokens { token.cancel() }
                }
            }
        }
        #expect(stable.load(ordering: .relaxed) == posts)
        withExtendedLifetime(stableToken) {}
    }

    @Test("a queued observer receives posts in order alongside posting-thread observers")
    func queuedAndPosting() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.queue")
        let seen = Locked<[Int]>([])
        let count = 1_000
        await confirmation { done in
            let finished = DispatchSemaphore(value: 0)
            let token = hub.observe(Ping.self, on: .queue(queue)) { note in
                let total = seen.withLock { seen -> Int in
                    seen.append(note.value)
                    return seen.count
                }
                if total == count { finished.signal() }
            }
            let posting = hub.observe(Ping.self) { _ in }
            for index in 0..<count { hub.post(Ping(value: index)) }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    finished.wait()
                    continuation.resume()
                }
            }
            done()
            withExtendedLifetime((token, posting)) {}
        }
        #expect(seen.withLock { $0 } == Array(0..<count))
    }
}

/// The waiting and queued paths rebuilt on the lock-free lists and the raw item queue.
@Suite("Waiting posts and lanes")
struct WaitingPostTests {
    struct Ping: TypedNotification { let value: Int }
    struct Boom: Error {}
    final class Subject: Sendable {}
    final class Owner: Sendable {}

    @Test("postAndWait returns after a queued observer ran, with its report")
    func postAndWaitReports() {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.wait")
        let seen = Locked<[Int]>([])
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in seen.withLock { $0.append(note.value) } }
        let posting = hub.observe(Ping.self) { _ in throw Boom() }
        hub.errorHandler = { _ in }
        let report = hub.postAndWait(Ping(value: 3))
        #expect(seen.withLock { $0 } == [3])
        #expect(report.deliveredCount == 2)
        #expect(report.failures.count == 1)
        withExtendedLifetime((token, posting)) {}
    }

    @Test("postAndWait from the observer's own queue runs it inline")
    func postAndWaitInline() {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.inline")
        let seen = Locked<[Int]>([])
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in seen.withLock { $0.append(note.value) } }
        let report = queue.sync { hub.postAndWait(Ping(value: 5)) }
        #expect(report.deliveredCount == 1)
        #expect(seen.withLock { $0 } == [5])
        withExtendedLifetime(token) {}
    }

    @Test("deliver suspends until queued observers ran")
    func deliverAwaits() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.deliver")
        let seen = Locked<[Int]>([])
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in seen.withLock { $0.append(note.value) } }
        let report = await hub.postAndWait(Ping(value: 8))
        #expect(report.deliveredCount == 1)
        #expect(seen.withLock { $0 } == [8])
        withExtendedLifetime(token) {}
    }

    @Test("cancel drops queued notifications, including one a timed-out wait left behind")
    func cancelDropsQueued() {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.cancel")
        let seen = Locked<[Int]>([])
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in seen.withLock { $0.append(note.value) } }
        queue.suspend()
        for index in 0..<100 { hub.post(Ping(value: index)) }
        #expect(throws: DeliveryTimeout.self) {
            try hub.postAndWait(Ping(value: 100), timeout: .milliseconds(20))
        }
        token.cancel()
        queue.resume()
        queue.sync {}
        #expect(seen.withLock { $0 }.isEmpty)
        #expect(hub.observerCount(of: Ping.self) == 0)
    }

    @Test("subject filters apply on every target")
    func subjectFilters() {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.subject")
        let subject = Subject()
        let other = Subject()
        let seen = Locked<[String]>([])
        let a = hub.observe(Ping.self, from: subject) { note in seen.withLock { $0.append("posting \(note.value)") } }
        let b = hub.observe(Ping.self, from: subject, on: .queue(queue)) { note in
            seen.withLock { $0.append("queue \(note.value)") }
        }
        hub.post(Ping(value: 1), from: other)
        hub.post(Ping(value: 2), from: subject)
        hub.post(Ping(value: 3))
        queue.sync {}
        #expect(seen.withLock { $0 }.sorted() == ["posting 2", "queue 2"])
        withExtendedLifetime((a, b, subject, other)) {}
    }

    @Test("an owner observation ends when its owner is deallocated")
    func ownerLifetime() {
        let hub = NotificationHub()
        let seen = Locked<Int>(0)
        var owner: Owner? = Owner()
        hub.observe(Ping.self, owner: owner!) { _, _ in seen.withLock { $0 += 1 } }
        hub.post(Ping(value: 1))
        owner = nil
        hub.post(Ping(value: 2))
        #expect(seen.withLock { $0 } == 1)
        #expect(hub.observerCount(of: Ping.self) == 0)
        withExtendedLifetime(owner) {}
    }

    @Test("a burst keeps order and payloads with references survive the lane")
    func burstWithReferences() {
        struct Named: TypedNotification {
            let name: String
            let index: Int
        }
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "test.burst")
        let seen = Locked<[Int]>([])
        let token = hub.observe(Named.self, on: .queue(queue)) { note in
            #expect(note.name == "item \(note.index)")
            seen.withLock { $0.append(note.index) }
        }
        for index in 0..<5_000 { hub.post(Named(name: "item \(index)", index: index)) }
        hub.postAndWait(Named(name: "item 5000", index: 5_000))
        #expect(seen.withLock { $0 } == Array(0...5_000))
        withExtendedLifetime(token) {}
    }
}
