import Dispatch
import Foundation
import Herald
import Testing

/// Lets `count` callers through together, once all of them have arrived: it stops callers that
/// run one at a time for good, so a test that uses it states a time limit.
actor Rendezvous {
    private let count: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) {
        self.count = count
    }

    func arrive() async {
        arrived += 1
        if arrived == count {
            for continuation in waiting { continuation.resume() }
            waiting = []
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}

/// The differences between Foundation's typed messages and Herald that the migration article's
/// table lists, each shown on both sides where the toolchain lets it run.
@Suite("Migrating from MainActorMessage and AsyncMessage: the differences")
struct MessageMigrationTests {
    @Test("Foundation calls an AsyncMessage observer for several posts at once", .timeLimit(.minutes(1)))
    func foundationCallsAsyncObserverConcurrently() async {
        let center = NotificationCenter()
        let rendezvous = Rendezvous(count: 2)
        let finished = CenterInbox<Int>()
        let token = center.addObserver(for: SyncFinished.self) { message in
            await rendezvous.arrive()  // returns only once both calls are in it
            finished.receive(message.changes)
        }

        center.post(SyncFinished(changes: 1))
        center.post(SyncFinished(changes: 2))

        #expect(await finished.next(2).sorted() == [1, 2])
        withExtendedLifetime(token) {}
    }

    @Test("Herald calls an async observer one call at a time, in post order")
    func heraldCallsAsyncObserverOneAtATime() async {
        let hub = NotificationHub()
        let events = Log<String>()
        let finished = CenterInbox<Int>()
        let observation = hub.observe(SyncFinished.self, on: .queue(DispatchQueue(label: "sync"))) { note in
            events.append("start \(note.changes)")
            await Task.yield()
            events.append("end \(note.changes)")
            finished.receive(note.changes)
        }

        for changes in 1...3 { hub.post(SyncFinished(changes: changes)) }

        #expect(await finished.next(3) == [1, 2, 3])
        #expect(events.values == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"])
        withExtendedLifetime(observation) {}
    }

    @Test("Foundation's message sequence receives from makeAsyncIterator() on, Herald's from notifications(of:) on")
    func sequencesStartAtDifferentCalls() async throws {
        let center = NotificationCenter()
        let messages = center.messages(for: SyncFinished.self)
        center.post(SyncFinished(changes: 1))  // before the iterator: not received
        var messageIterator = messages.makeAsyncIterator()
        center.post(SyncFinished(changes: 2))
        #expect(try await messageIterator.next() == SyncFinished(changes: 2))

        let hub = NotificationHub()
        let notes = hub.notifications(of: SyncFinished.self)
        hub.post(SyncFinished(changes: 1))  // before the iterator: received
        var noteIterator = notes.makeAsyncIterator()
        hub.post(SyncFinished(changes: 2))
        #expect(await noteIterator.next() == SyncFinished(changes: 1))
        #expect(await noteIterator.next() == SyncFinished(changes: 2))
    }

    @Test("Foundation's message sequence keeps the newest 10 messages; Herald's keeps what its bufferingPolicy says")
    func sequenceBuffers() async throws {
        let center = NotificationCenter()
        var messages = center.messages(for: SyncFinished.self).makeAsyncIterator()
        for changes in 1...12 { center.post(SyncFinished(changes: changes)) }
        #expect(try await messages.next() == SyncFinished(changes: 3))

        let hub = NotificationHub()
        var newest = hub.notifications(of: SyncFinished.self, bufferingPolicy: .bufferingNewest(10)).makeAsyncIterator()
        var everything = hub.notifications(of: SyncFinished.self).makeAsyncIterator()
        for changes in 1...12 { hub.post(SyncFinished(changes: changes)) }
        #expect(await newest.next() == SyncFinished(changes: 3))
        #expect(await everything.next() == SyncFinished(changes: 1))
    }

    @Test("Herald calls observers in registration order; Foundation calls each once, in an order it does not promise")
    @MainActor
    func observerOrder() {
        let center = NotificationCenter()
        let hub = NotificationHub()
        let foundationOrder = Log<Int>()
        let heraldOrder = Log<Int>()
        let tokens = (0..<8).map { index in
            center.addObserver(for: DocumentSaved.self) { _ in foundationOrder.append(index) }
        }
        let observations = (0..<8).map { index in
            hub.observe(DocumentSaved.self) { _ in heraldOrder.append(index) }
        }

        center.post(DocumentSaved(pages: 1))
        hub.post(DocumentSaved(pages: 1))

        #expect(heraldOrder.values == Array(0..<8))
        #expect(foundationOrder.values.sorted() == Array(0..<8))
        withExtendedLifetime((tokens, observations)) {}
    }

    @Test("Herald counts a post that no observer receives")
    func unobservedPostIsCounted() {
        let hub = NotificationHub()
        hub.post(SyncFinished(changes: 1))
        #expect(hub.unobservedPostCount == 1)
    }
}
