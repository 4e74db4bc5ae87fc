import Crypto
import Foundation
import Herald
import PostgresNIO
import Testing

@testable import HeraldPostgres

/// The two envelope forms, without a server: sizes, how many fit in one `NOTIFY`, and reading.
@Suite("Envelope")
struct EnvelopeTests {
    private func item(_ sequence: UInt64, userID: Int = 1, type: String = "UserCreated") -> Envelope.Item {
        Envelope.Item(
            typeName: type, typeJSON: "\"\(type)\"", payloadJSON: #"{"userID":\#(userID)}"#, sequence: sequence)
    }

    private func blob(_ sequence: UInt64, length: Int) -> Envelope.Item {
        Envelope.Item(
            typeName: "Blob", typeJSON: #""Blob""#,
            payloadJSON: #"{"text":"\#(String(repeating: "x", count: length))"}"#, sequence: sequence)
    }

    /// Reads `text` as a link with origin `own`, sharing `UserCreated` only; returns the message and
    /// the users its deliveries post.
    private func read(_ text: String, own: UUID = UUID()) throws -> (Envelope.Incoming, [UserCreated]) {
        let posted = Recorder<UserCreated>()
        let decoder = JSONDecoder()
        decoder.userInfo[Envelope.Context.key] = Envelope.Context(origin: own) { name in
            guard name == UserCreated.wireName else { return nil }
            return Envelope.PayloadDecoder(
                fromContainer: { container in
                    let user = try container.decode(UserCreated.self, forKey: .payload)
                    return { posted.append(user) }
                },
                fromBytes: { decoder, bytes in
                    let user = try decoder.decode(UserCreated.self, from: Data(bytes))
                    return { posted.append(user) }
                })
        }
        let incoming = try decoder.decode(Envelope.Incoming.self, from: Data(text.utf8))
        for item in incoming.items {
            if case .value(let delivery) = item.content { delivery() }
        }
        return (incoming, posted.values)
    }

    @Test func theComputedSizesAreTheSizesOfTheTexts() {
        for sequence: UInt64 in [1, 9, 10, 12_345, .max] {
            let one = item(sequence, userID: Int(sequence % 1000))
            #expect(Envelope.singleSize(one) == Envelope.single(one, origin: UUID().uuidString).utf8.count)
            let items = [one, item(sequence, userID: 7, type: "OrderPlaced"), blob(sequence, length: 40)]
            let size = items.reduce(0) { $0 + Envelope.batchItemSize($1) } + items.count - 1
            let text = Envelope.batch(items, origin: UUID().uuidString)
            let empty = Envelope.batch([Envelope.Item](), origin: UUID().uuidString)
            #expect(text.utf8.count == size + empty.utf8.count - 1 + String(sequence).utf8.count)
        }
    }

    @Test(arguments: [0, 44, 500])
    func aBatchHoldsAsManyAsFitInTheLimitAndNoMore(extra: Int) {
        let items = (1...400).map { blob(UInt64($0), length: $0 % 7 == 0 ? 900 : 30) }
        var remaining = items[...]
        var batches = 0
        while !remaining.isEmpty {
            let count = Envelope.batchCount(remaining, limit: PostgresLink.maximumPayloadBytes, extra: extra)
            #expect(count >= 1)
            let text = Envelope.batch(remaining.prefix(count), origin: UUID().uuidString)
            #expect(text.utf8.count + extra <= PostgresLink.maximumPayloadBytes)
            if count < remaining.count {
                let more = Envelope.batch(remaining.prefix(count + 1), origin: UUID().uuidString)
                #expect(more.utf8.count + extra > PostgresLink.maximumPayloadBytes)
            }
            remaining = remaining.dropFirst(count)
            batches += 1
        }
        #expect(batches > 1 && batches < items.count)
    }

    @Test func aFirstItemThatFitsOnlyAloneGoesAlone() {
        // As large as a single envelope may be: one byte more in a batch than the limit allows.
        var length = 7_000
        while Envelope.singleSize(blob(1, length: length + 1)) <= PostgresLink.maximumPayloadBytes { length += 1 }
        let largest = blob(1, length: length)
        #expect(Envelope.singleSize(largest) == PostgresLink.maximumPayloadBytes)
        #expect(Envelope.batchCount([largest, item(2)], limit: PostgresLink.maximumPayloadBytes, extra: 0) == 1)
        #expect(Envelope.batchCount([item(1), largest], limit: PostgresLink.maximumPayloadBytes, extra: 0) == 1)
        #expect(Envelope.batchCount([item(1), item(2)], limit: PostgresLink.maximumPayloadBytes, extra: 0) == 2)
    }

    /// A lone notification and a batch are both version 3; only a link with legacy envelopes writes
    /// a lone one as version 1 and a batch as version 2. The sizes computed are those of the texts,
    /// whatever the digits of the incarnation's start time.
    @Test func aLonePostAndABatchAreBothVersionThreeUnlessLegacyEnvelopesAreWritten() {
        let origin = UUID().uuidString
        let incarnation = Incarnation(id: 0xABC, started: 1_764_000_000_000)
        let current = Envelope.Writer(origin: origin, incarnation: incarnation, writesLegacyEnvelopes: false)
        let legacy = Envelope.Writer(origin: origin, incarnation: incarnation, writesLegacyEnvelopes: true)
        let lone = [item(1)]
        let batch = [item(1), item(2), blob(3, length: 40)]
        #expect(current.text(lone).hasPrefix(#"{"version":3,"#) && current.text(lone).contains(#""count":1,"#))
        #expect(current.text(batch).hasPrefix(#"{"version":3,"#) && current.text(batch).contains(#""count":3,"#))
        #expect(legacy.text(lone).hasPrefix(#"{"version":1,"#))
        #expect(legacy.text(batch).hasPrefix(#"{"version":2,"#))
        for started: UInt64 in [1_764_000_000_000, 7, 0] {
            current.rebase(startedOnServer: started)
            #expect(current.text(lone).contains(#""started":\#(started),"#))
            #expect(current.size(alone: item(12_345)) == current.text([item(12_345)]).utf8.count)
            #expect(legacy.size(alone: item(12_345)) == legacy.text([item(12_345)]).utf8.count)
        }
    }

    @Test func aBatchIsReadBackInOrderWithConsecutiveSequences() throws {
        let origin = UUID()
        let text = Envelope.batch(
            [item(41, userID: 1), item(42, userID: 2), item(43, userID: 3)], origin: origin.uuidString)
        #expect(
            text.hasPrefix(
                #"{"version":2,"origin":"\#(origin.uuidString)","sequence":41,"count":3,"batch":[{"type":"UserCreated","payload":{"userID":1}},"#
            ))
        let (incoming, users) = try read(text)
        #expect(incoming.origin == origin && incoming.sequence == 41 && incoming.count == 3)
        #expect(users.map(\.userID) == [1, 2, 3])

        let single = Envelope.single(item(7, userID: 9), origin: origin.uuidString)
        let (one, user) = try read(single)
        #expect(one.sequence == 7 && one.count == 1 && user == [UserCreated(userID: 9)])
    }

    @Test func itemsOfUnknownOrUndecodableTypesAreMarkedAndTheOthersRead() throws {
        let text =
            #"{"version":2,"origin":"\#(UUID().uuidString)","sequence":1,"count":4,"batch":[{"type":"UserCreated","payload":{"userID":1}},{"type":"Other","payload":{}},{"type":"UserCreated","payload":{"userID":"two"}},{"type":"UserCreated","payload":{"userID":3}}]}"#
        let (incoming, users) = try read(text)
        #expect(users.map(\.userID) == [1, 3])
        #expect(incoming.items.map(\.typeName) == ["UserCreated", "Other", "UserCreated", "UserCreated"])
        guard case .unknownType = incoming.items[1].content else {
            Issue.record("expected an unknown type")
            return
        }
        guard case .undecodable(let expected, _) = incoming.items[2].content else {
            Issue.record("expected an undecodable payload")
            return
        }
        #expect(expected == "Int at \"batch.2.payload.userID\"")
    }

    @Test func theQuickLookReadsTheLayoutsThisBuildWritesAndNothingElse() throws {
        let own = UUID()
        let other = UUID()
        let ownBytes = Array(own.uuidString.utf8)
        let single = Envelope.single(item(12_345, userID: 7), origin: other.uuidString)
        guard
            case .single(let type, let origin, let sequence, let payload) =
                Envelope.quickLook(Array(single.utf8), own: ownBytes)
        else {
            Issue.record("expected a single envelope")
            return
        }
        let bytes = Array(single.utf8)
        #expect(type == "UserCreated" && sequence == 12_345)
        #expect(String(decoding: bytes[origin], as: UTF8.self) == other.uuidString)
        #expect(String(decoding: bytes[payload], as: UTF8.self) == #"{"userID":7}"#)
        // The full parse reads the same.
        let (incoming, users) = try read(single)
        #expect(incoming.origin == other && incoming.sequence == 12_345 && users == [UserCreated(userID: 7)])

        let ownSingle = Envelope.single(item(1), origin: own.uuidString)
        let ownBatch = Envelope.batch((1...12).map { item($0) }, origin: own.uuidString)
        #expect(Envelope.quickLook(Array(ownSingle.utf8), own: ownBytes) == .echo(count: 1))
        #expect(Envelope.quickLook(Array(ownBatch.utf8), own: ownBytes) == .echo(count: 12))
        let others = [
            Envelope.batch([item(1), item(2)], origin: other.uuidString),  // another's batch: the full parse
            #"{"version":1, "type":"UserCreated","origin":"\#(own)","sequence":1,"payload":{}}"#,
            #"{"version":1,"origin":"\#(own)","type":"UserCreated","sequence":1,"payload":{}}"#,
            #"{"version":1,"type":"User\u0043reated","origin":"\#(other)","sequence":1,"payload":{}}"#,
            #"{"version":1,"type":"UserCreated","origin":"\#(other)","sequence":01,"payload":{}}"#,
            #"{"version":1,"type":"UserCreated","origin":"\#(other)","sequence":99999999999999999999,"payload":{}}"#,
            #"{"version":1,"type":"UserCreated","origin":"\#(other)","sequence":1,"payload":}"#,
            "not json",
        ]
        for text in others {
            #expect(Envelope.quickLook(Array(text.utf8), own: ownBytes) == .other, "\(text)")
        }
    }

    @Test func ownMessagesAreCountedNotDecoded() throws {
        let own = UUID()
        let text = Envelope.batch([item(1), item(2, userID: 2)], origin: own.uuidString)
        let (incoming, users) = try read(text, own: own)
        #expect(incoming.isEcho && incoming.count == 2 && incoming.items.isEmpty && users.isEmpty)
    }

    @Test func malformedBatchesAndVersionsAreRefused() throws {
        let origin = UUID().uuidString
        #expect(throws: Envelope.UnsupportedVersion.self) {
            try read(#"{"version":4,"origin":"\#(origin)","sequence":1,"batch":[]}"#)
        }
        #expect(throws: Envelope.UnsupportedVersion.self) {
            try read(#"{"version":0,"origin":"\#(origin)","sequence":1,"type":"UserCreated","payload":{}}"#)
        }
        for text in [
            #"{"version":2,"origin":"\#(origin)","sequence":1,"count":1}"#,
            #"{"version":2,"origin":"\#(origin)","sequence":1,"count":0,"batch":[]}"#,
            #"{"version":2,"origin":"\#(origin)","sequence":1,"count":1,"batch":{}}"#,
            #"{"version":2,"origin":"\#(origin)","sequence":1,"count":1,"batch":[{"payload":{}}]}"#,
            #"{"version":2,"origin":"\#(origin)","sequence":1,"batch":[{"type":"A","payload":1}]}"#,
            #"{"version":2,"origin":"\#(origin)","sequence":1,"count":2,"batch":[{"type":"A","payload":1}]}"#,
            #"{"version":2,"origin":"\#(origin)","sequence":18446744073709551615,"count":2,"batch":[{"type":"A","payload":1},{"type":"A","payload":2}]}"#,
        ] {
            #expect(throws: DecodingError.self) { try read(text) }
        }
    }
}

/// Bursts that outpace the sending connection travel in batches, against a real server.
@Suite("PostgresLink batching", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct BatchingTests {
    enum Mode: String, CaseIterable, CustomTestStringConvertible {
        case plain, signed, unbatched
        var testDescription: String { rawValue }

        var options: PostgresLink.Options {
            switch self {
            case .plain: PostgresLink.Options()
            case .signed: PostgresLink.Options(signingKey: BatchingTests.key)
            case .unbatched: PostgresLink.Options(batchesBursts: false)
            }
        }
    }

    static let key = SymmetricKey(size: .bits256)

    @Test(arguments: Mode.allCases)
    func aBurstArrivesOnceAndInOrder(mode: Mode) async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel, options: mode.options)
        let b = try await Node(channel: channel, options: mode.options)
        let count = 3_000

        for id in 0..<count {
            if id % 3 == 0 {
                a.hub.post(OrderPlaced(orderID: id, item: "item \(id)"))
            } else {
                a.hub.post(UserCreated(userID: id))
            }
        }
        try await a.barrier(to: b)

        #expect(b.users.values.map(\.userID) == (0..<count).filter { $0 % 3 != 0 })
        #expect(b.orders.values.map(\.orderID) == (0..<count).filter { $0 % 3 == 0 })
        #expect(b.errors.values.isEmpty && a.errors.values.isEmpty)
        try await waitUntil("A's sends completed") { a.link.statistics.sent == count + 1 }
        #expect(b.link.statistics.received == count + 1)
        #expect(b.link.statistics.gaps == 0 && b.link.statistics.duplicates == 0)
        if mode == .unbatched {
            #expect(a.link.statistics.batchesSent == 0)
        } else {
            #expect(a.link.statistics.batchesSent > 0)  // the burst outpaced the connection
            #expect(a.link.statistics.batchesSent < count / 2)
        }
        // A hears its own messages, batches included, and drops every one.
        try await waitUntil("A's echoes") { a.link.statistics.echoesIgnored == count + 1 }
        #expect(a.users.count == count - count / 3 && a.orders.count == count / 3)  // no echo
        await a.link.close()
        await b.link.close()
    }

