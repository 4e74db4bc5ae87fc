import Herald
import Testing

extension NotificationHub {
    /// Records a test issue unless exactly `count` live observations of `type` exist on `target`
    /// (with `bufferingPolicy`, if given).
    ///
    /// ```swift
    /// let model = ProfileViewModel(hub: hub, deliveringOn: main.target)
    /// hub.expectRegistered(ProfileLoaded.self, on: main.target)
    /// hub.expectRegistered(DownloadProgress.self, on: main.target, bufferingPolicy: .latest)
    /// ```
    ///
    /// The issue lists the registrations found, with the file and line that made each one, and
    /// the mailbox policy of each one that has one, with what it replaced and dropped.
    ///
    /// ## Threading
    /// Callable from any thread; it reads a snapshot of the registry.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the observations must have, or `nil` for any.
    ///   - count: The number of matching observations expected.
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectRegistered<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1,
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        report(
            registrationFailure(type, on: target, bufferingPolicy: bufferingPolicy, count: count), comment,
            FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Records a test issue unless the observations of `type` (on `target`, if given) have
    /// discarded exactly `replaced` and `dropped` notifications under their mailbox policies, in
    /// total.
    ///
    /// ```swift
    /// main.runUntilIdle()
    /// hub.expectDiscarded(DownloadProgress.self, replaced: 99)
    /// ```
    ///
    /// Only live observations count: read an ended one's counts from its token.
    ///
    /// ## Threading
    /// Callable from any thread. Counts change as posts arrive: check them once the posts you
    /// expect have been made and delivered.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - replaced: The notifications expected to have been replaced by newer ones.
    ///   - dropped: The notifications expected to have been dropped by bounded mailboxes.
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectDiscarded<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        replaced: Int = 0,
        dropped: Int = 0,
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        report(
            discardFailure(type, on: target, replaced: replaced, dropped: dropped), comment,
            FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// The failure message for the replaced and dropped counts, or `nil` if they match.
    func discardFailure<N: TypedNotification>(
        _ type: N.Type, on target: DeliveryTarget?, replaced: Int, dropped: Int
    ) -> String? {
        let matching = registrations(of: type, on: target)
        let found = (matching.reduce(0) { $0 + $1.replacedCount }, matching.reduce(0) { $0 + $1.droppedCount })
        guard found != (replaced, dropped) else { return nil }
        let place = target.map { " on \($0)" } ?? ""
        let listed = matching.isEmpty ? "none" : matching.map(\.description).joined(separator: "; ")
        return "expected the observers of \(N.self)\(place) to have replaced \(replaced) and dropped \(dropped), "
            + "found replaced \(found.0) and dropped \(found.1) (registrations: \(listed))"
    }

    /// Records a test issue if any live observation of `type` exists (on `target`, if given).
    ///
    /// ```swift
    /// model = nil
    /// hub.expectNotRegistered(ProfileLoaded.self)
    /// ```
    ///
    /// ## Threading
    /// Callable from any thread.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if no matching observation exists.
    @discardableResult
    public func expectNotRegistered<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        report(
            registrationFailure(type, on: target, count: 0), comment,
            FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// The registrations of `type`, on `target` if given.
    func registrations<N: TypedNotification>(of type: N.Type, on target: DeliveryTarget?) -> [Registration] {
        registrations(of: type).filter { target == nil || $0.target == target }
    }

    /// The failure message for a registration count, or `nil` if it matches.
    func registrationFailure<N: TypedNotification>(
        _ type: N.Type, on target: DeliveryTarget?, bufferingPolicy: NotificationBufferingPolicy? = nil, count: Int
    ) -> String? {
        Self.registrationFailure(
            registrations(of: type), of: "\(N.self)", on: target, bufferingPolicy: bufferingPolicy, count: count)
    }

    /// The failure message for a count of the observations of the family `family`, or `nil` if it
    /// matches.
    func registrationFailure<Family: Sendable>(
        every family: Family.Type, on target: DeliveryTarget?, bufferingPolicy: NotificationBufferingPolicy?, count: Int
    ) -> String? {
        Self.registrationFailure(
            registrations(every: family), of: "every \(Family.self)", on: target, bufferingPolicy: bufferingPolicy,
            count: count)
    }

    /// The failure message for a count of taps, or `nil` if it matches.
    func tapRegistrationFailure(
        on target: DeliveryTarget?, bufferingPolicy: NotificationBufferingPolicy?, count: Int
    ) -> String? {
        Self.registrationFailure(
            tapRegistrations(), of: "taps", on: target, bufferingPolicy: bufferingPolicy, count: count)
    }

    /// The failure message for a count of the registrations `all` of `name`, or `nil` if it matches.
    static func registrationFailure(
        _ all: [Registration], of name: String, on target: DeliveryTarget?,
        bufferingPolicy: NotificationBufferingPolicy? = nil, count: Int
    ) -> String? {
        let matching = all.filter {
            (target == nil || $0.target == target) && (bufferingPolicy == nil || $0.bufferingPolicy == bufferingPolicy)
        }
        guard matching.count != count else { return nil }
        var place = target.map { " on \($0)" } ?? ""
        if let bufferingPolicy { place += " buffering \(bufferingPolicy)" }
        let found = all.isEmpty ? "none" : all.map(\.description).joined(separator: "; ")
        return "expected \(count) registration\(count == 1 ? "" : "s") for \(name)\(place), "
            + "found \(matching.count) (all registrations for \(name): \(found))"
    }

    /// Records a test issue unless exactly `count` live observations of the family `family` exist
    /// on `target` (with `bufferingPolicy`, if given): observations made with
    /// `observe(every:…)` for this very family type.
    ///
    /// ```swift
    /// let tracker = AnalyticsTracker(hub: hub)
    /// hub.expectRegistered(every: (any AnalyticsEvent).self, on: .queue(tracker.queue))
    /// ```
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the observations must have, or `nil` for any.
    ///   - count: The number of matching observations expected; 0 to expect none.
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectRegistered<Family: Sendable>(
        every family: Family.Type,
        on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1,
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        report(
            registrationFailure(every: family, on: target, bufferingPolicy: bufferingPolicy, count: count), comment,
            FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Records a test issue unless exactly `count` live taps (`observeAll`) exist on `target`.
    ///
    /// ```swift
    /// let logger = EventLogger(hub: hub)
    /// hub.expectTapsRegistered(on: .queue(logger.queue))
    /// logger.stop()
    /// hub.expectTapsRegistered(count: 0)
    /// ```
    ///
    /// - Parameters:
    ///   - target: The target the taps must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the taps must have, or `nil` for any.
    ///   - count: The number of matching taps expected; 0 to expect none.
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectTapsRegistered(
        on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1,
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        report(
            tapRegistrationFailure(on: target, bufferingPolicy: bufferingPolicy, count: count), comment,
            FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    // MARK: - Forms for Swift Testing helpers

    // Each reports at `sourceLocation`, for a helper that forwards its own caller's location.

    /// ``expectRegistered(_:on:bufferingPolicy:count:_:fileID:filePath:line:column:)``, reporting at
    /// `sourceLocation`.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the observations must have, or `nil` for any.
    ///   - count: The number of matching observations expected.
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectRegistered<N: TypedNotification>(
        _ type: N.Type, on target: DeliveryTarget? = nil, bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1, _ comment: Comment? = nil, sourceLocation: SourceLocation
    ) -> Bool {
        report(
            registrationFailure(type, on: target, bufferingPolicy: bufferingPolicy, count: count), comment,
            FailureSite(sourceLocation))
    }

    /// ``expectNotRegistered(_:on:_:fileID:filePath:line:column:)``, reporting at `sourceLocation`.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if no matching observation exists.
    @discardableResult
    public func expectNotRegistered<N: TypedNotification>(
        _ type: N.Type, on target: DeliveryTarget? = nil, _ comment: Comment? = nil, sourceLocation: SourceLocation
    ) -> Bool {
        report(registrationFailure(type, on: target, count: 0), comment, FailureSite(sourceLocation))
    }

    /// ``expectDiscarded(_:on:replaced:dropped:_:fileID:filePath:line:column:)``, reporting at
    /// `sourceLocation`.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - replaced: The notifications expected to have been replaced by newer ones.
    ///   - dropped: The notifications expected to have been dropped by bounded mailboxes.
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectDiscarded<N: TypedNotification>(
        _ type: N.Type, on target: DeliveryTarget? = nil, replaced: Int = 0, dropped: Int = 0,
        _ comment: Comment? = nil, sourceLocation: SourceLocation
    ) -> Bool {
        report(
            discardFailure(type, on: target, replaced: replaced, dropped: dropped), comment,
            FailureSite(sourceLocation))
    }

    /// ``expectRegistered(every:on:bufferingPolicy:count:_:fileID:filePath:line:column:)``,
    /// reporting at `sourceLocation`.
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the observations must have, or `nil` for any.
    ///   - count: The number of matching observations expected; 0 to expect none.
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectRegistered<Family: Sendable>(
        every family: Family.Type, on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil, count: Int = 1, _ comment: Comment? = nil,
        sourceLocation: SourceLocation
    ) -> Bool {
        report(
            registrationFailure(every: family, on: target, bufferingPolicy: bufferingPolicy, count: count), comment,
            FailureSite(sourceLocation))
    }

    /// ``expectTapsRegistered(on:bufferingPolicy:count:_:fileID:filePath:line:column:)``, reporting at
    /// `sourceLocation`.
    ///
    /// - Parameters:
    ///   - target: The target the taps must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the taps must have, or `nil` for any.
    ///   - count: The number of matching taps expected; 0 to expect none.
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if the expectation held.
    @discardableResult
    public func expectTapsRegistered(
        on target: DeliveryTarget? = nil, bufferingPolicy: NotificationBufferingPolicy? = nil, count: Int = 1,
        _ comment: Comment? = nil, sourceLocation: SourceLocation
    ) -> Bool {
        report(
            tapRegistrationFailure(on: target, bufferingPolicy: bufferingPolicy, count: count), comment,
            FailureSite(sourceLocation))
    }

    /// Reports `failure`, if any, at `site`.
    func report(_ failure: String?, _ comment: Comment?, _ site: FailureSite) -> Bool {
        noteInStandInScope(checkingAt: site)
        return reportIfFailed(failure, comment: comment, at: site)
    }
}

/// Checks that a component registers for `type` while it lives, and unregisters when deallocated.
///
/// It makes the component with `make`, expects `count` more registrations for `type` (on `target`,
/// if given), lets go of the component, and then expects it to be deallocated and the
/// registrations to be back where they were. Each failure is recorded as a test issue that says
/// which step failed: no registration, a component kept alive (often a retain cycle through a
/// handler that captures `self` strongly), or registrations left behind.
///
/// ```swift
/// expectUnregistersOnDeinit(ProfileLoaded.self, in: hub, on: main.target) {
///     ProfileViewModel(hub: hub, deliveringOn: main.target)
/// }
/// ```
///
/// ## Threading
/// Runs `make` on the calling thread. Observations bound to an `owner:` end when the owner is
/// deallocated, so they count as unregistered as soon as the component is gone.
///
/// - Parameters:
///   - type: The notification type the component observes.
///   - hub: The hub the component registers with.
///   - target: The target its observations must use, or `nil` for any target.
///   - count: How many observations of `type` the component makes.
///   - fileID: Where to report; leave the default.
///   - filePath: Where to report; leave the default.
///   - line: Where to report; leave the default.
///   - column: Where to report; leave the default.
///   - make: Makes the component. Return the only strong reference to it.
/// - Returns: `true` if every step held.
/// - Throws: What `make` throws.
@discardableResult
public func expectUnregistersOnDeinit<N: TypedNotification, Component: AnyObject>(
    _ type: N.Type,
    in hub: NotificationHub,
    on target: DeliveryTarget? = nil,
    count: Int = 1,
    fileID: String = #fileID,
    filePath: StaticString = #filePath,
    line: Int = #line,
    column: Int = #column,
    _ make: () throws -> Component
) rethrows -> Bool {
    try checkUnregistersOnDeinit(
        type, in: hub, on: target, count: count,
        at: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column), make)
}

/// Checks that a component unregisters when deallocated, as
/// ``expectUnregistersOnDeinit(_:in:on:count:fileID:filePath:line:column:_:)`` does, reporting
/// at `sourceLocation`: the form for a Swift Testing helper that forwards its caller's location.
///
/// - Parameters:
///   - type: The notification type the component observes.
///   - hub: The hub the component registers with.
///   - target: The target its observations must use, or `nil` for any target.
///   - count: How many observations of `type` the component makes.
///   - sourceLocation: Where to report.
///   - make: Makes the component. Return the only strong reference to it.
/// - Returns: `true` if every step held.
/// - Throws: What `make` throws.
@discardableResult
public func expectUnregistersOnDeinit<N: TypedNotification, Component: AnyObject>(
    _ type: N.Type,
    in hub: NotificationHub,
    on target: DeliveryTarget? = nil,
    count: Int = 1,
    sourceLocation: SourceLocation,
    _ make: () throws -> Component
) rethrows -> Bool {
    try checkUnregistersOnDeinit(type, in: hub, on: target, count: count, at: FailureSite(sourceLocation), make)
}

/// Checks ``expectUnregistersOnDeinit(_:in:on:count:fileID:filePath:line:column:_:)``'s steps and
/// reports each failure at `site`, in order.
func checkUnregistersOnDeinit<N: TypedNotification, Component: AnyObject>(
    _ type: N.Type,
    in hub: NotificationHub,
    on target: DeliveryTarget?,
    count: Int,
    at site: FailureSite,
    _ make: () throws -> Component
) rethrows -> Bool {
    let before = hub.registrations(of: type, on: target).count
    var failures: [String] = []
    weak var released: Component?
    do {
        let component = try make()
        released = component
        if let failure = hub.registrationFailure(type, on: target, count: before + count) {
            failures.append("while \(Component.self) is alive, " + failure)
        }
        withExtendedLifetime(component) {}
    }
    if released != nil {
        failures.append(
            "expected \(Component.self) to be deallocated once released, but something still holds it "
                + "(a handler capturing it strongly?)")
    }
    if let failure = hub.registrationFailure(type, on: target, count: before) {
        failures.append("after \(Component.self) was released, " + failure)
    }
    hub.noteInStandInScope(checkingAt: site)
    for failure in failures {
        reportFailure(failure, at: site)
    }
    return failures.isEmpty
}
