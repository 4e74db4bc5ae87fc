import Foundation
import Herald
import Logging
import PostgresNIO
import Synchronization

extension PostgresLink.Durability {
    /// Where a durable link stands in the switch of a running service from plain to durable mode.
    ///
    /// A plain link reads the envelope in each `NOTIFY`'s payload; a durable link in phase
    /// ``reading`` sends only empty wake-ups and reads the log, so the two cannot share a channel.
    /// The phases between let the instances of a running service switch one at a time, in three
    /// deployments, without losing a notification:
    ///
    /// 1. ``writeOnly``: each post is appended to the log *and* sent as a plain envelope, so that
    ///    plain links still receive it and the log is complete from now on; the link receives as a
    ///    plain link does, and keeps its consumer's stored position at what it has received.
    /// 2. ``readingWithPlainCopies``: the link reads the log as its consumer, from where the
    ///    write-only link of its name stopped, and still sends each post as a plain envelope, for
    ///    the write-only links left.
    /// 3. ``reading``: durable mode proper, once no write-only link is left.
    ///
    /// ```swift
    /// var durability = try PostgresLink.Durability(log: try DurableLog(), consumer: "orders-1")
    /// durability.phase = .writeOnly
    /// ```
    ///
    /// A struct rather than an enumeration, so that phases can be added without breaking a
    /// `switch`; read ``readsLog`` and ``sendsPlainCopies`` to tell them apart.
    public struct Phase: Sendable, Hashable, CustomStringConvertible {
        /// Whether the link reads the log as its consumer, ignoring the payloads of the channel's
        /// `NOTIFY`s; otherwise it receives from those payloads, with plain mode's checks.
        public let readsLog: Bool
        /// Whether each post also goes out as a plain envelope in a `NOTIFY` on the channel (in
        /// the statement that appends its row), for the links that receive from payloads. Such a
        /// copy is bound by the `NOTIFY` limit: a post over ``PostgresLink/maximumPayloadBytes`` is
        /// refused (``PostgresLinkError/Code/payloadTooLarge``), as in plain mode.
        public let sendsPlainCopies: Bool

        /// Deployment 1 of the switch: appends each post to the log and sends it as a plain
        /// envelope; receives from the `NOTIFY` payloads, as plain mode does, from plain links and
        /// durable ones alike; stores its consumer's position as far as it has received, so that
        /// the reading link that replaces it resumes there.
        public static let writeOnly = Phase(readsLog: false, sendsPlainCopies: true)
        /// Deployment 2 of the switch: reads the log as its consumer (durable mode's guarantees),
        /// and still sends each post as a plain envelope, for the write-only links left.
        public static let readingWithPlainCopies = Phase(readsLog: true, sendsPlainCopies: true)
        /// Durable mode proper, the default: reads the log, and sends only empty wake-ups.
        public static let reading = Phase(readsLog: true, sendsPlainCopies: false)

        private init(readsLog: Bool, sendsPlainCopies: Bool) {
            self.readsLog = readsLog
            self.sendsPlainCopies = sendsPlainCopies
        }

        /// `writeOnly`, `readingWithPlainCopies` or `reading`.
        public var description: String {
            switch (readsLog, sendsPlainCopies) {
            case (false, _): "writeOnly"
            case (true, true): "readingWithPlainCopies"
            case (true, false): "reading"
            }
        }
    }
}

// MARK: - The write-only consumer

/// The durable consumer of a write-only link (``PostgresLink/Durability/Phase/writeOnly``): it reads
/// nothing from the log, and keeps the consumer's stored position as far as the link has received.
///
/// Every plain copy that a durable link sends carries a *horizon*: the `xmin` of a snapshot taken
/// before the statement that sent it, so every transaction below it had ended before that `NOTIFY`
/// was committed. `NOTIFY`s reach a listener in commit order, so once this link has processed a
/// copy, it has processed the `NOTIFY` of every such transaction; the position before the
/// horizon's transaction is then safe to store: the reading link that takes over the consumer's
/// name reads every row after it (some received here already, none missed). The horizons of the
/// copies it processed only move it forward; the link stores it every poll interval, when it stops,
/// and never moves the stored position back.
///
/// Like a reader, it holds the consumer's advisory lock on the listening connection: two links
/// that store one consumer's position at once (this one from what it heard, a reader from what it
/// delivered) would move it past rows that the reader has not delivered.
final class WriteOnlyConsumer: Sendable {
    let core: LinkCore
    let durability: PostgresLink.Durability
    private let waker = Waker()
    private let state = Mutex(State())

