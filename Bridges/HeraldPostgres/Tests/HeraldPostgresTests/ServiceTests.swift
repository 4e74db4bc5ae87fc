import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

/// A link run as a swift-service-lifecycle `Service`, against a real server.
@Suite("PostgresLink as a service", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct ServiceTests {
    @Test func aGracefulShutdownMidBurstSendsEveryPostAcceptedBeforeItOnce() async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel)
        let hub = NotificationHub()
        let link = try PostgresLink(hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(UserCreated.self)
        hub.post(UserCreated(userID: 0))  // before run(): waits for the connection
        let group = ServiceGroup(services: [link], logger: TestServer.logger)
        let running = Task { try await group.run() }
        try await link.listening()

        for id in 1..<1_000 { hub.post(UserCreated(userID: id)) }
        await group.triggerGracefulShutdown()
        for id in 1_000..<1_100 { hub.post(UserCreated(userID: id)) }  // during or after the shutdown
        try await running.value

        let sent = link.statistics.sent
        #expect(sent >= 1_000)  // every post made before the shutdown was triggered
        try await waitUntil("B receiving all that A sent") { b.users.count >= sent }
        #expect(b.users.values.map(\.userID) == Array(0..<sent))  // in order, none twice
        // What was posted once the shutdown had begun stayed local, and each post is reported.
        #expect(errors.values.allSatisfy { $0.code == .postAfterShutdown })
        #expect(sent + errors.count == 1_100)
        // The link observes its types until it is released, to report such posts.
        #expect(hub.observerCount(of: UserCreated.self) == 1)
        await b.link.close()
    }

    @Test func aCancelledRunReturnsPromptlyAndCloseAfterItDoesNothing() async throws {
        let channel = TestServer.makeChannel()
        let hub = NotificationHub()
        let link = try PostgresLink(hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        link.share(UserCreated.self)
        let running = Task { try await link.run() }
        try await link.listening()
        running.cancel()
        try await running.value
        await link.close()
        await #expect(throws: CancellationError.self) { try await link.listening() }
        await #expect(throws: PostgresLinkError.self) { try await link.run() }
        #expect(hub.observerCount(of: UserCreated.self) == 1)
    }

    @Test func aLinkThatCannotConnectFailsItsRunAndListening() async throws {
        let configuration = try TestServer.requireConfiguration()
        // A port where nothing listens.
        let nowhere = PostgresConnection.Configuration(
            host: "127.0.0.1", port: 1, username: configuration.username, password: configuration.password,
            database: configuration.database, tls: .disable)
        let hub = NotificationHub()
        let link = try PostgresLink(hub: hub, channel: TestServer.makeChannel(), configuration: nowhere)
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(UserCreated.self)
        hub.post(UserCreated(userID: 1))  // queued, then reported as not sent
        await #expect(throws: (any Error).self) { try await link.run() }
        await #expect(throws: (any Error).self) { try await link.listening() }
        #expect(errors.values.map(\.code) == [.notSent])
        await #expect(throws: (any Error).self) {
            _ = try await PostgresLink.connect(hub: NotificationHub(), channel: "nowhere", configuration: nowhere)
        }
    }

    @Test func closingALinkThatNeverRanReportsWhatItQueued() async throws {
        let hub = NotificationHub()
        let link = try PostgresLink(
            hub: hub, channel: TestServer.makeChannel(), configuration: try TestServer.requireConfiguration())
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(UserCreated.self)
        hub.post(UserCreated(userID: 1))
        await link.close()
        #expect(errors.values.map(\.code) == [.notSent])
        #expect(hub.observerCount(of: UserCreated.self) == 1)
    }
}
