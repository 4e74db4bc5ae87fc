import Dispatch
import Foundation
import Herald
import Testing

/// A notification bridged both ways in these tests.
struct Bridged: NotificationConvertible, Codable, Equatable {
    static let notificationName = Notification.Name("HeraldTests.Bridged")
    var value: Int
}

/// A notification whose conversion to `Notification` always fails.
struct Unconvertible: NotificationConvertible, Codable {
    static let notificationName = Notification.Name("HeraldTests.Unconvertible")

    struct Refusal: Error {}

    func makeNotification(object: AnyObject?) throws -> Notification {
        throw Refusal()
    }
}

/// Registers a legacy observer and removes it when the test is done with it.
final class LegacyObserver: Sendable {
    private let registration: ObservationToken

    init(
        _ center: NotificationCenter, _ name: Notification.Name, object: AnyObject? = nil,
        _ block: @escaping @Sendable (Notification) -> Void
    ) {
        let token = TokenBox(center.addObserver(forName: name, object: object, queue: nil, using: block))
        registration = ObservationToken { center.removeObserver(token.token) }
    }

    private final class TokenBox: @unchecked Sendable {  // Immutable; removeObserver is thread-safe.
        let token: any NSObjectProtocol
        init(_ token: any NSObjectProtocol) { self.token = token }
    }

    func cancel() {
        registration.cancel()
    }
}

@Suite struct ForwardingTests {
    @Test("A legacy post with user info built by hand arrives at a typed observer with the right values")
    func legacyPostArrivesAtTypedObserver() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let received = Log<LegacyUserChanged>()
        let bridge = hub.forward(LegacyUserChanged.self, fromCenter: center)
        let observation = hub.observe(LegacyUserChanged.self) { received.append($0) }

        let profile = NSMutableDictionary()
        profile["name"] = "Grace"
        profile["age"] = NSNumber(value: 85)
        center.post(
            name: Notification.Name("LegacyUserDidChangeNotification"), object: nil,
            userInfo: [
                "userID": NSNumber(value: 7), "status": 201, "ratio": 0.5, "isAdmin": true, "profile": profile,
                "tags": ["a"], "homePage": "https://example.org", "requestID": "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
            ])