    private struct State {
        /// The largest horizon of the copies processed.
        var heard: UInt64 = 0
        /// The horizon last stored, and when.
        var stored: UInt64 = 0
        var storedAt: ContinuousClock.Instant?
        var maintenance = DurableMaintenance()
        var isPrepared = false
    }

    init(core: LinkCore, durability: PostgresLink.Durability) {
        self.core = core
        self.durability = durability
    }

    private var log: DurableLog { durability.log }

    /// The link processed a plain copy whose horizon is `horizon`.
    func heard(_ horizon: UInt64) {
        state.withLock { $0.heard = max($0.heard, horizon) }
    }

    /// Checks the server and the tables (once), takes the consumer's lock, and, for a new
    /// consumer, stores the log's current end.
    func open(_ connection: PostgresConnection) async throws {
        if !state.withLock({ $0.isPrepared }) {
            try await core.prepareDurableLog(durability, on: connection)
            state.withLock { $0.isPrepared = true }
        }
        let key = log.consumerLockKey(durability.consumer)
        let locked = try await core.boundedQuery("SELECT pg_try_advisory_lock(\(key))", on: connection)
        guard try locked.rows.first?.decode(Bool.self) == true else {
            throw PostgresLinkError.consumerInUse(durability.consumer)
        }
        let latest = try await refreshHorizon(on: connection)
        // An existing position stays: it moves forward with what this link receives.
        _ = try await core.boundedQuery(
            """
            INSERT INTO \(unescaped: log.consumers) (name, tx, position) \
            VALUES (\(durability.consumer), \(String(latest))::xid8, 0) ON CONFLICT (name) DO NOTHING
            """, on: connection)
        state.withLock { $0.storedAt = ContinuousClock().now }
    }

    /// Refreshes the link's horizon and stores the position when due, until the link stops.
    func maintain(on connection: PostgresConnection) async throws {
        let loop = connection.closeFuture.eventLoop
        while !Task.isCancelled {
            await waker.wait(for: durability.pollInterval, on: loop)
            guard !Task.isCancelled else { return }
            try await refreshHorizon(on: connection)
            try await housekeeping(on: connection)
        }
    }

    /// On the way out (the link stops): stores what was heard since the last store.
    func finish(on connection: PostgresConnection) async {
        let (heard, stored) = state.withLock { ($0.heard, $0.stored) }
        if heard > stored { try? await store(heard, on: connection) }
    }

    /// Takes the horizon now, for the link's next plain copies.
    @discardableResult
    private func refreshHorizon(on connection: PostgresConnection) async throws -> UInt64 {
        let rows = try await core.boundedQuery(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8", on: connection
        ).rows
        let horizon = UInt64(max(try rows.first?.decode(Int64.self) ?? 0, 0))
        core.noteHorizon(horizon)
        return horizon
    }

    /// Stores the position before `horizon`'s transaction, unless the stored one is further on.
    private func store(_ horizon: UInt64, on connection: PostgresConnection) async throws {
        _ = try await core.boundedQuery(
            """
            INSERT INTO \(unescaped: log.consumers) AS c (name, tx, position, updated_at) \
            VALUES (\(durability.consumer), \(String(horizon))::xid8, 0, now()) ON CONFLICT (name) DO UPDATE SET \
            tx = CASE WHEN (c.tx, c.position) < (excluded.tx, excluded.position) THEN excluded.tx ELSE c.tx END, \
            position = CASE WHEN (c.tx, c.position) < (excluded.tx, excluded.position) \
            THEN excluded.position ELSE c.position END, updated_at = excluded.updated_at
            """, on: connection)
        state.withLock { state in
            state.stored = max(state.stored, horizon)
            state.storedAt = ContinuousClock().now
        }
    }

    /// Stores what was heard, keeps the consumer's row fresh, and applies the retention and the
    /// consumer expiry when due, as a reader does.
    private func housekeeping(on connection: PostgresConnection) async throws {
        let now = ContinuousClock().now
        let (heard, stored, storedAt) = state.withLock { ($0.heard, $0.stored, $0.storedAt) }
        if heard > stored || storedAt.map({ now - $0 >= durability.heartbeat }) ?? true {
            try await store(heard, on: connection)
        }
        if state.withLock({ $0.maintenance.take(at: now, for: durability) }) {
            try await core.maintainDurableLog(durability, on: connection)
        }
    }
}

// MARK: - The plain copies of transactional posts

