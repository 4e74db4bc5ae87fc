import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import ServiceLifecycle
import Testing

/// Posts made after a link's shutdown began, in each way a shutdown begins, and what a cancelled run
/// reports, against a real server.
@Suite("PostgresLink shutdown", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct ShutdownTests {
    /// How a test ends the link's run.
    enum Ending: CaseIterable, Sendable {
        case close, gracefulShutdown, cancellation
    }

    /// Posts 3 values after `ending` and checks that they reached the local observers only, each
    /// reported as `.postAfterShutdown`.
    @Test(arguments: Ending.allCases)
    func postsAfterTheShutdownBeganStayLocalAndAreReported(_ ending: Ending) async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel)
        let hub = NotificationHub()
        let link = try PostgresLink(hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(UserCreated.self)
        let local = Recorder<UserCreated>()
        let token = hub.observe(UserCreated.self) { local.append($0) }
        // In a service group for its graceful shutdown (a service group takes a service that
        // returns before the shutdown for a failure, so `close()` is tried on a plain run).
        let group = ServiceGroup(services: [link], logger: TestServer.logger)
        let running =
            ending == .gracefulShutdown ? Task { try await group.run() } : Task { try await link.run() }
        try await link.listening()
        hub.post(UserCreated(userID: 1))
        try await waitUntil("B receiving the post made before") { b.users.count == 1 }
        // And its NOTIFY completed on A: a cancellation reports one still in flight as not sent.
        try await waitUntil("A's NOTIFY completing") { link.statistics.sent == 1 }

        switch ending {
        case .close: await link.close()
        case .gracefulShutdown: await group.triggerGracefulShutdown()
        case .cancellation: running.cancel()
        }
        try await running.value
        for id in 2...4 { hub.post(UserCreated(userID: id)) }
        link.share(OrderPlaced.self)  // shared after the shutdown: its posts are reported too
        hub.post(OrderPlaced(orderID: 5, item: "late"))

        #expect(local.values.map(\.userID) == [1, 2, 3, 4])
        #expect(errors.values.map(\.code) == Array(repeating: .postAfterShutdown, count: 4))
        #expect(errors.values.map(\.typeName) == ["UserCreated", "UserCreated", "UserCreated", "OrderPlaced"])
        #expect(link.statistics.sent == 1)
        // Nothing more reached B: a barrier from another link arrives after anything A sent.
        let c = try await Node(channel: channel)
        try await c.barrier(to: b)
        #expect(b.users.values == [UserCreated(userID: 1)] && b.orders.values.isEmpty)
        token.cancel()
        await b.link.close()
        await c.link.close()
    }

    @Test func postsAfterClosingALinkThatNeverRanOrCouldNotConnectAreReported() async throws {
        let configuration = try TestServer.requireConfiguration()
        let nowhere = PostgresConnection.Configuration(
            host: "127.0.0.1", port: 1, username: configuration.username, password: configuration.password,
            database: configuration.database, tls: .disable)
        for (name, configuration) in [("never ran", configuration), ("could not connect", nowhere)] {
            let hub = NotificationHub()
            let link = try PostgresLink(hub: hub, channel: TestServer.makeChannel(), configuration: configuration)
            let errors = Recorder<PostgresLinkError>()
            link.errorHandler = { errors.append($0) }
            link.share(UserCreated.self)
            hub.post(UserCreated(userID: 1))  // accepted, queued
            if name == "never ran" {
                await link.close()
            } else {
                await #expect(throws: (any Error).self) { try await link.run() }
            }
            hub.post(UserCreated(userID: 2))
            #expect(errors.values.map(\.code) == [.notSent, .postAfterShutdown], "\(name)")
            #expect(errors.values.first?.expected == "to send sequence 1", "\(name)")
        }
    }

    /// A cancelled run returns without sending what is queued, and reports each post it accepted
    /// and did not send, by sequence number: every post is either sent or reported.
    @Test func aCancelledRunReturnsPromptlyAndReportsWhatWasUnsent() async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel)
        let hub = NotificationHub()
        // One NOTIFY per post: 5,000 take seconds to send.
        let link = try PostgresLink(
            hub: hub, channel: channel, configuration: try TestServer.requireConfiguration(),
            options: PostgresLink.Options(batchesBursts: false))
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(UserCreated.self)
        let running = Task { try await link.run() }
        try await link.listening()
        let count = 5_000
        for id in 0..<count { hub.post(UserCreated(userID: id)) }
        running.cancel()
        try await running.value

        let sent = link.statistics.sent
        let unsent = errors.values
        #expect(sent < count)  // it returned without sending everything
        #expect(!unsent.isEmpty && unsent.allSatisfy { $0.code == .notSent })
        #expect(unsent.allSatisfy { $0.found == "the link's run was cancelled" })
        // Those reported are the last ones, in order (the one in flight may have reached the server).
        let reported = unsent.compactMap { $0.expected.flatMap { UInt64($0.split(separator: " ").last ?? "") } }
        #expect(reported == Array(UInt64(count - unsent.count + 1)...UInt64(count)))
        #expect(sent + unsent.count == count)
        hub.post(UserCreated(userID: count))
        #expect(errors.values.last?.code == .postAfterShutdown)
        let c = try await Node(channel: channel)
        try await c.barrier(to: b)
        #expect(b.users.values.map(\.userID) == Array(0..<b.users.count))
        #expect(b.users.count >= sent && b.users.count <= sent + 1)
        await b.link.close()
        await c.link.close()
    }
}