        #expect(
            received.values == [
                LegacyUserChanged(
                    userID: 7, status: 201, ratio: 0.5, isAdmin: true,
                    profile: EveryType.Profile(name: "Grace", age: 85, email: nil), tags: ["a"],
                    homePage: URL(string: "https://example.org")!,
                    requestID: UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!, note: nil)
            ])
        withExtendedLifetime((bridge, observation)) {}
    }

    @Test("An undecodable legacy post goes to the hub's error handler with the decoding error")
    func undecodablePostGoesToErrorHandler() throws {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let received = Counter()
        let bridge = hub.forward(Bridged.self, fromCenter: center)
        let observation = hub.observe(Bridged.self) { _ in received.increment() }

        center.post(name: Bridged.notificationName, object: nil, userInfo: ["value": "seven"])

        #expect(received.count == 0)
        let failure = try #require(failures.values.first)
        #expect(failures.count == 1)
        let error = try #require(failure.error as? UserInfoDecodingError)
        #expect(error.description == #"userInfo["value"]: expected Int, found String "seven""#)
        #expect(failure.notificationType == "Bridged")
        #expect(failure.fileID.hasSuffix("ForwardingTests.swift"))
        withExtendedLifetime((bridge, observation)) {}
    }

    @Test("A hub post is re-posted on the center for legacy observers")
    func hubPostReachesLegacyObservers() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let values = Log<Int>()
        let legacy = LegacyObserver(center, Bridged.notificationName) { note in
            values.append(note.userInfo?["value"] as? Int ?? -1)
        }
        let bridge = hub.forward(Bridged.self, toCenter: center)

        hub.post(Bridged(value: 42))

        #expect(values.values == [42])
        withExtendedLifetime((bridge, legacy)) {}
    }

    @Test("Two-way forwarding on one type delivers each post exactly once on each side")
    func twoWayForwardingDeliversOncePerSide() throws {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let hubSide = Log<Int>()
        let centerSide = Log<Int>()
        let toCenter = hub.forward(Bridged.self, toCenter: center)
        let fromCenter = hub.forward(Bridged.self, fromCenter: center)
        let observation = hub.observe(Bridged.self) { hubSide.append($0.value) }
        let legacy = LegacyObserver(center, Bridged.notificationName) { note in
            centerSide.append(note.userInfo?["value"] as? Int ?? -1)
        }

        hub.post(Bridged(value: 1))
        center.post(try Bridged(value: 2).makeNotification())
        hub.postAndWait(Bridged(value: 3))
        center.post(name: Bridged.notificationName, object: nil, userInfo: ["value": 4])

        #expect(hubSide.values == [1, 2, 3, 4])
        #expect(centerSide.values == [1, 2, 3, 4])
        withExtendedLifetime((toCenter, fromCenter, observation, legacy)) {}
    }

    @Test("Two-way forwarding delivers once per side when both sides post from many threads at once")
    func twoWayForwardingFromManyThreads() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let hubSide = Log<Int>()
        let centerSide = Log<Int>()
        let bridges = [hub.forward(Bridged.self, toCenter: center), hub.forward(Bridged.self, fromCenter: center)]
        let observation = hub.observe(Bridged.self) { hubSide.append($0.value) }
        let legacy = LegacyObserver(center, Bridged.notificationName) { note in
            centerSide.append(note.userInfo?["value"] as? Int ?? -1)
        }

        let count = 400
        DispatchQueue.concurrentPerform(iterations: count) { index in
            if index.isMultiple(of: 2) {
                hub.post(Bridged(value: index))
            } else {
                center.post(name: Bridged.notificationName, object: nil, userInfo: ["value": index])
            }
        }

        #expect(hubSide.values.sorted() == Array(0..<count))
        #expect(centerSide.values.sorted() == Array(0..<count))
        withExtendedLifetime((bridges, observation, legacy)) {}
    }

    @Test("Two hubs bridged through one center each deliver a post once")
    func twoHubsThroughOneCenter() {
        let first = NotificationHub()
        let second = NotificationHub()
        let center = NotificationCenter()
        let firstSide = Log<Int>()
        let secondSide = Log<Int>()
        let bridges = [
            first.forward(Bridged.self, toCenter: center), first.forward(Bridged.self, fromCenter: center),
            second.forward(Bridged.self, toCenter: center), second.forward(Bridged.self, fromCenter: center),
        ]
        let observations = [
            first.observe(Bridged.self) { firstSide.append($0.value) },
            second.observe(Bridged.self) { secondSide.append($0.value) },
        ]

        first.post(Bridged(value: 1))
        second.post(Bridged(value: 2))

        #expect(firstSide.values == [1, 2])
        #expect(secondSide.values == [1, 2])
        withExtendedLifetime((bridges, observations)) {}
    }

    @Test("A cancelled or released forwarding observation forwards nothing more")
    func cancelledForwardingStops() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let hubSide = Counter()
        let centerSide = Counter()
        let observation = hub.observe(Bridged.self) { _ in hubSide.increment() }
        let legacy = LegacyObserver(center, Bridged.notificationName) { _ in centerSide.increment() }

        let fromCenter = hub.forward(Bridged.self, fromCenter: center)
        fromCenter.cancel()
        #expect(fromCenter.isCancelled)
        var toCenter: ObservationToken? = hub.forward(Bridged.self, toCenter: center)
        #expect(toCenter != nil)
        toCenter = nil

        center.post(name: Bridged.notificationName, object: nil, userInfo: ["value": 1])
        hub.post(Bridged(value: 2))

        #expect(hubSide.count == 1)  // only the hub's own post
        #expect(centerSide.count == 1)  // only the center's own post
        #expect(hub.observerCount(of: Bridged.self) == 1)
        withExtendedLifetime((observation, legacy)) {}
    }

    @Test("The legacy notification's object becomes the hub post's subject")
    func objectBecomesSubject() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let sender = NSObject()
        let other = NSObject()
        let fromSender = Counter()
        let fromAnyone = Counter()
        let bridge = hub.forward(Bridged.self, fromCenter: center)
        let observations = [
            hub.observe(Bridged.self, from: sender) { _ in fromSender.increment() },
            hub.observe(Bridged.self) { _ in fromAnyone.increment() },
        ]

        center.post(name: Bridged.notificationName, object: sender, userInfo: ["value": 1])
        center.post(name: Bridged.notificationName, object: other, userInfo: ["value": 2])

        #expect(fromSender.count == 1)
        #expect(fromAnyone.count == 2)
        withExtendedLifetime((bridge, observations, sender, other)) {}
    }

    @Test("Forwarding from the center can be limited to one object")
    func forwardingFromCenterFiltersByObject() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let sender = NSObject()
        let received = Log<Int>()
        let bridge = hub.forward(Bridged.self, fromCenter: center, object: sender)
        let observation = hub.observe(Bridged.self) { received.append($0.value) }

        center.post(name: Bridged.notificationName, object: NSObject(), userInfo: ["value": 1])
        center.post(name: Bridged.notificationName, object: sender, userInfo: ["value": 2])

        #expect(received.values == [2])
        withExtendedLifetime((bridge, observation, sender)) {}
    }

    @Test("Forwarding to the center with a subject forwards that subject's posts, with it as the object")
    func forwardingToCenterWithSubject() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let session = NSObject()
        let sessionID = ObjectIdentifier(session)
        let objects = Log<Bool>()
        let legacy = LegacyObserver(center, Bridged.notificationName) { note in
            objects.append((note.object as AnyObject?).map(ObjectIdentifier.init) == sessionID)
        }
        let bridge = hub.forward(Bridged.self, toCenter: center, from: session)

        hub.post(Bridged(value: 1))
        hub.post(Bridged(value: 2), from: session)

        #expect(objects.values == [true])
        withExtendedLifetime((bridge, legacy, session)) {}
    }

    @Test("Forwarding to the center posts each notification with its post's subject as the object")
    func forwardingToCenterCarriesEachSubject() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let first = NSObject()
        let second = NSObject()
        let firstValues = Log<Int>()
        let secondValues = Log<Int>()
        let anyObjects = Log<ObjectIdentifier?>()
        let legacy = [
            LegacyObserver(center, Bridged.notificationName, object: first) { note in
                firstValues.append(note.userInfo?["value"] as? Int ?? -1)
            },
            LegacyObserver(center, Bridged.notificationName, object: second) { note in
                secondValues.append(note.userInfo?["value"] as? Int ?? -1)
            },
            LegacyObserver(center, Bridged.notificationName) { note in
                anyObjects.append((note.object as AnyObject?).map(ObjectIdentifier.init))
            },
        ]
        let bridge = hub.forward(Bridged.self, toCenter: center)

        hub.post(Bridged(value: 1), from: first)
        hub.post(Bridged(value: 2), from: second)
        hub.post(Bridged(value: 3))
        hub.postAndWait(Bridged(value: 4), from: second)

        #expect(firstValues.values == [1])
        #expect(secondValues.values == [2, 4])
        #expect(
            anyObjects.values == [ObjectIdentifier(first), ObjectIdentifier(second), nil, ObjectIdentifier(second)])
        withExtendedLifetime((bridge, legacy, first, second)) {}
    }

    @Test("A value that does not convert to a Notification goes to the hub's error handler")
    func conversionFailureGoesToErrorHandler() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let bridge = hub.forward(Unconvertible.self, toCenter: center)

        hub.post(Unconvertible())

        #expect(failures.values.map { $0.error is Unconvertible.Refusal } == [true])
        withExtendedLifetime(bridge) {}
    }

    @Test("The center does not keep the hub alive")
    func centerDoesNotRetainHub() {
        let center = NotificationCenter()
        weak var weakHub: NotificationHub?
        var bridge: ObservationToken?
        do {
            let hub = NotificationHub()
            bridge = hub.forward(Bridged.self, fromCenter: center)
            weakHub = hub
        }
        #expect(weakHub == nil)
        center.post(name: Bridged.notificationName, object: nil, userInfo: ["value": 1])
        #expect(bridge?.isCancelled == false)
    }
}

