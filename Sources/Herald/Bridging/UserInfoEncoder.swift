import Foundation

/// Encodes an `Encodable` value as a notification's user-info dictionary, without a JSON round trip.
///
/// Each stored property becomes one entry, so that legacy observers can read the dictionary as
/// they always did:
///
/// ```swift
/// struct UserCreated: Codable {
///     var userID: Int
///     var name: String
///     var homePage: URL?
/// }
///
/// let userInfo = try UserInfoEncoder().encode(UserCreated(userID: 7, name: "Ada", homePage: nil))
/// // ["userID": 7, "name": "Ada"]
/// ```
///
/// ## What it writes
///
/// With the default strategies every value is an object that legacy observers read with a cast
/// (`as? URL`, `as? UUID`, `as? Date`, `as? Int`, `as? [String: Any]`). Choose
/// ``URLEncodingStrategy/absoluteString`` and ``UUIDEncodingStrategy/uuidString`` to get only
/// property-list values, which `PropertyListSerialization` can archive:
///
/// | Swift value                              | Stored as                                            |
/// |------------------------------------------|------------------------------------------------------|
/// | struct, class, `[String: T]`             | `[String: Any]` (the top level: `[AnyHashable: Any]`) |
/// | array, set                               | `[Any]`                                              |
/// | `String`, `Bool`, `Date`, `Data`         | the same type                                        |
/// | any integer type                         | `Int` if it fits, else `Int64` or `UInt64`; a 128-bit value beyond those stays as it is |
/// | `Float`, `Double`                        | `Double`                                             |
/// | `URL`                                    | the `URL`, or its `absoluteString` with ``URLEncodingStrategy/absoluteString`` |
/// | `UUID`                                   | the `UUID`, or its `uuidString` with ``UUIDEncodingStrategy/uuidString`` |
/// | enumeration with a raw value             | the raw value                                        |
/// | `nil` optional property                  | nothing: the key is absent                           |
/// | `nil` inside an array or dictionary, or an explicit `encodeNil` | `NSNull` (not a property-list value) |
///
/// ``UserInfoDecoder`` reads all of these back, and accepts both forms of `URL` and `UUID`.
///
/// ## Threading
///
/// `UserInfoEncoder` is a `Sendable` value type with no shared state: use one from any thread, or
/// several at once. A call runs synchronously on the calling thread.
public struct UserInfoEncoder: Sendable {
    /// How a `URL` is stored.
    public struct URLEncodingStrategy: Hashable, Sendable {
        private let storesString: Bool

        /// Stores the URL's `absoluteString`, a property-list value, for legacy observers that read
        /// `userInfo["key"] as? String`.
        public static let absoluteString = URLEncodingStrategy(storesString: true)

        /// Stores the `URL` itself, for legacy observers that read `userInfo["key"] as? URL`. This
        /// is the default.
        public static let url = URLEncodingStrategy(storesString: false)

        func encode(_ url: URL) -> Any {
            storesString ? url.absoluteString : url
        }
    }

    /// How a `UUID` is stored.
    public struct UUIDEncodingStrategy: Hashable, Sendable {
        private let storesString: Bool

        /// Stores the UUID's `uuidString`, a property-list value, for legacy observers that read
        /// `userInfo["key"] as? String`.
        public static let uuidString = UUIDEncodingStrategy(storesString: true)

        /// Stores the `UUID` itself, for legacy observers that read `userInfo["key"] as? UUID`.
        /// This is the default.
        public static let uuid = UUIDEncodingStrategy(storesString: false)

        func encode(_ uuid: UUID) -> Any {
            storesString ? uuid.uuidString : uuid
        }
    }

    /// How `URL` values are stored. The default is ``URLEncodingStrategy/url``.
    public var urlEncodingStrategy: URLEncodingStrategy = .url

    /// How `UUID` values are stored. The default is ``UUIDEncodingStrategy/uuid``.
    public var uuidEncodingStrategy: UUIDEncodingStrategy = .uuid

    /// Contextual information handed to the encoded types through `Encoder.userInfo`.
    ///
    /// Not to be confused with the notification's user info, which is the encoder's output.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Makes an encoder with the default strategies, which store `URL` and `UUID` values as
    /// themselves, the objects legacy observers read.
    public init() {}

    /// Makes an encoder whose output holds only property-list values: `URL` values as their
    /// `absoluteString`, `UUID` values as their `uuidString`.
    public static var propertyList: UserInfoEncoder {
        var encoder = UserInfoEncoder()
        encoder.urlEncodingStrategy = .absoluteString
        encoder.uuidEncodingStrategy = .uuidString
        return encoder
    }

