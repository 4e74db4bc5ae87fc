import Crypto
import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import Testing

/// Two hubs, each with its own link and connections, as two processes would have them, against a
/// real PostgreSQL server.
@Suite("PostgresLink", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct PostgresLinkTests {
    @Test func aPostOnOneHubReachesTheOtherOnceAndItsOwnObserversOnce() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)

        for id in 1...3 { a.hub.post(UserCreated(userID: id)) }
        #expect(a.users.values.map(\.userID) == [1, 2, 3])  // local observers ran inside post
        try await waitUntil("3 users on B") { b.users.count == 3 }
        try await b.barrier(to: a)  // any echo of A's posts would have reached A before this

        #expect(a.users.values.map(\.userID) == [1, 2, 3])
        #expect(b.users.values.map(\.userID) == [1, 2, 3])
        #expect(a.link.statistics.echoesIgnored == 3)  // A heard its own three and dropped them
        #expect(b.link.statistics.received == 3)
        #expect(a.errors.values.isEmpty && b.errors.values.isEmpty)
        await a.link.close()
        await b.link.close()
    }

    /// A sender keeps posting while a link connects: the types given to `connect` are shared before
    /// its `LISTEN` takes effect, so the first message it hears is delivered, and none is refused as
    /// of an unknown type.
    @Test func theTypesGivenToConnectAreSharedBeforeItListens() async throws {
        let channel = TestServer.makeChannel()
        try await withRawConnection { raw in
            let origin = UUID().uuidString
            let flood = Task {
                var sequence = 0
                while !Task.isCancelled {
                    sequence += 1
                    let message =
                        #"{"version":1,"type":"UserCreated","origin":"\#(origin)","sequence":\#(sequence),"payload":{"userID":\#(sequence)}}"#
                    try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
                }
            }
            let hub = NotificationHub()
            let users = Recorder<UserCreated>()
            let errors = Recorder<String>()
            hub.errorHandler = { failure in errors.append("\(failure.error)") }
            let token = hub.observe(UserCreated.self) { users.append($0) }
            let link = try await PostgresLink.connect(
                hub: hub, channel: channel, configuration: try TestServer.requireConfiguration(),
                sharing: [UserCreated.self])
            try await waitUntil("20 users heard") { users.count >= 20 }
            flood.cancel()
            _ = try? await flood.value
            // The flood's last messages may still be on their way: one more, after all of them,
            // says when the link has heard everything.
            let last =
                #"{"version":1,"type":"UserCreated","origin":"\#(UUID().uuidString)","sequence":1,"payload":{"userID":-1}}"#
            try await raw.query("SELECT pg_notify(\(channel), \(last))", logger: TestServer.logger)
            try await waitUntil("the last message heard") { users.values.last?.userID == -1 }

            let ids = users.values.dropLast().map(\.userID)
            #expect(errors.values.isEmpty)
            #expect(link.statistics.rejected == 0 && link.statistics.received == ids.count + 1)
            #expect(ids == Array((ids.first ?? 0)...(ids.last ?? 0)))  // from the first heard on, none missing
            token.cancel()
            await link.close()
        }
    }

    /// The other order, `connect` and then `share(_:)`: a message that arrives in between is refused
    /// as of an unknown type, which `sharing:` avoids.
    @Test func aTypeSharedAfterConnectMissesWhatArrivesBefore() async throws {
        let channel = TestServer.makeChannel()
        let hub = NotificationHub()
        let errors = Recorder<PostgresLinkError>()
        let link = try await PostgresLink.connect(
            hub: hub, channel: channel, configuration: try TestServer.requireConfiguration())
        link.errorHandler = { errors.append($0) }
        try await withRawConnection { raw in
            let origin = UUID().uuidString
            func send(_ sequence: Int) async throws {
                let message =
                    #"{"version":1,"type":"UserCreated","origin":"\#(origin)","sequence":\#(sequence),"payload":{"userID":\#(sequence)}}"#
                try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
            }
            try await send(1)
            try await waitUntil("the first message refused") { errors.count == 1 }
            link.share(UserCreated.self)
            let users = Recorder<UserCreated>()
            let token = hub.observe(UserCreated.self) { users.append($0) }
            try await send(2)
            try await waitUntil("the second message delivered") { users.count == 1 }

            #expect(errors.values.map(\.code) == [.unknownType])
            #expect(users.values == [UserCreated(userID: 2)])
            token.cancel()
        }
        await link.close()
    }

    @Test func theRepostGuardKeepsReceivedValuesFromGoingOutAgainButLetsReactionsTravel() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        // A local observer on B reacts to each received user with an order, synchronously.
        let reaction = b.hub.observe(UserCreated.self) { [hub = b.hub] user in
            hub.post(OrderPlaced(orderID: user.userID, item: "welcome pack"))
        }

        a.hub.post(UserCreated(userID: 7))
        try await waitUntil("the reaction on A") { a.orders.count == 1 }
        try await b.barrier(to: a)

        #expect(b.link.statistics.repostsNotResent == 1)  // the guard: B's re-post of user 7
        try await waitUntil("B's two sends") { b.link.statistics.sent >= 2 }
        #expect(b.link.statistics.sent == 2)  // the order and the barrier; not the user
        #expect(a.users.values == [UserCreated(userID: 7)])  // once: no echo through B
        #expect(a.orders.values == [OrderPlaced(orderID: 7, item: "welcome pack")])
        #expect(b.orders.values == [OrderPlaced(orderID: 7, item: "welcome pack")])
        reaction.cancel()
        await a.link.close()
        await b.link.close()
    }

    @Test func severalTypesEachReachTheirOwnObservers() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)

        a.hub.post(UserCreated(userID: 1))
        a.hub.post(OrderPlaced(orderID: 10, item: "tea \u{1F375} & \"quotes\" \\ 'n' $1"))
        a.hub.post(UserCreated(userID: 2))
        try await a.barrier(to: b)

        #expect(b.users.values.map(\.userID) == [1, 2])
        #expect(b.orders.values == [OrderPlaced(orderID: 10, item: "tea \u{1F375} & \"quotes\" \\ 'n' $1")])
        #expect(a.errors.values.isEmpty && b.errors.values.isEmpty)
        await a.link.close()
        await b.link.close()
    }

    @Test func aThousandPostsEachWayArriveInOrderExactlyOnce() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        let count = 1_000

        await withTaskGroup(of: Void.self) { group in
            group.addTask { for id in 0..<count { a.hub.post(UserCreated(userID: id)) } }
            group.addTask { for id in 0..<count { b.hub.post(OrderPlaced(orderID: id, item: "x")) } }
        }
        try await waitUntil("\(count) users on B and orders on A") {
            b.users.count >= count && a.orders.count >= count
        }
        try await a.barrier(to: b)
        try await b.barrier(to: a, id: 2)

        #expect(b.users.values.map(\.userID) == Array(0..<count))
        #expect(a.orders.values.map(\.orderID) == Array(0..<count))
        #expect(a.users.count == count && b.orders.count == count)  // no echo either way
        #expect(a.link.statistics.gaps == 0 && b.link.statistics.gaps == 0)
        #expect(a.link.statistics.duplicates == 0 && b.link.statistics.duplicates == 0)
        #expect(a.errors.values.isEmpty && b.errors.values.isEmpty)
        await a.link.close()
        await b.link.close()
    }

    @Test func anOversizeValueReachesLocalObserversAndIsReportedNotSent() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel, sharing: [Blob.self, Barrier.self])
        let b = try await Node(channel: channel, sharing: [Blob.self, Barrier.self])
        let big = Blob(text: String(repeating: "x", count: 9_000))

        a.hub.post(big)
        a.hub.post(Blob(text: "small"))
        try await a.barrier(to: b)

        #expect(a.blobs.values.map(\.text.count) == [big.text.count, 5])  // both reached A's observers
        #expect(b.blobs.values.map(\.text) == ["small"])
        let error = try #require(a.errors.values.first)
        #expect(error.code == .payloadTooLarge)
        #expect(error.typeName == "Blob")
        #expect(error.expected == "at most \(PostgresLink.maximumPayloadBytes) bytes")
        #expect(error.found?.hasSuffix(" bytes") == true && error.found != "\(PostgresLink.maximumPayloadBytes) bytes")
        #expect(a.errors.count == 1)
        #expect(a.link.statistics.oversize == 1)
        #expect(b.errors.values.isEmpty)  // the refused value took no sequence number: no gap
        await a.link.close()
        await b.link.close()
    }

    @Test func malformedAndForeignMessagesFromAThirdConnectionAreReportedAndSkipped() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        try await withRawConnection { raw in
            let stranger = UUID().uuidString
            let messages = [
                "not json",
                #"{"hello":"world"}"#,
                #"{"version":1,"type":"UserCreated","sequence":1,"payload":{"userID":1}}"#,
                #"{"version":4,"type":"UserCreated","origin":"\#(stranger)","sequence":1,"payload":{}}"#,
                #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":"one","payload":{}}"#,
                #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","sequence":1,"payload":{"userID":"seven"}}"#,
            ]
            for message in messages {
                try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
            }
            try await a.barrier(to: b)

            let errors = b.errors.values
            #expect(
                errors.map(\.code) == [
                    .malformedEnvelope, .malformedEnvelope, .malformedEnvelope, .unsupportedVersion, .malformedEnvelope,
                    .payloadDecodingFailed,
                ])
            #expect(
                errors.map(\.expected) == [
                    "a JSON object", "key \"version\"", "key \"origin\"", "envelope version 3 or older",
                    "UInt64 at \"sequence\"", "Int at \"payload.userID\"",
                ])
            #expect(errors[0].found == "8 bytes that are not valid JSON")
            #expect(errors[1].found == "no such key")
            #expect(errors[3].found == "version 4")
            #expect(errors.allSatisfy { !$0.description.contains("seven") })  // payloads are never quoted
            #expect(b.users.values.isEmpty)
            #expect(b.link.statistics.rejected == messages.count)
            try await waitUntil("A skipping them too") { a.errors.count == messages.count }
        }
        await a.link.close()
        await b.link.close()
    }

    @Test func anUnknownTypeIsReportedAndSkippedWithoutAGap() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel, sharing: [UserCreated.self, OrderPlaced.self, Barrier.self])
        let b = try await Node(channel: channel, sharing: [UserCreated.self, Barrier.self])

        a.hub.post(OrderPlaced(orderID: 1, item: "x"))
        a.hub.post(UserCreated(userID: 2))
        try await a.barrier(to: b)

        #expect(b.users.values == [UserCreated(userID: 2)])
        #expect(b.orders.values.isEmpty)
        #expect(b.errors.values.map(\.code) == [.unknownType])
        #expect(b.errors.values.first?.typeName == "OrderPlaced")
        #expect(b.errors.values.first?.expected == "one of the shared types [Barrier, UserCreated]")
        #expect(b.link.statistics.gaps == 0)
        await a.link.close()
        await b.link.close()
    }

    @Test func gapsAndReplaysInAnOriginsSequenceAreReported() async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel)
        try await withRawConnection { raw in
            let origin = UUID().uuidString
            for sequence in [1, 2, 5, 5, 3, 6] {
                let envelope =
                    #"{"version":1,"type":"UserCreated","origin":"\#(origin)","sequence":\#(sequence),"payload":{"userID":\#(sequence)}}"#
                try await raw.query("SELECT pg_notify(\(channel), \(envelope))", logger: TestServer.logger)
            }
            try await waitUntil("user 6 on B") { b.users.values.contains(UserCreated(userID: 6)) }

            #expect(b.users.values.map(\.userID) == [1, 2, 5, 6])
            #expect(b.errors.values.map(\.code) == [.sequenceGap, .duplicateSequence, .duplicateSequence])
            #expect(b.errors.values.map(\.expected) == ["sequence 3", "a sequence above 5", "a sequence above 5"])
            #expect(b.errors.values.map(\.found) == ["sequence 5 (2 lost)", "sequence 5", "sequence 3"])
            #expect(b.link.statistics.gaps == 1 && b.link.statistics.duplicates == 2)
        }
        await b.link.close()
    }

    @Test func subjectsAndWaitingStayLocal() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        final class Session: Sendable {}
        let session = Session()
        let local = Recorder<UserCreated>()
        let localToken = a.hub.observe(UserCreated.self, from: session) { local.append($0) }

        let report = await a.hub.postAndWait(UserCreated(userID: 1), from: session)
        #expect(local.values == [UserCreated(userID: 1)])  // postAndWait waited for local observers
        #expect(report.isSuccess && report.deliveredCount == 3)  // two observers of the test, and the link
        try await a.barrier(to: b)
        #expect(b.users.values == [UserCreated(userID: 1)])  // arrived on B, without its subject
        localToken.cancel()
        await a.link.close()
        await b.link.close()
    }

    @Test func aDroppedListeningConnectionIsReportedThenListensAgainAndDeliveryResumes() async throws {
        let channel = TestServer.makeChannel()
        let options = PostgresLink.Options(reconnection: TestServer.fastReconnection)
        let a = try await Node(channel: channel, options: options)
        let b = try await Node(channel: channel, options: options)
        // The server ends both listening connections, as a network fault would.
        let terminated = try await withRawConnection { raw in
            try await raw.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = \(#"LISTEN "\#(channel)";"#)",
                logger: TestServer.logger
            ).collect().count
        }
        #expect(terminated == 2)  // A's and B's listening connections
        try await waitUntil("both listening again") {
            a.errors.values.contains { $0.code == .outage } && b.errors.values.contains { $0.code == .outage }
        }
        #expect(b.errors.values.map(\.code) == [.connectionLost, .outage])
        let outage = try #require(b.errors.values.last?.outage)
        #expect(outage.lowerBound <= outage.upperBound && outage.upperBound <= Date())
        #expect(b.link.statistics.outages == 1 && b.link.statistics.reconnections == 1)

        b.hub.post(UserCreated(userID: 1))  // the sending connections were not touched
        a.hub.post(UserCreated(userID: 2))
        try await b.barrier(to: a)
        try await a.barrier(to: b, id: 2)
        #expect(a.users.values == [UserCreated(userID: 2), UserCreated(userID: 1)])
        #expect(b.users.values == [UserCreated(userID: 1), UserCreated(userID: 2)])
        await a.link.close()
        await b.link.close()
    }

    @Test func signedLinksRefuseUnsignedForgedAlteredAndReplayedMessages() async throws {
        let channel = TestServer.makeChannel()
        let key = SymmetricKey(size: .bits256)
        let options = PostgresLink.Options(signingKey: key)
        // A plain listener captures A's genuine messages, to alter and replay them.
        try await withSniffer(on: channel) { captured in
            let a = try await Node(channel: channel, options: options)
            let b = try await Node(channel: channel, options: options)
            try await withRawConnection { raw in

                a.hub.post(UserCreated(userID: 1))
                try await a.barrier(to: b)
                #expect(b.users.values == [UserCreated(userID: 1)])
                // The sniffer's connection may hear it after B's: wait for it there too.
                try await waitUntil("the sniffer capturing user 1") {
                    captured.values.contains { $0.contains(#""type":"UserCreated""#) }
                }
                let genuine = try #require(captured.values.first { $0.contains(#""type":"UserCreated""#) })
                #expect(genuine.hasPrefix(#"{"signature":""#))

                let stranger = UUID().uuidString
                let canonical =
                    #"{"version":1,"type":"UserCreated","origin":"\#(stranger)","payload":{"userID":666001},"sequence":1}"#
                let messages = [
                    canonical,  // unsigned
                    signed(canonical, key: SymmetricKey(size: .bits256), channel: channel),  // forged: another key
                    genuine.replacingOccurrences(of: #"{"userID":1}"#, with: #"{"userID":999002}"#),  // altered
                    signed(canonical, key: key, channel: "another_channel"),  // signed for another channel
                    genuine,  // replayed: sequence 1 of A again
                ]
                for message in messages {
                    try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
                }
                try await a.barrier(to: b, id: 2)

                #expect(
                    b.errors.values.map(\.code) == [
                        .unsignedEnvelope, .invalidSignature, .invalidSignature, .invalidSignature, .duplicateSequence,
                    ])
                #expect(b.users.values == [UserCreated(userID: 1)])
                #expect(b.link.statistics.rejected == 4 && b.link.statistics.duplicates == 1)
                let described = b.errors.values.map(\.description).joined()
                #expect(!described.contains("666001") && !described.contains("999002"))  // payloads are never quoted
                // A signed message with the right key is accepted from any origin.
                try await raw.query(
                    "SELECT pg_notify(\(channel), \(signed(canonical, key: key, channel: channel)))",
                    logger: TestServer.logger)
                try await waitUntil("the validly signed user") { b.users.count == 2 }
                #expect(b.users.values.last == UserCreated(userID: 666_001))
                await a.link.close()
                await b.link.close()
            }
        }
    }

    /// Signs `envelope` as a link would: HMAC-SHA256 over the channel, a zero byte, and the envelope
    /// with the key id and the issue time (now) in front.
    private func signed(_ envelope: String, key: SymmetricKey, channel: String) -> String {
        signedEnvelope(envelope, key: key, channel: channel)
    }

    @Test func closeFlushesWhatWasPostedBeforeAndStopsTraffic() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        #expect(a.hub.observerCount(of: UserCreated.self) == 2)  // the test's and the link's

        for id in 0..<200 { a.hub.post(UserCreated(userID: id)) }
        await a.link.close()
        try await waitUntil("200 users on B") { b.users.count == 200 }
        #expect(b.users.values.map(\.userID) == Array(0..<200))
        #expect(a.link.statistics.sent == 200)
        // The link observes until it is released, to report posts made after close.
        #expect(a.hub.observerCount(of: UserCreated.self) == 2)

        a.hub.post(UserCreated(userID: 999))  // after close: local only, and reported
        #expect(a.users.values.last == UserCreated(userID: 999))
        #expect(a.link.statistics.sent == 200)
        #expect(a.errors.values.map(\.code) == [.postAfterShutdown])

        await b.link.close()
        let c = try await Node(channel: channel)
        let d = try await Node(channel: channel)
        c.hub.post(UserCreated(userID: 1_000))
        try await c.barrier(to: d)
        #expect(d.users.values == [UserCreated(userID: 1_000)])
        #expect(b.users.count == 200)  // B's closed link received nothing more
        await c.link.close()
        await d.link.close()
    }
}

