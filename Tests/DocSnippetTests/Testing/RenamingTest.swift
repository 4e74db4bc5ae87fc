import Dispatch
import Herald
import HeraldTesting
import Testing

struct NoImages: ImageLoading {
    func image(at url: String) async throws -> String { url }
}

@Test @MainActor func renamingUpdatesTheTitle() async {
    await withMainActorStandIn { main in
        let hub = NotificationHub()
        hub.useMainActorStandIn(main)  // main-actor deliveries now wait for the test
        let model = ProfileViewModel(hub: hub, images: NoImages())

        hub.post(ProfileLoaded(name: "Ada"))
        #expect(model.title == "Loading…")  // queued, not delivered yet
        await main.runUntilIdle()  // runs them on the main actor, in order
        #expect(model.title == "Ada")

        model.rename(to: "Grace")
        await main.runUntilIdle()
        #expect(model.title == "Grace")
        main.expectNoPendingWork()
    }
}
