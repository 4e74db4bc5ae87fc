import Foundation

/// Decodes a `Decodable` value from a notification's user-info dictionary, without a JSON round trip.
///
/// `UserInfoDecoder` reads the dictionaries that ``UserInfoEncoder`` writes, and also the ones that
/// legacy code builds by hand or reads from a property list:
///
/// ```swift
/// struct ProfileUpdated: Codable {
///     struct Profile: Codable { var name: String; var age: Int }
///     var profile: Profile
///     var tags: [String]
/// }
///
/// let userInfo: [AnyHashable: Any] = ["profile": ["name": "Ada", "age": 36], "tags": ["admin"]]
/// let value = try UserInfoDecoder().decode(ProfileUpdated.self, from: userInfo)
/// ```
///
/// ## What it reads
///
/// - Nested structs from dictionaries (`[String: Any]`, `[AnyHashable: Any]` or `NSDictionary`;
///   keys that are not strings are ignored), arrays from `[Any]` or `NSArray`, and dictionaries with
///   string keys.
/// - A missing key or `NSNull` decodes as `nil` for an optional property.
/// - `String`, `Bool`, `Date`, `Data` from the same Foundation types; `URL` from a `URL` or a
///   `String`; `UUID` from a `UUID` or its `uuidString`; enumerations from their raw values.
/// - Every integer width (`Int8` … `Int128`, `UInt8` … `UInt128`), `Float` and `Double`, from Swift
///   numbers or `NSNumber`. Integers convert only when the value fits exactly: `3.0` reads as `Int`
///   `3`, while `3.5` fails with ``UserInfoDecodingError/Code/numberNotExact`` and `300` for a
///   `UInt8` fails with ``UserInfoDecodingError/Code/numberOutOfRange``. A floating-point target
///   takes an integer only if it can hold it exactly, and a floating-point value rounded to nearest
///   if it is in range. A `Bool` is never read as a number, nor a number as a `Bool`.
/// - Dictionaries and arrays nested more than 128 levels deep fail with
///   ``UserInfoDecodingError/Code/invalidValue`` instead of exhausting the stack.
///
/// ## Errors
///
/// Decoding never traps on malformed input. Every failure throws a ``UserInfoDecodingError`` that
/// names the key path, the expected type and what was found, for example
/// `userInfo["profile"]["age"]: expected Int, found String "forty"`. Inside a type's own
/// `init(from:)`, failures surface as the usual `DecodingError` cases, so hand-written decoding code
/// that catches `DecodingError.keyNotFound` keeps working.
///
/// ## Threading
///
/// `UserInfoDecoder` is a `Sendable` value type with no shared state: use one from any thread, or
/// several at once. A call runs synchronously on the calling thread.
public struct UserInfoDecoder: Sendable {
    /// Contextual information handed to the decoded types through `Decoder.userInfo`.
    ///
    /// Not to be confused with the notification's user info, which is the data being decoded.
    public var userInfo: [CodingUserInfoKey: any Sendable]

    /// Makes a decoder.
    public init() {
        self.userInfo = [:]
    }

    /// Decodes a value of the given type from a user-info dictionary.
    ///
    /// ```swift
    /// let created = try UserInfoDecoder().decode(UserCreated.self, from: notification.userInfo ?? [:])
    /// ```
    ///
    /// - Parameters:
    ///   - type: The type to decode, usually a struct whose properties are the dictionary's keys.
    ///   - userInfo: The dictionary to read.
    /// - Returns: The decoded value.
    /// - Throws: ``UserInfoDecodingError`` naming the key path, the expected type and what was found,
    ///   if the dictionary does not hold a valid `T`.
    /// - Complexity: O(*n*), where *n* is the number of values read.
    public func decode<T: Decodable>(
        _ type: T.Type,
        from userInfo: [AnyHashable: Any]
    ) throws(UserInfoDecodingError) -> T {
        try decode(type, fromValue: userInfo, at: [])
    }

    /// Decodes a value of the given type from a notification's user info.
    ///
    /// A notification without user info decodes like an empty dictionary. The notification's name
    /// and object are not read; ``NotificationConvertible`` checks the name.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - notification: The notification whose `userInfo` to read.
    /// - Returns: The decoded value.
    /// - Throws: ``UserInfoDecodingError`` if the user info does not hold a valid `T`.
    public func decode<T: Decodable>(
        _ type: T.Type,
        from notification: Notification
    ) throws(UserInfoDecodingError) -> T {
        try decode(type, from: notification.userInfo ?? [:])
    }

