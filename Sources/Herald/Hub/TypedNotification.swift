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
public protocol TypedNotification: Sendable {
    /// Not API: calls `handler` with the notification at `payload`.
    ///
    /// Herald calls handlers from code that does not know the notification type. This requirement
    /// has a default implementation that is compiled where your type conforms, for your type, so
    /// that the call passes the notification straight to the handler instead of copying it
    /// through the type's value witnesses. Do not implement it.
    static func _heraldCall(_ handler: (Self) throws -> Void, with payload: UnsafeRawPointer) rethrows

    /// Not API: the class of Herald's observers of this type.
    ///
    /// Like ``_heraldCall(_:with:)``, its default implementation is compiled where your type
    /// conforms, so that registering an observer finds the class in a cache of your module's
    /// instead of asking the runtime to look it up. Do not implement it.
    static var _heraldObserverClass: AnyClass { get }

    /// Not API: runs the posting-thread observers of a fire-and-forget post of this type, in
    /// order, and returns whether any accepted it.
    ///
    /// Like ``_heraldCall(_:with:)``, its default implementation is compiled where your type
    /// conforms, so that a post calls each observer's handler straight from a loop made for your
    /// type, rather than through two calls of code that does not know it. `observers` points to
    /// `count` of Herald's observers of this type. Do not implement it.
    static func _heraldDeliver(
        _ observers: UnsafeRawPointer, count: Int, payload: UnsafeRawPointer, subject: AnyObject?
    ) -> Bool
}

extension TypedNotification {
    /// Not API: see the requirement.
    @inlinable
    public static func _heraldCall(_ handler: (Self) throws -> Void, with payload: UnsafeRawPointer) rethrows {
        try handler(payload.assumingMemoryBound(to: Self.self).pointee)
    }

    /// Not API: see the requirement.
    @inlinable
    public static var _heraldObserverClass: AnyClass { Observer<Self>.self }

    /// Not API: see the requirement.
    @inlinable
    public static func _heraldDeliver(
        _ observers: UnsafeRawPointer, count: Int, payload: UnsafeRawPointer, subject: AnyObject?
    ) -> Bool {
        Observer<Self>.deliver(
            to: observers.assumingMemoryBound(to: Unmanaged<AnyObserver>.self), count: count, payload, subject: subject)
    }
}
