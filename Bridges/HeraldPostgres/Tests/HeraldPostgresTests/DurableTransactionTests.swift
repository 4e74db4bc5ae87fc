import Foundation
import Herald
import HeraldPostgres
import MetricsTestKit
import PostgresNIO
import Testing

/// Posts inside the application's transaction: they enter the log if and only if it commits, and
/// the poster's own observers run only once the row is committed.
@Suite("Durable transactional posts", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DurableTransactionTests {
    @Test func aTransactionalPostsOwnObserversRunOnlyAfterTheCommit() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let metrics = TestMetrics()
        var options = try durableOptions(log: log, consumer: "p")
        options.metricsFactory = metrics
        let poster = try await DurableNode(channel: channel, options: options)
        let reader = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "r"))
        try await withRawConnection { connection in
            try await connection.query("BEGIN", logger: TestServer.logger)
            try await connection.query("CREATE TEMPORARY TABLE orders (id int)", logger: TestServer.logger)
            try await connection.query("INSERT INTO orders VALUES (7)", logger: TestServer.logger)
            try await poster.link.post(UserCreated(userID: 7), in: connection)

            // The row is written and not committed: two whole reads later, no observer has run.
            try await waitForReads(of: poster.link, after: poster.link.statistics.logReads)
            try await waitForReads(of: reader.link, after: reader.link.statistics.logReads)
            #expect(poster.users.values.isEmpty && reader.users.values.isEmpty)

            try await connection.query("COMMIT", logger: TestServer.logger)
            try await waitUntil("both hubs have it") { poster.users.count == 1 && reader.users.count == 1 }
            poster.hub.post(Barrier(id: 1))
            try await waitUntil("the barrier") { reader.barriers.count == 1 }
            #expect(poster.userIDs == [7] && reader.userIDs == [7])  // once each
            let delivery = try #require(poster.deliveries.values.first)
            #expect(delivery.isTransactional && delivery.origin == poster.link.origin)
            #expect(poster.link.statistics.logRowsRead >= 1)
            #expect(metrics.counterTotal(label: "herald_postgres_log_rows_read_total") >= 1)
            #expect(
                try metrics.expectGauge("herald_postgres_log_lag_rows", [("channel", channel)]).lastValue == 0)
        }
        await poster.link.close()
        await reader.link.close()
    }

    @Test func aPostInATransactionOnAPlainLinkIsRefused() async throws {
        let node = try await Node(channel: TestServer.makeChannel())
        try await withRawConnection { connection in
            let error = await #expect(throws: PostgresLinkError.self) {
                try await node.link.post(UserCreated(userID: 1), in: connection)
            }
            #expect(error?.code == .notDurable)
        }
        await node.link.close()
    }

    /// Rows have no 8,000-byte bound.
    @Test func aDurablePayloadIsNotBoundedByTheNotifyLimit() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "p"))
        let reader = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "r"))
        let blobs = Recorder<Blob>()
        reader.link.share(Blob.self)
        poster.link.share(Blob.self)
        let token = reader.hub.observe(Blob.self) { blobs.append($0) }
        let text = String(repeating: "é", count: 20_000)
        poster.hub.post(Blob(text: text))
        try await waitUntil("the blob") { blobs.count == 1 }
        #expect(blobs.values == [Blob(text: text)])
        #expect(poster.errors.values.map(\.description) == [])
        #expect(reader.errors.values.map(\.description) == [])
        withExtendedLifetime(token) {}
        await poster.link.close()
        await reader.link.close()
    }
}
