// herald-postgres-bench: the bridge against raw postgres-nio NOTIFY → LISTEN, in the same run,
// each receiver in a process of its own.
//
//     swift run -c release herald-postgres-bench [--rounds 5] [--samples 2000] [--burst 5000] [--quick]
//         [--only raw,herald,…]
//     swift run -c release herald-postgres-bench --durable [--rounds 3] [--posters 8] [--posts 500] [--quick]
//
// Server from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER, HERALD_PG_PASSWORD, HERALD_PG_DATABASE
// (`Scripts/postgres-test.sh --bench …` starts a throwaway one and runs this).
//
// For each contender, this process (A) starts a receiver (B) as a child process (this executable
// with `--peer`):
//
// - raw: A sends `SELECT pg_notify($1, $2)` on one connection and awaits each; B `LISTEN`s on
//   another and acknowledges each message with a `pg_notify` of its own. The payload has the bytes
//   of the bridge's envelope, and B reads its fields by scanning, without a JSON parser.
// - raw, second copy: the same code again, on a channel of its own: the control. Its ratio to raw
//   would be 1.00 on a quiet machine; its spread is the noise floor of the run.
// - raw, one channel both ways: the raw code where both sides listen on the one channel they send
//   on, as linked hubs do (each `NOTIFY` then wakes two listeners).
// - HeraldPostgres: A posts on a hub linked to the channel; B observes on a hub in its process,
//   linked to the channel, and acknowledges with a post that travels back. Also signed (HMAC-SHA256),
//   and with batching off.
//
// Each contender has a database of its own (created if missing), because PostgreSQL wakes every
// listening backend of a database on each `NOTIFY`: so the idle contenders' listeners cost the
// measured one nothing.
//
// Latency: one message at a time, from the send on A (`hub.post`, or the `pg_notify` query) to the
// handler on B (the hub's observer, or the raw listener's loop), both reading the system's monotonic
// clock; B acknowledges each message before A sends the next. The contenders take turns in short
// blocks (20 samples each, all contenders' blocks of a cycle before the next cycle, in an order
// that rotates), so that the load of the machine weighs on all of them alike. The first 2 messages
// of each block are not counted: the previous contender's processes may still be finishing its last
// message (a hub hears its acknowledgement's echo after A has it), which would slow whoever comes
// next. p50 and p99 of the counted samples, after a warm-up of 50 each. Throughput: a burst of messages sent as fast as A sends them (raw: each
// `pg_notify` awaited, in order, on one connection, as an ordered sender must), from the first send
// to the last arrival on B; the contenders' bursts follow one another, in a rotating order.
//
// Prints each round, then the median of each figure across rounds, and the ratios against raw:
// the median of the per-round ratios, their range, and the ratio of the p50s of all rounds' samples
// pooled; with the goals: latency at most 1.2× raw, throughput at least 0.8× raw.
import Crypto
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#else
#error("herald-postgres-bench needs Glibc, Musl or Darwin")
#endif

struct Ping: WireNotification {
    static let wireName = "Ping"
    var index: Int
    /// When A sent it, in nanoseconds of the system's monotonic clock.
    var sentAt: UInt64
    var isBurst: Bool
}

struct Pong: WireNotification {
    static let wireName = "Pong"
    var index: Int
}

let makePipe = pipe

/// The system's monotonic clock, the same in every process, in nanoseconds.
func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func fail(_ message: String) -> Never {
    print("herald-postgres-bench: \(message)")
    exit(2)
}

// MARK: - Arguments and server

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let at = arguments.firstIndex(of: name), at + 1 < arguments.count else { return nil }
    return arguments[at + 1]
}
func option(_ name: String, default value: Int) -> Int {
    guard let text = option(name) else { return value }
    guard let number = Int(text), number > 0 else { fail("\(name) takes a positive number, not \(text)") }
    return number
}
let isQuick = arguments.contains("--quick")
let rounds = option("--rounds", default: isQuick ? 1 : 5)
let samples = option("--samples", default: isQuick ? 100 : 2_000)
let burst = option("--burst", default: isQuick ? 500 : 5_000)
let warmUp = 50
/// `--only raw,herald`: a subset of the contenders, for profiling.
let only = option("--only").map { Set($0.split(separator: ",").map(String.init)) }

