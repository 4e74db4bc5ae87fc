import Dispatch
import Herald
import Testing

@Suite("Hub quiescence: waitUntilIdle")
struct QuiescenceTests {
    @Test("An idle hub returns at once, with nothing pending")
    func idleHubReturnsAtOnce() async throws {
        let hub = NotificationHub()
        try await hub.waitUntilIdle()
        let token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "q"))) { _ in }
        try await hub.waitUntilIdle(timeout: .seconds(1))
        #expect(hub.pendingDeliveries.isEmpty)
        token.cancel()
    }

    @Test("It returns once every lane has drained, counting what handlers post meanwhile")
    func waitsForChainsOfPosts() async throws {
        let hub = NotificationHub()
        let pongs = Log<Int>()
        let first = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "first"))) { note in
            if note.value < 50 { hub.post(Ping(value: note.value + 1)) }
            hub.post(Pong(value: note.value))
        }
        let second = hub.observe(Pong.self, on: .operationQueue(makeKeptOperationQueue())) { note in
            pongs.append(note.value)
        }
        let third = hub.observe(Pong.self, on: Store()) { store, note in store.append(note.value) }
        await onNewThread { hub.post(Ping(value: 1)) }
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(pongs.values == Array(1...50))
        #expect(hub.pendingDeliveries.isEmpty)
        for token in [first, second, third] { token.cancel() }
    }

    @Test("It waits for async handlers to return")
    func waitsForAsyncHandlers() async throws {
        let hub = NotificationHub()
        let gate = AsyncLatch()
        let done = Log<Int>()
        let token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "q"))) { note async in
            await gate.wait()
            done.append(note.value)
        }
        hub.post(Ping(value: 1))
        hub.post(Ping(value: 2))
        let pending = hub.pendingDeliveries
        #expect(pending.count == 1)
        let waiting = Task { try await hub.waitUntilIdle(timeout: asyncPatience) }
        gate.open()
        try await waiting.value
        #expect(done.values == [1, 2])
        token.cancel()
    }

    @Test("The timeout form reports what is still pending, and the work still runs later")
    func timeoutReportsPending() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "stalled")
        let gate = Gate()
        gate.close(queue)
        let delivered = Counter()
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in delivered.increment() }
        for value in 1...3 { hub.post(Ping(value: value)) }
        do {
            try await hub.waitUntilIdle(timeout: .milliseconds(50))
            Issue.record("expected a timeout while the queue is blocked")
        } catch {
            #expect(error.isTimeout)
            #expect(error.pending.count == 1)
            #expect(error.pending.first?.queuedCount == 3)
            #expect(error.pending.first?.notificationType == "Ping")
            #expect(error.pending.first?.fileID.hasSuffix("QuiescenceTests.swift") == true)
            #expect(error.pending.first?.target == .queue(queue))
            #expect(error.description.contains("3 Ping queued for the observer at"))
        }
        gate.open()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(delivered.count == 3)
        token.cancel()
    }

    @Test("It waits for a handler whose observation ended while it ran, and for what it posts")
    func waitsForAHandlerThatCancelledItsObservation() async throws {
        let hub = NotificationHub()
        let tokenBox = Locked<ObservationToken?>(nil)
        let entered = AsyncLatch()
        let proceed = DispatchSemaphore(value: 0)
        let pongs = Log<Int>()
        let second = hub.observe(Pong.self, on: .queue(DispatchQueue(label: "second"))) { pongs.append($0.value) }
        let first = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "first"))) { note in
            tokenBox.withLock { $0 }?.cancel()  // a one-shot observer
            entered.open()
            proceed.wait()  // blocks the "first" queue, not the main queue
            hub.post(Pong(value: note.value))
        }
        tokenBox.withLock { $0 = first }
        hub.post(Ping(value: 1))
        await entered.wait()
        #expect(hub.observerCount(of: Ping.self) == 0)
        do {
            try await hub.waitUntilIdle(timeout: .milliseconds(50))
            Issue.record("expected a timeout while the ended observation's handler runs")
        } catch {
            #expect(error.isTimeout)
            #expect(error.pending.map(\.notificationType) == ["Ping"])
        }
        proceed.signal()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(pongs.values == [1])
        #expect(hub.pendingDeliveries.isEmpty)
        withExtendedLifetime(second) {}
    }

    /// How the last reference to something a delivery holds (a `Tattler` whose `deinit` posts)
    /// ends up with Herald, which then releases it on the handler's target.
    enum ReleasedByHerald: CaseIterable, Sendable {
        /// A synchronous handler's capture, once the handler cancelled its own observation.
        case captureOfSelfCancellingHandler
        /// An `async` handler's capture, once the handler cancelled its own observation.
        case captureOfSelfCancellingAsyncHandler
        /// The notification an `async` handler was called with.
        case notificationOfAsyncHandler
    }

    @Test(
        "It waits for a deinit that Herald sets off when a handler returns, and for what it posts",
        arguments: ReleasedByHerald.allCases)
    func waitsForADeinitHeraldSetsOff(_ released: ReleasedByHerald) async throws {
        let hub = NotificationHub()
        let pongs = Log<Int>()
        let second = hub.observe(Pong.self, on: .queue(DispatchQueue(label: "second"))) { pongs.append($0.value) }
        let deinitStarted = AsyncLatch()
        let proceed = DispatchSemaphore(value: 0)
        let returned = AsyncLatch()  // the handler of the async notification case returns when opened
        let tokenBox = Locked<ObservationToken?>(nil)
        let queue = DispatchQueue(label: "first")
        do {
            // Released on `queue` (the handler's target), never on this task: it blocks there.
            let tattler = Tattler {
                deinitStarted.open()
                proceed.wait()
                hub.post(Pong(value: 1))
            }
            switch released {
            case .captureOfSelfCancellingHandler:
                tokenBox.withLock {
                    $0 = hub.observe(Ping.self, on: .queue(queue)) { _ in
                        withExtendedLifetime(tattler) {}
                        tokenBox.withLock { $0 }?.cancel()
                    }
                }
            case .captureOfSelfCancellingAsyncHandler:
                tokenBox.withLock {
                    $0 = hub.observe(Ping.self, on: .queue(queue)) { _ async in
                        withExtendedLifetime(tattler) {}
                        tokenBox.withLock { $0 }?.cancel()
                    }
                }
            case .notificationOfAsyncHandler:
                let entered = AsyncLatch()
                tokenBox.withLock {
                    $0 = hub.observe(Carrier.self, on: .queue(queue)) { _ async in
                        entered.open()
                        await returned.wait()  // the post has returned, and let go of its copy
                    }
                }
                hub.post(Carrier(tattler: tattler))
                await entered.wait()
            }
        }
        // Posted once this test holds the tattler no more: the handler's capture is its last
        // reference, so the handler's target releases it.
        if released != .notificationOfAsyncHandler { hub.post(Ping(value: 1)) }
        returned.open()
        await deinitStarted.wait()
        do {
            try await hub.waitUntilIdle(timeout: .milliseconds(50))
            Issue.record("expected a timeout while the deinit Herald set off runs")
        } catch {
            #expect(error.isTimeout)
        }
        proceed.signal()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(pongs.values == [1])
        withExtendedLifetime((second, tokenBox)) {}
    }

    @Test("It waits for a suspended async handler whose observation was cancelled, and for what it posts")
    func waitsForACancelledAsyncHandler() async throws {
        let hub = NotificationHub()
        let gate = AsyncLatch()
        let entered = AsyncLatch()
        let pongs = Log<Int>()
        let second = hub.observe(Pong.self, on: .queue(DispatchQueue(label: "second"))) { pongs.append($0.value) }
        let token = hub.observe(Ping.self, on: .queue(DispatchQueue(label: "q"))) { _ async in
            entered.open()
            await gate.wait()
            hub.post(Pong(value: 1))
        }
        hub.post(Ping(value: 1))
        await entered.wait()
        token.cancel()
        do {
            try await hub.waitUntilIdle(timeout: .milliseconds(50))
            Issue.record("expected a timeout while the cancelled async handler is suspended")
        } catch {
            #expect(error.isTimeout)
            #expect(error.pending.map(\.notificationType) == ["Ping"])
        }
        gate.open()
        try await hub.waitUntilIdle(timeout: asyncPatience)
        #expect(pongs.values == [1])
        withExtendedLifetime(second) {}
    }
}

/// A notification that carries an object whose `deinit` may post.
private struct Carrier: TypedNotification {
    let tattler: Tattler
}
