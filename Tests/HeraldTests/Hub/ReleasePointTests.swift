import Dispatch
import Herald
import Synchronization
import Testing

/// Every place where Herald lets go of something a user gave it releases it after unlocking: a
/// `deinit` run by that release may observe, cancel, post (also retaining) and remove retained
/// values on the same hub. Each test hands Herald an object whose `deinit` does all of that, makes
/// Herald release it, and checks that the `deinit` ran to its end.
@Suite("Release points")
struct ReleasePointTests {
    // MARK: Retained values

    @Test("A retained value replaced by postAndRetain is released after unlocking")
    func retainedValueReplaced() async {
        let hub = NotificationHub()
        let releases = Releases()
        hub.postAndRetain(Sticky(user: HubUser(hub, releases)))
        hub.postAndRetain(Sticky(user: nil))
        await releases.wait(for: 1)
        #expect(hub.observerCount(of: Side.self) == 0)
    }

    @Test("A retained value removed with removeRetainedValue is released after unlocking")
    func retainedValueRemoved() async {
        let hub = NotificationHub()
        let releases = Releases()
        hub.postAndRetain(Sticky(user: HubUser(hub, releases)))
        hub.removeRetainedValue(of: Sticky.self)
        await releases.wait(for: 1)
    }

    @Test("Retained values removed with removeAllRetainedValues are released after unlocking")
    func retainedValuesRemovedAll() async {
        let hub = NotificationHub()
        let releases = Releases()
        let subject = Subject()
        hub.postAndRetain(Sticky(user: HubUser(hub, releases)))
        hub.postAndRetain(Sticky(user: HubUser(hub, releases)), from: subject)
        #expect(hub.removeAllRetainedValues(of: Sticky.self) == 2)
        await releases.wait(for: 2)
    }

    @Test("A retained value removed with removeRetainedValue(_:from:) is released after unlocking")
    func retainedValueRemovedIfEqual() async {
        let hub = NotificationHub()
        let releases = Releases()
        let subject = Subject()
        // Equal by `id`: the values passed in hold no user, so the hub holds the last references.
        // One at a time: each deinit removes every retained value of the hub.
        hub.postAndRetain(Sticky(user: HubUser(hub, releases), id: 1))
        #expect(hub.removeRetainedValue(Sticky(user: nil, id: 1)))
        await releases.wait(for: 1)
        hub.postAndRetain(Sticky(user: HubUser(hub, releases), id: 2), from: subject)
        #expect(hub.removeRetainedValue(Sticky(user: nil, id: 2), from: subject))
        await releases.wait(for: 2)
    }

    @Test("Retained values removed with removeAllRetainedValues() are released after unlocking")
    func retainedValuesOfEveryTypeRemovedAll() async {
        let hub = NotificationHub()
        let releases = Releases()
        let subject = Subject()
        hub.postAndRetain(Sticky(user: HubUser(hub, releases)))
        hub.postAndRetain(Sticky(user: HubUser(hub, releases)), from: subject)
        hub.postAndRetain(Held(user: HubUser(hub, releases)), from: subject)
        do {
            let doomed = Subject()
            hub.postAndRetain(Held(user: HubUser(hub, releases)), from: doomed)
        }
        #expect(hub.removeAllRetainedValues() == 3)
        await releases.wait(for: 4)
    }

    @Test("The retained value of a deallocated subject is released after unlocking")
    func retainedValueOfDeadSubject() async {
        let hub = NotificationHub()
        let releases = Releases()
        do {
            let subject = Subject()
            hub.postAndRetain(Sticky(user: HubUser(hub, releases)), from: subject)
        }
        // The entry of the dead subject goes with the next sweep or removal.
        hub.removeAllRetainedValues(of: Sticky.self)
        await releases.wait(for: 1)
    }

    // MARK: Hub handlers

    @Test("A replaced errorHandler is released after unlocking")
    func errorHandlerReplaced() async {
        let hub = NotificationHub()
        let releases = Releases()
        do {
            let user = HubUser(hub, releases)
            hub.errorHandler = { _ in _ = user }
        }
        hub.errorHandler = { _ in }
        await releases.wait(for: 1)
    }

