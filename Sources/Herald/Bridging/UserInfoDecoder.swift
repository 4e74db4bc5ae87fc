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
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Makes a decoder.
    public init() {}

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
        let decoder = UserInfoDecoderImplementation(
            value: value, path: path, expected: UserInfoDecodingError.typeName(type),
            userInfo: userInfo.mapValues { $0 as Any })
        return try decoder.unbox(type)
    }
}

// MARK: - Internals shared by the encoder, the decoder and the keys

/// A coding key for user-info paths: a string key, or an array index.
///
/// The coder makes keys with an `intValue` only for array positions, which a key path prints as
/// `[2]` rather than `["2"]`.
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
    /// The wrapped value, one level of `Optional` removed; `nil` for `.none`.
    fileprivate var userInfoWrapped: Any? { self }
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
        flatten(value).map { $0 is NSNull } ?? true
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
        case integer(any BinaryInteger)
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
        guard let storage = Self.storage(of: value, type: dynamicType) else { return nil }
        self.storage = storage
        self.typeName = dynamicType is NSNumber.Type ? "NSNumber" : String(describing: dynamicType)
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
        case let number as NSNumber where type is NSNumber.Type:
            storage(of: number)
        case let bool as Bool where type == Bool.self:
            .bool(bool)
        case let integer as any BinaryInteger where isNative(type):
            .integer(integer)
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
            return .integer(number.int64Value)
        case UInt8(ascii: "C"), UInt8(ascii: "S"), UInt8(ascii: "I"), UInt8(ascii: "L"), UInt8(ascii: "Q"):
            return .integer(number.uint64Value)
        case UInt8(ascii: "f"), UInt8(ascii: "d"):
            return .floating(number.doubleValue)
        default:
            return nil
        }
    }

    var description: String {
        switch storage {
        case .bool(let value): "\(typeName) \(value)"
        case .integer(let value): "\(typeName) \(value)"
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

    /// The `DecodingError` that Codable code expects for a failure of the user-info decoder,
    /// carrying it as its underlying error.
    ///
    /// - Parameter type: The type reported for a value that is missing or of another type.
    init(_ error: UserInfoDecodingError, type: Any.Type = Any.self) {
        var codingPath = error.codingPath
        let key = error.code == .keyNotFound ? codingPath.popLast() : nil
        let context = Context(codingPath: codingPath, debugDescription: error.description, underlyingError: error)
        switch (error.code, key) {
        case (_, let key?): self = .keyNotFound(key, context)
        case (.valueNotFound, _): self = .valueNotFound(type, context)
        case (.typeMismatch, _): self = .typeMismatch(type, context)
        default: self = .dataCorrupted(context)
        }
    }
}

// MARK: - Decoder and containers

/// Decodes one value: the decoding algorithm, which turns an untyped value into a typed one; the
/// `Decoder` handed to the types that decode themselves; and its single-value container.
private struct UserInfoDecoderImplementation: Decoder, SingleValueDecodingContainer {
    typealias Path = [UserInfoDecodingError.PathComponent]

    /// Dictionaries and arrays nested deeper than this fail instead of exhausting the stack.
    static let maximumDepth = 128

    let value: Any
    /// Where the value is, from the top of the user-info dictionary.
    let path: Path
    /// What the value should be, as errors name it: a type, or `a dictionary` for a nested container.
    let expected: String
    let userInfo: [CodingUserInfoKey: Any]

    var codingPath: [any CodingKey] { path.map(\.codingKey) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let dictionary = try containerValue([String: Any].self, UserInfoValue.dictionary)
        return KeyedDecodingContainer(
            UserInfoKeyedDecodingContainer<Key>(dictionary: dictionary, path: path, userInfo: userInfo))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let array = try containerValue([Any].self) { $0 as? [Any] }
        return UserInfoUnkeyedDecodingContainer(array: array, path: path, userInfo: userInfo)
    }

    func singleValueContainer() -> any SingleValueDecodingContainer {
        self
    }

    /// The value as `read` reads it, for a container of the given type.
    private func containerValue<Container>(_ type: Container.Type, _ read: (Any) -> Container?) throws -> Container {
        do {
            return try self.read(read)
        } catch {
            // A missing value is reported as `Any`, a value of another kind as the container's type.
            throw DecodingError(error, type: error.code == .valueNotFound ? Any.self : type)
        }
    }

    func decodeNil() -> Bool {
        UserInfoValue.isNull(value)
    }

    /// Also the witness of the single-value container's requirements for `Bool`, `String`, `Int`
    /// and the other primitives, which the standard library does not implement; it implements the
    /// 128-bit integers with a default that throws, so those two are spelled out.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeValue(type)
    }

    func decode(_ type: Int128.Type) throws -> Int128 { try decodeValue(type) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try decodeValue(type) }

    /// Decodes the value as a `T`, failing with the `DecodingError` that Codable code expects.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = Self(value: value, path: path, expected: UserInfoDecodingError.typeName(type), userInfo: userInfo)
        do {
            return try decoder.unbox(type)
        } catch {
            throw DecodingError(error, type: type)
        }
    }

    /// Decodes the value as a `T`, the type that ``expected`` names.
    func unbox<T: Decodable>(_ type: T.Type) throws(UserInfoDecodingError) -> T {
        if let special = try unboxSpecial(type) {
            return special
        }
        if path.count > Self.maximumDepth {
            throw failure(.invalidValue, detail: "nested more than \(Self.maximumDepth) levels deep")
        }
        // A value stored natively, for example a struct put in the dictionary as it is.
        // An instance of a Decodable class (or subclass) is accepted as it is too.
        if let flat = UserInfoValue.flatten(value),
            Swift.type(of: flat) == type || type is AnyClass,
            let direct = flat as? T
        {
            return direct
        }
        do {
            return try T(from: self)
        } catch {
            throw userInfoDecodingError(from: error)
        }
    }

    /// Decodes the types that the user-info representation stores natively, or returns `nil`.
    private func unboxSpecial<T>(_ type: T.Type) throws(UserInfoDecodingError) -> T? {
        let result: Any
        // swift-format-ignore
        switch type {
        case let integer as any FixedWidthInteger.Type where UserInfoNumber.isNative(type):
            result = try unboxInteger(integer)
        case let floatingPoint as any BinaryFloatingPoint.Type where UserInfoNumber.isNative(type):
            result = try unboxFloatingPoint(floatingPoint)
        case is Bool.Type: result = try unboxBool()
        case is String.Type: result = try read { $0 as? String }
        case is Date.Type: result = try read { $0 as? Date }
        case is Data.Type: result = try read { $0 as? Data }
        case is URL.Type: result = try unboxParsed(detail: "not a valid URL") { URL(string: $0) }
        case is UUID.Type: result = try unboxParsed(detail: "not a valid UUID string") { UUID(uuidString: $0) }
        default: return nil
        }
        // Each branch made the type it matched.
        return result as? T
    }

    /// The present, non-null value as `read` reads it, or a `valueNotFound` or `typeMismatch` error.
    private func read<Result>(_ read: (Any) -> Result?) throws(UserInfoDecodingError) -> Result {
        guard let flat = UserInfoValue.flatten(value), !(flat is NSNull) else {
            throw failure(.valueNotFound)
        }
        guard let result = read(flat) else {
            throw failure(.typeMismatch)
        }
        return result
    }

    private func unboxBool() throws(UserInfoDecodingError) -> Bool {
        try read { flat in
            guard case .bool(let bool)? = UserInfoNumber(flat)?.storage else { return nil }
            return bool
        }
    }

    private func unboxInteger<I: FixedWidthInteger>(_ type: I.Type) throws(UserInfoDecodingError) -> I {
        switch try read(UserInfoNumber.init).storage {
        case .bool:
            throw failure(.typeMismatch)
        case .integer(let integer):
            if let exact = I(exactly: integer) { return exact }
        case .floating(let double):
            if double.isNaN || (double.isFinite && double.rounded(.towardZero) != double) {
                throw failure(.numberNotExact)
            }
            if let exact = I(exactly: double) { return exact }
        }
        throw failure(.numberOutOfRange)
    }

    private func unboxFloatingPoint<F: BinaryFloatingPoint>(_ type: F.Type) throws(UserInfoDecodingError) -> F {
        switch try read(UserInfoNumber.init).storage {
        case .bool:
            throw failure(.typeMismatch)
        case .integer(let integer):
            if let exact = F(exactly: integer) { return exact }
        case .floating(let double):
            let converted = F(double)
            if double.isFinite && !converted.isFinite {
                throw failure(.numberOutOfRange)
            }
            return converted
        }
        throw failure(.numberNotExact)
    }

    /// A value stored either as itself or as a string that `parse` reads (a `URL`, a `UUID`).
    private func unboxParsed<T>(detail: String, parse: (String) -> T?) throws(UserInfoDecodingError) -> T {
        let flat = try read { $0 is T || $0 is String ? $0 : nil }
        if let typed = flat as? T {
            return typed
        }
        guard let string = flat as? String, let parsed = parse(string) else {
            throw failure(.invalidValue, detail: detail)
        }
        return parsed
    }

    /// The error `code` about this decoder's value; a number error says which type the value does not fit.
    private func failure(
        _ code: UserInfoDecodingError.Code, detail: String? = nil, underlyingError: (any Error)? = nil
    ) -> UserInfoDecodingError {
        let detail =
            switch code {
            case .numberOutOfRange: "out of range for \(expected)"
            case .numberNotExact: "not exactly representable as \(expected)"
            default: detail
            }
        return UserInfoDecodingError(
            code: code, path: path, expected: expected, found: UserInfoDecodingError.describeFound(value),
            detail: detail, underlyingError: underlyingError)
    }

    /// Converts whatever the type's own `init(from:)` threw into a ``UserInfoDecodingError``.
    private func userInfoDecodingError(from error: any Error) -> UserInfoDecodingError {
        if let error = error as? UserInfoDecodingError {
            return error
        }
        guard let decodingError = error as? DecodingError, let context = decodingError.context else {
            return failure(.decodingFailed, detail: String(describing: error), underlyingError: error)
        }
        if let carried = context.underlyingError as? UserInfoDecodingError {
            return carried
        }
        // A DecodingError made by the type's own init(from:). When it is about this value, the error
        // describes it.
        let errorPath = context.codingPath.map(UserInfoDecodingError.PathComponent.init)
        if case .keyNotFound(let key, _) = decodingError {
            return .keyNotFound(at: errorPath + [.init(key)], expected: "a value", detail: context.debugDescription)
        }
        let isThisValue = errorPath == path
        let (code, expectation): (UserInfoDecodingError.Code, String) =
            switch decodingError {
            case .valueNotFound(let valueType, _): (.valueNotFound, UserInfoDecodingError.typeName(valueType))
            case .typeMismatch(let valueType, _): (.typeMismatch, UserInfoDecodingError.typeName(valueType))
            default: (.invalidValue, isThisValue ? expected : "a valid value")
            }
        return UserInfoDecodingError(
            code: code, path: errorPath, expected: expectation,
            found: isThisValue ? UserInfoDecodingError.describeFound(value) : "an invalid value",
            detail: context.debugDescription, underlyingError: nil)
    }
}

