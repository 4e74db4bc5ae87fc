import Crypto
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing
import UnixSignals

// The Swift blocks of the bridge's README.md and of its DocC article that are not whole files.
// Scripts/check-doc-snippets.py checks that each region below equals its block.

enum SignedLinks {
    static func connect(
        hub: NotificationHub, configuration: PostgresConnection.Configuration, secret: [UInt8]
    ) async throws -> PostgresLink {
        // snippet: begin
        // import Crypto: the key is swift-crypto's SymmetricKey, the same 32 random bytes for every link
        let options = PostgresLink.Options(signingKey: SymmetricKey(data: secret))
        let link = try await PostgresLink.connect(
            hub: hub, channel: "users", configuration: configuration, sharing: [UserCreated.self], options: options)
        // snippet: end
        return link
    }
}

enum ServiceLinks {
    static func run(
        hub: NotificationHub, configuration: PostgresConnection.Configuration, logger: Logger
    )
        async throws
    {
        // snippet: begin
        // Posts made before run() wait for the connection.
        let link = try PostgresLink(
            hub: hub, channel: "users", configuration: configuration, sharing: [UserCreated.self])
        let group = ServiceGroup(services: [link], gracefulShutdownSignals: [.sigterm], logger: logger)
        try await group.run()  // on SIGTERM: sends what was posted before, closes, returns
        // snippet: end
    }
}

enum DurableLinks {
    static func post(
        id: Int, instance: String, hub: NotificationHub, configuration: PostgresConnection.Configuration,
        connection: PostgresConnection, logger: Logger,
        record: @escaping @Sendable (OrderPlaced, DurablePosition) -> Void
    ) async throws -> (PostgresLink, ObservationToken) {
        // snippet: begin
        // Observe before connecting: the consumer delivers its backlog as soon as the link starts.
        let orders = hub.observe(DurableDelivery<OrderPlaced>.self) { delivery in
            // The same `position` at every delivery of a row: keep it to skip one delivered again.
            record(delivery.notification, delivery.position)
        }
        var options = PostgresLink.Options()
        options.durability = try PostgresLink.Durability(log: try DurableLog(), consumer: "orders-\(instance)")
        let link = try await PostgresLink.connect(
            hub: hub, channel: "orders_wake", configuration: configuration, sharing: [OrderPlaced.self],
            options: options)

        // Enters the log if and only if the transaction commits; every hub, this one included, receives
        // it once it is committed.
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO orders (id) VALUES (\(id))", logger: logger)
            try await link.post(OrderPlaced(orderID: id, item: "book"), in: connection)
        }
        // snippet: end
        return (link, orders)
    }
}

enum SwitchingLinks {
    static func connect(
        instance: String, hub: NotificationHub, configuration: PostgresConnection.Configuration
    ) async throws -> PostgresLink {
        // snippet: begin
        // Deployment 1 of the switch; deployment 2: `.readingWithPlainCopies`; 3: `.reading`, the default.
        var durability = try PostgresLink.Durability(log: try DurableLog(), consumer: "orders-\(instance)")
        durability.phase = .writeOnly
        var options = PostgresLink.Options()
        options.durability = durability
        let link = try await PostgresLink.connect(
            hub: hub, channel: "orders", configuration: configuration, sharing: [OrderPlaced.self],
            options: options)
        // snippet: end
        return link
    }
}

/// Serialized: two of its tests create the default log's tables.
@Suite(
    "HeraldPostgres documentation", .serialized,
    .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DocSnippetTests {
    @Test func theSigningExampleLinksTwoHubsThatShareAKey() async throws {
        let configuration = try TestServer.requireConfiguration()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let (a, b) = (NotificationHub(), NotificationHub())
        let linkA = try await SignedLinks.connect(hub: a, configuration: configuration, secret: secret)
        let linkB = try await SignedLinks.connect(hub: b, configuration: configuration, secret: secret)
        let received = Recorder<UserCreated>()
        let token = b.observe(UserCreated.self) { received.append($0) }

        a.post(UserCreated(userID: 42))
        try await waitUntil("the signed user on B") { received.count == 1 }
        #expect(received.values == [UserCreated(userID: 42)])
        #expect(linkB.statistics.rejected == 0)
        token.cancel()
        await linkA.close()
        await linkB.close()
    }

    /// The raw connection is closed on every path (`withRawConnection`): released unclosed,
    /// postgres-nio traps, which would hide the failure.
    @Test func theDurableExampleDeliversTheCommittedOrderToItsOwnHub() async throws {
        let configuration = try TestServer.requireConfiguration()
        try await withRawConnection { connection in try await durableExample(configuration, connection) }
    }

    private func durableExample(
        _ configuration: PostgresConnection.Configuration, _ connection: PostgresConnection
    ) async throws {
        for statement in try DurableLog().migrations.flatMap(\.statements) {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestServer.logger)
        }
        try await connection.query("CREATE TABLE IF NOT EXISTS orders (id int)", logger: TestServer.logger)
        let hub = NotificationHub()
        let received = Recorder<OrderPlaced>()
        let token = hub.observe(OrderPlaced.self) { received.append($0) }
        let id = Int.random(in: 1...1_000_000)
        let positions = Recorder<DurablePosition>()
        let (link, orders) = try await DurableLinks.post(
            id: id, instance: UUID().uuidString, hub: hub, configuration: configuration, connection: connection,
            logger: TestServer.logger, record: { _, position in positions.append(position) })
        try await waitUntil("the committed order") { received.count == 1 && positions.count == 1 }
        #expect(received.values == [OrderPlaced(orderID: id, item: "book")])
        orders.cancel()
        var rows: [Int] = []
        for try await value in try await connection.query(
            "SELECT id FROM orders WHERE id = \(id)", logger: TestServer.logger
        ).decode(Int.self) {
            rows.append(value)
        }
        #expect(rows == [id])
        token.cancel()
        await link.close()
    }

    @Test func theSwitchExamplesWriteOnlyLinkSharesItsChannelWithAPlainLink() async throws {
        let configuration = try TestServer.requireConfiguration()
        try await withRawConnection { connection in try await switchExample(configuration, connection) }
    }

    private func switchExample(
        _ configuration: PostgresConnection.Configuration, _ connection: PostgresConnection
    ) async throws {
        for statement in try DurableLog().migrations.flatMap(\.statements) {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestServer.logger)
        }
        let (plainHub, switchingHub) = (NotificationHub(), NotificationHub())
        let (plainOrders, switchingOrders) = (Recorder<OrderPlaced>(), Recorder<OrderPlaced>())
        let tokens = [
            plainHub.observe(OrderPlaced.self) { plainOrders.append($0) },
            switchingHub.observe(OrderPlaced.self) { switchingOrders.append($0) },
        ]
        let plain = try await PostgresLink.connect(
            hub: plainHub, channel: "orders", configuration: configuration, sharing: [OrderPlaced.self])
        let link = try await SwitchingLinks.connect(
            instance: UUID().uuidString, hub: switchingHub, configuration: configuration)
        plainHub.post(OrderPlaced(orderID: 1, item: "from the plain link"))
        switchingHub.post(OrderPlaced(orderID: 2, item: "from the write-only link"))
        try await waitUntil("each the other's") { plainOrders.count == 2 && switchingOrders.count == 2 }
        #expect(plainOrders.values.map(\.orderID).sorted() == [1, 2])
        #expect(switchingOrders.values.map(\.orderID).sorted() == [1, 2])
        #expect(plain.statistics.rejected == 0 && link.statistics.rejected == 0)
        for token in tokens { token.cancel() }
        await plain.close()
        await link.close()
    }
}
