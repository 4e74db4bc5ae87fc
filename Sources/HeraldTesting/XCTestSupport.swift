import Herald

// The XCTest twins of the HeraldTesting checks, named as XCTest names its assertions and taking
// XCTest's `file:` and `line:`, so that an XCTest helper can forward its own caller's. Every check
// reports through `reportFailure`: `XCTFail` in an XCTest test, `Issue.record` in a Swift Testing
// test, at the caller's location.

extension TestDeliveryTarget {
    /// Fails the current test if work is still queued, and says what is left: the XCTest twin of
    /// ``expectNoPendingWork(_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// main.runUntilIdle()
    /// main.assertNoPendingWork()
    /// ```
    ///
    /// - Parameters:
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if nothing was pending.
    @discardableResult
    public func assertNoPendingWork(
        fileID: String = #fileID, file: StaticString = #filePath, line: UInt = #line, column: UInt = #column
    ) -> Bool {
        checkNoPendingWork(nil, at: FailureSite(fileID: fileID, file: file, line: line, column: column))
    }
}

extension TestMainActor {
    /// Fails the current test if jobs are still queued or async handlers still running, and says
    /// what is left: the XCTest twin of ``expectNoPendingWork(_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// await main.runUntilIdle()
    /// main.assertNoPendingWork()
    /// ```
    ///
    /// - Parameters:
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if nothing was pending.
    @discardableResult
    public func assertNoPendingWork(
        fileID: String = #fileID, file: StaticString = #filePath, line: UInt = #line, column: UInt = #column
    ) -> Bool {
        checkNoPendingWork(nil, at: FailureSite(fileID: fileID, file: file, line: line, column: column))
    }
}

extension NotificationRecorder {
    /// Fails the current test if a recorded notification has not been returned by
    /// ``next(timeout:)`` or ``takeAll()``: the XCTest twin of
    /// ``expectNoFurtherNotifications(_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// recorder.assertNoFurtherNotifications()
    /// ```
    ///
    /// - Parameters:
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func assertNoFurtherNotifications(
        fileID: String = #fileID, file: StaticString = #filePath, line: UInt = #line, column: UInt = #column
    ) -> Bool {
        checkNoFurtherNotifications(nil, at: FailureSite(fileID: fileID, file: file, line: line, column: column))
    }

    /// Waits for `duration`, then fails the current test if anything arrived that has not been
    /// returned: the XCTest twin of
    /// ``expectNoFurtherNotifications(within:_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// await recorder.assertNoFurtherNotifications(within: .milliseconds(100))
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long to watch.
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func assertNoFurtherNotifications(
        within duration: Duration,
        fileID: String = #fileID,
        file: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async -> Bool {
        await checkNoFurtherNotifications(
            within: duration, nil, at: FailureSite(fileID: fileID, file: file, line: line, column: column))
    }
}

extension NotificationHub {
    /// Fails the current test unless exactly `count` live observations of `type` exist on
    /// `target` (with `bufferingPolicy`, if given): the XCTest twin of
    /// ``expectRegistered(_:on:bufferingPolicy:count:_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// hub.assertRegistered(ProfileLoaded.self, on: main.target)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the observations must have, or `nil` for any.
    ///   - count: The number of matching observations expected.
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertRegistered<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1,
        fileID: String = #fileID,
        file: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Bool {
        report(
            registrationFailure(type, on: target, bufferingPolicy: bufferingPolicy, count: count), nil,
            FailureSite(fileID: fileID, file: file, line: line, column: column))
    }

    /// Fails the current test if any live observation of `type` exists (on `target`, if given):
    /// the XCTest twin of ``expectNotRegistered(_:on:_:fileID:filePath:line:column:)``.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if no matching observation exists.
    @discardableResult
    public func assertNotRegistered<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        fileID: String = #fileID,
        file: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Bool {
        report(
            registrationFailure(type, on: target, count: 0), nil,
            FailureSite(fileID: fileID, file: file, line: line, column: column))
    }

