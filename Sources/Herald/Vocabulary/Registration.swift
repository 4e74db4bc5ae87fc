/// A description of one live observation, for tests and diagnostics.
public struct Registration: Sendable, Equatable, CustomStringConvertible {
    /// Where the observer's handler runs.
    public let target: DeliveryTarget
    /// The file in which the observer was registered.
    public let fileID: String
    /// The line at which the observer was registered.
    public let line: Int
    /// Whether the observation only receives posts from one subject.
    public let hasSubject: Bool
    /// Whether the observation is bound to an owner's lifetime.
    public let hasOwner: Bool
    /// The observer's mailbox policy (see ``ObservationToken/bufferingPolicy``).
    public let bufferingPolicy: NotificationBufferingPolicy
    /// The notifications its mailbox policy has replaced with newer ones so far (see
    /// ``ObservationToken/replacedCount``).
    public let replacedCount: Int
    /// The notifications its bounded mailbox policy has dropped so far (see
    /// ``ObservationToken/droppedCount``).
    public let droppedCount: Int
    /// The priority it was registered with (0 by default): among the observers of a post, higher
    /// priorities come first.
    public let priority: Int

    /// The registration's location, target, whether it has a subject or an owner, and its mailbox
    /// policy with what it discarded, unless it keeps everything.
    public var description: String {
        var text = "\(fileID):\(line) on \(target)\(hasSubject ? " from a subject" : "")"
        if hasOwner { text += " with an owner" }
        if priority != 0 { text += " at priority \(priority)" }
        if bufferingPolicy != .unbounded {
            text += " buffering \(bufferingPolicy) (replaced \(replacedCount), dropped \(droppedCount))"
        }
        return text
    }
}
