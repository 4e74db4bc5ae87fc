import Foundation
import Herald
import Testing

@Suite struct UserInfoDecodingErrorTests {
    @Test("The message names the key path, the expected type and what was found")
    func messageFormat() {
        let error = UserInfoDecodingError.typeMismatch(keyPath: ["profile", "age"], expected: Int.self, found: "forty")
        #expect(error.description == #"userInfo["profile"]["age"]: expected Int, found String "forty""#)
        #expect(error.keyPath == #"userInfo["profile"]["age"]"#)
        #expect(error.expected == "Int")
        #expect(error.found == #"String "forty""#)
        #expect(error.detail == nil)
        #expect(error.codingPath.map(\.stringValue) == ["profile", "age"])
    }

    @Test("The public factories make the matching codes")
    func factoriesMakeCodes() {
        #expect(UserInfoDecodingError.keyNotFound(keyPath: ["a"], expected: Int.self).code == .keyNotFound)
        #expect(
            UserInfoDecodingError.typeMismatch(keyPath: ["a"], expected: Int.self, found: nil).code == .typeMismatch)
        let invalid = UserInfoDecodingError.invalidValue(
            keyPath: ["a"], expected: Int.self, found: 7, reason: "not a prime")
        #expect(invalid.code == .invalidValue)
        #expect(invalid.description == #"userInfo["a"]: expected Int, found Int 7 (not a prime)"#)
        let name = UserInfoDecodingError.nameMismatch(expected: .init("A"), found: .init("B"))
        #expect(name.code == .nameMismatch)
        #expect(name.description == #"Notification.name: expected "A", found "B""#)
        #expect(UserInfoDecodingError.Code.numberOutOfRange.description == "numberOutOfRange")
    }

    @Test("Found values are described with their type and a short preview")
    func foundDescriptions() {
        func found(_ value: Any?) -> String {
            UserInfoDecodingError.typeMismatch(keyPath: [], expected: Int.self, found: value).found
        }
        #expect(found(nil) == "nil")
        #expect(found(NSNull()) == "NSNull")
        #expect(found(NSNumber(value: true)) == "NSNumber true")
        #expect(found(UInt8(3)) == "UInt8 3")
        #expect(found([1, 2]) == "Array (2 elements)")
        #expect(found(["k": 1]) == "Dictionary (1 entry)")
        #expect(found(Data([1, 2, 3])) == "Data (3 bytes)")
        #expect(found(NSObject()) == "NSObject")
    }

    @Test("Array positions print as indices in the key path and carry an intValue")
    func arrayPositionsPrintAsIndices() throws {
        struct Lists: Decodable { var rows: [[Int]] }
        let error = try #require(throws: UserInfoDecodingError.self) {
            try UserInfoDecoder().decode(Lists.self, from: ["rows": [[1], [2, "x"]]])
        }
        #expect(error.keyPath == #"userInfo["rows"][1][1]"#)
        #expect(error.codingPath.map(\.intValue) == [nil, 1, 1])
    }

    @Test("Inside init(from:), failures are DecodingErrors that carry the user-info error")
    func insideInitFailuresAreDecodingErrors() throws {
        struct Inspects: Decodable {
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: UserInfoCodingKeys.self)
                do {
                    _ = try container.decode(Int.self, forKey: .a)
                    Issue.record("expected a failure")
                } catch let DecodingError.typeMismatch(type, context) {
                    #expect(ObjectIdentifier(type) == ObjectIdentifier(Int.self))
                    #expect(context.codingPath.map(\.stringValue) == ["a"])
                    let carried = context.underlyingError as? UserInfoDecodingError
                    #expect(carried?.description == #"userInfo["a"]: expected Int, found String "x""#)
                }
            }
        }
        _ = try UserInfoDecoder().decode(Inspects.self, from: ["a": "x"])
    }
}
