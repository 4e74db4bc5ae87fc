import Foundation

/// The error thrown when a user-info dictionary cannot be read as the typed value asked for.
///
/// Every failure of ``UserInfoDecoder``, of ``NotificationConvertible/init(notification:)`` and of the
/// throwing ``UserInfoKey`` accessors is one of these values: decoding never traps on malformed input.
/// The error names where the problem is, what was expected there, and what was found:
///
/// ```swift
/// do {
///     let note = try UserCreated(notification: legacyNotification)
/// } catch {
///     print(error)            // userInfo["profile"]["age"]: expected Int, found String "forty"
///     error.code              // .typeMismatch
///     error.keyPath           // userInfo["profile"]["age"]
///     error.expected          // Int
///     error.found             // String "forty"
/// }
/// ```
///
/// Match on ``code`` to tell the kinds of failure apart. The set of codes can grow in later
/// versions, so a `switch` over them needs a `default` case.
///
/// The error is `Sendable`: the value that was found is kept as a description, never as the value.
public struct UserInfoDecodingError: Error, CustomStringConvertible, Sendable {
    /// The kind of a ``UserInfoDecodingError``.
    ///
    /// Compare with `==` against the static members, for example `error.code == .numberOutOfRange`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        /// A required key is missing from the dictionary, or an array has fewer elements than asked for.
        public static let keyNotFound = Code(name: "keyNotFound")
        /// A key holds `NSNull` or `nil` where a value is required.
        public static let valueNotFound = Code(name: "valueNotFound")
        /// A value of another type was found, for example a `String` where an `Int` is expected.
        public static let typeMismatch = Code(name: "typeMismatch")
        /// A number was found that does not fit in the expected numeric type, for example 300 for a `UInt8`.
        public static let numberOutOfRange = Code(name: "numberOutOfRange")
        /// A number was found that the expected type cannot hold exactly, for example 3.5 for an `Int`.
        public static let numberNotExact = Code(name: "numberNotExact")
        /// A value of the right kind was found but it is not valid, for example a `String` that is not a UUID,
        /// or a raw value that names no case of an enumeration.
        public static let invalidValue = Code(name: "invalidValue")
        /// The notification's name is not the name that the type declares.
        public static let nameMismatch = Code(name: "nameMismatch")
        /// The type's own decoding code threw an error that is not a decoding error; see
        /// ``UserInfoDecodingError/underlyingError``.
        public static let decodingFailed = Code(name: "decodingFailed")

