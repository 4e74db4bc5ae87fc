// herald-postgres-bench: the bridge against raw postgres-nio NOTIFY → LISTEN, in the same run,
// each receiver in a process of its own.
//
//     swift run -c release herald-postgres-bench [--rounds 5] [--samples 1000] [--burst 5000] [--quick]
//
// Server from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER, HERALD_PG_PASSWORD, HERALD_PG_DATABASE
// (`Scripts/postgres-test.sh --bench …` starts a throwaway one and runs this).
//
// Each round measures every contender in turn, interleaved, so that drift hits them alike. For
// each, this process (A) starts a receiver (B) as a child process (this executable with `--peer`):
//
// - raw: A sends `SELECT pg_notify($1, $2)` on one connection and awaits each; B `LISTEN`s on
//   another and acknowledges each message with a `pg_notify` of its own. The payload has the bytes
//   of the bridge's envelope, and B reads its fields by scanning, without a JSON parser.
// - HeraldPostgres: A posts on a hub linked to the channel; B observes on a hub in its process,
//   linked to the channel, and acknowledges with a post that travels back. Also signed (HMAC-SHA256),
//   and with batching off.
//
// Latency: one message at a time, from the send on A to the handler on B (both read the system's
// monotonic clock), after a warm-up of 50; p50 and p99. Throughput: a burst of messages sent as
// fast as A sends them, from the first send to the last arrival on B.
//
// Prints each round, then the median of each figure across rounds, and the ratios against raw
// (median, and the range across rounds) with the goals: latency at most 1.2× raw, throughput at
// least 0.8× raw.
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
let samples = option("--samples", default: isQuick ? 100 : 1_000)
let burst = option("--burst", default: isQuick ? 500 : 5_000)
let warmUp = 50
/// `--only raw,herald`: a subset of the contenders, for profiling.
let only = option("--only").map { Set($0.split(separator: ",").map(String.init)) }

let environment = ProcessInfo.processInfo.environment
guard let host = environment["HERALD_PG_HOST"], let user = environment["HERALD_PG_USER"] else {
    fail("set HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER and HERALD_PG_DATABASE")
}
let configuration = PostgresConnection.Configuration(
    host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
    password: environment["HERALD_PG_PASSWORD"], database: environment["HERALD_PG_DATABASE"], tls: .disable)
let logger = Logger(label: "herald-postgres-bench")
/// A fixed key, for the signed contender only.
let signingKey = SymmetricKey(data: Array(repeating: UInt8(7), count: 32))

enum Contender: String, CaseIterable {
    case raw, rawShared, herald, signed, unbatched

    var isRaw: Bool { self == .raw || self == .rawShared }

    /// The channel the receiver acknowledges on: the one it listens on, as a linked hub does, or,
    /// for `raw`, one of its own that the sender alone listens on.
    func acknowledgements(_ channel: String) -> String { self == .raw ? channel + "_ack" : channel }

