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
    /// 2. ``readingWithPlainCopies``, once no plain link is left and the instances have received
    ///    the plain links' last posts (a plain post still on its way to an instance when it stops is
    ///    missed, as in plain mode): the link reads the log as its consumer, from where the
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

/// The horizon that a durable link's plain copies carry, for the write-only links that hear them.
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
}
