import Foundation
import Herald
import HeraldPostgres
import MetricsTestKit
import PostgresNIO
import Testing

/// Retention: a consumer further behind than the window is told exactly what it lost, then goes
/// on from the oldest row kept.
@Suite("Durable retention", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DurableRetentionTests {
    @Test func aConsumerBehindTheWindowIsToldTheExactRangeAndCountLostThenGoesOn() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "p"))
        let reader = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "r"))
        for id in 1...10 { poster.hub.post(UserCreated(userID: id)) }
        try await waitUntil("the first 10") { reader.users.count == 10 }
        await reader.link.close()

        for id in 11...30 { poster.hub.post(UserCreated(userID: id)) }
        try await waitUntil("30 rows in the log") { poster.link.statistics.sent == 30 }
        try await withRawConnection { raw in
            let table = "\"public\".\"\(log.table)\""
            let transactions = try await int64s(
                "SELECT tx::text::int8 FROM \(table) ORDER BY tx, position", on: raw)
            let positions = try await int64s("SELECT position FROM \(table) ORDER BY tx, position", on: raw)
            #expect(positions.count == 30)
            // Retention deletes only rows of transactions below the horizon: wait until a write
            // transaction that another test may hold open has ended.
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(120)
            let aboveHorizon = "SELECT count(*)::int8 FROM \(table) WHERE tx >= pg_snapshot_xmin(pg_current_snapshot())"
            while try await int64s(aboveHorizon, on: raw) != [0] {
                guard clock.now < deadline else { throw TimedOut(what: "the horizon to pass the log's rows") }
                try await waitForReads(of: poster.link, after: poster.link.statistics.logReads, count: 1)
            }
            // Keep 5: rows 11 to 25 go unread by the stopped consumer.
            try await raw.query(
                PostgresQuery(unsafeSQL: log.retentionStatement(maximumRows: 5, maximumAge: nil)),
                logger: TestServer.logger
            )
            #expect(try await int64s("SELECT count(*)::int8 FROM \(table)", on: raw) == [5])

            let metrics = TestMetrics()
            var options = try durableOptions(log: log, consumer: "r")
            options.metricsFactory = metrics
            let restarted = try await DurableNode(channel: channel, options: options)
            try await waitUntil("the 5 kept") { restarted.users.count == 5 }
            #expect(restarted.userIDs == Array(26...30))
            let errors = restarted.errors.values
            #expect(errors.map(\.code) == [.rowsDeleted])
            let error = try #require(errors.first)
            let first = DurablePosition(transaction: UInt64(transactions[10]), position: positions[10])
            let last = DurablePosition(transaction: UInt64(transactions[24]), position: positions[24])
            #expect(error.lostRange == first...last)
            #expect(error.lostCount == 15)
            #expect(error.found?.contains("15 rows deleted") == true)
            #expect(restarted.link.statistics.rowsLost == 15)
            #expect(metrics.counterTotal(label: "herald_postgres_log_rows_lost_total") == 15)
            await poster.link.close()
            await restarted.link.close()
        }
    }

    @Test func aLinkAppliesTheRetentionItIsGiven() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let retention = PostgresLink.Retention(maximumRows: 3, interval: .milliseconds(100))
        let node = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "p", retention: retention))
        for id in 1...10 { node.hub.post(UserCreated(userID: id)) }
        try await waitUntil("10 rows written") { node.link.statistics.sent == 10 }
        try await withRawConnection { raw in
            let table = "\"public\".\"\(log.table)\""
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(60)
            var count: [Int64] = []
            repeat {
                count = try await int64s("SELECT count(*)::int8 FROM \(table)", on: raw)
                if count == [3] { break }
                try await waitForReads(of: node.link, after: node.link.statistics.logReads, count: 1)
            } while clock.now < deadline
            #expect(count == [3])
            let deleted = try await int64s(
                "SELECT coalesce(sum(count), 0)::int8 FROM \(table.dropLast())_deletions\"", on: raw)
            #expect(deleted == [7])
        }
        await node.link.close()
    }
}
