import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import Synchronization
import Testing

/// The PostgreSQL server of the tests, from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER,
/// HERALD_PG_PASSWORD (optional) and HERALD_PG_DATABASE. `Scripts/postgres-test.sh` starts one.
enum TestServer {
    static let environment = ProcessInfo.processInfo.environment

    static let configuration: PostgresConnection.Configuration? = {
        guard let host = environment["HERALD_PG_HOST"], let user = environment["HERALD_PG_USER"] else {
            return nil
        }
        return PostgresConnection.Configuration(
            host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
            password: environment["HERALD_PG_PASSWORD"], database: environment["HERALD_PG_DATABASE"], tls: .disable)
    }()

    /// In CI (CI=true) the suites always run, and fail without a server; elsewhere they skip.
    static let shouldRun = configuration != nil || environment["CI"] == "true"

    static let missing = """
        no PostgreSQL server configured: set HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER and \
        HERALD_PG_DATABASE, or run Scripts/postgres-test.sh
        """

    static func requireConfiguration() throws -> PostgresConnection.Configuration {
        try #require(configuration, Comment(rawValue: missing))
    }

    /// A channel of its own for each test, so that tests can run in parallel.
    static func makeChannel() -> String {
        "herald_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    static let logger = Logger(label: "HeraldPostgresTests")

    /// A plain connection, for messages that no link would send.
    static func rawConnection() async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: try requireConfiguration(), id: 9_999, logger: logger)
    }
}

/// A thread-safe list of what arrived.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Mutex<[Value]>([])

    func append(_ value: Value) { storage.withLock { $0.append(value) } }

    var values: [Value] { storage.withLock { $0 } }

    var count: Int { storage.withLock { $0.count } }
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Waits until `condition` holds: the only way to see a message from another connection arrive.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(60), _ condition: @Sendable () -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        guard clock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

// MARK: - Notification types of the tests

struct UserCreated: WireNotification, NotificationConvertible, Equatable {
    static let notificationName = Notification.Name("UserCreated")
    var userID: Int
}

struct OrderPlaced: WireNotification, Equatable {
    static let wireName = "OrderPlaced"
    var orderID: Int
    var item: String
}

/// Posted by the other side after the values under test: since each origin's messages arrive in
/// order, and an echo would have been sent before it, its arrival proves that nothing else is coming.
struct Barrier: WireNotification, Equatable {
    static let wireName = "Barrier"
    var id: Int
}

struct Blob: WireNotification, Equatable {
    static let wireName = "Blob"
    var text: String
}

/// One hub with its link, observers and error list, as one process would have it.
struct Node {
    let hub = NotificationHub()
    let link: PostgresLink
    let errors = Recorder<PostgresLinkError>()
    let users = Recorder<UserCreated>()
    let orders = Recorder<OrderPlaced>()
    let barriers = Recorder<Barrier>()
    let blobs = Recorder<Blob>()
    let tokens: [ObservationToken]

    init(
        channel: String,
        sharing types: [any WireNotification.Type] = [UserCreated.self, OrderPlaced.self, Barrier.self]
    )
        async throws
    {
        let hub = self.hub
        link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        let errors = self.errors
        link.errorHandler = { errors.append($0) }
        for type in types { link.share(type) }
        let (users, orders, barriers, blobs) = (self.users, self.orders, self.barriers, self.blobs)
        tokens = [
            hub.observe(UserCreated.self) { users.append($0) },
            hub.observe(OrderPlaced.self) { orders.append($0) },
            hub.observe(Barrier.self) { barriers.append($0) },
            hub.observe(Blob.self) { blobs.append($0) },
        ]
    }

    /// Posts a barrier from `self` and waits until `other` has it: everything `self` sent before,
    /// and everything `other` would have echoed back before, has then arrived.
    func barrier(to other: Node, id: Int = 1) async throws {
        hub.post(Barrier(id: id))
        try await waitUntil("barrier \(id)") { other.barriers.values.contains(Barrier(id: id)) }
    }
}
