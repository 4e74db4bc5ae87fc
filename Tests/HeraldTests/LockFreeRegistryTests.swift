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
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    @Test("posting-thread observers run in registration order across list growth")
    func registrationOrderAcrossGrowth() {
        let hub = NotificationHub()
        let log = Log()
        var tokens: [Observation] = []
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
        let added = Mutex<[Observation]>([])
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
        var tokens: [Observation] = []
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
        let tokens = Mutex<[Observation]>([])
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
        var tokens: [Observation] = []
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
        let seen = Mutex<[Int]>([])
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
