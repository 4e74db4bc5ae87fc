import Crypto
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import Testing

/// A log of its own for each test, so that tests can run in parallel.
func makeTestLog() throws -> DurableLog {
    let suffix = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
    return try DurableLog(table: "herald_t_\(suffix)")
}

/// Options for a durable link of the tests: the log created by the link, fast reconnection and a
/// short poll interval.
func durableOptions(
    log: DurableLog, consumer: String, start: DurableStart = .latest, pollInterval: Duration = .milliseconds(200),
    batchSize: Int = 500, retention: PostgresLink.Retention? = nil,
    reconnection: PostgresLink.Reconnection = TestServer.fastReconnection,
    phase: PostgresLink.Durability.Phase = .reading, signingKey: SymmetricKey? = nil
) throws -> PostgresLink.Options {
    var options = PostgresLink.Options(reconnection: reconnection, signingKey: signingKey)
    var durability = try PostgresLink.Durability(
        log: log, consumer: consumer, start: start, pollInterval: pollInterval, batchSize: batchSize,
        createsLog: true, retention: retention)
    durability.phase = phase
    options.durability = durability
    return options
}

/// One hub with a durable link, as one process would have it: what its observers received, with
/// the ``DurableDelivery`` of each `UserCreated`.
struct DurableNode {
    let hub = NotificationHub()
    let link: PostgresLink
    let errors = Recorder<PostgresLinkError>()
    let users = Recorder<UserCreated>()
    let deliveries = Recorder<DurableDelivery<UserCreated>>()
    let barriers = Recorder<Barrier>()
    let blobs = Recorder<Blob>()
    let tokens: [ObservationToken]

    init(
        channel: String, options: PostgresLink.Options, origin: UUID = UUID(),
        configuration: PostgresConnection.Configuration? = nil
    ) async throws {
        let hub = self.hub
        let (users, deliveries, barriers, blobs) = (self.users, self.deliveries, self.barriers, self.blobs)
        // Observed before the link starts reading, so that nothing read is missed.
        tokens = [
            hub.observe(UserCreated.self) { users.append($0) },
            hub.observe(DurableDelivery<UserCreated>.self) { deliveries.append($0) },
            hub.observe(Barrier.self) { barriers.append($0) },
            hub.observe(Blob.self) { blobs.append($0) },
        ]
        let link = try PostgresLink(
            hub: hub, channel: channel, configuration: try configuration ?? TestServer.requireConfiguration(),
            sharing: [UserCreated.self, Barrier.self, Blob.self], origin: origin, options: options)
        let errors = self.errors
        link.errorHandler = { errors.append($0) }
        self.link = link
        Task { try? await link.run() }
        try await link.listening()
    }

    var userIDs: [Int] { users.values.map(\.userID) }
}

/// Runs `sql` on `connection`, and returns the first column of each row as `Int64`.
@discardableResult
func int64s(_ sql: String, on connection: PostgresConnection) async throws -> [Int64] {
    var values: [Int64] = []
    for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestServer.logger)
        .decode(Int64.self)
    {
        values.append(value)
    }
    return values
}

/// Terminates the backend that holds `consumer`'s advisory lock: its link's reading connection.
/// Returns how many backends were terminated.
func terminateReader(of consumer: String, in log: DurableLog, on connection: PostgresConnection) async throws -> Int {
    let key = UInt64(bitPattern: log.consumerLockKey(consumer))
    let high = Int64(key >> 32)
    let low = Int64(key & 0xFFFF_FFFF)
    let terminated = try await int64s(
        """
        SELECT count(pg_terminate_backend(pid))::int8 FROM pg_locks WHERE locktype = 'advisory' AND granted \
        AND objsubid = 1 AND classid::int8 = \(high) AND objid::int8 = \(low)
        """, on: connection)
    return Int(terminated.first ?? 0)
}

/// Waits until `link` has read the log `count` more times than `before`: the reads that a test
/// waits for before it asserts that something was not delivered.
func waitForReads(of link: PostgresLink, after before: Int, count: Int = 2) async throws {
    try await waitUntil("\(count) more reads of the log") { link.statistics.logReads >= before + count }
}

/// Runs `body` with a plain connection of its own, closed afterwards also when `body` throws:
/// postgres-nio traps on a connection released before it is closed, which would hide the error.
func withRawConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
    try await withConnection(opening: TestServer.rawConnection, body)
}

/// `withRawConnection` with the connection that `open` makes (to another database, say).
func withConnection<T>(
    opening open: () async throws -> PostgresConnection, _ body: (PostgresConnection) async throws -> T
) async throws -> T {
    let connection = try await open()
    do {
        let result = try await body(connection)
        try await connection.close()
        return result
    } catch {
        try? await connection.close()
        throw error
    }
}

/// `withRawConnection` with `count` plain connections, each closed afterwards also when `body`
/// (or opening one of them) throws.
func withRawConnections<T>(_ count: Int, _ body: ([PostgresConnection]) async throws -> T) async throws -> T {
    var connections: [PostgresConnection] = []
    do {
        for _ in 0..<count { connections.append(try await TestServer.rawConnection()) }
        let result = try await body(connections)
        for connection in connections { try await connection.close() }
        return result
    } catch {
        for connection in connections { try? await connection.close() }
        throw error
    }
}

/// Runs `body` while a plain connection of its own listens on `channel` and records every message
/// it hears; the listening ends and the connection is closed afterwards, also when `body` throws.
func withSniffer<T>(on channel: String, _ body: (Recorder<String>) async throws -> T) async throws -> T {
    try await withRawConnection { sniffer in
        let captured = Recorder<String>()
        let listening = Recorder<Bool>()
        let sniffing = Task {
            try await sniffer.listen(on: channel) { notifications in
                listening.append(true)
                for try await notification in notifications { captured.append(notification.payload) }
            }
        }
        defer { sniffing.cancel() }
        try await waitUntil("the sniffer listening") { listening.count == 1 }
        return try await body(captured)
    }
}
