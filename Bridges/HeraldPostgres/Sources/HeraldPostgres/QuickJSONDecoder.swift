import Foundation

/// Decodes the payloads of received notifications faster than `JSONDecoder`, for the JSON that
/// `JSONEncoder` writes for plain values: objects, arrays, strings without escapes, integers,
/// `Double`, `Bool` and `null`.
///
/// It decodes a value only when the result is certain to be the one `JSONDecoder` gives, and
/// otherwise throws, so that the caller decodes with `JSONDecoder` instead, which then also names
/// what is wrong. It throws for the types `JSONDecoder` treats specially (`Date`, `Data`, `URL`,
/// `Decimal`), for `Float` (which `JSONDecoder` may round twice), for strings with escapes, for
/// numbers with a fraction or an exponent read as integers, for objects with a repeated key, a key
/// that is not ASCII or more than ``maximumKeys`` keys, for `superDecoder`, and for every error, including a missing key or a
/// type mismatch.
enum QuickJSONDecoder {
    /// The most keys an object may have; larger ones go to `JSONDecoder`.
    static let maximumKeys = 32

    /// Not decoded here: decode with `JSONDecoder`.
    struct Unsupported: Error {}

    static func decode<T: Decodable>(_ type: T.Type, from bytes: ArraySlice<UInt8>) throws -> T {
        var scanner = Scanner(bytes: bytes, index: bytes.startIndex)
        scanner.skipWhitespace()
        let value = try scanner.skipValue()
        scanner.skipWhitespace()
        guard scanner.index == bytes.endIndex else { throw Unsupported() }
        return try Reader(bytes: bytes, value: value, codingPath: []).decode(type)
    }

    /// One JSON value of the input: where it is, and its kind (from its first byte).
    struct Value {
        let range: Range<Int>
    }

    /// Skips over JSON values, checking their syntax.
    struct Scanner {
        let bytes: ArraySlice<UInt8>
        var index: Int

        var current: UInt8? { index < bytes.endIndex ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            guard current == byte else { throw Unsupported() }
            index += 1
        }

        mutating func skipLiteral(_ literal: StaticString) throws {
            let count = literal.utf8CodeUnitCount
            guard bytes.endIndex - index >= count else { throw Unsupported() }
            let pointer = literal.utf8Start
            for offset in 0..<count where bytes[index + offset] != pointer[offset] { throw Unsupported() }
            index += count
        }

        /// The most arrays and objects a value may nest; deeper ones go to `JSONDecoder`, which
        /// has a limit of its own, so that no input can exhaust the stack here.
        static let maximumDepth = 64

        /// Skips one value and returns its range.
        mutating func skipValue(depth: Int = 0) throws -> Value {
            guard depth < Self.maximumDepth else { throw Unsupported() }
            let start = index
            switch current {
            case UInt8(ascii: "{"):
                index += 1
                skipWhitespace()
                if current == UInt8(ascii: "}") {
                    index += 1
                } else {
                    while true {
                        skipWhitespace()
                        _ = try skipString()
                        skipWhitespace()
                        try expect(UInt8(ascii: ":"))
                        skipWhitespace()
                        _ = try skipValue(depth: depth + 1)
                        skipWhitespace()
                        if current == UInt8(ascii: ",") {
                            index += 1
                        } else {
                            try expect(UInt8(ascii: "}"))
                            break
                        }
                    }
                }
            case UInt8(ascii: "["):
                index += 1
                skipWhitespace()
                if current == UInt8(ascii: "]") {
                    index += 1
                } else {
                    while true {
                        skipWhitespace()
                        _ = try skipValue(depth: depth + 1)
                        skipWhitespace()
                        if current == UInt8(ascii: ",") {
                            index += 1
                        } else {
                            try expect(UInt8(ascii: "]"))
                            break
                        }
                    }
                }
            case UInt8(ascii: "\""):
                _ = try skipString()
            case UInt8(ascii: "t"):
                try skipLiteral("true")
            case UInt8(ascii: "f"):
                try skipLiteral("false")
            case UInt8(ascii: "n"):
                try skipLiteral("null")
            case .some(let byte)
            where byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte):
                try skipNumber()
            default:
                throw Unsupported()
            }
            return Value(range: start..<index)
        }

