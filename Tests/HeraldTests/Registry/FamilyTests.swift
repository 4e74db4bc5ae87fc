import Dispatch
import Foundation
import Herald
import Testing

protocol AnalyticsEvent: TypedNotification {
    var name: String { get }
}

protocol Auditable: TypedNotification {
    var auditID: Int { get }
}

protocol Unrelated: TypedNotification {}

struct SignedIn: AnalyticsEvent, Auditable, Equatable {
    var name: String { "signed_in" }
    var auditID: Int
}

struct Purchased: AnalyticsEvent, Equatable {
    var name: String { "purchased" }
    var cents: Int
}

struct Heartbeat: TypedNotification, Equatable {
    var beat: Int
}

@Suite("Families: protocol observers")
struct FamilyTests {
    @Test("A protocol observer receives every conforming type, in post order, and nothing else")
    func receivesConformingTypes() {
        let hub = NotificationHub()
        let names = Log<String>()
        let token = hub.observe(every: (any AnalyticsEvent).self) { event in names.append(event.name) }
        hub.post(SignedIn(auditID: 1))
        hub.post(Heartbeat(beat: 1))
        hub.post(Purchased(cents: 300))
        hub.post(SignedIn(auditID: 2))
        #expect(names.values == ["signed_in", "purchased", "signed_in"])
        #expect(hub.unobservedPostCount == 1)  // the heartbeat
        token.cancel()
    }

    @Test("A type that conforms to several observed protocols reaches each observer once")
    func severalProtocols() {
        let hub = NotificationHub()
        let analytics = Counter()
        let audit = Log<Int>()
        let everything = Counter()
        let tokens = [
            hub.observe(every: (any AnalyticsEvent).self) { _ in analytics.increment() },
            hub.observe(every: (any Auditable).self) { event in audit.append(event.auditID) },
            hub.observe(every: (any Sendable).self) { _ in everything.increment() },
            hub.observe(every: (any Unrelated).self) { _ in Issue.record("Unrelated must not be reached") },
        ]
        hub.post(SignedIn(auditID: 7))
        hub.post(SignedIn(auditID: 8))
        #expect(analytics.count == 2)
        #expect(audit.values == [7, 8])
        #expect(everything.count == 2)
        withExtendedLifetime(tokens) {}
    }

    @Test("Observers registered before and after a type is first posted both receive it")
    func registeredBeforeAndAfterFirstPost() {
        let hub = NotificationHub()
        let early = Log<Int>()
        let late = Log<Int>()
        let concrete = Log<Int>()
        let concreteToken = hub.observe(Purchased.self) { concrete.append($0.cents) }
        let earlyToken = hub.observe(every: (any AnalyticsEvent).self) { event in
            early.append((event as? Purchased)?.cents ?? -1)
        }
        hub.post(Purchased(cents: 1))  // the type's first post: its membership is decided now
        let lateToken = hub.observe(every: (any AnalyticsEvent).self) { event in
            late.append((event as? Purchased)?.cents ?? -1)
        }
        hub.post(Purchased(cents: 2))
        earlyToken.cancel()
        hub.post(Purchased(cents: 3))
        #expect(concrete.values == [1, 2, 3])
        #expect(early.values == [1, 2])
        #expect(late.values == [2, 3])
        withExtendedLifetime((concreteToken, lateToken)) {}
    }

    @Test("Concrete and protocol observers on the posting thread run in registration order")
    func registrationOrderAcrossKinds() {
        let hub = NotificationHub()
        let order = Log<String>()
        let tokens = [
            hub.observe(SignedIn.self) { _ in order.append("concrete 1") },
            hub.observe(every: (any AnalyticsEvent).self) { _ in order.append("protocol 2") },
            hub.observe(SignedIn.self) { _ in order.append("concrete 3") },
            hub.observeAll { _ in order.append("tap 4") },
            hub.observe(every: (any Auditable).self) { _ in order.append("protocol 5") },
        ]
        hub.post(SignedIn(auditID: 1))
        #expect(order.values == ["concrete 1", "protocol 2", "concrete 3", "tap 4", "protocol 5"])
        withExtendedLifetime(tokens) {}
    }

