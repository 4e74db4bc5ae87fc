import Foundation

/// A typed key for a notification's user-info dictionary.
///
/// Declare each key once, as a static property in an extension, and read and write user info by
/// key instead of by string:
///
/// ```swift
/// extension UserInfoKey {
///     static var status: UserInfoKey<Int> { .init("status") }
///     static var profile: UserInfoKey<Profile> { .init("profile") }   // any Codable type
/// }
///
/// let status = note.userInfo[.status]                // Int?
/// let profile = try note.value(for: .profile)       // Profile, or a UserInfoDecodingError
///
/// let userInfo = UserInfoBuilder()
///     .setting(.status, to: 201)
///     .userInfo
/// ```
///
/// ## Reading
///
/// - The subscript, on `[AnyHashable: Any]` and on `[AnyHashable: Any]?` (so that
///   `note.userInfo[.status]` works), returns `nil` when the key is missing or holds a value that
///   is not a `Value`. It never traps.
/// - ``Swift/Dictionary/value(for:)``, ``Swift/Optional/value(for:)`` and
///   ``Foundation/Notification/value(for:)`` throw a ``UserInfoDecodingError`` that says why, for
///   example `userInfo["status"]: expected Int, found String "201"`.
///
/// When `Value` is `Decodable`, the entry is read with ``UserInfoDecoder``: numbers convert between
/// widths only when the value fits exactly, a nested struct is read from a dictionary, a `URL` or
/// `UUID` also from a string. Other types are read with a plain `as?` cast.
///
/// ## Writing
///
/// Setting a value through a subscript or ``UserInfoBuilder`` stores it the way ``UserInfoEncoder``
/// would when `Value` is `Encodable` (a struct becomes a dictionary, an enumeration its raw value, a
/// `URL` its `absoluteString`), so that legacy observers and property lists can read it. Other
/// values, and values whose encoding fails, are stored as they are. Setting `nil` removes the key.
///
/// ## Threading
///
/// A key is an immutable, `Sendable` value. The dictionaries it reads are not `Sendable`: read and
/// write them on one thread at a time, as with any dictionary.
public struct UserInfoKey<Value>: Hashable, Sendable, CustomStringConvertible {
    /// The string under which the value is stored in the dictionary.
    public let name: String

    /// Makes a key for the entry stored under `name`.
    ///
    /// ```swift
    /// extension UserInfoKey {
    ///     static var status: UserInfoKey<Int> { .init("status") }
    /// }
    /// ```
    ///
    /// - Parameter name: The dictionary key, the string that legacy code uses.
    public init(_ name: String) {
        self.name = name
    }

    /// The key's name and value type, for example `"status" (Int)`.
    public var description: String {
        "\(String(reflecting: name)) (\(UserInfoDecodingError.typeName(Value.self)))"
    }

    var path: [UserInfoDecodingError.PathComponent] {
        [.key(name)]
    }

    /// Reads the entry for this key.
    func read(in userInfo: [AnyHashable: Any]) throws(UserInfoDecodingError) -> Value {
        guard let raw = userInfo[AnyHashable(name)] else {
            throw .keyNotFound(keyPath: [name], expected: Value.self)
        }
        var value = raw
        if let decodable = Value.self as? any Decodable.Type {
            value = try UserInfoDecoder().decode(decodable, fromValue: raw, at: path)
        }
        // For a `Decodable` value, unreachable: the decoder returns the type it was asked for.
        guard let typed = value as? Value else {
            throw .typeMismatch(keyPath: [name], expected: Value.self, found: value)
        }
        return typed
    }

    /// Writes the entry for this key, or removes it for `nil`.
    func write(_ value: Value?, in userInfo: inout [AnyHashable: Any]) {
        let flat = UserInfoValue.flatten(value)
        let encoded = (flat as? any Encodable).flatMap { try? UserInfoEncoder().encodeValue($0) }
        userInfo[AnyHashable(name)] = encoded ?? flat
    }
}

/// Typed reads and writes of a user-info dictionary through ``UserInfoKey``.
extension Dictionary where Key == AnyHashable, Value == Any {
    /// The value stored for a typed key, or `nil` if it is missing or of another type.
    ///
    /// ```swift
    /// var userInfo: [AnyHashable: Any] = ["status": 201]
    /// userInfo[.status]            // Optional(201)
    /// userInfo[.title] = "Created" // stores "title": "Created"
    /// userInfo[.title] = nil       // removes "title"
    /// ```
    ///
    /// Use ``value(for:)`` to learn why a read failed.
    ///
    /// - Parameter key: The typed key to read or write.
    /// - Returns: The value as a `V`, or `nil`.
    public subscript<V>(key: UserInfoKey<V>) -> V? {
        get { try? key.read(in: self) }
        set { key.write(newValue, in: &self) }
    }

