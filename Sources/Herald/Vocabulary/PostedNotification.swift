/// A notification as a tap receives it: the value, its type and the post's subject.
///
/// ```swift
/// let logging = hub.observeAll(on: .queue(logQueue)) { posted in
///     logger.debug("\(posted.type): \(posted.notification)")
/// }
/// ```
public struct PostedNotification: Sendable {
    /// The notification.
    public let notification: any TypedNotification
    /// The type the notification was posted as.
    public let type: any TypedNotification.Type
    /// The identity of the post's subject, if it had one. The hub never retains a subject, so only
    /// its identity is passed on: compare it with `ObjectIdentifier(object)`.
    public let subjectID: ObjectIdentifier?

    /// Whether the post was made with `subject` as its subject (by identity).
    public func isFrom(_ subject: AnyObject?) -> Bool {
        subjectID == subject.map(ObjectIdentifier.init)
    }
}
