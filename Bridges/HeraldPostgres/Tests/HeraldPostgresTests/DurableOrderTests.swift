import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import Testing

/// Commit order is not id order: the reader never moves past a row that a transaction still open
/// may commit, and delivers in transaction-id order; a rollback leaves nothing, and no gap.
@Suite("Durable order", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DurableOrderTests {
    /// D and A begin writing (in that order) and stay open while B and C commit: nothing after D is
    /// readable until D ends; then every row arrives, in transaction-id order, none skipped.
    @Test func rowsOfTransactionsThatCommitOutOfOrderAreAllDeliveredInTransactionIdOrder() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "p"))
        let reader = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "r"))
        let link = poster.link
        try await withRawConnections(4) { connections in
            let (d, a, b, c) = (connections[0], connections[1], connections[2], connections[3])
            let logger = TestServer.logger
            try await d.query("BEGIN", logger: logger)
            try await link.post(UserCreated(userID: 1), in: d)  // D's transaction id comes first
            try await a.query("BEGIN", logger: logger)
            try await link.post(UserCreated(userID: 3), in: a)
            try await b.query("BEGIN", logger: logger)
            try await link.post(UserCreated(userID: 5), in: b)
            try await b.query("COMMIT", logger: logger)  // B commits while D and A are open
            try await link.post(UserCreated(userID: 4), in: a)
            try await a.query("COMMIT", logger: logger)  // A commits while D is open
            try await c.query("BEGIN", logger: logger)
            try await link.post(UserCreated(userID: 6), in: c)
            try await c.query("COMMIT", logger: logger)

            // Two whole reads after C's commit: B, A and C are committed, and none is delivered.
            try await waitForReads(of: reader.link, after: reader.link.statistics.logReads)
            #expect(reader.users.values.isEmpty && poster.users.values.isEmpty)

            try await link.post(UserCreated(userID: 2), in: d)
            try await d.query("COMMIT", logger: logger)
            try await waitUntil("all six") { reader.users.count >= 6 && poster.users.count >= 6 }
            reader.hub.post(Barrier(id: 1))
            try await waitUntil("the barrier") { poster.barriers.count == 1 }
            // D (1, 2), A (3, 4), B (5), C (6): by transaction id, each transaction's rows in post order.
            #expect(reader.userIDs == [1, 2, 3, 4, 5, 6])
            #expect(poster.userIDs == [1, 2, 3, 4, 5, 6])
            let positions = reader.deliveries.values.map(\.position)
            #expect(positions == positions.sorted())
            #expect(reader.deliveries.values.allSatisfy { $0.isTransactional })
            #expect(reader.errors.values.map(\.description) == [])
            #expect(poster.errors.values.map(\.description) == [])
        }
        await poster.link.close()
        await reader.link.close()
    }

    /// Rolled back: nothing travels, no observer runs anywhere, and no consumer reports a gap.
    @Test func aRolledBackPostTravelsNowhereAndLeavesNoGap() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "p"))
        let reader = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "r"))
        try await withRawConnection { connection in
            struct Abandoned: Error {}
            await #expect(throws: PostgresTransactionError.self) {
                try await connection.withTransaction(logger: TestServer.logger) { connection in
                    try await poster.link.post(UserCreated(userID: 1), in: connection)
                    try await poster.link.post(UserCreated(userID: 2), in: connection)
                    throw Abandoned()
                }
            }
            try await connection.withTransaction(logger: TestServer.logger) { connection in
                try await poster.link.post(UserCreated(userID: 3), in: connection)
            }
            poster.hub.post(UserCreated(userID: 4))  // an ordinary post, after the rolled-back ones
            poster.hub.post(Barrier(id: 1))
            try await waitUntil("the barrier") { reader.barriers.count == 1 && poster.users.count >= 2 }
            #expect(reader.userIDs == [3, 4])
            #expect(poster.userIDs.sorted() == [3, 4])
            #expect(reader.errors.values.map(\.description) == [])
            #expect(poster.errors.values.map(\.description) == [])
            #expect(reader.link.statistics.gaps == 0)
        }
        await poster.link.close()
        await reader.link.close()
    }

    /// Transaction ids are cluster-wide: a write transaction open in another database holds back
    /// every row written after it began; once it ends, they arrive within the poll interval,
    /// without a `NOTIFY`.
    @Test func aWriteTransactionInAnotherDatabaseHoldsRowsBackUntilItEnds() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poll = Duration.milliseconds(300)
        let poster = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "p", pollInterval: poll))
        let reader = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "r", pollInterval: poll))
        try await withRawConnection { raw in
            let database = "herald_other_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            try await raw.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: TestServer.logger)
            let base = try TestServer.requireConfiguration()
            try await withConnection(opening: {
                try await PostgresConnection.connect(
                    configuration: PostgresConnection.Configuration(
                        host: TestServer.environment["HERALD_PG_HOST"] ?? "127.0.0.1",
                        port: Int(TestServer.environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: base.username,
                        password: base.password, database: database, tls: .disable),
                    id: 9_998, logger: TestServer.logger)
            }) { other in
                try await other.query("BEGIN", logger: TestServer.logger)
                try await other.query("SELECT pg_current_xact_id()", logger: TestServer.logger)  // takes an id

                try await poster.link.post(UserCreated(userID: 1), in: raw)  // outside a transaction: commits now
                try await waitForReads(of: reader.link, after: reader.link.statistics.logReads)
                #expect(reader.users.values.isEmpty)

                let clock = ContinuousClock()
                try await other.query("COMMIT", logger: TestServer.logger)
                let ended = clock.now
                try await waitUntil("the row, after the other transaction ended") { reader.users.count == 1 }
                let elapsed = clock.now - ended
                // Within the poll interval, and a margin for a loaded machine.
                #expect(elapsed < poll + .seconds(3), "arrived \(elapsed) after the transaction ended")
                #expect(reader.userIDs == [1])
            }
            try await raw.query(
                PostgresQuery(unsafeSQL: "DROP DATABASE \(database) WITH (FORCE)"), logger: TestServer.logger)
        }
        await poster.link.close()
        await reader.link.close()
    }
}
