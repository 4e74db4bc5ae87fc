import Dispatch
import Herald
import Testing

/// Every kind of observation (one type, a family, every notification) has the same ten forms: a
/// target, the main actor or an actor; bounded by the token or an owner (not on an actor); a
/// synchronous or an `async` handler. Each test registers all ten forms of one kind, checks that
/// each one is called once per post, on its isolation and with its owner, and that the owner's
/// forms end with their owner.
@Suite("Observe forms")
struct ObserveFormsTests {
    final class Owner: Sendable {}

    /// The ten forms' names, as the handlers log them.
    static let all: Set<String> = [
        "target", "main", "actor", "owner target", "owner main",
        "async target", "async main", "async actor", "async owner target", "async owner main",
    ]
    static let withoutOwner = all.filter { !$0.contains("owner") }

    /// Posts with `post`, waits until idle, and returns the forms that ran.
    static func run(_ hub: NotificationHub, _ log: Log<String>, _ post: () -> Void) async throws -> Set<String> {
        let before = log.count
        post()
        try await hub.waitUntilIdle()
        return Set(log.values.dropFirst(before))
    }

    @Test("observe(_:): the ten forms, each on its isolation and with its owner; an owner's forms end with it")
    func typeForms() async throws {
        let hub = NotificationHub()
        let log = Log<String>()
        let store = Store()
        let queue = DeliveryTarget.queue(DispatchQueue(label: "forms.type"))
        var owner: Owner? = Owner()
        let ownerID = ObjectIdentifier(try #require(owner))  // nothing but `owner` holds it
        var tokens: [ObservationToken] = []
        tokens.append(hub.observe(Ping.self, on: queue) { _ in log.append("target") })
        tokens.append(
            hub.observe(Ping.self, on: MainActor.shared) { _ in
                MainActor.assertIsolated()
                log.append("main")
            })
        tokens.append(
            hub.observe(Ping.self, on: store) { store, _ in
                store.assertIsolated()
                log.append("actor")
            })
        hub.observe(Ping.self, owner: try #require(owner), on: queue) { me, _ in
            if ObjectIdentifier(me) == ownerID { log.append("owner target") }
        }
        hub.observe(Ping.self, owner: try #require(owner), on: MainActor.shared) { me, _ in
            MainActor.assertIsolated()
            if ObjectIdentifier(me) == ownerID { log.append("owner main") }
        }
        tokens.append(hub.observe(Ping.self, on: queue) { _ async in log.append("async target") })
        tokens.append(
            hub.observe(Ping.self, on: MainActor.shared) { _ async in
                MainActor.assertIsolated()
                log.append("async main")
            })
        tokens.append(
            hub.observe(Ping.self, on: store) { store, _ async in
                store.assertIsolated()
                log.append("async actor")
            })
        hub.observe(Ping.self, owner: try #require(owner)) { me, _ async in  // `on:` defaults to .posting
            if ObjectIdentifier(me) == ownerID { log.append("async owner target") }
        }
        hub.observe(Ping.self, owner: try #require(owner), on: MainActor.shared) { me, _ async in
            MainActor.assertIsolated()
            if ObjectIdentifier(me) == ownerID { log.append("async owner main") }
        }
        #expect(hub.observerCount(of: Ping.self) == 10)
        #expect(try await Self.run(hub, log) { hub.post(Ping(value: 1)) } == Self.all)
        owner = nil
        #expect(try await Self.run(hub, log) { hub.post(Ping(value: 2)) } == Self.withoutOwner)
        #expect(hub.observerCount(of: Ping.self) == 6)
        withExtendedLifetime(tokens) {}
    }

    @Test("observe(every:): the ten forms, each on its isolation and with its owner; an owner's forms end with it")
    func familyForms() async throws {
        let hub = NotificationHub()
        let log = Log<String>()
        let store = Store()
        let queue = DeliveryTarget.queue(DispatchQueue(label: "forms.family"))
        let family = (any AnalyticsEvent).self
        var owner: Owner? = Owner()
        let ownerID = ObjectIdentifier(try #require(owner))  // nothing but `owner` holds it
        var tokens: [ObservationToken] = []
        tokens.append(hub.observe(every: family, on: queue) { _ in log.append("target") })
        tokens.append(
            hub.observe(every: family, on: MainActor.shared) { _ in
                MainActor.assertIsolated()
                log.append("main")
            })
        tokens.append(
            hub.observe(every: family, on: store) { store, _ in
                store.assertIsolated()
                log.append("actor")
            })
        hub.observe(every: family, owner: try #require(owner), on: queue) { me, _ in
            if ObjectIdentifier(me) == ownerID { log.append("owner target") }
        }
        hub.observe(every: family, owner: try #require(owner), on: MainActor.shared) { me, _ in
            MainActor.assertIsolated()
            if ObjectIdentifier(me) == ownerID { log.append("owner main") }
        }
        tokens.append(hub.observe(every: family) { _ async in log.append("async target") })  // on .posting
        tokens.append(
            hub.observe(every: family, on: MainActor.shared) { _ async in
                MainActor.assertIsolated()
                log.append("async main")
            })
        tokens.append(
            hub.observe(every: family, on: store) { store, event async in
                store.assertIsolated()
                log.append("async actor")
            })
        hub.observe(every: family, owner: try #require(owner), on: queue) { me, _ async in
            if ObjectIdentifier(me) == ownerID { log.append("async owner target") }
        }
        hub.observe(every: family, owner: try #require(owner), on: MainActor.shared) { me, _ async in
            MainActor.assertIsolated()
            if ObjectIdentifier(me) == ownerID { log.append("async owner main") }
        }
        #expect(hub.observerCount(every: family) == 10)
        #expect(try await Self.run(hub, log) { hub.post(Purchased(cents: 1)) } == Self.all)
        owner = nil
        #expect(try await Self.run(hub, log) { hub.post(SignedIn(auditID: 2)) } == Self.withoutOwner)
        #expect(hub.observerCount(every: family) == 6)
        #expect(try await Self.run(hub, log) { hub.post(Heartbeat(beat: 3)) }.isEmpty)  // not of the family
        withExtendedLifetime(tokens) {}
    }

    @Test("observeAll: the ten forms, each on its isolation and with its owner; an owner's forms end with it")
    func tapForms() async throws {
        let hub = NotificationHub()
        let log = Log<String>()
        let store = Store()
        let queue = DeliveryTarget.queue(DispatchQueue(label: "forms.tap"))
        var owner: Owner? = Owner()
        let ownerID = ObjectIdentifier(try #require(owner))  // nothing but `owner` holds it
        var tokens: [ObservationToken] = []
        tokens.append(hub.observeAll(on: queue) { _ in log.append("target") })
        tokens.append(
            hub.observeAll(on: MainActor.shared) { _ in
                MainActor.assertIsolated()
                log.append("main")
            })
        tokens.append(
            hub.observeAll(on: store) { store, _ in
                store.assertIsolated()
                log.append("actor")
            })
        hub.observeAll(owner: try #require(owner), on: queue) { me, _ in
            if ObjectIdentifier(me) == ownerID { log.append("owner target") }
        }
        hub.observeAll(owner: try #require(owner), on: MainActor.shared) { me, _ in
            MainActor.assertIsolated()
            if ObjectIdentifier(me) == ownerID { log.append("owner main") }
        }
        tokens.append(hub.observeAll { _ async in log.append("async target") })  // on .posting
        tokens.append(
            hub.observeAll(on: MainActor.shared) { _ async in
                MainActor.assertIsolated()
                log.append("async main")
            })
        tokens.append(
            hub.observeAll(on: store) { store, _ async in
                store.assertIsolated()
                log.append("async actor")
            })
        hub.observeAll(owner: try #require(owner), on: queue) { me, _ async in
            if ObjectIdentifier(me) == ownerID { log.append("async owner target") }
        }
        hub.observeAll(owner: try #require(owner), on: MainActor.shared) { me, posted async in
            MainActor.assertIsolated()
            if ObjectIdentifier(me) == ownerID, posted.notification is Heartbeat { log.append("async owner main") }
        }
        #expect(hub.tapRegistrations().count == 10)
        #expect(try await Self.run(hub, log) { hub.post(Heartbeat(beat: 1)) } == Self.all)
        #expect(hub.unobservedPostCount == 1)  // taps only watch
        owner = nil
        #expect(try await Self.run(hub, log) { hub.post(Heartbeat(beat: 2)) } == Self.withoutOwner)
        #expect(hub.tapRegistrations().count == 6)
        withExtendedLifetime(tokens) {}
    }

    @Test("An async handler without `on:` runs on .posting: a task of its own, one call at a time, in order")
    func asyncDefaultsToPosting() async throws {
        let hub = NotificationHub()
        let seen = Log<Int>()
        let probe = OverlapProbe()
        let token = hub.observe(Ping.self) { ping async in
            probe.enter()
            await Task.yield()
            seen.append(ping.value)
            probe.leave()
        }
        #expect(hub.registrations(of: Ping.self).map(\.target) == [.posting])
        for value in 0..<20 { hub.post(Ping(value: value)) }
        try await hub.waitUntilIdle()
        #expect(seen.values == Array(0..<20))
        #expect(probe.overlaps == 0)
        token.cancel()
    }
}

@Suite("Families: replayLatest")
struct FamilyReplayTests {
    @Test("A family observer on a queue replays its types' retained values, in the order retained, before live posts")
    func queueReplay() async throws {
        let hub = NotificationHub()
        hub.postAndRetain(Purchased(cents: 1))
        hub.postAndRetain(Heartbeat(beat: 2))  // not of the family
        hub.postAndRetain(SignedIn(auditID: 3))
        hub.postAndRetain(Purchased(cents: 4))  // replaces Purchased(cents: 1)
        let seen = Log<String>()
        let token = hub.observe(
            every: (any AnalyticsEvent).self, on: .queue(DispatchQueue(label: "family.replay")), replayLatest: true
        ) { event in
            seen.append("\(event)")
        }
        hub.post(Purchased(cents: 5))
        try await hub.waitUntilIdle()
        #expect(seen.values == ["\(SignedIn(auditID: 3))", "\(Purchased(cents: 4))", "\(Purchased(cents: 5))"])
        token.cancel()
    }

    @Test("A posting-thread family observer replays inside observe; with a subject, only that subject's values")
    func postingReplayWithSubject() {
        let hub = NotificationHub()
        let mine = Subject()
        let other = Subject()
        hub.postAndRetain(Purchased(cents: 1), from: mine)
        hub.postAndRetain(Purchased(cents: 2), from: other)
        hub.postAndRetain(SignedIn(auditID: 3), from: mine)
        let seen = Log<String>()
        let token = hub.observe(every: (any AnalyticsEvent).self, from: mine, replayLatest: true) { event in
            seen.append(event.name)
        }
        #expect(seen.values == ["purchased", "signed_in"])
        hub.post(Purchased(cents: 4), from: other)
        hub.post(Purchased(cents: 5), from: mine)
        #expect(seen.values == ["purchased", "signed_in", "purchased"])
        withExtendedLifetime((token, mine, other)) {}
    }

    @Test("A family stream with replayLatest starts with the retained values of its types")
    func streamReplay() async {
        let hub = NotificationHub()
        hub.postAndRetain(SignedIn(auditID: 1))
        hub.postAndRetain(Heartbeat(beat: 2))
        hub.postAndRetain(Purchased(cents: 3))
        let stream = hub.notifications(every: (any AnalyticsEvent).self, replayLatest: true)
        hub.post(SignedIn(auditID: 4))
        var names: [String] = []
        for await event in stream {
            names.append(event.name)
            if names.count == 3 { break }
        }
        #expect(names == ["signed_in", "purchased", "signed_in"])
        stream.cancel()
    }

    @Test("Racing retaining posts reach a replaying family observer exactly once each")
    func raceExactlyOnce() async throws {
        let hub = NotificationHub()
        let seen = Log<Int>()
        let poster = Task.detached {
            for cents in 1...2_000 { hub.postAndRetain(Purchased(cents: cents), from: nil) }
        }
        let token = hub.observe(
            every: (any AnalyticsEvent).self, on: .queue(DispatchQueue(label: "family.race")), replayLatest: true
        ) { event in
            if let purchase = event as? Purchased { seen.append(purchase.cents) }
        }
        await poster.value
        try await hub.waitUntilIdle()
        let values = seen.values
        #expect(values == values.sorted())  // no value twice, none out of order
        #expect(Set(values).count == values.count)
        #expect(values.last == 2_000)
        token.cancel()
    }
}
