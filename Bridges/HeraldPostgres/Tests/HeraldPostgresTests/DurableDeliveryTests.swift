import Dispatch
import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import Synchronization
import Testing

/// Durable consumers against a real server: every row once per consumer, in the log's order,
/// across lost connections and restarts; one live link per consumer name; where new consumers
/// start; a backlog read in batches; what a crash between delivery and storing the position does.
@Suite("Durable delivery", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DurableDeliveryTests {
    @Test func everyConsumerReceivesEveryPostOnceInPostOrderAndThePosterItsOwnOnce() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let a = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "a"))
        let b = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "b"))
        for id in 1...200 { a.hub.post(UserCreated(userID: id)) }
        for id in 1_001...1_050 { b.hub.post(UserCreated(userID: id)) }
        try await waitUntil("both received everything") { a.users.count >= 250 && b.users.count >= 250 }
        a.hub.post(Barrier(id: 1))
        b.hub.post(Barrier(id: 2))
        try await waitUntil("the barriers") { a.barriers.count == 2 && b.barriers.count == 2 }

        // Each post once: the poster's observers inside `post`, every other hub through its consumer.
        #expect(a.userIDs.filter { $0 <= 200 } == Array(1...200))
        #expect(a.userIDs.filter { $0 > 1_000 } == Array(1_001...1_050))
        #expect(b.userIDs.filter { $0 <= 200 } == Array(1...200))
        #expect(b.userIDs.filter { $0 > 1_000 } == Array(1_001...1_050))
        // Read rows come with their positions, in the log's order.
        let positions = b.deliveries.values.map(\.position)
        #expect(positions.count == 200 && positions == positions.sorted())
        #expect(Set(b.deliveries.values.map(\.origin)) == [a.link.origin])
        #expect(a.errors.values.map(\.description) == [])
        #expect(b.errors.values.map(\.description) == [])
        await a.link.close()
        await b.link.close()
    }

    @Test func aConsumerCatchesUpAfterItsReadingConnectionWasTerminated() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let a = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "a"))
        let slow = PostgresLink.Reconnection(initialDelay: .milliseconds(300), maximumDelay: .seconds(1))
        let b = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "b", reconnection: slow))
        for id in 1...20 { a.hub.post(UserCreated(userID: id)) }
        try await waitUntil("the first 20") { b.users.count == 20 }

        let terminated = try await withRawConnection { raw in try await terminateReader(of: "b", in: log, on: raw) }
        #expect(terminated == 1)
        // Posted while B's reader is down (it waits 300 ms before reconnecting).
        for id in 21...50 { a.hub.post(UserCreated(userID: id)) }
        do {
            try await waitUntil("B reconnected and caught up") { b.users.count >= 50 && b.link.statistics.outages >= 1 }
        } catch {
            Issue.record(
                "\(error): \(b.users.count) received, \(b.link.statistics), errors \(b.errors.values.map(\.description))"
            )
        }
        a.hub.post(Barrier(id: 1))
        try await waitUntil("the barrier") { b.barriers.count == 1 }

        #expect(b.userIDs == Array(1...50))  // exactly once, in order
        #expect(b.link.statistics.reconnections >= 1)
        #expect(!b.errors.values.isEmpty && b.errors.values.allSatisfy { $0.code == .connectionLost })
        await a.link.close()
        await b.link.close()
    }

    @Test func aConsumerResumesAfterItsLinkRestartsWithTheSameName() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let a = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "a"))
        let b = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "b"))
        for id in 1...10 { a.hub.post(UserCreated(userID: id)) }
        try await waitUntil("the first 10") { b.users.count == 10 }
        await b.link.close()

        for id in 11...40 { a.hub.post(UserCreated(userID: id)) }
        a.hub.post(Barrier(id: 1))
        try await waitUntil("A's posts in the log") { a.link.statistics.sent == 41 }
        // The same consumer name, in a new process: it resumes after what the first one read.
        let restarted = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "b"))
        try await waitUntil("the barrier") { restarted.barriers.count == 1 }
        #expect(restarted.userIDs == Array(11...40))
        #expect(restarted.errors.values.map(\.description) == [])
        await a.link.close()
        await restarted.link.close()
    }

    @Test func aSecondLiveLinkWithTheSameConsumerNameIsRefused() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let first = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "shared"))
        let error = await #expect(throws: PostgresLinkError.self) {
            _ = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "shared"))
        }
        #expect(error?.code == .consumerInUse)
        #expect(error?.found?.contains("\"shared\"") == true)
        await first.link.close()
        // Once the first has stopped, the name is free again.
        let second = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "shared"))
        await second.link.close()
    }

    @Test func newConsumersStartAtTheEarliestTheLatestOrAfterAPosition() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let a = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "a"))
        for id in 1...10 { a.hub.post(UserCreated(userID: id)) }
        let earliest = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "earliest", start: .earliest))
        try await waitUntil("the earliest consumer has all 10") { earliest.users.count == 10 }
        #expect(earliest.userIDs == Array(1...10))

        let fifth = try #require(earliest.deliveries.values.first { $0.notification.userID == 5 })
        let after = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "after", start: .after(fifth.position)))
        let latest = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "latest", start: .latest))
        a.hub.post(UserCreated(userID: 11))
        try await waitUntil("both have 11") { after.userIDs.last == 11 && latest.userIDs.last == 11 }
        #expect(after.userIDs == Array(6...11))
        #expect(latest.userIDs == [11])
        for node in [a, earliest, after, latest] { await node.link.close() }
    }

    /// 100,000 rows written before the consumer starts, read in batches of 1,000: every one once, in
    /// order, with at most one batch in memory (a million work the same way, a batch at a time).
    @Test func aBacklogOfAHundredThousandRowsIsReadInBatchesInOrder() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        try await withRawConnection { raw in
            for statement in log.migrations.flatMap(\.statements) {
                try await raw.query(PostgresQuery(unsafeSQL: statement), logger: TestServer.logger)
            }
            let origin = UUID().uuidString
            try await raw.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO "public"."\(log.table)" (origin, incarnation, sequence, type, payload) \
                        SELECT '\(origin)', '0123456789abcdef', g, 'UserCreated', \
                        '{"version":3,"origin":"\(origin)","incarnation":"0123456789abcdef","started":1,"sequence":' \
                        || g || ',"count":1,"batch":[{"type":"UserCreated","payload":{"userID":' || g || '}}]}' \
                        FROM generate_series(1, 100000) AS g
                        """), logger: TestServer.logger)
            let b = try await DurableNode(
                channel: channel,
                options: try durableOptions(log: log, consumer: "b", start: .earliest, batchSize: 1_000))
            try await waitUntil("100,000 rows", timeout: .seconds(600)) { b.users.count >= 100_000 }
            #expect(b.userIDs == Array(1...100_000))
            #expect(b.link.statistics.logRowsRead == 100_000)
            #expect(b.link.statistics.logReads >= 100)
            // The position is stored within the poll interval after the last row.
            let last = try await int64s("SELECT max(position) FROM \"public\".\"\(log.table)\"", on: raw)
            var stored: [Int64] = []
            for _ in 0..<100 {
                stored = try await int64s(
                    "SELECT position FROM \"public\".\"\(log.table)_consumers\" WHERE name = 'b'", on: raw)
                if stored == last { break }
                try await waitForReads(of: b.link, after: b.link.statistics.logReads, count: 1)
            }
            #expect(stored == last)
            await b.link.close()
        }
    }

    /// At least once across a crash: a process that delivered rows but had not stored its position
    /// yet dies; the next process of that consumer delivers those rows again, with the same
    /// positions, by which a handler recognises them.
    @Test func rowsDeliveredButNotStoredBeforeACrashAreDeliveredAgainWithTheSamePositions() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let a = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "a"))
        // The "crashing" process never reconnects within the test.
        let never = PostgresLink.Reconnection(initialDelay: .seconds(600), maximumDelay: .seconds(600))
        let b = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "c", reconnection: never))
        let queue = DispatchQueue(label: "blocking handler")
        let release = DispatchSemaphore(value: 0)
        let (reached, reachedContinuation) = AsyncStream.makeStream(of: Int.self)
        let token = b.hub.observe(DurableDelivery<UserCreated>.self, on: .queue(queue)) { delivery in
            if delivery.notification.userID == 3 {
                reachedContinuation.yield(3)
                release.wait()
            }
        }
        try await withRawConnection { raw in
            let before = try await int64s(
                "SELECT position FROM \"public\".\"\(log.table)_consumers\" WHERE name = 'c'", on: raw)
            // One transaction: the five rows become readable together, and are read in one batch.
            try await withRawConnection { poster in
                try await poster.withTransaction(logger: TestServer.logger) { connection in
                    for id in 1...5 { try await a.link.post(UserCreated(userID: id), in: connection) }
                }
            }
            var iterator = reached.makeAsyncIterator()
            #expect(await iterator.next() == 3)
            // Rows 1 to 3 are delivered, and the position not stored yet: the process "dies" now.
            #expect(
                try await int64s(
                    "SELECT position FROM \"public\".\"\(log.table)_consumers\" WHERE name = 'c'", on: raw) == before)
            #expect(try await terminateReader(of: "c", in: log, on: raw) == 1)
            release.signal()
            // The dead process may have delivered rows 4 and 5 too, or stopped when its connection went.
            try await waitUntil("the dead process's handler returned") { b.deliveries.count >= 3 }

            let next = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "c"))
            try await waitUntil("the next process has the rows") { next.deliveries.count == 5 }
            #expect(next.userIDs == Array(1...5))
            let delivered = b.deliveries.values
            #expect(next.deliveries.values.prefix(delivered.count).map(\.position) == delivered.map(\.position))
            #expect(next.deliveries.values.prefix(delivered.count).map(\.sequence) == delivered.map(\.sequence))
            withExtendedLifetime(token) {}
            await b.link.close()
            await next.link.close()
            await a.link.close()
        }
    }
}