    @Test func largeValuesInABurstAreSplitAcrossNotifiesAndTheLargestGoesAlone() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel, sharing: [Blob.self, Barrier.self])
        let b = try await Node(channel: channel, sharing: [Blob.self, Barrier.self])
        // The largest blob whose envelope fits (sequence numbers here stay at two digits).
        var length = 7_000
        func size(_ length: Int) -> Int {
            a.link.core.writer.size(
                alone:
                    Envelope.Item(
                        typeName: "Blob", typeJSON: #""Blob""#,
                        payloadJSON: #"{"text":"\#(String(repeating: "x", count: length))"}"#, sequence: 10))
        }
        while size(length + 1) <= PostgresLink.maximumPayloadBytes { length += 1 }
        let texts: [String] = (0..<30).map { index in
            let letter = Character(UnicodeScalar(UInt8(97 + index % 26)))
            let count = index % 10 == 5 ? length : 2_500
            return String(repeating: letter, count: count)
        }

        for text in texts { a.hub.post(Blob(text: text)) }
        a.hub.post(Blob(text: String(repeating: "z", count: length + 1)))  // one byte over: refused
        try await a.barrier(to: b)

        #expect(b.blobs.values.map(\.text) == texts)
        #expect(a.errors.values.map(\.code) == [.payloadTooLarge])
        try await waitUntil("A's sends completed") { a.link.statistics.sent == texts.count + 1 }
        #expect(a.link.statistics.oversize == 1)
        #expect(b.errors.values.isEmpty)  // the refused one took no sequence number: no gap
        await a.link.close()
        await b.link.close()
    }

    @Test func batchesFromAnotherConnectionAreCheckedItemByItem() async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel)
        try await withRawConnection { raw in
            let origin = UUID().uuidString
            func batch(_ sequence: Int, _ items: [String]) -> String {
                #"{"version":2,"origin":"\#(origin)","sequence":\#(sequence),"count":\#(items.count),"batch":[\#(items.joined(separator: ","))]}"#
            }
            func user(_ id: Int) -> String { #"{"type":"UserCreated","payload":{"userID":\#(id)}}"# }
            let messages = [
                batch(
                    1, [user(1), #"{"type":"Unknown","payload":{}}"#, user(3), #"{"type":"UserCreated","payload":{}}"#]),
                batch(7, [user(7), user(8)]),  // 5 and 6 lost
                batch(8, [user(8), user(9)]),  // 8 again
                batch(20, []),  // malformed: empty
                #"{"version":4,"origin":"\#(origin)","sequence":21,"count":1,"batch":[\#(user(21))]}"#,  // newer
                batch(10, [user(10)]),
            ]
            for message in messages {
                try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
            }
            try await waitUntil("user 10 on B") { b.users.values.contains(UserCreated(userID: 10)) }

            #expect(b.users.values.map(\.userID) == [1, 3, 7, 8, 9, 10])
            #expect(
                b.errors.values.map(\.code) == [
                    .unknownType, .payloadDecodingFailed, .sequenceGap, .duplicateSequence, .malformedEnvelope,
                    .unsupportedVersion,
                ])
            #expect(
                b.errors.values.map(\.expected) == [
                    "one of the shared types [Barrier, OrderPlaced, UserCreated]",
                    "key \"userID\" in \"batch.3.payload\"",
                    "sequence 5", "a sequence above 8", "a valid value at \"batch\"", "envelope version 3 or older",
                ])
            #expect(b.errors.values[2].found == "sequence 7 (2 lost)")
            #expect(b.link.statistics.received == 6 && b.link.statistics.gaps == 1 && b.link.statistics.duplicates == 1)
        }
        await b.link.close()
    }

    @Test func aSignedLinkRefusesAnUnsignedOrAlteredBatch() async throws {
        let channel = TestServer.makeChannel()
        let options = PostgresLink.Options(signingKey: Self.key)
        let b = try await Node(channel: channel, options: options)
        try await withRawConnection { raw in
            let origin = UUID().uuidString
            let canonical =
                #"{"version":2,"origin":"\#(origin)","sequence":1,"count":2,"batch":[{"type":"UserCreated","payload":{"userID":1}},{"type":"UserCreated","payload":{"userID":2}}]}"#
            let signed = signedEnvelope(canonical, key: Self.key, channel: channel)
            for message in [
                canonical, signed.replacingOccurrences(of: #"{"userID":2}"#, with: #"{"userID":666}"#), signed, signed,
            ] {
                try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
            }
            // Each error is reported after its count: wait for both.
            try await waitUntil("the replayed batch refused") {
                b.link.statistics.duplicates == 2 && b.errors.count == 4
            }

            #expect(b.users.values.map(\.userID) == [1, 2])
            #expect(
                b.errors.values.map(\.code) == [
                    .unsignedEnvelope, .invalidSignature, .duplicateSequence, .duplicateSequence,
                ])
        }
        await b.link.close()
    }
}
