import Dispatch
import Foundation
import Herald
import Testing

/// A bridged notification with a nested value, a list and an optional, for shape errors.
struct Shipment: NotificationConvertible, Codable, Equatable {
    static let notificationName = Notification.Name("HeraldTests.Shipment")

    struct Address: Codable, Equatable {
        var city: String
        var zip: Int
    }

    var id: Int
    var weight: Double
    var address: Address
    var tags: [String]
    var note: String?
}

/// Input that is wrong, missing or of the wrong shape: each gets a typed error or a documented
/// no-op, and the process never traps. The hub's error handler and the observers are counted, so
/// a case that silently succeeded or silently vanished fails.
@Suite("Bad input")
struct BadInputTests {
    static var valid: [AnyHashable: Any] {
        ["id": 7, "weight": 2.5, "address": ["city": "Oslo", "zip": 150] as [String: Any], "tags": ["fragile"]]
    }

    /// Malformed user info for `Shipment`, each with the error code and key path it must report.
    static var malformed:
        [(name: String, userInfo: [AnyHashable: Any]?, code: UserInfoDecodingError.Code, path: String)]
    {
        [
            ("no user info at all", nil, .keyNotFound, #"userInfo["id"]"#),
            ("an empty dictionary", [:], .keyNotFound, #"userInfo["id"]"#),
            (
                "a missing nested key", replacing("address", with: ["city": "Oslo"] as [String: Any]), .keyNotFound,
                #"userInfo["address"]["zip"]"#
            ),
            ("a string for an Int", replacing("id", with: "seven"), .typeMismatch, #"userInfo["id"]"#),
            ("a Bool for an Int", replacing("id", with: true), .typeMismatch, #"userInfo["id"]"#),
            ("a fractional Double for an Int", replacing("id", with: 7.5), .numberNotExact, #"userInfo["id"]"#),
            ("a Double too large for an Int", replacing("id", with: 1e300), .numberOutOfRange, #"userInfo["id"]"#),
            ("NaN for an Int", replacing("id", with: Double.nan), .numberNotExact, #"userInfo["id"]"#),
            ("a string for a Double", replacing("weight", with: "heavy"), .typeMismatch, #"userInfo["weight"]"#),
            ("NSNull for a required Int", replacing("id", with: NSNull()), .valueNotFound, #"userInfo["id"]"#),
            ("an Int for a nested object", replacing("address", with: 3), .typeMismatch, #"userInfo["address"]"#),
            ("a string for a list", replacing("tags", with: "fragile"), .typeMismatch, #"userInfo["tags"]"#),
            (
                "an Int inside a list of strings", replacing("tags", with: ["a", 2] as [Any]), .typeMismatch,
                #"userInfo["tags"][1]"#
            ),
            ("an Int for an optional String", replacing("note", with: 3), .typeMismatch, #"userInfo["note"]"#),
            (
                "a Data blob for a nested object", replacing("address", with: Data([0, 1, 2])), .typeMismatch,
                #"userInfo["address"]"#
            ),
            (
                "an NSNumber too large for the nested Int",
                replacing("address", with: ["city": "Oslo", "zip": NSNumber(value: UInt64.max)] as [String: Any]),
                .numberOutOfRange, #"userInfo["address"]["zip"]"#
            ),
        ]
    }

    static func replacing(_ key: String, with value: Any) -> [AnyHashable: Any] {
        var userInfo = valid
        userInfo[key] = value
        return userInfo
    }

    @Test(
        "Malformed user info forwarded from a NotificationCenter reports a typed error naming the key, and posts nothing"
    )
    func malformedUserInfoThroughForward() throws {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let received = Log<Shipment>()
        let bridge = hub.forward(Shipment.self, fromCenter: center)
        let observation = hub.observe(Shipment.self) { received.append($0) }
        for (index, testCase) in Self.malformed.enumerated() {
            center.post(name: Shipment.notificationName, object: nil, userInfo: testCase.userInfo)
            #expect(failures.count == index + 1, "\(testCase.name): no error reported")
            guard let error = failures.values.last?.error as? UserInfoDecodingError else {
                Issue.record(
                    "\(testCase.name): not a UserInfoDecodingError: \(String(describing: failures.values.last))")
                continue
            }
            #expect(error.code == testCase.code, "\(testCase.name): \(error)")
            #expect(error.keyPath == testCase.path, "\(testCase.name): \(error)")
            #expect(!error.description.isEmpty)
        }
        #expect(received.count == 0, "nothing malformed reaches an observer")
        #expect(failures.values.allSatisfy { $0.notificationType == "Shipment" })
        // And the valid shape still goes through afterwards.
        center.post(name: Shipment.notificationName, object: nil, userInfo: Self.valid)
        #expect(
            received.values == [Shipment(id: 7, weight: 2.5, address: .init(city: "Oslo", zip: 150), tags: ["fragile"])]
        )
        withExtendedLifetime((bridge, observation)) {}
    }

    @Test("A Notification of another name is refused with nameMismatch, and never forwarded")
    func wrongName() throws {
        let other = Notification(
            name: Notification.Name("HeraldTests.SomethingElse"), object: nil, userInfo: Self.valid)
        #expect {
            _ = try Shipment(notification: other)
        } throws: { error in
            (error as? UserInfoDecodingError)?.code == .nameMismatch
        }
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Counter()
        hub.errorHandler = { _ in failures.increment() }
        let received = Counter()
        let bridge = hub.forward(Shipment.self, fromCenter: center)
        let observation = hub.observe(Shipment.self) { _ in received.increment() }
        center.post(other)  // a documented no-op: forwarding only observes Shipment's name
        center.post(name: Notification.Name(""), object: nil, userInfo: nil)
        #expect(received.count == 0)
        #expect(failures.count == 0)
        withExtendedLifetime((bridge, observation)) {}
    }

    @Test("A Notification of the right name but another type's shape reports the first key it lacks")
    func wrongShape() throws {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let bridge = hub.forward(Shipment.self, fromCenter: center)
        let observation = hub.observe(Shipment.self) { _ in Issue.record("a wrongly shaped notification arrived") }
        // The shape of another bridged type, posted under Shipment's name.
        let foreign = try UserInfoEncoder().encode(Bridged(value: 3))
        center.post(name: Shipment.notificationName, object: nil, userInfo: foreign)
        // A user info whose keys are not strings.
        center.post(name: Shipment.notificationName, object: nil, userInfo: [1: 7, 2.5: "x"])
        let errors = failures.values.compactMap { $0.error as? UserInfoDecodingError }
        #expect(errors.count == 2)
        #expect(errors.allSatisfy { $0.code == .keyNotFound && $0.keyPath == #"userInfo["id"]"# })
        withExtendedLifetime((bridge, observation)) {}
    }

    @Test("A nil object where a subject was expected matches nothing, and is not an error")
    func nilObjectWhereSubjectExpected() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Counter()
        hub.errorHandler = { _ in failures.increment() }
        let session = Subject()
        let fromSession = Log<Int>()
        let fromAnyone = Log<Int>()
        let tokens = [
            hub.forward(Bridged.self, fromCenter: center, object: session),  // only `session`'s posts
            hub.observe(Bridged.self, from: session) { fromSession.append($0.value) },
            hub.observe(Bridged.self) { fromAnyone.append($0.value) },
        ]
        center.post(name: Bridged.notificationName, object: nil, userInfo: ["value": 1])  // filtered out
        center.post(name: Bridged.notificationName, object: session, userInfo: ["value": 2])
        hub.post(Bridged(value: 3), from: nil)  // no subject: only unfiltered observers
        hub.post(Bridged(value: 4), from: session)
        #expect(fromSession.values == [2, 4])
        #expect(fromAnyone.values == [2, 3, 4])
        #expect(failures.count == 0)
        withExtendedLifetime(tokens) {}
    }

    @Test("A value-type or bridged object on a forwarded Notification is not a subject: unfiltered observers get it")
    func nonClassObject() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let session = Subject()
        let fromSession = Counter()
        let fromAnyone = Log<Int>()
        let tokens = [
            hub.forward(Bridged.self, fromCenter: center),
            hub.observe(Bridged.self, from: session) { _ in fromSession.increment() },
            hub.observe(Bridged.self) { fromAnyone.append($0.value) },
        ]
        for (value, object) in [(1, "a string" as Any), (2, 42 as Any), (3, [1, 2] as Any)] {
            center.post(name: Bridged.notificationName, object: object, userInfo: ["value": value])
        }
        #expect(fromAnyone.values == [1, 2, 3])
        #expect(fromSession.count == 0)
        withExtendedLifetime(tokens) {}
    }

    @Test("A forward to a center from a subject that is gone forwards nothing and reports nothing")
    func forwardToCenterFromDeadSubject() {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let failures = Counter()
        hub.errorHandler = { _ in failures.increment() }
        let legacy = Counter()
        let observer = LegacyObserver(center, Bridged.notificationName) { _ in legacy.increment() }
        var subject: Subject? = Subject()
        let bridge = subject.map { hub.forward(Bridged.self, toCenter: center, from: $0) }
        hub.post(Bridged(value: 1), from: subject)
        subject = nil
        hub.post(Bridged(value: 2), from: nil)
        hub.post(Bridged(value: 3), from: Subject())
        #expect(legacy.count == 1)
        #expect(failures.count == 0)
        withExtendedLifetime((bridge, observer)) {}
    }

    @Test("Typed keys read a value of the wrong type, or none, as nil, and as a typed error when asked to throw")
    func typedKeysOnBadUserInfo() {
        let count = UserInfoKey<Int>("count")
        let name = UserInfoKey<String>("name")
        let userInfo: [AnyHashable: Any] = ["count": "many", "name": 5]
        #expect(userInfo[count] == nil)
        #expect(userInfo[name] == nil)
        let missing: [AnyHashable: Any]? = nil
        #expect(missing[count] == nil)
        #expect(throws: UserInfoDecodingError.self) { try userInfo.value(for: count) }
        #expect(throws: UserInfoDecodingError.self) { try missing.value(for: name) }
        let notification = Notification(name: Shipment.notificationName, object: nil, userInfo: nil)
        #expect {
            _ = try notification.value(for: count)
        } throws: { error in
            (error as? UserInfoDecodingError)?.code == .keyNotFound
        }
    }

    @Test("Zero, negative and enormous durations neither trap nor hang")
    func extremeDurations() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "durations")
        let seen = Counter()
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in seen.increment() }
        let outcomes = await onNewThread { () -> [Bool] in
            [Duration.zero, .seconds(-5), .nanoseconds(Int64.min), .seconds(Int64.max), .milliseconds(Int64.max)]
                .map { timeout in (try? hub.postAndWait(Ping(value: 0), timeout: timeout)) != nil }
        }
        #expect(outcomes.count == 5)
        #expect(outcomes.suffix(2).allSatisfy { $0 }, "an enormous timeout waits for completion")
        let ran = Countdown(4)
        for delay in [
            Duration.zero, .seconds(-1), .nanoseconds(Int64.min),
            Duration(secondsComponent: 0, attosecondsComponent: 1),
        ] {
            DeliveryTarget.queue(queue).perform(after: delay) { ran.arrive() }
        }
        await ran.wait()
        let thread = DeliveryThread(name: "durations") { _ in }
        let threadRan = Countdown(2)
        thread.perform(after: .seconds(-10)) { threadRan.arrive() }
        thread.perform(after: .nanoseconds(Int64.min)) { threadRan.arrive() }
        thread.perform(after: .seconds(Int64.max)) { Issue.record("ran a work item delayed for 292 billion years") }
        await threadRan.wait()
        await thread.shutdownGracefully()
        await hub.postAndWait(Ping(value: 1))
        #expect(seen.count == 6)
        withExtendedLifetime(token) {}
    }

    @Test("Odd thread names and queue sizes are accepted or refused with a typed error, never a trap")
    func oddNamesAndSizes() async throws {
        let names = ["", "a\u{0}b", String(repeating: "é", count: 40), "🧵🧵🧵🧵🧵", "  "]
        let echoed = await onNewThread { () -> [String] in
            names.map { name in
                let thread = DeliveryThread(name: name) { _ in }
                defer { thread.shutdownAndWait() }
                return (try? thread.performAndWait { thread.name }) ?? "<rejected>"
            }
        }
        #expect(echoed == names)
        for size in [0, -1, Int.min] {
            #expect(throws: BackgroundQueueError.self) {
                _ = try BackgroundQueue(name: "odd", maxConcurrentTasks: size)
            }
        }
        let wide = try BackgroundQueue(name: "wide", maxConcurrentTasks: Int.max)
        #expect(try await wide.performAndWait { 42 } == 42)
    }
}