    @Test("A protocol observer cancelled during a post is not called by that post, nor later")
    func cancelDuringPost() {
        let hub = NotificationHub()
        let calls = Counter()
        let tokenBox = Locked<ObservationToken?>(nil)
        let canceller = hub.observe(SignedIn.self) { _ in tokenBox.withLock { $0?.cancel() } }
        tokenBox.withLock { $0 = hub.observe(every: (any AnalyticsEvent).self) { _ in calls.increment() } }
        hub.post(SignedIn(auditID: 1))
        hub.post(Purchased(cents: 1))
        #expect(calls.count == 0)
        withExtendedLifetime(canceller) {}
    }

    @Test("Once a protocol observer is cancelled and its token dropped, the hub holds nothing of it")
    func cancelReleasesHandler() {
        let hub = NotificationHub()
        final class Capture: Sendable {
            let released: Counter
            init(_ released: Counter) { self.released = released }
            deinit { released.increment() }
        }
        let released = Counter()
        var capture: Capture? = Capture(released)
        var token: ObservationToken? = hub.observe(every: (any AnalyticsEvent).self) { [capture] _ in _ = capture }
        capture = nil
        hub.post(Purchased(cents: 1))  // the type now has a stand-in for the observer, cached for posts
        #expect(released.count == 0)
        token?.cancel()
        token = nil
        #expect(released.count == 1)
    }

    @Test("The subject filter and the owner work for protocol observers")
    func subjectAndOwner() {
        let hub = NotificationHub()
        let account = Subject()
        let other = Subject()
        let filtered = Log<Int>()
        let filteredToken = hub.observe(every: (any Auditable).self, from: account) { filtered.append($0.auditID) }
        final class Owner: Sendable {
            let seen = Log<String>()
        }
        var owner: Owner? = Owner()
        let seen = owner?.seen
        if let owner {
            hub.observe(every: (any AnalyticsEvent).self, owner: owner) { owner, event in owner.seen.append(event.name)
            }
        }
        hub.post(SignedIn(auditID: 1), from: account)
        hub.post(SignedIn(auditID: 2), from: other)
        hub.post(SignedIn(auditID: 3))
        owner = nil
        hub.post(Purchased(cents: 1))
        #expect(filtered.values == [1])
        #expect(seen?.values == ["signed_in", "signed_in", "signed_in"])
        withExtendedLifetime(filteredToken) {}
    }

