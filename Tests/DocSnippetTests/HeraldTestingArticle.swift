import Herald
import HeraldTesting
import Testing

// The Swift block of HeraldTesting.docc/HeraldTesting.md, compiled and run.

// snippet: begin
struct Alarm: TypedNotification, Equatable { let level: Int }

@Test func alarmsAreDeliveredWhenTheTestSaysSo() {
    let hub = NotificationHub()
    let main = TestDeliveryTarget(name: "main")
    let alarms = hub.record(Alarm.self, on: main.target)

    hub.post(Alarm(level: 3))
    #expect(alarms.values.isEmpty)  // queued on the stand-in, not delivered yet
    main.runUntilIdle()
    #expect(alarms.takeAll() == [Alarm(level: 3)])

    hub.expectRegistered(Alarm.self, on: main.target)
    main.expectNoPendingWork()
    alarms.expectNoFurtherNotifications()
}
// snippet: end
