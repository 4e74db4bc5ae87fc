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

// The section "From MainActorMessage and AsyncMessage".

enum MigratingMessages {
    // snippet: begin
    final class Document: Sendable {}

    struct DocumentSaved: NotificationCenter.MainActorMessage, TypedNotification {
        typealias Subject = Document
        var pageCount: Int
    }
    // snippet: end

    @MainActor
    final class DocumentView {
        private(set) var shownPages: [Int] = []
        func showSaved(pages: Int) { shownPages.append(pages) }

        func observeBefore(document: Document) -> NotificationCenter.ObservationToken {
            // snippet: begin
            let token = NotificationCenter.default.addObserver(of: document, for: DocumentSaved.self) { message in
                self.showSaved(pages: message.pageCount)  // on the main actor
            }
            // Ends when you pass it to removeObserver(_:) or let go of it.
            // snippet: end
            return token
        }

        func observeAfter(hub: NotificationHub, document: Document) -> ObservationToken {
            // snippet: begin
            let observation = hub.observe(DocumentSaved.self, from: document, on: MainActor.shared) { note in
                self.showSaved(pages: note.pageCount)  // checked as @MainActor
            }
            // snippet: end
            return observation
        }
    }

    static func bridge(hub: NotificationHub, document: Document) -> Set<ObservationToken> {
        // snippet: begin
        let bridges: Set<ObservationToken> = [
            hub.forward(DocumentSaved.self, fromCenter: .default, subject: document),  // center → hub, with the subject
            hub.forward(DocumentSaved.self, toCenter: .default),  // hub → addObserver(of:for:) observers
        ]
        // snippet: end
        return bridges
    }

    // snippet: begin
    final class Selection {  // main-actor state, not Sendable
        var items: [Int] = []
    }

    struct SelectionChanged: NotificationCenter.MainActorMessage {
        typealias Subject = Document
        var selection: Selection
    }

    struct SelectionCount: TypedNotification {
        var count: Int
    }
    // snippet: pause

    static func convert(hub: NotificationHub) -> ObservationToken {
        // snippet: resume
        let bridge = hub.forward(SelectionChanged.self, fromCenter: .default, as: SelectionCount.self) { message in
            SelectionCount(count: message.selection.items.count)  // on the main actor
        }
        // snippet: end
        return bridge
    }

    static func postInBackground(hub: NotificationHub, document: Document) {
        // snippet: begin
        // In a nonisolated function. NotificationCenter's post of a MainActorMessage is @MainActor.
        hub.post(DocumentSaved(pageCount: 3), from: document)
        // snippet: end
    }

    @Suite("Migrating from MainActorMessage and AsyncMessage examples")
    struct Examples {
        @Test(
            "Foundation's post runs main-actor observers before it returns; Herald's postAndWait on the main actor does"
        )
        @MainActor
        func synchronousMainActorPost() {
            let hub = NotificationHub()
            let center = NotificationCenter()
            let document = Document()
            let view = DocumentView()
            let token = center.addObserver(of: document, for: DocumentSaved.self) {
                view.showSaved(pages: $0.pageCount)
            }
            let observation = view.observeAfter(hub: hub, document: document)
            // snippet: begin
            center.post(DocumentSaved(pageCount: 1), subject: document)  // Foundation: observers have run
            // snippet: pause
            #expect(view.shownPages == [1])
            // snippet: resume
            hub.post(DocumentSaved(pageCount: 2), from: document)  // Herald: main-actor observers run later
            // snippet: pause
            #expect(view.shownPages == [1])
            // snippet: resume
            hub.postAndWait(DocumentSaved(pageCount: 3), from: document)  // on the main actor: observers have run
            // snippet: end
            #expect(view.shownPages == [1, 2, 3])
            withExtendedLifetime((token, observation)) {}
        }

        @Test("The article's bridge and conversion forward each post once")
        @MainActor
        func bridgeAndConversion() async {
            // The article's calls, on a center of the test's own: Foundation's message observers hold
            // their center weakly, and the side table that gives NotificationCenter.default, which
            // lives until exit, is reported by LeakSanitizer.
            let hub = NotificationHub()
            let center = NotificationCenter()
            let document = Document()
            let view = DocumentView()
            let counts = DocumentView()
            let bridges: Set<ObservationToken> = [
                hub.forward(DocumentSaved.self, fromCenter: center, subject: document),
                hub.forward(DocumentSaved.self, toCenter: center),
                hub.forward(SelectionChanged.self, fromCenter: center, as: SelectionCount.self) { message in
                    SelectionCount(count: message.selection.items.count)
                },
            ]
            let before = center.addObserver(of: document, for: DocumentSaved.self) { message in
                view.showSaved(pages: message.pageCount)
            }
            let observation = hub.observe(SelectionCount.self, on: MainActor.shared) {
                counts.showSaved(pages: $0.count)
            }

            // Reaches the view from the center, and hub observers through the bridge.
            center.post(DocumentSaved(pageCount: 4), subject: document)
            hub.post(DocumentSaved(pageCount: 5), from: document)  // reaches the view through the bridge
            let selection = Selection()
            selection.items = [1, 2]
            center.post(SelectionChanged(selection: selection))
            await hub.postAndWait(SelectionCount(count: 0))  // the main-actor observer has run the earlier post

            #expect(view.shownPages == [4, 5])
            #expect(counts.shownPages == [2, 0])
            withExtendedLifetime((bridges, before, observation)) {}
        }

        @Test("A MainActorMessage is posted from off the main actor")
        func postOffMainActor() async {
            let hub = NotificationHub()
            let document = Document()
            let received = Counter()
            let observation = hub.observe(DocumentSaved.self, from: document) { _ in received.increment() }
            postInBackground(hub: hub, document: document)
            #expect(received.count == 1)
            withExtendedLifetime(observation) {}
        }
    }
}
