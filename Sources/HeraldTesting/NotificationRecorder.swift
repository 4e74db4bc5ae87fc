@_spi(Testing) import Herald
import Testing

/// One notification captured by a ``NotificationRecorder``, with where it came from and where it
/// was delivered.
public struct RecordedNotification<N: Sendable>: Sendable {
    /// The notification.
    public let notification: N
    /// The identity of the subject it was posted with (`post(_:from:)`), or `nil` if none.
    public let subjectID: ObjectIdentifier?
    /// The target it was delivered on: the recorder's target.
    public let target: DeliveryTarget

    /// Whether it was posted with `subject` as its subject; `nil` matches posts without a subject.
    ///
    /// ```swift
    /// #expect(recorder.records[0].isFrom(session))
    /// ```
    ///
    /// Compare while `subject` is alive: identities of deallocated objects are reused.
    ///
    /// - Parameter subject: The object to compare with, or `nil`.
    /// - Returns: Whether the post's subject was that very object (or both are `nil`).
    public func isFrom(_ subject: AnyObject?) -> Bool {
        subjectID == subject.map(ObjectIdentifier.init)
    }
}

/// The error thrown by ``NotificationRecorder/next(timeout:)`` when no notification comes.
public struct NotificationRecorderError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case timedOut(Duration)
        case stopped
        case cancelled
    }

    private let code: Code
    /// The name of the notification type the recorder records.
    public let notificationType: String
    /// How many notifications had been recorded, all already consumed by `next`.
    public let recordedCount: Int

    /// No notification arrived within the timeout.
    ///
    /// - Parameters:
    ///   - timeout: The timeout that passed.
    ///   - notificationType: The name of the notification type.
    ///   - recordedCount: How many notifications had been recorded.
    /// - Returns: The error.
    public static func timedOut(after timeout: Duration, notificationType: String, recordedCount: Int) -> Self {
        Self(code: .timedOut(timeout), notificationType: notificationType, recordedCount: recordedCount)
    }

    /// The recorder was stopped while waiting, or before.
    ///
    /// - Parameters:
    ///   - notificationType: The name of the notification type.
    ///   - recordedCount: How many notifications had been recorded.
    /// - Returns: The error.
    public static func stopped(notificationType: String, recordedCount: Int) -> Self {
        Self(code: .stopped, notificationType: notificationType, recordedCount: recordedCount)
    }

    /// The waiting task was cancelled.
    ///
    /// - Parameters:
    ///   - notificationType: The name of the notification type.
    ///   - recordedCount: How many notifications had been recorded.
    /// - Returns: The error.
    public static func cancelled(notificationType: String, recordedCount: Int) -> Self {
        Self(code: .cancelled, notificationType: notificationType, recordedCount: recordedCount)
    }

    /// Whether the wait ended because the timeout passed.
    public var isTimeout: Bool {
        if case .timedOut = code { return true }
        return false
    }

    public var description: String {
        let found = "found none (\(recordedCount) recorded so far, all already consumed)"
        switch code {
        case .timedOut(let timeout):
            return "NotificationRecorder expected a \(notificationType) within \(timeout), \(found)"
        case .stopped:
            return "NotificationRecorder expected a \(notificationType), but the recorder was stopped; \(found)"
        case .cancelled:
            return "NotificationRecorder expected a \(notificationType), but the waiting task was cancelled; \(found)"
        }
    }
}

/// Captures every notification of one type posted to a hub, for assertions in tests.
///
/// Make one with ``Herald/NotificationHub/record(_:from:on:bufferingPolicy:replayLatest:fileID:line:)``. It records
/// each notification with its subject and the target it arrived on, for as long as the recorder
/// lives or until ``stop()``.
///
/// ```swift
/// let recorder = hub.record(UserCreated.self)
/// signUp.submit(name: "Ada")
/// #expect(recorder.values == [UserCreated(userID: 7, status: 201)])
///
/// let next = try await recorder.next()       // for deliveries on other targets
/// recorder.expectNoFurtherNotifications()
/// ```
///
/// ## Threading
/// Notifications may be posted from any number of threads: each is recorded exactly once, in
/// the order the recorder's observer received them (per posting thread, in post order). All
/// properties and methods may be used from any thread. ``values`` and ``records`` list everything
/// recorded; ``next(timeout:)`` consumes them one at a time, in that order.
public final class NotificationRecorder<N: Sendable>: Sendable {
    private typealias Outcome = Result<RecordedNotification<N>, NotificationRecorderError>
    /// A suspended `next` call, resumed with `nil` to look again.
    private typealias Waiter = CheckedContinuation<Outcome?, Never>

