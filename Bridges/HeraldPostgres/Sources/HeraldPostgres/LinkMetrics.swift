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
final class LinkMetrics: Sendable {
    static let sentLabel = "herald_postgres_sent_total"
    static let receivedLabel = "herald_postgres_received_total"
    static let refusedLabel = "herald_postgres_refused_total"
    static let gapsLabel = "herald_postgres_gaps_total"
    static let queueDepthLabel = "herald_postgres_send_queue_depth"
    static let latencyLabel = "herald_postgres_delivery_latency_seconds"

    private let channel: String
    private let factory: any MetricsFactory
    private let sent: Counter
    private let received: Counter
    private let gaps: Counter
    private let queueDepth: Gauge
    private let latency: CoreMetrics.Timer
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
    }

    func didSend(_ count: Int) { if count > 0 { sent.increment(by: count) } }

    func didReceive(_ count: Int) { if count > 0 { received.increment(by: count) } }

    func didFindGap() { gaps.increment() }

    func queueDepth(_ depth: Int) { queueDepth.record(depth) }

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
