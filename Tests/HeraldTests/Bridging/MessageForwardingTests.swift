import Dispatch
import Foundation
import Herald
import HeraldTesting
import Testing

/// The subject of the Foundation messages in these tests.
final class Document: Sendable {}

/// A `MainActorMessage` that is `Sendable`, so it travels through a hub as itself.
struct DocumentSaved: NotificationCenter.MainActorMessage, TypedNotification, Equatable {
    typealias Subject = Document
    var pages: Int
}

/// An `AsyncMessage` forwarded both ways.
struct SyncFinished: NotificationCenter.AsyncMessage, TypedNotification, Equatable {
    typealias Subject = Document
    var changes: Int
}

/// Main-actor state that is not `Sendable`.
final class Selection {
    var items: [Int]
    init(_ items: [Int]) { self.items = items }
}

/// A `MainActorMessage` that is not `Sendable`: it reaches a hub only converted.
struct SelectionChanged: NotificationCenter.MainActorMessage {
    typealias Subject = Document
    var selection: Selection
}

/// What hub observers receive for a ``SelectionChanged``.
struct SelectionCount: TypedNotification, Equatable {
    var count: Int
}

/// A Foundation message observer whose calls a test awaits, in the order they arrive.
final class CenterInbox<Element: Sendable>: Sendable {
    private let stream: AsyncStream<Element>
    private let continuation: AsyncStream<Element>.Continuation
    private let log = Log<Element>()

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Element.self)
    }

    func receive(_ element: Element) {
        log.append(element)
        continuation.yield(element)
    }

    /// Everything received so far.
    var values: [Element] { log.values }

    /// Waits for the next `count` elements, in arrival order.
    func next(_ count: Int) async -> [Element] {
        var received: [Element] = []
        for await element in stream {
            received.append(element)
            if received.count == count { break }
        }
        return received
    }
}

@Suite("Forwarding Foundation's MainActorMessage and AsyncMessage types")
struct MessageForwardingTests {
    @Test(
        "A MainActorMessage posted on a center reaches hub observers on the main actor, a queue and an actor, once, with the subject"
    )
    @MainActor
    func mainActorMessageReachesHubObservers() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let onMain = Log<Int>()
        let onQueue = Log<Int>()
        let store = Store()
        let bridge = hub.forward(DocumentSaved.self, fromCenter: center, subject: document)
        let observations = [
            hub.observe(DocumentSaved.self, from: document, on: MainActor.shared) { note in
                MainActor.assertIsolated()
                onMain.append(note.pages)
            },
            hub.observe(DocumentSaved.self, from: document, on: .queue(DispatchQueue(label: "observer"))) {
                onQueue.append($0.pages)
            },
            hub.observe(DocumentSaved.self, from: document, on: store) { store, note in store.append(note.pages) },
        ]

        center.post(DocumentSaved(pages: 3), subject: document)
        center.post(DocumentSaved(pages: 4), subject: Document())  // another subject: not forwarded
        // Every observer has run the post above once it has run this later one.
        await hub.postAndWait(DocumentSaved(pages: 0), from: document)

