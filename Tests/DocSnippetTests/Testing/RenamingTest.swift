import Herald
import HeraldTesting
import Testing

@Test func renamingUpdatesTheTitle() {
    let hub = NotificationHub()
    let main = TestDeliveryTarget(name: "main")
    let model = ProfileViewModel(hub: hub, deliveringOn: main.target)

    hub.post(ProfileLoaded(name: "Ada"))
    #expect(model.title == "Loading…")  // queued, not delivered yet
    main.runUntilIdle()
    #expect(model.title == "Ada")

    model.rename(to: "Grace")
    main.runUntilIdle()
    #expect(model.title == "Grace")
    main.expectNoPendingWork()
}