private struct UserInfoKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let dictionary: [String: Any]
    let path: UserInfoDecoderImplementation.Path
    let userInfo: [CodingUserInfoKey: Any]

    var codingPath: [any CodingKey] { path.map(\.codingKey) }

    var allKeys: [Key] {
        dictionary.keys.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        dictionary[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        UserInfoValue.isNull(dictionary[key.stringValue])
    }

    /// Also the witness of the primitive requirements (`Bool`, `String`, `Int` and the others) but
    /// the 128-bit integers, as in `UserInfoDecoderImplementation.decode(_:)`.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeValue(type, forKey: key)
    }

    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try decodeValue(type, forKey: key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try decodeValue(type, forKey: key) }

    private func decodeValue<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder(forKey: key, expected: UserInfoDecodingError.typeName(type)).decodeValue(type)
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
            throw DecodingError(.keyNotFound(at: keyPath, expected: expected))
        }
        return UserInfoDecoderImplementation(value: value, path: keyPath, expected: expected, userInfo: userInfo)
    }
}

private struct UserInfoUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let array: [Any]
    let path: UserInfoDecoderImplementation.Path
    let userInfo: [CodingUserInfoKey: Any]
    var currentIndex = 0

    var codingPath: [any CodingKey] { path.map(\.codingKey) }
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    mutating func decodeNil() throws -> Bool {
        try checkNotAtEnd(expected: "nil")
        guard UserInfoValue.isNull(array[currentIndex]) else { return false }
        return advancing(past: true)
    }

    /// Also the witness of the primitive requirements (`Bool`, `String`, `Int` and the others) but
    /// the 128-bit integers, as in `UserInfoDecoderImplementation.decode(_:)`.
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeValue(type)
    }

    mutating func decode(_ type: Int128.Type) throws -> Int128 { try decodeValue(type) }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try decodeValue(type) }

    private mutating func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        try advancing(past: nextDecoder(expected: UserInfoDecodingError.typeName(type)).decodeValue(type))
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
        throw DecodingError(
            .keyNotFound(
                at: path + [.index(currentIndex)], expected: expected,
                detail: "the array has only \(count) \(count == 1 ? "element" : "elements")"))
    }
}
