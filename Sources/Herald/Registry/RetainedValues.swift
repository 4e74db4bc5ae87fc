/// The retained (sticky) values of one notification type: the latest retained post per subject.
///
/// Lives in the type's ``Bucket``, inside the registry's locked state. The bucket does not spell
/// its type, so the values are kept as `any Sendable`, and whoever reads one casts it back to the
/// type it knows (a cast of identical types, the runtime's fast path). A value too large for an
/// existential's inline buffer is boxed once, when it is retained; what a post lets go of is
/// handed back in that same box.
///
/// Entries are keyed by the subject's identity, and each entry also holds its subject weakly. A
/// lookup made with a live object only matches an entry whose weak reference still loads to that
/// very object, so the entry of a deallocated subject never matches a new object that happens to
/// reuse its address.
///
/// Nothing here releases a value: every mutation hands what it lets go of back to its caller,
/// which releases it after the registry lock, because a value's `deinit` may use the hub.
struct RetainedValues: Sendable {
    struct Entry: @unchecked Sendable {  // `subject` is only compared by identity and tested for nil.
        var value: any Sendable
        weak var subject: AnyObject?
        let hasSubject: Bool
        /// When the value was retained, in the registry's retention order.
        var sequence: UInt64

        /// Whether the entry still belongs to a live subject (or to no subject).
        var isLive: Bool { !hasSubject || subject != nil }
    }

    /// A retained value handed to a replaying observer.
    struct Replay<N: Sendable>: Sendable {
        let value: N
        let subjectID: ObjectIdentifier?
        let sequence: UInt64
    }

    private var entries: [ObjectIdentifier?: Entry] = [:]
    /// The sequence number of the latest retaining post of this type; 0 before the first. The
    /// registry numbers the retaining posts of every type in one sequence (see
    /// ``RegistryState/retainSequence``), so that a family observer replays the values of
    /// its types in the order they were retained.
    private var lastSequence: UInt64 = 0
    /// Entry count above which a retaining post first sweeps entries of dead subjects.
    private var sweepThreshold = 16

    /// Stores `value` as the latest retained value for `subject`, retained by the post numbered
    /// `sequence`.
    ///
    /// - Returns: What it let go of (the value replaced, and those of deallocated subjects), for
    ///   the caller to release once the registry lock is no longer held.
    mutating func store(_ value: any Sendable, subject: AnyObject?, sequence: UInt64) -> (any Sendable)? {
        lastSequence = sequence
        let old = entries.updateValue(
            Entry(value: value, subject: subject, hasSubject: subject != nil, sequence: sequence),
            forKey: subject.map(ObjectIdentifier.init))
        guard entries.count > sweepThreshold else { return old?.value }
        var released: [any Sendable] = old.map { [$0.value] } ?? []
        for (key, entry) in entries where !entry.isLive {
            entries[key] = nil
            released.append(entry.value)
        }
        sweepThreshold = max(16, entries.count * 2)
        return released
    }

    /// The entry of `subject`, if any. The caller keeps `subject` alive.
    ///
    /// Its sequence number identifies this very retaining post: a later one for the same subject
    /// stores a greater number, so a caller that compares the value outside the lock can tell,
    /// once it locks again, whether the entry is still the one it compared.
    func entry(for subject: AnyObject?) -> Entry? {
        // The entry of a dead subject at the same address never matches. (An entry's key is its
        // subject's identity, so the entry of no subject is the one whose key is `nil`.)
        guard let entry = entries[subject.map(ObjectIdentifier.init)], entry.subject === subject else { return nil }
        return entry
    }

    /// Removes the entry of `subject`.
    ///
    /// - Returns: Its value, for the caller to release once the registry lock is no longer held.
    mutating func removeEntry(for subject: AnyObject?) -> (any Sendable)? {
        entries.removeValue(forKey: subject.map(ObjectIdentifier.init))?.value
    }

    /// Removes the value retained for `subject` if it is still the one retained with `sequence`.
    ///
    /// - Returns: The value removed, for the caller to release once the registry lock is no longer
    ///   held; `nil` if a later retaining post replaced it, or nothing is retained for `subject`
    ///   any more.
    mutating func remove(for subject: AnyObject?, ifSequence sequence: UInt64) -> (any Sendable)? {
        guard entry(for: subject)?.sequence == sequence else { return nil }
        return removeEntry(for: subject)
    }

    /// Removes every retained value.
    ///
    /// - Returns: The number of values that belonged to live subjects (or to no subject), and
    ///   every value, for the caller to release once the registry lock is no longer held.
    mutating func removeAll() -> (count: Int, released: [any Sendable]) {
        // Keeps `lastSequence`: the numbers run on, so a removal comparing outside the lock never
        // mistakes a value retained afterwards for the one it compared.
        defer { entries = [:] }
        return (entries.values.count { $0.isLive }, entries.values.map(\.value))
    }

    /// The live entries an observer with `filters` replays, retained after `sequence`, oldest
    /// first, as `transform` makes them of each value and its subject; it leaves out the values it
    /// returns `nil` for.
    ///
    /// An observer registered `from:` a subject replays that subject's value. One registered
    /// without a subject receives every post, so it replays the latest value of every subject.
    func replays<N>(
        matching filters: Filters?, after sequence: UInt64, _ transform: (any Sendable, ObjectIdentifier?) -> N?
    ) -> [Replay<N>] {
        guard lastSequence > sequence else { return [] }
        if let filters, filters.hasSubject {
            guard let subject = filters.subject, let entry = entry(for: subject), entry.sequence > sequence,
                let value = transform(entry.value, ObjectIdentifier(subject))
            else { return [] }
            return [Replay(value: value, subjectID: ObjectIdentifier(subject), sequence: entry.sequence)]
        }
        var result: [Replay<N>] = []
        for (key, entry) in entries where entry.sequence > sequence && entry.isLive {
            guard let value = transform(entry.value, key) else { continue }
            result.append(Replay(value: value, subjectID: key, sequence: entry.sequence))
        }
        return result.sorted { $0.sequence < $1.sequence }
    }
}
