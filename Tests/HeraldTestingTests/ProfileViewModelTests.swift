import Herald
import HeraldTesting
import Testing

@Suite("A view model tested with TestDeliveryTarget")
struct ProfileViewModelTests {
    let hub = NotificationHub()
    let main = TestDeliveryTarget(name: "main")

    @Test("Notifications reach the model only when the test runs the target, in post order")
    func deliveriesRunWhenTheTestSaysSo() {
        let model = ProfileViewModel(hub: hub, deliveringOn: main.target)
        hub.post(ProfileLoaded(name: "Ada"))
        #expect(model.title == "Loading…", "nothing runs until the test runs the target")
        #expect(main.pendingCount == 1)

        main.runUntilIdle()
        #expect(model.title == "Ada")

        model.rename(to: "Grace")
        hub.post(ProfileLoaded(name: "Hopper"))
        model.rename(to: "Lovelace")
        main.runUntilIdle()
        // Each observer has its own mailbox, drained by one job in post order: the renames
        // were queued first, so both run before the second load.
        #expect(model.history == ["Ada", "Grace", "Lovelace", "Hopper"])
        #expect(model.title == "Hopper")
        main.expectNoPendingWork()
    }

    @Test("Every run of the same steps gives the same history")
    func orderIsDeterministic() {
        var histories: Set<[String]> = []
        for _ in 0..<50 {
            let hub = NotificationHub()
            let main = TestDeliveryTarget(name: "main")
            let model = ProfileViewModel(hub: hub, deliveringOn: main.target)
            hub.post(ProfileLoaded(name: "Ada"))
            model.rename(to: "Grace")
            hub.post(ProfileLoaded(name: "Hopper"))
            main.runNext()
            model.rename(to: "Lovelace")
            main.runUntilIdle()
            histories.insert(model.history)
        }
        #expect(histories == [["Ada", "Hopper", "Grace", "Lovelace"]])
    }

    @Test("A debounced search is requested only after typing pauses, on the manual clock")
    func debouncedSearch() {
        let model = ProfileViewModel(hub: hub, deliveringOn: main.target)
        let searches = hub.record(SearchRequested.self)

        model.searchTextChanged("a")
        main.advance(by: .milliseconds(100))
        model.searchTextChanged("ad")
        main.advance(by: .milliseconds(299))
        #expect(searches.values.isEmpty, "the second keystroke restarted the wait")

        main.advance(by: .milliseconds(1))
        #expect(searches.takeAll() == [SearchRequested(text: "ad")])
        #expect(main.now == .milliseconds(400))

        main.advance(by: .seconds(10))
        main.expectNoPendingWork()
        searches.expectNoFurtherNotifications()
        withExtendedLifetime(model) {}
    }

    @Test("The model registers on the injected target and unregisters when deallocated")
    func registrationsFollowTheModelsLifetime() {
        var model: ProfileViewModel? = ProfileViewModel(hub: hub, deliveringOn: main.target)
        hub.expectRegistered(ProfileLoaded.self, on: main.target)
        hub.expectRegistered(ProfileRenamed.self, on: main.target)
        hub.expectRegistered(SessionEnded.self, on: main.target)
        hub.expectNotRegistered(ProfileLoaded.self, on: .mainQueue)

        #expect(model != nil)
        model = nil
        hub.expectNotRegistered(ProfileLoaded.self)
        hub.expectNotRegistered(ProfileRenamed.self)
        hub.expectNotRegistered(SessionEnded.self)
    }

    @Test("Each of the model's observations ends on deinit, token-held and owner-bound alike")
    func unregistersOnDeinit() {
        let hub = hub
        let main = main
        expectUnregistersOnDeinit(ProfileLoaded.self, in: hub, on: main.target) {
            ProfileViewModel(hub: hub, deliveringOn: main.target)
        }
        expectUnregistersOnDeinit(ProfileRenamed.self, in: hub, on: main.target) {
            ProfileViewModel(hub: hub, deliveringOn: main.target)
        }
        expectUnregistersOnDeinit(SessionEnded.self, in: hub) {
            ProfileViewModel(hub: hub, deliveringOn: main.target)
        }
    }

    @Test("Deliveries queued for a model that is gone run as no-ops")
    func queuedDeliveriesForDeadModelAreSkipped() {
        var model: ProfileViewModel? = ProfileViewModel(hub: hub, deliveringOn: main.target)
        hub.post(SessionEnded())
        #expect(model?.isSignedOut == false)
        model = nil
        #expect(main.runUntilIdle() == 1, "the drain job runs and finds nothing to deliver")
        main.expectNoPendingWork()
    }
}
