/// What happened to one waiting post: how many observers ran, how many a mailbox policy spared
/// the notification, and what the handlers threw.
///
/// The waiting posts (`postAndWait(_:from:)`, blocking
/// or `async`) return a report once every observer has run. The failures it lists also went to the hub's
/// ``NotificationHub/errorHandler``.
///
/// ```swift
/// let report = hub.postAndWait(UserCreated(userID: 7, status: 201))
/// for failure in report.failures {
///     print(failure)   // "observer at LoginView.swift:42 for UserCreated threw …"
/// }
/// ```
public struct DeliveryReport: Sendable, Equatable, CustomStringConvertible {
    /// The number of observers whose handler ran, including those that threw. Observers whose
    /// mailbox policy replaced or dropped the notification are counted in ``replacedCount`` and
    /// ``droppedCount`` instead, never here.
    public var deliveredCount: Int
    /// The number of deliveries that did not run because the observation ended first, or because
    /// their target rejected them (a ``DeliveryThread`` that was shut down).
    public var skippedCount: Int
    /// The number of observers whose mailbox policy (``NotificationBufferingPolicy/latest(perSubject:)``)
    /// replaced the notification with a newer one before their handler got it. The post completes
    /// for such an observer once its handler has returned for the newer notification.
    public var replacedCount: Int
    /// The number of observers whose bounded mailbox policy
    /// (``NotificationBufferingPolicy/bufferingNewest(_:)``, ``NotificationBufferingPolicy/bufferingOldest(_:)``)
    /// dropped the notification. The post completes for such an observer as soon as it is dropped.
    public var droppedCount: Int
    /// The errors thrown by handlers, in the order they were caught.
    public var failures: [ObserverFailure]

    /// Whether no handler threw.
    public var isSuccess: Bool { failures.isEmpty }

    /// Creates a report.
    ///
    /// - Parameters:
    ///   - deliveredCount: The number of handlers that ran.
    ///   - skippedCount: The number of deliveries skipped because their observation ended.
    ///   - replacedCount: The number of deliveries replaced by a newer notification.
    ///   - droppedCount: The number of deliveries dropped by a bounded mailbox.
    ///   - failures: The errors thrown by handlers.
    public init(
        deliveredCount: Int = 0, skippedCount: Int = 0, replacedCount: Int = 0, droppedCount: Int = 0,
        failures: [ObserverFailure] = []
    ) {
        self.deliveredCount = deliveredCount
        self.skippedCount = skippedCount
        self.replacedCount = replacedCount
        self.droppedCount = droppedCount
        self.failures = failures
    }

    /// A one-line summary, for example `DeliveryReport(delivered: 2, skipped: 0, failures: 1)`.
    ///
    /// Replaced and dropped deliveries are listed when there are any, for example
    /// `DeliveryReport(delivered: 1, skipped: 0, replaced: 1, failures: 0)`.
    public var description: String {
        var text = "DeliveryReport(delivered: \(deliveredCount), skipped: \(skippedCount)"
        if replacedCount != 0 { text += ", replaced: \(replacedCount)" }
        if droppedCount != 0 { text += ", dropped: \(droppedCount)" }
        return text + ", failures: \(failures.count))"
    }

    func merging(_ other: DeliveryReport) -> DeliveryReport {
        var sum = self
        sum.deliveredCount += other.deliveredCount
        sum.skippedCount += other.skippedCount
        sum.replacedCount += other.replacedCount
        sum.droppedCount += other.droppedCount
        if !other.failures.isEmpty { sum.failures += other.failures }  // an empty append still replaces the buffer
        return sum
    }
}

/// An error thrown by an observer's handler, with where the observer was registered.
///
/// Herald catches every error a handler throws, so one failing observer never stops the others.
/// Each failure goes to ``NotificationHub/errorHandler``, and the waiting post forms also return
/// it in their ``DeliveryReport``.
public struct ObserverFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error the handler threw.
    public let error: any Error
    /// The name of the notification type being delivered, such as `UserCreated`.
    public let notificationType: String
    /// The file in which the observer was registered, as `#fileID` gives it.
    public let fileID: String
    /// The line at which the observer was registered.
    public let line: Int

    /// Creates a failure record.
    ///
    /// - Parameters:
    ///   - error: The error the handler threw.
    ///   - notificationType: The name of the notification type.
    ///   - fileID: The file in which the observer was registered.
    ///   - line: The line at which the observer was registered.
    public init(error: any Error, notificationType: String, fileID: String, line: Int) {
        self.error = error
        self.notificationType = notificationType
        self.fileID = fileID
        self.line = line
    }

    /// A one-line summary naming the observer's location, the notification type and the error.
    public var description: String {
        "observer at \(fileID):\(line) for \(notificationType) threw \(String(reflecting: error))"
    }

    /// Two failures are equal when they come from the same observer and describe the same error.
    public static func == (lhs: ObserverFailure, rhs: ObserverFailure) -> Bool {
        lhs.fileID == rhs.fileID && lhs.line == rhs.line && lhs.notificationType == rhs.notificationType
            && String(reflecting: lhs.error) == String(reflecting: rhs.error)
    }
}

/// The error thrown when a waiting post does not complete within its timeout.
///
/// The deliveries still outstanding are **not** cancelled: each of them still runs exactly once,
/// later, on its own target. Only the wait ends.
public struct DeliveryTimeout: Error, Sendable, Equatable, CustomStringConvertible {
    /// The timeout that passed.
    public let timeout: Duration
    /// The name of the notification type that was posted.
    public let notificationType: String
    /// The number of deliveries that had not completed when the timeout passed.
    public let pendingCount: Int

    /// Creates a timeout error.
    ///
    /// - Parameters:
    ///   - timeout: The timeout that passed.
    ///   - notificationType: The name of the notification type.
    ///   - pendingCount: The number of deliveries still outstanding.
    public init(timeout: Duration, notificationType: String, pendingCount: Int) {
        self.timeout = timeout
        self.notificationType = notificationType
        self.pendingCount = pendingCount
    }

    /// A message that says how long the wait lasted and how many observers had not finished.
    public var description: String {
        "postAndWait(\(notificationType)) timed out after \(timeout): expected every observer to finish, "
            + "found \(pendingCount) still pending (they will still run once)"
    }
}

/// A post that reached no observer.
///
/// Herald counts these (``NotificationHub/unobservedPostCount``) and, when you set
/// ``NotificationHub/unobservedPostHandler``, reports each one, so a misspelt type or a missing
/// registration does not lose notifications silently.
public struct UnobservedPost: Sendable, Equatable, CustomStringConvertible {
    /// The name of the notification type that was posted.
    public let notificationType: String
    /// Whether the post named a subject (`post(_:from:)` with a non-`nil` subject).
    public let hadSubject: Bool

    /// A one-line summary, for example `no observer for UserCreated`.
    public var description: String {
        "no observer for \(notificationType)\(hadSubject ? " from that subject" : "")"
    }
}
