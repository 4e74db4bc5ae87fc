import Foundation
import Herald

extension PostgresLink {
    /// Durable mode: each shared post is appended to a log table, and this link reads the log as a
    /// named consumer, from its stored position; see the README's "Durable mode".
    ///
    /// ```swift
    /// var options = PostgresLink.Options()
    /// options.durability = try PostgresLink.Durability(log: try DurableLog(), consumer: "billing-1")
    /// ```
    public struct Durability: Sendable {
        /// The log's tables.
        public var log: DurableLog
        /// The consumer's name: its position is stored under it, and one live link at a time may
        /// read under it (``PostgresLinkError/Code/consumerInUse``). Give each process of a service
        /// its own, stable across restarts (every consumer receives every notification).
        public var consumer: String
        /// Where a consumer without a stored position starts; ``DurableStart/latest`` by default.
        public var start: DurableStart
        /// How often the link reads the log without a wake-up `NOTIFY`: rows that become readable
        /// because an unrelated transaction ended get none. One second by default. A write-only
        /// link (``Phase/writeOnly``) reads nothing: this is how often it takes the horizon of its
        /// plain copies and stores its consumer's position.
        public var pollInterval: Duration
        /// The most rows read, and held in memory, at a time; 500 by default. The position is
        /// stored after a batch at most every 200 ms while rows arrive, within the poll interval
        /// after the last, and when the link stops.
        public var batchSize: Int
        /// Whether the link creates the log's tables (migration version 1) when they are missing;
        /// `false` by default: the application runs ``DurableLog/migrations``.
        public var createsLog: Bool
        /// A retention that this link applies (``DurableLog/retentionStatement(maximumRows:maximumAge:)``),
        /// every ``Retention/interval``; `nil`, the default, for none (a scheduled job may run the
        /// statement instead). One link of a service is enough.
        public var retention: Retention?
        /// How long a consumer may go without an update before the link deletes it
        /// (``DurableLog/consumerExpiryStatement(olderThan:)``, run with the retention, if any);
        /// seven days by default, `nil` for never.
        public var consumerExpiry: Duration?
        /// Where the link stands in a switch of a running service from plain to durable mode;
        /// ``Phase/reading`` by default (durable mode proper). Switch in three deployments, none of
        /// which loses a notification: ``Phase/writeOnly``, then ``Phase/readingWithPlainCopies``,
        /// then ``Phase/reading``; see the README's "Switching a running service to durable mode".
        ///
        /// ```swift
        /// var durability = try PostgresLink.Durability(log: try DurableLog(), consumer: "orders-1")
        /// durability.phase = .writeOnly  // deployment 1 of the switch
        /// options.durability = durability
        /// ```
        public var phase = Phase.reading

        /// - Throws: ``PostgresLinkError`` with code ``PostgresLinkError/Code/invalidConsumerName``.
        public init(
            log: DurableLog, consumer: String, start: DurableStart = .latest, pollInterval: Duration = .seconds(1),
            batchSize: Int = 500, createsLog: Bool = false, retention: Retention? = nil,
            consumerExpiry: Duration? = .seconds(7 * 24 * 3_600)
        ) throws(PostgresLinkError) {
            guard (1...200).contains(consumer.utf8.count) else { throw .invalidConsumerName(consumer) }
            self.log = log
            self.consumer = consumer
            self.start = start
            self.pollInterval = max(pollInterval, .milliseconds(10))
            self.batchSize = min(max(batchSize, 1), 10_000)
            self.createsLog = createsLog
            self.retention = retention
            self.consumerExpiry = consumerExpiry
        }
    }

    /// How many rows a durable log keeps, and how often a link applies it.
    public struct Retention: Sendable, Hashable {
        /// The most rows kept; `nil` for no bound by count.
        public var maximumRows: Int?
        /// The oldest a kept row may be; `nil` for no bound by age.
        public var maximumAge: Duration?
        /// How often the link deletes what is past the bounds; one minute by default.
        public var interval: Duration

        public init(maximumRows: Int? = nil, maximumAge: Duration? = nil, interval: Duration = .seconds(60)) {
            self.maximumRows = maximumRows
            self.maximumAge = maximumAge
            self.interval = max(interval, .milliseconds(100))
        }
    }
}

/// Where a new durable consumer starts reading (one whose name has no position stored yet).
public struct DurableStart: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case latest, earliest
        case after(DurablePosition)
        case issued(Date)
    }

    let kind: Kind

    /// With the rows of the transactions that had not ended when the consumer was created (and
    /// every later one): what is posted from now on. It may include a few rows of transactions
    /// that committed just before.
    public static let latest = DurableStart(kind: .latest)
    /// With the oldest row kept.
    public static let earliest = DurableStart(kind: .earliest)

    /// With the first row after `position` in the log's order.
    public static func after(_ position: DurablePosition) -> DurableStart { DurableStart(kind: .after(position)) }

    /// With the first row, in the log's order, issued at or after `date` (by the database server's
    /// clock); at ``latest`` if there is none.
    public static func issued(since date: Date) -> DurableStart { DurableStart(kind: .issued(date)) }
}
