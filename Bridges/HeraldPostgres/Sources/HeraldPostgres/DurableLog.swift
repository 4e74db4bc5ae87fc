import Foundation
import Herald

/// The tables of a durable log: where a ``PostgresLink`` in durable mode appends each shared post,
/// and from which each of its consumers reads, at its own position.
///
/// The application creates the tables with the versioned migration (``migrations``, or
/// ``migration(schema:table:)`` as one script), or lets the link create them
/// (``PostgresLink/Durability/createsLog``):
///
/// ```swift
/// let log = try DurableLog(schema: "public", table: "herald_log")
/// for migration in log.migrations {
///     for statement in migration.statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
/// }
/// ```
///
/// Three tables, named after `table`:
///
/// - `table`: the log. `position` (an identity), `tx` (the `xid8` of the transaction that wrote the
///   row), the envelope's origin, incarnation, sequence and type, `payload` (the envelope, signed
///   when the links have keys; no size bound), whether it was posted inside an application's
///   transaction, and when it was `issued`. Its order is by `(tx, position)`.
/// - `table_consumers`: each durable consumer's name, position and last update.
/// - `table_deletions`: the ranges that retention deleted, with the count of rows in each, by which
///   a consumer that was further behind learns exactly what it lost.
///
/// Needs PostgreSQL 13 or later.
public struct DurableLog: Sendable, Hashable {
    /// The schema of the three tables.
    public let schema: String
    /// The log's table; the other two are named after it.
    public let table: String

    /// The longest table name: the derived names (`_consumers`, `_deletions_last`) must stay
    /// within PostgreSQL's 63 bytes.
    public static let maximumTableNameLength = 48

    /// A log in `schema`, in the table `table`.
    ///
    /// - Parameters:
    ///   - schema: A plain lower-case identifier of 1 to 63 bytes; `public` by default.
    ///   - table: A plain lower-case identifier of 1 to ``maximumTableNameLength`` bytes;
    ///     `herald_log` by default.
    /// - Throws: ``PostgresLinkError`` with code ``PostgresLinkError/Code/invalidIdentifier``,
    ///   naming what was expected and what was found.
    public init(schema: String = "public", table: String = "herald_log") throws(PostgresLinkError) {
        guard Self.isPlainIdentifier(schema, maximumLength: 63) else {
            throw .invalidIdentifier("schema", schema, maximumLength: 63)
        }
        guard Self.isPlainIdentifier(table, maximumLength: Self.maximumTableNameLength) else {
            throw .invalidIdentifier("table", table, maximumLength: Self.maximumTableNameLength)
        }
        self.schema = schema
        self.table = table
    }

