import Crypto
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import Synchronization
import Testing

/// The PostgreSQL server of the tests, from HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER,
/// HERALD_PG_PASSWORD (optional) and HERALD_PG_DATABASE. `Scripts/postgres-test.sh` starts one.
enum TestServer {
    static let environment = ProcessInfo.processInfo.environment

    static let configuration: PostgresConnection.Configuration? = {
        guard let host = environment["HERALD_PG_HOST"], let user = environment["HERALD_PG_USER"] else {
            return nil
        }
        return PostgresConnection.Configuration(
            host: host, port: Int(environment["HERALD_PG_PORT"] ?? "") ?? 5432, username: user,
            password: environment["HERALD_PG_PASSWORD"], database: environment["HERALD_PG_DATABASE"], tls: .disable)
    }()

    /// In CI (CI=true) the suites always run, and fail without a server; elsewhere they skip.
    static let shouldRun = configuration != nil || environment["CI"] == "true"

    static let missing = """
        no PostgreSQL server configured: set HERALD_PG_HOST, HERALD_PG_PORT, HERALD_PG_USER and \
        HERALD_PG_DATABASE, or run Scripts/postgres-test.sh
        """

    static func requireConfiguration() throws -> PostgresConnection.Configuration {
        try #require(configuration, Comment(rawValue: missing))
    }

    /// A channel of its own for each test, so that tests can run in parallel.
    static func makeChannel() -> String {
        "herald_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    static let logger = Logger(label: "HeraldPostgresTests")

    /// Fast reconnection for the tests that break connections.
    static let fastReconnection = PostgresLink.Reconnection(
        initialDelay: .milliseconds(20), maximumDelay: .milliseconds(500))

    /// A plain connection, for messages that no link would send.
    static func rawConnection() async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: try requireConfiguration(), id: 9_999, logger: logger)
    }
}

/// A thread-safe list of what arrived.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Mutex<[Value]>([])

    func append(_ value: Value) { storage.withLock { $0.append(value) } }

    var values: [Value] { storage.withLock { $0 } }

    var count: Int { storage.withLock { $0.count } }
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Waits until `condition` holds: the only way to see a message from another connection arrive.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(60), _ condition: @Sendable () -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        guard clock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

// MARK: - Notification types of the tests

struct UserCreated: WireNotification, NotificationConvertible, Equatable {
    static let notificationName = Notification.Name("UserCreated")
    var userID: Int
}

struct OrderPlaced: WireNotification, Equatable {
    static let wireName = "OrderPlaced"
    var orderID: Int
    var item: String
}

/// Posted by the other side after the values under test: since each origin's messages arrive in
/// order, and an echo would have been sent before it, its arrival proves that nothing else is coming.
struct Barrier: WireNotification, Equatable {
    static let wireName = "Barrier"
    var id: Int
}

struct Blob: WireNotification, Equatable {
    static let wireName = "Blob"
    var text: String
}

/// One hub with its link, observers and error list, as one process would have it.
struct Node {
    let hub = NotificationHub()
    let link: PostgresLink
    let errors = Recorder<PostgresLinkError>()
    /// What reached the hub's `errorHandler` (with `reportsToHub`).
    let failures = Recorder<ObserverFailure>()
    let users = Recorder<UserCreated>()
    let orders = Recorder<OrderPlaced>()
    let barriers = Recorder<Barrier>()
    let blobs = Recorder<Blob>()
    let tokens: [ObservationToken]

    init(
        channel: String,
        sharing types: [any WireNotification.Type] = [UserCreated.self, OrderPlaced.self, Barrier.self],
        configuration: PostgresConnection.Configuration? = nil,
        origin: UUID = UUID(),
        options: PostgresLink.Options = PostgresLink.Options(),
        logger: Logger = Logger(label: "HeraldPostgres"),
        reportsToHub: Bool = false
    )
        async throws
    {
        let hub = self.hub
        link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: try configuration ?? TestServer.requireConfiguration(),
            origin: origin, options: options, logger: logger)
        let errors = self.errors
        if reportsToHub {
            // The link has no error handler of its own: its errors reach the hub's.
            let failures = self.failures
            hub.errorHandler = { failure in
                failures.append(failure)
                if let error = failure.error as? PostgresLinkError { errors.append(error) }
            }
        } else {
            link.errorHandler = { errors.append($0) }
        }
        for type in types { link.share(type) }
        let (users, orders, barriers, blobs) = (self.users, self.orders, self.barriers, self.blobs)
        tokens = [
            hub.observe(UserCreated.self) { users.append($0) },
            hub.observe(OrderPlaced.self) { orders.append($0) },
            hub.observe(Barrier.self) { barriers.append($0) },
            hub.observe(Blob.self) { blobs.append($0) },
        ]
    }

    /// Posts a barrier from `self` and waits until `other` has it: everything `self` sent before,
    /// and everything `other` would have echoed back before, has then arrived.
    func barrier(to other: Node, id: Int = 1) async throws {
        hub.post(Barrier(id: id))
        try await waitUntil("barrier \(id)") { other.barriers.values.contains(Barrier(id: id)) }
    }
}