/// Stops and starts the second cluster midway; its own suite and server, so that the other tests
/// keep theirs.
@Suite(
    "PostgresLink across a server restart", .serialized,
    .enabled(if: TestServer.shouldRun && RestartableServer.isConfigured, Comment(rawValue: RestartableServer.missing)))
struct ServerRestartTests {
    @Test func aRestartIsReportedAsAnOutageAndDeliveryResumesInOrder() async throws {
        let channel = TestServer.makeChannel()
        let configuration = try RestartableServer.configuration()
        let options = PostgresLink.Options(reconnection: TestServer.fastReconnection)
        let a = try await Node(channel: channel, configuration: configuration, options: options)
        let b = try await Node(channel: channel, configuration: configuration, options: options)
        for id in 1...3 { a.hub.post(UserCreated(userID: id)) }
        try await a.barrier(to: b)

        let stopped = Date()
        try await RestartableServer.stop()
        try await waitUntil("both listening connections lost") {
            a.errors.values.contains { $0.code == .connectionLost }
                && b.errors.values.contains { $0.code == .connectionLost }
        }
        // Posted while the server is down: queued, then sent in order after reconnecting.
        for id in 4...6 { a.hub.post(UserCreated(userID: id)) }
        #expect(a.users.values.map(\.userID) == [1, 2, 3, 4, 5, 6])  // local observers at once
        try await Task.sleep(for: .milliseconds(300))
        #expect(a.link.statistics.sent == 4)  // 3 users and a barrier; the rest wait
        // Taken before the start: the links may be listening again before `pg_ctl` returns.
        let starting = Date()
        try await RestartableServer.start()

        try await waitUntil("both listening again") {
            a.errors.values.contains { $0.code == .outage } && b.errors.values.contains { $0.code == .outage }
        }
        let outage = try #require(b.errors.values.first { $0.code == .outage }?.outage)
        #expect(outage.lowerBound >= stopped.addingTimeInterval(-1) && outage.upperBound >= starting)
        try await waitUntil("A's queued posts sent: \(a.errors.values), \(a.link.statistics)") {
            a.link.statistics.sent == 7
        }

        for id in 7...9 { a.hub.post(UserCreated(userID: id)) }
        try await a.barrier(to: b, id: 2)
        let received = b.users.values.map(\.userID)
        // At most once across the outage: those of 4...6 that A sent after B listened again arrive,
        // in order; the others are lost and reported as a gap.
        #expect(received == [1, 2, 3] + Array(received.dropFirst(3).dropLast(3)) + [7, 8, 9])
        #expect(Array(received.dropFirst(3).dropLast(3)) == Array((4...6).suffix(max(0, received.count - 6))))
        if received.count < 9 {
            #expect(b.errors.values.contains { $0.code == .sequenceGap })
        }
        #expect(a.users.values.map(\.userID) == Array(1...9))  // no echo
        #expect(a.errors.values.allSatisfy { [.connectionLost, .outage].contains($0.code) })
        #expect(b.errors.values.allSatisfy { [.connectionLost, .outage, .sequenceGap].contains($0.code) })
        await a.link.close()
        await b.link.close()
    }

