import Foundation
import Herald
import Logging
import PostgresNIO
import Synchronization

/// Decodes the payload of a durable row as a shared type, and returns how to deliver it.
struct DurableDecoder: Sendable {
    let decode: @Sendable (JSONDecoder, ArraySlice<UInt8>, DurableRow) throws -> @Sendable () async -> Void

    init(
        _ decode: @escaping @Sendable (JSONDecoder, ArraySlice<UInt8>, DurableRow) throws -> @Sendable () async -> Void
    ) {
        self.decode = decode
    }
}

/// What is known of a durable row besides its payload: where it stands, and who posted it (from
/// its envelope, signed when the links have keys).
struct DurableRow: Sendable {
    let position: DurablePosition
    let origin: UUID
    let incarnation: Incarnation
    let sequence: UInt64
    let isTransactional: Bool
    let issued: Date
}

/// A notification read from a durable log, with where it stands in the log and who posted it: what
/// an observer needs to be idempotent.
///
/// A link in durable mode posts each value it reads into its hub, as `N`, and also as
/// `DurableDelivery<N>` when the hub has observers of that type. Observe this type where a
/// handler must not act twice on one post: delivery is exactly once per consumer while its process
/// runs (connections lost and regained included), and at least once across a crash of the process,
/// when the rows delivered since the position was last stored are delivered again to the next
/// process of that consumer, with the same ``position``.
///
/// ```swift
/// let token = hub.observe(DurableDelivery<OrderPlaced>.self, on: .queue(orders)) { delivery in
///     guard !processed.contains(delivery.position) else { return }
///     process(delivery.notification)
/// }
/// ```
public struct DurableDelivery<N: WireNotification>: TypedNotification {
    /// The value posted.
    public let notification: N
    /// Its place in the log: unique, and the same each time it is delivered.
    public let position: DurablePosition
    /// The origin of the link that posted it.
    public let origin: UUID
    /// The incarnation of that link: 16 hexadecimal digits. (A transactional post made while its
    /// link sent plain copies names the incarnation of its copy's lane instead; see
    /// ``PostgresLink/Durability/Phase``.)
    public let incarnation: String
    /// Its sequence number within that incarnation.
    public let sequence: UInt64
    /// Whether it was posted inside an application's transaction (``PostgresLink/post(_:in:)``).
    public let isTransactional: Bool
    /// When its row was written, by the database server's clock.
    public let issued: Date
}

/// A durable link's reading: starts its reader, and delivers each value read into the hub.
extension LinkCore {
    /// Delivers a value read from the log into the hub, as this link's re-post, and waits until
    /// every observer has returned; then, if the hub has observers of it, as a ``DurableDelivery``.
    func deliver<N: WireNotification>(_ value: N, row: DurableRow) async {
        await RepostMarker.$current.withValue(RepostMarker(link: self, type: N.self)) {
            await hub.postAndWait(value)
        }
        guard hub.observerCount(of: DurableDelivery<N>.self) > 0 else { return }
        let delivery = DurableDelivery(
            notification: value, position: row.position, origin: row.origin, incarnation: row.incarnation.idText,
            sequence: row.sequence, isTransactional: row.isTransactional, issued: row.issued)
        await hub.postAndWait(delivery)
    }

    /// Reads the log as the link's durable consumer until the link stops; see ``DurableReader``.
    func runDurableReader(on first: PostgresConnection, ready: Ready, durability: PostgresLink.Durability) async {
        await DurableReader(core: self, durability: durability).run(on: first, ready: ready)
    }
}

// MARK: - Reading

/// A link's durable consumer: reads the log from the consumer's position, delivers each row into
/// the hub (waiting until every observer has returned), then stores the position.
///
/// One statement per read, in one snapshot: the rows after the position whose transaction ended
/// before every transaction still running (`tx < pg_snapshot_xmin(pg_current_snapshot())`), so
/// every row that could still come before them is visible already or never will be; and the
/// ranges that retention deleted after the position, reported before the rows that follow them.
///
/// The position in memory is authoritative while the process runs, across lost connections; the
/// stored one is for the next process with the consumer's name.
final class DurableReader: Sendable {
    let core: LinkCore
    let durability: PostgresLink.Durability
    let waker = Waker()
    private let state = Mutex(State())
    private let decoder = JSONDecoder()