/// The second cluster that `Scripts/postgres-test.sh` starts for the restart test, which stops and
/// starts it midway: HERALD_PG_CTL, HERALD_PG_DATA, HERALD_PG_LOG, HERALD_PG_RUN_AS (the user to run
/// pg_ctl as; empty for this user) and HERALD_PG_RESTART_PORT.
enum RestartableServer {
    static let environment = ProcessInfo.processInfo.environment

    static let isConfigured = environment["HERALD_PG_CTL"] != nil && environment["HERALD_PG_DATA"] != nil

    static let missing = """
        no restartable PostgreSQL cluster configured: set HERALD_PG_CTL, HERALD_PG_DATA, HERALD_PG_LOG, \
        HERALD_PG_RUN_AS and HERALD_PG_RESTART_PORT, or run Scripts/postgres-test.sh
        """

    static func configuration() throws -> PostgresConnection.Configuration {
        var configuration = try TestServer.requireConfiguration()
        let port = try #require(Int(environment["HERALD_PG_RESTART_PORT"] ?? ""), Comment(rawValue: missing))
        configuration = PostgresConnection.Configuration(
            host: environment["HERALD_PG_HOST"] ?? "127.0.0.1", port: port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: .disable)
        return configuration
    }

    /// Runs `pg_ctl -D <data> -w <arguments>`, as HERALD_PG_RUN_AS when set.
    static func pgCtl(_ arguments: [String]) async throws {
        let pgCtl = try #require(environment["HERALD_PG_CTL"], Comment(rawValue: missing))
        let data = try #require(environment["HERALD_PG_DATA"], Comment(rawValue: missing))
        var command = [pgCtl, "-D", data, "-w", "-t", "60"] + arguments
        if let user = environment["HERALD_PG_RUN_AS"], !user.isEmpty {
            command = ["/usr/sbin/runuser", "-u", user, "--"] + command
        }
        let status = try await Subprocess.spawn(command, output: "/dev/null").wait()
        try #require(status == 0, "pg_ctl \(arguments.joined(separator: " ")) failed")
    }

    static func stop() async throws { try await pgCtl(["-m", "fast", "stop"]) }

    static func start() async throws {
        try await pgCtl(["-l", environment["HERALD_PG_LOG"] ?? "/dev/null", "start"])
    }

    /// Stops the cluster, starts it as a standby with no primary (a `standby.signal` file) and
    /// promotes it: it comes back with every row, on a new timeline, as a promoted replica does.
    static func promote() async throws {
        let data = try #require(environment["HERALD_PG_DATA"], Comment(rawValue: missing))
        try await stop()
        try #require(FileManager.default.createFile(atPath: data + "/standby.signal", contents: Data()))
        try await start()
        try await pgCtl(["promote"])
    }
}

/// A child process, started with `posix_spawn` and reaped with `waitpid`. (Foundation's
/// `Process.waitUntilExit` was seen to hang inside a test's task on Linux, leaving the child a zombie.)
struct Subprocess: Sendable {
    let pid: pid_t

    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `command` (an absolute path and its arguments), its standard output and error going to
    /// the file at `output`, and its environment this process's.
    static func spawn(_ command: [String], output: String) throws -> Subprocess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, &argv, environ)
        guard result == 0 else { throw Failed(description: "posix_spawn \(command[0]): error \(result)") }
        return Subprocess(pid: pid)
    }

    /// Waits for the process to end, polling so that no thread of the concurrency pool blocks, and
    /// returns its exit status (or 128 + the signal that ended it).
    func wait(timeout: Duration = .seconds(120)) async throws -> Int32 {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            guard result == 0 else { throw Failed(description: "waitpid \(pid): errno \(errno)") }
            guard clock.now < deadline else {
                kill(pid, SIGKILL)
                throw TimedOut(what: "process \(pid) to exit")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// Signs `envelope` as a link would: HMAC-SHA256 over the channel, a zero byte, and the envelope
/// with the key id and the issue time in front; or, `legacy`, as earlier releases did: over the
/// envelope alone.
func signedEnvelope(
    _ envelope: String, key: SymmetricKey, channel: String, keyID: String = "default", issued: Date = Date(),
    legacy: Bool = false
) -> String {
    let milliseconds = UInt64(issued.timeIntervalSince1970 * 1_000)
    let canonical = legacy ? envelope : #"{"key":"\#(keyID)","issued":\#(milliseconds),"# + envelope.dropFirst()
    let mac = HMAC<SHA256>.authenticationCode(for: Array(channel.utf8) + [0] + Array(canonical.utf8), using: key)
    return #"{"signature":""# + Data(mac).base64EncodedString() + #"","# + canonical.dropFirst()
}