    /// The value stored for a typed key.
    ///
    /// ```swift
    /// let status = try userInfo.value(for: .status)   // Int
    /// ```
    ///
    /// - Parameter key: The typed key to read.
    /// - Returns: The value as a `V`.
    /// - Throws: ``UserInfoDecodingError`` if the key is missing or its value cannot be read as a `V`;
    ///   its message names the key, the expected type and the type found.
    public func value<V>(for key: UserInfoKey<V>) throws(UserInfoDecodingError) -> V {
        try key.read(in: self)
    }
}

/// Typed reads of an optional user-info dictionary, such as `Notification.userInfo`, through ``UserInfoKey``.
extension Optional where Wrapped == [AnyHashable: Any] {
    /// The value stored for a typed key, so that `notification.userInfo[.status]` reads as an `Int?`.
    ///
    /// Reading from `nil` returns `nil`. Setting a value on `nil` first makes an empty dictionary;
    /// setting `nil` on `nil` leaves it `nil`.
    ///
    /// - Parameter key: The typed key to read or write.
    /// - Returns: The value as a `V`, or `nil` if the dictionary or the key is missing or the value is
    ///   of another type.
    public subscript<V>(key: UserInfoKey<V>) -> V? {
        get { self?[key] }
        set {
            if self == nil, newValue != nil { self = [:] }
            self?[key] = newValue
        }
    }

    /// The value stored for a typed key, treating a `nil` dictionary as empty.
    ///
    /// - Parameter key: The typed key to read.
    /// - Returns: The value as a `V`.
    /// - Throws: ``UserInfoDecodingError`` if the key is missing or its value cannot be read as a `V`.
    public func value<V>(for key: UserInfoKey<V>) throws(UserInfoDecodingError) -> V {
        try key.read(in: self ?? [:])
    }
}

/// Typed reads of a notification's user info through ``UserInfoKey``.
extension Notification {
    /// The value stored in the notification's user info for a typed key.
    ///
    /// ```swift
    /// let status = try notification.value(for: .status)   // Int
    /// ```
    ///
    /// - Parameter key: The typed key to read.
    /// - Returns: The value as a `V`.
    /// - Throws: ``UserInfoDecodingError`` if the notification has no user info, the key is missing,
    ///   or its value cannot be read as a `V`.
    public func value<V>(for key: UserInfoKey<V>) throws(UserInfoDecodingError) -> V {
        try key.read(in: userInfo ?? [:])
    }
}

/// Builds a user-info dictionary from typed keys.
///
/// ```swift
/// let userInfo = UserInfoBuilder()
///     .setting(.status, to: 201)
///     .setting(.title, to: "Created")
///     .userInfo
/// center.post(name: .userCreated, object: nil, userInfo: userInfo)
///
/// var builder = UserInfoBuilder(notification.userInfo ?? [:])
/// builder[.status] = 404
/// ```
///
/// Values are stored as described in ``UserInfoKey``: `Encodable` values in their encoded,
/// property-list-friendly form.
///
/// `UserInfoBuilder` is not `Sendable`, because the dictionary it holds can contain any value.
public struct UserInfoBuilder {
    /// The dictionary built so far.
    public private(set) var userInfo: [AnyHashable: Any]

    /// Makes a builder, empty or starting from an existing dictionary.
    ///
    /// - Parameter userInfo: The entries to start from.
    public init(_ userInfo: [AnyHashable: Any] = [:]) {
        self.userInfo = userInfo
    }

    /// The value for a typed key: read, set, or removed with `nil`.
    ///
    /// - Parameter key: The typed key.
    /// - Returns: The value as a `V`, or `nil` if it is missing or of another type.
    public subscript<V>(key: UserInfoKey<V>) -> V? {
        get { userInfo[key] }
        set { userInfo[key] = newValue }
    }

    /// Returns a copy of the builder with the value for `key` set, or removed if `value` is `nil`.
    ///
    /// - Parameters:
    ///   - key: The typed key.
    ///   - value: The value to store.
    /// - Returns: The updated builder, for chaining.
    public func setting<V>(_ key: UserInfoKey<V>, to value: V?) -> UserInfoBuilder {
        var copy = self
        copy[key] = value
        return copy
    }
}

@available(*, unavailable, message: "A user-info dictionary can hold values that are not Sendable")
extension UserInfoBuilder: Sendable {}
