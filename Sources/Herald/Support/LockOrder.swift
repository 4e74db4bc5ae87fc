/// Where a ``Lock`` stands in Herald's lock order: a thread that holds a lock takes only locks of a
/// later rank (ARCHITECTURE.md, "Lock order"). Debug builds check every acquisition and trap on
/// one out of order (``LockOrder``); release builds store no rank and check nothing.
enum LockRank: UInt8, Sendable {
    case backgroundQueueShared
    case backgroundTask
    case backgroundTaskDependents
    case registry
    case postShard
    case siteTable
    case endedRegistrations
    case mailbox
    case subjectIdentities
    case stream
    case asyncCall
    case mainQueueWaitingPost
    case mainQueueExecutor
    case misuses
    case idleWatch
    case waitGroup
    case waiter
    case thread
    case closureRegistration
    case token
    case errorHandler
    case unobservedHandler
    case queueIdentity
    case mainQueueLane
    case echoLedger
    case echoLedgers
}

#if DEBUG
/// The debug build's check of the lock order: each thread keeps the ranks of the locks it holds,
/// and taking a lock whose rank is not later than the last one held traps, naming both. It costs
/// a thread-local lookup and an array append and removal per lock taken, in debug builds only.
enum LockOrder {
    /// The ranks of the locks a thread holds, innermost last.
    private final class Held: @unchecked Sendable {  // Only its own thread reads or writes it.
        var ranks: [LockRank] = []
    }

    private static let held = ThreadLocalObject { Held() }

    static func willAcquire(_ rank: LockRank) {
        let held = held.current
        if let last = held.ranks.last, last.rawValue >= rank.rawValue {
            preconditionFailure("Herald: lock order: \(rank) taken while holding \(last) (ARCHITECTURE.md, Lock order)")
        }
        held.ranks.append(rank)
    }

    static func didRelease(_ rank: LockRank) {
        held.current.ranks.removeLast()
    }
}
#endif
