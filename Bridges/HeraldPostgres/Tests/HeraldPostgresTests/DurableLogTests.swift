import Foundation
import HeraldPostgres
import PostgresNIO
import Testing

/// The durable log's tables, its migration and its names.
@Suite("DurableLog")
struct DurableLogTests {
    @Test func namesThatAreNotPlainIdentifiersAreRefusedNamingWhatWasExpected() throws {
        let longName = String(repeating: "a", count: DurableLog.maximumTableNameLength + 1)
        for (schema, table, culprit) in [
            ("public", "Herald", "Herald"), ("public", "1log", "1log"), ("public", "log;drop", "log;drop"),
            ("", "log", ""), ("my schema", "log", "my schema"), ("public", longName, longName),
        ] {
            let error = try #require(throws: PostgresLinkError.self) { try DurableLog(schema: schema, table: table) }
            #expect(error.code == .invalidIdentifier)
            #expect(error.expected?.contains("lower-case ASCII letters, digits or underscores") == true)
            #expect(error.found == "\"\(culprit)\"")
        }
        let log = try DurableLog(schema: "events", table: "herald_log")
        #expect(log.schema == "events" && log.table == "herald_log")
    }

    @Test func aConsumerNeedsAName() throws {
        let log = try DurableLog()
        let error = try #require(throws: PostgresLinkError.self) {
            try PostgresLink.Durability(log: log, consumer: "")
        }
        #expect(error.code == .invalidConsumerName)
        #expect(error.found == "0 bytes")
    }

    @Test func theMigrationIsVersionedAndNamesTheTables() throws {
        let script = try DurableLog.migration(schema: "events", table: "orders_log")
        #expect(script.hasPrefix("-- version 1\n"))
        for name in [
            #""events"."orders_log" ("#, #""events"."orders_log_consumers""#, #""events"."orders_log_deletions""#,
        ] {
            #expect(script.contains(name), "\(name)")
        }
        #expect(script.contains("tx xid8 NOT NULL DEFAULT pg_current_xact_id()"))
        #expect(try DurableLog().migrations.map(\.version) == [1])
    }

    @Test(.enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
    func theMigrationRunsTwiceAndCreatesTheThreeTables() async throws {
        let log = try makeTestLog()
        try await withRawConnection { raw in
            for _ in 1...2 {
                for statement in log.migrations.flatMap(\.statements) {
                    try await raw.query(PostgresQuery(unsafeSQL: statement), logger: TestServer.logger)
                }
            }
            let tables = try await int64s(
                """
                SELECT count(*)::int8 FROM pg_tables WHERE schemaname = 'public' \
                AND tablename IN ('\(log.table)', '\(log.table)_consumers', '\(log.table)_deletions')
                """, on: raw)
            #expect(tables == [3])
        }
    }
}