    /// Decodes one value, found at `path`, such as the entry for a ``UserInfoKey``.
    func decode<T: Decodable>(
        _ type: T.Type,
        fromValue value: Any,
        at path: [UserInfoDecodingError.PathComponent]
    ) throws(UserInfoDecodingError) -> T {
        try UserInfoUnboxer.unbox(type, from: value, at: path, userInfo: userInfo.mapValues { $0 as Any })
    }
}

// MARK: - Internals shared by the encoder, the decoder and the keys

/// A coding key for user-info paths: a string key, or an array index.
///
/// Only array positions have an `intValue`, so that a key path prints `[2]` rather than `["2"]`.
struct UserInfoCodingKey: CodingKey, Sendable {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }

    static let `super` = UserInfoCodingKey(stringValue: "super")
}

/// Lets the decoder see through `Optional` values that were boxed in `Any`.
private protocol UserInfoOptionalValue {
    var userInfoWrapped: Any? { get }
}

extension Optional: UserInfoOptionalValue {
    fileprivate var userInfoWrapped: Any? {
        switch self {
        case .some(let wrapped): wrapped
        case .none: nil
        }
    }
}

/// Helpers that look at an untyped user-info value.
enum UserInfoValue {
    /// The value with every level of `Optional` removed; `nil` for `Optional.none`.
    static func flatten(_ value: Any?) -> Any? {
        // Cast the unwrapped `Any`, never the `Any?`: an `Optional` always conforms, and casting it
        // would loop forever.
        guard var current = value else { return nil }
        while let optional = current as? any UserInfoOptionalValue {
            guard let wrapped = optional.userInfoWrapped else { return nil }
            current = wrapped
        }
        return current
    }

    /// Whether the value is absent: `nil`, `Optional.none` or `NSNull`.
    static func isNull(_ value: Any?) -> Bool {
        guard let value = flatten(value) else { return true }
        return value is NSNull
    }

    /// The value as a dictionary with string keys; keys of other types are dropped.
    static func dictionary(_ value: Any) -> [String: Any]? {
        if let dictionary = value as? [String: Any] {
            return dictionary
        }
        guard let dictionary = value as? [AnyHashable: Any] else { return nil }
        return dictionary.reduce(into: [:]) { result, entry in
            if let key = entry.key.base as? String {
                result[key] = entry.value
            }
        }
    }
}

/// A number found in a user-info dictionary, from a Swift numeric type or an `NSNumber`.
struct UserInfoNumber: CustomStringConvertible {
    enum Storage {
        case bool(Bool)
        case signed(Int128)
        case unsigned(UInt128)
        case floating(Double)
    }

    let storage: Storage
    let typeName: String

    private static let booleanNumberClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// Reads `value` as a number, or returns `nil` if it is not one.
    ///
    /// Types are compared exactly instead of with `as?`, because `as?` bridges differently on Linux
    /// and on Apple platforms (an `NSNumber` 1 is a `Bool` on one and not on the other).
    init?(_ value: Any) {
        let dynamicType = type(of: value)
        if dynamicType is NSNumber.Type {
            guard let number = value as? NSNumber, let storage = Self.storage(of: number) else { return nil }
            self.storage = storage
            self.typeName = "NSNumber"
        } else {
            guard let storage = Self.storage(of: value, type: dynamicType) else { return nil }
            self.storage = storage
            self.typeName = String(describing: dynamicType)
        }
    }

    /// The numeric types that the user-info representation stores as numbers, and converts between:
    /// every standard integer width, `Float` and `Double`. Other numeric types (`CGFloat`, `Float16`,
    /// an app's own) are read and written by their own `Codable` conformance.
    private static let nativeTypes: [Any.Type] = [
        Int.self, Int8.self, Int16.self, Int32.self, Int64.self, Int128.self,
        UInt.self, UInt8.self, UInt16.self, UInt32.self, UInt64.self, UInt128.self,
        Float.self, Double.self,
    ]

