// Durable mode against raw postgres-nio (`herald-postgres-bench --durable`): one transaction per
// post from concurrent posters, each on a connection of its own, as fast as they go.
//
// - raw: each post is `BEGIN`, an `INSERT` into a table with a `bigserial` id and a `NOTIFY`
//   carrying the id (one statement), `COMMIT`; the reader `LISTEN`s and, on each notification,
//   selects the rows with `id > last` (which skips a row whose transaction commits after a later
//   id's: it counts them).
// - durable: each post is `BEGIN`, `PostgresLink.post(_:in:)` (the row and the wake-up `NOTIFY` in
//   one statement), `COMMIT`; the same link, as the one consumer of a service instance, reads the
//   log and delivers every post to its hub (as raw has one reader).
//
// Latency: from the post's start (before `BEGIN`) to the reader's handler, by the monotonic clock
// of this process; p50 and p99 of all posts; and from the end of its `COMMIT` to the handler. Throughput: posts per second from the first post's
// start to the last arrival. Also, with no goal: durable mode's p50 while an unrelated write
// transaction stays open for the first second of the run.
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import Synchronization

struct DurablePing: WireNotification {
    static let wireName = "DurablePing"
    /// When the post began, in nanoseconds of the monotonic clock.
    var sentAt: UInt64
    var filler: String
}

/// What one run measured.
struct DurableRun {
    var latencies: [UInt64]
    /// From the end of each post's `COMMIT` to its arrival.
    var afterCommit: [UInt64]
    var seconds: Double
    /// Raw only: rows that the `id > last` reader never saw.
    var skipped = 0

    var p50: Double { percentile(latencies.sorted(), 0.5) }
    var p99: Double { percentile(latencies.sorted(), 0.99) }
    var afterCommitP50: Double { percentile(afterCommit.sorted(), 0.5) }
    var afterCommitP99: Double { percentile(afterCommit.sorted(), 0.99) }
    var throughput: Double { Double(latencies.count + skipped) / seconds }
}

/// Collects latencies, and wakes a waiter once `expected` have arrived.
final class Arrivals: Sendable {
    private struct State {
        var latencies: [UInt64] = []
        var arrivals: [UInt64: UInt64] = [:]
        var commits: [UInt64: UInt64] = [:]
        var lastArrival: UInt64 = 0
        var waiter: CheckedContinuation<Void, Never>?
        var expected: Int
    }

    private let state: Mutex<State>

    init(expected: Int) { state = Mutex(State(expected: expected)) }

    func arrived(sentAt: UInt64) {
        let time = now()
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.latencies.append(time &- sentAt)
            state.arrivals[sentAt] = time
            state.lastArrival = time
            guard state.latencies.count >= state.expected else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once `expected` arrived, or after `timeout`.
    func wait(timeout: Duration) async {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.release()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isDone = state.withLock { state in
                if state.latencies.count >= state.expected { return true }
                state.waiter = continuation
                return false
            }
            if isDone { continuation.resume() }
        }
        timer.cancel()
    }

