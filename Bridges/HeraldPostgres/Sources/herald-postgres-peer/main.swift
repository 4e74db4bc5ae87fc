// herald-postgres-peer: a hub in a process of its own, for the tests of HeraldPostgres (and a
// manual check between two terminals).
//
//     herald-postgres-peer --channel NAME --count N [--name peer] [--other test]
//
// Connects a hub to the channel (server from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER,
// HERALD_PG_PASSWORD, HERALD_PG_DATABASE), shares `PeerNote` and `PeerDone`, prints `ready`, posts
// N notes and a `PeerDone`, then waits for the other side's `PeerDone` and checks what it got:
// the other side's N notes exactly once and in order, its own N notes once each (no echo), and no
// error. Prints a `result` line and exits 0 when all holds, 1 otherwise.
//
//     herald-postgres-peer --channel NAME --count N --service [--name peer]
//
// Runs the link as a service in a `ServiceGroup` that shuts down gracefully on SIGTERM, prints
// `ready` once it listens, and posts up to N notes, a few at a time, until the shutdown. Prints
// `sent N` (the notes the link sent before it stopped) and exits 0.
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import UnixSignals

struct PeerNote: WireNotification {
    static let wireName = "PeerNote"
    var sender: String
    var index: Int
}

struct PeerDone: WireNotification {
    static let wireName = "PeerDone"
    var sender: String
    var count: Int
}

struct Options {
    var channel = "herald_peer"
    var count = 1_000
    var name = "peer"
    var other = "test"
    var isService = false

    init(_ arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--service" {
                isService = true
                continue
            }
            let value = iterator.next() ?? ""
            switch argument {
            case "--channel": channel = value
            case "--count": count = Int(value) ?? count
            case "--name": name = value
            case "--other": other = value
            default: fail("unknown argument \(argument)")
            }
        }
    }
}

func fail(_ message: String) -> Never {
    print("herald-postgres-peer: \(message)")
    exit(2)
}

func say(_ line: String) {
    print(line)
    fflush(nil)  // every stream: the test reads the output while the peer runs
}

struct Received {
    var notes: [String: [Int]] = [:]
    var done: Set<String> = []
    var errors: [String] = []
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let environment = ProcessInfo.processInfo.environment
guard let host = environment["HERALD_PG_HOST"], let user = environment["HERALD_PG_USER"] else {
    fail("set HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER and HERALD_PG_DATABASE")
}
let configuration = PostgresConnection.Configuration(
    host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
    password: environment["HERALD_PG_PASSWORD"], database: environment["HERALD_PG_DATABASE"], tls: .disable)

let received = Mutex(Received())
let hub = NotificationHub()

if options.isService {
    let link = try PostgresLink(
        hub: hub, channel: options.channel, configuration: configuration, sharing: [PeerNote.self])
    // The link reports each post made once its shutdown has begun: then stop posting.
    let isShutDown = Atomic<Bool>(false)
    link.errorHandler = { error in
        if error.code == .postAfterShutdown { isShutDown.store(true, ordering: .relaxed) }
    }
    let logger = Logger(label: "herald-postgres-peer")
    let group = ServiceGroup(services: [link], gracefulShutdownSignals: [.sigterm], logger: logger)
    let running = Task { try await group.run() }
    try await link.listening()
    say("ready")
    var index = 0
    while index < options.count, !isShutDown.load(ordering: .relaxed) {
        hub.post(PeerNote(sender: options.name, index: index))
        index += 1
        if index % 20 == 0 { try await Task.sleep(for: .milliseconds(1)) }
    }
    try await running.value
    say("sent \(link.statistics.sent)")
    exit(0)
}
let link = try await PostgresLink.connect(
    hub: hub, channel: options.channel, configuration: configuration, sharing: [PeerNote.self, PeerDone.self])
link.errorHandler = { error in received.withLock { $0.errors.append(error.code.description) } }
let tokens = [
    hub.observe(PeerNote.self) { note in received.withLock { $0.notes[note.sender, default: []].append(note.index) } },
    hub.observe(PeerDone.self) { done in _ = received.withLock { $0.done.insert(done.sender) } },
]
say("ready")

for index in 0..<options.count { hub.post(PeerNote(sender: options.name, index: index)) }
hub.post(PeerDone(sender: options.name, count: options.count))

let clock = ContinuousClock()
let deadline = clock.now + .seconds(120)
while !received.withLock({ $0.done.contains(options.other) }) {
    guard clock.now < deadline else { break }
    try await Task.sleep(for: .milliseconds(5))
}
for token in tokens { token.cancel() }
await link.close()

let result = received.withLock { $0 }
let expected = Array(0..<options.count)
let fromOther = result.notes[options.other] ?? []
let own = result.notes[options.name] ?? []
let statistics = link.statistics
let ok =
    result.done.contains(options.other) && fromOther == expected && own == expected && result.errors.isEmpty
    && statistics.gaps == 0 && statistics.duplicates == 0
say(
    "result \(ok ? "ok" : "FAILED"): from \(options.other) \(fromOther.count) in order \(fromOther == expected),"
        + " own \(own.count) once each \(own == expected), sent \(statistics.sent),"
        + " echoes ignored \(statistics.echoesIgnored), errors [\(result.errors.joined(separator: ", "))]")
exit(ok ? 0 : 1)
