import Observation

/// The newest notification of one type, as state a SwiftUI view or an `@Observable` view model
/// reads, rather than a handler it registers.
///
/// ```swift
/// @MainActor @Observable
/// final class DownloadViewModel {
///     let progress: LatestNotification<DownloadProgress>
///
///     init(hub: NotificationHub) {
///         progress = LatestNotification(DownloadProgress.self, in: hub)
///     }
///
///     var fraction: Double { progress.value?.fraction ?? 0 }   // a view reading this updates
/// }
/// ```
///
/// - It observes on the main actor with the ``NotificationBufferingPolicy/latest`` policy, so a
///   flood of posts from a background thread costs at most one update of ``value`` per turn of
///   the main queue, with the newest notification; the older pending ones are replaced and
///   counted in ``replacedCount``.
/// - ``value`` changes only on the main actor, and every delivered notification sets it once, so
///   Observation reports each delivery: a notification equal to the current value is reported
///   too (Observation does not compare values).
/// - With `from:`, it holds the newest notification posted with that subject.
/// - With `replayLatest:` (the default), it starts with the value retained by
///   ``NotificationHub/postAndRetain(_:from:)``, if any, delivered like a post.
/// - The observation ends when the object is deallocated (or on ``cancel()``): a view model that
///   owns it ends it with itself.
@MainActor
@Observable
public final class LatestNotification<N: TypedNotification> {
    /// The newest notification delivered, or `nil` before the first one.
    public private(set) var value: N?
    /// The number of notifications delivered so far (and so of changes to ``value``).
    public private(set) var updateCount = 0
    @ObservationIgnored private var token: ObservationToken?

    /// Starts holding the newest notification of `type`.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - hub: The hub to observe.
    ///   - subject: If not `nil`, only posts with this object as subject count (held weakly).
    ///   - replayLatest: Whether to start with the retained value of `type`, if any.
    ///   - fileID: The file that registers, for reports; leave the default.
    ///   - line: The line that registers, for reports; leave the default.
    public init(
        _ type: N.Type,
        in hub: NotificationHub,
        from subject: AnyObject? = nil,
        replayLatest: Bool = true,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        token = hub.observe(
            type, from: subject, on: MainActor.shared, bufferingPolicy: .latest, replayLatest: replayLatest,
            fileID: fileID, line: line
        ) { [weak self] note in
            guard let self else { return }
            value = note
            updateCount += 1
        }
    }

    /// The notifications replaced by newer ones before they were delivered.
    public var replacedCount: Int {
        token?.replacedCount ?? 0
    }

    /// Ends the observation: ``value`` keeps the last notification delivered.
    public func cancel() {
        token?.cancel()
    }
}