    /// Whether `type` is one of the ``nativeTypes``, compared exactly.
    static func isNative(_ type: Any.Type) -> Bool {
        nativeTypes.contains { $0 == type }
    }

    private static func storage(of value: Any, type: Any.Type) -> Storage? {
        switch value {
        case let bool as Bool where type == Bool.self:
            .bool(bool)
        case let integer as any BinaryInteger where isNative(type):
            Swift.type(of: integer).isSigned ? .signed(Int128(integer)) : .unsigned(UInt128(integer))
        case let floating as any BinaryFloatingPoint where isNative(type) || type == CGFloat.self:
            .floating(Double(floating))
        default:
            nil
        }
    }

    private static func storage(of number: NSNumber) -> Storage? {
        if ObjectIdentifier(type(of: number)) == booleanNumberClass {
            return .bool(number.boolValue)
        }
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "s"), UInt8(ascii: "i"), UInt8(ascii: "l"), UInt8(ascii: "q"):
            return .signed(Int128(number.int64Value))
        case UInt8(ascii: "C"), UInt8(ascii: "S"), UInt8(ascii: "I"), UInt8(ascii: "L"), UInt8(ascii: "Q"):
            return .unsigned(UInt128(number.uint64Value))
        case UInt8(ascii: "f"), UInt8(ascii: "d"):
            return .floating(number.doubleValue)
        default:
            return nil
        }
    }

    var description: String {
        switch storage {
        case .bool(let value): "\(typeName) \(value)"
        case .signed(let value): "\(typeName) \(value)"
        case .unsigned(let value): "\(typeName) \(value)"
        case .floating(let value): "\(typeName) \(value)"
        }
    }
}

extension DecodingError {
    /// The error's context; `nil` only for a case that a later Swift adds.
    var context: Context? {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            context
        @unknown default:
            nil
        }
    }
}

/// The decoding algorithm: turns one untyped value into a typed one.
enum UserInfoUnboxer {
    typealias Path = [UserInfoDecodingError.PathComponent]

    /// Dictionaries and arrays nested deeper than this fail instead of exhausting the stack.
    static let maximumDepth = 128

    static func unbox<T: Decodable>(
        _ type: T.Type,
        from value: Any,
        at path: Path,
        userInfo: [CodingUserInfoKey: Any]
    ) throws(UserInfoDecodingError) -> T {
        if let special = try unboxSpecial(type, from: value, at: path) {
            return special
        }
        if path.count > maximumDepth {
            throw .invalidValue(
                at: path, expected: typeName(type), found: value,
                detail: "nested more than \(maximumDepth) levels deep")
        }
        // A value stored natively, for example a struct put in the dictionary as it is.
        // An instance of a Decodable class (or subclass) is accepted as it is too.
        if let flat = UserInfoValue.flatten(value),
            Swift.type(of: flat) == type || type is AnyClass,
            let direct = flat as? T
        {
            return direct
        }
        let decoder = UserInfoDecoderImplementation(
            value: value, path: path, expected: typeName(type), userInfo: userInfo)
        do {
            return try T(from: decoder)
        } catch {
            throw userInfoDecodingError(from: error, at: path, expected: type, found: value)
        }
    }

    /// Decodes the types that the user-info representation stores natively, or returns `nil`.
    private static func unboxSpecial<T>(
        _ type: T.Type,
        from value: Any,
        at path: Path
    ) throws(UserInfoDecodingError) -> T? {
        let result: Any
        // swift-format-ignore
        switch type {
        case let integer as any FixedWidthInteger.Type where UserInfoNumber.isNative(type):
            result = try unboxInteger(integer, value, at: path)
        case let floatingPoint as any BinaryFloatingPoint.Type where UserInfoNumber.isNative(type):
            result = try unboxFloatingPoint(floatingPoint, value, at: path)
        case is Bool.Type: result = try unboxBool(value, at: path)
        case is String.Type: result = try unboxCast(String.self, value, at: path)
        case is Date.Type: result = try unboxCast(Date.self, value, at: path)
        case is Data.Type: result = try unboxCast(Data.self, value, at: path)
        case is URL.Type: result = try unboxParsed(value, at: path, detail: "not a valid URL") { URL(string: $0) }
        case is UUID.Type:
            result = try unboxParsed(value, at: path, detail: "not a valid UUID string") { UUID(uuidString: $0) }
        default: return nil
        }
        guard let typed = result as? T else {
            // Unreachable: each branch returns the type it matched.
            throw .typeMismatch(at: path, expected: typeName(type), found: result)
        }
        return typed
    }