    @Test("On a serial queue a protocol observer sees every post of a thread in order, across types")
    func fifoAcrossTypesOnQueue() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "family.fifo")
        let seen = Log<String>()
        let count = 300
        try await confirmation(expectedCount: count) { delivered in
            let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(queue)) { event in
                if let purchase = event as? Purchased {
                    seen.append("p\(purchase.cents)")
                } else if let signIn = event as? SignedIn {
                    seen.append("s\(signIn.auditID)")
                }
                delivered()
            }
            for index in 0..<count {
                if index.isMultiple(of: 2) {
                    hub.post(Purchased(cents: index))
                } else {
                    hub.post(SignedIn(auditID: index))
                }
            }
            try await hub.waitUntilIdle()
            token.cancel()
        }
        #expect(seen.values == (0..<count).map { $0.isMultiple(of: 2) ? "p\($0)" : "s\($0)" })
    }

    @Test("Cause before effect across a concrete reactor and a protocol watcher on other queues")
    func causalOrderAcrossKinds() async throws {
        let hub = NotificationHub()
        let rounds = 300
        let reactorQueue = DispatchQueue(label: "family.reactor")
        let watcherQueue = DispatchQueue(label: "family.watcher")
        // The reactor handles each cause (a sign-in) and posts its effect (a purchase).
        let reactor = hub.observe(SignedIn.self, on: .queue(reactorQueue)) { [weak hub] event in
            hub?.post(Purchased(cents: event.auditID))
        }
        let seen = Log<String>()
        let watcher = hub.observe(every: (any AnalyticsEvent).self, on: .queue(watcherQueue)) { event in
            seen.append(
                event is SignedIn
                    ? "cause \((event as? SignedIn)?.auditID ?? -1)" : "effect \((event as? Purchased)?.cents ?? -1)")
        }
        for round in 0..<rounds {
            hub.post(SignedIn(auditID: round))
        }
        try await hub.waitUntilIdle()
        let values = seen.values
        #expect(values.count == 2 * rounds)
        for round in 0..<rounds {
            let cause = values.firstIndex(of: "cause \(round)")
            let effect = values.firstIndex(of: "effect \(round)")
            #expect(cause != nil && effect != nil && cause! < effect!, "round \(round)")
        }
        withExtendedLifetime((reactor, watcher)) {}
    }

    @Test("A waiting post waits for protocol observers and counts them")
    func waitingPost() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "family.wait")
        let done = Counter()
        let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(queue)) { _ in done.increment() }
        let report = await hub.postAndWait(Purchased(cents: 5))
        #expect(done.count == 1)
        #expect(report.deliveredCount == 1)
        token.cancel()
    }

    @Test("A failing protocol observer is reported with the family's name")
    func failureNamesFamily() {
        let hub = NotificationHub()
        let failures = Log<String>()
        hub.errorHandler = { failure in failures.append(failure.notificationType) }
        let token = hub.observe(every: (any AnalyticsEvent).self) { _ in throw Boom(code: 1) }
        hub.post(Purchased(cents: 1))
        #expect(failures.values == ["AnalyticsEvent"])
        token.cancel()
    }

    @Test("Observers of one type are unaffected by a protocol observer of unrelated types")
    func unrelatedProtocolObserversDoNotMatch() {
        let hub = NotificationHub()
        let beats = Log<Int>()
        let tokens = (0..<10).map { _ in hub.observe(every: (any Unrelated).self) { _ in Issue.record("unrelated") } }
        let token = hub.observe(Heartbeat.self) { beats.append($0.beat) }
        for beat in 0..<5 { hub.post(Heartbeat(beat: beat)) }
        #expect(beats.values == [0, 1, 2, 3, 4])
        #expect(hub.observerCount(of: Heartbeat.self) == 1)
        withExtendedLifetime((tokens, token)) {}
    }

    @Test("A family stream yields every conforming type in post order, and ends its observation when cancelled")
    func familyStream() async {
        let hub = NotificationHub()
        let stream = hub.notifications(every: (any AnalyticsEvent).self)
        #expect(hub.observerCount(every: (any AnalyticsEvent).self) == 1)
        await Task.detached {
            hub.post(SignedIn(auditID: 1))
            hub.post(Heartbeat(beat: 1))
            hub.post(Purchased(cents: 2))
            hub.post(SignedIn(auditID: 3))
        }.value
        var names: [String] = []
        for await event in stream {
            names.append(event.name)
            if names.count == 3 { break }
        }
        #expect(names == ["signed_in", "purchased", "signed_in"])
        stream.cancel()
        #expect(hub.observerCount(every: (any AnalyticsEvent).self) == 0)
        hub.post(Purchased(cents: 4))
        #expect(hub.unobservedPostCount == 2)
    }

    @Test("An async protocol observer runs one call at a time, in post order across types")
    func asyncFamilyObserver() async throws {
        let hub = NotificationHub()
        let probe = OverlapProbe()
        let seen = Log<String>()
        let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(DispatchQueue(label: "family.async"))) {
            event async in
            probe.enter()
            await Task.yield()
            seen.append(event.name)
            probe.leave()
        }
        for index in 0..<20 {
            if index.isMultiple(of: 2) { hub.post(SignedIn(auditID: index)) } else { hub.post(Purchased(cents: index)) }
        }
        try await hub.waitUntilIdle()
        #expect(seen.values == (0..<20).map { $0.isMultiple(of: 2) ? "signed_in" : "purchased" })
        #expect(probe.overlaps == 0)
        token.cancel()
    }

    @Test("A class hierarchy: an observer of the base class receives its subclasses")
    func classHierarchy() {
        let hub = NotificationHub()
        let seen = Log<String>()
        let token = hub.observe(every: BaseEvent.self) { event in seen.append(event.label) }
        hub.post(DerivedEvent())
        hub.post(OtherDerivedEvent())
        hub.post(Heartbeat(beat: 0))
        #expect(seen.values == ["derived", "other"])
        token.cancel()
    }
}

