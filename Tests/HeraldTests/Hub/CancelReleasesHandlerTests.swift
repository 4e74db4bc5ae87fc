import Dispatch
import Foundation
import Herald
import Testing

/// What a handler captures: the test watches it through a weak reference.
private final class HandlerCapture: Sendable {
    func touch() {}
}

/// `cancel()` lets go of the handler, and of what it captures, before it returns, while the caller
/// still holds the observation: a `self` → token → handler → `self` cycle ends with `cancel()`.
@Suite("cancel() releases the handler before it returns")
struct CancelReleasesHandlerTests {
    /// A way to observe, given the handler's capture; it returns the observation.
    fileprivate typealias Form = @Sendable (NotificationHub, HandlerCapture) -> ObservationToken

    /// Registers with `form`, optionally posts so that a delivery waits on its target, cancels,
    /// and checks that the capture is gone while the observation is still held.
    private func expectReleased(
        _ name: String, post: Bool = false, hub: NotificationHub = NotificationHub(), form: Form,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        weak var weakCapture: HandlerCapture?
        let token: ObservationToken
        do {
            let captured = HandlerCapture()
            weakCapture = captured
            token = form(hub, captured)
        }
        #expect(
            weakCapture != nil, "\(name): the hub holds the handler while it observes", sourceLocation: sourceLocation)
        if post { hub.post(Ping(value: 1)) }
        token.cancel()
        #expect(weakCapture == nil, "\(name): released by cancel()", sourceLocation: sourceLocation)
        #expect(token.isCancelled, sourceLocation: sourceLocation)
        withExtendedLifetime(token) {}
    }

    @Test("Every synchronous form on the posting thread, with a subject, a priority, an owner, a family and a tap")
    func postingThread() {
        let subject = Subject()
        let owner = Subject()
        expectReleased("plain") { hub, c in hub.observe(Ping.self) { _ in c.touch() } }
        expectReleased("plain, posted") { hub, c in
            let token = hub.observe(Ping.self) { _ in c.touch() }
            hub.post(Ping(value: 1))
            return token
        }
        expectReleased("from: subject", post: true) { hub, c in
            hub.observe(Ping.self, from: subject) { _ in c.touch() }
        }
        expectReleased("priority", post: true) { hub, c in hub.observe(Ping.self, priority: 3) { _ in c.touch() } }
        expectReleased("owner:", post: true) { hub, c in hub.observe(Ping.self, owner: owner) { _, _ in c.touch() } }
        expectReleased("family", post: true) { hub, c in
            hub.observe(every: (any Sendable).self) { _ in c.touch() }
        }
        expectReleased("tap", post: true) { hub, c in hub.observeAll { _ in c.touch() } }
        expectReleased("replayLatest") { hub, c in
            hub.postAndRetain(Ping(value: 1))
            return hub.observe(Ping.self, replayLatest: true) { _ in c.touch() }
        }
    }

    @Test("Forms whose deliveries wait on their target: released although a delivery job is still queued")
    func queuedDeliveries() {
        let manual = ManualExecutor()
        let target = DeliveryTarget.executor(manual)
        let owner = Subject()
        expectReleased("executor", post: true) { hub, c in hub.observe(Ping.self, on: target) { _ in c.touch() } }
        expectReleased("executor, latest", post: true) { hub, c in
            hub.observe(Ping.self, on: target, bufferingPolicy: .latest) { _ in c.touch() }
        }
        expectReleased("executor, owner:", post: true) { hub, c in
            hub.observe(Ping.self, owner: owner, on: target) { _, _ in c.touch() }
        }
        expectReleased("executor, async", post: true) { hub, c in
            hub.observe(Ping.self, on: target) { _ async in c.touch() }
        }
        expectReleased("executor, family", post: true) { hub, c in
            hub.observe(every: (any Sendable).self, on: target) { _ in c.touch() }
        }
        expectReleased("executor, family, async", post: true) { hub, c in
            hub.observe(every: (any Sendable).self, on: target) { _ async in c.touch() }
        }
        expectReleased("executor, tap", post: true) { hub, c in hub.observeAll(on: target) { _ in c.touch() } }
        #expect(manual.pendingCount > 0, "the delivery jobs are still queued")
        while manual.runNext() {}  // they run nothing: every observation ended
    }

    @Test("An async call whose task waits on its target: released by cancel(), and the call never runs")
    func asyncCallWaitingForItsTask() {
        let manual = ManualExecutor()
        let target = DeliveryTarget.executor(manual)
        let calls = Counter()
        expectReleased("executor, async, drained") { hub, c in
            let token = hub.observe(Ping.self, on: target) { _ async in
                c.touch()
                calls.increment()
            }
            hub.post(Ping(value: 1))
            #expect(manual.runNext(), "the drain job")  // it starts the call's task, which waits on the executor
            return token
        }
        expectReleased("executor, family, async, drained") { hub, c in
            let token = hub.observe(every: (any Sendable).self, on: target) { _ async in
                c.touch()
                calls.increment()
            }
            hub.post(Ping(value: 1))
            #expect(manual.runNext(), "the drain job")
            return token
        }
        #expect(manual.pendingCount > 0, "the calls' tasks are still queued")
        while manual.runNext() {}
        #expect(calls.count == 0)
    }

    @Test("Main-actor and actor forms, synchronous and async")
    func isolatedForms() {
        let store = Store()
        let owner = Subject()
        expectReleased("MainActor") { hub, c in hub.observe(Ping.self, on: MainActor.shared) { _ in c.touch() } }
        expectReleased("MainActor, async") { hub, c in
            hub.observe(Ping.self, on: MainActor.shared) { _ async in c.touch() }
        }
        expectReleased("MainActor, owner:") { hub, c in
            hub.observe(Ping.self, owner: owner, on: MainActor.shared) { _, _ in c.touch() }
        }
        expectReleased("actor") { hub, c in hub.observe(Ping.self, on: store) { _, _ in c.touch() } }
        expectReleased("actor, async") { hub, c in hub.observe(Ping.self, on: store) { _, _ async in c.touch() } }
        expectReleased("family, MainActor") { hub, c in
            hub.observe(every: (any Sendable).self, on: MainActor.shared) { _ in c.touch() }
        }
    }

    @Test("A delivery job blocked on a serial queue: released by cancel(), and the job then runs nothing")
    func blockedQueue() async {
        let queue = DispatchQueue(label: "blocked")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }  // a private queue, never the main one
        let calls = Counter()
        expectReleased("queue", post: true) { hub, c in
            hub.observe(Ping.self, on: .queue(queue)) { _ in
                c.touch()
                calls.increment()
            }
        }
        gate.signal()
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
        #expect(calls.count == 0)
    }
}

