// herald-postgres-bench: the bridge against raw postgres-nio NOTIFY → LISTEN, in the same run.
//
//     herald-postgres-bench [--samples 1000] [--burst 5000]
//
// Server from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER, HERALD_PG_PASSWORD, HERALD_PG_DATABASE.
//
// - Latency: one at a time, from `post` on hub A to the observer on hub B (each hub with its own
//   link, so its own two connections: the same path through the server as two processes), against
//   `SELECT pg_notify` on one connection to the notification on another. p50 and p99.
// - Throughput: a burst of posts on A until B has them all, against a burst of `pg_notify` on one
//   connection (each awaited, in order, as the link sends) until the listener has them all.
//
// Prints the ratios against the goals: latency at most 1.2× raw, throughput at least 0.8× raw.
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO

struct Ping: WireNotification {
    static let wireName = "Ping"
    var index: Int
}

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, default value: Int) -> Int {
    guard let at = arguments.firstIndex(of: name), at + 1 < arguments.count else { return value }
    return Int(arguments[at + 1]) ?? value
}
let samples = option("--samples", default: 1_000)
let burst = option("--burst", default: 5_000)

let environment = ProcessInfo.processInfo.environment
guard let host = environment["HERALD_PG_HOST"], let user = environment["HERALD_PG_USER"] else {
    print("herald-postgres-bench: set HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER and HERALD_PG_DATABASE")
    exit(2)
}
let configuration = PostgresConnection.Configuration(
    host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
    password: environment["HERALD_PG_PASSWORD"], database: environment["HERALD_PG_DATABASE"], tls: .disable)
let logger = Logger(label: "herald-postgres-bench")
let clock = ContinuousClock()

struct Result {
    var latencies: [Duration]
    var burst: Duration

    func percentile(_ p: Double) -> Duration {
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    var throughput: Double { Double(burstCount) / seconds(burst) }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func micros(_ duration: Duration) -> String { String(format: "%8.1f µs", seconds(duration) * 1e6) }

let burstCount = burst

/// Measures with `send(i)` and an arrival stream that yields once per message received.
func measure(
    send: (Int) async throws -> Void, arrivals: inout AsyncStream<Void>.AsyncIterator
) async throws -> Result {
    for index in 0..<50 {  // warm-up
        try await send(-1 - index)
        _ = await arrivals.next()
    }
    var latencies: [Duration] = []
    latencies.reserveCapacity(samples)
    for index in 0..<samples {
        let start = clock.now
        try await send(index)
        _ = await arrivals.next()
        latencies.append(clock.now - start)
    }
    let start = clock.now
    for index in 0..<burst { try await send(index) }
    for _ in 0..<burst { _ = await arrivals.next() }
    return Result(latencies: latencies, burst: clock.now - start)
}

// MARK: Raw postgres-nio

func raw() async throws -> Result {
    let channel = "herald_bench_raw"
    let sender = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
    let listener = try await PostgresConnection.connect(configuration: configuration, id: 2, logger: logger)
    let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
    let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
    let listening = Task {
        try await listener.listen(on: channel) { notifications in
            readyContinuation.yield()
            for try await _ in notifications { continuation.yield() }
        }
    }
    var readyIterator = ready.makeAsyncIterator()
    _ = await readyIterator.next()
    var arrivals = stream.makeAsyncIterator()
    // The same payload as the bridge's envelope, so that both move the same bytes.
    let origin = UUID().uuidString
    let result = try await measure(
        send: { index in
            let payload =
                #"{"version":1,"type":"Ping","origin":"\#(origin)","payload":{"index":\#(index)},"sequence":\#(index + 100)}"#
            try await sender.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
        }, arrivals: &arrivals)
    listening.cancel()
    try await sender.close()
    try await listener.close()
    return result
}

// MARK: The bridge

func bridge() async throws -> Result {
    let channel = "herald_bench_bridge"
    let a = NotificationHub()
    let b = NotificationHub()
    let linkA = try await PostgresLink.connect(hub: a, channel: channel, configuration: configuration)
    let linkB = try await PostgresLink.connect(hub: b, channel: channel, configuration: configuration)
    linkA.share(Ping.self)
    linkB.share(Ping.self)
    let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
    let token = b.observe(Ping.self) { _ in continuation.yield() }
    var arrivals = stream.makeAsyncIterator()
    let result = try await measure(send: { index in a.post(Ping(index: index)) }, arrivals: &arrivals)
    token.cancel()
    await linkA.close()
    await linkB.close()
    return result
}

let rawResult = try await raw()
let bridgeResult = try await bridge()
let rawAgain = try await raw()  // raw twice, around the bridge, against drift; the better one counts

let rawBest = Result(
    latencies: seconds(rawResult.percentile(0.5)) <= seconds(rawAgain.percentile(0.5))
        ? rawResult.latencies : rawAgain.latencies,
    burst: min(rawResult.burst, rawAgain.burst))

print("herald-postgres-bench: \(samples) one-at-a-time samples, a burst of \(burst)")
print("                       p50          p99          burst")
for (name, result) in [("raw postgres-nio", rawBest), ("HeraldPostgres  ", bridgeResult)] {
    print(
        "\(name)  \(micros(result.percentile(0.5)))  \(micros(result.percentile(0.99)))"
            + String(format: "  %8.0f /s", result.throughput))
}
let p50 = seconds(bridgeResult.percentile(0.5)) / seconds(rawBest.percentile(0.5))
let p99 = seconds(bridgeResult.percentile(0.99)) / seconds(rawBest.percentile(0.99))
let throughput = bridgeResult.throughput / rawBest.throughput
func verdict(_ ok: Bool) -> String { ok ? "meets the goal" : "MISSES the goal" }
print(String(format: "latency p50 %.2f× raw (goal ≤ 1.2×): ", p50) + verdict(p50 <= 1.2))
print(String(format: "latency p99 %.2f× raw (goal ≤ 1.2×): ", p99) + verdict(p99 <= 1.2))
print(String(format: "throughput  %.2f× raw (goal ≥ 0.8×): ", throughput) + verdict(throughput >= 0.8))
