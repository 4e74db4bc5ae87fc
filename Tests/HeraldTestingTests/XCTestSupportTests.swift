#if canImport(XCTest)
// This file imports only XCTest, Herald and HeraldTesting, as an XCTest-only test target does:
// every HeraldTesting API it calls must compile without `import Testing`.
import Herald
import HeraldTesting
import XCTest

private struct Beep: TypedNotification {}
private struct Echo: TypedNotification { let value: Int }

private final class Beeper: Sendable {
    private let token: ObservationToken

    init(hub: NotificationHub, on target: DeliveryTarget) {
        token = hub.observe(Beep.self, on: target) { _ in }
    }
}

/// Registers nothing: `assertUnregistersOnDeinit` fails for it.
private final class Silent {}

/// The XCTest twins of the HeraldTesting checks, and the checks and stand-in used from XCTest.
///
/// These are the project's XCTest tests (the rest use Swift Testing). A failing check must fail
/// the XCTest test at the caller's line: the case captures failures made inside `failures(_:)`
/// instead of failing, and compares their lines with the line of the call.
final class XCTestSupportTests: XCTestCase {
    private struct Failure {
        let message: String
        let file: String
        let line: Int
    }

    /// Whether failures are captured rather than recorded; only inside `failures(_:)`.
    private var isCapturing = false
    private var captured: [Failure] = []

    #if canImport(Darwin)
    override func record(_ issue: XCTIssue) {
        guard isCapturing else { return super.record(issue) }
        let location = issue.sourceCodeContext.location
        captured.append(
            Failure(
                message: issue.compactDescription, file: location?.fileURL.path ?? "", line: location?.lineNumber ?? 0))
    }
    #else
    override func recordFailure(
        withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool
    ) {
        guard isCapturing else {
            return super.recordFailure(
                withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
        captured.append(Failure(message: description, file: filePath, line: lineNumber))
    }
    #endif

    /// The failures that `body` makes, captured instead of failing the test.
    private func failures(
        isolation: isolated (any Actor)? = #isolation, _ body: () async -> Void
    ) async -> [Failure] {
        captured = []
        isCapturing = true
        await body()
        isCapturing = false
        defer { captured = [] }
        return captured
    }

    /// Checks that `found` is one failure, in this file at `line`, whose message contains `text`.
    private func assertOneFailure(
        _ found: [Failure], containing text: String, at line: Int, file: StaticString = #filePath,
        callerLine: UInt = #line
    ) {
        XCTAssertEqual(found.count, 1, "failures: \(found.map(\.message))", file: file, line: callerLine)
        guard let failure = found.first else { return }
        XCTAssertTrue(failure.message.contains(text), "message: \(failure.message)", file: file, line: callerLine)
        XCTAssertEqual(failure.line, line, "the caller's line", file: file, line: callerLine)
        XCTAssertEqual(failure.file, "\(#filePath)", "the caller's file", file: file, line: callerLine)
    }

    // MARK: - Passing paths

    func testTheXCTestFormsPassWhenTheirConditionHolds() async {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let recorder = hub.record(Beep.self, on: main.target)
        let beeper = Beeper(hub: hub, on: main.target)

        XCTAssertTrue(hub.assertRegistered(Beep.self, on: main.target, count: 2))
        XCTAssertTrue(recorder.assertNoFurtherNotifications())
        hub.post(Beep())
        XCTAssertEqual(recorder.count, 0, "queued on the test target")
        main.runUntilIdle()
        XCTAssertEqual(recorder.count, 1)
        XCTAssertTrue(main.assertNoPendingWork())
        XCTAssertEqual(recorder.takeAll().count, 1)
        let nothingMore = await recorder.assertNoFurtherNotifications(within: .zero)
        XCTAssertTrue(nothingMore)
        XCTAssertTrue(
            assertUnregistersOnDeinit(Beep.self, in: hub, on: main.target) { Beeper(hub: hub, on: main.target) })
        withExtendedLifetime(beeper) {}
        recorder.stop()
        XCTAssertTrue(hub.assertNotRegistered(Beep.self, on: .mainQueue))

        let latest = hub.observe(Beep.self, on: main.target, bufferingPolicy: .latest) { _ in }
        XCTAssertTrue(hub.assertRegistered(Beep.self, bufferingPolicy: .latest))
        hub.post(Beep())
        hub.post(Beep())
        XCTAssertTrue(hub.assertDiscarded(Beep.self, replaced: 1))
        main.runUntilIdle()
        withExtendedLifetime(latest) {}

        let family = hub.record(every: (any TypedNotification).self, on: main.target)
        let tap = hub.recordAll()
        XCTAssertTrue(hub.assertRegistered(every: (any TypedNotification).self, on: main.target))
        XCTAssertTrue(hub.assertTapsRegistered(on: .posting))
        hub.post(Beep())
        main.runUntilIdle()
        XCTAssertEqual(family.count, 1)
        XCTAssertEqual(tap.count, 1)
        family.stop()
        tap.stop()
        XCTAssertTrue(hub.assertRegistered(every: (any TypedNotification).self, count: 0))
        XCTAssertTrue(hub.assertTapsRegistered(count: 0))
    }

    @MainActor
    func testTheMainActorStandInRunsDeliveriesFromAnXCTestFileWithoutImportingTesting() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(Echo.self, on: MainActor.shared) { note in seen.append(note.value) }
            hub.post(Echo(value: 1))
            XCTAssertEqual(seen, [])
            await main.runUntilIdle()
            XCTAssertEqual(seen, [1])
            MainActor.perform(after: .seconds(1)) { seen.append(2) }
            await main.advance(by: .seconds(1))
            XCTAssertEqual(seen, [1, 2])
            XCTAssertTrue(main.assertNoPendingWork())
            XCTAssertTrue(main.expectNoPendingWork())
            XCTAssertTrue(hub.expectRegistered(Echo.self, on: .mainQueue))
            token.cancel()
        }
    }