    static func isPlainIdentifier(_ name: String, maximumLength: Int) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...maximumLength).contains(bytes.count), let first = bytes.first else { return false }
        func isLetter(_ byte: UInt8) -> Bool { (97...122).contains(byte) || byte == 95 }
        return isLetter(first) && bytes.allSatisfy { isLetter($0) || (48...57).contains($0) }
    }

    /// The log's table, qualified and quoted.
    var log: String { #""\#(schema)"."\#(table)""# }
    /// The consumers' table, qualified and quoted.
    var consumers: String { #""\#(schema)"."\#(table)_consumers""# }
    /// The table of deleted ranges, qualified and quoted.
    var deletions: String { #""\#(schema)"."\#(table)_deletions""# }

    /// One step of the log's schema: its version, and the statements that take the schema from the
    /// version before to it. Each statement may run again (`IF NOT EXISTS`).
    public struct Migration: Sendable, Hashable {
        /// 1, 2, …: apply them in order.
        public let version: Int
        /// The SQL statements, to run in order, each on its own or all in one transaction.
        public let statements: [String]
    }

    /// The versioned migrations of this log's schema, oldest first. Version 1 creates the three
    /// tables and their indexes.
    public var migrations: [Migration] {
        [
            Migration(
                version: 1,
                statements: [
                    #"CREATE SCHEMA IF NOT EXISTS "\#(schema)""#,
                    """
                    CREATE TABLE IF NOT EXISTS \(log) (
                        position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
                        origin uuid NOT NULL,
                        incarnation text NOT NULL,
                        sequence bigint NOT NULL,
                        type text NOT NULL,
                        payload text NOT NULL,
                        transactional boolean NOT NULL DEFAULT false,
                        issued timestamptz NOT NULL DEFAULT clock_timestamp()
                    )
                    """,
                    #"CREATE INDEX IF NOT EXISTS "\#(table)_order" ON \#(log) (tx, position)"#,
                    """
                    CREATE TABLE IF NOT EXISTS \(consumers) (
                        name text PRIMARY KEY,
                        tx xid8 NOT NULL,
                        position bigint NOT NULL,
                        updated_at timestamptz NOT NULL DEFAULT now()
                    )
                    """,
                    """
                    CREATE TABLE IF NOT EXISTS \(deletions) (
                        first_tx xid8 NOT NULL,
                        first_position bigint NOT NULL,
                        last_tx xid8 NOT NULL,
                        last_position bigint NOT NULL,
                        count bigint NOT NULL,
                        deleted_at timestamptz NOT NULL DEFAULT now()
                    )
                    """,
                    #"CREATE INDEX IF NOT EXISTS "\#(table)_deletions_last" ON \#(deletions) (last_tx, last_position)"#,
                ])
        ]
    }

    /// The whole migration as one SQL script, every version in order, each statement ended by `;`.
    ///
    /// - Parameters:
    ///   - schema: As for ``init(schema:table:)``.
    ///   - table: As for ``init(schema:table:)``.
    /// - Returns: The script.
    /// - Throws: As ``init(schema:table:)``.
    public static func migration(
        schema: String = "public", table: String = "herald_log"
    ) throws(PostgresLinkError)
        -> String
    {
        let log = try DurableLog(schema: schema, table: table)
        return log.migrations.map { migration in
            "-- version \(migration.version)\n" + migration.statements.map { $0 + ";\n" }.joined()
        }.joined()
    }

    /// The retention statement: deletes, in one statement, the oldest rows of the log (a prefix in
    /// log order, of rows whose transaction has ended), keeping at most `maximumRows` rows and no row
    /// issued more than `maximumAge` ago (either may be `nil`), and records each deleted range, with
    /// its count, in the deletions table, split at each consumer's position, so that every
    /// consumer that had not read them learns the exact range and count
    /// (``PostgresLinkError/Code/rowsDeleted``).
    ///
    /// Run it from a scheduled job, or let a link run it (``PostgresLink/Durability/retention``).
    ///
    /// - Parameters:
    ///   - maximumRows: The most rows to keep; `nil` for no bound by count.
    ///   - maximumAge: The oldest a kept row may be, by its `issued` time; `nil` for no bound by age.
    /// - Returns: One SQL statement; with both bounds `nil`, one that deletes nothing.
    public func retentionStatement(maximumRows: Int?, maximumAge: Duration?) -> String {
        let finished = "tx < pg_snapshot_xmin(pg_current_snapshot())"
        var candidates: [String] = []
        if let maximumAge {
            let milliseconds = LinkCore.milliseconds(maximumAge)
            candidates.append(
                """
                (SELECT tx, position FROM \(log) WHERE \(finished) \
                AND issued < now() - interval '\(milliseconds) milliseconds' ORDER BY tx DESC, position DESC LIMIT 1)
                """)
        }
        if let maximumRows {
            candidates.append(
                """
                (SELECT tx, position FROM \(log) WHERE \(finished) \
                ORDER BY tx DESC, position DESC OFFSET \(max(maximumRows, 0)) LIMIT 1)
                """)
        }
        if candidates.isEmpty { candidates.append("(SELECT tx, position FROM \(log) WHERE false)") }
        return """
            WITH cutoff AS (
                SELECT tx, position FROM (\(candidates.joined(separator: " UNION ALL "))) AS candidate
                ORDER BY tx DESC, position DESC LIMIT 1
            ), doomed AS (
                DELETE FROM \(log) AS l USING cutoff
                WHERE (l.tx, l.position) <= (cutoff.tx, cutoff.position)
                RETURNING l.tx, l.position
            ), segments AS (
                SELECT d.tx, d.position,
                    (SELECT count(*) FROM \(consumers) AS c WHERE (c.tx, c.position) < (d.tx, d.position)) AS segment
                FROM doomed AS d
            ), ranked AS (
                SELECT segment, tx, position,
                    row_number() OVER (PARTITION BY segment ORDER BY tx, position) AS from_start,
                    row_number() OVER (PARTITION BY segment ORDER BY tx DESC, position DESC) AS from_end,
                    count(*) OVER (PARTITION BY segment) AS rows
                FROM segments
            )
            INSERT INTO \(deletions) (first_tx, first_position, last_tx, last_position, count)
            SELECT f.tx, f.position, l.tx, l.position, f.rows
            FROM ranked AS f JOIN ranked AS l ON f.segment = l.segment AND f.from_start = 1 AND l.from_end = 1
            """
    }

    /// The key of the session-level advisory lock that the reading connection of the consumer
    /// named `consumer` holds while its link runs (one `bigint` key: in `pg_locks`, the high half
    /// is `classid`, the low half `objid`, and `objsubid` is 1); for monitoring.
    ///
    /// - Parameter consumer: The consumer's name.
    /// - Returns: 64 bits of FNV-1a over the log's schema and table and the consumer's name.
    public func consumerLockKey(_ consumer: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "herald-consumer:\(schema).\(table):\(consumer)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// The statement that deletes the consumers not updated for `age` (their position is lost:
    /// a consumer of that name starts again as new). A link updates its consumer's row at least
    /// every quarter of ``PostgresLink/Durability/consumerExpiry`` while it runs.
    ///
    /// - Parameter age: How long a consumer may go without an update.
    /// - Returns: One SQL statement.
    public func consumerExpiryStatement(olderThan age: Duration) -> String {
        "DELETE FROM \(consumers) WHERE updated_at < now() - interval '\(LinkCore.milliseconds(age)) milliseconds'"
    }
}

/// A place in a durable log, in its order: the transaction id (`xid8`) of the row's transaction,
/// then the row's `position` within the log.
///
/// The log's order: rows of one transaction in the order they were posted; rows of different
/// transactions in the order of their transaction ids, which PostgreSQL hands out when a
/// transaction first writes (so a transaction that began writing earlier comes first, even if it
/// commits later).
public struct DurablePosition: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The transaction id (`xid8`) of the row's transaction.
    public var transaction: UInt64
    /// The row's `position` column.
    public var position: Int64

    public init(transaction: UInt64, position: Int64) {
        self.transaction = transaction
        self.position = position
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.transaction, lhs.position) < (rhs.transaction, rhs.position)
    }

    /// `transaction:position`.
    public var description: String { "\(transaction):\(position)" }

    /// Before every row.
    static let start = DurablePosition(transaction: 0, position: 0)
}