/// The senders under which a durable link's transactional posts (``PostgresLink/post(_:in:)``)
/// send their plain copies, while ``PostgresLink/Durability/Phase/sendsPlainCopies``.
///
/// A plain receiver checks each sender's sequence numbers: with a signing key it refuses a number
/// at or below the last one it accepted, as a replay. Transactions commit in any order, and a
/// rolled-back one leaves its number unsent, so a copy numbered among the link's ordinary posts
/// could arrive after a higher number (and be refused) or leave a gap. So each copy goes out under
/// a *lane*: an origin and incarnation of its own, numbered 1, 2, 3…, used by one transaction at
/// a time. A lane is taken again only once the transaction that used it last has ended, as
/// PostgreSQL says (`pg_xact_status`): after a commit its next number follows; after a rollback its
/// numbers, never sent, are used again. So a receiver hears each lane's numbers in order and
/// without gaps, and keeps one sequence space per lane: a link has about as many lanes as it has
/// transactions open at once. (A post in a savepoint rolled back leaves a gap, reported and
/// harmless.)
///
/// A pure state machine: ``LinkCore`` keeps one under its lock and asks the database about the
/// transactions that it names (``transactions``) before each ``claim(in:statuses:newLane:)``.
struct TransactionalLanes {
    /// What PostgreSQL says of a transaction.
    enum Status: Equatable {
        case inProgress, committed, aborted
    }

    struct Lane: Equatable {
        let origin: UUID
        let incarnation: Incarnation
        /// The transaction that used the lane last; `nil` for a new lane.
        var transaction: UInt64?
        /// The last number taken.
        var used: UInt64 = 0
        /// The last number known to be sent (its transaction committed).
        var sent: UInt64 = 0
        /// A post of its transaction is being appended now.
        var isBusy = false
    }

    /// A number taken on a lane, for one plain copy.
    struct Claim: Equatable {
        let lane: Int
        let origin: UUID
        let incarnation: Incarnation
        let sequence: UInt64
    }

    private(set) var lanes: [Lane] = []

    /// The transactions whose status says which lanes are free: those of the lanes not in use.
    var transactions: [UInt64] {
        Array(Set(lanes.compactMap { $0.isBusy ? nil : $0.transaction })).sorted()
    }

    /// Takes the next number for a copy of `transaction`: on the lane it used already, or on a lane
    /// whose last transaction has ended (by `statuses`, asked after ``transactions``), or on a new
    /// lane from `newLane`.
    mutating func claim(
        in transaction: UInt64, statuses: [UInt64: Status], newLane: () -> (UUID, Incarnation)
    ) -> Claim {
        if let index = lanes.indices.first(where: { !lanes[$0].isBusy && lanes[$0].transaction == transaction }) {
            return take(index, in: transaction)
        }
        for index in lanes.indices where !lanes[index].isBusy {
            if let last = lanes[index].transaction {
                switch statuses[last] {
                case .committed: lanes[index].sent = lanes[index].used
                case .aborted: lanes[index].used = lanes[index].sent
                case .inProgress, nil: continue  // in use, or taken since the question
                }
            }
            return take(index, in: transaction)
        }
        let (origin, incarnation) = newLane()
        lanes.append(Lane(origin: origin, incarnation: incarnation))
        return take(lanes.count - 1, in: transaction)
    }

    private mutating func take(_ index: Int, in transaction: UInt64) -> Claim {
        lanes[index].isBusy = true
        lanes[index].transaction = transaction
        lanes[index].used += 1
        return Claim(
            lane: index, origin: lanes[index].origin, incarnation: lanes[index].incarnation,
            sequence: lanes[index].used)
    }

    /// The statement that appends the copy of `claim` completed (`isAppended`) or failed: a failed
    /// statement sends nothing, and its number is used again.
    mutating func release(_ claim: Claim, isAppended: Bool) {
        guard lanes.indices.contains(claim.lane) else { return }
        lanes[claim.lane].isBusy = false
        if !isAppended, lanes[claim.lane].used == claim.sequence { lanes[claim.lane].used -= 1 }
    }
}

