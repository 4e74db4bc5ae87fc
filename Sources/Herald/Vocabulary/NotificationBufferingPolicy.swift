/// What a mailbox keeps when notifications arrive faster than they are consumed: the mailbox of an
/// observer on an asynchronous target, or the buffer of a ``NotificationSequence``.
///
/// ```swift
/// let progress = hub.observe(DownloadProgress.self, on: MainActor.shared, bufferingPolicy: .latest) { note in
///     progressBar.value = note.fraction   // the newest fraction; the ones it replaced are counted
/// }
///
/// for await tick in hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(1)) {
///     render(tick)                       // always the newest tick; older ones are dropped and counted
/// }
/// ```
///
/// A policy other than ``unbounded`` never discards silently. An observer counts what it
/// discarded in ``ObservationToken/replacedCount`` and ``ObservationToken/droppedCount`` (and in
/// ``Registration/replacedCount`` and ``Registration/droppedCount``, for observations made with an
/// `owner:`); a sequence counts it in ``NotificationSequence/droppedCount``. A waiting post reports
/// it in ``DeliveryReport/replacedCount`` and ``DeliveryReport/droppedCount``.
///
/// A posting-thread observer with a synchronous handler has no mailbox: it runs inside `post`, and
/// its policy is always ``unbounded``.
public enum NotificationBufferingPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Keeps every notification until it is consumed. Nothing is ever dropped. The default.
    case unbounded
    /// Keeps at most the newest *n* unconsumed notifications: a new one pushes out the oldest,
    /// which is *dropped*.
    ///
    /// A limit of zero or less keeps nothing that waits, as `AsyncStream`'s does: a notification
    /// goes only to a consumer that is ready for it (a sequence's consumer waiting in `next()`, an
    /// observer whose handler is neither running nor about to run), and is dropped otherwise.
    case bufferingNewest(Int)
    /// Keeps at most the oldest *n* unconsumed notifications: a new one is *dropped* while the buffer
    /// is full.
    ///
    /// A limit of zero or less keeps nothing that waits, as for ``bufferingNewest(_:)``.
    case bufferingOldest(Int)
    /// Keeps only the newest unconsumed notification, or, with `perSubject`, the newest of each
    /// subject (posts without a subject count as one more subject). A subject is the live object:
    /// a pending notification of an object that has been deallocated is never replaced by a post
    /// of a new object allocated at the same address.
    ///
    /// A new notification *replaces* the pending one: the older one is removed and the new one
    /// goes to the back of the mailbox, so the order of the delivered notifications is still the
    /// order of their posts, and a handler never gets an older value after a newer one. A
    /// notification that a handler is running already is not replaced: the next one waits.
    ///
    /// A waiting post whose notification was replaced completes when the handler has returned for
    /// the notification that replaced it; its report counts it in ``DeliveryReport/replacedCount``.
    ///
    /// A ``NotificationSequence`` does not see subjects: for a sequence, both forms keep the newest
    /// notification, like ``bufferingNewest(_:)`` with a limit of 1.
    case latest(perSubject: Bool)

    /// Keeps only the newest unconsumed notification: ``latest(perSubject:)`` without subjects.
    public static var latest: NotificationBufferingPolicy { .latest(perSubject: false) }

    /// The policy and its limit, for example `bufferingNewest(100)` or `latest`.
    public var description: String {
        switch self {
        case .unbounded: return "unbounded"
        case .bufferingNewest(let limit): return "bufferingNewest(\(limit))"
        case .bufferingOldest(let limit): return "bufferingOldest(\(limit))"
        case .latest(let perSubject): return perSubject ? "latest(perSubject: true)" : "latest"
        }
    }
}
