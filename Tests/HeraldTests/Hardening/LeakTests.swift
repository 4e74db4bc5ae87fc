import Dispatch
import Foundation
import Herald
import Testing

/// A notification that is an object, so that a test can watch it being released.
final class Parcel: TypedNotification {
    let id: Int

    init(id: Int) {
        self.id = id
    }
}

/// What Herald keeps alive, and for how long: weak probes on the objects a user hands it.
///
/// Each test first shows that the probe sees the object alive while Herald is entitled to hold it
/// (so a deliberate leak would be caught), then that it is gone at the documented moment.
@Suite("Leaks and lifetimes")
struct LeakTests {
    /// Every asynchronous kind of target, each with its own queue or executor.
    static func asynchronousTargets() -> [(String, DeliveryTarget)] {
        [
            ("main", .mainQueue),
            ("serial queue", .queue(DispatchQueue(label: "leak.serial"))),
            ("concurrent queue", .queue(DispatchQueue(label: "leak.concurrent", attributes: .concurrent))),
            ("operation queue", .operationQueue(makeKeptOperationQueue())),
            ("executor", .executor(QueueExecutor(label: "leak.executor"))),
        ]
    }

    @Test(
        "A cancelled observer's captures are released once its token is gone, while other observers of the type stay",
        arguments: ["posting", "main", "serial queue", "concurrent queue", "operation queue", "executor"]
    )
    func cancelledObserverIsReleased(targetName: String) async {
        let hub = NotificationHub()
        let target = Self.asynchronousTargets().first { $0.0 == targetName }?.1 ?? .posting
        let seen = Counter()
        let keepers = (0..<3).map { _ in hub.observe(Ping.self, on: target) { _ in seen.increment() } }
        var captured: Captured? = Captured(id: 1)
        let probe = captured.map(WeakProbe.init)
        var token: ObservationToken? = captured.map { captured in
            hub.observe(Ping.self, on: target) { _ in _ = captured.id }
        }
        captured = nil
        await hub.postAndWait(Ping(value: 1))
        #expect(probe?.isReleased == false, "the live observation holds its handler")
        token?.cancel()
        token = nil
        await hub.postAndWait(Ping(value: 2))  // any drain job scheduled before the cancel has run
        #expect(probe?.isReleased == true, "the hub still holds a cancelled observer's handler")
        #expect(hub.observerCount(of: Ping.self) == keepers.count)
        #expect(seen.count == 2 * keepers.count)
        withExtendedLifetime(keepers) {}
    }

    @Test(
        "A cancelled observer's captures are released while another thread keeps posting the type",
        .timeLimit(.minutes(5))
    )
    func cancelledWhileAnotherThreadPostsIsReleased() async {
        let hub = NotificationHub()
        let posted = Counter()
        let stop = Counter()
        // A thread of its own: a poster that never returns would take one of the few threads that
        // run every test's tasks.
        async let posterDone: Void = onNewThread {
            while stop.count == 0 {
                hub.post(Ping(value: 0))
                posted.increment()
            }
        }
        let keeper = hub.observe(Ping.self) { _ in }
        var leaks = 0
        for round in 0..<10_000 {
            var captured: Captured? = Captured(id: round)
            let probe = captured.map(WeakProbe.init)
            var token: ObservationToken? = captured.map { captured in
                hub.observe(Ping.self) { _ in _ = captured.id }
            }
            captured = nil
            // Cancelled at once, so that the cancel often lands while the poster builds a
            // snapshot that still has the observer.
            token?.cancel()
            token = nil
            // Every post that began before the cancel has ended once two more have ended. A post
            // shard that cached a snapshot built before the cancel would still hold the handler.
            let afterCancel = posted.count
            while posted.count < afterCancel + 2 { await Task.yield() }
            if probe?.isReleased != true { leaks += 1 }
        }
        stop.increment()
        await posterDone
        #expect(leaks == 0, "a cancelled observer's handler outlived the posts in flight")
        #expect(hub.observerCount(of: Ping.self) == 1)
        withExtendedLifetime(keeper) {}
    }

    @Test("Letting go of the token without cancelling releases the captures too, with many observers of the type")
    func droppedTokensAreReleased() async {
        let hub = NotificationHub()
        let keepers = (0..<40).map { _ in hub.observe(Ping.self, on: .queue(DispatchQueue(label: "keep"))) { _ in } }
        var probes: [WeakProbe<Captured>] = []
        var tokens: [ObservationToken] = []
        for id in 0..<40 {
            let captured = Captured(id: id)
            probes.append(WeakProbe(captured))
            tokens.append(hub.observe(Ping.self) { _ in _ = captured.id })
        }
        hub.post(Ping(value: 0))
        #expect(probes.allSatisfy { !$0.isReleased })
        tokens.removeAll()
        #expect(probes.filter { !$0.isReleased }.count == 0)
        #expect(hub.observerCount(of: Ping.self) == keepers.count)
        withExtendedLifetime(keepers) {}
    }

