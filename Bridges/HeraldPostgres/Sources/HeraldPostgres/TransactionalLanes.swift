import Foundation
import Herald
import Logging
import PostgresNIO
import Synchronization

/// The senders under which a durable link's transactional posts (``PostgresLink/post(_:in:)``)
/// send their plain copies, while ``PostgresLink/Durability/Phase/sendsPlainCopies``.
///
/// A plain receiver checks each sender's sequence numbers: with a signing key it refuses a number
/// at or below the last one it accepted, as a replay. Transactions commit in any order, and a
/// rolled-back one leaves its number unsent, so a copy numbered among the link's ordinary posts
/// could arrive after a higher number (and be refused) or leave a gap. So each copy goes out under
/// a *lane*: an origin and incarnation of its own, numbered 1, 2, 3…, used by one transaction at
/// a time. A lane is taken again only once the transaction that used it last has ended, as
/// PostgreSQL says (`pg_xact_status`): after a commit its next number follows; after a rollback its
/// numbers, never sent, are used again. So a receiver hears each lane's numbers in order and
/// without gaps, and keeps one sequence space per lane: a link has about as many lanes as it has
/// transactions open at once. (A post in a savepoint rolled back leaves a gap, reported and
/// harmless.)
///
/// A pure state machine: ``LinkCore`` keeps one under its lock and asks the database about the
/// transactions that it names (``transactions``) before each ``claim(in:statuses:newLane:)``.
struct TransactionalLanes {
    /// What PostgreSQL says of a transaction.
    enum Status: Equatable {
        case inProgress, committed, aborted
    }

    struct Lane: Equatable {
        let origin: UUID
        let incarnation: Incarnation
        /// The transaction that used the lane last; `nil` for a new lane.
        var transaction: UInt64?
        /// The last number taken.
        var used: UInt64 = 0
        /// The last number known to be sent (its transaction committed).
        var sent: UInt64 = 0
        /// A post of its transaction is being appended now.
        var isBusy = false
    }

    /// A number taken on a lane, for one plain copy.
    struct Claim: Equatable {
        let lane: Int
        let origin: UUID
        let incarnation: Incarnation
        let sequence: UInt64
    }

    private(set) var lanes: [Lane] = []

    /// The transactions whose status says which lanes are free: those of the lanes not in use.
    var transactions: [UInt64] {
        Array(Set(lanes.compactMap { $0.isBusy ? nil : $0.transaction })).sorted()
    }

    /// Takes the next number for a copy of `transaction`: on the lane it used already, or on a lane
    /// whose last transaction has ended (by `statuses`, asked after ``transactions``), or on a new
    /// lane from `newLane`.
    mutating func claim(
        in transaction: UInt64, statuses: [UInt64: Status], newLane: () -> (UUID, Incarnation)
    ) -> Claim {
        if let index = lanes.indices.first(where: { !lanes[$0].isBusy && lanes[$0].transaction == transaction }) {
            return take(index, in: transaction)
        }
        for index in lanes.indices where !lanes[index].isBusy {
            if let last = lanes[index].transaction {
                switch statuses[last] {
                case .committed: lanes[index].sent = lanes[index].used
                case .aborted: lanes[index].used = lanes[index].sent
                case .inProgress, nil: continue  // in use, or taken since the question
                }
            }
            return take(index, in: transaction)
        }
        let (origin, incarnation) = newLane()
        lanes.append(Lane(origin: origin, incarnation: incarnation))
        return take(lanes.count - 1, in: transaction)
    }

    private mutating func take(_ index: Int, in transaction: UInt64) -> Claim {
        lanes[index].isBusy = true
        lanes[index].transaction = transaction
        lanes[index].used += 1
        return Claim(
            lane: index, origin: lanes[index].origin, incarnation: lanes[index].incarnation,
            sequence: lanes[index].used)
    }