    /// Returns the present, non-null value, or throws `valueNotFound`.
    static func present(_ value: Any, at path: Path, expected: String) throws(UserInfoDecodingError) -> Any {
        guard let flat = UserInfoValue.flatten(value), !(flat is NSNull) else {
            throw .valueNotFound(at: path, expected: expected, found: value)
        }
        return flat
    }

    private static func unboxBool(_ value: Any, at path: Path) throws(UserInfoDecodingError) -> Bool {
        let flat = try present(value, at: path, expected: "Bool")
        if case .bool(let bool)? = UserInfoNumber(flat)?.storage {
            return bool
        }
        throw .typeMismatch(at: path, expected: "Bool", found: flat)
    }

    /// The number in `value`, for a numeric `type`.
    private static func number(
        _ value: Any,
        _ type: Any.Type,
        at path: Path
    ) throws(UserInfoDecodingError) -> (storage: UserInfoNumber.Storage, found: Any) {
        let flat = try present(value, at: path, expected: typeName(type))
        guard let number = UserInfoNumber(flat) else {
            throw .typeMismatch(at: path, expected: typeName(type), found: flat)
        }
        return (number.storage, flat)
    }

    private static func unboxInteger<I: FixedWidthInteger>(
        _ type: I.Type,
        _ value: Any,
        at path: Path
    ) throws(UserInfoDecodingError) -> I {
        let (storage, flat) = try number(value, type, at: path)
        switch storage {
        case .bool:
            throw .typeMismatch(at: path, expected: typeName(type), found: flat)
        case .signed(let integer):
            if let exact = I(exactly: integer) { return exact }
        case .unsigned(let integer):
            if let exact = I(exactly: integer) { return exact }
        case .floating(let double):
            if double.isNaN || (double.isFinite && double.rounded(.towardZero) != double) {
                throw .numberNotExact(at: path, expected: typeName(type), found: flat)
            }
            if let exact = I(exactly: double) { return exact }
        }
        throw .numberOutOfRange(at: path, expected: typeName(type), found: flat)
    }

    private static func unboxFloatingPoint<F: BinaryFloatingPoint>(
        _ type: F.Type,
        _ value: Any,
        at path: Path
    ) throws(UserInfoDecodingError) -> F {
        let (storage, flat) = try number(value, type, at: path)
        switch storage {
        case .bool:
            throw .typeMismatch(at: path, expected: typeName(type), found: flat)
        case .signed(let integer):
            if let exact = F(exactly: integer) { return exact }
        case .unsigned(let integer):
            if let exact = F(exactly: integer) { return exact }
        case .floating(let double):
            let converted = F(double)
            if double.isFinite && !converted.isFinite {
                throw .numberOutOfRange(at: path, expected: typeName(type), found: flat)
            }
            return converted
        }
        throw .numberNotExact(at: path, expected: typeName(type), found: flat)
    }

    /// A value stored as itself (a `String`, a `Date`, `Data`).
    private static func unboxCast<T>(_ type: T.Type, _ value: Any, at path: Path) throws(UserInfoDecodingError) -> T {
        let flat = try present(value, at: path, expected: typeName(type))
        guard let typed = flat as? T else {
            throw .typeMismatch(at: path, expected: typeName(type), found: flat)
        }
        return typed
    }

    /// A value stored either as itself or as a string that `parse` reads (a `URL`, a `UUID`).
    private static func unboxParsed<T>(
        _ value: Any,
        at path: Path,
        detail: String,
        parse: (String) -> T?
    ) throws(UserInfoDecodingError) -> T {
        let flat = try present(value, at: path, expected: typeName(T.self))
        if let typed = flat as? T {
            return typed
        }
        guard let string = flat as? String else {
            throw .typeMismatch(at: path, expected: typeName(T.self), found: flat)
        }
        guard let parsed = parse(string) else {
            throw .invalidValue(at: path, expected: typeName(T.self), found: flat, detail: detail)
        }
        return parsed
    }

