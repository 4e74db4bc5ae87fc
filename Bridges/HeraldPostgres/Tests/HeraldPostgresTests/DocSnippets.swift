import Crypto
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing
import UnixSignals

// The Swift blocks of the bridge's README.md and of its DocC article that are not whole files.
// Scripts/check-doc-snippets.py checks that each region below equals its block.

enum SignedLinks {
    static func connect(
        hub: NotificationHub, configuration: PostgresConnection.Configuration, secret: [UInt8]
    ) async throws -> PostgresLink {
        // snippet: begin
        // import Crypto: the key is swift-crypto's SymmetricKey, the same 32 random bytes for every link
        let options = PostgresLink.Options(signingKey: SymmetricKey(data: secret))
        let link = try await PostgresLink.connect(
            hub: hub, channel: "users", configuration: configuration, sharing: [UserCreated.self], options: options)
        // snippet: end
        return link
    }
}

enum ServiceLinks {
    static func run(
        hub: NotificationHub, configuration: PostgresConnection.Configuration, logger: Logger
    )
        async throws
    {
        // snippet: begin
        // Posts made before run() wait for the connection.
        let link = try PostgresLink(
            hub: hub, channel: "users", configuration: configuration, sharing: [UserCreated.self])
        let group = ServiceGroup(services: [link], gracefulShutdownSignals: [.sigterm], logger: logger)
        try await group.run()  // on SIGTERM: sends what was posted before, closes, returns
        // snippet: end
    }
}

@Suite("HeraldPostgres documentation", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DocSnippetTests {
    @Test func theSigningExampleLinksTwoHubsThatShareAKey() async throws {
        let configuration = try TestServer.requireConfiguration()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let (a, b) = (NotificationHub(), NotificationHub())
        let linkA = try await SignedLinks.connect(hub: a, configuration: configuration, secret: secret)
        let linkB = try await SignedLinks.connect(hub: b, configuration: configuration, secret: secret)
        let received = Recorder<UserCreated>()
        let token = b.observe(UserCreated.self) { received.append($0) }

        a.post(UserCreated(userID: 42))
        try await waitUntil("the signed user on B") { received.count == 1 }
        #expect(received.values == [UserCreated(userID: 42)])
        #expect(linkB.statistics.rejected == 0)
        token.cancel()
        await linkA.close()
        await linkB.close()
    }
}