        /// The code's name, for example `keyNotFound`.
        public var description: String { name }
    }

    /// One step of a key path: a dictionary key or an array index.
    enum PathComponent: Hashable, Sendable {
        case key(String)
        case index(Int)

        var codingKey: UserInfoCodingKey {
            switch self {
            case .key(let key): UserInfoCodingKey(stringValue: key)
            case .index(let index): UserInfoCodingKey(intValue: index)
            }
        }

        /// An index for the coder's own index keys, else the key's string.
        init(_ key: any CodingKey) {
            self = (key as? UserInfoCodingKey)?.intValue.map(Self.index) ?? .key(key.stringValue)
        }
    }

    /// What kind of failure this is.
    public let code: Code

    /// Where the failing value is; ``codingPath`` and ``keyPath`` spell it out.
    let path: [PathComponent]

    /// The description of the type that was expected, for example `Int` or `Profile`.
    public let expected: String

    /// The description of what was found, with a short preview of the value: `String "forty"`,
    /// `NSNumber 300`, `NSNull`, or `nothing` for a missing key.
    public let found: String

    /// Extra detail, for example `out of range for UInt8`, or the message of the type's own
    /// decoding error.
    public let detail: String?

    /// The error thrown by the type's own `init(from:)`, when it threw something other than a
    /// decoding error.
    public let underlyingError: (any Error)?

    /// The path from the top of the user-info dictionary to the failing value.
    ///
    /// Array indices are keys whose `intValue` is the index. The path is empty when the failure is
    /// about the whole dictionary or notification.
    public var codingPath: [any CodingKey] {
        path.map(\.codingKey)
    }

    /// The failing location written as subscripts, for example `userInfo["profile"]["age"]` or
    /// `userInfo["tags"][2]`; `userInfo` alone for the whole dictionary, and `Notification.name` for
    /// a ``Code/nameMismatch``.
    public var keyPath: String {
        if code == .nameMismatch { return "Notification.name" }
        var text = "userInfo"
        for component in path {
            switch component {
            case .key(let key): text += "[\(String(reflecting: key))]"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    /// A one-line message: `userInfo["profile"]["age"]: expected Int, found String "forty"`.
    public var description: String {
        let message = "\(keyPath): expected \(expected), found \(found)"
        return detail.map { "\(message) (\($0))" } ?? message
    }
}

// MARK: - Factories

extension UserInfoDecodingError {
    /// Makes the error for a required key that is missing.
    ///
    /// Use it in a hand-written ``NotificationConvertible/init(notification:)``:
    ///
    /// ```swift
    /// guard let id = userInfo["id"] else {
    ///     throw .keyNotFound(keyPath: ["id"], expected: Int.self)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The dictionary keys from the top of the user info to the missing key.
    ///   - expected: The type that the key should hold.
    /// - Returns: An error with code ``Code/keyNotFound``.
    public static func keyNotFound(keyPath: [String], expected: Any.Type) -> Self {
        keyNotFound(at: keyPath.map(PathComponent.key), expected: typeName(expected))
    }

    /// Makes the error for a value of the wrong type.
    ///
    /// ```swift
    /// throw .typeMismatch(keyPath: ["profile", "age"], expected: Int.self, found: raw)
    /// // userInfo["profile"]["age"]: expected Int, found String "forty"
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The dictionary keys from the top of the user info to the value.
    ///   - expected: The type that the key should hold.
    ///   - found: The value that was found. Only its description is kept.
    /// - Returns: An error with code ``Code/typeMismatch``.
    public static func typeMismatch(keyPath: [String], expected: Any.Type, found: Any?) -> Self {
        Self(
            code: .typeMismatch, path: keyPath.map(PathComponent.key), expected: typeName(expected),
            found: describeFound(found), detail: nil, underlyingError: nil)
    }

    /// Makes the error for a value of the right kind that is not valid, such as an unknown raw value.
    ///
    /// - Parameters:
    ///   - keyPath: The dictionary keys from the top of the user info to the value.
    ///   - expected: The type that the key should hold.
    ///   - found: The value that was found. Only its description is kept.
    ///   - reason: Why the value is not valid, for example `not a known Mood`.
    /// - Returns: An error with code ``Code/invalidValue``.
    public static func invalidValue(keyPath: [String], expected: Any.Type, found: Any?, reason: String) -> Self {
        Self(
            code: .invalidValue, path: keyPath.map(PathComponent.key), expected: typeName(expected),
            found: describeFound(found), detail: reason, underlyingError: nil)
    }

    /// Makes the error for a notification whose name is not the one the type declares.
    ///
    /// - Parameters:
    ///   - expected: The name the type declares.
    ///   - found: The name of the notification that was given.
    /// - Returns: An error with code ``Code/nameMismatch``.
    public static func nameMismatch(expected: Notification.Name, found: Notification.Name) -> Self {
        Self(
            code: .nameMismatch, path: [], expected: String(reflecting: expected.rawValue),
            found: String(reflecting: found.rawValue), detail: nil, underlyingError: nil)
    }

    // Internal factories used by the decoder.

    static func keyNotFound(
        at path: [PathComponent], expected: String, detail: String = "no value for this key"
    ) -> Self {
        Self(
            code: .keyNotFound, path: path, expected: expected, found: "nothing", detail: detail,
            underlyingError: nil)
    }

    static func typeName(_ type: Any.Type) -> String {
        String(describing: type)
    }

    /// A short, bounded description of a value found in a user-info dictionary.
    static func describeFound(_ value: Any?) -> String {
        guard let value = UserInfoValue.flatten(value) else { return "nil" }
        if let number = UserInfoNumber(value) {
            return number.description
        }
        switch value {
        case is NSNull: return "NSNull"
        case let string as String: return "String \(preview(string))"
        case let array as [Any]: return "Array (\(array.count) \(array.count == 1 ? "element" : "elements"))"
        case let dictionary as [AnyHashable: Any]:
            return "Dictionary (\(dictionary.count) \(dictionary.count == 1 ? "entry" : "entries"))"
        case let data as Data: return "Data (\(data.count) bytes)"
        case let date as Date: return "Date \(date)"
        case let url as URL: return "URL \(preview(url.absoluteString))"
        case let uuid as UUID: return "UUID \(uuid.uuidString)"
        default: return String(describing: type(of: value))
        }
    }

    private static func preview(_ string: String) -> String {
        let limit = 40
        if string.count <= limit {
            return String(reflecting: string)
        }
        return String(reflecting: String(string.prefix(limit))) + "…"
    }
}