    private struct State {
        /// The last row delivered (or skipped); `nil` until the consumer's row is loaded.
        var position: DurablePosition?
        /// The position last stored, and when.
        var stored: DurablePosition?
        var storedAt: ContinuousClock.Instant?
        var maintenance = DurableMaintenance()
        /// With plain copies: when the link's horizon was last taken.
        var horizonAt: ContinuousClock.Instant?
        var isPrepared = false
        /// The server's timeline at the last connection (hexadecimal, as in WAL file names), when
        /// it said: a promotion or a restored backup starts a new one.
        var timeline: String?
        /// The last sequence number read from each incarnation's ordinary (not transactional) posts,
        /// whose rows come in sequence order: a row at or below it was written twice (its `INSERT`
        /// sent again after a lost connection).
        var ordinary: [OrdinaryKey: UInt64] = [:]
    }

    private struct OrdinaryKey: Hashable {
        let origin: UUID
        let incarnation: UInt64
    }

    struct ListeningEnded: Error, CustomStringConvertible {
        var description: String { "the server ended the notification stream" }
    }

    init(core: LinkCore, durability: PostgresLink.Durability) {
        self.core = core
        self.durability = durability
    }

    private var log: DurableLog { durability.log }

    func run(on first: PostgresConnection, ready: LinkCore.Ready) async {
        var connection: PostgresConnection? = first
        while let current = connection {
            var failure: (any Error)?
            do {
                try await open(current)
                try await current.listen(on: core.channel) { notifications in
                    switch core.state.withLock({ $0.lifecycle.listening(at: Date()) }) {
                    case .started(let waiters):
                        for waiter in waiters { waiter.resume() }
                    case .recovered:
                        // Nothing was lost: the log keeps it.
                        core.state.withLock { $0.statistics.outages += 1 }
                    }
                    ready.resume(with: .success(()))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await _ in notifications { self.waker.signal() }
                            throw ListeningEnded()
                        }
                        group.addTask { try await self.readLoop(on: current) }
                        defer { group.cancelAll() }
                        _ = try await group.next()
                    }
                }
            } catch {
                failure = error
            }
            if Task.isCancelled, !current.isClosed { await finish(on: current) }
            try? await current.close()
            if ready.resume(with: .failure(failure ?? CancellationError())) { return }  // `run()` fails
            guard !Task.isCancelled,
                case .reconnect(let delay, let reportsLoss) = core.state.withLock({
                    $0.lifecycle.listenerLost(at: Date())
                })
            else { return }
            if let error = failure as? PostgresLinkError {
                core.report(error)
            } else if reportsLoss {
                core.report(.connectionLost(.listening, error: failure))
            }
            connection = await core.reconnect(
                after: delay, retry: { core.state.withLock { $0.lifecycle.reconnectFailed() } },
                isEnding: { core.state.withLock { $0.lifecycle.isEnding } })
        }
    }

    // MARK: Opening

    /// Checks the server and the tables (once), takes the consumer's lock, and loads its position
    /// (once) or stores the one in memory.
    private func open(_ connection: PostgresConnection) async throws {
        if !state.withLock({ $0.isPrepared }) {
            try await prepare(connection)
            state.withLock { $0.isPrepared = true }
        }
        let key = log.consumerLockKey(durability.consumer)
        let locked = try await core.boundedQuery("SELECT pg_try_advisory_lock(\(key))", on: connection)
        guard try locked.rows.first?.decode(Bool.self) == true else {
            throw PostgresLinkError.consumerInUse(durability.consumer)
        }
        _ = try await core.boundedQuery(PostgresQuery(unsafeSQL: prepareReadStatement), on: connection)
        // A position past the start of the first transaction that the server has not handed out
        // yet names a row that this server has not written. (Taken after the position: a new
        // consumer's position is taken from this server now.)
        if let position = state.withLock({ $0.position }) {
            let horizon = try await firstUnassigned(on: connection)
            let timeline = await self.timeline(on: connection)
            // On a new timeline (promoted, or restored), the server may lack the last rows read and
            // have handed out their transaction ids again already, below the position: only the
            // position stored on it is sure.
            let previous = state.withLock { $0.timeline }
            let isNewTimeline = previous != nil && timeline != nil && previous != timeline
            guard position > horizon || isNewTimeline else {
                try await store(position, on: connection)
                if let timeline { state.withLock { $0.timeline = timeline } }
                return
            }
            // Read from a server whose history this one lacks: resume where this server says.
            let stored = try await storedPosition(on: connection)
            let resumed: DurablePosition
            if let stored, stored <= horizon, stored <= position {
                resumed = stored
            } else {
                resumed = min(position, try await latest(on: connection))
            }
            state.withLock { state in
                state.position = resumed
                if let timeline { state.timeline = timeline }
            }
            try await store(resumed, on: connection)
            if position > horizon {
                core.report(.positionAhead(position, next: horizon.transaction, resumingAt: resumed))
            } else if resumed != position {
                core.report(
                    .positionAhead(
                        position, timeline: previous ?? "", serverTimeline: timeline ?? "", resumingAt: resumed))
            }
        } else {
            var position = try await loadPosition(on: connection)
            let horizon = try await firstUnassigned(on: connection)
            let timeline = await self.timeline(on: connection)
            if position > horizon {
                let ahead = position
                position = try await latest(on: connection)
                try await store(position, on: connection)
                core.report(.positionAhead(ahead, next: horizon.transaction, resumingAt: position))
            }
            state.withLock { state in
                state.position = position
                state.stored = position
                state.storedAt = ContinuousClock().now
                state.timeline = timeline
            }
        }
    }

    /// The server's timeline, from the name of its current WAL file; `nil` where the server does
    /// not say (a standby, or a service that hides its WAL functions).
    private func timeline(on connection: PostgresConnection) async -> String? {
        let rows = try? await core.boundedQuery(
            "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)", on: connection
        ).rows
        return try? rows?.first?.decode(String.self)
    }

    /// Before every row of the first transaction id that the server has not handed out yet.
    private func firstUnassigned(on connection: PostgresConnection) async throws -> DurablePosition {
        let rows = try await core.boundedQuery(
            "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::int8", on: connection
        ).rows
        return DurablePosition(transaction: UInt64(max(try rows.first?.decode(Int64.self) ?? 0, 0)), position: 0)
    }

    private func prepare(_ connection: PostgresConnection) async throws {
        try await core.prepareDurableLog(durability, on: connection)
    }

    /// The stored position of the consumer, or, for a new one, where ``PostgresLink/Durability/start``
    /// says (stored at once).
    private func loadPosition(on connection: PostgresConnection) async throws -> DurablePosition {
        let name = durability.consumer
        if let stored = try await storedPosition(on: connection) { return stored }
        var start: DurablePosition
        switch durability.start.kind {
        case .earliest:
            start = .start
        case .after(let position):
            start = position
        case .latest:
            start = try await latest(on: connection)
        case .issued(let date):
            let milliseconds = Int64(clamping: LinkCore.milliseconds(date))
            let rows = try await core.boundedQuery(
                """
                SELECT l.tx::text::int8, l.position FROM \(unescaped: log.log) AS l \
                WHERE l.issued >= to_timestamp(\(milliseconds)::float8 / 1000) ORDER BY l.tx, l.position LIMIT 1
                """, on: connection, timeout: .seconds(60)
            ).rows
            if let (tx, position) = try rows.first?.decode((Int64, Int64).self) {
                start = DurablePosition(transaction: UInt64(max(tx, 0)), position: position - 1)
            } else {
                start = try await latest(on: connection)
            }
        }
        _ = try await core.boundedQuery(
            """
            INSERT INTO \(unescaped: log.consumers) (name, tx, position) \
            VALUES (\(name), \(String(start.transaction))::xid8, \(start.position)) ON CONFLICT (name) DO NOTHING
            """, on: connection)
        return try await storedPosition(on: connection) ?? start
    }

    private func storedPosition(on connection: PostgresConnection) async throws -> DurablePosition? {
        let rows = try await core.boundedQuery(
            "SELECT tx::text::int8, position FROM \(unescaped: log.consumers) WHERE name = \(durability.consumer)",
            on: connection
        ).rows
        guard let (tx, position) = try rows.first?.decode((Int64, Int64).self) else { return nil }
        return DurablePosition(transaction: UInt64(max(tx, 0)), position: position)
    }

    /// Before every row of the transactions that have not ended yet, and of every later one.
    private func latest(on connection: PostgresConnection) async throws -> DurablePosition {
        let rows = try await core.boundedQuery(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8", on: connection
        ).rows
        let xmin = try rows.first?.decode(Int64.self) ?? 0
        return DurablePosition(transaction: UInt64(max(xmin, 0)), position: 0)
    }

    private func store(_ position: DurablePosition, on connection: PostgresConnection) async throws {
        _ = try await core.boundedQuery(
            """
            INSERT INTO \(unescaped: log.consumers) (name, tx, position, updated_at) \
            VALUES (\(durability.consumer), \(String(position.transaction))::xid8, \(position.position), now()) \
            ON CONFLICT (name) DO UPDATE SET tx = excluded.tx, position = excluded.position, \
            updated_at = excluded.updated_at
            """, on: connection)
        state.withLock { state in
            state.stored = position
            state.storedAt = ContinuousClock().now
        }
    }

    /// How often, at most, the position is stored while rows arrive: each store is a write
    /// transaction, which a consumer that reads many small batches would otherwise make per batch.
    static let storeInterval = Duration.milliseconds(200)

    private func isStoreDue(at now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in state.storedAt.map { now - $0 >= Self.storeInterval } ?? true }
    }

    /// On the way out (the link stops): stores the position, and releases the consumer's lock at
    /// once, so that the next process with the name need not wait for the session to end.
    private func finish(on connection: PostgresConnection) async {
        let (position, stored) = state.withLock { ($0.position, $0.stored) }
        if let position, position != stored { try? await store(position, on: connection) }
        _ = try? await core.boundedQuery("SELECT pg_advisory_unlock_all()", on: connection)
    }

    // MARK: Reading

    private func readLoop(on connection: PostgresConnection) async throws {
        let loop = connection.closeFuture.eventLoop
        while !Task.isCancelled {
            let isFull = try await readBatch(on: connection)
            guard !Task.isCancelled else { return }
            try await housekeeping(on: connection)
            if isFull { continue }
            await waker.wait(for: durability.pollInterval, on: loop)
        }
    }

    /// The name of the prepared read on the reading connection.
    static let readStatement = "herald_durable_read"

    /// Prepares the read (``readBatch(on:)``) on a new connection: planning this statement each time
    /// costs about as much as running it (0.36 ms a read unprepared, 0.15 ms prepared, on an idle
    /// 2-core machine), and the reader runs it after each wake-up. Its parameters: the position's
    /// transaction and row. The batch size is part of the text, so that the plan that PostgreSQL
    /// caches after five reads knows the limit and reads along the index.
    ///
    /// `l.tx` and `l.position` are qualified: a bare `tx` in ORDER BY would name the output column
    /// `tx::text::int8`, and the log would be sorted in full instead of read along its index.
    private var prepareReadStatement: String {
        """
        PREPARE \(Self.readStatement)(xid8, int8) AS \
        SELECT 0::int4, first_tx::text::int8, first_position, last_tx::text::int8, last_position, count, \
        NULL::text, false, 0::float8 \
        FROM \(log.deletions) WHERE (last_tx, last_position) > ($1, $2) \
        UNION ALL \
        (SELECT 1::int4, l.tx::text::int8, l.position, 0::int8, 0::int8, 0::int8, l.payload, l.transactional, \
        extract(epoch FROM l.issued)::float8 \
        FROM \(log.log) AS l WHERE (l.tx, l.position) > ($1, $2) \
        AND l.tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY l.tx, l.position LIMIT \(durability.batchSize))
        """
    }

    /// One read: reports what retention deleted unread, delivers the rows, stores the position.
    /// Returns whether it read a full batch (more may be readable at once).
    private func readBatch(on connection: PostgresConnection) async throws -> Bool {
        guard let from = state.withLock({ $0.position }) else { return false }
        let batch = durability.batchSize
        // Both arguments are numbers of this process, written as literals (`EXECUTE` takes no
        // bound parameters).
        let result = try await core.boundedQuery(
            PostgresQuery(unsafeSQL: "EXECUTE \(Self.readStatement)('\(from.transaction)', \(from.position))"),
            on: connection, timeout: .seconds(120))
        core.state.withLock { $0.statistics.logReads += 1 }
        typealias Columns = (Int32, Int64, Int64, Int64, Int64, Int64, String?, Bool, Double)
        var deleted: [(first: DurablePosition, last: DurablePosition, count: Int64)] = []
        var rows: [(position: DurablePosition, payload: String, isTransactional: Bool, issued: Double)] = []
        rows.reserveCapacity(batch)
        for row in result.rows {
            let columns = try row.decode(Columns.self)
            if columns.0 == 0 {
                deleted.append(
                    (
                        DurablePosition(transaction: UInt64(max(columns.1, 0)), position: columns.2),
                        DurablePosition(transaction: UInt64(max(columns.3, 0)), position: columns.4), columns.5
                    ))
            } else {
                rows.append(
                    (
                        DurablePosition(transaction: UInt64(max(columns.1, 0)), position: columns.2), columns.6 ?? "",
                        columns.7, columns.8
                    ))
            }
        }
        var position = from
        if !deleted.isEmpty {
            deleted.sort { $0.last < $1.last }
            var count: Int64 = 0
            var isUpperBound = false
            for range in deleted {
                count += range.count
                // A range that began at or before the position was cut at a stored position behind
                // this one: it may hold rows delivered already.
                if range.first <= from { isUpperBound = true }
            }
            let first = deleted.map(\.first).min() ?? from
            let last = deleted[deleted.count - 1].last
            position = max(position, last)
            state.withLock { $0.position = position }
            core.state.withLock { $0.statistics.rowsLost += Int(clamping: count) }
            core.metrics.didLoseRows(count)
            core.report(.rowsDeleted(first: first, last: last, count: count, isUpperBound: isUpperBound))
        }
        rows.sort { $0.position < $1.position }
        var lastIssued: Double?
        for row in rows where row.position > position {
            guard !Task.isCancelled else { break }
            await deliver(
                payload: row.payload, position: row.position, isTransactional: row.isTransactional,
                issued: Date(timeIntervalSince1970: row.issued))
            position = row.position
            lastIssued = row.issued
            state.withLock { $0.position = position }
        }
        core.metrics.didReadLogRows(rows.count)
        if position != from, !Task.isCancelled, isStoreDue(at: ContinuousClock().now) {
            try await store(position, on: connection)
        }
        // The lag: rows (estimated by positions, when more are readable) and seconds.
        let isFull = rows.count >= batch
        var lagRows: Int64 = 0
        if isFull {
            let result = try await core.boundedQuery(
                "SELECT coalesce(max(position), 0)::int8 FROM \(unescaped: log.log)", on: connection)
            lagRows = max(try result.rows.first?.decode(Int64.self) ?? 0, position.position) - position.position
        }
        let lagSeconds = lastIssued.map { max(0, Double(core.serverNow()) / 1_000 - $0) } ?? 0
        core.metrics.logLag(rows: lagRows, seconds: lagSeconds)
        return isFull || !deleted.isEmpty
    }

    /// Checks and delivers one row.
    private func deliver(payload: String, position: DurablePosition, isTransactional: Bool, issued: Date) async {
        core.state.withLock { $0.statistics.logRowsRead += 1 }
        let bytes: [UInt8]
        if let signer = core.signer {
            switch signer.verify(payload) {
            case .valid(let envelope, _), .echo(let envelope):
                // Not checked for freshness: positions keep rows from being delivered twice, and a
                // row read while catching up is old by design.
                bytes = envelope
            case .unsigned:
                core.reject(.unsignedEnvelope(size: payload.utf8.count))
                return
            case .forged:
                core.reject(.invalidSignature(size: payload.utf8.count))
                return
            case .unknownKey(let id):
                core.reject(.unknownSigningKey(size: payload.utf8.count, id: id))
                return
            }
        } else {
            bytes = Array(payload.utf8)
        }
        guard
            case .current(let type, let originRange, let incarnation, let sequence, let payloadRange) =
                Envelope.quickLook(bytes, own: []),
            let origin = UUID(uuidString: String(decoding: bytes[originRange], as: UTF8.self))
        else {
            core.reject(
                .malformedEnvelope(
                    expected: "a version 3 envelope of one notification in the durable row",
                    found: "\(bytes.count) bytes at position \(position) in another layout"))
            return
        }
        if !isTransactional {
            // This link's own post: its observers ran inside `post`.
            if origin == core.origin, incarnation.id == core.incarnation.id {
                core.state.withLock { $0.statistics.echoesIgnored += 1 }
                return
            }
            let key = OrdinaryKey(origin: origin, incarnation: incarnation.id)
            let last: UInt64? = state.withLock { state in
                if let last = state.ordinary[key], last >= sequence { return last }
                if state.ordinary.count >= 4_096 { state.ordinary.removeAll(keepingCapacity: true) }
                state.ordinary[key] = sequence
                return nil
            }
            if let last {
                core.state.withLock { $0.statistics.duplicates += 1 }
                core.metrics.didRefuse(.duplicateSequence)
                core.report(.duplicateSequence(origin: origin, lastAccepted: last, found: sequence))
                return
            }
        }
        let decoders = core.state.withLock { $0.durableDecoders }
        guard let decoder = decoders[type] else {
            core.reject(.unknownType(type, origin: origin, shared: Array(decoders.keys)))
            return
        }
        let delivery: @Sendable () async -> Void
        do {
            delivery = try decoder.decode(
                self.decoder, bytes[payloadRange],
                DurableRow(
                    position: position, origin: origin, incarnation: incarnation, sequence: sequence,
                    isTransactional: isTransactional, issued: issued))
        } catch {
            let (expected, found) = Envelope.describe(
                error, input: String(decoding: bytes[payloadRange], as: UTF8.self))
            core.reject(.payloadDecodingFailed(type: type, origin: origin, expected: expected, found: found))
            return
        }
        await delivery()
        core.state.withLock { $0.statistics.received += 1 }
        core.metrics.didReceive(1)
    }

    // MARK: Housekeeping

    /// Stores a position not stored yet, keeps the consumer's row fresh (so that it does not expire
    /// while the link runs), takes the horizon of the link's plain copies (if it sends them), and,
    /// when due, applies the retention and deletes expired consumers.
    private func housekeeping(on connection: PostgresConnection) async throws {
        let clock = ContinuousClock()
        let now = clock.now
        if durability.phase.sendsPlainCopies,
            state.withLock({ $0.horizonAt.map { now - $0 >= Self.storeInterval } ?? true })
        {
            core.noteHorizon(try await latest(on: connection).transaction)
            state.withLock { $0.horizonAt = now }
        }
        let (position, stored, storedAt) = state.withLock { ($0.position, $0.stored, $0.storedAt) }
        let sinceStored = storedAt.map { now - $0 }
        if let position,
            sinceStored.map({ $0 >= durability.heartbeat || (position != stored && $0 >= Self.storeInterval) }) ?? true
        {
            try await store(position, on: connection)
        }
        if state.withLock({ $0.maintenance.take(at: now, for: durability) }) {
            try await core.maintainDurableLog(durability, on: connection)
        }
    }
}
