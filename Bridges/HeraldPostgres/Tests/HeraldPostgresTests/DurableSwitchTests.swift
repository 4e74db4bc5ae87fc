import Crypto
import Foundation
import Herald
import HeraldPostgres
import PostgresNIO
import Synchronization
import Testing

/// The switch of a running service from plain to durable mode, against a real server: write-only
/// links beside plain ones, reading links with plain copies beside write-only ones, a reading link
/// that takes over a write-only link's consumer, the `NOTIFY` limit of plain copies, transactional
/// posts' copies, and a service switched one link at a time while a poster posts.
@Suite("Durable switch", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct DurableSwitchTests {
    /// The user ids of the log's rows, in the log's order.
    private func loggedUserIDs(in log: DurableLog, on connection: PostgresConnection) async throws -> [Int] {
        try await int64s(
            """
            SELECT (payload::json->'batch'->0->'payload'->>'userID')::int8 FROM "public"."\(log.table)" \
            WHERE type = 'UserCreated' ORDER BY tx, position
            """, on: connection
        ).map { Int($0) }
    }

    /// The transaction of the position stored for `consumer`.
    private func storedTransaction(
        of consumer: String, in log: DurableLog, on connection: PostgresConnection
    ) async throws -> Int64? {
        try await int64s(
            "SELECT tx::text::int8 FROM \"public\".\"\(log.table)_consumers\" WHERE name = '\(consumer)'",
            on: connection
        ).first
    }

    @Test func aPlainLinkAndAWriteOnlyLinkReceiveEachOthersPostsAndTheLogHoldsTheWriteOnlyOnes() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let plain = try await Node(channel: channel)
        let writer = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "w", phase: .writeOnly))
        for id in 1...50 { plain.hub.post(UserCreated(userID: id)) }
        for id in 101...150 { writer.hub.post(UserCreated(userID: id)) }
        plain.hub.post(Barrier(id: 1))
        writer.hub.post(Barrier(id: 2))
        try await waitUntil("both barriers") {
            plain.barriers.values.contains(Barrier(id: 2)) && writer.barriers.values.contains(Barrier(id: 1))
        }

        // Each post once everywhere: the poster's own inside `post`, the other's from the payload.
        #expect(plain.users.values.map(\.userID).filter { $0 > 100 } == Array(101...150))
        #expect(writer.userIDs.filter { $0 <= 100 } == Array(1...50))
        #expect(writer.userIDs.filter { $0 > 100 } == Array(101...150))
        #expect(plain.errors.values.map(\.description) == [])
        #expect(writer.errors.values.map(\.description) == [])
        // The log holds the write-only link's posts, and none of the plain link's.
        try await withRawConnection { raw async throws in
            #expect(try await loggedUserIDs(in: log, on: raw) == Array(101...150))
            // Its consumer has a row, for the reading link that replaces it.
            #expect(try await storedTransaction(of: "w", in: log, on: raw) != nil)
        }
        await plain.link.close()
        await writer.link.close()
    }

    @Test func aReadingLinkWithPlainCopiesAndAWriteOnlyLinkReceiveEachOthersPostsOnce() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let writer = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "w", phase: .writeOnly))
        let reader = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "r", phase: .readingWithPlainCopies))
        for id in 1...100 {
            writer.hub.post(UserCreated(userID: id))
            reader.hub.post(UserCreated(userID: 1_000 + id))
        }
        writer.hub.post(Barrier(id: 1))
        reader.hub.post(Barrier(id: 2))
        try await waitUntil("both barriers") { writer.barriers.count == 2 && reader.barriers.count == 2 }

        for node in [writer, reader] {
            #expect(node.userIDs.filter { $0 < 1_000 } == Array(1...100))
            #expect(node.userIDs.filter { $0 > 1_000 } == Array(1_001...1_100))
            #expect(node.errors.values.map(\.description) == [])
        }
        // The reading link read the write-only link's posts from the log, not from their copies.
        #expect(reader.deliveries.values.map(\.notification.userID) == Array(1...100))
        #expect(reader.deliveries.values.allSatisfy { $0.origin == writer.link.origin })
        #expect(writer.deliveries.values.isEmpty)
        await writer.link.close()
        await reader.link.close()
    }

    /// Deployment 2 for one instance: the write-only link of consumer "a" stops, another link posts
    /// meanwhile, and the reading link of consumer "a" that replaces it receives every one of those
    /// posts, and none of those the write-only link had received before its position moved past them.
    @Test func aReadingLinkResumesWhereTheWriteOnlyLinkOfItsConsumerStopped() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "p", phase: .writeOnly))
        let writer = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "a", phase: .writeOnly))
        for id in 1...20 { poster.hub.post(UserCreated(userID: id)) }
        try await waitUntil("the write-only link has the first 20") { writer.users.count == 20 }

        // The copies that follow carry later horizons: the stored position moves past the first 20.
        try await withRawConnection { raw async throws in
            let lastFirst = try #require(
                try await int64s(
                    "SELECT max(tx::text::int8) FROM \"public\".\"\(log.table)\" WHERE type = 'UserCreated'",
                    on: raw
                ).first)
            var barrier = 0
            while try await storedTransaction(of: "a", in: log, on: raw) ?? 0 <= lastFirst {
                barrier += 1
                #expect(barrier < 200, "the stored position never passed the first posts")
                guard barrier < 200 else { break }
                let id = barrier
                poster.hub.post(Barrier(id: id))
                try await waitUntil("barrier \(id)") { writer.barriers.values.contains(Barrier(id: id)) }
            }
        }
        await writer.link.close()

        for id in 21...60 { poster.hub.post(UserCreated(userID: id)) }
        poster.hub.post(Barrier(id: 1_000))
        let reader = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "a", phase: .readingWithPlainCopies))
        try await waitUntil("the reading link has the last barrier") {
            reader.barriers.values.contains(Barrier(id: 1_000))
        }
        #expect(writer.userIDs == Array(1...20))
        #expect(reader.userIDs == Array(21...60))
        #expect(reader.errors.values.map(\.description) == [])
        await reader.link.close()
        await poster.link.close()
    }

    /// A write-only link holds its consumer's lock as a reading link does: one live link per name.
    @Test func aWriteOnlyLinkAndAReadingLinkDoNotRunUnderOneConsumerNameAtOnce() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let writer = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "a", phase: .writeOnly))
        let refused = await #expect(throws: PostgresLinkError.self) {
            _ = try await DurableNode(
                channel: channel, options: try durableOptions(log: log, consumer: "a", phase: .readingWithPlainCopies))
        }
        #expect(refused?.code == .consumerInUse)
        await writer.link.close()
        let reader = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "a", phase: .readingWithPlainCopies))
        let alsoRefused = await #expect(throws: PostgresLinkError.self) {
            _ = try await DurableNode(
                channel: channel, options: try durableOptions(log: log, consumer: "a", phase: .writeOnly))
        }
        #expect(alsoRefused?.code == .consumerInUse)
        await reader.link.close()
    }

    /// A plain copy is bound by the `NOTIFY` limit: a bigger post is refused as in plain mode (local
    /// observers only, and not in the log), alone or in a transaction; without plain copies it
    /// travels.
    @Test func aPostOverTheNotifyLimitIsRefusedWithPlainCopiesAndTravelsWithout() async throws {
        try await withRawConnection { connection in try await oversizePosts(on: connection) }
    }

    private func oversizePosts(on connection: PostgresConnection) async throws {
        let big = Blob(text: String(repeating: "x", count: PostgresLink.maximumPayloadBytes))
        for phase in [PostgresLink.Durability.Phase.writeOnly, .readingWithPlainCopies] {
            let channel = TestServer.makeChannel()
            let log = try makeTestLog()
            let poster = try await DurableNode(
                channel: channel, options: try durableOptions(log: log, consumer: "p", phase: phase))
            let other = try await DurableNode(
                channel: channel, options: try durableOptions(log: log, consumer: "o", phase: .writeOnly))
            poster.hub.post(big)
            try await connection.query("BEGIN", logger: TestServer.logger)
            let refused = await #expect(throws: PostgresLinkError.self) {
                try await poster.link.post(big, in: connection)
            }
            try await connection.query("ROLLBACK", logger: TestServer.logger)
            #expect(refused?.code == .payloadTooLarge)
            poster.hub.post(Barrier(id: 1))
            try await waitUntil("the barrier, \(phase), errors \(poster.errors.values) \(other.errors.values)") {
                other.barriers.count == 1
            }
            #expect(poster.blobs.values == [big], "\(phase): local observers only")
            #expect(other.blobs.values.isEmpty)
            #expect(poster.errors.values.map(\.code) == [.payloadTooLarge], "\(phase)")
            #expect(poster.link.statistics.oversize == 2)
            let logged = try await int64s(
                "SELECT count(*)::int8 FROM \"public\".\"\(log.table)\" WHERE type = 'Blob'", on: connection)
            #expect(logged == [0])
            await poster.link.close()
            await other.link.close()
        }
        // Reading links without plain copies: rows have no bound.
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "p"))
        let other = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "o"))
        poster.hub.post(big)
        try await connection.withTransaction(logger: TestServer.logger) { connection in
            try await poster.link.post(big, in: connection)
        }
        try await waitUntil("both big posts") { other.blobs.count == 2 }
        #expect(other.blobs.values == [big, big])
        #expect(poster.errors.values.isEmpty && other.errors.values.isEmpty)
        await poster.link.close()
        await other.link.close()
    }

    /// Transactional posts send their plain copy in the transaction, under a lane of their own: a
    /// copy committed after later posts of its link, and a rolled-back one, leave signed receivers
    /// nothing to refuse and no gap; the poster's own copy reaches a write-only poster's hub at the
    /// commit.
    @Test func transactionalPlainCopiesArriveOnCommitWhateverTheOrderOfTheCommits() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let key = SymmetricKey(size: .bits256)
        let writer = try await DurableNode(
            channel: channel, options: try durableOptions(log: log, consumer: "w", phase: .writeOnly, signingKey: key))
        let reader = try await DurableNode(
            channel: channel,
            options: try durableOptions(log: log, consumer: "r", phase: .readingWithPlainCopies, signingKey: key))
        try await withRawConnection { first in
            try await withRawConnection { second in
                try await transactionalCopies(writer: writer, reader: reader, first: first, second: second)
            }
        }
        await writer.link.close()
        await reader.link.close()
    }

    private func transactionalCopies(
        writer: DurableNode, reader: DurableNode, first: PostgresConnection, second: PostgresConnection
    ) async throws {

        // Posted first, committed last.
        try await first.query("BEGIN", logger: TestServer.logger)
        try await reader.link.post(UserCreated(userID: 1), in: first)
        reader.hub.post(UserCreated(userID: 2))
        try await waitUntil("the ordinary post") { writer.userIDs.contains(2) }
        // Rolled back: its number is used again.
        try await second.query("BEGIN", logger: TestServer.logger)
        try await reader.link.post(UserCreated(userID: 3), in: second)
        try await second.query("ROLLBACK", logger: TestServer.logger)
        try await second.withTransaction(logger: TestServer.logger) { connection in
            try await reader.link.post(UserCreated(userID: 4), in: connection)
            try await reader.link.post(UserCreated(userID: 5), in: connection)
        }
        try await waitUntil("4 and 5") { writer.userIDs.contains(5) }
        try await first.query("COMMIT", logger: TestServer.logger)
        // The write-only link's own transactional post reaches its hub at the commit.
        try await second.query("BEGIN", logger: TestServer.logger)
        try await writer.link.post(UserCreated(userID: 6), in: second)
        #expect(!writer.userIDs.contains(6))
        try await second.query("COMMIT", logger: TestServer.logger)
        writer.hub.post(Barrier(id: 1))
        reader.hub.post(Barrier(id: 2))
        try await waitUntil("both barriers") { writer.barriers.count == 2 && reader.barriers.count == 2 }

        #expect(writer.userIDs.sorted() == [1, 2, 4, 5, 6])
        #expect(reader.userIDs.sorted() == [1, 2, 4, 5, 6])
        #expect(writer.errors.values.map(\.description) == [])
        #expect(reader.errors.values.map(\.description) == [])
        #expect(writer.link.statistics.duplicates == 0 && writer.link.statistics.gaps == 0)
    }

    @Test func aPlainLinkThatHearsADurableWakeUpSaysWhatItIs() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let plain = try await Node(channel: channel)
        let durable = try await DurableNode(channel: channel, options: try durableOptions(log: log, consumer: "d"))
        durable.hub.post(UserCreated(userID: 1))
        try await waitUntil("the report") { plain.errors.count == 1 }
        let error = try #require(plain.errors.values.first)
        #expect(error.code == .malformedEnvelope)
        #expect(error.found?.contains("an empty payload: a durable link's wake-up") == true)
        #expect(plain.users.values.isEmpty)
        await plain.link.close()
        await durable.link.close()
    }

    /// A service of three instances, each receiving, and a fourth that posts without pause, is
    /// switched one instance at a time: from plain links to write-only ones, then to reading links
    /// with plain copies, then to reading links. In deployment 1 the poster pauses while an instance
    /// restarts (plain mode keeps nothing for a link that is not listening), and deployment 2 starts
    /// once every instance has received the plain posts; in deployments 2 and 3 the poster posts
    /// throughout, also while an instance is down. Every instance receives every post, at least once.
    @Test func aServiceSwitchedOneInstanceAtATimeLosesNoPost() async throws {
        let channel = TestServer.makeChannel()
        let log = try makeTestLog()
        let poster = ContinuousPoster()
        let received = (0..<3).map { _ in Tally() }
        let missing: @Sendable (Int, Int) -> [Int] = { instance, last in received[instance].missing(1...max(last, 1)) }

        /// One instance's link in a phase (`nil`: plain), into a hub that records what it receives.
        func start(_ instance: Int, _ phase: PostgresLink.Durability.Phase?) async throws -> Instance {
            let hub = NotificationHub()
            let record = received[instance]
            let token = hub.observe(UserCreated.self) { user in record.count(user.userID) }
            var options = PostgresLink.Options(reconnection: TestServer.fastReconnection)
            if let phase { options = try durableOptions(log: log, consumer: "instance-\(instance)", phase: phase) }
            let link = try PostgresLink(
                hub: hub, channel: channel, configuration: try TestServer.requireConfiguration(),
                sharing: [UserCreated.self], options: options)
            link.errorHandler = { error in
                Issue.record("instance \(instance), \(phase.map { "\($0)" } ?? "plain"): \(error)")
            }
            Task { try? await link.run() }
            try await link.listening()
            return Instance(link: link, token: token)
        }
        func startPoster(_ phase: PostgresLink.Durability.Phase?) async throws -> PostgresLink {
            var options = PostgresLink.Options(reconnection: TestServer.fastReconnection)
            if let phase { options = try durableOptions(log: log, consumer: "poster", phase: phase) }
            let hub = NotificationHub()
            let link = try await PostgresLink.connect(
                hub: hub, channel: channel, configuration: try TestServer.requireConfiguration(),
                sharing: [UserCreated.self], options: options)
            link.errorHandler = { error in Issue.record("poster: \(error)") }
            poster.post(into: hub, through: link)
            return link
        }

        // What happened when, by the next id to post, for the failure message.
        let timeline = Timeline()
        let began = ContinuousClock.now
        var instances: [Instance] = []
        func mark(_ event: String) {
            let elapsed = (ContinuousClock.now - began).components
            let milliseconds = elapsed.seconds * 1_000 + elapsed.attoseconds / 1_000_000_000_000_000
            let counts = instances.map { "\($0.link.statistics.received)" }.joined(separator: "/")
            timeline.mark("\(poster.next) at \(milliseconds) ms, received \(counts): \(event)")
        }
        for instance in 0..<3 { instances.append(try await start(instance, nil)) }
        var posterLink = try await startPoster(nil)
        let posting = Task { await poster.run() }
        try await poster.waitForPosts(50)

        // Deployment 1: write-only. An instance restarts once it has every post so far.
        for instance in 0..<3 {
            await poster.pause()
            let last = poster.next - 1
            try await waitUntil("instance \(instance) has every post") { missing(instance, last).isEmpty }
            await instances[instance].link.close()
            mark("instance \(instance) closed, \(instances[instance].link.statistics)")
            instances[instance] = try await start(instance, .writeOnly)
            mark("instance \(instance) writeOnly")
            poster.unpause()
            try await poster.waitForPosts(50)
        }
        await poster.pause()
        let lastPlain = poster.next - 1
        await posterLink.close()
        posterLink = try await startPoster(.writeOnly)
        mark("poster writeOnly")
        try await poster.waitForPosts(50)
        // Deployment 1 ends when the last plain link has stopped and every instance has received
        // its last posts: a plain post still on its way to an instance that restarts is lost, as in
        // plain mode (on a loaded machine, an instance was seen 100 ms behind).
        for instance in 0..<3 {
            try await waitUntil("instance \(instance) has every plain post") { missing(instance, lastPlain).isEmpty }
        }

        // Deployments 2 and 3: each instance stops, and its successor starts, while the poster posts.
        for phase in [PostgresLink.Durability.Phase.readingWithPlainCopies, .reading] {
            for instance in 0..<3 {
                await instances[instance].link.close()
                mark("instance \(instance) closed, \(instances[instance].link.statistics)")
                try await poster.waitForPosts(20)  // posted while the instance is down
                instances[instance] = try await start(instance, phase)
                mark("instance \(instance) \(phase)")
                try await poster.waitForPosts(50)
            }
            await poster.pause()
            await posterLink.close()
            posterLink = try await startPoster(phase)
            mark("poster \(phase)")
            try await poster.waitForPosts(50)
        }
        await poster.pause()
        posting.cancel()
        await posting.value
        let last = poster.next - 1

        for instance in 0..<3 {
            do {
                try await waitUntil("instance \(instance) has every post", timeout: .seconds(120)) {
                    missing(instance, last).isEmpty
                }
            } catch {
                let lacking = missing(instance, last)
                Issue.record(
                    """
                    instance \(instance) lacks \(lacking.count) of 1...\(last): \(ranges(of: lacking)); \
                    its link: \(instances[instance].link.statistics); \
                    the timeline (next id at time, received by each instance: event): \(timeline.events)
                    """)
            }
        }
        #expect(last > 500)
        for instance in instances {
            instance.token.cancel()
            await instance.link.close()
        }
        await posterLink.close()
    }
}

