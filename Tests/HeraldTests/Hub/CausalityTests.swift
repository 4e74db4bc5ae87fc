import Dispatch
import Foundation
import Herald
import Testing

/// Causal order: when a handler of A posts B, every observer on an asynchronous target, and every
/// stream, that receives both sees A first, whatever the pair of targets.
@Suite("Causal order")
struct CausalityTests {
    /// The kinds of asynchronous target.
    enum Place: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case mainActor, serialQueue, concurrentQueue, operationQueue, deliveryThread, actor, executor
        var testDescription: String { rawValue }
    }

    static let rounds = 200

    @Test(
        "A reactor that reposts, and a watcher: the watcher and a stream see each cause before its effect",
        arguments: Place.allCases, Place.allCases)
    func causeBeforeEffect(reactorPlace: Place, watcherPlace: Place) async {
        let hub = NotificationHub()
        let places = Places()
        let rounds = Self.rounds
        // The reactor registers first, so a post reaches its lane first.
        let reactor = places.observe(hub, on: reactorPlace) { [weak hub] event in
            if event.isCause { hub?.post(Event(round: event.round, isCause: false)) }
        }
        let seen = Log<Event>()
        let done = Countdown(2 * rounds)
        let watcher = places.observe(hub, on: watcherPlace) { event in
            seen.append(event)
            done.arrive()
        }
        let stream = hub.notifications(of: Event.self)
        let streamed = Task {
            var events: [Event] = []
            for await event in stream {
                events.append(event)
                if events.count == 2 * rounds { break }
            }
            return events
        }
        await onNewThread {
            for round in 0..<rounds {
                hub.post(Event(round: round, isCause: true))
            }
        }
        await done.wait()
        let streamEvents = await streamed.value
        #expect(Self.violations(in: seen.values, rounds: rounds) == 0)
        #expect(Self.violations(in: streamEvents, rounds: rounds) == 0)
        reactor.cancel()
        watcher.cancel()
        stream.cancel()
        await places.thread.shutdownGracefully()
    }

    /// The rounds whose effect came before its cause, or that are incomplete.
    static func violations(in events: [Event], rounds: Int) -> Int {
        var causeIndex = [Int: Int]()
        var effectIndex = [Int: Int]()
        for (index, event) in events.enumerated() {
            if event.isCause { causeIndex[event.round] = index } else { effectIndex[event.round] = index }
        }
        return (0..<rounds).count { round in
            guard let cause = causeIndex[round], let effect = effectIndex[round] else { return true }
            return effect < cause
        }
    }

    // MARK: The interleaving that broke it, made deterministic

    /// The reactor's executor runs its drain job on another thread the moment it is enqueued, and
    /// the posting thread waits inside `enqueue` until that drain is done: the drain reacts (posts
    /// the effect) while the post of the cause may not have reached the watcher's lane yet.
    @Test("A drain that reacts while the post is still under way cannot put the effect first")
    func drainReactsMidPost() async {
        let hub = NotificationHub()
        let reactorExecutor = ManualExecutor()
        let watcherExecutor = ManualExecutor()
        let reactor = hub.observe(Event.self, on: .executor(reactorExecutor)) { [weak hub] event in
            if event.isCause { hub?.post(Event(round: event.round, isCause: false)) }
        }
        let seen = Log<Event>()
        let watcher = hub.observe(Event.self, on: .executor(watcherExecutor)) { seen.append($0) }
        let stream = hub.notifications(of: Event.self)
        reactorExecutor.onEnqueue { job in
            let done = DispatchSemaphore(value: 0)
            Thread {
                job()
                done.signal()
            }.start()
            done.wait()
            return true
        }

        hub.post(Event(round: 0, isCause: true))
        reactorExecutor.onEnqueue(nil)
        watcherExecutor.runUntilIdle()

        #expect(seen.values == [Event(round: 0, isCause: true), Event(round: 0, isCause: false)])
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        #expect([first, second] == [Event(round: 0, isCause: true), Event(round: 0, isCause: false)])
        reactor.cancel()
        watcher.cancel()
        stream.cancel()
    }
}

/// The notification of the causality tests: a cause, or the effect a reactor posts for it.
struct Event: TypedNotification, Equatable {
    let round: Int
    let isCause: Bool
}

/// One target of each kind, and a way to observe on any of them with the closure form it takes.
final class Places: Sendable {
    actor Sink {}

    let serial = DispatchQueue(label: "causality.serial")
    let concurrent = DispatchQueue(label: "causality.concurrent", attributes: .concurrent)
    let operations: DeliveryTarget = {
        let queue = OperationQueue()
        queue.name = "causality.operations"
        return .operationQueue(queue)
    }()
    let thread = DeliveryThread(name: "causality")
    let sink = Sink()
    let executor = QueueExecutor(label: "causality.executor")

    func observe(
        _ hub: NotificationHub, on place: CausalityTests.Place, _ body: @escaping @Sendable (Event) -> Void
    ) -> ObservationToken {
        switch place {
        case .mainActor: return hub.observe(Event.self, on: MainActor.shared) { body($0) }
        case .actor: return hub.observe(Event.self, on: sink) { _, event in body(event) }
        case .serialQueue: return hub.observe(Event.self, on: .queue(serial)) { body($0) }
        case .concurrentQueue: return hub.observe(Event.self, on: .queue(concurrent)) { body($0) }
        case .operationQueue: return hub.observe(Event.self, on: operations) { body($0) }
        case .deliveryThread: return hub.observe(Event.self, on: .thread(thread)) { body($0) }
        case .executor: return hub.observe(Event.self, on: .executor(executor)) { body($0) }
        }
    }
}

/// A waiting post whose own item sits behind another post's hold still completes.
@Suite("Holds and waiting posts")
struct HoldAndWaitTests {
    /// Another thread's post holds its item in a lane on serial queue Q while a job on Q waits for
    /// that lane (its inline drain finds the held item first and takes nothing). When the other
    /// post releases its hold, the drain job it hands to Q cannot run, because Q is blocked in the
    /// wait: the blocked waiter must be offered that drain.
    @Test("A postAndWait on its own queue completes when its item was behind another post's hold")
    func waitBehindAHold() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "hold-and-wait")
        let executor = ManualExecutor()
        let seen = Log<Int>()
        // Registered first, so it is released first: the post pauses there, with Q's item held.
        let other = hub.observe(Ping.self, on: .executor(executor)) { _ in }
        let onQueue = hub.observe(Ping.self, on: .queue(queue)) { seen.append($0.value) }
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        let first = Locked(true)
        executor.onEnqueue { job in
            if first.withLock({ isFirst in
                defer { isFirst = false }
                return isFirst
            }) {
                paused.signal()
                resume.wait()
            }
            Thread { job() }.start()
            return true
        }
        let poster = Thread { hub.post(Ping(value: 1)) }
        poster.start()
        await onNewThread { paused.wait() }

        let completed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            queue.async {
                // Its inline drain finds Ping 1 still held, and takes nothing.
                resume.signal()
                let report = try? hub.postAndWait(Ping(value: 2), timeout: .seconds(20))
                continuation.resume(returning: report != nil)
            }
        }
        #expect(completed)
        #expect(seen.values == [1, 2])
        other.cancel()
        onQueue.cancel()
    }
}