/// The Migration article's legacy contract, with the Foundation types legacy code casts to.
private struct AccountOpened: NotificationConvertible, Codable, Equatable {
    static let notificationName = Notification.Name("HeraldTests.AccountOpenedNotification")

    struct Plan: Codable, Equatable {
        var name: String
        var seats: Int
    }

    var userID: Int
    var homePage: URL?
    var requestID: UUID
    var openedAt: Date
    var avatar: Data
    var ratio: Double
    var plan: Plan
    var tags: [String]
}

/// What a legacy observer read, by the casts legacy code writes.
private struct LegacyReading: Equatable, Sendable {
    var userID: Int?
    var homePage: URL?
    var requestID: UUID?
    var openedAt: Date?
    var avatar: Data?
    var ratio: Double?
    var planSeats: Int?
    var tags: [String]?
}

@Suite("NotificationCenter bridge: legacy observers get the Foundation objects they cast to")
struct LegacyContractTests {
    private static let sample = AccountOpened(
        userID: 7, homePage: URL(string: "https://example.org/ada"),
        requestID: UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!,
        openedAt: Date(timeIntervalSince1970: 1_700_000_000), avatar: Data([1, 2, 3]), ratio: 0.5,
        plan: AccountOpened.Plan(name: "team", seats: 5), tags: ["new"])

