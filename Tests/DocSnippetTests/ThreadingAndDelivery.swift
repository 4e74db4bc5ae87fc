import Herald
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
