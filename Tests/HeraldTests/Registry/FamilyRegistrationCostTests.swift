@_spi(Testing) import Herald
import Testing

/// A family no test observes before this suite does.
protocol NeverObservedFamily: TypedNotification {}

struct NeverObservedMember: NeverObservedFamily {}

@Suite("Family registration: cost in registry entries")
struct FamilyRegistrationCostTests {
    /// A hub that has seen `count` types that belong to no family of these tests.
    static func hub(seen count: Int) -> NotificationHub {
        let hub = NotificationHub()
        for type in fillerTypes(count: count) { hub.post(type.init()) }
        return hub
    }

    @Test("Registering a family observer touches no type entry, however many types the hub has seen")
    func registrationTouchesNoType() {
        let hub = Self.hub(seen: 500)
        let before = hub.registryEntriesTouched
        let token = hub.observe(every: (any SequencedPost).self) { _ in }
        #expect(hub.registryEntriesTouched == before)
        token.cancel()
        // No type joined it: its cancellation touches none either.
        #expect(hub.registryEntriesTouched == before)
    }

    @Test("The first registration of a family no observer has used touches no type entry")
    func firstRegistrationOfAFamily() {
        let hub = Self.hub(seen: 500)
        hub.post(NeverObservedMember())
        let before = hub.registryEntriesTouched
        let token = hub.observe(every: (any NeverObservedFamily).self) { _ in }
        #expect(hub.registryEntriesTouched == before)
        hub.post(NeverObservedMember())
        let beforeCancel = hub.registryEntriesTouched
        token.cancel()
        #expect(hub.registryEntriesTouched - beforeCancel == 1)
    }

    @Test("Cancelling a family observer touches the entries of its member types and no other")
    func cancellationTouchesMemberTypes() {
        let hub = Self.hub(seen: 500)
        let received = Counter()
        let token = hub.observe(every: (any SequencedPost).self) { _ in received.increment() }
        hub.post(MemberPostA(poster: 0, sequence: 0))
        hub.post(MemberPostB(poster: 0, sequence: 1))
        hub.post(FillerRoot())  // not a member
        #expect(received.count == 2)
        let before = hub.registryEntriesTouched
        token.cancel()
        #expect(hub.registryEntriesTouched - before == 2)
        hub.post(MemberPostA(poster: 0, sequence: 2))
        #expect(received.count == 2)
    }

    @Test("Registering a tap touches no type entry; cancelling it touches the types posted since")
    func tap() {
        let hub = Self.hub(seen: 500)
        let before = hub.registryEntriesTouched
        let received = Counter()
        let token = hub.observeAll { _ in received.increment() }
        #expect(hub.registryEntriesTouched == before)
        hub.post(MemberPostA(poster: 0, sequence: 0))
        hub.post(FillerRoot())
        hub.post(MemberPostA(poster: 0, sequence: 1))
        #expect(received.count == 3)
        let beforeCancel = hub.registryEntriesTouched
        token.cancel()
        #expect(hub.registryEntriesTouched - beforeCancel == 2)
    }

    @Test("An observer of one type touches that type's entry when it registers and when it cancels")
    func observerOfOneType() {
        let hub = Self.hub(seen: 500)
        let before = hub.registryEntriesTouched
        let token = hub.observe(MemberPostA.self) { _ in }
        #expect(hub.registryEntriesTouched - before == 1)
        token.cancel()
        #expect(hub.registryEntriesTouched - before == 2)
    }

    @Test("After a family registration, each type's next post brings it up to date once")
    func postsBringTypesUpToDate() {
        let hub = Self.hub(seen: 50)
        let token = hub.observe(every: (any SequencedPost).self) { _ in }
        let before = hub.registryMembershipUpdates
        hub.post(MemberPostA(poster: 0, sequence: 0))
        hub.post(FillerRoot())
        hub.post(MemberPostA(poster: 0, sequence: 1))
        hub.post(FillerRoot())
        #expect(hub.registryMembershipUpdates - before == 2)
        token.cancel()
    }
}