    /// Encodes a value as a user-info dictionary.
    ///
    /// ```swift
    /// let notification = Notification(
    ///     name: UserCreated.notificationName, object: nil,
    ///     userInfo: try UserInfoEncoder().encode(created))
    /// ```
    ///
    /// - Parameter value: The value to encode. It must encode a keyed container, as structs,
    ///   classes and `[String: T]` dictionaries do.
    /// - Returns: One entry per key that the value encoded.
    /// - Throws: `EncodingError.invalidValue` if the value encodes a single value or an array at the
    ///   top level, or mixes kinds of containers; any error the value's `encode(to:)` throws.
    /// - Complexity: O(*n*), where *n* is the number of values written.
    public func encode<T: Encodable>(_ value: T) throws -> [AnyHashable: Any] {
        let root = try encodeNode(value)
        switch root.kind {
        case .empty, .keyed:
            return root.keyed.mapValues { $0.materialize() }
        case .value, .unkeyed:
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: """
                        \(T.self) encodes a single value or an array; a user-info dictionary needs a \
                        type that encodes a keyed container, such as a struct
                        """))
        }
    }

    /// Encodes one value as it would be stored inside a user-info dictionary.
    func encodeValue<T: Encodable>(_ value: T) throws -> Any {
        try encodeNode(value).materialize()
    }

    private func encodeNode<T: Encodable>(_ value: T) throws -> UserInfoEncodingNode {
        let state = UserInfoEncodingState(encoder: self)
        let root = UserInfoEncodingNode()
        try UserInfoEncoderImplementation(node: root, codingPath: [], state: state).box(value)
        if let error = state.firstError {
            throw error
        }
        return root
    }
}

// MARK: - Internals

/// One value under construction. A reference, so that nested containers can fill it in later.
final class UserInfoEncodingNode {
    enum Kind {
        case empty
        case value
        case keyed
        case unkeyed
    }

    private(set) var kind = Kind.empty
    private var value: Any = NSNull()
    /// The children of a keyed container.
    var keyed: [String: UserInfoEncodingNode] = [:]
    /// The children of an unkeyed container.
    var unkeyed: [UserInfoEncodingNode] = []

    func setValue(_ newValue: Any) {
        clear(as: .value)
        value = newValue
    }

    /// Makes the node a container of the given kind, keyed or unkeyed. A node that held a value or
    /// the other kind of container is emptied first, and then the result is `false`.
    func makeContainer(_ container: Kind) -> Bool {
        guard kind != container else { return true }
        let wasEmpty = kind == .empty
        clear(as: container)
        return wasEmpty
    }

    private func clear(as newKind: Kind) {
        kind = newKind
        value = NSNull()
        keyed = [:]
        unkeyed = []
    }

    /// The finished value: dictionaries, arrays and leaves.
    func materialize() -> Any {
        switch kind {
        case .empty: [String: Any]()
        case .value: value
        case .keyed: keyed.mapValues { $0.materialize() }
        case .unkeyed: unkeyed.map { $0.materialize() }
        }
    }
}

/// State shared by every level of one encoding run.
final class UserInfoEncodingState {
    let encoder: UserInfoEncoder
    let userInfo: [CodingUserInfoKey: Any]
    /// A misuse that `Encoder`'s non-throwing container methods cannot report directly.
    private(set) var firstError: EncodingError?

    init(encoder: UserInfoEncoder) {
        self.encoder = encoder
        self.userInfo = encoder.userInfo.mapValues { $0 as Any }
    }

    func record(_ error: EncodingError) {
        firstError = firstError ?? error
    }

    /// The stored form of values that the user-info representation keeps as leaves, or `nil`.
    func leaf<T: Encodable>(_ value: T) -> Any? {
        // swift-format-ignore
        switch value {
        case let value as String where T.self == String.self: return value
        case let value as Bool where T.self == Bool.self: return value
        case let value as any BinaryInteger where UserInfoNumber.isNative(T.self): return Self.integer(value)
        case let value as any BinaryFloatingPoint where UserInfoNumber.isNative(T.self): return Double(value)
        case let value as Date where T.self == Date.self: return value
        case let value as Data where T.self == Data.self: return value
        case let value as URL where T.self == URL.self: return encoder.urlEncodingStrategy.encode(value)
        case let value as UUID where T.self == UUID.self: return encoder.uuidEncodingStrategy.encode(value)
        default: return nil
        }
    }

