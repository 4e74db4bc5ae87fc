import Dispatch
import Herald
import Synchronization
import Testing

// The Swift blocks of Herald.docc/ObservingNotifications.md, in order, compiled (the first also run).

enum ObservingNotificationsArticle {
    struct UserCreated: TypedNotification {
        let userID: Int
    }

    protocol AuditEvent: TypedNotification {}
    struct SignedOut: AuditEvent {}

    final class Auditor: Sendable {
        let events = Mutex<Int>(0)
        func record(_ event: any AuditEvent) { events.withLock { $0 += 1 } }
    }

    @MainActor
    static func observe(
        hub: NotificationHub, loginView: View, logQueue: DispatchQueue, auditor: Auditor
    ) -> [ObservationToken] {
        // snippet: begin
        let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
            loginView.dismiss()  // @MainActor, checked by the compiler
        }
        let logging = hub.observeAll(on: .queue(logQueue)) { posted in
            print("\(posted.type)")  // every notification, as a tap
        }
        let audit = hub.observe(every: (any AuditEvent).self, owner: auditor, replayLatest: true) { auditor, event in
            auditor.record(event)  // ends when `auditor` is deallocated
        }
        // snippet: end
        return [token, logging, audit]
    }
}

@Test("Observing notifications: a main-actor observer, a tap and an owner's replaying family observer")
@MainActor
func observingNotificationsArticle() async throws {
    let hub = NotificationHub()
    let loginView = View()
    let auditor = ObservingNotificationsArticle.Auditor()
    hub.postAndRetain(ObservingNotificationsArticle.SignedOut())
    let tokens = ObservingNotificationsArticle.observe(
        hub: hub, loginView: loginView, logQueue: DispatchQueue(label: "log"), auditor: auditor)
    #expect(auditor.events.withLock { $0 } == 1)  // replayed inside observe, on the posting thread
    hub.post(ObservingNotificationsArticle.UserCreated(userID: 7))
    try await hub.waitUntilIdle()
    #expect(loginView.isHidden)
    withExtendedLifetime(tokens) {}
}

extension ObservingNotificationsArticle {
    @MainActor
    static func streams(hub: NotificationHub, statusBar: StatusBar) async {
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
