import CoreMetrics
import Foundation
import Herald
import HeraldPostgres
import MetricsTestKit
import PostgresNIO
import Testing

/// The counters a link reports through swift-metrics, into a factory of the test's own (no global
/// bootstrap).
@Suite("PostgresLink metrics", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct MetricsTests {
    @Test func sentReceivedRefusedGapsAndQueueDepthAreCounted() async throws {
        let channel = TestServer.makeChannel()
        let metricsA = TestMetrics()
        let metricsB = TestMetrics()
        let a = try await Node(channel: channel, options: PostgresLink.Options(metricsFactory: metricsA))
        let b = try await Node(channel: channel, options: PostgresLink.Options(metricsFactory: metricsB))
        let raw = try await TestServer.rawConnection()
        let stranger = UUID().uuidString
        for message in [
            "not json",
            #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":1,"payload":{"userID":100}}"#,
            #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":3,"payload":{"userID":101}}"#,
            #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":3,"payload":{"userID":101}}"#,
        ] {
            try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
        }
        try await raw.close()
        for id in 1...3 { a.hub.post(UserCreated(userID: id)) }
        try await a.barrier(to: b)
        let dimensions = [("channel", channel)]
        try await waitUntil("A's sends counted") {
            metricsA.counterTotal(label: "herald_postgres_sent_total") == 4
                && (try? metricsA.expectGauge("herald_postgres_send_queue_depth", dimensions).lastValue) == 0
        }

        #expect(try metricsA.expectCounter("herald_postgres_sent_total", dimensions).totalValue == 4)
        #expect(try metricsA.expectGauge("herald_postgres_send_queue_depth", dimensions).lastValue == 0)
        #expect(try metricsB.expectCounter("herald_postgres_received_total", dimensions).totalValue == 2 + 4)
        #expect(try metricsB.expectCounter("herald_postgres_gaps_total", dimensions).totalValue == 1)
        for reason in ["malformedEnvelope", "duplicateSequence"] {
            let counter = try metricsB.expectCounter(
                "herald_postgres_refused_total", [("channel", channel), ("reason", reason)])
            #expect(counter.totalValue == 1, "\(reason)")
        }
        #expect(metricsB.counterTotal(label: "herald_postgres_refused_total") == 2)
        await a.link.close()
        await b.link.close()
    }
}
