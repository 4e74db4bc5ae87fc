import Foundation
import Herald
import Testing

// MARK: - Fixtures shared by the user-info tests

/// A notification with one stored property of every type the user-info coding supports.
struct EveryType: NotificationConvertible, Codable, Equatable {
    static let notificationName = Notification.Name("HeraldTests.EveryType")

    enum Mood: String, Codable, Sendable {
        case happy, grumpy
    }

    enum Level: Int, Codable, Sendable {
        case low = 1
        case high = 2
    }

    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var age: Int
        var email: String?
    }

    var string: String
    var emptyString: String
    var bool: Bool
    var falseBool: Bool
    var int: Int
    var int8: Int8
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var int128: Int128
    var uint: UInt
    var uint8: UInt8
    var uint16: UInt16
    var uint32: UInt32
    var uint64: UInt64
    var uint128: UInt128
    var float: Float
    var double: Double
    var date: Date
    var url: URL
    var data: Data
    var uuid: UUID
    var mood: Mood
    var level: Level
    var profile: Profile
    var profiles: [Profile]
    var tags: [String]
    var matrix: [[Int]]
    var scores: [String: Double]
    var profilesByID: [String: Profile]
    var optionalPresent: Int?
    var optionalAbsent: String?
    var optionalProfile: Profile?
    var optionalsInArray: [Int?]
    var set: Set<String>
    var emptyArray: [Int]
    var emptyDictionary: [String: Int]

    static let sample = EveryType(
        string: "héllo, wörld 👋",
        emptyString: "",
        bool: true,
        falseBool: false,
        int: -42,
        int8: .min,
        int16: .max,
        int32: .min,
        int64: .min,
        int128: Int128(Int64.max) * 1_000,
        uint: .max,
        uint8: .max,
        uint16: .max,
        uint32: .max,
        uint64: .max,
        uint128: UInt128(UInt64.max) * 3,
        float: 0.1,
        double: .pi,
        date: Date(timeIntervalSinceReferenceDate: 123_456.789),
        url: URL(string: "https://example.com/path?q=a%20b#frag")!,
        data: Data([0, 1, 2, 254, 255]),
        uuid: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
        mood: .grumpy,
        level: .high,
        profile: Profile(name: "Ada", age: 36, email: "ada@example.com"),
        profiles: [Profile(name: "Bob", age: 1, email: nil), Profile(name: "Cy", age: 2, email: "c@d.e")],
        tags: ["admin", "", "ops"],
        matrix: [[1, 2], [], [3]],
        scores: ["math": 9.5, "art": -0.25],
        profilesByID: ["a": Profile(name: "A", age: 10, email: nil)],
        optionalPresent: 0,
        optionalAbsent: nil,
        optionalProfile: nil,
        optionalsInArray: [1, nil, 3],
        set: ["x", "y"],
        emptyArray: [],
        emptyDictionary: [:]
    )
}

/// A notification whose values all survive a property-list round trip (no 128-bit integers
/// beyond 64 bits, no `nil` inside arrays, whole-second dates for the XML format).
struct PlistFriendly: NotificationConvertible, Codable, Equatable {
    static let notificationName = Notification.Name("HeraldTests.PlistFriendly")
    /// Its notifications are archived as property lists: URLs and UUIDs travel as strings.
    static var userInfoEncoder: UserInfoEncoder { .propertyList }

    var string: String
    var bool: Bool
    var int: Int
    var int8: Int8
    var uint16: UInt16
    var int64: Int64
    var uint64: UInt64
    var float: Float
    var double: Double
    var date: Date
    var url: URL
    var data: Data
    var uuid: UUID
    var mood: EveryType.Mood
    var level: EveryType.Level
    var profile: EveryType.Profile
    var tags: [String]
    var scores: [String: Double]
    var optional: Int?

    static let sample = PlistFriendly(
        string: "plist",
        bool: false,
        int: 7,
        int8: -8,
        uint16: 65_535,
        int64: .min,
        uint64: .max,
        float: 1.25,
        double: 0.1,
        date: Date(timeIntervalSinceReferenceDate: 700_000_000),
        url: URL(string: "file:///tmp/a%20b.txt")!,
        data: Data("data".utf8),
        uuid: UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!,
        mood: .happy,
        level: .low,
        profile: EveryType.Profile(name: "P", age: 99, email: nil),
        tags: ["t"],
        scores: ["s": 1],
        optional: nil
    )
}

// MARK: - NotificationConvertible

@Suite struct NotificationConvertibleTests {
    @Test("A Codable notification with every supported type survives a round trip through Notification")
    func roundTripOfEverySupportedType() throws {
        let original = EveryType.sample
        let notification = try original.makeNotification()

        #expect(notification.name == EveryType.notificationName)
        #expect(notification.object == nil)
        let decoded = try EveryType(notification: notification)
        #expect(decoded == original)
    }

    @Test("The round trip keeps the notification's object")
    func roundTripKeepsObject() throws {
        let sender = NSObject()
        let notification = try EveryType.sample.makeNotification(object: sender)
        #expect((notification.object as AnyObject?) === sender)
        #expect(try EveryType(notification: notification) == EveryType.sample)
    }