    @Test func aFullQueueRefusesPostsAndClosingDuringAnOutageReportsWhatWasNotSent() async throws {
        let channel = TestServer.makeChannel()
        let configuration = try RestartableServer.configuration()
        let options = PostgresLink.Options(reconnection: TestServer.fastReconnection, sendQueueLimit: 3)
        let a = try await Node(channel: channel, configuration: configuration, options: options)
        try await RestartableServer.stop()
        var failure: (any Error)?
        do {
            try await waitUntil("the lost connection") { a.errors.values.contains { $0.code == .connectionLost } }
            for id in 1...5 { a.hub.post(UserCreated(userID: id)) }
            #expect(a.users.values.map(\.userID) == [1, 2, 3, 4, 5])  // every post reached local observers
            #expect(
                a.errors.values.filter { $0.code == .sendQueueFull }.map(\.expected) == [
                    "at most 3 posts waiting to be sent", "at most 3 posts waiting to be sent",
                ])
            let clock = ContinuousClock()
            let closing = clock.now
            await a.link.close()  // does not wait for the server
            #expect(clock.now - closing < .seconds(5))
            #expect(
                a.errors.values.filter { $0.code == .notSent }.map(\.expected) == [
                    "to send sequence 1", "to send sequence 2", "to send sequence 3",
                ])
            #expect(
                a.errors.values.filter { $0.code == .notSent }.allSatisfy {
                    $0.found == "the link closed while its sending connection was reconnecting"
                })
            #expect(a.link.statistics.sent == 0 && a.link.statistics.sendFailures == 5)
        } catch {
            failure = error
        }
        try await RestartableServer.start()
        if let failure { throw failure }
    }

    /// A promoted server (a new timeline) may have handed out again the transaction ids of rows it
    /// lacks before the link reconnects, so that the position in memory lies below its next id: the
    /// consumer resumes at its position stored on that server all the same, and reports it. Here the
    /// server lacks nothing and the stored position is put back by hand, so that the rows after it
    /// come again.
    @Test func aDurableConsumerResumesAtItsStoredPositionOnAPromotedServer() async throws {
        let channel = TestServer.makeChannel()
        let configuration = try RestartableServer.configuration()
        let log = try makeTestLog()
        let poster = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "p"), configuration: configuration)
        let reader = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "r", start: .earliest),
            configuration: configuration)
        let raw = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: TestServer.logger)
        let consumers = "\"public\".\"\(log.table)_consumers\""
        var positions: [DurablePosition] = []
        var failure: (any Error)?
        do {
            // Transactional posts: a row read again is delivered again (an ordinary post read again
            // would be dropped by its sequence number).
            for id in 1...3 {
                try await raw.withTransaction(logger: TestServer.logger) { connection in
                    try await poster.link.post(UserCreated(userID: id), in: connection)
                }
            }
            try await waitUntil("the first rows") { reader.deliveries.count == 3 }
            positions = reader.deliveries.values.map(\.position)
            // Stored within the poll interval after the last row; then the link stores again only
            // when its position moves (or after a minute): the position put back stays.
            var stored: [Int64] = []
            for _ in 0..<100 {
                stored = try await int64s("SELECT position FROM \(consumers) WHERE name = 'r'", on: raw)
                if stored == [positions[2].position] { break }
                try await waitForReads(of: reader.link, after: reader.link.statistics.logReads, count: 1)
            }
            try #require(stored == [positions[2].position])
            try await int64s(
                """
                UPDATE \(consumers) SET tx = '\(positions[0].transaction)'::xid8, \
                position = \(positions[0].position) WHERE name = 'r' RETURNING position
                """, on: raw)
        } catch {
            failure = error
        }
        try? await raw.close()
        if let failure { throw failure }

        try await RestartableServer.promote()
        try await waitUntil("the report") { reader.errors.values.contains { $0.code == .positionAhead } }
        poster.hub.post(UserCreated(userID: 4))
        try await waitUntil("rows 2 and 3 again, then 4") { reader.users.count == 6 }
        #expect(reader.userIDs == [1, 2, 3, 2, 3, 4])
        #expect(Array(reader.deliveries.values.map(\.position).prefix(5)) == positions + positions.dropFirst())
        let reports = reader.errors.values.filter { $0.code == .positionAhead }
        #expect(reports.count == 1)
        #expect(reports.first?.found?.hasPrefix("position \(positions[2]), read on timeline ") == true)
        #expect(reports.first?.found?.hasSuffix("resuming at \(positions[0])") == true)
        // The poster's own consumer goes on from its stored position too: reported as well when
        // that lagged the rows it had delivered (it stores within the poll interval), nothing else.
        #expect(poster.errors.values.allSatisfy { [.connectionLost, .outage, .positionAhead].contains($0.code) })
        await poster.link.close()
        await reader.link.close()
    }
}

