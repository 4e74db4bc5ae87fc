import Dispatch
import Herald
import Synchronization
import Testing

private struct Tick: TypedNotification, Equatable {
    let value: Int
}

private final class Source: Sendable {}

/// Reads from `sequence` until `last` arrives or the sequence ends.
private func collect(_ sequence: NotificationSequence<Tick>, through last: Int) async -> [Int] {
    var values: [Int] = []
    for await tick in sequence {
        values.append(tick.value)
        if tick.value == last { break }
    }
    return values
}

@Suite("NotificationSequence")
struct NotificationSequenceTests {
    @Test("Notifications posted after the sequence is made arrive in post order, even before iteration starts")
    func deliversInPostOrder() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self)
        for value in 1...5 {
            hub.post(Tick(value: value))
        }
        #expect(await collect(ticks, through: 5) == [1, 2, 3, 4, 5])
        #expect(ticks.droppedCount == 0)
    }

    @Test("The unbounded policy keeps every notification for a slow consumer and drops nothing")
    func unboundedKeepsEverything() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .unbounded)
        for value in 1...1_000 {
            hub.post(Tick(value: value))
        }
        #expect(await collect(ticks, through: 1_000) == Array(1...1_000))
        #expect(ticks.droppedCount == 0)
    }

    @Test("bufferingNewest keeps the newest notifications for a slow consumer and counts the drops")
    func bufferingNewestKeepsNewest() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(3))
        for value in 1...10 {
            hub.post(Tick(value: value))
        }
        #expect(ticks.droppedCount == 7)
        let consumer = Task { await collect(ticks, through: 11) }
        hub.post(Tick(value: 11))
        // 11 either reaches the waiting consumer or pushes out 8: both are counted.
        let values = await consumer.value
        #expect(values == [8, 9, 10, 11] || values == [9, 10, 11])
        #expect(ticks.droppedCount == 7 + (4 - values.count))
    }

    @Test("bufferingOldest keeps the oldest notifications for a slow consumer and counts the drops")
    func bufferingOldestKeepsOldest() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingOldest(3))
        for value in 1...10 {
            hub.post(Tick(value: value))
        }
        #expect(ticks.droppedCount == 7)
        var iterator = ticks.makeAsyncIterator()
        var values: [Int] = []
        for _ in 0..<3 {
            if let tick = await iterator.next() { values.append(tick.value) }
        }
        #expect(values == [1, 2, 3])
        hub.post(Tick(value: 11))
        #expect(await iterator.next() == Tick(value: 11), "the buffer had room again")
        #expect(ticks.droppedCount == 7)
    }

    @Test("latest per subject keeps the newest notification of each subject, as an observer's mailbox does")
    func latestPerSubjectKeepsEachSubjectsNewest() async {
        let hub = NotificationHub()
        let first = Source()
        let second = Source()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .latest(perSubject: true))
        hub.post(Tick(value: 1), from: first)
        hub.post(Tick(value: 2), from: second)
        hub.post(Tick(value: 3), from: first)
        hub.post(Tick(value: 4), from: second)
        #expect(await collect(ticks, through: 4) == [3, 4], "in the order of the newest posts")
        #expect(ticks.droppedCount == 2)
    }

    @Test("A stream's buffering policy and what it discarded show in registrations(of:)")
    func registrationsShowTheStreamsPolicy() {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(2))
        for value in 1...5 { hub.post(Tick(value: value)) }
        let registration = hub.registrations(of: Tick.self).first
        #expect(registration?.bufferingPolicy == .bufferingNewest(2))
        #expect(registration?.droppedCount == 3)
        #expect(ticks.droppedCount == 3)
    }

    @Test("A limit of zero keeps nothing, but still hands a notification to a waiting consumer")
    func zeroLimitOnlyFeedsWaitingConsumer() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(0))
        hub.post(Tick(value: 1))
        #expect(ticks.droppedCount == 1)
        let received = Atomic<Bool>(false)
        let consumer = Task {
            var iterator = ticks.makeAsyncIterator()
            let tick = await iterator.next()
            received.store(true, ordering: .releasing)
            return tick
        }
        // Post until the consumer, once it waits, gets one; every other post is counted as dropped.
        var posted = 1
        while !received.load(ordering: .acquiring) && posted < 10_000_000 {
            posted += 1
            hub.post(Tick(value: posted))
            await Task.yield()
        }
        let tick = await consumer.value
        #expect(tick != nil && tick != Tick(value: 1))
        #expect(ticks.droppedCount == posted - 1)
    }

    @Test(
        "A slow consumer racing a fast poster under bufferingNewest gets increasing values, the last one, and every drop counted"
    )
    func bufferingNewestUnderConcurrentPosts() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(4))
        let total = 20_000
        let consumer = Task { await collect(ticks, through: total) }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                for value in 1...total {
                    hub.post(Tick(value: value))
                }
                done.resume()
            }
        }
        let values = await consumer.value
        #expect(values.last == total, "the newest value is never dropped")
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "order is kept")
        #expect(values.count + ticks.droppedCount == total, "every notification is received or counted")
    }

    @Test("Notifications posted from 4 threads all arrive, in each thread's order")
    func postsFromFourThreadsAllArrive() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self)
        let perThread = 1_000
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<perThread {
                hub.post(Tick(value: thread * perThread + index))
            }
        }
        var iterator = ticks.makeAsyncIterator()
        var values: [Int] = []
        for _ in 0..<(4 * perThread) {
            if let tick = await iterator.next() { values.append(tick.value) }
        }
        #expect(values.count == 4 * perThread)
        for thread in 0..<4 {
            let mine = values.filter { $0 / perThread == thread }
            #expect(mine == Array((thread * perThread)..<((thread + 1) * perThread)))
        }
    }

    @Test("Cancelling the consuming task ends the sequence and removes the observer")
    func cancellingTaskEndsSequence() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self)
        #expect(hub.observerCount(of: Tick.self) == 1)
        let (arrivals, arrived) = AsyncStream.makeStream(of: Int.self)
        let consumer = Task {
            var values: [Int] = []
            for await tick in ticks {
                values.append(tick.value)
                arrived.yield(tick.value)
            }
            return values
        }
        hub.post(Tick(value: 1))
        for await _ in arrivals { break }  // the consumer has received 1 and is iterating
        consumer.cancel()
        let values = await consumer.value  // returns only because the loop ended
        #expect(values == [1])
        #expect(hub.observerCount(of: Tick.self) == 0)
        hub.post(Tick(value: 2))
        #expect(hub.unobservedPostCount == 1, "nobody observes any more")
    }

    @Test("A task cancelled before it iterates gets nil at once, and the observer is removed")
    func cancelledTaskGetsNil() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self)
        hub.post(Tick(value: 1))
        let consumer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = ticks.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(await consumer.value == nil)
        #expect(hub.observerCount(of: Tick.self) == 0)
    }

    @Test("Letting go of the sequence and its iterator removes the observer")
    func droppingSequenceRemovesObserver() async {
        let hub = NotificationHub()
        do {
            let ticks = hub.notifications(of: Tick.self)
            var iterator = ticks.makeAsyncIterator()
            hub.post(Tick(value: 1))
            #expect(await iterator.next() == Tick(value: 1))
            #expect(hub.observerCount(of: Tick.self) == 1)
        }
        #expect(hub.observerCount(of: Tick.self) == 0)
    }

    @Test("cancel() ends the sequence for a waiting consumer and removes the observer")
    func cancelEndsSequence() async {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self)
        let consumer = Task { await collect(ticks, through: .max) }
        hub.post(Tick(value: 1))
        ticks.cancel()
        let values = await consumer.value
        #expect(values == [] || values == [1])
        #expect(hub.observerCount(of: Tick.self) == 0)
        ticks.cancel()  // a second call does nothing
    }

    @Test("A sequence from a subject only receives that subject's posts")
    func subjectFilter() async {
        let hub = NotificationHub()
        let mine = Source()
        let other = Source()
        let ticks = hub.notifications(of: Tick.self, from: mine)
        hub.post(Tick(value: 1), from: other)
        hub.post(Tick(value: 2), from: mine)
        hub.post(Tick(value: 3))
        hub.post(Tick(value: 4), from: mine)
        #expect(await collect(ticks, through: 4) == [2, 4])
    }

    @Test("A sequence with replayLatest starts with the retained value")
    func replayLatest() async {
        let hub = NotificationHub()
        hub.postAndRetain(Tick(value: 1))
        let ticks = hub.notifications(of: Tick.self, replayLatest: true)
        hub.post(Tick(value: 2))
        #expect(await collect(ticks, through: 2) == [1, 2])
    }

    @Test("The sequence reports the policy it was made with")
    func reportsPolicy() {
        let hub = NotificationHub()
        let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingOldest(8))
        #expect(ticks.bufferingPolicy == .bufferingOldest(8))
        #expect(ticks.bufferingPolicy.description == "bufferingOldest(8)")
    }
}