    static func typeName(_ type: Any.Type) -> String {
        UserInfoDecodingError.typeName(type)
    }

    /// Turns a ``UserInfoDecodingError`` into the `DecodingError` that Codable code expects,
    /// carrying the original as its underlying error.
    static func wrap(_ error: UserInfoDecodingError, type: Any.Type) -> DecodingError {
        func context(_ codingPath: [any CodingKey]) -> DecodingError.Context {
            DecodingError.Context(codingPath: codingPath, debugDescription: error.description, underlyingError: error)
        }
        var codingPath = error.codingPath
        if error.code == .keyNotFound, let key = codingPath.popLast() {
            return .keyNotFound(key, context(codingPath))
        }
        switch error.code {
        case .valueNotFound: return .valueNotFound(type, context(codingPath))
        case .typeMismatch: return .typeMismatch(type, context(codingPath))
        default: return .dataCorrupted(context(codingPath))
        }
    }

    /// Converts whatever a type's own `init(from:)` threw into a ``UserInfoDecodingError``.
    ///
    /// - Parameters:
    ///   - path: Where the failing step started.
    ///   - expected: The type that step was decoding.
    ///   - found: The value that step was decoding.
    static func userInfoDecodingError(
        from error: any Error,
        at path: Path,
        expected type: Any.Type,
        found value: Any
    ) -> UserInfoDecodingError {
        if let error = error as? UserInfoDecodingError {
            return error
        }
        guard let decodingError = error as? DecodingError, let context = decodingError.context else {
            return .decodingFailed(at: path, expected: typeName(type), found: value, error: error)
        }
        if let carried = context.underlyingError as? UserInfoDecodingError {
            return carried
        }
        // A DecodingError made by the type's own init(from:). When it is about the value this step
        // decodes, the error describes that value.
        let errorPath = context.codingPath.map(UserInfoDecodingError.PathComponent.init)
        if case .keyNotFound(let key, _) = decodingError {
            return .keyNotFound(at: errorPath + [.init(key)], expected: "a value", detail: context.debugDescription)
        }
        let isThisValue = errorPath == path
        let (code, expected): (UserInfoDecodingError.Code, String) =
            switch decodingError {
            case .valueNotFound(let valueType, _): (.valueNotFound, typeName(valueType))
            case .typeMismatch(let valueType, _): (.typeMismatch, typeName(valueType))
            default: (.invalidValue, isThisValue ? typeName(type) : "a valid value")
            }
        return UserInfoDecodingError(
            code: code, path: errorPath, expected: expected,
            found: isThisValue ? UserInfoDecodingError.describeFound(value) : "an invalid value",
            detail: context.debugDescription)
    }
}

// MARK: - Decoder and containers

/// The decoder of one value, and its single-value container.
private struct UserInfoDecoderImplementation: Decoder, SingleValueDecodingContainer {
    let value: Any
    let path: UserInfoUnboxer.Path
    let expected: String
    let userInfo: [CodingUserInfoKey: Any]

    var codingPath: [any CodingKey] { path.map(\.codingKey) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let flat = try present()
        guard let dictionary = UserInfoValue.dictionary(flat) else {
            throw UserInfoUnboxer.wrap(
                .typeMismatch(at: path, expected: expected, found: flat), type: [String: Any].self)
        }
        return KeyedDecodingContainer(
            UserInfoKeyedDecodingContainer<Key>(dictionary: dictionary, path: path, userInfo: userInfo))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let flat = try present()
        guard let array = flat as? [Any] else {
            throw UserInfoUnboxer.wrap(.typeMismatch(at: path, expected: expected, found: flat), type: [Any].self)
        }
        return UserInfoUnkeyedDecodingContainer(array: array, path: path, userInfo: userInfo)
    }

    func singleValueContainer() -> any SingleValueDecodingContainer {
        self
    }

    private func present() throws -> Any {
        do {
            return try UserInfoUnboxer.present(value, at: path, expected: expected)
        } catch {
            throw UserInfoUnboxer.wrap(error, type: Any.self)
        }
    }

    func decodeNil() -> Bool {
        UserInfoValue.isNull(value)
    }

