import Foundation
import Herald
import Testing

/// The target of the malformed-input cases.
struct UserInfoSample: Codable, Equatable {
    var userID: Int
    var level: UInt8
    var count: Int
    var enabled: Bool
    var ratio: Float
    var amount: Double
    var created: Date
    var homePage: URL
    var id: UUID
    var mood: EveryType.Mood
    var profile: EveryType.Profile
    var tags: [String]
    var scores: [String: Double]
    var nickname: String?

    /// A valid user-info dictionary for `UserInfoSample`, as legacy code would build it.
    static var validUserInfo: [AnyHashable: Any] {
        [
            "userID": 7,
            "level": 3,
            "count": 10,
            "enabled": true,
            "ratio": 0.5,
            "amount": 12.25,
            "created": Date(timeIntervalSinceReferenceDate: 0),
            "homePage": "https://example.com",
            "id": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
            "mood": "happy",
            "profile": ["name": "Ada", "age": 36] as [String: Any],
            "tags": ["a", "b"],
            "scores": ["math": 1.5],
        ]
    }
}

/// One malformed user-info dictionary and the error it must produce.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let code: UserInfoDecodingError.Code
    let message: String
    let mutate: @Sendable (inout [AnyHashable: Any]) -> Void

    var testDescription: String { name }

    init(
        _ name: String,
        _ code: UserInfoDecodingError.Code,
        _ message: String,
        _ mutate: @escaping @Sendable (inout [AnyHashable: Any]) -> Void
    ) {
        self.name = name
        self.code = code
        self.message = message
        self.mutate = mutate
    }

    static let all: [MalformedCase] = [
        MalformedCase(
            "missing required key", .keyNotFound,
            #"userInfo["userID"]: expected Int, found nothing (no value for this key)"#
        ) { $0["userID"] = nil },
        MalformedCase(
            "missing nested key", .keyNotFound,
            #"userInfo["profile"]["age"]: expected Int, found nothing (no value for this key)"#
        ) { $0["profile"] = ["name": "Ada"] },
        MalformedCase(
            "string for a nested Int", .typeMismatch,
            #"userInfo["profile"]["age"]: expected Int, found String "forty""#
        ) { $0["profile"] = ["name": "Ada", "age": "forty"] },
        MalformedCase(
            "300 for a UInt8", .numberOutOfRange,
            #"userInfo["level"]: expected UInt8, found Int 300 (out of range for UInt8)"#
        ) { $0["level"] = 300 },
        MalformedCase(
            "negative NSNumber for a UInt8", .numberOutOfRange,
            #"userInfo["level"]: expected UInt8, found NSNumber -1 (out of range for UInt8)"#
        ) { $0["level"] = NSNumber(value: -1) },
        MalformedCase(
            "3.5 for an Int", .numberNotExact,
            #"userInfo["count"]: expected Int, found Double 3.5 (not exactly representable as Int)"#
        ) { $0["count"] = 3.5 },
        MalformedCase(
            "NaN for an Int", .numberNotExact,
            #"userInfo["count"]: expected Int, found Double nan (not exactly representable as Int)"#
        ) { $0["count"] = Double.nan },
        MalformedCase(
            "infinity for an Int", .numberOutOfRange,
            #"userInfo["count"]: expected Int, found Double inf (out of range for Int)"#
        ) { $0["count"] = Double.infinity },
        MalformedCase(
            "UInt64.max NSNumber for an Int", .numberOutOfRange,
            #"userInfo["count"]: expected Int, found NSNumber 18446744073709551615 (out of range for Int)"#
        ) { $0["count"] = NSNumber(value: UInt64.max) },
        MalformedCase(
            "Bool for an Int", .typeMismatch,
            #"userInfo["count"]: expected Int, found Bool true"#
        ) { $0["count"] = true },
        MalformedCase(
            "NSNumber 1 for a Bool", .typeMismatch,
            #"userInfo["enabled"]: expected Bool, found NSNumber 1"#
        ) { $0["enabled"] = NSNumber(value: 1) },
        MalformedCase(
            "NSNull for a required Int", .valueNotFound,
            #"userInfo["userID"]: expected Int, found NSNull"#
        ) { $0["userID"] = NSNull() },
        MalformedCase(
            "1e40 for a Float", .numberOutOfRange,
            #"userInfo["ratio"]: expected Float, found Double 1e+40 (out of range for Float)"#
        ) { $0["ratio"] = 1e40 },
        MalformedCase(
            "2^53 + 1 for a Double", .numberNotExact,
            #"userInfo["amount"]: expected Double, found Int 9007199254740993 (not exactly representable as Double)"#
        ) { $0["amount"] = 9_007_199_254_740_993 },
        MalformedCase(
            "string for a Date", .typeMismatch,
            #"userInfo["created"]: expected Date, found String "2020-01-01""#
        ) { $0["created"] = "2020-01-01" },
        MalformedCase(
            "empty string for a URL", .invalidValue,
            #"userInfo["homePage"]: expected URL, found String "" (not a valid URL)"#
        ) { $0["homePage"] = "" },
        MalformedCase(
            "number for a URL", .typeMismatch,
            #"userInfo["homePage"]: expected URL, found Int 80"#
        ) { $0["homePage"] = 80 },
        MalformedCase(
            "malformed UUID string", .invalidValue,
            #"userInfo["id"]: expected UUID, found String "not-a-uuid" (not a valid UUID string)"#
        ) { $0["id"] = "not-a-uuid" },
        MalformedCase(
            "unknown enum raw value", .invalidValue,
            #"userInfo["mood"]: expected Mood, found String "sleepy" (Cannot initialize Mood from invalid String value sleepy)"#
        ) { $0["mood"] = "sleepy" },
        MalformedCase(
            "wrong array element", .typeMismatch,
            #"userInfo["tags"][2]: expected String, found Int 3"#
        ) { $0["tags"] = ["a", "b", 3] as [Any] },
        MalformedCase(
            "wrong dictionary value", .typeMismatch,
            #"userInfo["scores"]["math"]: expected Double, found String "A""#
        ) { $0["scores"] = ["math": "A"] },
        MalformedCase(
            "string for a nested struct", .typeMismatch,
            #"userInfo["profile"]: expected Profile, found String "Ada""#
        ) { $0["profile"] = "Ada" },
        MalformedCase(
            "dictionary for an array", .typeMismatch,
            #"userInfo["tags"]: expected Array<String>, found Dictionary (1 entry)"#
        ) { $0["tags"] = ["a": 1] },
        MalformedCase(
            "wrong type for an optional that is present", .typeMismatch,
            #"userInfo["nickname"]: expected String, found Int 5"#
        ) { $0["nickname"] = 5 },
        MalformedCase(
            "a long string is cut in the message", .typeMismatch,
            #"userInfo["count"]: expected Int, found String "0123456789012345678901234567890123456789"…"#
        ) { $0["count"] = String(repeating: "0123456789", count: 10) },
    ]
}