    var title: String {
        switch self {
        case .raw: "raw postgres-nio"
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
        case .raw, .rawShared, .herald: return PostgresLink.Options(sendQueueLimit: limit)
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

func peer(_ contender: Contender, channel: String) async throws {
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

    static func spawn(_ contender: Contender, channel: String) -> Child {
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
        let command = [executable, "--peer", contender.rawValue, "--channel", channel, "--burst", String(burst)]
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
    var p50: Double  // µs
    var p99: Double  // µs
    var throughput: Double  // messages per second

    init(_ measured: Measured) {
        let sorted = measured.latencies.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1_000
        }
        p50 = percentile(0.5)
        p99 = percentile(0.99)
        throughput = Double(burst) / (Double(measured.burstNanoseconds) / 1e9)
    }
}

func measure(_ contender: Contender, round: Int) async throws -> Figures {
    let channel = "herald_bench_\(contender.rawValue)_\(getpid())_\(round)"
    let child = Child.spawn(contender, channel: channel)
    guard child.readLine() == "ready" else { fail("the \(contender.rawValue) peer did not start") }
    let (acknowledged, acknowledgement) = AsyncStream.makeStream(of: Void.self)
    var acknowledgements = acknowledged.makeAsyncIterator()

    if contender.isRaw {
        let sender = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        let listener = try await PostgresConnection.connect(configuration: configuration, id: 4, logger: logger)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
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
        // The bytes of the bridge's envelope.
        let origin = UUID().uuidString
        var sequence = 0
        func send(_ index: Int, sentAt: UInt64, isBurst: Bool) async throws {
            sequence += 1
            let payload =
                #"{"version":1,"type":"Ping","origin":"\#(origin)","payload":{"index":\#(index),"sentAt":\#(sentAt),"isBurst":\#(isBurst)},"sequence":\#(sequence)}"#
            try await sender.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
        }
        for index in -warmUp..<samples {
            try await send(index, sentAt: now(), isBurst: false)
            _ = await acknowledgements.next()
        }
        let start = now()
        for index in 0..<burst { try await send(index, sentAt: start, isBurst: true) }
        listening.cancel()
        try await sender.close()
        try await listener.close()
    } else {
        let hub = NotificationHub()
        let link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: configuration, options: contender.options)
        link.errorHandler = { error in fail("the sender's link reported \(error)") }
        link.share(Ping.self)
        link.share(Pong.self)
        let token = hub.observe(Pong.self) { _ in acknowledgement.yield() }
        for index in -warmUp..<samples {
            hub.post(Ping(index: index, sentAt: now(), isBurst: false))
            _ = await acknowledgements.next()
        }
        let start = now()
        for index in 0..<burst { hub.post(Ping(index: index, sentAt: start, isBurst: true)) }
        await link.close()  // sends everything posted
        token.cancel()
    }
    guard let line = child.readLine(), let measured = Measured(line: line) else {
        fail("the \(contender.rawValue) peer printed no result")
    }
    child.wait()
    return Figures(measured)
}

// MARK: - Main

if let role = option("--peer") {
    guard let contender = Contender(rawValue: role), let channel = option("--channel") else {
        fail("--peer takes one of \(Contender.allCases.map(\.rawValue)) and --channel")
    }
    try await peer(contender, channel: channel)
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

print(
    "herald-postgres-bench: \(rounds) rounds; each: \(samples) one-at-a-time samples after \(warmUp) warm-up, "
        + "a burst of \(burst); the receiver in another process")
print(pad("") + "      p50          p99          burst")
var results: [Contender: [Figures]] = [:]
for round in 1...rounds {
    print("round \(round)")
    for contender in Contender.allCases where only?.contains(contender.rawValue) ?? true {
        let figures = try await measure(contender, round: round)
        results[contender, default: []].append(figures)
        print(pad("  " + contender.title) + format(figures))
    }
}

print("median of \(rounds) rounds")
for contender in Contender.allCases {
    let figures = results[contender] ?? []
    var middle = Figures(Measured())
    middle.p50 = median(figures.map(\.p50))
    middle.p99 = median(figures.map(\.p99))
    middle.throughput = median(figures.map(\.throughput))
    print(pad("  " + contender.title) + format(middle))
}

func verdict(_ ok: Bool) -> String { ok ? "meets the goal" : "MISSES the goal" }
let raw = results[.raw] ?? []
print("ratios to raw: median (range across rounds)")
for contender in Contender.allCases where contender != .raw {
    let figures = results[contender] ?? []
    func ratios(_ figure: (Figures) -> Double) -> [Double] { zip(figures, raw).map { figure($0) / figure($1) } }
    func describe(_ values: [Double]) -> String {
        String(format: "%.2f× (%.2f–%.2f)", median(values), values.min() ?? .nan, values.max() ?? .nan)
    }
    let p50 = ratios(\.p50)
    let p99 = ratios(\.p99)
    let throughput = ratios(\.throughput)
    print("  \(contender.title)")
    print("    latency p50 \(describe(p50)), goal ≤ 1.2×: \(verdict(median(p50) <= 1.2))")
    print("    latency p99 \(describe(p99)), goal ≤ 1.2×: \(verdict(median(p99) <= 1.2))")
    print("    throughput  \(describe(throughput)), goal ≥ 0.8×: \(verdict(median(throughput) >= 0.8))")
}
