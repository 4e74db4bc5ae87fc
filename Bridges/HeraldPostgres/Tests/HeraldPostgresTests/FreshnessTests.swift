import Crypto
import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import Synchronization
import Testing

/// A clock that a test moves: the real time plus an offset.
final class OffsetClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    init(offset: TimeInterval = 0) { self.offset.withLock { $0 = offset } }

    func advance(by interval: TimeInterval) { offset.withLock { $0 += interval } }

    var now: @Sendable () -> Date {
        { [self] in Date().addingTimeInterval(offset.withLock { $0 }) }
    }
}

/// Issue times, the freshness window and key rotation of signed envelopes, against a real server.
@Suite("PostgresLink freshness and keys", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct FreshnessTests {
    static let key = SymmetricKey(size: .bits256)

    @Test func aCapturedMessageReplayedToALinkStartedOneSecondLaterIsRefused() async throws {
        let channel = TestServer.makeChannel()
        let options = PostgresLink.Options(signingKey: Self.key)
        try await withSniffer(on: channel) { captured in
            // A's clock steps back 1 s once it has connected (its offset to the server's clock was taken
            // before): its message is issued 1 s before the server's now, as if captured 1 s earlier.
            let clock = OffsetClock()
            var stepping = options
            stepping.now = clock.now
            let a = try await Node(channel: channel, options: stepping)
            clock.advance(by: -1)
            a.hub.post(UserCreated(userID: 1))
            try await waitUntil("the capture") { captured.values.contains { $0.contains(#""type":"UserCreated""#) } }
            let genuine = try #require(captured.values.first { $0.contains(#""type":"UserCreated""#) })

            // C starts after the capture.
            let c = try await Node(channel: channel, options: options)
            try await withRawConnection { raw in
                try await raw.query("SELECT pg_notify(\(channel), \(genuine))", logger: TestServer.logger)
                try await waitUntil("C refusing the replay") { !c.errors.values.isEmpty }

                #expect(c.errors.values.map(\.code) == [.staleEnvelope])
                let found = try #require(c.errors.values.first?.found)
                #expect(found.hasSuffix("ms before this link began listening"))
                #expect(milliseconds(in: found).map { $0 >= 1_000 } == true)
                #expect(c.users.values.isEmpty && c.link.statistics.stale == 1)
            }
            await a.link.close()
            await c.link.close()
        }
    }

    /// The links' clocks are off by minutes, in both directions: the offset to the server's clock,
    /// taken at connect, corrects them, so fresh envelopes are accepted, replays refused, and ages
    /// measured as they are.
    @Test func clocksOffByMinutesAreCorrectedByTheServersClock() async throws {
        let channel = TestServer.makeChannel()
        try await withSniffer(on: channel) { captured in
            func options(_ clock: OffsetClock) -> PostgresLink.Options {
                PostgresLink.Options(signingKey: Self.key, now: clock.now)
            }
            let slow = OffsetClock(offset: -300)  // 5 minutes behind
            let fast = OffsetClock(offset: 420)  // 7 minutes ahead
            let a = try await Node(channel: channel, options: options(slow))
            let b = try await Node(channel: channel, options: options(fast))
            let nearly = Duration.seconds(-2)...Duration.seconds(2)
            #expect(nearly.contains(a.link.serverClockOffset - .seconds(300)))
            #expect(nearly.contains(b.link.serverClockOffset + .seconds(420)))
            a.hub.post(UserCreated(userID: 1))
            b.hub.post(UserCreated(userID: 2))
            try await a.barrier(to: b)
            try await b.barrier(to: a, id: 2)
            // Each hub's observers saw its own post and the other's.
            #expect(Set(b.users.values.map(\.userID)) == [1, 2] && Set(a.users.values.map(\.userID)) == [1, 2])
            #expect(a.errors.values.isEmpty && b.errors.values.isEmpty)

            try await waitUntil("the capture") { captured.values.contains { $0.contains(#""userID":1"#) } }
            let genuine = try #require(captured.values.first { $0.contains(#""userID":1"#) })
            try await withRawConnection { raw in
                // Replayed to B, which heard it: refused by its number.
                try await raw.query("SELECT pg_notify(\(channel), \(genuine))", logger: TestServer.logger)
                try await waitUntil("B refusing the replay") { b.link.statistics.duplicates == 1 }
                // C, 3 minutes ahead, started after the capture; 61 s pass by its clock: the replay is 61 s
                // old by the server's clock (not 3 minutes more), over the 60 s window.
                let later = OffsetClock(offset: 180)
                let c = try await Node(channel: channel, options: options(later))
                later.advance(by: 61)
                try await raw.query("SELECT pg_notify(\(channel), \(genuine))", logger: TestServer.logger)
                try await waitUntil("C refusing the replay") { !c.errors.values.isEmpty }
                #expect(c.errors.values.map(\.code) == [.staleEnvelope])
                let found = try #require(c.errors.values.first?.found)
                #expect(found.contains("ms ago, over the 60000 ms allowed"))
                #expect(milliseconds(in: found).map { (61_000..<90_000).contains($0) } == true)
                #expect(c.users.values.isEmpty && b.users.count == 2)
                await a.link.close()
                await b.link.close()
                await c.link.close()
            }
        }
    }

    /// A signed envelope of exactly ``PostgresLink/maximumPayloadBytes`` goes out; one a byte larger
    /// stays local, reported with its real size.
    @Test func aSignedEnvelopeOfExactlyTheLimitTravelsAndOneByteMoreIsRefusedWithItsSize() async throws {
        let channel = TestServer.makeChannel()
        try await withSniffer(on: channel) { captured in
            let options = PostgresLink.Options(signingKey: Self.key)
            let types: [any WireNotification.Type] = [Blob.self, Barrier.self]
            let a = try await Node(channel: channel, sharing: types, options: options)
            let b = try await Node(channel: channel, sharing: types, options: options)
            // The size of a small one tells the length of the text that fills the limit (sequences 1
            // and 2 have as many digits).
            a.hub.post(Blob(text: "small"))
            try await waitUntil("the small blob heard by B and the sniffer") {
                b.blobs.count == 1 && captured.values.contains { $0.contains(#""text":"small""#) }
            }
            let small = try #require(captured.values.first { $0.contains(#""text":"small""#) })
            let length = 5 + PostgresLink.maximumPayloadBytes - small.utf8.count
            a.hub.post(Blob(text: String(repeating: "f", count: length)))
            a.hub.post(Blob(text: String(repeating: "o", count: length + 1)))
            try await a.barrier(to: b)

            #expect(b.blobs.values.map(\.text.count) == [5, length])
            try await waitUntil("the sniffer hearing the full blob") {
                captured.values.contains { $0.contains(#""text":"ff"#) }
            }
            let full = captured.values.first { $0.contains(#""text":"ff"#) }
            #expect(full?.utf8.count == PostgresLink.maximumPayloadBytes)
            #expect(a.errors.values.map(\.code) == [.payloadTooLarge])
            #expect(a.errors.values.first?.expected == "at most \(PostgresLink.maximumPayloadBytes) bytes")
            #expect(a.errors.values.first?.found == "\(PostgresLink.maximumPayloadBytes + 1) bytes")
            #expect(b.errors.values.isEmpty)
            await a.link.close()
            await b.link.close()
        }
    }

    /// The number of milliseconds in a staleness report ("issued 1234 ms …").
    private func milliseconds(in found: String) -> Int? {
        let words = found.split(separator: " ")
        guard let index = words.firstIndex(of: "ms"), index > 0 else { return nil }
        return Int(words[index - 1])
    }

    @Test func aSignedMessageOlderThanTheWindowOrFromTheFutureIsRefused() async throws {
        let channel = TestServer.makeChannel()
        let clock = OffsetClock()
        var options = PostgresLink.Options(signingKey: Self.key)
        let a = try await Node(channel: channel, options: options)
        options.now = clock.now
        let b = try await Node(channel: channel, options: options)
        a.hub.post(UserCreated(userID: 1))
        try await a.barrier(to: b)

        clock.advance(by: 61)  // B's clock: A's messages now arrive 61 s after their issue
        a.hub.post(UserCreated(userID: 2))
        try await waitUntil("B refusing a stale message") { !b.errors.values.isEmpty }
        clock.advance(by: -61)
        try await withRawConnection { raw in
            let future = signedEnvelope(
                #"{"version":1,"type":"UserCreated","origin":"\#(UUID())","sequence":1,"payload":{"userID":3}}"#,
                key: Self.key, channel: channel, issued: Date().addingTimeInterval(5))
            try await raw.query("SELECT pg_notify(\(channel), \(future))", logger: TestServer.logger)
            try await waitUntil("B refusing a message from the future") { b.errors.count == 2 }
            try await a.barrier(to: b, id: 2)

            #expect(b.users.values == [UserCreated(userID: 1)])
            // A's refused message shows as a gap before its next one.
            #expect(b.errors.values.map(\.code) == [.staleEnvelope, .staleEnvelope, .sequenceGap])
            #expect(b.errors.values[0].found?.contains("ms ago, over the 60000 ms allowed") == true)
            #expect(b.errors.values[1].found?.contains("in the future") == true)
        }
        await a.link.close()
        await b.link.close()
    }

    @Test func aSignedEnvelopeWithoutIssueTimeIsRefusedUnlessLegacyEnvelopesAreAdmitted() async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel, options: PostgresLink.Options(signingKey: Self.key))
        let legacy = try await Node(
            channel: channel, options: PostgresLink.Options(signingKey: Self.key, legacyEnvelopes: true))
        try await withRawConnection { raw in
            let old = signedEnvelope(
                #"{"version":1,"type":"UserCreated","origin":"\#(UUID())","sequence":1,"payload":{"userID":1}}"#,
                key: Self.key, channel: channel, legacy: true)
            try await raw.query("SELECT pg_notify(\(channel), \(old))", logger: TestServer.logger)
            try await waitUntil("the legacy link admitting it") { legacy.users.count == 1 }
            try await waitUntil("the other refusing it") { !b.errors.values.isEmpty }
            // The legacy link signs as earlier releases did: the other refuses its messages too.
            legacy.hub.post(UserCreated(userID: 2))
            try await waitUntil("the other refusing the legacy link's message") { b.errors.count == 2 }
            b.hub.post(UserCreated(userID: 3))
            try await b.barrier(to: legacy)

            #expect(b.users.values == [UserCreated(userID: 3)])
            #expect(b.errors.values.map(\.code) == [.staleEnvelope, .staleEnvelope])
            #expect(b.errors.values.allSatisfy { $0.found?.contains("without issue time") == true })
            #expect(legacy.users.values == [UserCreated(userID: 1), UserCreated(userID: 2), UserCreated(userID: 3)])
            #expect(legacy.errors.values.isEmpty)
        }
        await b.link.close()
        await legacy.link.close()
    }

    @Test func rotatingKeysMidBurstLosesNothing() async throws {
        let channel = TestServer.makeChannel()
        let old = PostgresLink.SigningKey(id: "2026-10", key: SymmetricKey(size: .bits256))
        let new = PostgresLink.SigningKey(id: "2026-11", key: SymmetricKey(size: .bits256))
        // Every link accepts both keys; A still signs with the old one, A2 (the same service,
        // redeployed) with the new one. A receiver that only knows the old key refuses the new one.
        let a = try await Node(channel: channel, options: PostgresLink.Options(signingKeys: [old, new]))
        let b = try await Node(channel: channel, options: PostgresLink.Options(signingKeys: [old, new]))
        let stale = try await Node(channel: channel, options: PostgresLink.Options(signingKeys: [old]))
        let count = 1_000
        for id in 0..<count / 2 { a.hub.post(UserCreated(userID: id)) }
        let a2 = try await Node(channel: channel, options: PostgresLink.Options(signingKeys: [new, old]))
        for id in 0..<count / 2 {
            a.hub.post(OrderPlaced(orderID: id, item: "old"))
            a2.hub.post(OrderPlaced(orderID: id, item: "new"))
        }
        try await a.barrier(to: b, id: 1)
        try await a2.barrier(to: b, id: 2)

        #expect(b.users.values.map(\.userID) == Array(0..<count / 2))
        #expect(b.orders.values.filter { $0.item == "old" }.map(\.orderID) == Array(0..<count / 2))
        #expect(b.orders.values.filter { $0.item == "new" }.map(\.orderID) == Array(0..<count / 2))
        #expect(b.errors.values.isEmpty)
        try await waitUntil("A hearing A2") { a.orders.count == count }
        #expect(a.errors.values.isEmpty)
        try await waitUntil("the old-key link refusing A2's messages") {
            stale.errors.values.contains { $0.found?.contains(#"key "2026-11""#) == true }
        }
        #expect(stale.errors.values.allSatisfy { $0.code == .invalidSignature })
        await a.link.close()
        await a2.link.close()
        await b.link.close()
        await stale.link.close()
    }
}