    private struct State {
        var records: [RecordedNotification<N>] = []
        /// The index of the next record `next` returns.
        var cursor = 0
        var isStopped = false
        var nextWaiterID: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        /// Timeouts and cancellations that arrived while their waiter was not suspended.
        var interrupted: [UInt64: Interruption] = [:]
        /// The observation, kept after `stop()` so that its counts stay readable.
        var observation: ObservationToken?

        /// What the `next` call `id` returns now: the next record, or why it ends without one;
        /// `nil` if it must wait.
        mutating func outcome(for id: UInt64, timeout: Duration) -> Outcome? {
            if cursor < records.count {
                defer { cursor += 1 }
                return .success(records[cursor])
            }
            let type = String(describing: N.self)
            let count = records.count
            if isStopped {
                return .failure(.stopped(notificationType: type, recordedCount: count))
            }
            switch interrupted[id] {
            case .timedOut: return .failure(.timedOut(after: timeout, notificationType: type, recordedCount: count))
            case .cancelled: return .failure(.cancelled(notificationType: type, recordedCount: count))
            case nil: return nil
            }
        }
    }

    private enum Interruption {
        case timedOut
        case cancelled
    }

    /// The target the recorder observes on.
    public let target: DeliveryTarget
    private let policy: NotificationBufferingPolicy
    private let state = Locked(State())

    init(target: DeliveryTarget, bufferingPolicy: NotificationBufferingPolicy = .unbounded) {
        self.target = target
        self.policy = bufferingPolicy
    }

    deinit {
        stop()
    }

    func attach(_ observation: ObservationToken) {
        state.withLock { $0.observation = observation }
    }

    func append(_ notification: N, subjectID: ObjectIdentifier?) {
        let waiters = state.withLock { state -> [Waiter] in
            guard !state.isStopped else { return [] }
            state.records.append(RecordedNotification(notification: notification, subjectID: subjectID, target: target))
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.resume(returning: nil)
        }
    }

    // MARK: - Reading

    /// Every notification recorded so far, in the order received.
    public var values: [N] {
        state.withLock { $0.records.map(\.notification) }
    }

    /// Every notification recorded so far, with its subject and target, in the order received.
    public var records: [RecordedNotification<N>] {
        state.withLock { $0.records }
    }

    /// The number of notifications recorded so far.
    public var count: Int {
        state.withLock { $0.records.count }
    }

    /// The number of recorded notifications that ``next(timeout:)`` has not returned yet.
    public var unconsumedCount: Int {
        state.withLock { $0.records.count - $0.cursor }
    }

    /// Returns every recorded notification that ``next(timeout:)`` or `takeAll()` has not returned
    /// yet, and marks them as consumed.
    ///
    /// The synchronous counterpart of ``next(timeout:)``, for observers on the posting thread or
    /// on a ``TestDeliveryTarget``:
    ///
    /// ```swift
    /// main.runUntilIdle()
    /// #expect(recorder.takeAll() == [SearchRequested(text: "ad")])
    /// main.advance(by: .seconds(10))
    /// recorder.expectNoFurtherNotifications()
    /// ```
    ///
    /// - Returns: The unconsumed notifications, in the order received.
    public func takeAll() -> [N] {
        state.withLock { state in
            defer { state.cursor = state.records.count }
            return state.records[state.cursor...].map(\.notification)
        }
    }

    /// The mailbox policy of the recorder's observer (see `ObservationToken.bufferingPolicy`).
    public var bufferingPolicy: NotificationBufferingPolicy {
        state.withLock { $0.observation?.bufferingPolicy } ?? policy
    }

