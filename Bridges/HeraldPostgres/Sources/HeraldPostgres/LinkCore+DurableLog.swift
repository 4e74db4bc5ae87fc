import Foundation
import Herald
import Logging
import PostgresNIO
import Synchronization

/// How a link in durable mode keeps its log: checks and prepares the tables, appends its posts
/// (ordinary and transactional), and applies the retention and the consumer expiry.
extension LinkCore {
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

    /// The statement that appends `items`, in order, one row each, and wakes the readers: an
    /// `INSERT` in a data-modifying `WITH`, which runs to completion whatever the `SELECT` reads.
    /// With `plainCopy`, the `NOTIFY` carries it instead of an empty payload.
    func appendQuery(_ items: [Envelope.Item], log: DurableLog, plainCopy: String? = nil) -> PostgresQuery {
        var sequences: [Int64] = []
        var types: [String] = []
        var payloads: [String] = []
        sequences.reserveCapacity(items.count)
        types.reserveCapacity(items.count)
        payloads.reserveCapacity(items.count)
        for item in items {
            let text = writer.text(CollectionOfOne(item))
            sequences.append(Int64(clamping: item.sequence))
            types.append(item.typeName)
            payloads.append(signer?.sign(text, issued: serverNow()) ?? text)
        }
        let incarnation = writer.incarnation.idText
        return """
            WITH appended AS (INSERT INTO \(unescaped: log.log) (origin, incarnation, sequence, type, payload) \
            SELECT \(origin)::uuid, \(incarnation), s, t, p \
            FROM unnest(\(sequences)::int8[], \(types)::text[], \(payloads)::text[]) WITH ORDINALITY AS u(s, t, p, o) \
            ORDER BY o) \
            SELECT pg_notify(\(channel), \(plainCopy ?? ""))
            """
    }

    /// Appends one notification inside the caller's transaction; see ``PostgresLink/post(_:in:)``.
    func append<N: WireNotification>(_ notification: N, in connection: PostgresConnection) async throws {
        guard let durability = options.durability else { throw PostgresLinkError.notDurable() }
        let typeJSON: String
        let payloadJSON: String
        do {
            // The shared type's encoding, kept since it was shared, as a plain post's.
            let encoding = try encoding(of: N.self)
            typeJSON = encoding.typeJSON
            payloadJSON = String(decoding: try encoding.encoder.encode(notification), as: UTF8.self)
        } catch {
            throw PostgresLinkError.encodingFailed(type: N.wireName, error: error)
        }
        let sequence: UInt64
        let incarnation: String
        let payload: String
        var copy: (claim: TransactionalLanes.Claim, text: String)?
        if durability.phase.sendsPlainCopies {
            // The copy, committed with the transaction, goes under a lane of its own, which the row
            // names too (see ``TransactionalLanes``).
            let (claim, row, text) = try await claimPlainCopy(
                type: N.wireName, typeJSON: typeJSON, payloadJSON: payloadJSON, on: connection)
            (sequence, incarnation, payload, copy) = (claim.sequence, claim.incarnation.idText, row, (claim, text))
        } else {
            // A number of its own, so that the row names a post that no other row names; a
            // rolled-back post leaves its number unused, which no reader reports (rows are checked
            // by position).
            sequence = state.withLock { state in
                defer { state.nextSequence += 1 }
                return state.nextSequence
            }
            let item = Envelope.Item(
                typeName: N.wireName, typeJSON: typeJSON, payloadJSON: payloadJSON, sequence: sequence)
            let text = writer.text(CollectionOfOne(item))
            payload = signer?.sign(text, issued: serverNow()) ?? text
            incarnation = writer.incarnation.idText
        }
        let query: PostgresQuery = """
            WITH appended AS (INSERT INTO \(unescaped: durability.log.log) \
            (origin, incarnation, sequence, type, payload, transactional) \
            VALUES (\(origin)::uuid, \(incarnation), \(Int64(clamping: sequence)), \(N.wireName), \(payload), true)) \
            SELECT pg_notify(\(channel), \(copy?.text ?? ""))
            """
        do {
            try await connection.query(query, logger: connectionLogger)
        } catch {
            if let copy { releasePlainCopy(copy.claim, isAppended: false) }
            throw error
        }
        if let copy { releasePlainCopy(copy.claim, isAppended: true) }
    }

    /// Applies the log's retention and deletes the expired consumers, as `durability` asks: what a
    /// reading or write-only link's housekeeping runs when ``DurableMaintenance`` says it is due.
    func maintainDurableLog(_ durability: PostgresLink.Durability, on connection: PostgresConnection) async throws {
        let log = durability.log
        if let retention = durability.retention {
            let statement = log.retentionStatement(maximumRows: retention.maximumRows, maximumAge: retention.maximumAge)
            _ = try await boundedQuery(PostgresQuery(unsafeSQL: statement), on: connection, timeout: .seconds(600))
        }
        if let expiry = durability.consumerExpiry {
            _ = try await boundedQuery(
                PostgresQuery(unsafeSQL: log.consumerExpiryStatement(olderThan: expiry)), on: connection)
        }
    }
}

extension PostgresLink.Durability {
    /// How long a reading or write-only link lets its consumer's row go without an update, so that
    /// it does not expire while the link runs: a minute, or a quarter of ``consumerExpiry`` if that
    /// is shorter.
    var heartbeat: Duration {
        consumerExpiry.map { min(.seconds(60), $0 / 4) } ?? .seconds(60)
    }
}

/// When a link last maintained the durable log (``LinkCore/maintainDurableLog(_:on:)``), and so
/// whether it is due again: the schedule that a reader's housekeeping and a write-only link's
/// share. A pure state machine, kept under the link's lock.
struct DurableMaintenance {
    /// When maintenance was last taken; `nil` before the first time.
    private(set) var maintainedAt: ContinuousClock.Instant?

    /// Whether maintenance is due at `now`, and if so takes it (a run that then fails waits out the
    /// interval too): never when `durability` has neither a retention nor a consumer expiry;
    /// otherwise the first time, then every ``PostgresLink/Retention/interval`` (every minute
    /// without a retention).
    mutating func take(at now: ContinuousClock.Instant, for durability: PostgresLink.Durability) -> Bool {
        guard durability.retention != nil || durability.consumerExpiry != nil else { return false }
        let interval = durability.retention?.interval ?? .seconds(60)
        guard maintainedAt.map({ now - $0 >= interval }) ?? true else { return false }
        maintainedAt = now
        return true
    }
}
