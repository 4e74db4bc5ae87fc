import Foundation
import Herald
import PostgresNIO
import Testing

@testable import HeraldPostgres

/// The receiver's decisions, without a server: restarts, clashes, gaps, copies and forged numbers.
@Suite("PeerTracker")
struct PeerTrackerTests {
    let own = UUID()
    let peer = UUID()
    let ownIncarnation = Incarnation(id: 1, started: 1_000)

    private func tracker(signed: Bool = false) -> PeerTracker {
        PeerTracker(origin: own, incarnation: ownIncarnation, isSigned: signed)
    }

    /// Checks each sequence, with a digest of its own (a distinct message) unless given; returns
    /// the sequences delivered and the events.
    private func check(
        _ tracker: inout PeerTracker, _ origin: UUID, _ incarnation: Incarnation?, _ sequences: [UInt64],
        digest: Int? = nil
    ) -> (delivered: [UInt64], events: [PeerTracker.Event]) {
        var events: [PeerTracker.Event] = []
        var delivered: [UInt64] = []
        for sequence in sequences {
            let digest = digest ?? Int(truncatingIfNeeded: sequence &* 31 &+ (incarnation?.id ?? 0))
            if tracker.check(
                origin: origin, incarnation: incarnation, sequence: sequence, digest: digest, events: &events)
            {
                delivered.append(sequence)
            }
        }
        return (delivered, events)
    }

    @Test func aRestartedOriginIsANewSequenceSpaceReportedWithTheLastSequenceOfThePreviousOne() {
        for signed in [false, true] {
            var tracker = tracker(signed: signed)
            let first = Incarnation(id: 2, started: 500)
            let second = Incarnation(id: 3, started: 2_000)
            #expect(check(&tracker, peer, first, [1, 2, 3, 4, 5]) == ([1, 2, 3, 4, 5], []))
            let (delivered, events) = check(&tracker, peer, second, [1, 2, 3])
            #expect(delivered == [1, 2, 3])
            #expect(events == [.restarted(previous: first, lastSequence: 5, current: second)])
        }
    }

    @Test func twoIncarnationsOfOneOriginHeardInTurnAreBothDeliveredAndReportedOnce() {
        var tracker = tracker()
        let first = Incarnation(id: 2, started: 500)
        let second = Incarnation(id: 3, started: 600)
        _ = check(&tracker, peer, first, [1])
        #expect(check(&tracker, peer, second, [1]).events.count == 1)  // taken for a restart at first
        #expect(check(&tracker, peer, first, [2]) == ([2], [.clash(second, first)]))
        #expect(check(&tracker, peer, second, [2]) == ([2], []))
        #expect(check(&tracker, peer, first, [3]) == ([3], []))
    }

    @Test func anotherIncarnationUnderThisLinksOwnOriginIsAClashNotAnEcho() {
        var tracker = tracker()
        let replica = Incarnation(id: 9, started: 900)
        #expect(check(&tracker, own, replica, [1, 2]) == ([1, 2], [.clash(ownIncarnation, replica)]))
    }

    @Test func aPeerThatStartedAfterThisLinkAndIsFirstHeardPastOneHasAGapFromOne() {
        var tracker = tracker()
        #expect(check(&tracker, peer, Incarnation(id: 2, started: 1_500), [4]) == ([4], [.gap(expected: 1, found: 4)]))
        // One that started before this link: what it sent before was not for this link to hear.
        #expect(check(&tracker, UUID(), Incarnation(id: 3, started: 900), [4]) == ([4], []))
        // Envelopes without incarnation: no start time to judge by.
        #expect(check(&tracker, UUID(), nil, [4]) == ([4], []))
    }

    @Test func withoutAKeyAForgedHighSequenceSilencesNobody() {
        var tracker = tracker()
        let incarnation = Incarnation(id: 2, started: 500)
        _ = check(&tracker, peer, incarnation, [1, 2])
        let forged = check(&tracker, peer, incarnation, [UInt64.max - 1], digest: 666)
        #expect(forged == ([UInt64.max - 1], [.gap(expected: 3, found: UInt64.max - 1)]))
        let genuine = check(&tracker, peer, incarnation, Array(3...12))
        #expect(genuine.delivered == Array(3...12))
        #expect(genuine.events == [.regression(lastAccepted: UInt64.max - 1, found: 3)])
    }

