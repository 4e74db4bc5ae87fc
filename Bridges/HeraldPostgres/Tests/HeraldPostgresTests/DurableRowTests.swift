import Crypto
import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import Testing

/// What a consumer makes of the rows it reads: signatures checked, freshness not (positions guard
/// against replay); where a consumer that starts by time begins; which consumers expire.
@Suite("Durable rows", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DurableRowTests {
    /// Writes `envelopes` straight into the log, as rows of one transaction, in order.
    func append(_ envelopes: [String], to log: DurableLog, on connection: PostgresConnection) async throws {
        try await connection.query("BEGIN", logger: TestServer.logger)
        for (index, envelope) in envelopes.enumerated() {
            try await connection.query(
                """
                INSERT INTO "public".\(unescaped: "\"\(log.table)\"") (origin, incarnation, sequence, type, payload) \
                VALUES (\(UUID())::uuid, '0123456789abcdef', \(index + 1), 'UserCreated', \(envelope))
                """, logger: TestServer.logger)
        }
        try await connection.query("COMMIT", logger: TestServer.logger)
    }

    func envelope(userID: Int, origin: UUID, sequence: Int) -> String {
        #"{"version":3,"origin":"\#(origin.uuidString)","incarnation":"0123456789abcdef","started":1,"sequence":\#(sequence),"count":1,"batch":[{"type":"UserCreated","payload":{"userID":\#(userID)}}]}"#
    }

    /// A signed row issued an hour ago is delivered (a freshness window would refuse it: catch-up
    /// rows are old by design); an unsigned row and a forged one are refused, with their errors.
    @Test func signedRowsAreCheckedButNotForFreshness() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let key = SymmetricKey(size: .bits256)
        try await withRawConnection { raw in
            for statement in log.migrations.flatMap(\.statements) {
                try await raw.query(PostgresQuery(unsafeSQL: statement), logger: TestServer.logger)
            }
            let origin = UUID()
            let old = signedEnvelope(
                envelope(userID: 1, origin: origin, sequence: 1), key: key, channel: channel,
                issued: Date().addingTimeInterval(-3_600))
            let unsigned = envelope(userID: 2, origin: origin, sequence: 2)
            let forged = signedEnvelope(
                envelope(userID: 3, origin: origin, sequence: 3), key: SymmetricKey(size: .bits256), channel: channel)
            let fresh = signedEnvelope(envelope(userID: 4, origin: origin, sequence: 4), key: key, channel: channel)
            try await append([old, unsigned, forged, fresh], to: log, on: raw)

            var options = try durableOptions(log: log, consumer: "r", start: .earliest)
            options.signingKey = key
            options.freshness = PostgresLink.Freshness(maximumAge: .seconds(1), clockSkew: .milliseconds(100))
            let reader = try await DurableNode(channel: channel, options: options)
            try await waitUntil("the valid rows") { reader.users.count == 2 }
            try await waitUntil("the refusals") { reader.errors.count == 2 }
            #expect(reader.userIDs == [1, 4])
            #expect(reader.errors.values.map(\.code) == [.unsignedEnvelope, .invalidSignature])
            #expect(reader.link.statistics.stale == 0 && reader.link.statistics.rejected == 2)
            await reader.link.close()
        }
    }

    @Test func aConsumerThatStartsByTimeBeginsWithTheFirstRowIssuedThen() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        try await withRawConnection { raw in
            for statement in log.migrations.flatMap(\.statements) {
                try await raw.query(PostgresQuery(unsafeSQL: statement), logger: TestServer.logger)
            }
            let origin = UUID()
            try await append((1...6).map { envelope(userID: $0, origin: origin, sequence: $0) }, to: log, on: raw)
            // Rows 1 to 3 two hours old, 4 to 6 one hour old.
            try await raw.query(
                PostgresQuery(
                    unsafeSQL: """
                        UPDATE "public"."\(log.table)" SET issued = now() - CASE WHEN sequence <= 3 \
                        THEN interval '2 hours' ELSE interval '1 hour' END
                        """), logger: TestServer.logger)
            let since = Date().addingTimeInterval(-90 * 60)
            let reader = try await DurableNode(
                channel: channel, options: try durableOptions(log: log, consumer: "r", start: .issued(since: since)))
            try await waitUntil("rows 4 to 6") { reader.users.count == 3 }
            try await waitForReads(of: reader.link, after: reader.link.statistics.logReads)  // nothing more comes
            #expect(reader.userIDs == [4, 5, 6])
            await reader.link.close()
        }
    }

    @Test func consumersNotUpdatedForTheExpiryAreDeletedAndLiveOnesKept() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let live = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "live"))
        try await withRawConnection { raw in
            let consumers = "\"public\".\"\(log.table)_consumers\""
            try await raw.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO \(consumers) (name, tx, position, updated_at) \
                        VALUES ('gone', '1'::xid8, 1, now() - interval '8 days')
                        """), logger: TestServer.logger)
            try await raw.query(
                PostgresQuery(unsafeSQL: log.consumerExpiryStatement(olderThan: .seconds(7 * 24 * 3_600))),
                logger: TestServer.logger)
            let names = try await int64s(
                "SELECT count(*)::int8 FROM \(consumers) WHERE name = 'gone'", on: raw)
            let kept = try await int64s("SELECT count(*)::int8 FROM \(consumers) WHERE name = 'live'", on: raw)
            #expect(names == [0] && kept == [1])
        }
        await live.link.close()
    }

    /// A position the server has not reached (as after a promoted replica that lacks the last rows)
    /// is reported, and the consumer resumes where the server is: nothing written there is skipped.
    @Test func aPositionAheadOfTheServerIsReportedAndTheConsumerResumesWhereTheServerIs() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "p"))
        let ahead = DurablePosition(transaction: 1 << 40, position: 1)
        let reader = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "r", start: .after(ahead)))
        poster.hub.post(UserCreated(userID: 1))
        try await waitUntil("the post") { reader.users.count == 1 }
        #expect(reader.userIDs == [1])
        #expect(reader.errors.values.map(\.code) == [.positionAhead])
        #expect(reader.errors.values.first?.found?.contains("position \(ahead)") == true)
        await poster.link.close()
        await reader.link.close()
    }
}