        #expect(onMain.values == [3, 0])
        #expect(onQueue.values == [3, 0])
        #expect(await store.values == [3, 0])
        withExtendedLifetime((bridge, observations)) {}
    }

    @Test("Without a subject, a forward from the center forwards every message, with no subject")
    @MainActor
    func forwardWithoutSubjectCarriesNone() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let fromDocument = Log<Int>()
        let fromAnyone = Log<Int>()
        let bridge = hub.forward(DocumentSaved.self, fromCenter: center)
        let observations = [
            hub.observe(DocumentSaved.self, from: document) { fromDocument.append($0.pages) },
            hub.observe(DocumentSaved.self) { fromAnyone.append($0.pages) },
        ]

        center.post(DocumentSaved(pages: 1), subject: document)
        center.post(DocumentSaved(pages: 2))

        #expect(fromDocument.values.isEmpty)  // Foundation does not tell its observer the subject
        #expect(fromAnyone.values == [1, 2])
        withExtendedLifetime((bridge, observations)) {}
    }

    @Test(
        "An AsyncMessage posted on a center reaches hub observers on the main actor, a queue and an actor, once, with the subject",
        .timeLimit(.minutes(1)))
    func asyncMessageReachesHubObservers() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let onMain = Log<Int>()
        let onQueue = Log<Int>()
        let store = Store()
        let bridge = hub.forward(SyncFinished.self, fromCenter: center, subject: document)
        let arrivals = hub.notifications(of: SyncFinished.self, from: document)
        let observations = [
            hub.observe(SyncFinished.self, from: document, on: MainActor.shared) { note in
                MainActor.assertIsolated()
                onMain.append(note.changes)
            },
            hub.observe(SyncFinished.self, from: document, on: .queue(DispatchQueue(label: "observer"))) {
                onQueue.append($0.changes)
            },
            hub.observe(SyncFinished.self, from: document, on: store) { store, note in store.append(note.changes) },
        ]

        center.post(SyncFinished(changes: 4), subject: Document())  // another subject: not forwarded
        center.post(SyncFinished(changes: 5), subject: document)
        var iterator = arrivals.makeAsyncIterator()
        #expect(await iterator.next() == SyncFinished(changes: 5))
        await hub.postAndWait(SyncFinished(changes: 0), from: document)

        #expect(onMain.values == [5, 0])
        #expect(onQueue.values == [5, 0])
        #expect(await store.values == [5, 0])
        withExtendedLifetime((bridge, observations)) {}
    }

    @Test(
        "Hub posts reach a center's MainActorMessage observers once, at once on the main actor and in order from elsewhere"
    )
    @MainActor
    func hubPostsReachMainActorMessageObservers() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let ofDocument = CenterInbox<Int>()
        let ofAnyone = Log<Int>()
        let tokens = [
            center.addObserver(of: document, for: DocumentSaved.self) { ofDocument.receive($0.pages) },
            center.addObserver(for: DocumentSaved.self) { ofAnyone.append($0.pages) },
        ]
        let bridge = hub.forward(DocumentSaved.self, toCenter: center)

        hub.post(DocumentSaved(pages: 1), from: document)
        #expect(ofDocument.values == [1])  // on the main queue: posted on the center inside `post`
        hub.post(DocumentSaved(pages: 2))
        await onNewThread {
            for pages in 3...5 { hub.post(DocumentSaved(pages: pages), from: document) }
        }

        #expect(await ofDocument.next(4) == [1, 3, 4, 5])
        #expect(ofAnyone.values == [1, 2, 3, 4, 5])
        withExtendedLifetime((bridge, tokens)) {}
    }

    @Test("Hub posts reach a center's AsyncMessage observers once, with their subject", .timeLimit(.minutes(1)))
    func hubPostsReachAsyncMessageObservers() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let ofDocument = CenterInbox<Int>()
        let ofAnyone = CenterInbox<Int>()
        let tokens = [
            center.addObserver(of: document, for: SyncFinished.self) { ofDocument.receive($0.changes) },
            center.addObserver(for: SyncFinished.self) { ofAnyone.receive($0.changes) },
        ]
        let bridge = hub.forward(SyncFinished.self, toCenter: center)

        hub.post(SyncFinished(changes: 1), from: document)
        hub.post(SyncFinished(changes: 2))
        #expect(await ofAnyone.next(2).sorted() == [1, 2])
        hub.post(SyncFinished(changes: 3), from: document)
        // Foundation promises no order between posts: a second delivery of 1 would come before 3 or after it.
        #expect(await ofDocument.next(2).sorted() == [1, 3])
        #expect(await ofAnyone.next(1) == [3])
        withExtendedLifetime((bridge, tokens)) {}
    }

    @Test("Forwarding a MainActorMessage both ways delivers each post once on each side")
    @MainActor
    func mainActorMessageTwoWayHasNoEcho() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let hubSide = Log<Int>()
        let centerSide = CenterInbox<Int>()
        let bridges = [
            hub.forward(DocumentSaved.self, toCenter: center),
            hub.forward(DocumentSaved.self, fromCenter: center, subject: document),
        ]
        let observation = hub.observe(DocumentSaved.self, from: document) { hubSide.append($0.pages) }
        let token = center.addObserver(of: document, for: DocumentSaved.self) { centerSide.receive($0.pages) }

        hub.post(DocumentSaved(pages: 1), from: document)
        center.post(DocumentSaved(pages: 2), subject: document)
        await onNewThread { hub.post(DocumentSaved(pages: 3), from: document) }
        // The center's post of 3 and any echo of it run in one main-queue block, before this resumes.
        #expect(await centerSide.next(3) == [1, 2, 3])

        #expect(hubSide.values == [1, 2, 3])
        #expect(centerSide.values == [1, 2, 3])
        withExtendedLifetime((bridges, observation, token)) {}
    }

    @Test("Forwarding an AsyncMessage both ways delivers each post once on each side", .timeLimit(.minutes(1)))
    func asyncMessageTwoWayHasNoEcho() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let hubSide = CenterInbox<Int>()
        let centerSide = CenterInbox<Int>()
        let bridges = [
            hub.forward(SyncFinished.self, toCenter: center),
            hub.forward(SyncFinished.self, fromCenter: center),
        ]
        let observation = hub.observe(SyncFinished.self) { hubSide.receive($0.changes) }
        let token = center.addObserver(for: SyncFinished.self) { centerSide.receive($0.changes) }

        let count = 40
        for value in 1...count {
            if value.isMultiple(of: 2) {
                hub.post(SyncFinished(changes: value))
            } else {
                center.post(SyncFinished(changes: value))
            }
        }
        #expect(await centerSide.next(count).sorted() == Array(1...count))
        #expect(await hubSide.next(count).sorted() == Array(1...count))
        // Foundation delivers in no order, so an echo of a hub post could still be on its way:
        // Foundation enqueued each echo before this last post, and an echo would come back as a
        // second value below `count`.
        center.post(SyncFinished(changes: 0))
        #expect(await centerSide.next(1) == [0])
        #expect(await hubSide.next(1) == [0])

        #expect(hubSide.values.sorted() == Array(0...count))
        #expect(centerSide.values.sorted() == Array(0...count))
        withExtendedLifetime((bridges, observation, token)) {}
    }

    @Test("A MainActorMessage that is not Sendable is forwarded both ways through a conversion on the main actor")
    @MainActor
    func nonSendableMessageIsConverted() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let document = Document()
        let counts = Log<Int>()
        let centerSide = Log<[Int]>()
        let bridges = [
            hub.forward(SelectionChanged.self, fromCenter: center, subject: document, as: SelectionCount.self) {
                message in SelectionCount(count: message.selection.items.count)
            },
            hub.forward(SelectionCount.self, toCenter: center, as: SelectionChanged.self) { note in
                SelectionChanged(selection: Selection(Array(0..<note.count)))
            },
        ]
        let observation = hub.observe(SelectionCount.self, from: document) { counts.append($0.count) }
        let token = center.addObserver(of: document, for: SelectionChanged.self) {
            centerSide.append($0.selection.items)
        }

        center.post(SelectionChanged(selection: Selection([7, 8, 9])), subject: document)
        hub.post(SelectionCount(count: 2), from: document)

        #expect(counts.values == [3, 2])
        #expect(centerSide.values == [[7, 8, 9], [0, 1]])
        withExtendedLifetime((bridges, observation, token)) {}
    }

    @Test(
        "A conversion that throws and a subject of another type go to the hub's error handler, located at the forward")
    @MainActor
    func failuresGoToErrorHandler() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let received = Log<Int>()
        let bridges = [
            hub.forward(SelectionChanged.self, fromCenter: center, as: SelectionCount.self) { _ in throw Boom(code: 1)
            },
            hub.forward(DocumentSaved.self, toCenter: center),
            hub.forward(SyncFinished.self, toCenter: center),
        ]
        let observation = hub.observe(SelectionCount.self) { received.append($0.count) }

        center.post(SelectionChanged(selection: Selection([1])))
        hub.post(DocumentSaved(pages: 1), from: Subject())
        hub.post(SyncFinished(changes: 1), from: Subject())

        #expect(received.values.isEmpty)
        let values = failures.values
        #expect(values.map(\.notificationType) == ["SelectionChanged", "DocumentSaved", "SyncFinished"])
        #expect(values.allSatisfy { $0.fileID.hasSuffix("MessageForwardingTests.swift") })
        #expect((values.first?.error as? Boom) == Boom(code: 1))
        #expect(
            values.dropFirst().map { ($0.error as? MessageSubjectMismatch)?.description } == [
                "DocumentSaved is posted about a Document, but the hub post's subject is a Subject",
                "SyncFinished is posted about a Document, but the hub post's subject is a Subject",
            ])
        withExtendedLifetime((bridges, observation)) {}
    }

    @Test("Once a forward to the center is cancelled, posts still waiting for the main queue are not posted")
    @MainActor
    func cancelledForwardPostsNothingMore() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            let center = NotificationCenter()
            let centerSide = Log<Int>()
            let token = center.addObserver(for: DocumentSaved.self) { centerSide.append($0.pages) }
            let cancelled = hub.forward(DocumentSaved.self, toCenter: center)

            await postOffMainActor(DocumentSaved(pages: 1), on: hub)  // waits for the main actor
            cancelled.cancel()
            await main.runUntilIdle()
            #expect(centerSide.values.isEmpty)

            let kept = hub.forward(DocumentSaved.self, toCenter: center)
            await postOffMainActor(DocumentSaved(pages: 2), on: hub)
            #expect(centerSide.values.isEmpty)
            await main.runUntilIdle()
            #expect(centerSide.values == [2])
            withExtendedLifetime((token, kept)) {}
        }
    }
}

/// Posts from the global executor, in a task that keeps the caller's task-local values (the
/// main-actor stand-in).
nonisolated func postOffMainActor(_ note: DocumentSaved, on hub: NotificationHub) async {
    hub.post(note)
}
