import Foundation
import Testing

@testable import HeraldPostgres

/// The lanes of transactional posts' plain copies, without a server: transactions are numbers,
/// and their statuses are given as PostgreSQL would answer.
@Suite("TransactionalLanes")
struct TransactionalLanesTests {
    private func newLane() -> (UUID, Incarnation) {
        (UUID(), Incarnation(id: .random(in: 0 ... .max), started: 1))
    }

    @Test func theCopiesOfOneTransactionFollowOnOneLane() {
        var lanes = TransactionalLanes()
        let first = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        lanes.release(first, isAppended: true)
        let second = lanes.claim(in: 10, statuses: [10: .inProgress], newLane: newLane)
        #expect(first.sequence == 1 && second.sequence == 2)
        #expect(first.lane == second.lane && first.origin == second.origin)
    }

    @Test func aLaneWhoseTransactionIsOpenIsNotTakenByAnother() {
        var lanes = TransactionalLanes()
        let open = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        lanes.release(open, isAppended: true)
        #expect(lanes.transactions == [10])
        let other = lanes.claim(in: 11, statuses: [10: .inProgress], newLane: newLane)
        #expect(other.lane != open.lane && other.origin != open.origin && other.sequence == 1)
    }

    @Test func afterACommitTheLanesNextNumberFollows() {
        var lanes = TransactionalLanes()
        let committed = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        lanes.release(committed, isAppended: true)
        let next = lanes.claim(in: 12, statuses: [10: .committed], newLane: newLane)
        #expect(next.lane == committed.lane && next.sequence == 2)
    }

    @Test func afterARollbackTheLanesNumbersAreUsedAgain() {
        var lanes = TransactionalLanes()
        let committed = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        lanes.release(committed, isAppended: true)
        let rolledBack = lanes.claim(in: 11, statuses: [10: .committed], newLane: newLane)
        lanes.release(rolledBack, isAppended: true)
        let alsoRolledBack = lanes.claim(in: 11, statuses: [11: .inProgress], newLane: newLane)
        lanes.release(alsoRolledBack, isAppended: true)
        #expect([rolledBack.sequence, alsoRolledBack.sequence] == [2, 3])
        // Transaction 11 rolled back: 2 and 3 were never sent.
        let next = lanes.claim(in: 12, statuses: [11: .aborted], newLane: newLane)
        #expect(next.lane == committed.lane && next.sequence == 2)
    }

    @Test func aFailedStatementGivesItsNumberBack() {
        var lanes = TransactionalLanes()
        let failed = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        lanes.release(failed, isAppended: false)
        let again = lanes.claim(in: 10, statuses: [10: .inProgress], newLane: newLane)
        #expect(again.lane == failed.lane && again.sequence == 1)
    }

    /// Two posts of one transaction at once (on one connection): the second takes another lane,
    /// since the order of their statements is not known when they take their numbers.
    @Test func aLaneInUseIsNeverTaken() {
        var lanes = TransactionalLanes()
        let first = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        #expect(lanes.transactions.isEmpty)
        let second = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        #expect(first.lane != second.lane && second.sequence == 1)
        lanes.release(first, isAppended: true)
        lanes.release(second, isAppended: true)
        #expect(lanes.transactions == [10])
    }

    /// A lane whose transaction changed since the statuses were asked is left alone.
    @Test func aLaneTakenSinceTheQuestionIsLeftAlone() {
        var lanes = TransactionalLanes()
        let taken = lanes.claim(in: 10, statuses: [:], newLane: newLane)
        lanes.release(taken, isAppended: true)
        // Asked about transaction 9, which no lane names any more.
        let other = lanes.claim(in: 11, statuses: [9: .committed], newLane: newLane)
        #expect(other.lane != taken.lane)
    }
}

/// The horizon that a durable link's plain copies carry, last, and what readers make of it.
@Suite("Plain copies' horizon")
struct PlainCopyHorizonTests {
    private let origin = UUID()
    private let incarnation = Incarnation(id: 0x0123_4567_89ab_cdef, started: 1_764_000_000_000)

    private var writer: Envelope.Writer {
        Envelope.Writer(origin: origin.uuidString, incarnation: incarnation, writesLegacyEnvelopes: false)
    }

    private let items = [
        Envelope.Item(typeName: "UserCreated", typeJSON: #""UserCreated""#, payloadJSON: #"{"userID":7}"#, sequence: 4),
        Envelope.Item(typeName: "UserCreated", typeJSON: #""UserCreated""#, payloadJSON: #"{"userID":8}"#, sequence: 5),
    ]

    @Test func aCopyEndsWithItsHorizonAndReadsAsTheEnvelopeWithout() throws {
        let copy = writer.text(items, horizon: 1_234_567)
        #expect(copy.hasSuffix(#"}],"horizon":1234567}"#))
        let found = try #require(Envelope.horizon(in: Array(copy.utf8)))
        #expect(found.horizon == 1_234_567)
        #expect(String(decoding: found.envelope, as: UTF8.self) == writer.text(items))
        #expect(copy.utf8.count - writer.text(items).utf8.count <= Envelope.horizonBound)
        #expect(Envelope.horizon(in: Array(writer.text(items).utf8)) == nil)
    }

    @Test func onlyTheLayoutThatLinksWriteIsTakenForAHorizon() {
        for text in [
            #"{"version":3,"horizon":}"#, #"{"horizon":12}"#, #"{"version":3,"horizon":"12"}"#, "12}", "}",
            #"{"version":3,"horizon":99999999999999999999}"#,
        ] {
            #expect(Envelope.horizon(in: Array(text.utf8)) == nil, "\(text)")
        }
    }

    /// Earlier releases read a copy with the full parse, which passes over the field they do not
    /// know: so plain links of the release before the switch receive write-only links' posts.
    @Test func aReaderThatDoesNotKnowTheHorizonReadsTheCopyAllTheSame() throws {
        let copy = Array(writer.text(items, horizon: 42).utf8)
        #expect(Envelope.quickLook(copy, own: Array(UUID().uuidString.utf8)) == .other)
        let decoder = JSONDecoder()
        decoder.userInfo[Envelope.Context.key] = Envelope.Context(origin: UUID()) { _ in nil }
        let incoming = try decoder.decode(Envelope.Incoming.self, from: Data(copy))
        #expect(incoming.origin == origin && incoming.incarnation == incarnation)
        #expect(incoming.sequence == 4 && incoming.count == 2 && incoming.items.map(\.typeName).count == 2)
    }
}
