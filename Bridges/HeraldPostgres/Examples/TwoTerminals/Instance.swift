import Foundation
import Herald
import HeraldPostgres
import PostgresNIO

/// A notification that travels: `Codable`, with a wire name that every process agrees on.
struct UserCreated: WireNotification {
    static let wireName = "UserCreated"
    var userID: Int
}

@main
struct Instance {
    static func main() async throws {
        let hub = NotificationHub()
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: 5432, username: "app", password: "secret", database: "app", tls: .disable)

        // The types that travel, shared before the link listens: none of their messages is refused.
        let link = try await PostgresLink.connect(
            hub: hub, channel: "users", configuration: configuration, sharing: [UserCreated.self])

        let token = hub.observe(UserCreated.self) { note in
            print("user \(note.userID) created")  // from this instance and every other one
        }

        hub.post(UserCreated(userID: 7))  // local observers now, other instances soon
        try await Task.sleep(for: .seconds(60))  // … the service runs …

        token.cancel()
        await link.close()  // sends what was posted before, then disconnects
    }
}