    @Test func withoutAKeyOnlyACopyOfARecentMessageIsRefused() {
        var tracker = tracker()
        let incarnation = Incarnation(id: 2, started: 500)
        _ = check(&tracker, peer, incarnation, [1, 2, 3], digest: 7)
        // The same message again (sent again after a reconnection): refused.
        #expect(check(&tracker, peer, incarnation, [3], digest: 7) == ([], [.duplicate(lastAccepted: 3, found: 3)]))
        // Another message with a number already used (forged first, or the genuine one after a forgery).
        #expect(check(&tracker, peer, incarnation, [3], digest: 8) == ([3], [.regression(lastAccepted: 3, found: 3)]))
    }

    @Test func withAKeyOrWithoutIncarnationEveryNumberAtOrBelowTheLastIsRefused() {
        var signed = tracker(signed: true)
        let incarnation = Incarnation(id: 2, started: 500)
        #expect(check(&signed, peer, incarnation, [1, 2, 5, 5, 3, 6]).delivered == [1, 2, 5, 6])
        var legacy = tracker()
        #expect(check(&legacy, peer, nil, [1, 2, 5, 5, 3, 6]).delivered == [1, 2, 5, 6])
    }

    /// Envelopes of earlier releases (versions 1 and 2) have no incarnation: their origin is one
    /// sequence space, checked strictly with or without a key.
    @Test func legacyEnvelopesAreDeduplicatedStrictlyPerOrigin() {
        for signed in [false, true] {
            var tracker = tracker(signed: signed)
            // A copy, and any other message at or below the last number, whatever its bytes.
            #expect(check(&tracker, peer, nil, [1, 2, 3]) == ([1, 2, 3], []))
            #expect(check(&tracker, peer, nil, [3], digest: 3) == ([], [.duplicate(lastAccepted: 3, found: 3)]))
            #expect(check(&tracker, peer, nil, [2], digest: 99) == ([], [.duplicate(lastAccepted: 3, found: 2)]))
            // A process that restarted with the same origin numbers from 1 again: refused until its
            // numbers pass the last one heard (no incarnation tells it from a replay).
            #expect(
                check(&tracker, peer, nil, [1, 2, 3, 4]) == (
                    [4], (1...3).map { .duplicate(lastAccepted: 3, found: $0) }
                ))
        }
    }

    @Test func withoutAKeyAForgedLegacyNumberSilencesThatOriginsLegacyEnvelopesOnly() {
        var tracker = tracker()
        let incarnation = Incarnation(id: 2, started: 500)
        _ = check(&tracker, peer, nil, [1])
        _ = check(&tracker, peer, incarnation, [1])
        // Forged, version 1, under the peer's origin: its later legacy envelopes are refused…
        #expect(check(&tracker, peer, nil, [UInt64.max - 1]).delivered == [UInt64.max - 1])
        #expect(check(&tracker, peer, nil, [2, 3]).delivered.isEmpty)
        // …but not its envelopes of this release, which belong to its incarnation.
        #expect(check(&tracker, peer, incarnation, [2, 3]) == ([2, 3], []))
    }

    @Test func legacySequenceSpacesAreNotForgottenWhenIncarnationsAre() {
        var tracker = tracker()
        _ = check(&tracker, peer, nil, [1, 2, 3])
        for id in 10..<(10 + UInt64(PeerTracker.incarnationsPerOrigin) * 2) {
            _ = check(&tracker, peer, Incarnation(id: id, started: 500 + id), [1])
        }
        #expect(check(&tracker, peer, nil, [3]).delivered.isEmpty)
        #expect(check(&tracker, peer, nil, [4]).delivered == [4])
    }

    @Test func anIncarnationIsWrittenAndReadBackAsSixteenHexadecimalDigits() throws {
        for id: UInt64 in [0, 1, 0xABC, .max] {
            let incarnation = Incarnation(id: id, started: 42)
            #expect(incarnation.idText.count == 16)
            #expect(Incarnation(idText: Array(incarnation.idText.utf8), started: 42) == incarnation)
        }
        #expect(Incarnation(idText: Array("00000000000000G0".utf8), started: 0) == nil)
        #expect(Incarnation(idText: Array("0".utf8), started: 0) == nil)
    }
}

