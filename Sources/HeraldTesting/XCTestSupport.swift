#if canImport(XCTest)
import Herald
import XCTest

// XCTest forms of the HeraldTesting checks, for test suites that have not moved to Swift Testing.
// They report with `XCTFail` at the caller's file and line.

extension TestDeliveryTarget {
    /// Fails the current XCTest test if work is still queued, and says what is left.
    ///
    /// ```swift
    /// main.runUntilIdle()
    /// main.assertNoPendingWork()
    /// ```
    ///
    /// - Parameters:
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if nothing was pending.
    @discardableResult
    public func assertNoPendingWork(file: StaticString = #filePath, line: UInt = #line) -> Bool {
        guard let message = pendingWorkFailure() else { return true }
        XCTFail(message, file: file, line: line)
        return false
    }
}

extension NotificationRecorder {
    /// Fails the current XCTest test if a recorded notification has not been returned by
    /// ``next(timeout:)``.
    ///
    /// ```swift
    /// recorder.assertNoFurtherNotifications()
    /// ```
    ///
    /// - Parameters:
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func assertNoFurtherNotifications(file: StaticString = #filePath, line: UInt = #line) -> Bool {
        guard let message = furtherNotificationsFailure() else { return true }
        XCTFail(message, file: file, line: line)
        return false
    }
}

extension NotificationHub {
    /// Fails the current XCTest test unless exactly `count` live observations of `type` exist on
    /// `target`.
    ///
    /// ```swift
    /// hub.assertRegistered(ProfileLoaded.self, on: main.target)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - count: The number of matching observations expected.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertRegistered<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        count: Int = 1,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Bool {
        guard let message = registrationFailure(type, on: target, count: count) else { return true }
        XCTFail(message, file: file, line: line)
        return false
    }

    /// Fails the current XCTest test if any live observation of `type` exists (on `target`, if
    /// given).
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - target: The target to check, or `nil` for any target.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if no matching observation exists.
    @discardableResult
    public func assertNotRegistered<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Bool {
        guard let message = registrationFailure(type, on: target, count: 0) else { return true }
        XCTFail(message, file: file, line: line)
        return false
    }

    /// Fails the current XCTest test unless exactly `count` live observations of the family
    /// `family` exist (on `target`, if given). See
    /// ``expectRegistered(every:on:bufferingPolicy:count:_:sourceLocation:)``.
    ///
    /// ```swift
    /// hub.assertRegistered(every: (any AnalyticsEvent).self, on: .mainQueue)
    /// ```
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - target: The target the observations must use, or `nil` for any target.
    ///   - count: The number of matching observations expected; 0 to expect none.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertRegistered<Family: Sendable>(
        every family: Family.Type,
        on target: DeliveryTarget? = nil,
        count: Int = 1,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Bool {
        guard
            let message = Self.registrationFailure(
                registrations(every: family), of: "every \(Family.self)", on: target, count: count)
        else { return true }
        XCTFail(message, file: file, line: line)
        return false
    }

    /// Fails the current XCTest test unless exactly `count` live taps exist (on `target`, if
    /// given). See ``expectTapsRegistered(on:count:_:sourceLocation:)``.
    ///
    /// - Parameters:
    ///   - target: The target the taps must use, or `nil` for any target.
    ///   - count: The number of matching taps expected; 0 to expect none.
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertTapsRegistered(
        on target: DeliveryTarget? = nil,
        count: Int = 1,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Bool {
        guard let message = Self.registrationFailure(tapRegistrations(), of: "taps", on: target, count: count) else {
            return true
        }
        XCTFail(message, file: file, line: line)
        return false
    }

    /// Fails the current XCTest test unless the observations of `type` (on `target`, if given)
    /// have replaced and dropped exactly `replaced` and `dropped` notifications under their
    /// mailbox policies. See ``expectDiscarded(_:on:replaced:dropped:_:sourceLocation:)``.
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
    ///   - file: The file to report; leave the default.
    ///   - line: The line to report; leave the default.
    /// - Returns: `true` if the assertion held.
    @discardableResult
    public func assertDiscarded<N: TypedNotification>(
        _ type: N.Type,
        on target: DeliveryTarget? = nil,
        replaced: Int = 0,
        dropped: Int = 0,
        file: StaticString = #filePath,
        line: UInt = #line
    ) -> Bool {
        guard let message = discardFailure(type, on: target, replaced: replaced, dropped: dropped) else { return true }
        XCTFail(message, file: file, line: line)
        return false
    }
}

/// Fails the current XCTest test unless a component registers for `type` while it lives and
/// unregisters when deallocated. See ``expectUnregistersOnDeinit(_:in:on:count:sourceLocation:_:)``.
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
///   - file: The file to report; leave the default.
///   - line: The line to report; leave the default.
///   - make: Makes the component. Return the only strong reference to it.
/// - Returns: `true` if every step held.
/// - Throws: What `make` throws.
@discardableResult
public func assertUnregistersOnDeinit<N: TypedNotification, Component: AnyObject>(
    _ type: N.Type,
    in hub: NotificationHub,
    on target: DeliveryTarget? = nil,
    count: Int = 1,
    file: StaticString = #filePath,
    line: UInt = #line,
    _ make: () throws -> Component
) rethrows -> Bool {
    let failures = try unregistrationFailures(type, in: hub, on: target, count: count, make)
    for failure in failures {
        XCTFail(failure, file: file, line: line)
    }
    return failures.isEmpty
}
#endif
