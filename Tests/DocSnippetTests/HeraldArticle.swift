import Herald
import Testing

// The Swift block of Herald.docc/Herald.md, compiled and run.

enum HeraldOverview {
    // snippet: begin
    struct UserCreated: TypedNotification {
        let userID: Int
        let status: Int
    }
    // snippet: pause
}

extension HeraldOverview {
    @Suite("Herald overview example")
    struct Example {
        @Test("The overview's main-actor observer dismisses the login view")
        @MainActor
        func overview() async {
            let loginView = View()
            // snippet: resume
            let hub = NotificationHub()
            let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
                loginView.dismiss()  // @MainActor, checked by the compiler
            }
            hub.post(UserCreated(userID: 7, status: 201))  // from any thread
            // Keep `token`: the observation ends when it goes away.
            // snippet: end
            await hub.postAndWait(UserCreated(userID: 8, status: 201))  // the first post ran before this one
            #expect(loginView.isHidden)
            withExtendedLifetime(token) {}
        }
    }
}
