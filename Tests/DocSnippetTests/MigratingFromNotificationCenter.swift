import Foundation
import Herald
import Testing

// The Swift blocks of Herald.docc/MigratingFromNotificationCenter.md, in order.

// snippet: begin
extension Notification.Name {
    static let userCreated = Notification.Name("UserCreatedNotification")
}
// userInfo keys: "userID" (Int), "status" (Int), "homePage" (URL, optional)
// snippet: end

enum Migrating {
    // snippet: begin
    struct UserCreated: NotificationConvertible, Codable {
        static let notificationName = Notification.Name("UserCreatedNotification")

        var userID: Int
        var status: Int
        var homePage: URL?
    }
    // snippet: end

    final class Session: Sendable {}

    @MainActor
    final class WelcomeScreen {
        private(set) var welcomed: [Int] = []
        func showWelcome(userID: Int, status: Int) { welcomed.append(userID) }

        func postBefore(session: Session) {
            // snippet: begin
            NotificationCenter.default.post(
                name: .userCreated, object: session, userInfo: ["userID": 7, "status": 201])
            // snippet: end
        }

        func postAfter(hub: NotificationHub, session: Session) {
            // snippet: begin
            hub.post(UserCreated(userID: 7, status: 201), from: session)
            // snippet: end
        }

        func observeBefore(session: Session) {
            // snippet: begin
            let token = NotificationCenter.default.addObserver(
                forName: .userCreated, object: session, queue: .main
            ) { notification in
                guard let userID = notification.userInfo?["userID"] as? Int,
                    let status = notification.userInfo?["status"] as? Int
                else { return }  // a wrong type fails silently
                MainActor.assumeIsolated { self.showWelcome(userID: userID, status: status) }
            }
            // … later, exactly once:
            NotificationCenter.default.removeObserver(token)
            // snippet: end
        }

        func observeAfter(hub: NotificationHub, session: Session) -> ObservationToken {
            // snippet: begin
            let observation = hub.observe(UserCreated.self, from: session, on: MainActor.shared) { note in
                self.showWelcome(userID: note.userID, status: note.status)  // checked as @MainActor
            }
            // Ends when you call observation.cancel() or let go of it.
            // snippet: end
            return observation
        }
    }

    static func migratingPostOnMainBefore() {
        // snippet: begin
        DispatchQueue.main.async {
            NotificationCenter.default.post(name: .userCreated, object: nil, userInfo: ["userID": 7, "status": 201])
        }
        // snippet: end
    }

    @Suite("Migrating from NotificationCenter examples")
    struct Examples {
        @Test("The main-actor observer replaces a main-thread post")
        @MainActor
        func mainThreadPosting() async {
            let hub = NotificationHub()
            let loginView = View()
            // snippet: begin
            let dismissal = hub.observe(UserCreated.self, on: MainActor.shared) { note in
                loginView.dismiss()  // runs on the main actor
            }

            hub.post(UserCreated(userID: 7, status: 201))  // from any thread
            // snippet: end
            await hub.postAndWait(UserCreated(userID: 8, status: 201))
            #expect(loginView.isHidden)
            withExtendedLifetime(dismissal) {}
        }
    }

}

// snippet: begin
extension UserInfoKey {
    static var status: UserInfoKey<Int> { .init("status") }
}
// snippet: pause

extension Migrating {
    @Suite("Migrating from NotificationCenter examples, continued")
    struct MoreExamples {
        @Test("Typed keys read and build user info")
        func typedKeys() throws {
            let notification = Notification(name: .userCreated, object: nil, userInfo: ["status": 201])
            // snippet: resume
            let status = notification.userInfo[.status]  // Int?, nil when missing or of another type
            let exact = try notification.value(for: .status)  // Int, or an error that says why

            let userInfo = UserInfoBuilder()
                .setting(.status, to: 201)
                .userInfo
            // snippet: end
            #expect(status == 201)
            #expect(exact == 201)
            #expect(userInfo.count == 1)
        }

        @Test("The observer after migration is called only for its session, on the main actor")
        @MainActor
        func observeAfter() async {
            let hub = NotificationHub()
            let screen = WelcomeScreen()
            let session = Session()
            let token = screen.observeAfter(hub: hub, session: session)
            screen.postAfter(hub: hub, session: session)
            hub.post(UserCreated(userID: 8, status: 201), from: Session())
            await hub.postAndWait(UserCreated(userID: 9, status: 201), from: session)
            #expect(screen.welcomed == [7, 9])
            withExtendedLifetime(token) {}
        }

        @Test("Bridging both ways")
        func bridging() {
            let hub = NotificationHub()
            // snippet: begin
            let bridges: Set<ObservationToken> = [
                hub.forward(UserCreated.self, fromCenter: .default),  // legacy posts → typed observers
                hub.forward(UserCreated.self, toCenter: .default),  // typed posts → legacy observers
            ]
            // snippet: end
            #expect(bridges.count == 2)
        }

        @Test("Bridging both ways delivers one post to each side, without an echo")
        func bridgingWithoutEcho() {
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
    }
}

@MainActor
func migratingPerformingWork(database: DispatchQueue, store: Store, view: View, file: URL) throws {
    // snippet: begin
    DeliveryTarget.queue(database).perform { store.vacuum() }  // always enqueues
    let rows = try DeliveryTarget.queue(database).performAndWait { try store.count() }
    MainActor.perform(after: .milliseconds(300)) { hideToast() }  // @MainActor closure
    let frame = MainActor.performAndWait { view.frame }  // @MainActor closure
    let digest = BackgroundQueue.shared.enqueue { try sha256(of: file) }  // a BackgroundTask
    // snippet: end
    _ = (rows, frame, digest)
}
