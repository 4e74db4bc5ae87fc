import Foundation
import PostgresNIO
import Testing

@testable import HeraldPostgres

/// The link's queries against a real server whose connection ends under them.
@Suite("Bounded queries", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct BoundedQueryTests {
    /// A reader whose connection the server ends is cancelled when its notification stream fails.
    /// A read it began at that moment must fail at once, not after the read's two-minute timeout:
    /// postgres-nio never answers a query written after the server closed the connection.
    @Test(.timeLimit(.minutes(1)))
    func aCancelledQueryOnAConnectionTheServerEndedFailsWithoutWaitingForItsTimeout() async throws {
        let node = try await Node(channel: TestServer.makeChannel())
        let connection = try await TestServer.rawConnection()
        let pid = try #require(
            try await connection.query("SELECT pg_backend_pid()", logger: TestServer.logger).get()
                .rows.first?.decode(Int32.self))
        let terminated = try await withRawConnection { raw in
            try await raw.query("SELECT pg_terminate_backend(\(pid))", logger: TestServer.logger).get()
                .rows.first?.decode(Bool.self)
        }
        #expect(terminated == true)
        // The client sees the end: what it writes from now on goes nowhere.
        try? await connection.closeFuture.get()

        let query = Task {
            try await node.link.core.boundedQuery("SELECT 1", on: connection, timeout: .seconds(120))
        }
        query.cancel()
        let error = await #expect(throws: (any Error).self) { try await query.value }
        #expect(error is LinkCore.ConnectionClosed)
        await node.link.close()
    }

    /// A cancelled task's query on a connection that stays open runs to its end: the position a
    /// closing reader stores is not lost.
    @Test func aCancelledQueryOnAnOpenConnectionIsAnswered() async throws {
        let node = try await Node(channel: TestServer.makeChannel())
        try await withRawConnection { connection in
            let query = Task {
                try await node.link.core.boundedQuery("SELECT 42::int8", on: connection)
            }
            query.cancel()
            let rows = try await query.value.rows
            #expect(try rows.first?.decode(Int64.self) == 42)
        }
        await node.link.close()
    }
}
