// herald-postgres-durable-peer: a process of the durable-mode chaos run (Scripts/durable-chaos.sh)
// and of the failover run (Scripts/durable-failover.sh).
//
//     herald-postgres-durable-peer --role poster --name P --table T --channel C --count N
//         [--rollback-percent 10] [--long-per-mille 2]
//
// Posts `ChaosNote(poster: P, sequence: 1…N)`, each in a transaction of its own that also inserts
// `(P, sequence)` into `chaos_truth`, the ground truth: some transactions are rolled back, a few
// stay open for 100–300 ms. After any failure (a terminated connection, a restarted server, a
// failed `COMMIT`) it reconnects and goes on after the highest sequence that `chaos_truth` holds
// for P. Prints `done` when N is reached.
//
//     herald-postgres-durable-peer --role reader --name R --table T --channel C --output FILE
//
// Reads the log as consumer R, from the earliest row, and appends a line `tx position poster
// sequence` to FILE for each delivery (before the link stores its position), after a line `start`,
// and a line `error DESCRIPTION` for each error the link reports (but `.connectionLost` and
// `.consumerInUse`), in the order they come. Runs until it is killed.
//
//     herald-postgres-durable-peer --role migration --table T
//
// Prints the log's migration (`DurableLog.migration(table:)`), for `psql`.
//
// The server comes from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER, HERALD_PG_PASSWORD and
// HERALD_PG_DATABASE.
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO

struct ChaosNote: WireNotification {
    static let wireName = "ChaosNote"
    var poster: String
    var sequence: Int
}

struct Arguments {
    var role = ""
    var name = ""
    var table = "herald_chaos"
    var channel = "herald_chaos_wake"
    var count = 1_000
    var output = ""
    var rollbackPercent = 10
    var longPerMille = 2

    init(_ arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--role": role = value
            case "--name": name = value
            case "--table": table = value
            case "--channel": channel = value
            case "--count": count = Int(value) ?? count
            case "--output": output = value
            case "--rollback-percent": rollbackPercent = Int(value) ?? rollbackPercent
            case "--long-per-mille": longPerMille = Int(value) ?? longPerMille
            default: fail("unknown argument \(argument)")
            }
        }
    }
}

func fail(_ message: String) -> Never {
    print("herald-postgres-durable-peer: \(message)")
    exit(2)
}

func say(_ line: String) {
    print(line)
    fflush(nil)
}

let arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
if arguments.role == "migration" {
    do {
        say(try DurableLog.migration(table: arguments.table))
        exit(0)
    } catch {
        fail("\(error)")
    }
}
let environment = ProcessInfo.processInfo.environment
guard let host = environment["HERALD_PG_HOST"], let user = environment["HERALD_PG_USER"] else {
    fail("set HERALD_PG_HOST and HERALD_PG_USER")
}
let configuration = PostgresConnection.Configuration(
    host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
    password: environment["HERALD_PG_PASSWORD"], database: environment["HERALD_PG_DATABASE"], tls: .disable)
let logger = Logger(label: "herald-postgres-durable-peer")

/// Connects a durable link as consumer `consumer`, trying again while the server is away or the
/// name is still held by a killed process's session; `reported` is given each error the link
/// reports, but lost connections and a name still held.
func connectLink(
    hub: NotificationHub, consumer: String, reported: @escaping @Sendable (PostgresLinkError) -> Void = { _ in }
) async -> PostgresLink {
    while true {
        do {
            var options = PostgresLink.Options(
                reconnection: PostgresLink.Reconnection(initialDelay: .milliseconds(50), maximumDelay: .seconds(1)))
            options.durability = try PostgresLink.Durability(
                log: try DurableLog(table: arguments.table), consumer: consumer, start: .earliest)
            let link = try await PostgresLink.connect(
                hub: hub, channel: arguments.channel, configuration: configuration, sharing: [ChaosNote.self],
                options: options)
            link.errorHandler = { error in
                if error.code != .connectionLost && error.code != .consumerInUse {
                    say("error \(error)")
                    reported(error)
                }
            }
            return link
        } catch {
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}

func connect() async -> PostgresConnection {
    while true {
        if let connection = try? await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger) {
            return connection
        }
        try? await Task.sleep(for: .milliseconds(100))
    }
}

/// The highest sequence that the ground truth holds for this poster.
func committed(on connection: PostgresConnection) async throws -> Int {
    let rows = try await connection.query(
        "SELECT coalesce(max(sequence), 0)::int8 FROM chaos_truth WHERE poster = \(arguments.name)", logger: logger)
    var value = 0
    for try await count in rows.decode(Int64.self) { value = Int(count) }
    return value
}

func runPoster() async {
    let hub = NotificationHub()
    // Its own consumer reads the log too (every durable link does); nothing observes it here.
    let link = await connectLink(hub: hub, consumer: "poster-\(arguments.name)")
    var connection = await connect()
    var sequence = 0
    while true {
        do {
            sequence = try await committed(on: connection) + 1
            break
        } catch {
            try? await connection.close()
            connection = await connect()
        }
    }
    var (commits, rollbacks, failures) = (0, 0, 0)
    while sequence <= arguments.count {
        let roll = Int.random(in: 0..<1_000)
        do {
            try await connection.query("BEGIN", logger: logger)
            try await connection.query(
                "INSERT INTO chaos_truth (poster, sequence) VALUES (\(arguments.name), \(sequence))", logger: logger)
            try await link.post(ChaosNote(poster: arguments.name, sequence: sequence), in: connection)
            if roll < arguments.longPerMille { try await Task.sleep(for: .milliseconds(Int.random(in: 100...300))) }
            if roll >= 1_000 - arguments.rollbackPercent * 10 {
                try await connection.query("ROLLBACK", logger: logger)
                rollbacks += 1
            } else {
                try await connection.query("COMMIT", logger: logger)
                commits += 1
            }
            sequence += 1
        } catch {
            // The outcome of the transaction is unknown (an error from COMMIT proves nothing): go on
            // after what the ground truth holds.
            failures += 1
            try? await connection.close()
            while true {
                connection = await connect()
                if let last = try? await committed(on: connection) {
                    sequence = last + 1
                    break
                }
                try? await connection.close()
            }
        }
    }
    try? await connection.close()
    say("done commits \(commits) rollbacks \(rollbacks) failures \(failures)")
    await link.close()
}

/// Appends lines to a file with `write(2)`: what was written survives a `kill -9`.
final class Output: Sendable {
    let descriptor: Int32

    init(path: String) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if descriptor < 0 { fail("cannot open \(path)") }
    }

    func append(_ line: String) {
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return -1 }
                return write(descriptor, base + offset, buffer.count - offset)
            }
            if written <= 0 { fail("cannot write") }
            offset += written
        }
    }
}

func runReader() async {
    let output = Output(path: arguments.output)
    output.append("start")
    let hub = NotificationHub()
    let token = hub.observe(DurableDelivery<ChaosNote>.self) { delivery in
        output.append(
            "\(delivery.position.transaction) \(delivery.position.position) "
                + "\(delivery.notification.poster) \(delivery.notification.sequence)")
    }
    let link = await connectLink(hub: hub, consumer: arguments.name) { error in output.append("error \(error)") }
    say("ready")
    while true { try? await Task.sleep(for: .seconds(3_600)) }
    withExtendedLifetime((token, link)) {}
}

switch arguments.role {
case "poster": await runPoster()
case "reader": await runReader()
default: fail("--role poster, --role reader or --role migration")
}