@Suite("PostgresLink without a server")
struct PostgresLinkOfflineTests {
    @Test(arguments: [
        "", "orders; DROP TABLE x", "1orders", "or-ders", "\"orders\"", String(repeating: "a", count: 64),
    ])
    func aChannelNameThatIsNotAPlainIdentifierIsRefused(_ name: String) async throws {
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: nil, tls: .disable)
        let error = await #expect(throws: PostgresLinkError.self) {
            _ = try await PostgresLink.connect(hub: NotificationHub(), channel: name, configuration: configuration)
        }
        #expect(error?.code == .invalidChannelName)
        #expect(error?.found == "\"\(name)\"")
    }

    @Test func theSuitesNeedAServerInCI() {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            #expect(TestServer.configuration != nil, Comment(rawValue: TestServer.missing))
        }
    }
}

@Suite("HeraldPostgres README")
struct ReadmeTests {
    @Test func theUsageExampleIsTheCompiledExampleTarget() throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appending(path: "README.md"), encoding: .utf8)
        let example = try String(
            contentsOf: root.appending(path: "Examples/TwoTerminals/Instance.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + example + "```"))
    }

    /// The DocC article's first Swift block is the compiled example, as written.
    @Test func theArticlesSwiftBlockIsTheCompiledExampleTarget() throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appending(
                path: "Sources/HeraldPostgres/HeraldPostgres.docc/AcrossProcessesWithPostgreSQL.md"),
            encoding: .utf8)
        let example = try String(
            contentsOf: root.appending(path: "Examples/TwoTerminals/Instance.swift"), encoding: .utf8)
        let blocks = article.components(separatedBy: "```swift\n").dropFirst().map {
            String($0.prefix(upTo: $0.range(of: "```")?.lowerBound ?? $0.endIndex))
        }
        #expect(blocks.first == example)
    }
}