    /// The statement that appends the copy of `claim` completed (`isAppended`) or failed: a failed
    /// statement sends nothing, and its number is used again.
    mutating func release(_ claim: Claim, isAppended: Bool) {
        guard lanes.indices.contains(claim.lane) else { return }
        lanes[claim.lane].isBusy = false
        if !isAppended, lanes[claim.lane].used == claim.sequence { lanes[claim.lane].used -= 1 }
    }
}

/// A transactional post's plain copy: its lane taken and given back, on the caller's connection.
extension LinkCore {
    /// Takes a lane for the plain copy of a transactional post, on the caller's `connection` (inside
    /// its transaction), and writes the copy and the row's envelope under it: the row keeps the
    /// link's origin, and names the lane's incarnation and number, so that it names a post that no
    /// other row names and takes none of the numbers of the link's ordinary posts.
    ///
    /// - Returns: The claim (release it once the statement has run), the row's envelope and the
    ///   copy, both signed when the link has a key.
    /// - Throws: ``PostgresLinkError/Code/payloadTooLarge`` if the copy is over the `NOTIFY` limit
    ///   (the lane is released), or the connection's error.
    func claimPlainCopy(
        type: String, typeJSON: String, payloadJSON: String, on connection: PostgresConnection
    ) async throws -> (claim: TransactionalLanes.Claim, row: String, copy: String) {
        let transactions = state.withLock { $0.lanes.transactions }
        // Transaction ids this server has not handed out (after a failover) are taken as committed:
        // a number is then skipped (a reported gap), never used twice.
        let rows = try await connection.query(
            """
            SELECT pg_current_xact_id()::text::int8, ARRAY(SELECT CASE WHEN t::text::xid8 < \
            pg_snapshot_xmax(pg_current_snapshot()) THEN coalesce(pg_xact_status(t::text::xid8), 'committed') \
            ELSE 'committed' END FROM unnest(\(transactions.map { Int64(clamping: $0) })::int8[]) \
            WITH ORDINALITY AS u(t, o) ORDER BY o)
            """, logger: connectionLogger)
        var current: Int64 = 0
        var answers: [String] = []
        for try await (transaction, statuses) in rows.decode((Int64, [String]).self) {
            current = transaction
            answers = statuses
        }
        var statuses: [UInt64: TransactionalLanes.Status] = [:]
        for (transaction, answer) in zip(transactions, answers) {
            statuses[transaction] =
                switch answer {
                case "in progress": .inProgress
                case "aborted": .aborted
                default: .committed
                }
        }
        let started = writer.incarnation.started
        let claim = state.withLock { state in
            state.lanes.claim(in: UInt64(max(current, 0)), statuses: statuses) {
                (UUID(), Incarnation(id: UInt64.random(in: 0 ... .max), started: started))
            }
        }
        let item = Envelope.Item(typeName: type, typeJSON: typeJSON, payloadJSON: payloadJSON, sequence: claim.sequence)
        let issued = serverNow()
        let rowText = Envelope.Writer(
            origin: origin.uuidString, incarnation: claim.incarnation, writesLegacyEnvelopes: false
        ).text(CollectionOfOne(item))
        let copyText = Envelope.Writer(
            origin: claim.origin.uuidString, incarnation: claim.incarnation, writesLegacyEnvelopes: false
        ).text(CollectionOfOne(item), horizon: horizon.load(ordering: .relaxed))
        let copy = signer?.sign(copyText, issued: issued) ?? copyText
        guard copy.utf8.count <= PostgresLink.maximumPayloadBytes else {
            state.withLock { state in
                state.lanes.release(claim, isAppended: false)
                state.statistics.oversize += 1
            }
            throw PostgresLinkError.payloadTooLarge(
                type: type, size: copy.utf8.count, limit: PostgresLink.maximumPayloadBytes)
        }
        return (claim, signer?.sign(rowText, issued: issued) ?? rowText, copy)
    }

    /// The statement that appended the copy of `claim` completed or failed.
    func releasePlainCopy(_ claim: TransactionalLanes.Claim, isAppended: Bool) {
        state.withLock { $0.lanes.release(claim, isAppended: isAppended) }
    }
}
