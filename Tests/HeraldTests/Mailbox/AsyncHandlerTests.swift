import Dispatch
import Foundation
import Herald
import Testing

@Suite("Async handlers")
struct AsyncHandlerTests {
    enum Form: String, CaseIterable, Sendable {
        case posting, serialQueue, concurrentQueue, operationQueue, mainActor, actor
    }

    /// Registers an async handler in the given isolation form.
    static func observe(
        _ form: Form, on hub: NotificationHub, store: Store,
        _ body: @escaping @Sendable (Numbered) async -> Void
    ) -> ObservationToken {
        switch form {
        case .posting:
            return hub.observe(Numbered.self, on: .posting) { note async in await body(note) }
        case .serialQueue:
            return hub.observe(Numbered.self, on: .queue(DispatchQueue(label: "serial"))) { note async in
                await body(note)
            }
        case .concurrentQueue:
            let queue = DispatchQueue(label: "concurrent", attributes: .concurrent)
            return hub.observe(Numbered.self, on: .queue(queue)) { note async in await body(note) }
        case .operationQueue:
            let queue = makeKeptOperationQueue()
            queue.maxConcurrentOperationCount = 4
            return hub.observe(Numbered.self, on: .operationQueue(queue)) { note async in await body(note) }
        case .mainActor:
            return hub.observe(Numbered.self, on: MainActor.shared) { note async in
                MainActor.assertIsolated()
                await body(note)
                MainActor.assertIsolated()
            }
        case .actor:
            return hub.observe(Numbered.self, on: store) { store, note async in
                store.assertIsolated()
                await body(note)
                store.assertIsolated()
            }
        }
    }

    @Test(
        "One observer's calls never overlap and follow each poster's order across suspensions",
        arguments: Form.allCases)
    func fifoAcrossSuspensionsUnderConcurrentPosters(form: Form) async throws {
        let hub = NotificationHub()
        let probe = OverlapProbe()
        let seen = Log<Numbered>()
        let token = Self.observe(form, on: hub, store: Store()) { note in
            probe.enter()
            seen.append(note)
            await Task.yield()
            await Task.yield()
            probe.leave()
        }
        let posters = 4
        let perPoster = 100
        await onThreads(posters) { poster in
            for index in 0..<perPoster { hub.post(Numbered(poster: poster, index: index)) }
        }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(seen.count == posters * perPoster)
        #expect(probe.overlaps == 0, "an async call started before the previous one returned")
        for poster in 0..<posters {
            let indices = seen.values.filter { $0.poster == poster }.map(\.index)
            #expect(indices == Array(0..<perPoster), "poster \(poster)'s notifications out of order")
        }
        token.cancel()
    }