    /// Fails the current test unless exactly `count` live observations of the family `family`
    /// exist (on `target`, if given): the XCTest twin of
    /// ``expectRegistered(every:on:bufferingPolicy:count:_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// hub.assertRegistered(every: (any AnalyticsEvent).self, on: .mainQueue)
    /// ```
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the observations must have, or `nil` for any.
    ///   - count: The number of matching observations expected; 0 to expect none.
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertRegistered<Family: Sendable>(
        every family: Family.Type,
        on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1,
        fileID: String = #fileID,
        file: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Bool {
        report(
            registrationFailure(every: family, on: target, bufferingPolicy: bufferingPolicy, count: count), nil,
            FailureSite(fileID: fileID, file: file, line: line, column: column))
    }

    /// Fails the current test unless exactly `count` live taps exist (on `target`, if given): the
    /// XCTest twin of ``expectTapsRegistered(on:bufferingPolicy:count:_:fileID:filePath:line:column:)``.
    ///
    /// - Parameters:
    ///   - target: The target the taps must use, or `nil` for any target.
    ///   - bufferingPolicy: The mailbox policy the taps must have, or `nil` for any.
    ///   - count: The number of matching taps expected; 0 to expect none.
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertTapsRegistered(
        on target: DeliveryTarget? = nil,
        bufferingPolicy: NotificationBufferingPolicy? = nil,
        count: Int = 1,
        fileID: String = #fileID,
        file: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Bool {
        report(
            tapRegistrationFailure(on: target, bufferingPolicy: bufferingPolicy, count: count), nil,
            FailureSite(fileID: fileID, file: file, line: line, column: column))
    }

    /// Fails the current test unless the observations of `type` (on `target`, if given) have
    /// replaced and dropped exactly `replaced` and `dropped` notifications under their mailbox
    /// policies: the XCTest twin of
    /// ``expectDiscarded(_:on:replaced:dropped:_:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// hub.assertDiscarded(DownloadProgress.self, replaced: 99)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - replaced: The notifications expected to have been replaced by newer ones.
    ///   - dropped: The notifications expected to have been dropped by bounded mailboxes.
    ///   - fileID: The file to report; leave the default.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    ///   - column: The column to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertDiscarded<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        replaced: Int = 0,
        dropped: Int = 0,
        fileID: String = #fileID,
        file: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Bool {
        report(
            discardFailure(type, on: target, replaced: replaced, dropped: dropped), nil,
            FailureSite(fileID: fileID, file: file, line: line, column: column))
    }
}

/// Fails the current test unless a component registers for `type` while it lives and
/// unregisters when deallocated: the XCTest twin of
/// ``expectUnregistersOnDeinit(_:in:on:count:fileID:filePath:line:column:_:)``.
///
/// ```swift
/// assertUnregistersOnDeinit(ProfileLoaded.self, in: hub) { ProfileViewModel(hub: hub) }
/// ```
///
/// - Parameters:
///   - type: The notification type the component observes.
///   - hub: The hub the component registers with.
///   - target: The target its observations must use, or `nil` for any target.
///   - count: How many observations of `type` the component makes.
///   - fileID: The file to report; leave the default.
///   - file: The file to report; leave the default.
///   - line: The line to report; leave the default.
///   - column: The column to report; leave the default.
///   - make: Makes the component. Return the only strong reference to it.
/// - Returns: `true` if every step held.
/// - Throws: What `make` throws.
@discardableResult
public func assertUnregistersOnDeinit<N: TypedNotification, Component: AnyObject>(
    _ type: N.Type,
    in hub: NotificationHub,
    on target: DeliveryTarget? = nil,
    count: Int = 1,
    fileID: String = #fileID,
    file: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column,
    _ make: () throws -> Component
) rethrows -> Bool {
    try checkUnregistersOnDeinit(
        type, in: hub, on: target, count: count,
        at: FailureSite(fileID: fileID, file: file, line: line, column: column), make)
}
