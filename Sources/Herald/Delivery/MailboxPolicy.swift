import Synchronization

/// The buffering policy of one observer's lane, when it is not unbounded, and what it discarded.
///
/// Only lanes with a policy have one, so an unbounded lane pays one pointer for it, and its
/// appends never look at it (see ``Observer``'s `hasPolicy` flag).
///
/// The counts change under the lane's lock, together with the items, and are read without it.
final class MailboxPolicy: Sendable {
    enum Rule: Sendable, Equatable {
        /// Keep the newest pending item, of each subject if `perSubject`.
        case latest(perSubject: Bool)
        /// Keep at most `limit` pending items; a new one pushes out the oldest.
        case dropOldest(limit: Int)
        /// Keep at most `limit` pending items; a new one is dropped while full.
        case dropNewest(limit: Int)
    }

    /// What an append under a mailbox policy left for the caller to finish after unlocking.
    /// (The lane's, not generic: the append under a policy asks the runtime for no metadata.)
    enum Displacement: Equatable {
        /// Nothing was removed.
        case none
        /// A pending item was removed and moved into the caller's slot: destroy it, and tell its
        /// waiting post, if it still has one there, that it was dropped (see ``Lane/finish(_:in:newGroup:)``).
        case removed
        /// The new notification was not stored: tell its waiting post, if any, that it was dropped.
        case rejectedNew
    }

    /// The policy given at registration.
    let policy: NotificationBufferingPolicy
    let rule: Rule
    /// Pending items removed for a newer one by ``Rule/latest(perSubject:)``.
    let replacedCount = Atomic<Int>(0)
    /// Items dropped by a bounded rule: pushed out, or never stored.
    let droppedCount = Atomic<Int>(0)

    /// The policy of a lane, or `nil` for an unbounded one.
    init?(_ policy: NotificationBufferingPolicy) {
        switch policy {
        case .unbounded: return nil
        case .latest(let perSubject): rule = .latest(perSubject: perSubject)
        case .bufferingNewest(let limit): rule = .dropOldest(limit: max(limit, 1))
        case .bufferingOldest(let limit): rule = .dropNewest(limit: max(limit, 1))
        }
        self.policy = policy
    }

    /// Counts one replaced item. Call under the lane's lock.
    func noteReplaced() {
        replacedCount.wrappingAdd(1, ordering: .relaxed)
    }

    /// Counts one dropped item. Call under the lane's lock.
    func noteDropped() {
        droppedCount.wrappingAdd(1, ordering: .relaxed)
    }
}