    /// `Int` when the value fits, so that `userInfo["key"] as? Int` works for every width.
    static func integer<I: BinaryInteger>(_ value: I) -> Any {
        if let int = Int(exactly: value) { return int }
        if let int64 = Int64(exactly: value) { return int64 }
        if let uint64 = UInt64(exactly: value) { return uint64 }
        return value
    }
}

/// Encodes one value into its node: the `Encoder` handed to the types that encode themselves, and
/// its single-value container.
private struct UserInfoEncoderImplementation: Encoder, SingleValueEncodingContainer {
    let node: UserInfoEncodingNode
    let codingPath: [any CodingKey]
    let state: UserInfoEncodingState

    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if !node.makeContainer(.keyed) {
            state.record(misuse("a keyed container was requested where a value or an array was already encoded"))
        }
        return KeyedEncodingContainer(
            UserInfoKeyedEncodingContainer<Key>(node: node, codingPath: codingPath, state: state))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if !node.makeContainer(.unkeyed) {
            state.record(misuse("an unkeyed container was requested where a value or a dictionary was already encoded"))
        }
        return UserInfoUnkeyedEncodingContainer(node: node, codingPath: codingPath, state: state)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        self
    }

    private func misuse(_ message: String) -> EncodingError {
        .invalidValue(NSNull(), EncodingError.Context(codingPath: codingPath, debugDescription: message))
    }

    func encodeNil() {
        node.setValue(NSNull())
    }

    /// Also the witness of the primitive requirements (`Bool`, `String`, `Int` and the others): the
    /// standard library implements only the 128-bit integers, with a default that throws, so those
    /// two are spelled out.
    func encode<T: Encodable>(_ value: T) throws {
        try box(value)
    }

    func encode(_ value: Int128) throws { try box(value) }
    func encode(_ value: UInt128) throws { try box(value) }

    /// Stores the value in the node: a leaf as it is stored, anything else as it encodes itself.
    func box<T: Encodable>(_ value: T) throws {
        if let leaf = state.leaf(value) {
            node.setValue(leaf)
        } else {
            try value.encode(to: self)
        }
    }
}

private struct UserInfoKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: UserInfoEncodingNode
    let codingPath: [any CodingKey]
    let state: UserInfoEncodingState

    mutating func encodeNil(forKey key: Key) throws {
        childEncoder(forKey: key).encodeNil()
    }

    /// Also the witness of the primitive requirements but the 128-bit integers, as in
    /// `UserInfoEncoderImplementation.encode(_:)`.
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeValue(value, forKey: key)
    }

    mutating func encode(_ value: Int128, forKey key: Key) throws { try encodeValue(value, forKey: key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try encodeValue(value, forKey: key) }

    private func encodeValue<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = UserInfoEncodingNode()
        try UserInfoEncoderImplementation(node: child, codingPath: codingPath + [key], state: state).box(value)
        node.keyed[key.stringValue] = child
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        childEncoder(forKey: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        childEncoder(forKey: key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        childEncoder(forKey: UserInfoCodingKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        childEncoder(forKey: key)
    }

    private func childEncoder(forKey key: any CodingKey) -> UserInfoEncoderImplementation {
        let child = UserInfoEncodingNode()
        node.keyed[key.stringValue] = child
        return UserInfoEncoderImplementation(node: child, codingPath: codingPath + [key], state: state)
    }
}

private struct UserInfoUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let node: UserInfoEncodingNode
    let codingPath: [any CodingKey]
    let state: UserInfoEncodingState

    var count: Int { node.unkeyed.count }

    private var nextKey: any CodingKey { UserInfoCodingKey(intValue: node.unkeyed.count) }

    mutating func encodeNil() throws {
        nextEncoder().encodeNil()
    }

    /// Also the witness of the primitive requirements but the 128-bit integers, as in
    /// `UserInfoEncoderImplementation.encode(_:)`.
    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value)
    }

    mutating func encode(_ value: Int128) throws { try encodeValue(value) }
    mutating func encode(_ value: UInt128) throws { try encodeValue(value) }

    private func encodeValue<T: Encodable>(_ value: T) throws {
        let child = UserInfoEncodingNode()
        try UserInfoEncoderImplementation(node: child, codingPath: codingPath + [nextKey], state: state).box(value)
        node.unkeyed.append(child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        nextEncoder().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        nextEncoder().unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        nextEncoder()
    }

    private func nextEncoder() -> UserInfoEncoderImplementation {
        let key = nextKey
        let child = UserInfoEncodingNode()
        node.unkeyed.append(child)
        return UserInfoEncoderImplementation(node: child, codingPath: codingPath + [key], state: state)
    }
}