        /// Skips a string without escapes or control characters; returns the range of its content.
        mutating func skipString() throws -> Range<Int> {
            try expect(UInt8(ascii: "\""))
            let start = index
            while let byte = current, byte != UInt8(ascii: "\"") {
                guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { throw Unsupported() }
                index += 1
            }
            let end = index
            try expect(UInt8(ascii: "\""))
            return start..<end
        }

        /// Skips a number in JSON's syntax.
        mutating func skipNumber() throws {
            if current == UInt8(ascii: "-") { index += 1 }
            if current == UInt8(ascii: "0") {
                index += 1
            } else {
                guard try skipDigits() else { throw Unsupported() }
            }
            if current == UInt8(ascii: ".") {
                index += 1
                guard try skipDigits() else { throw Unsupported() }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard try skipDigits() else { throw Unsupported() }
            }
        }

        /// Skips digits; returns whether there was one at least.
        mutating func skipDigits() throws -> Bool {
            let start = index
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index > start
        }
    }

    /// Decodes one value of the input: a `Decoder` and its single-value container.
    struct Reader: Decoder, SingleValueDecodingContainer {
        let bytes: ArraySlice<UInt8>
        let value: Value
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        private var first: UInt8 { bytes[value.range.lowerBound] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(try Keyed<Key>(reader: self))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { try Unkeyed(reader: self) }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { first == UInt8(ascii: "n") }

        func decode(_ type: Bool.Type) throws -> Bool {
            switch first {
            case UInt8(ascii: "t"): return true
            case UInt8(ascii: "f"): return false
            default: throw Unsupported()
            }
        }

        func decode(_ type: String.Type) throws -> String {
            guard first == UInt8(ascii: "\"") else { throw Unsupported() }
            return String(decoding: bytes[(value.range.lowerBound + 1)..<(value.range.upperBound - 1)], as: UTF8.self)
        }

        func decode(_ type: Double.Type) throws -> Double {
            guard first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
                let number = Double(String(decoding: bytes[value.range], as: UTF8.self)), number.isFinite
            else { throw Unsupported() }
            return number
        }

        func decode(_ type: Float.Type) throws -> Float { throw Unsupported() }

        /// An integer written without a fraction or an exponent (and not as `-0`).
        private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            var index = value.range.lowerBound
            let isNegative = bytes[index] == UInt8(ascii: "-")
            if isNegative {
                guard I.isSigned else { throw Unsupported() }
                index += 1
            }
            guard index < value.range.upperBound, !(isNegative && bytes[index] == UInt8(ascii: "0")) else {
                throw Unsupported()
            }
            var number: I = 0
            for byte in bytes[index..<value.range.upperBound] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw Unsupported() }
                let digit = I(byte - UInt8(ascii: "0"))
                let (shifted, overflow) = number.multipliedReportingOverflow(by: 10)
                let (next, overflowAgain) =
                    isNegative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
                guard !overflow, !overflowAgain else { throw Unsupported() }
                number = next
            }
            return number
        }

        func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            // The types `JSONDecoder` decodes in its own way.
            guard type != Date.self, type != Data.self, type != URL.self, type != Decimal.self else {
                throw Unsupported()
            }
            return try T(from: self)
        }

        /// A value inside this one.
        func reader(for value: Value, key: any CodingKey) -> Reader {
            Reader(bytes: bytes, value: value, codingPath: codingPath + [key])
        }
    }

    /// An object's members, read in one pass.
    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let reader: Reader
        /// Each member's key (the range of its characters) and value.
        let members: [(key: Range<Int>, value: Value)]

        var codingPath: [any CodingKey] { reader.codingPath }

        init(reader: Reader) throws {
            self.reader = reader
            guard reader.bytes[reader.value.range.lowerBound] == UInt8(ascii: "{") else { throw Unsupported() }
            var scanner = Scanner(bytes: reader.bytes, index: reader.value.range.lowerBound + 1)
            var members: [(key: Range<Int>, value: Value)] = []
            scanner.skipWhitespace()
            if scanner.current != UInt8(ascii: "}") {
                while true {
                    scanner.skipWhitespace()
                    let key = try scanner.skipString()
                    scanner.skipWhitespace()
                    try scanner.expect(UInt8(ascii: ":"))
                    scanner.skipWhitespace()
                    let value = try scanner.skipValue()
                    // ASCII keys only: `JSONDecoder` matches keys as `String`s, by canonical
                    // equivalence, where this reader compares bytes.
                    guard members.count < QuickJSONDecoder.maximumKeys,
                        reader.bytes[key].allSatisfy({ $0 < 0x80 }),
                        !members.contains(where: { reader.bytes[$0.key].elementsEqual(reader.bytes[key]) })
                    else { throw Unsupported() }
                    members.append((key, value))
                    scanner.skipWhitespace()
                    guard scanner.current == UInt8(ascii: ",") else { break }
                    scanner.index += 1
                }
            }
            self.members = members
        }

        var allKeys: [Key] {
            members.compactMap { Key(stringValue: String(decoding: reader.bytes[$0.key], as: UTF8.self)) }
        }

        private func find(_ key: Key) -> Value? {
            let name = key.stringValue.utf8
            return members.first { reader.bytes[$0.key].elementsEqual(name) }?.value
        }

        private func reader(_ key: Key) throws -> Reader {
            guard let value = find(key) else { throw Unsupported() }
            return reader.reader(for: value, key: key)
        }

        func contains(_ key: Key) -> Bool { find(key) != nil }

        func decodeNil(forKey key: Key) throws -> Bool { try reader(key).decodeNil() }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try reader(key).decode(type) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try reader(key).decode(type) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try reader(key).decode(type) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try reader(key).decode(type) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw Unsupported() }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try reader(key).decode(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try reader(key).decode(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try reader(key).decode(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try reader(key).decode(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try reader(key).decode(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try reader(key).decode(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try reader(key).decode(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try reader(key).decode(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try reader(key).decode(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try reader(key).decode(type) }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try reader(key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try reader(key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { throw Unsupported() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw Unsupported() }
    }

    /// The key of an array element in a coding path.
    struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    /// An array's elements, read in one pass.
    struct Unkeyed: UnkeyedDecodingContainer {
        let reader: Reader
        let elements: [Value]
        private(set) var currentIndex = 0

        var codingPath: [any CodingKey] { reader.codingPath }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        init(reader: Reader) throws {
            self.reader = reader
            guard reader.bytes[reader.value.range.lowerBound] == UInt8(ascii: "[") else { throw Unsupported() }
            var scanner = Scanner(bytes: reader.bytes, index: reader.value.range.lowerBound + 1)
            var elements: [Value] = []
            scanner.skipWhitespace()
            if scanner.current != UInt8(ascii: "]") {
                while true {
                    scanner.skipWhitespace()
                    elements.append(try scanner.skipValue())
                    scanner.skipWhitespace()
                    guard scanner.current == UInt8(ascii: ",") else { break }
                    scanner.index += 1
                }
            }
            self.elements = elements
        }

        /// The next element's reader; moves past it.
        private mutating func next() throws -> Reader {
            guard currentIndex < elements.count else { throw Unsupported() }
            defer { currentIndex += 1 }
            return reader.reader(for: elements[currentIndex], key: IndexKey(currentIndex))
        }

        mutating func decodeNil() throws -> Bool {
            guard currentIndex < elements.count else { throw Unsupported() }
            guard reader.reader(for: elements[currentIndex], key: IndexKey(currentIndex)).decodeNil() else {
                return false
            }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
        mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { throw Unsupported() }
        mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next().unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { throw Unsupported() }
    }
}