    @Test("Stored properties become user-info entries that legacy code can read")
    func propertiesBecomeLegacyReadableEntries() throws {
        let userInfo = try #require(try EveryType.sample.makeNotification().userInfo)

        #expect(userInfo["string"] as? String == "héllo, wörld 👋")
        #expect(userInfo["int"] as? Int == -42)
        #expect(userInfo["int8"] as? Int == Int(Int8.min))
        #expect(userInfo["uint8"] as? Int == 255)
        #expect(userInfo["double"] as? Double == .pi)
        #expect(userInfo["bool"] as? Bool == true)
        #expect(userInfo["date"] as? Date == EveryType.sample.date)
        #expect(userInfo["data"] as? Data == EveryType.sample.data)
        #expect(userInfo["url"] as? URL == URL(string: "https://example.com/path?q=a%20b#frag"))
        #expect(userInfo["uuid"] as? UUID == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(userInfo["mood"] as? String == "grumpy")
        #expect(userInfo["level"] as? Int == 2)
        let profile = try #require(userInfo["profile"] as? [String: Any])
        #expect(profile["name"] as? String == "Ada")
        #expect(profile["age"] as? Int == 36)
        #expect(userInfo["tags"] as? [String] == ["admin", "", "ops"])
        #expect(userInfo.keys.contains("optionalAbsent") == false)
        #expect(userInfo.keys.contains("optionalProfile") == false)
    }

    @Test("A legacy notification with user info built by hand decodes with the right values")
    func legacyHandBuiltUserInfoDecodes() throws {
        // What Objective-C era code posts: NSNumber, NSString, NSDictionary, NSArray, NSURL.
        let profile = NSMutableDictionary()
        profile["name"] = NSString(string: "Grace")
        profile["age"] = NSNumber(value: 85)
        let notification = Notification(
            name: LegacyUserChanged.notificationName,
            object: nil,
            userInfo: [
                "userID": NSNumber(value: 7),
                "status": 201,
                "ratio": NSNumber(value: 0.5),
                "isAdmin": NSNumber(value: true),
                "profile": profile,
                "tags": NSArray(array: ["a", "b"]),
                "homePage": NSURL(string: "https://example.org")!,
                "requestID": "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
            ])

        let legacy = try LegacyUserChanged(notification: notification)

        #expect(legacy.userID == 7)
        #expect(legacy.status == 201)
        #expect(legacy.ratio == 0.5)
        #expect(legacy.isAdmin)
        #expect(legacy.profile == EveryType.Profile(name: "Grace", age: 85, email: nil))
        #expect(legacy.tags == ["a", "b"])
        #expect(legacy.homePage == URL(string: "https://example.org"))
        #expect(legacy.requestID == UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301"))
        #expect(legacy.note == nil)
    }

    @Test("A notification with another name is rejected with a name mismatch")
    func otherNameIsRejected() throws {
        let notification = Notification(name: Notification.Name("Other"), object: nil, userInfo: [:])
        let error = try #require(throws: UserInfoDecodingError.self) {
            try EveryType(notification: notification)
        }
        #expect(error.code == .nameMismatch)
        #expect(error.description == #"Notification.name: expected "HeraldTests.EveryType", found "Other""#)
    }

    @Test("A notification without user info reports the first missing key")
    func missingUserInfoReportsMissingKey() throws {
        let notification = Notification(name: LegacyUserChanged.notificationName)
        let error = try #require(throws: UserInfoDecodingError.self) {
            try LegacyUserChanged(notification: notification)
        }
        #expect(error.code == .keyNotFound)
        #expect(error.expected != "")
        #expect(error.keyPath.hasPrefix("userInfo[\""))
    }

    @Test("A hand-written conversion can throw the public error factories")
    func handWrittenConversionThrowsFactories() throws {
        let good = Notification(name: Handwritten.notificationName, object: nil, userInfo: ["count": 3])
        #expect(try Handwritten(notification: good).count == 3)
        #expect(try Handwritten(count: 4).makeNotification().userInfo?["count"] as? Int == 4)

        let missing = Notification(name: Handwritten.notificationName, object: nil, userInfo: [:])
        let missingError = try #require(throws: UserInfoDecodingError.self) { try Handwritten(notification: missing) }
        #expect(missingError.description == #"userInfo["count"]: expected Int, found nothing (no value for this key)"#)

        let wrong = Notification(name: Handwritten.notificationName, object: nil, userInfo: ["count": "three"])
        let wrongError = try #require(throws: UserInfoDecodingError.self) { try Handwritten(notification: wrong) }
        #expect(wrongError.description == #"userInfo["count"]: expected Int, found String "three""#)
    }
}

/// The shape of a notification that legacy code posts.
struct LegacyUserChanged: NotificationConvertible, Codable, Equatable {
    static let notificationName = Notification.Name("LegacyUserDidChangeNotification")

    var userID: Int
    var status: Int16
    var ratio: Float
    var isAdmin: Bool
    var profile: EveryType.Profile
    var tags: [String]
    var homePage: URL
    var requestID: UUID
    var note: String?
}

/// A notification that converts by hand, with typed keys.
struct Handwritten: NotificationConvertible {
    static let notificationName = Notification.Name("HeraldTests.Handwritten")

    var count: Int

    init(count: Int) {
        self.count = count
    }

    init(notification: Notification) throws(UserInfoDecodingError) {
        let userInfo = notification.userInfo ?? [:]
        guard let raw = userInfo["count"] else {
            throw .keyNotFound(keyPath: ["count"], expected: Int.self)
        }
        guard let count = raw as? Int else {
            throw .typeMismatch(keyPath: ["count"], expected: Int.self, found: raw)
        }
        self.count = count
    }

    func makeNotification(object: AnyObject?) throws -> Notification {
        Notification(name: Self.notificationName, object: object, userInfo: ["count": count])
    }
}
