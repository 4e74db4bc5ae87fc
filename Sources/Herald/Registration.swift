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

    /// The registration's location, target, and whether it has a subject or an owner.
    public var description: String {
        "\(fileID):\(line) on \(target)\(hasSubject ? " from a subject" : "")\(hasOwner ? " with an owner" : "")"
    }
}