/// What happened during a test, in order.
final class Timeline: Sendable {
    private let marks = Mutex<[String]>([])

    func mark(_ event: String) { marks.withLock { $0.append(event) } }

    var events: String { marks.withLock { $0.joined(separator: ", ") } }
}

/// `ids`, sorted, written as ranges: "3...7, 9".
func ranges(of ids: [Int]) -> String {
    var runs: [ClosedRange<Int>] = []
    for id in ids.sorted() {
        if let last = runs.last, last.upperBound + 1 == id {
            runs[runs.count - 1] = last.lowerBound...id
        } else {
            runs.append(id...id)
        }
    }
    return runs.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)...\($0.upperBound)" }
        .joined(separator: ", ")
}

/// How many times each id arrived.
final class Tally: Sendable {
    private let counts = Mutex<[Int: Int]>([:])

    func count(_ id: Int) { counts.withLock { $0[id, default: 0] += 1 } }

    /// The ids of `range` that never arrived.
    func missing(_ range: ClosedRange<Int>) -> [Int] {
        counts.withLock { counts in range.filter { counts[$0] == nil } }
    }
}

/// One instance of the switched service: its link, and the observation that records what it
/// receives.
struct Instance {
    let link: PostgresLink
    let token: ObservationToken
}

/// Posts `UserCreated` 1, 2, 3… into the hub of the poster's link, as fast as that link sends them
/// (at most 20 unsent), until it is paused.
final class ContinuousPoster: Sendable {
    private struct State {
        var hub: NotificationHub?
        var link: PostgresLink?
        var isPaused = false
        var next = 1
        var isPosting = false
    }