@Suite("cancel() during a call on another thread")
struct CancelDuringACallTests {
    @Test("The running call keeps its handler until it returns, and no later one starts")
    func runningCallReleasesWhenItReturns() async {
        let queue = DispatchQueue(label: "running")
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let hub = NotificationHub()
        weak var weakCapture: HandlerCapture?
        let calls = Counter()
        let token: ObservationToken
        do {
            let captured = HandlerCapture()
            weakCapture = captured
            token = hub.observe(Ping.self, on: .queue(queue)) { _ in
                captured.touch()
                calls.increment()
                entered.signal()
                proceed.wait()  // a private queue, never the main one
            }
        }
        hub.post(Ping(value: 1))
        hub.post(Ping(value: 2))
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                entered.wait()
                continuation.resume()
            }
        }
        token.cancel()
        #expect(weakCapture != nil, "the call running on the queue still holds its handler")
        proceed.signal()
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
        #expect(weakCapture == nil, "released once the call returned")
        #expect(calls.count == 1, "the second delivery never started")
        withExtendedLifetime(token) {}
    }
}

@Suite("A token read from several threads while it is cancelled")
struct TokenRaceTests {
    @Test("Every reader sees the live or the ended observation, and the counts survive the cancel")
    func readersDuringCancel() {
        let hub = NotificationHub()
        for round in 0..<200 {
            let manual = ManualExecutor()
            let token = hub.observe(Ping.self, on: .executor(manual), bufferingPolicy: .latest) { _ in }
            hub.post(Ping(value: 1))
            hub.post(Ping(value: 2))  // replaces the first
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                if index == 0 {
                    token.cancel()
                    return
                }
                for _ in 0..<50 {
                    #expect(token.replacedCount == 1)
                    #expect(token.bufferingPolicy == .latest)
                    _ = token.isCancelled
                }
            }
            #expect(token.isCancelled, "round \(round)")
            #expect(token.replacedCount == 1 && token.droppedCount == 0)
            while manual.runNext() {}
        }
    }
}
