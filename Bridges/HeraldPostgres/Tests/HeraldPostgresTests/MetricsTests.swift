import CoreMetrics
import Crypto
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
        try await withRawConnection { raw in
            let stranger = UUID().uuidString
            for message in [
                "not json",
                #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":1,"payload":{"userID":100}}"#,
                #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":3,"payload":{"userID":101}}"#,
                #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":3,"payload":{"userID":101}}"#,
            ] {
                try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
            }
        }
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

    /// Signed envelopes carry their issue time: each notification's time from it to its delivery
    /// into the receiving hub is recorded. Unsigned ones carry none, and record nothing.
    @Test func theLatencyFromIssueToDeliveryIsTimedForSignedEnvelopes() async throws {
        let channel = TestServer.makeChannel()
        let key = SymmetricKey(size: .bits256)
        let metricsB = TestMetrics()
        let metricsC = TestMetrics()
        let a = try await Node(channel: channel, options: PostgresLink.Options(signingKey: key))
        let b = try await Node(
            channel: channel, options: PostgresLink.Options(signingKey: key, metricsFactory: metricsB))
        let c = try await Node(channel: channel, options: PostgresLink.Options(metricsFactory: metricsC))
        let clock = ContinuousClock()
        let start = clock.now
        for id in 1...3 { a.hub.post(UserCreated(userID: id)) }
        try await a.barrier(to: b)
        let label = "herald_postgres_delivery_latency_seconds"
        try await waitUntil("B's deliveries timed") {
            (try? metricsB.expectTimer(label, [("channel", channel)]))?.values.count == 4
        }
        let elapsed = clock.now - start

        let values = try metricsB.expectTimer(label, [("channel", channel)]).values
        #expect(values.count == 4)
        // Issue times are by A's estimate of the server's clock, and the latency by B's: each link
        // takes its offset to the server's clock when it connects, off by up to half that round
        // trip (tens of milliseconds on a loaded machine). Both links run on this machine's clock,
        // so the difference of their offsets is exactly the error; issue times and offsets are in
        // whole milliseconds.
        let skew = a.link.serverClockOffset - b.link.serverClockOffset
        let bound = elapsed + (skew < .zero ? .zero - skew : skew) + .milliseconds(3)
        #expect(
            values.allSatisfy { $0 >= 0 && Duration.nanoseconds($0) <= bound },
            "\(values) ns, within \(bound)")
        // C has no key: it accepts the signed envelopes unchecked, and times none of them.
        try await waitUntil("C's deliveries") { c.users.count == 3 }
        #expect(try metricsC.expectTimer(label, [("channel", channel)]).values.isEmpty)
        await a.link.close()
        await b.link.close()
        await c.link.close()
    }
}