let environment = ProcessInfo.processInfo.environment
let host = environment["HERALD_PG_HOST"] ?? ""
let user = environment["HERALD_PG_USER"] ?? ""
guard !host.isEmpty, !user.isEmpty else {
    fail("set HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER and HERALD_PG_DATABASE")
}
/// The server, with `database`, or the one of HERALD_PG_DATABASE.
func configuration(database: String? = environment["HERALD_PG_DATABASE"]) -> PostgresConnection.Configuration {
    PostgresConnection.Configuration(
        host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
        password: environment["HERALD_PG_PASSWORD"], database: database, tls: .disable)
}
let logger = Logger(label: "herald-postgres-bench")
/// A fixed key, for the signed contender only.
let signingKey = SymmetricKey(data: Array(repeating: UInt8(7), count: 32))

enum Contender: String, CaseIterable {
    case raw, rawControl, rawShared, herald, signed, unbatched

    var isRaw: Bool { self == .raw || self == .rawControl || self == .rawShared }

    /// The channel the receiver acknowledges on: the one it listens on, as a linked hub does, or,
    /// for `raw`, one of its own that the sender alone listens on.
    func acknowledgements(_ channel: String) -> String { self == .rawShared || !isRaw ? channel : channel + "_ack" }

    /// The contender's own database.
    var database: String { "herald_bench_\(rawValue.lowercased())" }

    var title: String {
        switch self {
        case .raw: "raw postgres-nio"
        case .rawControl: "raw, second copy (control)"
        case .rawShared: "raw, one channel both ways"
        case .herald: "HeraldPostgres"
        case .signed: "HeraldPostgres, signed"
        case .unbatched: "HeraldPostgres, no batching"
        }
    }

    /// Room for the whole burst in the send queue.
    var options: PostgresLink.Options {
        let limit = max(10_000, burst + 1)
        switch self {
        case .raw, .rawControl, .rawShared, .herald: return PostgresLink.Options(sendQueueLimit: limit)
        case .signed: return PostgresLink.Options(sendQueueLimit: limit, signingKey: signingKey)
        case .unbatched: return PostgresLink.Options(sendQueueLimit: limit, batchesBursts: false)
        }
    }
}

// MARK: - B: the receiver, in a process of its own

/// What B measured; printed as one `result` line for A.
struct Measured {
    var latencies: [UInt64] = []
    var burstNanoseconds: UInt64 = 0

    var line: String { "result \(burstNanoseconds) " + latencies.map(String.init).joined(separator: " ") }

    init() {}

    init?(line: String) {
        let fields = line.split(separator: " ")
        guard fields.first == "result", fields.count >= 2, let burst = UInt64(fields[1]) else { return nil }
        burstNanoseconds = burst
        latencies = fields.dropFirst(2).compactMap { UInt64($0) }
    }
}

/// Counts what B receives.
final class Receiver: Sendable {
    private struct State {
        var measured = Measured()
        var burstCount = 0
    }

    private let state = Mutex(State())
    let done: AsyncStream<Void>.Continuation

    init(done: AsyncStream<Void>.Continuation) { self.done = done }

    var measured: Measured { state.withLock { $0.measured } }

    /// Records one arrival; returns whether to acknowledge it.
    func arrived(index: Int, sentAt: UInt64, isBurst: Bool) -> Bool {
        let latency = now() &- sentAt
        let (acknowledge, isDone) = state.withLock { state in
            if isBurst {
                state.burstCount += 1
                guard state.burstCount == burst else { return (false, false) }
                state.measured.burstNanoseconds = latency  // a burst message's sentAt is the burst's start
                return (false, true)
            }
            if index >= 0 { state.measured.latencies.append(latency) }
            return (true, false)
        }
        if isDone { done.yield() }
        return acknowledge
    }
}

