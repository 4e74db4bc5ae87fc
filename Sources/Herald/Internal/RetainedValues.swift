/// The retained (sticky) values of one notification type: the latest retained post per subject.
///
/// Lives in the type's ``Bucket`` and is only touched under the hub's registry lock.
///
/// Entries are keyed by the subject's identity, and each entry also holds its subject weakly. A
/// lookup made with a live object only matches an entry whose weak reference still loads to that
/// very object, so the entry of a deallocated subject never matches a new object that happens to
/// reuse its address.
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
    mutating func store(_ value: N, subject: AnyObject?) {
        lastSequence &+= 1
        entries[subject.map(ObjectIdentifier.init)] = Entry(
            value: value, subject: subject, hasSubject: subject != nil, sequence: lastSequence)
        if entries.count > sweepThreshold {
            entries = entries.filter { $0.value.isLive }
            sweepThreshold = max(16, entries.count * 2)
        }
    }

    /// The value retained for `subject`, if any. The caller keeps `subject` alive.
    mutating func value(for subject: AnyObject?) -> N? {
        let key = subject.map(ObjectIdentifier.init)
        guard let entry = entries[key] else { return nil }
        guard entry.hasSubject == (subject != nil), entry.subject === subject else {
            // The entry of a dead subject at the same address: it can never match again.
            entries[key] = nil
            return nil
        }
        return entry.value
    }

    /// Removes the value retained for `subject` and returns it.
    mutating func remove(for subject: AnyObject?) -> N? {
        let value = value(for: subject)
        if value != nil {
            entries[subject.map(ObjectIdentifier.init)] = nil
        }
        return value
    }

    /// Removes every retained value.
    ///
    /// - Returns: The number of values that belonged to live subjects (or to no subject).
    mutating func removeAll() -> Int {
        defer { entries = [:] }
        return entries.values.count { $0.isLive }
    }

    /// The live entries an observer with `filters` replays, retained after `sequence`, oldest first.
    ///
    /// An observer registered `from:` a subject replays that subject's value. One registered
    /// without a subject receives every post, so it replays the latest value of every subject.
    mutating func replays(matching filters: Filters?, after sequence: UInt64) -> [Replay] {
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