/// Restarts and replicas with a fixed origin, forged numbers without a key, and a peer that starts
/// while this link is not listening, against a real server.
@Suite("PostgresLink incarnations", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct IncarnationTests {
    @Test func aProcessThatRestartsWithAFixedOriginLosesNothing() async throws {
        let channel = TestServer.makeChannel()
        let origin = UUID()
        let b = try await Node(channel: channel)
        let configuration = try TestServer.requireConfiguration()

        let first = try await Node(channel: channel, configuration: configuration, origin: origin)
        for id in 1...5 { first.hub.post(UserCreated(userID: id)) }
        try await first.barrier(to: b)  // sequence 6
        await first.link.close()
        // The same service, started again with the same origin.
        let second = try await Node(channel: channel, configuration: configuration, origin: origin)
        for id in 6...10 { second.hub.post(UserCreated(userID: id)) }
        try await second.barrier(to: b, id: 2)

        #expect(b.users.values.map(\.userID) == Array(1...10))
        #expect(b.errors.values.map(\.code) == [.originRestarted])
        #expect(b.errors.values.first?.lastSequence == 6)
        #expect(b.errors.values.first?.origin == origin)
        #expect(b.link.statistics.restarts == 1 && b.link.statistics.duplicates == 0)
        await second.link.close()
        await b.link.close()
    }

    @Test func twoProcessesWithOneOriginHearEachOtherAndEachReportsTheClash() async throws {
        let channel = TestServer.makeChannel()
        let origin = UUID()
        let b = try await Node(channel: channel)
        let first = try await Node(channel: channel, origin: origin)
        first.hub.post(UserCreated(userID: 1))
        first.hub.post(UserCreated(userID: 2))
        try await first.barrier(to: b, id: 1)
        let second = try await Node(channel: channel, origin: origin)
        second.hub.post(UserCreated(userID: 3))
        second.hub.post(UserCreated(userID: 4))
        try await second.barrier(to: b, id: 2)
        try await waitUntil("the first replica hearing the second") { first.users.count == 4 }
        first.hub.post(UserCreated(userID: 5))
        try await first.barrier(to: b, id: 3)
        try await waitUntil("each replica hearing the other") {
            first.users.count == 5 && second.users.count == 3
        }

        #expect(b.users.values.map(\.userID) == [1, 2, 3, 4, 5])
        #expect(first.users.values.map(\.userID) == [1, 2, 3, 4, 5])  // not dropped as echoes
        #expect(second.users.values.map(\.userID) == [3, 4, 5])
        // B heard the second replica after the first: a clash, not taken for a restart first.
        #expect(b.errors.values.map(\.code) == [.originClash])
        #expect(b.link.statistics.clashes == 1 && b.link.statistics.restarts == 0)
        #expect(first.errors.values.map(\.code) == [.originClash])
        #expect(second.errors.values.map(\.code) == [.originClash])
        #expect([b, first, second].allSatisfy { $0.link.statistics.duplicates == 0 })
        await first.link.close()
        await second.link.close()
        await b.link.close()
    }

    @Test func withoutAKeyAForgedSequenceNearTheMaximumSilencesNoPeer() async throws {
        let channel = TestServer.makeChannel()
        let a = try await Node(channel: channel)
        let b = try await Node(channel: channel)
        try await withRawConnection { raw in
            a.hub.post(UserCreated(userID: 1))
            try await a.barrier(to: b)

            // What anyone who can NOTIFY (and LISTEN, to read A's origin and incarnation) could send.
            let origin = a.link.origin.uuidString
            let incarnation = a.link.core.incarnation
            let forged = [
                #"{"version":1,"type":"UserCreated","origin":"\#(origin)","sequence":18446744073709551614,"payload":{"userID":666}}"#,
                #"{"version":3,"origin":"\#(origin)","incarnation":"\#(incarnation.idText)","started":\#(incarnation.started),"sequence":18446744073709551614,"count":1,"batch":[{"type":"UserCreated","payload":{"userID":667}}]}"#,
            ]
            for message in forged {
                try await raw.query("SELECT pg_notify(\(channel), \(message))", logger: TestServer.logger)
            }
            try await waitUntil("the forged messages delivered") { b.users.count == 3 }
            for id in 10..<20 { a.hub.post(UserCreated(userID: id)) }
            try await a.barrier(to: b, id: 2)

            #expect(b.users.values.map(\.userID) == [1, 666, 667] + Array(10..<20))
            #expect(b.errors.values.map(\.code) == [.sequenceGap, .sequenceRegression])
            #expect(b.link.statistics.duplicates == 0)
        }
        await a.link.close()
        await b.link.close()
    }

    @Test func aPeerThatStartsWhileThisLinkIsNotListeningIsReportedAsAGapFromOne() async throws {
        let channel = TestServer.makeChannel()
        // B reconnects after 3 s: long enough for A to connect and send meanwhile.
        let slow = PostgresLink.Options(
            reconnection: PostgresLink.Reconnection(initialDelay: .seconds(3), maximumDelay: .seconds(3)))
        let b = try await Node(channel: channel, options: slow)
        let terminated = try await withRawConnection { raw in
            try await raw.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = \(#"LISTEN "\#(channel)";"#)",
                logger: TestServer.logger
            ).collect().count
        }
        #expect(terminated == 1)
        try await waitUntil("B's listening connection lost") {
            b.errors.values.contains { $0.code == .connectionLost }
        }
        let a = try await Node(channel: channel)
        for id in 1...3 { a.hub.post(UserCreated(userID: id)) }
        try await waitUntil("A's sends completed") { a.link.statistics.sent == 3 }
        try await waitUntil("B listening again") { b.errors.values.contains { $0.code == .outage } }
        a.hub.post(UserCreated(userID: 4))
        try await a.barrier(to: b)

        #expect(b.users.values.map(\.userID) == [4])
        #expect(b.errors.values.map(\.code) == [.connectionLost, .outage, .sequenceGap])
        #expect(b.errors.values.last?.expected == "sequence 1")
        #expect(b.errors.values.last?.found == "sequence 4 (3 lost)")
        await a.link.close()
        await b.link.close()
    }

    /// The peer's host clock is 5 minutes behind: its start is judged by the database server's
    /// clock, so what it posted while this link was not listening is reported all the same.
    @Test func aPeerWhoseClockIsBehindAndStartsWhileThisLinkIsNotListeningIsReportedAsAGapFromOne()
        async throws
    {
        let channel = TestServer.makeChannel()
        let slow = PostgresLink.Options(
            reconnection: PostgresLink.Reconnection(initialDelay: .seconds(3), maximumDelay: .seconds(3)))
        let b = try await Node(channel: channel, options: slow)
        let terminated = try await withRawConnection { raw in
            try await raw.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = \(#"LISTEN "\#(channel)";"#)",
                logger: TestServer.logger
            ).collect().count
        }
        #expect(terminated == 1)
        try await waitUntil("B's listening connection lost") {
            b.errors.values.contains { $0.code == .connectionLost }
        }
        let behind = OffsetClock(offset: -300)
        let a = try await Node(channel: channel, options: PostgresLink.Options(now: behind.now))
        for id in 1...20 { a.hub.post(UserCreated(userID: id)) }
        try await waitUntil("A's sends completed") { a.link.statistics.sent == 20 }
        try await waitUntil("B listening again") { b.errors.values.contains { $0.code == .outage } }
        a.hub.post(UserCreated(userID: 21))
        try await a.barrier(to: b)

        #expect(b.users.values.map(\.userID) == [21])
        #expect(b.errors.values.map(\.code) == [.connectionLost, .outage, .sequenceGap])
        #expect(b.errors.values.last?.expected == "sequence 1")
        #expect(b.errors.values.last?.found == "sequence 21 (20 lost)")
        await a.link.close()
        await b.link.close()
    }

    @Test func aLinkWithLegacyEnvelopesWritesVersionOneAndReadsEveryVersion() async throws {
        let channel = TestServer.makeChannel()
        // A plain listener sees what each link writes.
        try await withSniffer(on: channel) { captured in
            let legacy = try await Node(
                channel: channel, options: PostgresLink.Options(batchesBursts: false, legacyEnvelopes: true))
            let current = try await Node(channel: channel)
            for id in 0..<20 { legacy.hub.post(UserCreated(userID: id)) }
            try await legacy.barrier(to: current)
            current.hub.post(UserCreated(userID: 100))
            try await current.barrier(to: legacy, id: 2)

            #expect(current.users.values.map(\.userID) == Array(0..<20) + [100])
            #expect(legacy.users.values.map(\.userID) == Array(0..<20) + [100])
            #expect(legacy.errors.values.isEmpty && current.errors.values.isEmpty)
            try await waitUntil("the sniffer hearing both barriers") {
                captured.values.filter { $0.contains(#""type":"Barrier""#) }.count == 2
            }
            let fromLegacy = captured.values.filter { $0.contains(legacy.link.origin.uuidString) }
            let fromCurrent = captured.values.filter { $0.contains(current.link.origin.uuidString) }
            #expect(fromLegacy.count == 21 && fromLegacy.allSatisfy { $0.hasPrefix(#"{"version":1,"#) })
            #expect(fromCurrent.count == 2 && fromCurrent.allSatisfy { $0.hasPrefix(#"{"version":3,"#) })
            await legacy.link.close()
            await current.link.close()
        }
    }
}

/// Envelopes of earlier releases (versions 1 and 2, without incarnation), as `legacyEnvelopes`
/// links and links of those releases write them, against a real server.
@Suite("PostgresLink legacy envelopes", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct LegacyEnvelopeTests {
    @Test func legacyEnvelopesAreDeduplicatedStrictlyPerOriginEvenWithoutAKey() async throws {
        let channel = TestServer.makeChannel()
        let b = try await Node(channel: channel)
        let legacy = UUID()
        try await withRawConnection { raw in
            func send(_ sequence: UInt64, userID: Int) async throws {
                let envelope =
                    #"{"version":1,"type":"UserCreated","origin":"\#(legacy)","sequence":\#(sequence),"payload":{"userID":\#(userID)}}"#
                try await raw.query("SELECT pg_notify(\(channel), \(envelope))", logger: TestServer.logger)
            }
            try await send(1, userID: 1)
            try await send(2, userID: 2)
            try await send(2, userID: 2)  // a copy
            try await send(1, userID: 10)  // another message with a number used: no incarnation tells a
            // restarted process from a replay, so it is refused, unlike in version 3
            try await send(3, userID: 3)
            try await send(UInt64.max - 1, userID: 666)  // forged: silences this origin's legacy envelopes…
            try await send(4, userID: 4)
            // …but not what the same origin sends as version 3, in a sequence space of its own.
            let upgraded = try await Node(channel: channel, origin: legacy)
            upgraded.hub.post(UserCreated(userID: 5))
            try await upgraded.barrier(to: b)

            #expect(b.users.values.map(\.userID) == [1, 2, 3, 666, 5])
            #expect(
                b.errors.values.map(\.code) == [
                    .duplicateSequence, .duplicateSequence, .sequenceGap, .duplicateSequence,
                ])
            #expect(b.link.statistics.duplicates == 3 && b.link.statistics.regressions == 0)
            await b.link.close()
            await upgraded.link.close()
        }
    }
}
