/// Work that one observer still has to do: what
/// ``NotificationHub/waitUntilIdle(timeout:isolation:)`` reports when the hub is not idle.
public struct PendingDelivery: Sendable, Equatable, CustomStringConvertible {
    /// The name of the notification type, such as `UserCreated`.
    public let notificationType: String
    /// The file in which the observer was registered, as `#fileID` gives it.
    public let fileID: String
    /// The line at which the observer was registered.
    public let line: Int
    /// Where the observer's handler runs.
    public let target: DeliveryTarget
    /// The notifications queued for the observer.
    public let queuedCount: Int
    /// Whether an `async` handler of the observer has started and not finished.
    public let isHandlerRunning: Bool
    /// Whether the observer waits only for its target to run the job it was handed.
    public let waitsForTarget: Bool

    /// A one-line summary, for example
    /// `2 UserCreated queued for the observer at Profile.swift:12 on main`.
    public var description: String {
        var text = "\(queuedCount) \(notificationType) queued for the observer at \(fileID):\(line) on \(target)"
        if isHandlerRunning { text += ", its async handler still running" }
        return text
    }
}

/// A wait for a hub's deliveries that did not end: it timed out, or only a test can end it.
///
/// ``NotificationHub/waitUntilIdle(isolation:)`` and
/// ``NotificationHub/waitUntilIdle(timeout:isolation:)`` throw it.
/// A waiting post (`await hub.postAndWait(_:from:)`) that still waits for deliveries held by a
/// manual executor (`HeraldTesting`'s `TestMainActor`) when that executor will no longer run them
/// returns with this error in its report's failures.
public struct PendingWorkError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case timedOut(Duration)
        case waitsForManualExecutor(String)
    }

    private let code: Code
    /// What was still pending when the wait ended.
    public let pending: [PendingDelivery]

    /// The wait did not end within `timeout`.
    ///
    /// - Parameters:
    ///   - timeout: The timeout that passed.
    ///   - pending: What was still pending.
    /// - Returns: The error.
    public static func timedOut(after timeout: Duration, pending: [PendingDelivery]) -> PendingWorkError {
        PendingWorkError(code: .timedOut(timeout), pending: pending)
    }

    /// The wait could only end once the test ran the jobs of a manual executor: one whose jobs run
    /// only when the test runs them, such as `HeraldTesting`'s `TestMainActor`.
    ///
    /// - Parameters:
    ///   - executor: The executor's description.
    ///   - pending: The deliveries that wait for the executor.
    /// - Returns: The error.
    public static func waitsForManualExecutor(_ executor: String, pending: [PendingDelivery]) -> PendingWorkError {
        PendingWorkError(code: .waitsForManualExecutor(executor), pending: pending)
    }

    /// Whether the wait ended because its timeout passed.
    public var isTimeout: Bool {
        if case .timedOut = code { true } else { false }
    }

    /// Whether the wait ended at once because only the test could run what it waited for: the jobs
    /// of a manual executor (see ``waitsForManualExecutor(_:pending:)``).
    public var waitsForManualExecutor: Bool {
        if case .waitsForManualExecutor = code { true } else { false }
    }

    /// A message that says what the wait expected and what it found still pending.
    public var description: String {
        let list = pending.map(\.description).joined(separator: "; ")
        let observers = "\(pending.count) observer\(pending.count == 1 ? "" : "s")"
        return switch code {
        case .timedOut(let timeout):
            "expected every delivery to finish within \(timeout), found \(observers) with work pending: \(list)"
        case .waitsForManualExecutor(let executor):
            "expected deliveries that can finish while this task waits, found \(observers) whose jobs only the test "
                + "can run on \(executor): \(list); run them first (await runUntilIdle()) or post without waiting"
        }
    }
}
