import Foundation
import Herald

/// A typed notification that can travel between processes: `Codable`, with a stable name on the wire.
///
/// The wire name identifies the type in every process that shares it, so it must not depend on
/// the module name (as `String(reflecting:)` does). A type that already conforms to
/// `NotificationConvertible` gets its `Notification.Name` as wire name for free:
///
/// ```swift
/// struct UserCreated: WireNotification, NotificationConvertible {
///     static let notificationName = Notification.Name("UserCreated")   // also the wire name
///     var userID: Int
/// }
///
/// struct CacheFlushed: WireNotification {
///     static let wireName = "CacheFlushed"
///     var key: String
/// }
/// ```
///
/// Every process on a channel must agree on the name and on the `Codable` layout of each type.
public protocol WireNotification: TypedNotification, Codable {
    /// The name under which values of this type travel; the same in every process.
    static var wireName: String { get }
}

extension WireNotification where Self: NotificationConvertible {
    /// The `Notification.Name` of the type, as its wire name.
    public static var wireName: String { notificationName.rawValue }
}
