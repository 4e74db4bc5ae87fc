/// The retained (sticky) values of one notification type: the latest retained post per subject.
///
/// Lives in the type's ``Bucket`` and is only touched under the hub's registry lock.
///
/// Entries are keyed by the subject's identity, and each entry also holds its subject weakly. A
/// lookup made with a live object only matches an entry whose weak reference still loads to that
/// very object, so the entry of a deallocated subject never matches a new object that happens to
/// reuse its address.
///
/// Nothing here releases a value: every mutation hands what it lets go of back to its caller,
/// which releases it after the registry lock, because a value's `deinit` may use the hub.
struct RetainedValues<N: TypedNotification> {
    struct Entry {
        var value: N
        weak var subject: AnyObject?
        let hasSubject: Bool
        /// When the value was retained, in the type's retention order.
        var sequence: UInt64

        /// Whether the entry still belongs to a live subject (or to no subject).
        var isLive: Bool { !hasSubject || subject != nil }
    }

    /// A retained value handed to a replaying observer.
    struct Replay: Sendable {
        let value: N
        let subjectID: ObjectIdentifier?
        let sequence: UInt64
    }

    private var entries: [ObjectIdentifier?: Entry] = [:]
    /// The sequence number of the latest retaining post of this type; 0 before the first.
    private(set) var lastSequence: UInt64 = 0
    /// Entry count above which a retaining post first sweeps entries of dead subjects.
    private var sweepThreshold = 16

    /// Stores `value` as the latest retained value for `subject`.
    ///
    /// - Returns: The values it let go of (the one replaced, and those of deallocated subjects),
    ///   for the caller to release once the registry lock is no longer held.
    mutating func store(_ value: N, subject: AnyObject?) -> [N] {
        lastSequence &+= 1
        var released: [N] = []
        let old = entries.updateValue(
            Entry(value: value, subject: subject, hasSubject: subject != nil, sequence: lastSequence),
            forKey: subject.map(ObjectIdentifier.init))
        if let old { released.append(old.value) }
        if entries.count > sweepThreshold {
            for (key, entry) in entries where !entry.isLive {
                entries[key] = nil
                released.append(entry.value)
            }
            sweepThreshold = max(16, entries.count * 2)
        }
        return released
    }

    /// The value retained for `subject`, if any. The caller keeps `subject` alive.
    func value(for subject: AnyObject?) -> N? {
        guard let entry = entries[subject.map(ObjectIdentifier.init)] else { return nil }
        // The entry of a dead subject at the same address never matches.
        guard entry.hasSubject == (subject != nil), entry.subject === subject else { return nil }
        return entry.value
    }

    /// Removes the value retained for `subject`.
    ///
    /// - Returns: The value removed, if it belonged to `subject`; and the entry's value in any
    ///   case, for the caller to release once the registry lock is no longer held.
    mutating func remove(for subject: AnyObject?) -> (value: N?, released: N?) {
        let value = value(for: subject)
        let removed = entries.removeValue(forKey: subject.map(ObjectIdentifier.init))
        return (value, removed?.value)
    }

    /// The value retained for `subject` and its sequence number, if any. The caller keeps
    /// `subject` alive.
    ///
    /// The sequence number identifies this very retaining post: a later one for the same subject
    /// stores a greater number, so a caller that compares the value outside the lock can tell,
    /// once it locks again, whether the entry is still the one it compared.
    func entry(for subject: AnyObject?) -> (value: N, sequence: UInt64)? {
        guard let value = value(for: subject), let entry = entries[subject.map(ObjectIdentifier.init)] else {
            return nil
        }
        return (value, entry.sequence)
    }

    /// What ``remove(for:ifSequence:)`` found.
    enum ConditionalRemoval {
        /// The entry was the one numbered `sequence`, and is removed.
        case removed
        /// A later retaining post replaced the entry: compare its value again.
        case replaced
        /// Nothing is retained for the subject any more.
        case absent
    }

    /// Removes the value retained for `subject` if it is still the one retained with `sequence`.
    ///
    /// - Returns: What it found, and the value removed, for the caller to release once the
    ///   registry lock is no longer held.
    mutating func remove(for subject: AnyObject?, ifSequence sequence: UInt64) -> (ConditionalRemoval, N?) {
        guard let current = entry(for: subject) else { return (.absent, nil) }
        guard current.sequence == sequence else { return (.replaced, nil) }
        let removed = entries.removeValue(forKey: subject.map(ObjectIdentifier.init))
        return (.removed, removed?.value)
    }

    /// Removes every retained value.
    ///
    /// - Returns: The number of values that belonged to live subjects (or to no subject), and
    ///   every value, for the caller to release once the registry lock is no longer held.
    mutating func removeAll() -> (count: Int, released: [N]) {
        defer { entries = [:] }
        return (entries.values.count { $0.isLive }, entries.values.map(\.value))
    }

    /// The live entries an observer with `filters` replays, retained after `sequence`, oldest first.
    ///
    /// An observer registered `from:` a subject replays that subject's value. One registered
    /// without a subject receives every post, so it replays the latest value of every subject.
    func replays(matching filters: Filters?, after sequence: UInt64) -> [Replay] {
        guard lastSequence > sequence else { return [] }
        if let filters, filters.hasSubject {
            guard let subject = filters.subject else { return [] }
            let key: ObjectIdentifier? = ObjectIdentifier(subject)
            guard let value = value(for: subject), let entry = entries[key], entry.sequence > sequence else {
                return []
            }
            return [Replay(value: value, subjectID: key, sequence: entry.sequence)]
        }
        var result: [Replay] = []
        for (key, entry) in entries where entry.sequence > sequence && entry.isLive {
            result.append(Replay(value: entry.value, subjectID: key, sequence: entry.sequence))
        }
        result.sort { $0.sequence < $1.sequence }
        return result
    }
}