    /// The notifications that the recorder's mailbox policy replaced with newer ones before they
    /// could be recorded (see `ObservationToken.replacedCount`).
    ///
    /// ```swift
    /// let recorder = hub.record(Progress.self, on: main.target, bufferingPolicy: .latest)
    /// for percent in 1...100 { hub.post(Progress(percent: percent)) }
    /// main.runUntilIdle()
    /// #expect(recorder.values == [Progress(percent: 100)])
    /// #expect(recorder.replacedCount == 99)
    /// ```
    public var replacedCount: Int {
        state.withLock { $0.observation?.replacedCount ?? 0 }
    }

    /// The notifications that the recorder's bounded mailbox policy dropped (see
    /// `ObservationToken.droppedCount`).
    public var droppedCount: Int {
        state.withLock { $0.observation?.droppedCount ?? 0 }
    }

    /// Whether the recorder has stopped recording.
    public var isStopped: Bool {
        state.withLock { $0.isStopped }
    }

    /// Stops recording: ends the observation and wakes every waiting ``next(timeout:)``, which then
    /// throws. What was recorded stays readable.
    ///
    /// Callable from any thread, any number of times. The recorder also stops when deallocated.
    public func stop() {
        let (observation, waiters) = state.withLock { state in
            state.isStopped = true
            defer { state.waiters = [:] }
            return (state.observation, Array(state.waiters.values))
        }
        observation?.cancel()  // calling it again does nothing
        for waiter in waiters {
            waiter.resume(returning: nil)
        }
    }

    // MARK: - Waiting

    /// Returns the next recorded notification that `next` has not returned yet, waiting for it to
    /// arrive if needed.
    ///
    /// Use it for observers on asynchronous targets, where the notification arrives after `post`
    /// returns:
    ///
    /// ```swift
    /// let recorder = hub.record(ImportFinished.self, on: .queue(imports))
    /// importer.start()
    /// let finished = try await recorder.next()
    /// #expect(finished.count == 3)
    /// ```
    ///
    /// The timeout only bounds a failing test; a passing test never waits for it.
    ///
    /// ## Threading
    /// Suspends without blocking a thread. Several tasks may wait at once; each recorded
    /// notification is returned to one of them.
    ///
    /// - Parameter timeout: How long to wait before failing.
    /// - Returns: The notification.
    /// - Throws: ``NotificationRecorderError`` if nothing arrives within `timeout`, the recorder is
    ///   stopped, or the task is cancelled.
    public func next(timeout: Duration = .seconds(10)) async throws(NotificationRecorderError) -> N {
        try await nextRecord(timeout: timeout).notification
    }

