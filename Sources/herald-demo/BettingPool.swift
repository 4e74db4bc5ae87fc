import Foundation
import Herald

// MARK: - Notifications: typed, Sendable values instead of userInfo dictionaries

/// Posted by the API client when the server has created a user.
///
/// It is also a Foundation notification for legacy code: being `Codable`, it converts to and from
/// a `Notification` whose user info holds its properties (`"userID"`, `"name"`, `"status"`).
struct UserCreated: NotificationConvertible, Codable {
    static let notificationName = Notification.Name("BettingPoolUserCreated")

    let userID: Int
    let name: String
    let status: Int
}

/// Posted by the API client when a user has joined a betting pool.
struct PoolJoined: TypedNotification {
    struct Pool: Sendable {
        let id: Int
        let title: String
        let members: Int
    }

    let userID: Int
    let pool: Pool
    let stakeInCents: Int
}

/// Posted by the API client when a pool's odds change.
struct OddsChanged: TypedNotification {
    let poolID: Int
    let odds: Double
}

/// Posted when a bet is placed; one of its observers rejects it.
struct BetPlaced: TypedNotification {
    let userID: Int
    let amountInCents: Int
}

// MARK: - The API client: blocking calls on a BackgroundQueue

/// A "betting pool" web-service client. Each call blocks a background thread for the duration of
/// its request, then posts what it learned as a typed notification, from that background thread.
final class BettingAPIClient: Sendable {
    static let queueName = "betting-api"

    let hub: NotificationHub
    let queue: BackgroundQueue

    init(hub: NotificationHub) throws {
        self.hub = hub
        queue = try BackgroundQueue(name: Self.queueName, maxConcurrentTasks: 2)
    }

    /// `POST /users`: creates a user, then posts ``UserCreated``.
    func createUser(named name: String) async throws -> Int {
        try await queue.performAndWait { [hub] in
            let (status, userID) = Self.request("POST /users {\"name\": \"\(name)\"}", reply: (201, 7))
            hub.post(UserCreated(userID: userID, name: name, status: status))
            return userID
        }
    }

    /// `POST /pools/:id/members`: joins a pool, then posts ``PoolJoined``.
    func joinPool(_ poolID: Int, userID: Int, stakeInCents: Int) async throws {
        try await queue.performAndWait { [hub] in
            _ = Self.request("POST /pools/\(poolID)/members {\"user\": \(userID)}", reply: (200, 0))
            let pool = PoolJoined.Pool(id: poolID, title: "World Cup final", members: 12)
            hub.post(PoolJoined(userID: userID, pool: pool, stakeInCents: stakeInCents))
        }
    }

    /// Stands in for a blocking HTTP round trip: prints the request and its status.
    private static func request(_ line: String, reply: (status: Int, id: Int)) -> (status: Int, id: Int) {
        Thread.sleep(forTimeInterval: 0.02)  // simulated network latency, on a background thread
        say("API", "\(line) → \(reply.status)")
        return reply
    }
}

// MARK: - The UI: main-actor views

/// A rectangle, passed by value to the main thread (the `NSValue(cgRect:)` of old).
struct Frame: Sendable, Equatable, CustomStringConvertible {
    var x, y, width, height: Double

    var description: String {
        "(\(Int(x)), \(Int(y)), \(Int(width))×\(Int(height)))"
    }
}

/// A view that only the main actor may touch.
@MainActor
final class BetSlipView {
    var frame = Frame(x: 0, y: 0, width: 0, height: 0)
    var isHidden = true
}

/// The pool screen: it observes the hub on `MainActor.shared`, so its handlers are `@MainActor`
/// closures, checked by the compiler, that may touch views directly.
@MainActor
final class PoolScreen {
    private(set) var title = "Sign up"
    private var observations: Set<ObservationToken> = []

    init(hub: NotificationHub) {
        hub.observe(UserCreated.self, on: MainActor.shared) { [weak self] user in
            self?.title = "Welcome, \(user.name)"
            say("UI", "UserCreated → title “Welcome, \(user.name)” (user #\(user.userID), HTTP \(user.status))")
        }
        .store(in: &observations)
        hub.observe(PoolJoined.self, on: MainActor.shared) { [weak self] joined in
            self?.title = joined.pool.title
            let stake = String(format: "%.2f", Double(joined.stakeInCents) / 100)
            say("UI", "PoolJoined  → “\(joined.pool.title)”, \(joined.pool.members) members, stake $\(stake)")
        }
        .store(in: &observations)
    }
}

// MARK: - The network thread: one socket, many callers

/// A connection whose state lives on the network thread: the actor is pinned to the
/// `DeliveryThread`, so every write runs there, one at a time, whoever calls it.
actor BettingSocket {
    private let thread: DeliveryThread
    private var written: [String] = []

    init(thread: DeliveryThread) {
        self.thread = thread
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        thread.asUnownedSerialExecutor()
    }

    /// Writes one frame to the (simulated) socket and returns its sequence number.
    func write(_ frame: String, from caller: String) -> Int {
        written.append(frame)
        say("NET", "write #\(written.count) \(frame.padding(toLength: 22, withPad: " ", startingAt: 0)) from \(caller)")
        return written.count
    }

    /// Every frame written so far, in order.
    var frames: [String] { written }
}
