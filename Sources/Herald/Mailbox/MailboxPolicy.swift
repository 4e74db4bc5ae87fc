import Synchronization

/// The buffering policy of one observer's mailbox, when it is not unbounded, and what it discarded.
///
/// Only mailboxes with a policy have one, so an unbounded mailbox pays one pointer for it, and its
/// appends never look at it (see ``Observer``'s `hasPolicy` flag).
///
/// The counts change under the mailbox's lock, together with the items, and are read without it.
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
    /// (The mailbox's, not generic: the append under a policy asks the runtime for no metadata.)
    enum Displacement: Equatable {
        /// Nothing was removed.
        case none
        /// A pending item was removed and moved into the caller's slot: destroy it, and tell its
        /// waiting post, if it still has one there, that it was dropped (see ``ItemQueue/Layout/destroy(_:as:leaving:)``).
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
    /// For ``Rule/latest(perSubject:)`` with `perSubject`: which live object each subject identity
    /// in the mailbox stands for.
    let subjects = SubjectIdentities()

    /// The policy of a mailbox, or `nil` for an unbounded one.
    init?(_ policy: NotificationBufferingPolicy) {
        switch policy {
        case .unbounded: return nil
        case .latest(let perSubject): rule = .latest(perSubject: perSubject)
        case .bufferingNewest(let limit): rule = .dropOldest(limit: max(limit, 0))
        case .bufferingOldest(let limit): rule = .dropNewest(limit: max(limit, 0))
        }
        self.policy = policy
    }
}

/// The live object behind each subject identity of a `.latest(perSubject: true)` mailbox, so that a
/// pending value is replaced only by a post of the same object: a new object allocated at a
/// deallocated one's address has the same `ObjectIdentifier` but is another subject.
///
/// Called under the mailbox's lock only; its own lock makes it `Sendable`. Entries are weak, and
/// those of deallocated subjects are pruned once the table has doubled since the last pruning, so
/// churning short-lived subjects keeps it small.
final class SubjectIdentities: Sendable {
    /// A weak reference that Herald only compares by identity and never calls into, so holding it
    /// shares no state between threads; the runtime makes loading a weak reference thread-safe.
    private struct Entry: @unchecked Sendable {
        weak var subject: AnyObject?
    }

    private struct Table: Sendable {
        var entries: [ObjectIdentifier: Entry] = [:]
        var pruneAt = 64
    }

    private let table = Lock(Table(), rank: .subjectIdentities)

    /// Whether the newest pending item with identity `id` was posted by `subject` itself, which
    /// the caller keeps alive; `subject` is then remembered as the poster of the newest item of
    /// that identity. `true` without a subject, or when only the identity is known (a replayed
    /// value), which is not remembered.
    func claim(_ id: ObjectIdentifier?, _ subject: AnyObject?) -> Bool {
        guard let id, let subject else { return true }
        return table.withLock { table in
            let isSame = table.entries[id]?.subject === subject
            table.entries[id] = Entry(subject: subject)
            if table.entries.count > table.pruneAt {
                table.entries = table.entries.filter { $0.value.subject != nil }
                table.pruneAt = Swift.max(64, table.entries.count * 2)
            }
            return isSame
        }
    }

    /// The number of identities it remembers, for tests.
    var count: Int { table.withLock { $0.entries.count } }
}