    @Test("Cancelling while a call is suspended: that call finishes, and no queued call starts")
    func cancelDuringSuspension() async throws {
        let hub = NotificationHub()
        let started = AsyncLatch()
        let gate = AsyncLatch()
        let finished = AsyncLatch()
        let calls = Log<Int>()
        let token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "handlers"))) { note async in
            calls.append(note.value)
            guard note.value == 1 else { return }
            started.open()
            await gate.wait()
            finished.open()
        }
        for value in 1...3 { hub.post(Ping(value: value)) }
        await started.wait()
        token.cancel()
        gate.open()
        await finished.wait()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        hub.post(Ping(value: 4))
        #expect(calls.values == [1])
        #expect(hub.observerCount(of: Ping.self) == 0)
    }

    @Test("An async waiting post returns only after the async handler has returned")
    func asyncWaitingPostWaitsForTheHandler() async {
        let hub = NotificationHub()
        let started = AsyncLatch()
        let gate = AsyncLatch()
        let done = Locked(false)
        let token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "handlers"))) { _ async in
            started.open()
            await gate.wait()
            await Task.yield()
            done.withLock { $0 = true }
        }
        let waiting = Task { await hub.postAndWait(Ping(value: 1)) }
        await started.wait()
        #expect(!done.withLock { $0 })
        gate.open()
        let report = await waiting.value
        #expect(done.withLock { $0 }, "postAndWait returned before the handler did")
        #expect(report.deliveredCount == 1)
        token.cancel()
    }

    @Test("A blocking waiting post on another thread waits for async handlers on every form", arguments: Form.allCases)
    func blockingWaitingPostWaitsForTheHandler(form: Form) async {
        let hub = NotificationHub()
        let done = Log<Int>()
        let token = Self.observe(form, on: hub, store: Store()) { note in
            await Task.yield()
            await Task.yield()
            done.append(note.index)
        }
        let (report, seen) = await onNewThread { () -> (DeliveryReport, [Int]) in
            let report = hub.postAndWait(Numbered(poster: 0, index: 7))
            return (report, done.values)
        }
        #expect(seen == [7])
        #expect(report.deliveredCount == 1)
        token.cancel()
    }

    @Test("An async handler's error goes to the error handler and into the waiting post's report")
    func errorsAreReported() async {
        let hub = NotificationHub()
        let reported = Log<String>()
        hub.errorHandler = { failure in reported.append(failure.notificationType) }
        let token = hub.observe(Ping.self, on: MainActor.shared) { note async throws in
            await Task.yield()
            throw Boom(code: note.value)
        }
        let report = await hub.postAndWait(Ping(value: 3))
        #expect(report.failures.map { $0.error as? Boom } == [Boom(code: 3)])
        #expect(report.deliveredCount == 1)
        #expect(reported.values == ["Ping"])
        token.cancel()
    }

    @Test("While a main-actor async handler is suspended, the main actor runs other deliveries")
    func mainActorStaysFreeDuringASuspension() async throws {
        let hub = NotificationHub()
        let started = AsyncLatch()
        let gate = AsyncLatch()
        let pings = Log<Int>()
        let pongs = Log<Int>()
        let slow = hub.observe(Ping.self, on: MainActor.shared) { note async in
            pings.append(note.value)
            started.open()
            await gate.wait()
        }
        let fast = hub.observe(Pong.self, on: MainActor.shared) { note in
            MainActor.assertIsolated()
            pongs.append(note.value)
        }
        hub.post(Ping(value: 1))
        hub.post(Ping(value: 2))
        await started.wait()
        // The Ping handler holds neither the main queue nor the main actor while it is suspended.
        for value in 1...300 { hub.post(Pong(value: value)) }  // more than one drain slice
        let report = await hub.postAndWait(Pong(value: 301))
        await MainActor.run { MainActor.assertIsolated() }
        #expect(report.deliveredCount == 1)
        #expect(pongs.values == Array(1...301))
        #expect(pings.values == [1], "the next call started before the suspended one returned")
        gate.open()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(pings.values == [1, 2])
        slow.cancel()
        fast.cancel()
    }

    @Test("A post made by an async handler after a suspension reaches every observer after its cause")
    func causalOrderAcrossASuspension() async throws {
        let hub = NotificationHub()
        let seen = Log<String>()
        let reactor = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "reactor"))) { note async in
            await Task.yield()
            hub.post(Pong(value: note.value))
        }
        // One observer that receives both types (causal order is a promise per observer: two
        // observers on one queue drain their own mailboxes).
        let watcher = hub.observeAll(on: .queue(DispatchQueue(label: "watcher"))) { posted in
            if let ping = posted.notification as? Ping { seen.append("ping \(ping.value)") }
            if let pong = posted.notification as? Pong { seen.append("pong \(pong.value)") }
        }
        for value in 1...20 { hub.post(Ping(value: value)) }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        for value in 1...20 {
            let ping = seen.values.firstIndex(of: "ping \(value)") ?? .max
            let pong = seen.values.firstIndex(of: "pong \(value)") ?? .max
            #expect(ping < pong, "pong \(value) before its ping, or either missing")
        }
        for token in [reactor, watcher] { token.cancel() }
    }

    @Test("A sync closure still picks the synchronous overload; an awaiting one the async overload")
    func overloadsResolve() async {
        let hub = NotificationHub()
        let log = Log<String>()
        let sync = hub.observe(Ping.self, on: MainActor.shared) { _ in log.append("sync") }
        let async = hub.observe(Ping.self, on: MainActor.shared) { _ async in
            await Task.yield()
            log.append("async")
        }
        let report = await hub.postAndWait(Ping(value: 1))
        #expect(report.deliveredCount == 2)
        #expect(Set(log.values) == ["sync", "async"])
        sync.cancel()
        async.cancel()
    }

    @Test("A blocking postAndWait on the main actor does not wait for a main-actor async handler")
    @MainActor
    func blockingWaitOnTheHandlersOwnTarget() async throws {
        let hub = NotificationHub()
        let done = Log<Int>()
        let token = hub.observe(Ping.self, on: MainActor.shared) { note async in
            await Task.yield()
            done.append(note.value)
        }
        let report = blockingPostAndWait(hub, Ping(value: 1))
        #expect(report.deliveredCount == 0, "waiting would need the main actor that it blocks")
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(done.values == [1])
        token.cancel()
    }

    @Test("A blocking postAndWait on a queue does not wait for an async handler that runs on that queue")
    func blockingWaitOnAQueueHandlersOwnQueue() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "own")
        let done = Log<Int>()
        let token = hub.observe(Ping.self, on: .queue(queue)) { note async in
            await Task.yield()
            done.append(note.value)
        }
        let (report, seen) = await onQueue(queue) { () -> (DeliveryReport, [Int]) in
            let report = hub.postAndWait(Ping(value: 2))
            return (report, done.values)
        }
        #expect(report.deliveredCount == 0, "waiting would need the queue that it blocks")
        #expect(seen == [])
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(done.values == [2])
        token.cancel()
    }
}

@Suite("Async handlers bound to an owner")
struct AsyncOwnerHandlerTests {
    final class Model: Sendable {
        let seen = Log<Int>()
    }

    @Test("An owner-bound async handler gets its owner, and ends when the owner is deallocated")
    func ownerBoundAsyncHandlers() async throws {
        let hub = NotificationHub()
        var model: Model? = Model()
        let seen = try #require(model?.seen)
        if let model {
            hub.observe(Ping.self, owner: model, on: .queue(DispatchQueue(label: "q"))) { model, note async in
                await Task.yield()
                model.seen.append(note.value)
            }
            hub.observe(Ping.self, owner: model, on: MainActor.shared) { model, note async in
                MainActor.assertIsolated()
                await Task.yield()
                model.seen.append(note.value * 10)
            }
        }
        let report = await hub.postAndWait(Ping(value: 1))
        #expect(report.deliveredCount == 2)
        #expect(Set(seen.values) == [1, 10])
        model = nil
        #expect(hub.observerCount(of: Ping.self) == 0)
        hub.post(Ping(value: 2))
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(seen.count == 2)
    }
}

@MainActor
private func blockingPostAndWait(_ hub: NotificationHub, _ ping: Ping) -> DeliveryReport {
    hub.postAndWait(ping)
}
