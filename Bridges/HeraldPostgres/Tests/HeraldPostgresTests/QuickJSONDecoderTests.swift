import Foundation
import Testing

@testable import HeraldPostgres

/// The quick payload decoder, without a server: it gives what `JSONDecoder` gives, or declines.
@Suite("QuickJSONDecoder")
struct QuickJSONDecoderTests {
    enum Kind: String, Codable, Equatable {
        case small, large
    }

    enum Shape: Codable, Equatable {
        case point
        case circle(radius: Double)
        case labelled(String, Int)
    }

    struct Inner: Codable, Equatable {
        var name: String
        var tags: [String]
        var weight: Double?
    }

    struct Everything: Codable, Equatable {
        var int: Int
        var negative: Int64
        var small: Int8
        var unsigned: UInt64
        var double: Double
        var flag: Bool
        var text: String
        var unicode: String
        var optional: Int?
        var absent: String?
        var kind: Kind
        var shapes: [Shape]
        var inner: Inner
        var matrix: [[Int]]
        var byName: [String: Int]
        var byNumber: [Int: String]
        var maybes: [Int?]
        var id: UUID
        var empty: [Int]
        var emptyObject: [String: Int]
    }

    struct WithFoundationTypes: Codable, Equatable {
        var date: Date
        var data: Data
        var url: URL
        var decimal: Decimal
        var float: Float
    }

    private func payload(_ value: some Encodable) throws -> ArraySlice<UInt8> {
        ArraySlice(try JSONEncoder().encode(value))
    }

