import Herald
import HeraldTesting
import Observation
import Synchronization
import Testing

/// A fake image loader: it suspends on every call, and logs when each call starts and ends.
actor FakeImages: ImageLoading {
    private(set) var log: [String] = []
    private let failing: Set<String>

    init(failing: Set<String> = []) {
        self.failing = failing
    }

    struct NotFound: Error {}

    func image(at url: String) async throws -> String {
        log.append("start \(url)")
        await Task.yield()
        await Task.yield()
        log.append("end \(url)")
        if failing.contains(url) { throw NotFound() }
        return "image of \(url)"
    }
}

@Suite("A @MainActor @Observable view model tested with TestMainActor")
@MainActor
struct AccountViewModelTests {
    @Test("Deliveries wait for the test, then run on the main actor in post order")
    func deliveriesRunWhenTheTestSaysSo() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = AccountViewModel(hub: hub, images: FakeImages())

            hub.post(ProfileLoaded(name: "Ada"))
            model.rename(to: "Grace")
            #expect(model.title == "Loading…", "queued on the stand-in, not delivered yet")
            await main.runUntilIdle()
            #expect(model.history == ["Ada", "Grace"])

            hub.post(SessionEnded())
            #expect(!model.isSignedOut)
            await main.runUntilIdle()
            #expect(model.isSignedOut)
            main.expectNoPendingWork()
        }
    }

    @Test("Observation sees the changes that deliveries make")
    func observationTracksDeliveries() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = AccountViewModel(hub: hub, images: FakeImages())
            let changes = Counted()
            withObservationTracking {
                _ = model.title
            } onChange: {
                changes.increment()
            }
            hub.post(ProfileLoaded(name: "Ada"))
            #expect(changes.count == 0)
            await main.runUntilIdle()
            #expect(changes.count == 1)
            #expect(model.title == "Ada")
        }
    }

    @Test("The search is debounced on the stand-in's manual clock")
    func searchIsDebounced() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = AccountViewModel(hub: hub, images: FakeImages())
            let searches = hub.record(SearchRequested.self)

            model.searchTextChanged("a")
            await main.advance(by: .milliseconds(100))
            model.searchTextChanged("ad")
            await main.advance(by: .milliseconds(299))
            #expect(searches.values.isEmpty, "the second keystroke restarted the wait")

            await main.advance(by: .milliseconds(1))
            #expect(searches.takeAll() == [SearchRequested(text: "ad")])
            #expect(main.now == .milliseconds(400))
            main.expectNoPendingWork()
            searches.expectNoFurtherNotifications()
        }
    }

    @Test("Avatar reloads run one at a time, in post order, and runUntilIdle waits for them")
    func asyncHandlerKeepsOrder() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let images = FakeImages(failing: ["broken"])
            let model = AccountViewModel(hub: hub, images: images)

            hub.post(AvatarChanged(url: "a"))
            hub.post(AvatarChanged(url: "broken"))
            hub.post(AvatarChanged(url: "b"))
            #expect(await images.log.isEmpty)
            await main.runUntilIdle()
            #expect(
                await images.log == ["start a", "end a", "start broken", "end broken", "start b", "end b"])
            #expect(model.avatar == "image of b")
            #expect(model.avatarFailures == 1)
            #expect(main.runningTaskCount == 0)
            main.expectNoPendingWork()
        }
    }

    @Test("Every type is registered on the main target, and nothing is left after deinit")
    func registrationsAndDeinit() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var model: AccountViewModel? = AccountViewModel(hub: hub, images: FakeImages())
            hub.expectRegistered(ProfileLoaded.self, on: .mainQueue)
            hub.expectRegistered(ProfileRenamed.self, on: .mainQueue)
            hub.expectRegistered(SessionEnded.self, on: .mainQueue)
            hub.expectRegistered(AvatarChanged.self, on: .mainQueue)
            #expect(model?.title == "Loading…")
            model = nil
            hub.expectNotRegistered(ProfileLoaded.self)
            hub.expectNotRegistered(AvatarChanged.self)
            hub.post(ProfileLoaded(name: "late"))
            #expect(main.pendingCount == 0)
        }
    }

    @Test("Waiting for the hub from the test fails fast while only the test can run its deliveries")
    func waitingFailsFast() async throws {
        try await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = AccountViewModel(hub: hub, images: FakeImages())
            hub.post(ProfileLoaded(name: "Ada"))
            await #expect(throws: PendingWorkError.self) { try await hub.waitUntilIdle() }
            await main.runUntilIdle()
            try await hub.waitUntilIdle()
            #expect(model.title == "Ada")
        }
    }
}

/// A counter that an `onChange` closure may bump from any isolation.
final class Counted: Sendable {
    private let value = Atomic<Int>(0)

    func increment() {
        value.add(1, ordering: .sequentiallyConsistent)
    }

    var count: Int {
        value.load(ordering: .sequentiallyConsistent)
    }
}
