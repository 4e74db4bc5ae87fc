/// What a ``NotificationSequence`` does with notifications that arrive faster than they are consumed.
///
/// ```swift
/// for await tick in hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(1)) {
///     render(tick)                       // always the newest tick; older ones are dropped and counted
/// }
/// ```
///
/// A bounded policy never drops silently: every notification it discards is counted in
/// ``NotificationSequence/droppedCount``.
public enum NotificationBufferingPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Keeps every notification until it is consumed. Nothing is ever dropped.
    case unbounded
    /// Keeps at most the newest *n* unconsumed notifications: a new one pushes out the oldest.
    ///
    /// A limit of zero or less keeps nothing: only a consumer already waiting gets a notification.
    case bufferingNewest(Int)
    /// Keeps at most the oldest *n* unconsumed notifications: a new one is dropped while the buffer
    /// is full.
    ///
    /// A limit of zero or less keeps nothing: only a consumer already waiting gets a notification.
    case bufferingOldest(Int)

    /// The policy and its limit, for example `bufferingNewest(100)`.
    public var description: String {
        switch self {
        case .unbounded: return "unbounded"
        case .bufferingNewest(let limit): return "bufferingNewest(\(limit))"
        case .bufferingOldest(let limit): return "bufferingOldest(\(limit))"
        }
    }
}