extension LinkCore {
    /// Moves the link's horizon forward to `horizon`: the `xmin` of a snapshot, below which every
    /// transaction has ended. Each plain copy carries the horizon known when its post was queued.
    func noteHorizon(_ horizon: UInt64) {
        var current = self.horizon.load(ordering: .relaxed)
        while horizon > current {
            let (exchanged, original) = self.horizon.compareExchange(
                expected: current, desired: horizon, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Checks the server's version, creates the log's tables if asked to, and checks that they
    /// exist.
    func prepareDurableLog(_ durability: PostgresLink.Durability, on connection: PostgresConnection) async throws {
        let log = durability.log
        let version =
            try await boundedQuery(
                "SELECT current_setting('server_version_num')::int4", on: connection
            ).rows.first?.decode(Int32.self) ?? 0
        guard version >= 130_000 else { throw PostgresLinkError.unsupportedServer(versionNumber: Int(version)) }
        if durability.createsLog {
            let key = log.consumerLockKey("")
            _ = try await boundedQuery("BEGIN", on: connection)
            do {
                _ = try await boundedQuery("SELECT pg_advisory_xact_lock(\(key))", on: connection)
                for statement in log.migrations.flatMap(\.statements) {
                    _ = try await boundedQuery(
                        PostgresQuery(unsafeSQL: statement), on: connection, timeout: .seconds(60))
                }
                _ = try await boundedQuery("COMMIT", on: connection)
            } catch {
                _ = try? await boundedQuery("ROLLBACK", on: connection)
                throw error
            }
        }
        for table in [log.log, log.consumers, log.deletions] {
            let found = try await boundedQuery("SELECT to_regclass(\(table)) IS NOT NULL", on: connection)
            guard try found.rows.first?.decode(Bool.self) == true else {
                throw PostgresLinkError.durableLogMissing(table)
            }
        }
    }

    /// Takes a lane for the plain copy of a transactional post, on the caller's `connection` (inside
    /// its transaction), and writes the copy and the row's envelope under it: the row keeps the
    /// link's origin, and names the lane's incarnation and number, so that it names a post that no
    /// other row names and takes none of the numbers of the link's ordinary posts.
    ///
    /// - Returns: The claim (release it once the statement has run), the row's envelope and the
    ///   copy, both signed when the link has a key.
    /// - Throws: ``PostgresLinkError/Code/payloadTooLarge`` if the copy is over the `NOTIFY` limit
    ///   (the lane is released), or the connection's error.
    func claimPlainCopy(
        type: String, typeJSON: String, payloadJSON: String, on connection: PostgresConnection
    ) async throws -> (claim: TransactionalLanes.Claim, row: String, copy: String) {
        let transactions = state.withLock { $0.lanes.transactions }
        // Transaction ids this server has not handed out (after a failover) are taken as committed:
        // a number is then skipped (a reported gap), never used twice.
        let rows = try await connection.query(
            """
            SELECT pg_current_xact_id()::text::int8, ARRAY(SELECT CASE WHEN t::text::xid8 < \
            pg_snapshot_xmax(pg_current_snapshot()) THEN coalesce(pg_xact_status(t::text::xid8), 'committed') \
            ELSE 'committed' END FROM unnest(\(transactions.map { Int64(clamping: $0) })::int8[]) \
            WITH ORDINALITY AS u(t, o) ORDER BY o)
            """, logger: connectionLogger)
        var current: Int64 = 0
        var answers: [String] = []
        for try await (transaction, statuses) in rows.decode((Int64, [String]).self) {
            current = transaction
            answers = statuses
        }
        var statuses: [UInt64: TransactionalLanes.Status] = [:]
        for (transaction, answer) in zip(transactions, answers) {
            statuses[transaction] =
                switch answer {
                case "in progress": .inProgress
                case "aborted": .aborted
                default: .committed
                }
        }
        let started = writer.incarnation.started
        let claim = state.withLock { state in
            state.lanes.claim(in: UInt64(max(current, 0)), statuses: statuses) {
                (UUID(), Incarnation(id: UInt64.random(in: 0 ... .max), started: started))
            }
        }
        let item = Envelope.Item(typeName: type, typeJSON: typeJSON, payloadJSON: payloadJSON, sequence: claim.sequence)
        let issued = serverNow()
        let rowText = Envelope.Writer(
            origin: origin.uuidString, incarnation: claim.incarnation, writesLegacyEnvelopes: false
        ).text(CollectionOfOne(item))
        let copyText = Envelope.Writer(
            origin: claim.origin.uuidString, incarnation: claim.incarnation, writesLegacyEnvelopes: false
        ).text(CollectionOfOne(item), horizon: horizon.load(ordering: .relaxed))
        let copy = signer?.sign(copyText, issued: issued) ?? copyText
        guard copy.utf8.count <= PostgresLink.maximumPayloadBytes else {
            state.withLock { state in
                state.lanes.release(claim, isAppended: false)
                state.statistics.oversize += 1
            }
            throw PostgresLinkError.payloadTooLarge(
                type: type, size: copy.utf8.count, limit: PostgresLink.maximumPayloadBytes)
        }
        return (claim, signer?.sign(rowText, issued: issued) ?? rowText, copy)
    }

    /// The statement that appended the copy of `claim` completed or failed.
    func releasePlainCopy(_ claim: TransactionalLanes.Claim, isAppended: Bool) {
        state.withLock { $0.lanes.release(claim, isAppended: isAppended) }
    }
}