    @Test("hub → center: a legacy observer reads as? URL, as? UUID, as? Date, as? Data and numbers")
    func hubToCenter() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let readings = Log<LegacyReading>()
        let legacy = LegacyObserver(center, AccountOpened.notificationName) { note in
            let info = note.userInfo ?? [:]
            readings.append(
                LegacyReading(
                    userID: info["userID"] as? Int, homePage: info["homePage"] as? URL,
                    requestID: info["requestID"] as? UUID, openedAt: info["openedAt"] as? Date,
                    avatar: info["avatar"] as? Data, ratio: (info["ratio"] as? NSNumber)?.doubleValue,
                    planSeats: (info["plan"] as? [String: Any])?["seats"] as? Int, tags: info["tags"] as? [String]))
        }
        let bridge = hub.forward(AccountOpened.self, toCenter: center)
        hub.post(Self.sample)
        #expect(
            readings.values == [
                LegacyReading(
                    userID: 7, homePage: Self.sample.homePage, requestID: Self.sample.requestID,
                    openedAt: Self.sample.openedAt, avatar: Data([1, 2, 3]), ratio: 0.5, planSeats: 5, tags: ["new"])
            ])
        withExtendedLifetime((bridge, legacy)) {}
    }

    @Test("center → hub: a legacy post of Foundation objects, or of strings, arrives as the typed value")
    func centerToHub() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let received = Log<AccountOpened>()
        let bridge = hub.forward(AccountOpened.self, fromCenter: center)
        let observation = hub.observe(AccountOpened.self) { received.append($0) }
        let common: [AnyHashable: Any] = [
            "userID": NSNumber(value: 7), "openedAt": Date(timeIntervalSince1970: 1_700_000_000),
            "avatar": Data([1, 2, 3]), "ratio": NSNumber(value: 0.5),
            "plan": ["name": "team", "seats": NSNumber(value: 5)] as [String: Any], "tags": ["new"],
        ]
        var objects = common
        objects["homePage"] = URL(string: "https://example.org/ada")
        objects["requestID"] = UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")
        var strings = common
        strings["homePage"] = "https://example.org/ada"
        strings["requestID"] = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
        center.post(name: AccountOpened.notificationName, object: nil, userInfo: objects)
        center.post(name: AccountOpened.notificationName, object: nil, userInfo: strings)
        #expect(received.values == [Self.sample, Self.sample])
        withExtendedLifetime((bridge, observation)) {}
    }
}