    @Test("Cancelling drops the notifications queued for the observer at once, before the target runs again")
    func cancelReleasesQueuedNotifications() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "leak.gated")
        let gate = Gate()
        let seen = Counter()
        let token = hub.observe(Parcel.self, on: .queue(queue)) { _ in seen.increment() }
        gate.close(queue)
        var probes: [WeakProbe<Parcel>] = []
        for id in 0..<100 {
            let parcel = Parcel(id: id)
            probes.append(WeakProbe(parcel))
            hub.post(parcel)
        }
        #expect(probes.allSatisfy { !$0.isReleased }, "queued parcels are held until delivered")
        token.cancel()
        #expect(probes.allSatisfy { $0.isReleased }, "cancel must release what was queued for the observer")
        gate.open()
        await onQueue(queue) {}
        #expect(seen.count == 0)
    }

    @Test("A delivered notification is released after its last observer ran, on every target")
    func deliveredNotificationsAreReleased() async {
        let hub = NotificationHub()
        let store = Store()
        let tokens =
            Self.asynchronousTargets().map { hub.observe(Parcel.self, on: $0.1) { _ in } } + [
                hub.observe(Parcel.self) { _ in },
                hub.observe(Parcel.self, on: store) { _, _ in },
            ]
        var probes: [WeakProbe<Parcel>] = []
        for id in 0..<50 {
            let parcel = Parcel(id: id)
            probes.append(WeakProbe(parcel))
            hub.post(parcel)
        }
        await hub.postAndWait(Parcel(id: -1))
        #expect(probes.allSatisfy { $0.isReleased })
        withExtendedLifetime(tokens) {}
    }

    @Test("The hub is released when its last reference goes, with observers registered and deliveries queued")
    func hubIsReleased() async {
        let queue = DispatchQueue(label: "leak.hub")
        let gate = Gate()
        var hub: NotificationHub? = NotificationHub()
        let hubProbe = hub.map(WeakProbe.init)
        let seen = Counter()
        var tokens: [ObservationToken] = []
        var captured: Captured? = Captured()
        let capturedProbe = captured.map(WeakProbe.init)
        if let hub, let captured {
            tokens.append(
                hub.observe(Ping.self, on: .queue(queue)) { _ in
                    _ = captured.id
                    seen.increment()
                })
            tokens.append(hub.observe(Ping.self) { _ in seen.increment() })
            _ = hub.notifications(of: Ping.self)  // a stream nobody iterates
        }
        captured = nil
        gate.close(queue)
        for value in 0..<10 { hub?.post(Ping(value: value)) }
        hub = nil
        #expect(hubProbe?.isReleased == true, "queued deliveries and tokens must not keep the hub alive")
        gate.open()
        await onQueue(queue) {}
        #expect(seen.count == 20, "deliveries queued before the hub went still ran")
        #expect(capturedProbe?.isReleased == false, "the token still holds its handler")
        tokens.removeAll()
        #expect(capturedProbe?.isReleased == true, "after the hub and the token, nothing holds the handler")
    }

    @Test("A handler that captures its own hub keeps it alive only until the observation is cancelled and let go")
    func handlerCapturingItsHub() {
        var hub: NotificationHub? = NotificationHub()
        let probe = hub.map(WeakProbe.init)
        let others = hub.map { hub in (0..<20).map { _ in hub.observe(Ping.self) { _ in } } } ?? []
        var token = hub.map { hub in hub.observe(Ping.self) { _ in hub.post(Pong(value: 0)) } }
        hub?.post(Ping(value: 1))
        hub = nil
        #expect(probe?.isReleased == false, "the handler's strong capture is a cycle while it is registered")
        token?.cancel()
        // The hub no longer holds the handler; the token still does, until it goes. Releasing the
        // handler releases the hub, whose deinit takes the registry lock: it must not be held.
        token = nil
        #expect(probe?.isReleased == true, "cancel must break the cycle")
        withExtendedLifetime(others) {}
    }

    @Test("A handler whose captures cancel other observations when released can be cancelled from anywhere")
    func releasingAHandlerThatCancels() async {
        let hub = NotificationHub()
        let others = (0..<20).map { _ in hub.observe(Ping.self) { _ in } }
        final class Owner: Sendable {
            let observations: [ObservationToken]
            init(_ observations: [ObservationToken]) { self.observations = observations }
            deinit { for observation in observations { observation.cancel() } }
        }
        var owner: Owner? = Owner(
            (0..<3).map { _ in hub.observe(Pong.self, on: .queue(DispatchQueue(label: "o"))) { _ in } })
        var token = owner.map { owner in hub.observe(Ping.self) { _ in _ = owner.observations.count } }
        owner = nil
        hub.post(Ping(value: 1))
        #expect(hub.observerCount(of: Pong.self) == 3)
        token?.cancel()
        token = nil  // releases the handler, the owner, and cancels the owner's observations
        #expect(hub.observerCount(of: Pong.self) == 0)
        #expect(hub.observerCount(of: Ping.self) == others.count)
    }

    @Test("An owner is not kept alive by deliveries queued for it, and its handler does not run after it is gone")
    func ownerWithQueuedDeliveries() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "leak.owner")
        let gate = Gate()
        let seen = Counter()
        var owner: Subject? = Subject()
        let probe = owner.map(WeakProbe.init)
        if let owner {
            hub.observe(Ping.self, owner: owner, on: .queue(queue)) { _, _ in seen.increment() }
        }
        gate.close(queue)
        for value in 0..<10 { hub.post(Ping(value: value)) }
        owner = nil
        #expect(probe?.isReleased == true)
        gate.open()
        await hub.postAndWait(Ping(value: 10))
        #expect(seen.count == 0)
        #expect(hub.observerCount(of: Ping.self) == 0)
    }

    @Test("A subject is not kept alive by deliveries queued from it, nor by a stream or a retained value")
    func subjectWithQueuedDeliveries() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "leak.subject")
        let gate = Gate()
        let seen = Log<Int>()
        var subject: Subject? = Subject()
        let probe = subject.map(WeakProbe.init)
        let token = hub.observe(Ping.self, on: .queue(queue)) { seen.append($0.value) }
        let filtered = subject.map { subject in hub.observe(Ping.self, from: subject, on: .queue(queue)) { _ in } }
        let stream = subject.map { subject in hub.notifications(of: Ping.self, from: subject) }
        gate.close(queue)
        for value in 0..<9 { hub.post(Ping(value: value), from: subject) }
        hub.postAndRetain(Ping(value: 9), from: subject)
        subject = nil
        #expect(probe?.isReleased == true)
        gate.open()
        await hub.postAndWait(Ping(value: 10))
        #expect(seen.values == Array(0...10))
        #expect(filtered?.isCancelled == true)
        withExtendedLifetime((token, stream)) {}
    }

    @Test("performAndWait releases its closure's captures before it returns")
    func performAndWaitReleasesCaptures() async {
        let queue = DispatchQueue(label: "leak.perform")
        let released = await onNewThread { () -> Bool in
            var captured: Captured? = Captured(id: 7)
            let probe = captured.map(WeakProbe.init)
            let id = DeliveryTarget.queue(queue).performAndWait { [captured] in captured?.id ?? 0 }
            captured = nil
            return id == 7 && probe?.isReleased == true
        }
        #expect(released)
    }

    @Test("A timed-out postAndWait releases its notification once the late delivery has run")
    func timedOutWaitReleasesNotification() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "leak.timeout")
        let gate = Gate()
        let seen = Counter()
        let token = hub.observe(Parcel.self, on: .queue(queue)) { _ in seen.increment() }
        gate.close(queue)
        let probe = await onNewThread { () -> WeakProbe<Parcel> in
            let parcel = Parcel(id: 1)
            let probe = WeakProbe(parcel)
            _ = try? hub.postAndWait(parcel, timeout: .milliseconds(20))
            return probe
        }
        #expect(!probe.isReleased, "the late delivery still holds it")
        gate.open()
        await hub.postAndWait(Parcel(id: 2))
        #expect(seen.count == 2)
        #expect(probe.isReleased)
        withExtendedLifetime(token) {}
    }

    @Test("A DeliveryThread is released after shutdown, with the work it ran, the work it rejected and its observers")
    func deliveryThreadIsReleased() async {
        let hub = NotificationHub()
        var thread: DeliveryThread? = DeliveryThread(name: "leak.thread") { _ in }
        let threadProbe = thread.map(WeakProbe.init)
        var ranCapture: Captured? = Captured(id: 1)
        var rejectedCapture: Captured? = Captured(id: 2)
        var delayedCapture: Captured? = Captured(id: 3)
        var handlerCapture: Captured? = Captured(id: 4)
        let probes = [ranCapture, rejectedCapture, delayedCapture, handlerCapture].compactMap { $0.map(WeakProbe.init) }
        var token: ObservationToken?
        if let thread, let ranCapture, let delayedCapture, let handlerCapture {
            token = hub.observe(Ping.self, on: .thread(thread)) { _ in _ = handlerCapture.id }
            thread.perform { _ = ranCapture.id }
            thread.perform(after: .seconds(3_600)) { _ = delayedCapture.id }
            hub.post(Ping(value: 1))
        }
        (ranCapture, delayedCapture, handlerCapture) = (nil, nil, nil)
        await thread?.shutdownGracefully()
        if let thread, let rejectedCapture {
            thread.perform { _ = rejectedCapture.id }  // rejected: released at once
        }
        rejectedCapture = nil
        #expect(probes[0].isReleased, "work that ran")
        #expect(probes[1].isReleased, "work rejected after the shutdown")
        #expect(probes[2].isReleased, "delayed work rejected at the shutdown")
        #expect(!probes[3].isReleased, "the live observation still holds its handler")
        #expect(thread?.isStopped == true)
        thread = nil
        #expect(threadProbe?.isReleased == false, "an observation on the thread holds its target")
        token?.cancel()
        token = nil
        #expect(probes[3].isReleased)
        #expect(threadProbe?.isReleased == true, "nothing holds a stopped thread once its observers are gone")
    }
}
