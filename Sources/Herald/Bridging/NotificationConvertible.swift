import Foundation

/// A typed notification that converts to and from a Foundation `Notification`.
///
/// Conform a notification type to bridge it to code that still speaks `NotificationCenter`. The
/// type declares the `Notification.Name` it travels under; a `Codable` type gets both conversions
/// for free, its stored properties becoming user-info entries:
///
/// ```swift
/// struct UserCreated: NotificationConvertible, Codable {
///     static let notificationName = Notification.Name("UserCreatedNotification")
///     var userID: Int
///     var status: Int
/// }
///
/// let notification = try UserCreated(userID: 7, status: 201).makeNotification()
/// // name "UserCreatedNotification", userInfo ["userID": 7, "status": 201]
///
/// let created = try UserCreated(notification: legacyNotification)
/// ```
///
/// The free conversions use ``UserInfoEncoder`` and ``UserInfoDecoder``; see them for how each
/// Swift type is stored and which legacy forms are accepted. A type that needs another layout
/// implements ``init(notification:)`` and ``makeNotification(object:)`` itself, and can still use
/// ``UserInfoKey`` to read and write the entries.
///
/// ``NotificationHub/forward(_:fromCenter:object:fileID:line:)`` and
/// ``NotificationHub/forward(_:toCenter:from:fileID:line:)-(N.Type,_,_,_,_)`` use these conversions
/// to bridge a hub and a `NotificationCenter`.
///
/// ## Threading
///
/// Both conversions are synchronous and run on the calling thread. `Notification` is not
/// `Sendable`: convert it on the thread that received it, and hand the typed, `Sendable` value to
/// other threads instead.
public protocol NotificationConvertible: TypedNotification {
    /// The name under which this notification is posted on a `NotificationCenter`.
    static var notificationName: Notification.Name { get }

    /// The encoder that the free conversion of an `Encodable` type uses for the user info. The
    /// default, `UserInfoEncoder()`, stores `URL`, `UUID`, `Date` and `Data` values as the objects
    /// legacy observers read; return ``UserInfoEncoder/propertyList`` for legacy code that reads
    /// URLs and UUIDs as strings.
    ///
    /// ```swift
    /// extension UserCreated {
    ///     static var userInfoEncoder: UserInfoEncoder { .propertyList }
    /// }
    /// ```
    static var userInfoEncoder: UserInfoEncoder { get }

    /// Reads a typed notification from a Foundation notification.
    ///
    /// The default implementation for `Decodable` types checks the name, then decodes the user
    /// info with ``UserInfoDecoder``. It ignores the notification's `object`.
    ///
    /// - Parameter notification: A notification named ``notificationName``.
    /// - Throws: ``UserInfoDecodingError`` if the name differs or the user info is malformed. The
    ///   error names the key path, the expected type and what was found.
    init(notification: Notification) throws(UserInfoDecodingError)

    /// Makes the Foundation notification that carries this value.
    ///
    /// The default implementation for `Encodable` types names the notification
    /// ``notificationName`` and encodes the value with ``UserInfoEncoder``.
    ///
    /// - Parameter object: The notification's `object`, usually the sender; `nil` for none.
    /// - Returns: A notification that ``init(notification:)`` reads back as an equal value.
    /// - Throws: Any error from encoding the value, such as an `EncodingError`.
    func makeNotification(object: AnyObject?) throws -> Notification
}

extension NotificationConvertible {
    /// `UserInfoEncoder()`: `URL` and `UUID` values stored as themselves.
    public static var userInfoEncoder: UserInfoEncoder { UserInfoEncoder() }

    /// Makes the Foundation notification that carries this value, with no `object`.
    ///
    /// ```swift
    /// NotificationCenter.default.post(try UserCreated(userID: 7, status: 201).makeNotification())
    /// ```
    ///
    /// - Returns: A notification that ``init(notification:)`` reads back as an equal value.
    /// - Throws: Any error from encoding the value.
    public func makeNotification() throws -> Notification {
        try makeNotification(object: nil)
    }
}

extension NotificationConvertible where Self: Decodable {
    /// Decodes the notification's user info with ``UserInfoDecoder``.
    ///
    /// Each stored property is read from the entry of the same name (or its `CodingKeys` name).
    /// A missing key makes an optional property `nil`.
    ///
    /// - Parameter notification: A notification named ``notificationName``.
    /// - Throws: ``UserInfoDecodingError`` with code ``UserInfoDecodingError/Code/nameMismatch`` if
    ///   the notification has another name, or naming the key path, expected type and found value
    ///   if the user info is malformed.
    public init(notification: Notification) throws(UserInfoDecodingError) {
        guard notification.name == Self.notificationName else {
            throw .nameMismatch(expected: Self.notificationName, found: notification.name)
        }
        self = try UserInfoDecoder().decode(Self.self, from: notification)
    }
}

extension NotificationConvertible where Self: Encodable {
    /// Encodes the value with ``userInfoEncoder`` as the user info of a notification named
    /// ``notificationName``.
    ///
    /// - Parameter object: The notification's `object`, usually the sender; `nil` for none.
    /// - Returns: The notification.
    /// - Throws: Any error from the value's `encode(to:)`, or `EncodingError.invalidValue` if the
    ///   type does not encode a keyed container.
    public func makeNotification(object: AnyObject?) throws -> Notification {
        Notification(name: Self.notificationName, object: object, userInfo: try Self.userInfoEncoder.encode(self))
    }
}