    private func release() {
        let waiter = state.withLock { state in
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The post begun at `sentAt` committed now.
    func committed(sentAt: UInt64) {
        let time = now()
        state.withLock { $0.commits[sentAt] = time }
    }

    var result: (latencies: [UInt64], afterCommit: [UInt64], lastArrival: UInt64) {
        state.withLock { state in
            let afterCommit = state.arrivals.compactMap { sentAt, arrival in
                state.commits[sentAt].map { arrival >= $0 ? arrival - $0 : 0 }
            }
            return (state.latencies, afterCommit, state.lastArrival)
        }
    }
}

/// Runs `posters` tasks, each on a connection of its own, each calling `post` `count` times.
func runPosters(
    posters: Int, count: Int, configuration: PostgresConnection.Configuration, logger: Logger,
    post: @escaping @Sendable (PostgresConnection) async throws -> Void
) async throws {
    var connections: [PostgresConnection] = []
    for index in 0..<posters {
        connections.append(
            try await PostgresConnection.connect(configuration: configuration, id: 100 + index, logger: logger))
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        for connection in connections {
            group.addTask {
                for _ in 0..<count { try await post(connection) }
            }
        }
        try await group.waitForAll()
    }
    for connection in connections { try await connection.close() }
}

let durableFiller = String(repeating: "x", count: 120)

func runRawTransactions(
    table: String, posters: Int, perPoster: Int, configuration: PostgresConnection.Configuration, logger: Logger
) async throws -> DurableRun {
    let channel = "bench_raw_wake_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    let listener = try await PostgresConnection.connect(configuration: configuration, id: 90, logger: logger)
    let reader = try await PostgresConnection.connect(configuration: configuration, id: 91, logger: logger)
    var start: Int64 = 0
    for try await id in try await reader.query(
        "SELECT coalesce(max(id), 0)::int8 FROM \(unescaped: table)", logger: logger
    ).decode(Int64.self) {
        start = id
    }
    let total = posters * perPoster
    let arrivals = Arrivals(expected: total)
    let highest = Mutex<Int64>(0)
    let (listening, listeningContinuation) = AsyncStream.makeStream(of: Void.self)
    let readerTask = Task {
        try await listener.listen(on: channel) { notifications in
            listeningContinuation.yield()
            var last = start
            for try await _ in notifications {
                let rows = try await reader.query(
                    "SELECT id, sent_at FROM \(unescaped: table) WHERE id > \(last) ORDER BY id", logger: logger)
                for try await (id, sentAt) in rows.decode((Int64, Int64).self) {
                    arrivals.arrived(sentAt: UInt64(sentAt))
                    last = id
                }
                highest.withLock { $0 = last }
            }
        }
    }
    var iterator = listening.makeAsyncIterator()
    await iterator.next()
    let began = now()
    try await runPosters(posters: posters, count: perPoster, configuration: configuration, logger: logger) {
        connection in
        let sentAt = now()
        try await connection.query("BEGIN", logger: logger)
        try await connection.query(
            """
            WITH row AS (INSERT INTO \(unescaped: table) (sent_at, payload) \
            VALUES (\(Int64(sentAt)), \(durableFiller)) RETURNING id) \
            SELECT pg_notify(\(channel), (SELECT id::text FROM row))
            """, logger: logger)
        try await connection.query("COMMIT", logger: logger)
        arrivals.committed(sentAt: sentAt)
    }
    // Every row whose notification arrived was read, or skipped for good.
    await arrivals.wait(timeout: .seconds(5))
    readerTask.cancel()
    _ = try? await readerTask.value
    try await listener.close()
    try await reader.close()
    let (latencies, afterCommit, lastArrival) = arrivals.result
    return DurableRun(
        latencies: latencies, afterCommit: afterCommit, seconds: Double(lastArrival &- began) / 1e9,
        skipped: total - latencies.count)
}

func runDurableTransactions(
    log: DurableLog, round: Int, posters: Int, perPoster: Int, holdsHorizon: Bool,
    configuration: PostgresConnection.Configuration, logger: Logger
) async throws -> DurableRun {
    let channel = "bench_log_wake_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    let total = posters * perPoster
    let arrivals = Arrivals(expected: total)
    // One service instance: its link posts on the posters' connections and reads the log as its
    // one consumer, as raw has one reader.
    let hub = NotificationHub()
    let token = hub.observe(DurablePing.self) { ping in arrivals.arrived(sentAt: ping.sentAt) }
    var options = PostgresLink.Options()
    options.durability = try PostgresLink.Durability(log: log, consumer: "bench-\(channel)")
    let link = try await PostgresLink.connect(
        hub: hub, channel: channel, configuration: configuration, sharing: [DurablePing.self], options: options)
    var holder: Task<Void, any Error>?
    if holdsHorizon {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 92, logger: logger)
        try await connection.query("BEGIN", logger: logger)
        try await connection.query("SELECT pg_current_xact_id()", logger: logger)
        holder = Task {
            try await Task.sleep(for: .seconds(1))
            try await connection.query("COMMIT", logger: logger)
            try await connection.close()
        }
    }
    let began = now()
    try await runPosters(posters: posters, count: perPoster, configuration: configuration, logger: logger) {
        connection in
        let sentAt = now()
        try await connection.query("BEGIN", logger: logger)
        try await link.post(DurablePing(sentAt: sentAt, filler: durableFiller), in: connection)
        try await connection.query("COMMIT", logger: logger)
        arrivals.committed(sentAt: sentAt)
    }
    await arrivals.wait(timeout: .seconds(120))
    try await holder?.value
    withExtendedLifetime(token) {}
    let statistics = link.statistics
    print("  (durable: \(statistics.logReads) reads of the log for \(statistics.logRowsRead) rows)")
    await link.close()
    let (latencies, afterCommit, lastArrival) = arrivals.result
    if latencies.count < total { print("  durable: only \(latencies.count) of \(total) arrived") }
    return DurableRun(latencies: latencies, afterCommit: afterCommit, seconds: Double(lastArrival &- began) / 1e9)
}

func runDurableBench(
    configuration: PostgresConnection.Configuration, logger: Logger, rounds: Int, posters: Int, perPoster: Int
) async throws {
    let suffix = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
    let table = "bench_raw_\(suffix)"
    let log = try DurableLog(table: "bench_log_\(suffix)")
    let setup = try await PostgresConnection.connect(configuration: configuration, id: 93, logger: logger)
    try await setup.query(
        PostgresQuery(
            unsafeSQL: "CREATE TABLE \(table) (id bigserial PRIMARY KEY, sent_at int8 NOT NULL, payload text NOT NULL)"),
        logger: logger)
    for statement in log.migrations.flatMap(\.statements) {
        try await setup.query(PostgresQuery(unsafeSQL: statement), logger: logger)
    }
    print(
        "herald-postgres-bench --durable: \(rounds) rounds; each: \(posters) posters x \(perPoster) posts, "
            + "one transaction per post, raw then durable")
    /// `percentile` gives microseconds.
    func milliseconds(_ microseconds: Double) -> String { String(format: "%.2f ms", microseconds / 1e3) }
    func describe(_ run: DurableRun) -> String {
        "p50 \(milliseconds(run.p50))  p99 \(milliseconds(run.p99))  after COMMIT: p50 "
            + "\(milliseconds(run.afterCommitP50))  p99 \(milliseconds(run.afterCommitP99))  "
            + String(format: "%.0f posts/s", run.throughput)
            + (run.skipped > 0 ? "  (\(run.skipped) rows skipped by id > last)" : "")
    }
    var raws: [DurableRun] = []
    var durables: [DurableRun] = []
    for round in 1...rounds {
        let raw = try await runRawTransactions(
            table: table, posters: posters, perPoster: perPoster, configuration: configuration, logger: logger)
        let durable = try await runDurableTransactions(
            log: log, round: round, posters: posters, perPoster: perPoster, holdsHorizon: false,
            configuration: configuration, logger: logger)
        print("round \(round)")
        print("  raw      " + describe(raw))
        print("  durable  " + describe(durable))
        raws.append(raw)
        durables.append(durable)
    }
    let held = try await runDurableTransactions(
        log: log, round: 0, posters: posters, perPoster: perPoster, holdsHorizon: true, configuration: configuration,
        logger: logger)
    let p50 = zip(durables, raws).map { $0.p50 / $1.p50 }
    let throughput = zip(durables, raws).map { $0.throughput / $1.throughput }
    func verdict(_ ok: Bool) -> String { ok ? "meets the goal" : "MISSES the goal" }
    func range(_ values: [Double]) -> String {
        String(format: "%.2f× (%.2f–%.2f)", median(values), values.min() ?? .nan, values.max() ?? .nan)
    }
    print("durable against raw: median of the per-round ratios (their range)")
    print("  latency p50 \(range(p50)), goal ≤ 1.5×: \(verdict(median(p50) <= 1.5))")
    print("  throughput  \(range(throughput)), goal ≥ 0.8×: \(verdict(median(throughput) >= 0.8))")
    print("  durable while an unrelated write transaction stays open for 1 s: " + describe(held))
    try await setup.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"), logger: logger)
    try await setup.close()
}