@Suite struct UserInfoDecoderTests {
    @Test("Each malformed user info throws the right error, naming its key path", arguments: MalformedCase.all)
    func malformedUserInfoThrowsTheRightError(_ malformed: MalformedCase) throws {
        var userInfo = UserInfoSample.validUserInfo
        #expect(throws: Never.self) { try UserInfoDecoder().decode(UserInfoSample.self, from: userInfo) }
        malformed.mutate(&userInfo)

        let error = try #require(throws: UserInfoDecodingError.self) {
            try UserInfoDecoder().decode(UserInfoSample.self, from: userInfo)
        }

        #expect(error.code == malformed.code)
        #expect(error.description == malformed.message)
        #expect(error.description.hasPrefix(error.keyPath + ": "))
    }

    @Test("Numbers convert between types when the value fits exactly")
    func numbersConvertWhenExact() throws {
        struct Numbers: Codable, Equatable {
            var int: Int
            var int8: Int8
            var uint64: UInt64
            var int128: Int128
            var double: Double
            var float: Float
        }
        let fromSwift: [AnyHashable: Any] = [
            "int": 3.0, "int8": Int64(-128), "uint64": UInt8(200), "int128": -5, "double": 7, "float": 0.1,
        ]
        #expect(
            try UserInfoDecoder().decode(Numbers.self, from: fromSwift)
                == Numbers(int: 3, int8: -128, uint64: 200, int128: -5, double: 7, float: 0.1))

        let fromNSNumber: [AnyHashable: Any] = [
            "int": NSNumber(value: 3.0), "int8": NSNumber(value: Int8(5)), "uint64": NSNumber(value: UInt64.max),
            "int128": NSNumber(value: Int64.min), "double": NSNumber(value: Float(1.5)), "float": NSNumber(value: 2),
        ]
        #expect(
            try UserInfoDecoder().decode(Numbers.self, from: fromNSNumber)
                == Numbers(int: 3, int8: 5, uint64: .max, int128: Int128(Int64.min), double: 1.5, float: 2))
    }

    @Test(
        "A property list read back with PropertyListSerialization decodes",
        arguments: [
            PropertyListSerialization.PropertyListFormat.binary, .xml,
        ])
    func propertyListRoundTripDecodes(format: PropertyListSerialization.PropertyListFormat) throws {
        let userInfo = try PlistFriendly.sample.makeNotification().userInfo ?? [:]
        let data = try PropertyListSerialization.data(fromPropertyList: userInfo, format: format, options: 0)
        let readBack = try #require(
            try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [AnyHashable: Any])

        let notification = Notification(name: PlistFriendly.notificationName, object: nil, userInfo: readBack)
        #expect(try PlistFriendly(notification: notification) == PlistFriendly.sample)
    }

    @Test("A hand-written XML property list decodes into the typed notification")
    func handWrittenPropertyListDecodes() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
                <key>userID</key><integer>7</integer>
                <key>status</key><real>201</real>
                <key>ratio</key><real>0.25</real>
                <key>isAdmin</key><true/>
                <key>profile</key>
                <dict><key>name</key><string>Grace</string><key>age</key><integer>85</integer></dict>
                <key>tags</key><array><string>x</string><string>y</string></array>
                <key>homePage</key><string>https://example.org/a</string>
                <key>requestID</key><string>3F2504E0-4F89-11D3-9A0C-0305E82C3301</string>
                <key>note</key><string>from a file</string>
            </dict>
            </plist>
            """
        let plist = try PropertyListSerialization.propertyList(from: Data(xml.utf8), options: [], format: nil)
        let userInfo = try #require(plist as? [AnyHashable: Any])

        let legacy = try UserInfoDecoder().decode(LegacyUserChanged.self, from: userInfo)

        #expect(
            legacy
                == LegacyUserChanged(
                    userID: 7, status: 201, ratio: 0.25, isAdmin: true,
                    profile: EveryType.Profile(name: "Grace", age: 85, email: nil), tags: ["x", "y"],
                    homePage: URL(string: "https://example.org/a")!,
                    requestID: UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!, note: "from a file"))
    }

    @Test("Optionals read nil from a missing key, NSNull and Optional.none, and values from Optional.some")
    func optionalsReadNilAndValues() throws {
        struct Optionals: Codable, Equatable {
            var missing: Int?
            var null: Int?
            var none: Int?
            var some: Int?
        }
        let userInfo: [AnyHashable: Any] = [
            "null": NSNull(), "none": Optional<Int>.none as Any, "some": Optional<Int?>.some(5) as Any,
        ]
        #expect(
            try UserInfoDecoder().decode(Optionals.self, from: userInfo)
                == Optionals(missing: nil, null: nil, none: nil, some: 5))
    }

    @Test("Keys that are not strings are ignored")
    func nonStringKeysAreIgnored() throws {
        let userInfo: [AnyHashable: Any] = [1: "one", "name": "Ada", "age": 36, UUID(): 2]
        #expect(
            try UserInfoDecoder().decode(EveryType.Profile.self, from: userInfo)
                == EveryType.Profile(name: "Ada", age: 36, email: nil))
    }

    @Test("A struct stored in the dictionary as it is decodes")
    func nativelyStoredValueDecodes() throws {
        struct Wrapper: Codable, Equatable {
            var profile: EveryType.Profile
        }
        let profile = EveryType.Profile(name: "Native", age: 1, email: nil)
        #expect(try UserInfoDecoder().decode(Wrapper.self, from: ["profile": profile]) == Wrapper(profile: profile))
    }

    @Test("Deep nesting fails with an error instead of exhausting the stack")
    func deepNestingFails() throws {
        func nested(_ depth: Int) -> [AnyHashable: Any] {
            var tree: [String: Any] = ["children": [Any]()]
            for _ in 0..<depth {
                tree = ["children": [tree]]
            }
            return tree
        }
        let shallow = try UserInfoDecoder().decode(UserInfoTree.self, from: nested(40))
        #expect(shallow.depth == 41)

        let error = try #require(throws: UserInfoDecodingError.self) {
            try UserInfoDecoder().decode(UserInfoTree.self, from: nested(1_000))
        }
        #expect(error.code == .invalidValue)
        #expect(error.detail == "nested more than 128 levels deep")
        #expect(error.keyPath.hasPrefix(#"userInfo["children"][0]["children"][0]"#))
    }

    @Test("An error thrown by the type's own init(from:) becomes decodingFailed with that error")
    func typeErrorBecomesDecodingFailed() throws {
        let error = try #require(throws: UserInfoDecodingError.self) {
            try UserInfoDecoder().decode(Validated.self, from: ["inner": ["value": -1]])
        }
        #expect(error.code == .decodingFailed)
        #expect(error.underlyingError is Validated.Negative)
        #expect(error.keyPath == #"userInfo["inner"]"#)
        #expect(error.description.hasPrefix(#"userInfo["inner"]: expected Inner, found Dictionary (1 entry) ("#))
    }

    @Test("Hand-written decoding code can catch DecodingError.keyNotFound and recover")
    func handWrittenCodeCanCatchKeyNotFound() throws {
        #expect(try UserInfoDecoder().decode(WithFallback.self, from: [:]).value == -1)
        #expect(try UserInfoDecoder().decode(WithFallback.self, from: ["value": 4]).value == 4)
    }

    @Test("The decoder's userInfo reaches the decoded types")
    func decoderUserInfoReachesTypes() throws {
        var decoder = UserInfoDecoder()
        decoder.userInfo[ReadsContext.key] = "context"
        #expect(try decoder.decode(ReadsContext.self, from: [:]).context == "context")
    }

    @Test("A notification without user info decodes like an empty dictionary")
    func notificationWithoutUserInfo() throws {
        struct AllOptional: Codable, Equatable { var a: Int? }
        let notification = Notification(name: Notification.Name("x"))
        #expect(try UserInfoDecoder().decode(AllOptional.self, from: notification) == AllOptional(a: nil))
    }
}

/// A recursive type, to check the depth limit.
final class UserInfoTree: Codable, Sendable {
    let children: [UserInfoTree]

    var depth: Int { 1 + (children.map(\.depth).max() ?? 0) }
}

struct Validated: Codable {
    struct Negative: Error {}

    struct Inner: Codable {
        var value: Int

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            value = try container.decode(Int.self, forKey: .value)
            if value < 0 { throw Negative() }
        }
    }

    var inner: Inner
}

struct WithFallback: Decodable {
    enum CodingKeys: String, CodingKey { case value }
    var value: Int

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        do {
            value = try container.decode(Int.self, forKey: .value)
        } catch DecodingError.keyNotFound {
            value = -1
        }
    }
}

struct ReadsContext: Decodable {
    static let key = CodingUserInfoKey(rawValue: "HeraldTests.context")!
    var context: String?

    init(from decoder: any Decoder) throws {
        context = decoder.userInfo[Self.key] as? String
    }
}