    // MARK: - Each twin fails the test at the caller's line

    func testTestDeliveryTargetAssertNoPendingWorkFailsAtTheCallersLine() async {
        let target = TestDeliveryTarget(name: "main")
        target.enqueue {}
        let found = await failures { target.assertNoPendingWork() }
        assertOneFailure(found, containing: "TestDeliveryTarget(main) expected no pending work", at: #line - 1)
        target.runUntilIdle()
    }

    @MainActor
    func testTestMainActorAssertNoPendingWorkFailsAtTheCallersLine() async {
        await withMainActorStandIn(name: "ui") { main in
            MainActor.perform {}
            let found = await failures { main.assertNoPendingWork() }
            assertOneFailure(found, containing: "TestMainActor(ui) expected no pending work, found 1", at: #line - 1)
            await main.runUntilIdle()
        }
    }

    func testRecorderAssertNoFurtherNotificationsFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let recorder = hub.record(Beep.self)
        hub.post(Beep())
        let found = await failures { recorder.assertNoFurtherNotifications() }
        assertOneFailure(found, containing: "expected no further notifications, found 1", at: #line - 1)
    }

    func testRecorderAssertNoFurtherNotificationsWithinFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let recorder = hub.record(Beep.self)
        hub.post(Beep())
        let found = await failures { await recorder.assertNoFurtherNotifications(within: .zero) }
        assertOneFailure(found, containing: "expected no further notifications, found 1", at: #line - 1)
    }

    func testAssertRegisteredFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let found = await failures { hub.assertRegistered(Beep.self, bufferingPolicy: .latest) }
        assertOneFailure(found, containing: "expected 1 registration for Beep buffering", at: #line - 1)
    }

    func testAssertNotRegisteredFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let beeper = Beeper(hub: hub, on: .posting)
        let found = await failures { hub.assertNotRegistered(Beep.self) }
        assertOneFailure(found, containing: "expected 0 registrations for Beep, found 1", at: #line - 1)
        withExtendedLifetime(beeper) {}
    }

    func testAssertRegisteredEveryFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let found = await failures { hub.assertRegistered(every: (any TypedNotification).self) }
        assertOneFailure(found, containing: "expected 1 registration for every", at: #line - 1)
    }

    func testAssertTapsRegisteredFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let found = await failures { hub.assertTapsRegistered() }
        assertOneFailure(found, containing: "expected 1 registration for taps, found 0", at: #line - 1)
    }

    func testAssertDiscardedFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let latest = hub.observe(Beep.self, on: main.target, bufferingPolicy: .latest) { _ in }
        hub.post(Beep())
        hub.post(Beep())
        let found = await failures { hub.assertDiscarded(Beep.self, replaced: 5) }
        assertOneFailure(found, containing: "to have replaced 5 and dropped 0, found replaced 1", at: #line - 1)
        main.runUntilIdle()
        withExtendedLifetime(latest) {}
    }

    func testAssertUnregistersOnDeinitFailsAtTheCallersLine() async {
        let hub = NotificationHub()
        let found = await failures { assertUnregistersOnDeinit(Beep.self, in: hub) { Silent() } }
        assertOneFailure(found, containing: "while Silent is alive, expected 1 registration", at: #line - 1)
    }

    // MARK: - The Swift Testing forms fail an XCTest test too

    func testExpectFormsFailAnXCTestTestAtTheCallersLine() async {
        let hub = NotificationHub()
        let target = TestDeliveryTarget(name: "main")
        target.enqueue {}
        let pending = await failures { target.expectNoPendingWork() }
        assertOneFailure(pending, containing: "expected no pending work", at: #line - 1)
        let registered = await failures { hub.expectRegistered(Beep.self) }
        assertOneFailure(registered, containing: "expected 1 registration for Beep", at: #line - 1)
        let unregistered = await failures { expectUnregistersOnDeinit(Beep.self, in: hub) { Silent() } }
        assertOneFailure(unregistered, containing: "while Silent is alive", at: #line - 1)
        target.runUntilIdle()
    }

    // MARK: - Failures the stand-in and the test target record on their own

    // A `.latest` observer drains one batch per job, so each re-post is a job of its own.

    @MainActor
    func testRunawayWorkOnTheStandInFailsTheXCTestTestAtTheCallersLine() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let token = hub.observe(Echo.self, on: MainActor.shared, bufferingPolicy: .latest) { note in
                if note.value < 100 { hub.post(Echo(value: note.value + 1)) }
            }
            hub.post(Echo(value: 0))
            let found = await failures { await main.runUntilIdle(maxJobs: 10) }
            assertOneFailure(found, containing: "TestMainActor(main) ran 10 jobs and more may be due", at: #line - 1)
            await main.runUntilIdle()
            token.cancel()
        }
    }

    @MainActor
    func testAHubWithoutTheStandInFailsTheXCTestTestAndNamesUseMainActorStandIn() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            let recorder = hub.record(Echo.self, on: .mainQueue)
            hub.post(Echo(value: 1))
            let found = await failures { await main.runUntilIdle() }
            assertOneFailure(found, containing: "Call hub.useMainActorStandIn(main)", at: #line - 1)
            XCTAssertEqual(recorder.count, 0, "the delivery waits on the real main queue")
        }
    }

    func testRunawayWorkOnATestTargetFailsTheXCTestTestAtTheCallersLine() async {
        let hub = NotificationHub()
        let target = TestDeliveryTarget(name: "main")
        let token = hub.observe(Echo.self, on: target.target, bufferingPolicy: .latest) { note in
            if note.value < 100 { hub.post(Echo(value: note.value + 1)) }
        }
        hub.post(Echo(value: 0))
        let found = await failures { target.runUntilIdle(maxJobs: 10) }
        assertOneFailure(found, containing: "TestDeliveryTarget(main) ran 10 jobs and more are", at: #line - 1)
        target.runUntilIdle()
        token.cancel()
    }
}

#endif