    /// Also the witness of the single-value container's requirements for `Bool`, `String`, `Int`
    /// and the other primitives, which the standard library does not implement; it implements the
    /// 128-bit integers with a default that throws, so those two are spelled out.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try unbox(type)
    }

    func decode(_ type: Int128.Type) throws -> Int128 { try unbox(type) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try unbox(type) }

    /// Decodes the value this decoder stands for as a `T`.
    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try UserInfoUnboxer.unbox(type, from: value, at: path, userInfo: userInfo)
        } catch {
            throw UserInfoUnboxer.wrap(error, type: type)
        }
    }
}

private struct UserInfoKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let dictionary: [String: Any]
    let path: UserInfoUnboxer.Path
    let userInfo: [CodingUserInfoKey: Any]

    var codingPath: [any CodingKey] { path.map(\.codingKey) }

    var allKeys: [Key] {
        dictionary.keys.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        dictionary[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = dictionary[key.stringValue] else { return true }
        return UserInfoValue.isNull(value)
    }

    /// Also the witness of the primitive requirements (`Bool`, `String`, `Int` and the others) but
    /// the 128-bit integers, as in `UserInfoDecoderImplementation.decode(_:)`.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeValue(type, forKey: key)
    }

    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try decodeValue(type, forKey: key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try decodeValue(type, forKey: key) }

    private func decodeValue<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder(forKey: key, expected: UserInfoUnboxer.typeName(type)).unbox(type)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(forKey: key, expected: "a dictionary").container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(forKey: key, expected: "an array").unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        superDecoder(named: UserInfoCodingKey.super.stringValue)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        superDecoder(named: key.stringValue)
    }

    private func superDecoder(named name: String) -> any Decoder {
        UserInfoDecoderImplementation(
            value: dictionary[name] ?? NSNull(), path: path + [.key(name)], expected: "a value", userInfo: userInfo)
    }

    private func decoder(forKey key: Key, expected: String) throws -> UserInfoDecoderImplementation {
        let keyPath = path + [.key(key.stringValue)]
        guard let value = dictionary[key.stringValue] else {
            throw UserInfoUnboxer.wrap(.keyNotFound(at: keyPath, expected: expected), type: Any.self)
        }
        return UserInfoDecoderImplementation(value: value, path: keyPath, expected: expected, userInfo: userInfo)
    }
}

private struct UserInfoUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let array: [Any]
    let path: UserInfoUnboxer.Path
    let userInfo: [CodingUserInfoKey: Any]
    var currentIndex = 0

    var codingPath: [any CodingKey] { path.map(\.codingKey) }
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    mutating func decodeNil() throws -> Bool {
        try checkNotAtEnd(expected: "nil")
        if UserInfoValue.isNull(array[currentIndex]) {
            currentIndex += 1
            return true
        }
        return false
    }

    /// Also the witness of the primitive requirements (`Bool`, `String`, `Int` and the others) but
    /// the 128-bit integers, as in `UserInfoDecoderImplementation.decode(_:)`.
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeValue(type)
    }

    mutating func decode(_ type: Int128.Type) throws -> Int128 { try decodeValue(type) }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try decodeValue(type) }

    private mutating func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        try advancing(past: nextDecoder(expected: UserInfoUnboxer.typeName(type)).unbox(type))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try advancing(past: nextDecoder(expected: "a dictionary").container(keyedBy: type))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try advancing(past: nextDecoder(expected: "an array").unkeyedContainer())
    }

    mutating func superDecoder() throws -> any Decoder {
        try advancing(past: nextDecoder(expected: "a value"))
    }

    /// Moves to the next element, once `result` has been read from the current one.
    private mutating func advancing<Result>(past result: Result) -> Result {
        currentIndex += 1
        return result
    }

    private func nextDecoder(expected: String) throws -> UserInfoDecoderImplementation {
        try checkNotAtEnd(expected: expected)
        return UserInfoDecoderImplementation(
            value: array[currentIndex], path: path + [.index(currentIndex)], expected: expected, userInfo: userInfo)
    }

    private func checkNotAtEnd(expected: String) throws {
        guard isAtEnd else { return }
        let count = array.count
        throw UserInfoUnboxer.wrap(
            .keyNotFound(
                at: path + [.index(currentIndex)], expected: expected,
                detail: "the array has only \(count) \(count == 1 ? "element" : "elements")"),
            type: Any.self)
    }
}
