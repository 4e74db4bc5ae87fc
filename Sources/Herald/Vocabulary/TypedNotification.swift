/// A notification that Herald can post: any `Sendable` value.
///
/// Conform a struct, an enum or a final class. The type itself is the notification's identity:
/// observers register for `UserCreated.self`, and a post of a `UserCreated` value reaches them.
///
/// ```swift
/// struct UserCreated: TypedNotification {
///     let userID: Int
///     let status: Int
/// }
/// hub.post(UserCreated(userID: 7, status: 201))
/// ```
///
/// Because the value is `Sendable`, it can be handed to observers on any thread, queue or actor
/// without copying it into a dictionary.
public protocol TypedNotification: Sendable {}
