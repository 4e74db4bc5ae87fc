import Herald

struct UserCreated: TypedNotification { let userID: Int }

let hub = NotificationHub()
let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
    print("Welcome, user \(note.userID)")  // runs on the main actor, checked by the compiler
}

// Post from any thread: here, a background task. Awaiting it keeps this command-line program
// alive until the observer has run; in an app, the run loop keeps the main queue going anyway.
let report = await Task.detached {
    await hub.postAndWait(UserCreated(userID: 7))
}.value
print("Delivered to \(report.deliveredCount) observer")