func peer(_ contender: Contender, channel: String, database: String) async throws {
    let configuration = configuration(database: database)
    let (done, doneContinuation) = AsyncStream.makeStream(of: Void.self)
    let receiver = Receiver(done: doneContinuation)
    if contender.isRaw {
        let listener = try await PostgresConnection.connect(configuration: configuration, id: 2, logger: logger)
        let sender = try await PostgresConnection.connect(configuration: configuration, id: 3, logger: logger)
        let acknowledgements = contender.acknowledgements(channel)
        let listening = Task {
            try await listener.listen(on: channel) { notifications in
                print("ready")
                fflush(nil)
                for try await notification in notifications {
                    let payload = notification.payload
                    guard let index = scan("index", in: payload), let sentAt = scan("sentAt", in: payload) else {
                        continue
                    }
                    let isBurst = payload.contains(#""isBurst":true"#)
                    if receiver.arrived(index: Int(index) ?? 0, sentAt: UInt64(sentAt) ?? 0, isBurst: isBurst) {
                        // Not awaited, as the bridge does not await its sends either.
                        let acknowledged: EventLoopFuture<PostgresQueryResult> = sender.query(
                            "SELECT pg_notify(\(acknowledgements), \(String(index)))", logger: logger)
                        acknowledged.whenComplete { _ in }
                    }
                }
            }
        }
        for await _ in done { break }
        listening.cancel()
        try await sender.close()
        try await listener.close()
    } else {
        let hub = NotificationHub()
        let link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: configuration, options: contender.options)
        link.errorHandler = { error in fail("the receiver's link reported \(error)") }
        link.share(Ping.self)
        link.share(Pong.self)
        let token = hub.observe(Ping.self) { ping in
            if receiver.arrived(index: ping.index, sentAt: ping.sentAt, isBurst: ping.isBurst) {
                hub.post(Pong(index: ping.index))
            }
        }
        print("ready")
        fflush(nil)
        for await _ in done { break }
        token.cancel()
        await link.close()
    }
    print(receiver.measured.line)
    fflush(nil)
}

/// The digits after `"name":` in `payload`, found without a JSON parser.
func scan(_ name: String, in payload: String) -> Substring? {
    guard let key = payload.range(of: "\"\(name)\":") else { return nil }
    let rest = payload[key.upperBound...]
    let end = rest.firstIndex { !($0.isNumber || $0 == "-") } ?? rest.endIndex
    return rest[..<end]
}

// MARK: - A: the sender

/// A child process running `--peer`, whose standard output A reads line by line.
struct Child {
    let pid: pid_t
    let output: UnsafeMutablePointer<FILE>

    static func spawn(_ contender: Contender, channel: String, database: String) -> Child {
        var pipe: [Int32] = [0, 0]
        guard makePipe(&pipe) == 0 else { fail("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        let command = [
            executable, "--peer", contender.rawValue, "--channel", channel, "--database", database,
            "--burst", String(burst),
        ]
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, executable, &actions, nil, &argv, environ) == 0 else { fail("cannot start a peer") }
        close(pipe[1])
        guard let output = fdopen(pipe[0], "r") else { fail("fdopen failed") }
        return Child(pid: pid, output: output)
    }

    /// The next line the child prints (blocking), or nil at its end.
    func readLine() -> String? {
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        guard getline(&line, &capacity, output) > 0, let line else { return nil }
        return String(cString: line).trimmingCharacters(in: .newlines)
    }

