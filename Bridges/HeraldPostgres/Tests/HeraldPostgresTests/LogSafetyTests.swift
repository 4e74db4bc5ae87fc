import Crypto
import Foundation
import Herald
import HeraldPostgres
import Logging
import PostgresNIO
import Testing

/// A `Blob` as a receiver that expects a number would declare it: its payloads do not decode.
struct BlobAsNumber: WireNotification, Equatable {
    static let wireName = "Blob"
    var text: Int
}

/// Neither the logs (at `.trace`, on the sending and on the receiving link) nor the errors that
/// reach the hub ever carry a payload or the signing key.
@Suite("PostgresLink logs", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct LogSafetyTests {
    /// Every string that a log entry carries: its message, each metadata value and its source.
    private func texts(of entries: [CapturingLogHandler.Entry]) -> [String] {
        func values(_ value: Logger.MetadataValue) -> [String] {
            switch value {
            case .string(let text): [text]
            case .stringConvertible(let convertible): [convertible.description]
            case .array(let array): array.flatMap(values)
            case .dictionary(let dictionary): dictionary.flatMap { [$0.key] + values($0.value) }
            }
        }
        return entries.flatMap { entry in
            ["\(entry.message)", entry.source] + entry.metadata.flatMap { [$0.key] + values($0.value) }
        }
    }

    @Test func atTraceNeitherPayloadsNorTheKeyReachTheLogsOrTheHubsErrorHandler() async throws {
        let channel = TestServer.makeChannel()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let key = SymmetricKey(data: secret)
        let options = PostgresLink.Options(signingKey: key)
        let marker = "MARKER" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let markerNumber = Int.random(in: 1_000_000_000_000...9_000_000_000_000)
        var handlers: [CapturingLogHandler] = []
        func traceLogger(_ label: String) -> Logger {
            var handler = CapturingLogHandler()
            handler.logLevel = .trace
            handlers.append(handler)
            return Logger(label: label) { _ in handler }
        }
        let a = try await Node(
            channel: channel, sharing: [Blob.self, UserCreated.self, Barrier.self], options: options,
            logger: traceLogger("A"), reportsToHub: true)
        let b = try await Node(
            channel: channel, sharing: [BlobAsNumber.self, UserCreated.self, Barrier.self], options: options,
            logger: traceLogger("B"), reportsToHub: true)
        try await withRawConnection { raw in

            a.hub.post(UserCreated(userID: markerNumber))  // delivered
            a.hub.post(Blob(text: marker))  // does not decode on B
            a.hub.post(Blob(text: marker + String(repeating: "x", count: 9_000)))  // oversize: stays on A
            // Forged: signed with another key.
            let forged =
                #"{"signature":"\#(Data(repeating: 7, count: 32).base64EncodedString())","version":1,"type":"Blob","origin":"\#(UUID())","sequence":1,"payload":{"text":"\#(marker)"}}"#
            try await raw.query("SELECT pg_notify(\(channel), \(forged))", logger: TestServer.logger)
            try await a.barrier(to: b)
            try await waitUntil("the forged envelope refused by both") {
                a.errors.values.contains { $0.code == .invalidSignature }
                    && b.errors.values.contains { $0.code == .invalidSignature }
            }

            #expect(b.users.values == [UserCreated(userID: markerNumber)])
            #expect(Set(a.errors.values.map(\.code)) == [.payloadTooLarge, .invalidSignature])
            #expect(Set(b.errors.values.map(\.code)) == [.payloadDecodingFailed, .invalidSignature])
            await a.link.close()
            await b.link.close()
        }

        let secrets = [
            marker, String(markerNumber), Data(secret).base64EncodedString(),
            secret.map { String(format: "%02x", $0) }.joined(), secret.map { String(format: "%02X", $0) }.joined(),
        ]
        let hubOutput = (a.failures.values + b.failures.values).flatMap {
            ["\($0)", String(reflecting: $0.error), "\($0.error)"]
        }
        #expect(hubOutput.count >= 4 * 3)
        for handler in handlers {
            for text in texts(of: handler.entries) + hubOutput {
                for secret in secrets {
                    #expect(!text.contains(secret), "logged: \(text.prefix(300))")
                }
            }
        }
    }
}

/// Keeps every entry logged through it, with the logger's metadata merged in.
struct CapturingLogHandler: LogHandler {
    struct Entry: Sendable {
        let level: Logger.Level
        let message: Logger.Message
        let metadata: Logger.Metadata
        let source: String
    }

    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    private let storage = Recorder<Entry>()

    var entries: [Entry] { storage.values }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        storage.append(
            Entry(
                level: event.level, message: event.message,
                metadata: metadata.merging(event.metadata ?? [:]) { $1 }, source: event.source))
    }
}
