import CoreMetrics
import Synchronization

/// A link's counters, reported through swift-metrics, each with the dimension `channel`:
///
/// | Label | Kind | What |
/// | --- | --- | --- |
/// | `herald_postgres_sent_total` | counter | notifications handed to `pg_notify` |
/// | `herald_postgres_received_total` | counter | notifications received and posted into the hub |
/// | `herald_postgres_refused_total` | counter | incoming messages or notifications refused; dimension `reason`: the ``PostgresLinkError/Code`` |
/// | `herald_postgres_gaps_total` | counter | gaps in a sender's sequence numbers |
/// | `herald_postgres_send_queue_depth` | gauge | posts waiting to be sent |
/// | `herald_postgres_delivery_latency_seconds` | timer | from a signed envelope's issue time to the delivery of each of its notifications into the hub, by the database server's clock |
/// | `herald_postgres_log_rows_read_total` | counter | durable mode: rows read from the log |
/// | `herald_postgres_log_lag_rows` | gauge | durable mode: rows readable but not yet read after the last read (estimated from positions; 0 when the read was not a full batch) |
/// | `herald_postgres_log_lag_seconds` | gauge | durable mode: the age of the last row delivered, when it was delivered |
/// | `herald_postgres_log_rows_lost_total` | counter | durable mode: rows deleted by retention before the consumer read them |
final class LinkMetrics: Sendable {
    static let sentLabel = "herald_postgres_sent_total"
    static let receivedLabel = "herald_postgres_received_total"
    static let refusedLabel = "herald_postgres_refused_total"
    static let gapsLabel = "herald_postgres_gaps_total"
    static let queueDepthLabel = "herald_postgres_send_queue_depth"
    static let latencyLabel = "herald_postgres_delivery_latency_seconds"
    static let logRowsReadLabel = "herald_postgres_log_rows_read_total"
    static let logLagRowsLabel = "herald_postgres_log_lag_rows"
    static let logLagSecondsLabel = "herald_postgres_log_lag_seconds"
    static let logRowsLostLabel = "herald_postgres_log_rows_lost_total"

    private let channel: String
    private let factory: any MetricsFactory
    private let sent: Counter
    private let received: Counter
    private let gaps: Counter
    private let queueDepth: Gauge
    private let latency: CoreMetrics.Timer
    private let logRowsRead: Counter
    private let logLagRows: Gauge
    private let logLagSeconds: Gauge
    private let logRowsLost: Counter
    /// The `refused` counters, one per reason, made on first use.
    private let refused = Mutex<[String: Counter]>([:])

    init(channel: String, factory: any MetricsFactory) {
        self.channel = channel
        self.factory = factory
        let dimensions = [("channel", channel)]
        sent = Counter(label: Self.sentLabel, dimensions: dimensions, factory: factory)
        received = Counter(label: Self.receivedLabel, dimensions: dimensions, factory: factory)
        gaps = Counter(label: Self.gapsLabel, dimensions: dimensions, factory: factory)
        queueDepth = Gauge(label: Self.queueDepthLabel, dimensions: dimensions, factory: factory)
        latency = CoreMetrics.Timer(label: Self.latencyLabel, dimensions: dimensions, factory: factory)
        logRowsRead = Counter(label: Self.logRowsReadLabel, dimensions: dimensions, factory: factory)
        logLagRows = Gauge(label: Self.logLagRowsLabel, dimensions: dimensions, factory: factory)
        logLagSeconds = Gauge(label: Self.logLagSecondsLabel, dimensions: dimensions, factory: factory)
        logRowsLost = Counter(label: Self.logRowsLostLabel, dimensions: dimensions, factory: factory)
    }

    func didSend(_ count: Int) { if count > 0 { sent.increment(by: count) } }

    func didReceive(_ count: Int) { if count > 0 { received.increment(by: count) } }

    func didFindGap() { gaps.increment() }

    func queueDepth(_ depth: Int) { queueDepth.record(depth) }

    func didReadLogRows(_ count: Int) { if count > 0 { logRowsRead.increment(by: count) } }

    func logLag(rows: Int64, seconds: Double) {
        logLagRows.record(rows)
        logLagSeconds.record(seconds)
    }

    func didLoseRows(_ count: Int64) { if count > 0 { logRowsLost.increment(by: Int(clamping: count)) } }

    /// A notification issued `nanoseconds` ago was delivered; a negative time (the error of the
    /// clock offsets) counts as 0.
    func didDeliver(issuedNanosecondsAgo nanoseconds: Int64) { latency.recordNanoseconds(max(nanoseconds, 0)) }

    func didRefuse(_ reason: PostgresLinkError.Code) {
        let name = reason.description
        let counter = refused.withLock { counters in
            if let counter = counters[name] { return counter }
            let counter = Counter(
                label: Self.refusedLabel, dimensions: [("channel", channel), ("reason", name)], factory: factory)
            counters[name] = counter
            return counter
        }
        counter.increment()
    }
}
