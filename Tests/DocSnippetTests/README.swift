import Foundation
import Herald
import HeraldTesting
import Synchronization
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

enum ReadmeFamilies {
    // snippet: begin
    protocol AnalyticsEvent: TypedNotification { var name: String { get } }
    struct SignedIn: AnalyticsEvent { let name = "signed_in" }
    struct Purchased: AnalyticsEvent {
        let name = "purchased"
        let cents: Int
    }
    // snippet: pause

    static func observe(
        hub: NotificationHub, analyticsQueue: DispatchQueue, logQueue: DispatchQueue, tracker: Tracker,
        ledger: Ledger
    ) -> [ObservationToken] {
        // snippet: resume
        let analytics = hub.observe(every: (any AnalyticsEvent).self, on: .queue(analyticsQueue)) { event in
            tracker.send(event.name)  // SignedIn, Purchased and every AnalyticsEvent to come
        }
        let logging = hub.observeAll(on: .queue(logQueue)) { posted in
            print("\(posted.type): \(posted.notification)")  // every notification of the hub
        }
        let audit = hub.observe(Purchased.self, priority: 100) { purchase in
            ledger.record(purchase.cents)  // before the other posting-thread observers of Purchased
        }
        // snippet: end
        return [analytics, logging, audit]
    }

    final class Tracker: Sendable {
        let sent = Mutex<[String]>([])
        func send(_ name: String) { sent.withLock { $0.append(name) } }
    }

    final class Ledger: Sendable {
        let entries = Mutex<[Int]>([])
        func record(_ cents: Int) { entries.withLock { $0.append(cents) } }
    }
}

@Test("README: a protocol observer, a tap and a prioritised observer")
func readmeFamilies() async throws {
    let hub = NotificationHub()
    let tracker = ReadmeFamilies.Tracker()
    let ledger = ReadmeFamilies.Ledger()
    let tokens = ReadmeFamilies.observe(
        hub: hub, analyticsQueue: DispatchQueue(label: "analytics"), logQueue: DispatchQueue(label: "log"),
        tracker: tracker, ledger: ledger)
    hub.post(ReadmeFamilies.SignedIn())
    hub.post(ReadmeFamilies.Purchased(cents: 300))
    try await hub.waitUntilIdle()
    #expect(tracker.sent.withLock { $0 } == ["signed_in", "purchased"])
    #expect(ledger.entries.withLock { $0 } == [300])
    withExtendedLifetime(tokens) {}
}
