#if canImport(XCTest)
import Herald
import HeraldTesting
import XCTest

private struct Beep: TypedNotification {}

private final class Beeper: Sendable {
    private let token: ObservationToken

    init(hub: NotificationHub, on target: DeliveryTarget) {
        token = hub.observe(Beep.self, on: target) { _ in }
    }
}

/// The XCTest forms of the HeraldTesting checks, on their passing paths.
final class XCTestSupportTests: XCTestCase {
    func testTheXCTestFormsPassWhenTheirConditionHolds() {
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
        XCTAssertTrue(
            assertUnregistersOnDeinit(Beep.self, in: hub, on: main.target) { Beeper(hub: hub, on: main.target) })
        withExtendedLifetime(beeper) {}
        recorder.stop()
        XCTAssertTrue(hub.assertNotRegistered(Beep.self, on: .mainQueue))

        let latest = hub.observe(Beep.self, on: main.target, bufferingPolicy: .latest) { _ in }
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
}
#endif
