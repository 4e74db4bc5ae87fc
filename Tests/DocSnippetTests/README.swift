import Foundation
import Herald
import HeraldTesting
import Testing

// The Swift blocks of README.md, in order (the Quick Start is Examples/QuickStart/main.swift).
// Scripts/check-doc-snippets.py checks that each region below equals its block.

@MainActor
func readmePerformingWork(database: DispatchQueue, store: Store, view: View, file: URL) throws {
    // snippet: begin
    DeliveryTarget.queue(database).perform { store.vacuum() }  // always enqueues
    let rows = try DeliveryTarget.queue(database).performAndWait { try store.count() }
    MainActor.perform(after: .milliseconds(300)) { hideToast() }  // @MainActor closure
    let frame = MainActor.performAndWait { view.frame }  // @MainActor closure
    let digest = BackgroundQueue.shared.enqueue { try sha256(of: file) }  // a BackgroundTask
    // snippet: end
    _ = (rows, frame, digest)
}

// snippet: begin
extension UserInfoKey { static var userID: UserInfoKey<Int> { .init("userID") } }
// snippet: pause

func readmeUserInfo(note: Notification) throws -> (Int?, Int) {
    // snippet: resume
    let userID = note.userInfo[.userID]  // Int?, nil if missing or of another type
    let checked = try note.value(for: .userID)  // throws UserInfoDecodingError
    // snippet: end
    return (userID, checked)
}

enum Readme {
    // snippet: begin
    struct UserCreated: NotificationConvertible, Codable {
        static let notificationName = Notification.Name("UserCreated")
        let userID: Int
        let status: Int
    }
    // snippet: pause
}

extension Readme {
    static func forwarding(hub: NotificationHub) -> [ObservationToken] {
        // snippet: resume
        let fromLegacy = hub.forward(UserCreated.self, fromCenter: .default)  // legacy posts reach typed observers
        let toLegacy = hub.forward(UserCreated.self, toCenter: .default)  // typed posts reach legacy observers
        // snippet: end
        return [fromLegacy, toLegacy]
    }

    @Suite("README examples")
    struct Examples {
        @Test("The testing example: a @MainActor view model's observers run when the test says so")
        @MainActor
        func testingExample() async {
            // snippet: begin
            await withMainActorStandIn { main in
                let hub = NotificationHub()
                hub.useMainActorStandIn(main)
                let model = ProfileViewModel(hub: hub, images: NoImages())
                hub.post(ProfileLoaded(name: "Ada"))
                await main.runUntilIdle()
                #expect(model.title == "Ada")
                hub.expectRegistered(ProfileLoaded.self, on: .mainQueue)
                main.expectNoPendingWork()
            }
            // snippet: end
        }

        @Test("The forwarding example bridges one post each way, without an echo")
        func forwardingExample() async {
            let hub = NotificationHub()
            let center = NotificationCenter()
            let legacySeen = Counter()
            let legacy = center.addObserver(forName: UserCreated.notificationName, object: nil, queue: nil) { _ in
                legacySeen.increment()
            }
            let typedSeen = Counter()
            let typed = hub.observe(UserCreated.self) { _ in typedSeen.increment() }
            let bridges = [
                hub.forward(UserCreated.self, fromCenter: center), hub.forward(UserCreated.self, toCenter: center),
            ]
            hub.post(UserCreated(userID: 7, status: 201))
            #expect(typedSeen.count == 1)
            #expect(legacySeen.count == 1)
            center.removeObserver(legacy)
            withExtendedLifetime((typed, bridges)) {}
        }

        @MainActor
        func streamsExample(hub: NotificationHub, statusBar: StatusBar) async {
            // snippet: begin
            hub.postAndRetain(SessionState(isLoggedIn: true))  // kept as the latest value
            let banner = hub.observe(SessionState.self, on: MainActor.shared, replayLatest: true) { state in
                statusBar.showSignedIn(state.isLoggedIn)  // the retained value first, then every change
            }

            for await state in hub.notifications(of: SessionState.self, bufferingPolicy: .bufferingNewest(100)) {
                print("signed in: \(state.isLoggedIn)")
            }
            // snippet: end
            withExtendedLifetime(banner) {}
        }
    }
}