    func wait() {
        fclose(output)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// One contender's figures in one round.
struct Figures {
    var latencies: [UInt64]  // ns, sorted
    var p50: Double  // µs
    var p99: Double  // µs
    var throughput: Double  // messages per second

    init(_ measured: Measured) {
        latencies = measured.latencies.sorted()
        p50 = percentile(latencies, 0.5)
        p99 = percentile(latencies, 0.99)
        throughput = Double(burst) / (Double(measured.burstNanoseconds) / 1e9)
    }
}

/// The `p` quantile of sorted nanoseconds, in µs.
func percentile(_ sorted: [UInt64], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1_000
}

/// A's side of one contender in one round: its receiver process, and what A sends with.
final class Contestant {
    let contender: Contender
    let child: Child
    private var acknowledgements: AsyncStream<Void>.Iterator
    private let acknowledgement: AsyncStream<Void>.Continuation
    /// Raw: the connections and the listening task. Herald: the hub, its link and observer.
    private var raw: (sender: PostgresConnection, listener: PostgresConnection, listening: Task<Void, any Error>)?
    private var herald: (hub: NotificationHub, link: PostgresLink, token: ObservationToken)?
    private let channel: String
    private let origin = UUID().uuidString
    private var sequence = 0

    init(_ contender: Contender, round: Int, database: String) async throws {
        self.contender = contender
        channel = "herald_bench_\(contender.rawValue.lowercased())_\(getpid())_\(round)"
        child = Child.spawn(contender, channel: channel, database: database)
        guard child.readLine() == "ready" else { fail("the \(contender.rawValue) peer did not start") }
        let (acknowledged, acknowledgement) = AsyncStream.makeStream(of: Void.self)
        acknowledgements = acknowledged.makeAsyncIterator()
        self.acknowledgement = acknowledgement
        let configuration = configuration(database: database)
        if contender.isRaw {
            let sender = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
            let listener = try await PostgresConnection.connect(configuration: configuration, id: 4, logger: logger)
            let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
            let channel = channel
            let listening = Task {
                try await listener.listen(on: contender.acknowledgements(channel)) { notifications in
                    readyContinuation.yield()
                    // On one channel both ways, this connection hears its own messages too: skip them.
                    for try await notification in notifications where !notification.payload.hasPrefix("{") {
                        acknowledgement.yield()
                    }
                }
            }
            for await _ in ready { break }
            raw = (sender, listener, listening)
        } else {
            let hub = NotificationHub()
            let link = try await PostgresLink.connect(
                hub: hub, channel: channel, configuration: configuration, options: contender.options)
            link.errorHandler = { error in fail("the sender's link reported \(error)") }
            link.share(Ping.self)
            link.share(Pong.self)
            let token = hub.observe(Pong.self) { _ in acknowledgement.yield() }
            herald = (hub, link, token)
        }
    }

    /// Sends one message, as raw postgres-nio or as a post on the hub.
    private func send(_ index: Int, sentAt: UInt64, isBurst: Bool) async throws {
        if let raw {
            sequence += 1
            // The bytes of the bridge's envelope.
            let payload =
                #"{"version":1,"type":"Ping","origin":"\#(origin)","payload":{"index":\#(index),"sentAt":\#(sentAt),"isBurst":\#(isBurst)},"sequence":\#(sequence)}"#
            try await raw.sender.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
        } else if let herald {
            herald.hub.post(Ping(index: index, sentAt: sentAt, isBurst: isBurst))
        }
    }

    /// One latency sample (negative: warm-up): sends, and waits for B's acknowledgement.
    func sample(_ index: Int) async throws {
        try await send(index, sentAt: now(), isBurst: false)
        _ = await acknowledgements.next()
    }

    /// The burst, then the end: closes A's side, and reads what B measured.
    func finish() async throws -> Figures {
        let start = now()
        for index in 0..<burst { try await send(index, sentAt: start, isBurst: true) }
        if let raw {
            raw.listening.cancel()
            try await raw.sender.close()
            try await raw.listener.close()
        } else if let herald {
            await herald.link.close()  // sends everything posted
            herald.token.cancel()
        }
        acknowledgement.finish()
        guard let line = child.readLine(), let measured = Measured(line: line) else {
            fail("the \(contender.rawValue) peer printed no result")
        }
        child.wait()
        return Figures(measured)
    }
}

/// The contenders of this run, `raw` first.
let contenders = Contender.allCases.filter { $0 == .raw || (only?.contains($0.rawValue) ?? true) }

/// Each contender's database: created if missing, or, if that is not allowed, the one of
/// HERALD_PG_DATABASE for all (then every `NOTIFY` wakes the other contenders' listeners too).
func prepareDatabases() async throws -> [Contender: String] {
    let connection = try await PostgresConnection.connect(configuration: configuration(), id: 0, logger: logger)
    defer { Task { try? await connection.close() } }
    var databases: [Contender: String] = [:]
    for contender in contenders {
        let name = contender.database
        let rows = try await connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger)
        var exists = false
        for try await _ in rows { exists = true }
        if !exists {
            do {
                // A constant identifier of this program's, not user input.
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            } catch {
                print(
                    "herald-postgres-bench: cannot create databases (\(String(reflecting: error))); all contenders "
                        + "share \(environment["HERALD_PG_DATABASE"] ?? "the default database")")
                return [:]
            }
        }
        databases[contender] = name
    }
    return databases
}

// MARK: - Main

if let role = option("--peer") {
    guard let contender = Contender(rawValue: role), let channel = option("--channel"),
        let database = option("--database")
    else {
        fail("--peer takes one of \(Contender.allCases.map(\.rawValue)), --channel and --database")
    }
    try await peer(contender, channel: channel, database: database)
    exit(0)
}

func format(_ figures: Figures) -> String {
    String(format: "%9.1f µs  %9.1f µs  %9.0f /s", figures.p50, figures.p99, figures.throughput)
}
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
func pad(_ text: String) -> String { text.padding(toLength: 32, withPad: " ", startingAt: 0) }

// `--durable`: durable mode against raw postgres-nio, one transaction per post (Durable.swift).
if arguments.contains("--durable") {
    try await runDurableBench(
        configuration: configuration(), logger: logger, rounds: option("--rounds", default: isQuick ? 1 : 3),
        posters: option("--posters", default: 8), perPoster: option("--posts", default: isQuick ? 50 : 500))
    exit(0)
}

let databases = try await prepareDatabases()
print(
    "herald-postgres-bench: \(rounds) rounds; each: \(samples) one-at-a-time samples per contender after "
        + "\(warmUp) warm-up, taken in turns of 20, then a burst of \(burst) each; every receiver in a process of its "
        + "own, every contender in a database of its own")
print(pad("") + "      p50          p99          burst")
var results: [Contender: [Figures]] = [:]
for round in 1...rounds {
    print("round \(round)")
    var contestants: [Contestant] = []
    for contender in contenders {
        let database = databases[contender] ?? environment["HERALD_PG_DATABASE"] ?? user
        contestants.append(try await Contestant(contender, round: round, database: database))
    }
    for contestant in contestants {
        for index in -warmUp..<0 { try await contestant.sample(index) }
    }
    // Cycles of one block per contender, starting with a different one each cycle.
    let block = 20
    let settling = 2
    for (cycle, start) in stride(from: 0, to: samples, by: block).enumerated() {
        for turn in 0..<contestants.count {
            let contestant = contestants[(cycle + turn) % contestants.count]
            for _ in 0..<settling { try await contestant.sample(-1) }  // not counted
            for index in start..<min(start + block, samples) { try await contestant.sample(index) }
        }
    }
    var figures: [Contender: Figures] = [:]
    for turn in 0..<contestants.count {
        let contestant = contestants[(round + turn) % contestants.count]
        figures[contestant.contender] = try await contestant.finish()
    }
    for contender in contenders {
        guard let figures = figures[contender] else { continue }
        results[contender, default: []].append(figures)
        print(pad("  " + contender.title) + format(figures))
    }
}

print("median of \(rounds) rounds")
for contender in contenders {
    let figures = results[contender] ?? []
    var middle = Figures(Measured())
    middle.p50 = median(figures.map(\.p50))
    middle.p99 = median(figures.map(\.p99))
    middle.throughput = median(figures.map(\.throughput))
    print(pad("  " + contender.title) + format(middle))
}

func verdict(_ ok: Bool) -> String { ok ? "meets the goal" : "MISSES the goal" }
let raw = results[.raw] ?? []
/// The p50 of all rounds' samples together.
func pooledP50(_ figures: [Figures]) -> Double { percentile(figures.flatMap(\.latencies).sorted(), 0.5) }
print("ratios to raw: median of the \(rounds) per-round ratios (their range); pooled: p50 of all samples")
for contender in contenders where contender != .raw {
    let figures = results[contender] ?? []
    func ratios(_ figure: (Figures) -> Double) -> [Double] { zip(figures, raw).map { figure($0) / figure($1) } }
    func describe(_ values: [Double]) -> String {
        String(format: "%.2f× (%.2f–%.2f)", median(values), values.min() ?? .nan, values.max() ?? .nan)
    }
    let p50 = ratios(\.p50)
    let p99 = ratios(\.p99)
    let throughput = ratios(\.throughput)
    let pooled = pooledP50(figures) / pooledP50(raw)
    print("  \(contender.title)")
    print(
        "    latency p50 \(describe(p50)), pooled \(String(format: "%.2f×", pooled)), goal ≤ 1.2×: "
            + verdict(median(p50) <= 1.2))
    print("    latency p99 \(describe(p99)), goal ≤ 1.2×: \(verdict(median(p99) <= 1.2))")
    print("    throughput  \(describe(throughput)), goal ≥ 0.8×: \(verdict(median(throughput) >= 0.8))")
}