    /// Returns the next recorded notification with its subject and target, waiting if needed.
    ///
    /// ```swift
    /// let record = try await recorder.nextRecord()
    /// #expect(record.isFrom(session))
    /// ```
    ///
    /// Suspends without blocking a thread; see ``next(timeout:)``.
    ///
    /// - Parameter timeout: How long to wait before failing.
    /// - Returns: The record.
    /// - Throws: ``NotificationRecorderError`` if nothing arrives within `timeout`, the recorder is
    ///   stopped, or the task is cancelled.
    public func nextRecord(
        timeout: Duration = .seconds(10)
    ) async throws(NotificationRecorderError)
        -> RecordedNotification<N>
    {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiterID &+= 1 }
            return state.nextWaiterID
        }
        let timer = Task { [weak self] in
            // The sleep throws when the wait ended first and cancelled it.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.interrupt(id, .timedOut)
        }
        defer {
            timer.cancel()
            state.withLock { $0.interrupted[id] = nil }
        }
        while true {
            let outcome = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: Waiter) in
                    let outcome = state.withLock { state in
                        let outcome = state.outcome(for: id, timeout: timeout)
                        if outcome == nil { state.waiters[id] = continuation }
                        return outcome
                    }
                    if let outcome { continuation.resume(returning: outcome) }
                }
            } onCancel: {
                interrupt(id, .cancelled)
            }
            if let outcome {
                return try outcome.get()
            }
        }
    }

    private func interrupt(_ id: UInt64, _ interruption: Interruption) {
        let waiter = state.withLock { state in
            state.interrupted[id] = interruption
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume(returning: nil)
    }

    // MARK: - Checking

    /// Records a test issue if a notification was recorded that neither ``next(timeout:)`` nor
    /// ``takeAll()`` has returned yet.
    ///
    /// Exact for observers on the posting thread and on a ``TestDeliveryTarget`` after
    /// `runUntilIdle()`: everything that was going to arrive has arrived.
    ///
    /// ```swift
    /// _ = try await recorder.next()
    /// recorder.expectNoFurtherNotifications()
    /// ```
    ///
    /// - Parameters:
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func expectNoFurtherNotifications(
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        checkNoFurtherNotifications(
            comment, at: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Records a test issue if a notification was recorded that has not been returned, at
    /// `sourceLocation`: the form for a Swift Testing helper that forwards its caller's location.
    ///
    /// - Parameters:
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func expectNoFurtherNotifications(_ comment: Comment? = nil, sourceLocation: SourceLocation) -> Bool {
        checkNoFurtherNotifications(comment, at: FailureSite(sourceLocation))
    }

    /// Waits for `duration`, then records a test issue if anything arrived that ``next(timeout:)``
    /// has not returned.
    ///
    /// For observers on asynchronous targets, where "nothing more" can only be watched for a
    /// while. The wait is a lower bound on the observation window, not a synchronisation.
    ///
    /// ```swift
    /// await recorder.expectNoFurtherNotifications(within: .milliseconds(100))
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long to watch.
    ///   - comment: An optional note added to the issue.
    ///   - fileID: Where to report; leave the default.
    ///   - filePath: Where to report; leave the default.
    ///   - line: Where to report; leave the default.
    ///   - column: Where to report; leave the default.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func expectNoFurtherNotifications(
        within duration: Duration,
        _ comment: Comment? = nil,
        fileID: String = #fileID,
        filePath: StaticString = #filePath,
        line: Int = #line,
        column: Int = #column
    ) async -> Bool {
        await checkNoFurtherNotifications(
            within: duration, comment, at: FailureSite(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Waits for `duration`, then records a test issue if anything arrived that has not been
    /// returned, at `sourceLocation`: the form for a Swift Testing helper that forwards its
    /// caller's location.
    ///
    /// - Parameters:
    ///   - duration: How long to watch.
    ///   - comment: An optional note added to the issue.
    ///   - sourceLocation: Where to report.
    /// - Returns: `true` if nothing more was recorded.
    @discardableResult
    public func expectNoFurtherNotifications(
        within duration: Duration, _ comment: Comment? = nil, sourceLocation: SourceLocation
    ) async -> Bool {
        await checkNoFurtherNotifications(within: duration, comment, at: FailureSite(sourceLocation))
    }

    func checkNoFurtherNotifications(within duration: Duration, _ comment: Comment?, at site: FailureSite) async -> Bool
    {
        try? await Task.sleep(for: duration)
        return checkNoFurtherNotifications(comment, at: site)
    }

    /// Reports the unconsumed notifications at `site`, if any.
    func checkNoFurtherNotifications(_ comment: Comment?, at site: FailureSite) -> Bool {
        let extra = state.withLock { Array($0.records[$0.cursor...]) }
        guard !extra.isEmpty else { return true }
        let listed = extra.prefix(5).map { String(describing: $0.notification) }.joined(separator: ", ")
        let more = extra.count > 5 ? ", …" : ""
        reportFailure(
            "NotificationRecorder<\(N.self)> expected no further notifications, found \(extra.count): \(listed)\(more)",
            comment: comment, at: site)
        return false
    }
}

extension NotificationHub {
    /// Starts recording every notification of type `N` posted to this hub.
    ///
    /// ```swift
    /// let recorder = hub.record(UserCreated.self)
    /// hub.post(UserCreated(userID: 7, status: 201))
    /// #expect(recorder.values.map(\.userID) == [7])
    /// ```
    ///
    /// The recorder is a registration like any other: it counts in `observerCount(of:)` and
    /// `registrations(of:)`. Recording stops when the recorder is deallocated or stopped.
    ///
    /// ## Threading
    /// The recorder's observer runs on `target`. On `DeliveryTarget.posting` (the default) a
    /// notification is recorded before `post` returns.
    ///
    /// - Parameters:
    ///   - type: The notification type to record.
    ///   - subject: If not `nil`, only posts with this object as subject are recorded (held weakly).
    ///   - target: Where the recorder's observer runs.
    ///   - bufferingPolicy: The mailbox policy of the recorder's observer, as for `observe`. With
    ///     the `target` of a ``TestDeliveryTarget``, coalescing is deterministic: the
    ///     posts made before `runUntilIdle()` are what the policy sees.
    ///   - replayLatest: Whether to start with the retained values.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    /// - Returns: The recorder.
    public func record<N: TypedNotification>(
        _ type: N.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        replayLatest: Bool = false,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> NotificationRecorder<N> {
        makeRecorder(on: target, bufferingPolicy: bufferingPolicy) { record in
            observeWithContext(
                type, from: subject, on: target, bufferingPolicy: bufferingPolicy, replayLatest: replayLatest,
                fileID: fileID, line: line
            ) { record($0, $1) }
        }
    }

    /// Starts recording every notification of a family: every type that conforms to a protocol,
    /// or every subclass of a class (see `observe(every:)`).
    ///
    /// ```swift
    /// let events = hub.record(every: (any AnalyticsEvent).self)
    /// checkout.pay(cents: 300)
    /// #expect(events.values.map(\.name) == ["purchased"])
    /// ```
    ///
    /// The recorder is one observer of the family, with one mailbox for every type: it records
    /// the posts of one thread in order, across types.
    ///
    /// - Parameters:
    ///   - family: The family, such as `(any AnalyticsEvent).self`.
    ///   - subject: If not `nil`, only posts with this object as subject are recorded (held weakly).
    ///   - target: Where the recorder's observer runs.
    ///   - bufferingPolicy: The mailbox policy of the recorder's observer, as for `observe`.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    /// - Returns: The recorder.
    public func record<Family: Sendable>(
        every family: Family.Type,
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> NotificationRecorder<Family> {
        makeRecorder(on: target, bufferingPolicy: bufferingPolicy) { record in
            observeWithContext(
                every: family, from: subject, on: target, bufferingPolicy: bufferingPolicy, fileID: fileID, line: line
            ) { record($0, $1) }
        }
    }

    /// Starts recording every notification posted to this hub, of every type, as a tap does (see
    /// `observeAll`).
    ///
    /// ```swift
    /// let everything = hub.recordAll()
    /// checkout.pay(cents: 300)
    /// #expect(everything.values.map { "\($0.type)" } == ["Purchased", "ReceiptPrinted"])
    /// ```
    ///
    /// Like a tap, the recorder does not make a post observed, and waiting posts do not wait for
    /// it.
    ///
    /// - Parameters:
    ///   - subject: If not `nil`, only posts with this object as subject are recorded (held weakly).
    ///   - target: Where the recorder's observer runs.
    ///   - bufferingPolicy: The mailbox policy of the recorder's observer, as for `observe`.
    ///   - fileID: The file that registers; leave the default.
    ///   - line: The line that registers; leave the default.
    /// - Returns: The recorder.
    public func recordAll(
        from subject: AnyObject? = nil,
        on target: DeliveryTarget = .posting,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> NotificationRecorder<PostedNotification> {
        makeRecorder(on: target, bufferingPolicy: bufferingPolicy) { record in
            observeAll(from: subject, on: target, bufferingPolicy: bufferingPolicy, fileID: fileID, line: line) {
                record($0, $0.subjectID)
            }
        }
    }

    /// Makes a recorder on `target` that records, with the post's subject, through the observation
    /// `observe` makes with the handler it is given; the recorder holds that observation, and the
    /// handler holds the recorder weakly, so that letting go of the recorder ends the recording.
    private func makeRecorder<Value: Sendable>(
        on target: DeliveryTarget, bufferingPolicy: NotificationBufferingPolicy,
        _ observe: (_ record: @escaping @Sendable (Value, ObjectIdentifier?) -> Void) -> ObservationToken
    ) -> NotificationRecorder<Value> {
        let recorder = NotificationRecorder<Value>(target: target, bufferingPolicy: bufferingPolicy)
        recorder.attach(observe { [weak recorder] value, subjectID in recorder?.append(value, subjectID: subjectID) })
        noteInStandInScope()
        return recorder
    }
}