class BaseEvent: @unchecked Sendable {  // Immutable.
    var label: String { "base" }
}

final class DerivedEvent: BaseEvent, TypedNotification, @unchecked Sendable {  // Immutable.
    override var label: String { "derived" }
}

final class OtherDerivedEvent: BaseEvent, TypedNotification, @unchecked Sendable {  // Immutable.
    override var label: String { "other" }
}

@Suite("Families: taps")
struct TapTests {
    @Test("A tap receives every notification with its type and subject's identity")
    func receivesEverything() {
        let hub = NotificationHub()
        let subject = Subject()
        let seen = Log<String>()
        let token = hub.observeAll { posted in
            seen.append("\(posted.type) \(posted.isFrom(subject)) \(posted.notification)")
        }
        hub.post(Heartbeat(beat: 1), from: subject)
        hub.post(Purchased(cents: 2))
        #expect(seen.values == ["Heartbeat true Heartbeat(beat: 1)", "Purchased false Purchased(cents: 2)"])
        token.cancel()
    }

    @Test("A post that reaches only taps is still reported as unobserved")
    func doesNotSilenceUnobserved() {
        let hub = NotificationHub()
        let unobserved = Log<String>()
        hub.unobservedPostHandler = { post in unobserved.append(post.notificationType) }
        let taps = Counter()
        let token = hub.observeAll { _ in taps.increment() }
        hub.post(Heartbeat(beat: 1))
        let observer = hub.observe(Purchased.self) { _ in }
        hub.post(Purchased(cents: 1))
        #expect(taps.count == 2)
        #expect(unobserved.values == ["Heartbeat"])
        #expect(hub.unobservedPostCount == 1)
        withExtendedLifetime((token, observer)) {}
    }

    @Test("Taps do not count as observers of a type")
    func notCounted() {
        let hub = NotificationHub()
        let token = hub.observeAll { _ in }
        let family = hub.observe(every: (any AnalyticsEvent).self) { _ in }
        hub.post(Purchased(cents: 1))
        #expect(hub.observerCount(of: Purchased.self) == 0)
        #expect(!hub.hasObservers(of: Purchased.self))
        #expect(hub.registrations(of: Purchased.self).isEmpty)
        withExtendedLifetime((token, family)) {}
    }

    @Test("A waiting post neither waits for a tap nor counts it")
    func notWaitedFor() async throws {
        let hub = NotificationHub()
        let gate = DispatchSemaphore(value: 0)
        let tapQueue = DispatchQueue(label: "tap.blocked")
        let tapped = Counter()
        let token = hub.observeAll(on: .queue(tapQueue)) { _ in
            gate.wait()  // held until the waiting post has returned
            tapped.increment()
        }
        let observed = Counter()
        let observer = hub.observe(Purchased.self, on: .queue(DispatchQueue(label: "tap.observer"))) { _ in
            observed.increment()
        }
        let report = await hub.postAndWait(Purchased(cents: 1))
        #expect(report.deliveredCount == 1)
        #expect(observed.count == 1)
        #expect(tapped.count == 0)
        gate.signal()
        try await hub.waitUntilIdle()
        #expect(tapped.count == 1)
        withExtendedLifetime((token, observer)) {}
    }

    @Test("A tap on a queue sees posts in order across types, and retained values are not replayed to it")
    func orderAndNoReplay() async throws {
        let hub = NotificationHub()
        hub.postAndRetain(Heartbeat(beat: 0))
        let seen = Log<String>()
        let token = hub.observeAll(on: .queue(DispatchQueue(label: "tap.order"))) { posted in
            seen.append("\(posted.notification)")
        }
        for index in 1...50 {
            if index.isMultiple(of: 2) { hub.post(Heartbeat(beat: index)) } else { hub.post(Purchased(cents: index)) }
        }
        try await hub.waitUntilIdle()
        #expect(
            seen.values
                == (1...50).map { $0.isMultiple(of: 2) ? "\(Heartbeat(beat: $0))" : "\(Purchased(cents: $0))" })
        token.cancel()
    }
}

