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
        let raw = try await TestServer.rawConnection()
        let stranger = UUID().uuidString
        let messages = [
            "not json",
            #"{"hello":"world"}"#,
            #"{"version":1,"type":"UserCreated","sequence":1,"payload":{"userID":1}}"#,
            #"{"version":2,"type":"UserCreated","origin":"\#(stranger)","sequence":1,"payload":{}}"#,
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
                "a JSON object", "key \"version\"", "key \"origin\"", "envelope version 1 or older",
                "UInt64 at \"sequence\"", "Int at \"payload.userID\"",
            ])
        #expect(errors[0].found == "8 bytes that are not valid JSON")
        #expect(errors[1].found == "no such key")
        #expect(errors[3].found == "version 2")
        #expect(errors.allSatisfy { !$0.description.contains("seven") })  // payloads are never quoted
        #expect(b.users.values.isEmpty)
        #expect(b.link.statistics.rejected == messages.count)
        try await waitUntil("A skipping them too") { a.errors.count == messages.count }
        try await raw.close()
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
        let raw = try await TestServer.rawConnection()
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
        try await raw.close()
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

    @Test func aDroppedListeningConnectionIsReportedAndSendingGoesOn() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        let raw = try await TestServer.rawConnection()
        // The server ends B's listening connection, as a restart or a network fault would.
        let terminated = try await raw.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = \(#"LISTEN "\#(channel)";"#)",
            logger: TestServer.logger
        ).collect().count
        #expect(terminated == 2)  // A's and B's listening connections
        try await waitUntil("B reporting the lost connection") {
            b.errors.values.contains { $0.code == .connectionLost }
        }
        #expect(a.errors.values.contains { $0.code == .connectionLost })

        b.hub.post(UserCreated(userID: 1))  // still sent: the sending connection is B's other one
        #expect(b.users.values == [UserCreated(userID: 1)])
        try await waitUntil("B's send") { b.link.statistics.sent == 1 }
        try await raw.close()
        await a.link.close()
        await b.link.close()
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
        #expect(a.hub.observerCount(of: UserCreated.self) == 1)  // the link stopped observing

        a.hub.post(UserCreated(userID: 999))  // after close: local only
        #expect(a.users.values.last == UserCreated(userID: 999))
        #expect(a.link.statistics.sent == 200)

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
}