    private let state = Mutex(State())

    /// The next id to post.
    var next: Int { state.withLock { $0.next } }

    /// Posts into `hub`, whose link is `link`, from now on.
    func post(into hub: NotificationHub, through link: PostgresLink) {
        state.withLock { state in
            state.hub = hub
            state.link = link
            state.isPaused = false
        }
    }

    /// Stops posting, and returns once no post is being made.
    func pause() async {
        state.withLock { $0.isPaused = true }
        try? await waitUntil("the poster paused") { !self.state.withLock { $0.isPosting } }
    }

    func unpause() {
        state.withLock { $0.isPaused = false }
    }

    /// Returns once `count` more posts were made.
    func waitForPosts(_ count: Int) async throws {
        let target = next + count
        try await waitUntil("\(count) posts") { self.next >= target }
    }

    func run() async {
        var sentBefore = 0
        var posted = 0
        var current: ObjectIdentifier?
        while !Task.isCancelled {
            let taken: (NotificationHub, PostgresLink, Int)? = state.withLock { state in
                guard !state.isPaused, let hub = state.hub, let link = state.link else { return nil }
                state.isPosting = true
                return (hub, link, state.next)
            }
            guard let (hub, link, id) = taken else {
                try? await waitUntil("the poster resumed") {
                    self.state.withLock { !$0.isPaused && $0.hub != nil } || Task.isCancelled
                }
                continue
            }
            if current != ObjectIdentifier(link) {
                current = ObjectIdentifier(link)
                sentBefore = link.statistics.sent
                posted = 0
            }
            hub.post(UserCreated(userID: id))
            posted += 1
            state.withLock { state in
                state.next = id + 1
                state.isPosting = false
            }
            // Back-pressure: at most 20 posts wait to be sent.
            let (sent, count) = (sentBefore, posted)
            try? await waitUntil("the poster's link sends") { link.statistics.sent - sent >= count - 20 }
        }
    }
}
