import Foundation
import Herald
import HeraldPostgres
import Synchronization
import Testing

/// This test process's hub and a `herald-postgres-peer` process's hub, on one channel.
@Suite("PostgresLink across processes", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct AcrossProcessesTests {
    /// The peer's types, declared again here: only the wire names and the `Codable` layouts must agree.
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

    /// The peer executable, built by `swift test` next to the test binary.
    static func peerExecutable() throws -> String {
        var directory = URL(filePath: CommandLine.arguments[0]).standardizedFileURL.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appending(path: "herald-postgres-peer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            directory = directory.deletingLastPathComponent()
        }
        throw Subprocess.Failed(description: "herald-postgres-peer not found near \(CommandLine.arguments[0])")
    }

    @Test func thousandsOfNotificationsEachWayArriveExactlyOnceInOrderWithoutEcho() async throws {
        let count = 3_000
        let channel = TestServer.makeChannel()
        let hub = NotificationHub()
        let link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        let notes = Mutex<[String: [Int]]>([:])
        let done = Recorder<String>()
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(PeerNote.self)
        link.share(PeerDone.self)
        let tokens = [
            hub.observe(PeerNote.self) { note in notes.withLock { $0[note.sender, default: []].append(note.index) } },
            hub.observe(PeerDone.self) { done.append($0.sender) },
        ]

        let output = FileManager.default.temporaryDirectory.appending(path: "herald-peer-\(UUID()).txt").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let peer = try Subprocess.spawn(
            [
                try Self.peerExecutable(), "--channel", channel, "--count", "\(count)", "--name", "peer", "--other",
                "test",
            ],
            output: output)
        @Sendable func peerOutput() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        try await waitUntil("the peer listening") { peerOutput().hasPrefix("ready\n") }

        for index in 0..<count { hub.post(PeerNote(sender: "test", index: index)) }
        // The peer's `PeerDone` follows its notes; ours follows it, so the peer has heard its own
        // echoes (and dropped them) before it sees ours.
        try await waitUntil("the peer's notes") { done.values.contains("peer") }
        hub.post(PeerDone(sender: "test", count: count))
        let status = try await peer.wait()
        #expect(status == 0, Comment(rawValue: peerOutput()))
        #expect(peerOutput().contains("result ok"), Comment(rawValue: peerOutput()))

        // A `NOTIFY` counts as sent when its query completes, which may come after its echo.
        try await waitUntil("our own messages sent and heard back") {
            link.statistics.echoesIgnored == count + 1 && link.statistics.sent == count + 1
        }
        let received = notes.withLock { $0 }
        #expect(received["peer"] == Array(0..<count))  // exactly once, in order
        #expect(received["test"] == Array(0..<count))  // our own, once each: no echo
        #expect(done.values == ["peer", "test"])
        #expect(link.statistics.received == count + 1 && link.statistics.sent == count + 1)
        #expect(link.statistics.gaps == 0 && link.statistics.duplicates == 0)
        #expect(errors.values.isEmpty)
        for token in tokens { token.cancel() }
        await link.close()
    }

    @Test func aPeerStoppedBySIGTERMSendsEveryPostItAcceptedExactlyOnce() async throws {
        let channel = TestServer.makeChannel()
        let hub = NotificationHub()
        let link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        let notes = Recorder<Int>()
        let errors = Recorder<PostgresLinkError>()
        link.errorHandler = { errors.append($0) }
        link.share(PeerNote.self)
        let token = hub.observe(PeerNote.self) { notes.append($0.index) }

        let output = FileManager.default.temporaryDirectory.appending(path: "herald-peer-\(UUID()).txt").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let peer = try Subprocess.spawn(
            [try Self.peerExecutable(), "--channel", channel, "--count", "1000000", "--service", "--name", "peer"],
            output: output)
        @Sendable func peerOutput() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        try await waitUntil("the peer posting") { notes.count >= 200 }
        kill(peer.pid, SIGTERM)  // the ServiceGroup shuts the link down gracefully, mid-burst
        let status = try await peer.wait()
        #expect(status == 0, Comment(rawValue: peerOutput()))
        let sentLine = try #require(peerOutput().split(separator: "\n").first { $0.hasPrefix("sent ") })
        let sent = try #require(Int(sentLine.dropFirst("sent ".count)))
        try await waitUntil("every note the peer sent") { notes.count >= sent }

        #expect(sent >= 200)
        #expect(notes.values == Array(0..<sent))  // exactly once, in order
        #expect(errors.values.isEmpty)
        token.cancel()
        await link.close()
    }
}
