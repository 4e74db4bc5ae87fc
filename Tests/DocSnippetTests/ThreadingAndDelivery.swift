import Dispatch
import Herald
import Synchronization
import Testing

// The Swift blocks of Herald.docc/ThreadingAndDelivery.md, in order, compiled and run.

private struct UserCreated: TypedNotification { let userID: Int }

private actor UserStore {
    private(set) var userIDs: [Int] = []
    private(set) var synced: [Int] = []
    func apply(_ note: UserCreated) { userIDs.append(note.userID) }
    func sync(_ userID: Int) async {
        await Task.yield()
        synced.append(userID)
    }
}

@Suite("Threading and delivery examples")
struct ThreadingAndDeliveryExamples {
    @Test("A main-actor observer and an actor observer both receive the post")
    @MainActor
    func mainActorAndActor() async {
        let hub = NotificationHub()
        let loginView = View()
        let store = UserStore()
        // snippet: begin
        let dismissal = hub.observe(UserCreated.self, on: MainActor.shared) { note in
            loginView.dismiss()
        }
        // snippet: end
        // snippet: begin
        let storing = hub.observe(UserCreated.self, on: store) { store, note in
            store.apply(note)
        }
        // snippet: end
        // snippet: begin
        let syncing = hub.observe(UserCreated.self, on: store) { store, note async in
            await store.sync(note.userID)  // the next UserCreated waits for this call to return
        }
        // snippet: end
        let report = await hub.postAndWait(UserCreated(userID: 7))
        #expect(report.deliveredCount == 3)
        #expect(loginView.isHidden)
        #expect(await store.userIDs == [7])
        #expect(await store.synced == [7])
        withExtendedLifetime((dismissal, storing, syncing)) {}
    }
}

enum ThreadingFamilies {
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

extension ThreadingAndDeliveryExamples {
    @Test("A protocol observer, a tap and a prioritised observer")
    func families() async throws {
        let hub = NotificationHub()
        let tracker = ThreadingFamilies.Tracker()
        let ledger = ThreadingFamilies.Ledger()
        let tokens = ThreadingFamilies.observe(
            hub: hub, analyticsQueue: DispatchQueue(label: "analytics"), logQueue: DispatchQueue(label: "log"),
            tracker: tracker, ledger: ledger)
        hub.post(ThreadingFamilies.SignedIn())
        hub.post(ThreadingFamilies.Purchased(cents: 300))
        try await hub.waitUntilIdle()
        #expect(tracker.sent.withLock { $0 } == ["signed_in", "purchased"])
        #expect(ledger.entries.withLock { $0 } == [300])
        withExtendedLifetime(tokens) {}
    }

    @Test("A progress bar observes the latest progress; a dashboard bounds its mailbox")
    @MainActor
    func mailboxPolicies() async throws {
        let hub = NotificationHub()
        let progressBar = ProgressBar()
        // snippet: begin
        let progress = hub.observe(DownloadProgress.self, on: MainActor.shared, bufferingPolicy: .latest) { note in
            progressBar.value = note.fraction  // the newest fraction; older pending ones were replaced
        }
        // snippet: end
        for step in 1...1_000 { hub.post(DownloadProgress(fraction: Double(step) / 1_000)) }
        try await hub.waitUntilIdle()
        #expect(progressBar.value == 1)
        #expect(progressBar.updates + progress.replacedCount == 1_000)

        let dashboard = Dashboard()
        let charts = DispatchQueue(label: "charts")
        // snippet: begin
        hub.observe(SensorReading.self, owner: dashboard, on: .queue(charts), bufferingPolicy: .bufferingNewest(1_000))
        {
            dashboard, reading in
            dashboard.plot(reading)
        }
        // Later, for the diagnostics screen: what the slow chart could not keep up with.
        let dropped = hub.registrations(of: SensorReading.self).reduce(0) { $0 + $1.droppedCount }
        // snippet: end
        #expect(dropped == 0)
        try await hub.waitUntilIdle()
        withExtendedLifetime(dashboard) {}
    }
}

private struct DownloadProgress: TypedNotification { let fraction: Double }
private struct SensorReading: TypedNotification { let value: Double }

@MainActor
private final class ProgressBar {
    private(set) var updates = 0
    var value = 0.0 {
        didSet { updates += 1 }
    }
}

private final class Dashboard: Sendable {
    func plot(_ reading: SensorReading) {}
}
