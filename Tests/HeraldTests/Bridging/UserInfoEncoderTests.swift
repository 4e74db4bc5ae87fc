import Foundation
import Herald
import Testing

@Suite struct UserInfoEncoderTests {
    @Test("Every integer width is stored as Int when it fits, so legacy `as? Int` reads work")
    func integersAreStoredAsInt() throws {
        struct Widths: Encodable {
            var int8: Int8 = -8
            var uint16: UInt16 = 16
            var int64: Int64 = .min
            var uint64Small: UInt64 = 64
            var uint64Large: UInt64 = .max
            var int128Small: Int128 = 128
            var int128Large: Int128 = Int128(Int64.max) + 1
        }
        let userInfo = try UserInfoEncoder().encode(Widths())

        #expect(userInfo["int8"] as? Int == -8)
        #expect(userInfo["uint16"] as? Int == 16)
        #expect(userInfo["int64"] as? Int == Int(Int64.min))
        #expect(userInfo["uint64Small"] as? Int == 64)
        #expect(userInfo["uint64Large"] as? UInt64 == .max)
        #expect(userInfo["int128Small"] as? Int == 128)
        #expect(userInfo["int128Large"] as? UInt64 == UInt64(Int64.max) + 1)
    }

    @Test("Float is stored as the Double of the same value")
    func floatIsStoredAsDouble() throws {
        struct Floats: Encodable { var float: Float = 0.1 }
        let userInfo = try UserInfoEncoder().encode(Floats())
        #expect(userInfo["float"] as? Double == Double(Float(0.1)))
    }

    @Test("URL and UUID are stored as themselves by default, and as strings with the property-list strategies")
    func urlAndUUIDStrategies() throws {
        struct Identified: Codable, Equatable {
            var url = URL(string: "https://example.com/x")!
            var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        }
        let byDefault = try UserInfoEncoder().encode(Identified())
        #expect(byDefault["url"] as? URL == Identified().url)
        #expect(byDefault["uuid"] as? UUID == Identified().uuid)

        var encoder = UserInfoEncoder()
        encoder.urlEncodingStrategy = .absoluteString
        encoder.uuidEncodingStrategy = .uuidString
        let strings = try encoder.encode(Identified())
        #expect(strings["url"] as? String == "https://example.com/x")
        #expect(strings["uuid"] as? String == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(try UserInfoEncoder.propertyList.encode(Identified())["url"] as? String == "https://example.com/x")

        #expect(try UserInfoDecoder().decode(Identified.self, from: byDefault) == Identified())
        #expect(try UserInfoDecoder().decode(Identified.self, from: strings) == Identified())
    }

    @Test("A nil optional property leaves its key out; nil inside a collection is NSNull")
    func nilOptionals() throws {
        struct Optionals: Codable, Equatable {
            var absent: Int?
            var list: [Int?]
            var map: [String: Int?]
        }
        let value = Optionals(absent: nil, list: [1, nil], map: ["k": nil])
        let userInfo = try UserInfoEncoder().encode(value)

        #expect(userInfo.keys.contains("absent") == false)
        let list = try #require(userInfo["list"] as? [Any])
        #expect(list.count == 2)
        #expect(list[1] is NSNull)
        let map = try #require(userInfo["map"] as? [String: Any])
        #expect(map["k"] is NSNull)
        #expect(try UserInfoDecoder().decode(Optionals.self, from: userInfo) == value)
    }

    @Test("With the property-list strategies the output is a valid property list")
    func outputIsAPropertyList() throws {
        let userInfo = try UserInfoEncoder.propertyList.encode(PlistFriendly.sample)
        #expect(PropertyListSerialization.propertyList(userInfo, isValidFor: .binary))
        #expect(PropertyListSerialization.propertyList(userInfo, isValidFor: .xml))
    }

    @Test("A value that encodes a single value at the top level throws instead of trapping")
    func topLevelSingleValueThrows() throws {
        #expect(throws: EncodingError.self) { try UserInfoEncoder().encode(42) }
        #expect(throws: EncodingError.self) { try UserInfoEncoder().encode(["a", "b"]) }
        #expect(try UserInfoEncoder().encode(["a": 1])["a"] as? Int == 1)
    }

    @Test("Asking for two kinds of container for one value throws instead of trapping")
    func mixedContainersThrow() throws {
        #expect(throws: EncodingError.self) { try UserInfoEncoder().encode(MixesContainers()) }
    }

    @Test("An error thrown by encode(to:) reaches the caller")
    func encodeErrorsPropagate() throws {
        struct Refuses: Encodable {
            struct Refusal: Error {}
            func encode(to encoder: any Encoder) throws { throw Refusal() }
        }
        #expect(throws: Refuses.Refusal.self) { try UserInfoEncoder().encode(Refuses()) }
    }

    @Test("The encoder's userInfo reaches the encoded types")
    func encoderUserInfoReachesTypes() throws {
        struct WritesContext: Encodable {
            static let key = CodingUserInfoKey(rawValue: "HeraldTests.encoderContext")!
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: UserInfoCodingKeys.self)
                try container.encode(encoder.userInfo[Self.key] as? String ?? "none", forKey: .context)
            }
        }
        var encoder = UserInfoEncoder()
        encoder.userInfo[WritesContext.key] = "ctx"
        #expect(try encoder.encode(WritesContext())["context"] as? String == "ctx")
    }

    @Test("Custom nested and super containers round-trip")
    func nestedAndSuperContainers() throws {
        let value = CustomLayout(a: 1, b: ["x", "y"], base: 9)
        let userInfo = try UserInfoEncoder().encode(value)
        let nested = try #require(userInfo["nested"] as? [String: Any])
        #expect(nested["a"] as? Int == 1)
        #expect(try UserInfoDecoder().decode(CustomLayout.self, from: userInfo) == value)
    }
}

enum UserInfoCodingKeys: String, CodingKey {
    case context, nested, a, list, base
}

struct MixesContainers: Encodable {
    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(1)
        var keyed = encoder.container(keyedBy: UserInfoCodingKeys.self)
        try keyed.encode(2, forKey: .a)
    }
}

/// Uses nested keyed and unkeyed containers and a super encoder.
struct CustomLayout: Codable, Equatable {
    var a: Int
    var b: [String]
    var base: Int

    init(a: Int, b: [String], base: Int) {
        self.a = a
        self.b = b
        self.base = base
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: UserInfoCodingKeys.self)
        var nested = container.nestedContainer(keyedBy: UserInfoCodingKeys.self, forKey: .nested)
        try nested.encode(a, forKey: .a)
        var list = nested.nestedUnkeyedContainer(forKey: .list)
        for element in b {
            try list.encode(element)
        }
        var superContainer = container.superEncoder().singleValueContainer()
        try superContainer.encode(base)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: UserInfoCodingKeys.self)
        let nested = try container.nestedContainer(keyedBy: UserInfoCodingKeys.self, forKey: .nested)
        a = try nested.decode(Int.self, forKey: .a)
        var list = try nested.nestedUnkeyedContainer(forKey: .list)
        var elements: [String] = []
        while !list.isAtEnd {
            elements.append(try list.decode(String.self))
        }
        b = elements
        base = try container.superDecoder().singleValueContainer().decode(Int.self)
    }
}