@Suite("Families: tap forms")
struct TapFormTests {
    @Test("A tap on an actor and an async tap see every notification in post order")
    func actorAndAsyncTaps() async throws {
        let hub = NotificationHub()
        let store = Store()
        let onActor = Log<String>()
        let actorTap = hub.observeAll(on: store) { _, posted in onActor.append("\(posted.type)") }
        let probe = OverlapProbe()
        let asyncSeen = Log<String>()
        let asyncTap = hub.observeAll(on: .queue(DispatchQueue(label: "tap.async"))) { posted async in
            probe.enter()
            await Task.yield()
            asyncSeen.append("\(posted.type)")
            probe.leave()
        }
        for index in 0..<10 {
            if index.isMultiple(of: 2) { hub.post(Heartbeat(beat: index)) } else { hub.post(Purchased(cents: index)) }
        }
        try await hub.waitUntilIdle()
        let expected = (0..<10).map { $0.isMultiple(of: 2) ? "Heartbeat" : "Purchased" }
        #expect(onActor.values == expected)
        #expect(asyncSeen.values == expected)
        #expect(probe.overlaps == 0)
        #expect(hub.unobservedPostCount == 10)  // taps only watch
        withExtendedLifetime((actorTap, asyncTap)) {}
    }
}

@Suite("Priority")
struct PriorityTests {
    @Test("On the posting thread, higher priorities run first; equal ones keep registration order")
    func postingThreadOrder() {
        let hub = NotificationHub()
        let order = Log<String>()
        let tokens = [
            hub.observe(Ping.self) { _ in order.append("0a") },
            hub.observe(Ping.self, priority: -5) { _ in order.append("-5") },
            hub.observe(Ping.self, priority: 10) { _ in order.append("10a") },
            hub.observe(Ping.self) { _ in order.append("0b") },
            hub.observe(Ping.self, priority: 10) { _ in order.append("10b") },
            hub.observeAll(priority: 20) { _ in order.append("tap 20") },
        ]
        hub.post(Ping(value: 1))
        #expect(order.values == ["tap 20", "10a", "10b", "0a", "0b", "-5"])
        withExtendedLifetime(tokens) {}
    }

    @Test("Priority applies across concrete and protocol observers")
    func acrossFamilies() {
        let hub = NotificationHub()
        let order = Log<String>()
        let tokens = [
            hub.observe(Purchased.self) { _ in order.append("concrete 0") },
            hub.observe(every: (any AnalyticsEvent).self, priority: 1) { _ in order.append("protocol 1") },
            hub.observe(Purchased.self, priority: 2) { _ in order.append("concrete 2") },
        ]
        hub.post(Purchased(cents: 1))
        #expect(order.values == ["concrete 2", "protocol 1", "concrete 0"])
        withExtendedLifetime(tokens) {}
    }

    @Test("On one serial target, drains start in priority order for a post")
    func serialTargetOrder() async {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let order = Log<String>()
        let tokens = [
            hub.observe(Ping.self, on: .executor(executor)) { _ in order.append("low") },
            hub.observe(Ping.self, on: .executor(executor), priority: 5) { _ in order.append("high") },
        ]
        hub.post(Ping(value: 1))
        while executor.runNext() {}
        #expect(order.values == ["high", "low"])
        withExtendedLifetime(tokens) {}
    }

    @Test("Cancelling a prioritised observer restores the order of the rest")
    func cancelPrioritised() {
        let hub = NotificationHub()
        let order = Log<String>()
        let low = hub.observe(Ping.self) { _ in order.append("low") }
        let high = hub.observe(Ping.self, priority: 1) { _ in order.append("high") }
        hub.post(Ping(value: 1))
        high.cancel()
        hub.post(Ping(value: 2))
        #expect(order.values == ["high", "low", "low"])
        withExtendedLifetime(low) {}
    }
}