    @Test("A replaced unobservedPostHandler is released after unlocking")
    func unobservedPostHandlerReplaced() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        do {
            let user = HubUser(hub, releases)
            hub.unobservedPostHandler = { _ in _ = user }
        }
        hub.unobservedPostHandler = nil
        await releases.wait(for: 1)
    }

    // MARK: Streams

    @Test("A notification a bounded stream pushes out is released after unlocking")
    func streamDropsOnPush() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        let stream = hub.notifications(of: Sticky.self, bufferingPolicy: .bufferingNewest(1))
        hub.post(Sticky(user: HubUser(hub, releases)))
        hub.post(Sticky(user: nil))
        await releases.wait(for: 1)
        #expect(stream.droppedCount >= 1)
        stream.cancel()
    }

    @Test("A stream's buffer is released after unlocking when the stream ends")
    func streamBufferOnFinish() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        let stream = hub.notifications(of: Sticky.self)
        hub.post(Sticky(user: HubUser(hub, releases)))
        stream.cancel()
        await releases.wait(for: 1)
        #expect(hub.observerCount(of: Sticky.self) == 0)
    }

    // MARK: Observers

    @Test("A handler and its captures are released after unlocking when the observation is cancelled")
    func handlerOnCancel() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        let queue = DispatchQueue(label: "release-points.cancel")
        var tokens: [ObservationToken] = []
        for target in [DeliveryTarget.posting, .queue(queue)] {
            let user = HubUser(hub, releases)
            tokens.append(hub.observe(Sticky.self, on: target) { _ in _ = user })
        }
        for token in tokens { token.cancel() }
        tokens = []
        await releases.wait(for: 2)
    }

    @Test("A payload is released after unlocking once it was delivered, or dropped by a cancel")
    func payloadAfterDelivery() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        let queue = DispatchQueue(label: "release-points.payload")
        let received = Counter()
        let posting = hub.observe(Sticky.self) { note in if note.user != nil { received.increment() } }
        let queued = hub.observe(Sticky.self, on: .queue(queue)) { note in if note.user != nil { received.increment() }
        }
        hub.post(Sticky(user: HubUser(hub, releases)))
        await hub.postAndWait(Sticky(user: HubUser(hub, releases)))
        await releases.wait(for: 2)
        #expect(received.count == 4)

        // Dropped unrun: the queue is held shut, then the observation is cancelled.
        let gate = Gate()
        gate.close(queue)
        hub.post(Sticky(user: HubUser(hub, releases)))
        queued.cancel()
        gate.open()
        await releases.wait(for: 3)
        posting.cancel()
    }

    @Test("An owner's deinit may use the hub; its observation then ends")
    func ownerDeinit() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        do {
            let owner = HubUser(hub, releases)
            hub.observe(Sticky.self, owner: owner) { _, _ in }
            hub.post(Sticky(user: nil))
        }
        await releases.wait(for: 1)
        #expect(hub.observerCount(of: Sticky.self) == 0)
    }

    @Test("A subject's deinit may use the hub; its observation and retained value then end")
    func subjectDeinit() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let releases = Releases()
        let queue = DispatchQueue(label: "release-points.subject")
        do {
            let subject = HubUser(hub, releases)
            let token = hub.observe(Sticky.self, from: subject, on: .queue(queue)) { _ in }
            hub.postAndRetain(Sticky(user: nil), from: subject)
            _ = await hub.postAndWait(Sticky(user: nil), from: subject)
            withExtendedLifetime(token) {}
        }
        await releases.wait(for: 1)
        #expect(hub.observerCount(of: Sticky.self) == 0)
        // Only the value the deinit itself retained, without a subject, is left.
        #expect(hub.removeAllRetainedValues(of: Sticky.self) == 1)
    }
}

// MARK: - Support

/// A notification whose payload may hold a ``HubUser``; equal when the `id`s are.
private struct Sticky: TypedNotification, Equatable {
    let user: HubUser?
    var id = 0

    static func == (lhs: Sticky, rhs: Sticky) -> Bool { lhs.id == rhs.id }
}

/// Another notification whose payload may hold a ``HubUser``.
private struct Held: TypedNotification {
    let user: HubUser?
}

/// A notification the deinit posts, observes and retains.
private struct Side: TypedNotification, Equatable {
    let value: Int
}

/// A notification nobody observes.
private struct Unheard: TypedNotification {}

private struct Failure: Error {}

/// An object whose `deinit` uses its hub every way a `deinit` may, then records that it ran.
private final class HubUser: Sendable {
    let hub: NotificationHub
    let releases: Releases

    init(_ hub: NotificationHub, _ releases: Releases) {
        self.hub = hub
        self.releases = releases
        hub.errorHandler = { _ in }  // the deinit's throwing observer still takes its lock, quietly
    }

    deinit {
        let observed = Counter()
        let token = hub.observe(Side.self) { _ in observed.increment() }
        let failing = hub.observe(Side.self) { _ in throw Failure() }  // takes the error handler's lock
        hub.post(Side(value: 1))
        hub.postAndRetain(Side(value: 2))
        _ = hub.retainedValue(of: Side.self)
        hub.removeRetainedValue(of: Side.self)
        hub.postAndRetain(Side(value: 3))
        hub.removeRetainedValue(Side(value: 3))
        hub.postAndRetain(Side(value: 4))
        hub.removeAllRetainedValues(of: Side.self)
        hub.postAndRetain(Side(value: 5))
        hub.removeAllRetainedValues()
        hub.post(Sticky(user: nil))  // reaches the streams and observers of the type being released
        hub.postAndRetain(Sticky(user: nil))
        hub.post(Unheard())  // takes the unobserved-post handler's lock
        token.cancel()
        failing.cancel()
        // At least: a deinit that releases another `HubUser` also observes that one's posts.
        releases.record(ran: observed.count >= 5)
    }
}

/// Counts the `deinit`s that ran to their end, and lets a test wait for them.
private final class Releases: Sendable {
    private struct State {
        var count = 0
        var allObserved = true
        var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    func record(ran observedEverything: Bool) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count += 1
            state.allObserved = state.allObserved && observedEverything
            let count = state.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return ready
        }
        for waiter in ready { waiter.resume() }
    }

    /// Suspends until `count` deinits have run, then checks that each saw its own posts.
    func wait(for count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
        let allObserved = state.withLock { $0.allObserved }
        #expect(allObserved, "a deinit's own observer missed its posts", sourceLocation: sourceLocation)
    }
}