    /// What `JSONDecoder` gives for `text`, or nil if it throws.
    private func expected<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }

    private func quick<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? QuickJSONDecoder.decode(type, from: ArraySlice(Array(text.utf8)))
    }

    @Test func aValueOfPlainTypesDecodesAsJSONDecoderDecodesIt() throws {
        let value = Everything(
            int: 42, negative: .min, small: -128, unsigned: .max, double: 0.1, flag: true, text: "plain text",
            unicode: "Grüße, 日本, 🎉", optional: 7, absent: nil, kind: .large,
            shapes: [.point, .circle(radius: 2.5), .labelled("a", -3)],
            inner: Inner(name: "n", tags: ["x", "y"], weight: nil), matrix: [[1, 2], [], [3]],
            byName: ["one": 1, "two": 2], byNumber: [1: "one", 20: "twenty"], maybes: [1, nil, 3], id: UUID(),
            empty: [], emptyObject: [:])
        let bytes = try payload(value)
        #expect(try QuickJSONDecoder.decode(Everything.self, from: bytes) == value)
        #expect(
            try QuickJSONDecoder.decode(Everything.self, from: bytes)
                == JSONDecoder().decode(Everything.self, from: Data(bytes)))
    }

    @Test func doublesReadAsJSONDecoderReadsThem() throws {
        let values: [Double] = [
            0, -0.0, 1, -1, 0.1, 1e-7, 1.5e300, -2.2250738585072014e-308, .pi, 123_456_789_012_345_680,
            .leastNonzeroMagnitude,
        ]
        for value in values {
            let bytes = try payload([value])
            #expect(try QuickJSONDecoder.decode([Double].self, from: bytes) == [value])
        }
        for text in ["[1]", "[1.0]", "[1E2]", "[1e+2]", "[-0]", "[12345678901234567890]", "[0.30000000000000004]"] {
            #expect(quick([Double].self, text) == expected([Double].self, text), "\(text)")
        }
    }

    @Test func integersAtTheirLimitsReadAsJSONDecoderReadsThem() {
        let texts = [
            "[9223372036854775807]", "[-9223372036854775808]", "[9223372036854775808]", "[-9223372036854775809]",
            "[0]", "[-0]", "[1.0]", "[1e2]", "[01]", "[-]", "[+1]", "[18446744073709551615]",
        ]
        for text in texts {
            let quickValue = quick([Int].self, text)
            if let quickValue { #expect(quickValue == expected([Int].self, text), "\(text)") }
            let quickUnsigned = quick([UInt64].self, text)
            if let quickUnsigned { #expect(quickUnsigned == expected([UInt64].self, text), "\(text)") }
            let quickSmall = quick([Int8].self, text)
            if let quickSmall { #expect(quickSmall == expected([Int8].self, text), "\(text)") }
        }
        #expect(quick([Int].self, "[9223372036854775807]") == [.max])
        #expect(quick([Int].self, "[-9223372036854775808]") == [.min])
        #expect(quick([UInt64].self, "[18446744073709551615]") == [.max])
    }

    @Test func whatItDeclinesJSONDecoderStillDecodes() throws {
        let value = WithFoundationTypes(
            date: Date(timeIntervalSinceReferenceDate: 12.5), data: Data([1, 2, 3]),
            url: try #require(URL(string: "https://example.com/a?b=c")), decimal: try #require(Decimal(string: "1.25")),
            float: 0.1)
        let bytes = try payload(value)
        #expect(throws: QuickJSONDecoder.Unsupported.self) {
            try QuickJSONDecoder.decode(WithFoundationTypes.self, from: bytes)
        }
        #expect(try JSONDecoder().decode(WithFoundationTypes.self, from: Data(bytes)) == value)
        // JSONEncoder escapes "/" and quotes: such strings go to JSONDecoder.
        let escaped = try payload(["a/b", "say \"hi\"", "line\nbreak", "tab\t"])
        #expect(throws: QuickJSONDecoder.Unsupported.self) { try QuickJSONDecoder.decode([String].self, from: escaped) }
    }

    @Test func malformedOrMismatchedInputIsDeclinedNeverMisread() {
        struct Pair: Codable, Equatable {
            var a: Int
            var b: String
        }
        let texts = [
            #"{"a":1,"b":"x"}"#, #"{ "a" : 1 , "b" : "x" }"#, #"{"b":"x","a":1}"#, #"{"a":1}"#, #"{"a":"1","b":"x"}"#,
            #"{"a":1,"b":"x","a":2}"#, #"{"a":1,"b":"x",}"#, #"{"a":1,"b":"x"} x"#, #"{"a":1,"b":x}"#,
            #"{"a":1 "b":"x"}"#,
            #"[1,"x"]"#, "null", "", "{", #"{"a":1,"b":"x","c":[1,{"d":null}]}"#, #"{"a":null,"b":"x"}"#,
            #"{"a":true,"b":"x"}"#, #"{"a":1,"b":"\u0041"}"#, "{\"a\":1,\"b\":\"\u{1}\"}",
        ]
        for text in texts {
            let quickValue = quick(Pair.self, text)
            if let quickValue {
                #expect(quickValue == expected(Pair.self, text), "\(text)")
            }
        }
        #expect(quick(Pair.self, #"{ "a" : 1 , "b" : "x" }"#) == Pair(a: 1, b: "x"))
        #expect(quick(Pair.self, #"{"a":1,"b":"x","c":[1,{"d":null}]}"#) == Pair(a: 1, b: "x"))
        #expect(quick(Pair.self, #"{"a":1,"b":"x","a":2}"#) == nil)  // a repeated key: declined
        // Keys that are not ASCII: declined (JSONDecoder matches "é" and "e\u{301}" alike).
        #expect(throws: QuickJSONDecoder.Unsupported.self) {
            try QuickJSONDecoder.decode([String: Int].self, from: ArraySlice(Array(#"{"é":1}"#.utf8)))
        }
    }

    @Test func deeplyNestedInputIsDeclinedNotRecursedInto() {
        // 4,000 nested arrays fit in one NOTIFY payload; the scanner gives them to JSONDecoder.
        let depth = 4_000
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: QuickJSONDecoder.Unsupported.self) {
            try QuickJSONDecoder.decode([Int].self, from: ArraySlice(Array(text.utf8)))
        }
        // Nesting within the limit still decodes.
        let shallow = "[[[[1]]]]"
        #expect(quick([[[[Int]]]].self, shallow) == [[[[1]]]])
    }

    @Test func optionalsReadAsJSONDecoderReadsThem() {
        struct Optionals: Codable, Equatable {
            var a: Int?
            var b: [String?]?
        }
        for text in [#"{}"#, #"{"a":null}"#, #"{"a":3,"b":null}"#, #"{"b":["x",null]}"#, #"{"a":"3"}"#] {
            let quickValue = quick(Optionals.self, text)
            if let quickValue { #expect(quickValue == expected(Optionals.self, text), "\(text)") }
        }
        #expect(quick(Optionals.self, #"{"b":["x",null]}"#) == Optionals(a: nil, b: ["x", nil]))
    }
}
