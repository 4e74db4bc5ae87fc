/// The retained (sticky) values of one notification type: the latest retained post per subject.
///
/// Lives in the type's ``Bucket``, inside the registry's locked state.
///
/// Entries are keyed by the subject's identity, and each entry also holds its subject weakly. A
/// lookup made with a live object only matches an entry whose weak reference still loads to that
/// very object, so the entry of a deallocated subject never matches a new object that happens to
/// reuse its address.
///
/// Nothing here releases a value: every mutation hands what it lets go of back to its caller,
/// which releases it after the registry lock, because a value's `deinit` may use the hub.
struct RetainedValues<N: TypedNotification>: Sendable {
    struct Entry: @unchecked Sendable {  // `subject` is only compared by identity and tested for nil.
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
    /// The sequence number of the latest retaining post of this type; 0 before the first. The
    /// registry numbers the retaining posts of every type in one sequence (see
    /// ``RegistryState/nextRetainSequence()``), so that a family observer replays the values of
    /// its types in the order they were retained.
    private(set) var lastSequence: UInt64 = 0
    /// Entry count above which a retaining post first sweeps entries of dead subjects.
    private var sweepThreshold = 16

    /// Stores `value` as the latest retained value for `subject`, retained by the post numbered
    /// `sequence`.
    ///
    /// - Returns: What it let go of (the value replaced, and those of deallocated subjects), for
    ///   the caller to release once the registry lock is no longer held.
    mutating func store(_ value: N, subject: AnyObject?, sequence: UInt64) -> (any Sendable)? {
        lastSequence = sequence
        let old = entries.updateValue(
            Entry(value: value, subject: subject, hasSubject: subject != nil, sequence: lastSequence),
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

    /// The value retained for `subject`, if any. The caller keeps `subject` alive.
    func value(for subject: AnyObject?) -> N? {
        guard let entry = entries[subject.map(ObjectIdentifier.init)] else { return nil }
        // The entry of a dead subject at the same address never matches.
        guard entry.hasSubject == (subject != nil), entry.subject === subject else { return nil }
        return entry.value
    }

    /// Removes the entry of `subject`.
    ///
    /// - Returns: Its value, for the caller to release once the registry lock is no longer held.
    mutating func removeEntry(for subject: AnyObject?) -> (any Sendable)? {
        entries.removeValue(forKey: subject.map(ObjectIdentifier.init))?.value
    }

    /// The sequence number of the value retained for `subject`, if any (see ``value(for:)``).
    ///
    /// The sequence number identifies this very retaining post: a later one for the same subject
    /// stores a greater number, so a caller that compares the value outside the lock can tell,
    /// once it locks again, whether the entry is still the one it compared.
    func sequence(for subject: AnyObject?) -> UInt64? {
        guard value(for: subject) != nil else { return nil }
        return entries[subject.map(ObjectIdentifier.init)]?.sequence
    }

    /// Removes the value retained for `subject` if it is still the one retained with `sequence`.
    ///
    /// - Returns: What it found, and the value removed, for the caller to release once the
    ///   registry lock is no longer held.
    mutating func remove(for subject: AnyObject?, ifSequence sequence: UInt64) -> (RetainedRemoval, (any Sendable)?) {
        guard let current = self.sequence(for: subject) else { return (.absent, nil) }
        guard current == sequence else { return (.replaced, nil) }
        return (.removed, removeEntry(for: subject))
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

/// What ``RetainedValues/remove(for:ifSequence:)`` found.
enum RetainedRemoval {
    /// The entry was the one numbered `sequence`, and is removed.
    case removed
    /// A later retaining post replaced the entry: compare its value again.
    case replaced
    /// Nothing is retained for the subject any more.
    case absent
}

/// The retained values of one notification type, whose type the registry's non-generic
/// ``Bucket`` does not spell: a ``RetainedValues``. A bucket keyed by `N` holds the values of `N`,
/// so the `M` of each generic requirement is the storage's `N`; the values cross that boundary
/// with a cast of identical types (the runtime's fast path), never of a container.
protocol RetainedStorage: Sendable {
    /// The sequence number of the latest retaining post of this type; 0 before the first.
    var lastSequence: UInt64 { get }
    /// See ``RetainedValues/store(_:subject:sequence:)``; nothing is stored if `M` is not the type.
    mutating func store<M: TypedNotification>(_ value: M, subject: AnyObject?, sequence: UInt64) -> (any Sendable)?
    /// See ``RetainedValues/value(for:)``.
    func value<M: TypedNotification>(of type: M.Type, for subject: AnyObject?) -> M?
    /// See ``RetainedValues/sequence(for:)``.
    func sequence(for subject: AnyObject?) -> UInt64?
    /// See ``RetainedValues/removeEntry(for:)``.
    mutating func removeEntry(for subject: AnyObject?) -> (any Sendable)?
    /// See ``RetainedValues/remove(for:ifSequence:)``.
    mutating func remove(for subject: AnyObject?, ifSequence sequence: UInt64) -> (RetainedRemoval, (any Sendable)?)
    /// See ``RetainedValues/replays(matching:after:)``.
    func replays<M: TypedNotification>(
        of type: M.Type, matching filters: Filters?, after sequence: UInt64
    ) -> [RetainedValues<M>.Replay]
    /// The values a replaying observer of the family `Family` receives: those of ``replays(of:matching:after:)``
    /// that are of the family, as its deliveries.
    func replays<Family: Sendable>(
        every family: Family.Type, matching filters: Filters?, after sequence: UInt64
    ) -> [RetainedValues<FamilyDelivery<Family>>.Replay]
    /// See ``RetainedValues/removeAll()``.
    mutating func removeAllValues() -> (count: Int, released: (any Sendable)?)
}

extension RetainedValues: RetainedStorage {
    mutating func store<M: TypedNotification>(_ value: M, subject: AnyObject?, sequence: UInt64) -> (any Sendable)? {
        guard let value = value as? N else { return nil }
        return store(value, subject: subject, sequence: sequence)
    }

    func replays<Family: Sendable>(
        every family: Family.Type, matching filters: Filters?, after sequence: UInt64
    ) -> [RetainedValues<FamilyDelivery<Family>>.Replay] {
        replays(matching: filters, after: sequence).compactMap { replay in
            (replay.value as? Family).map {
                let delivery = FamilyDelivery(value: $0, type: N.self, subjectID: replay.subjectID)
                return .init(value: delivery, subjectID: replay.subjectID, sequence: replay.sequence)
            }
        }
    }

    func value<M: TypedNotification>(of type: M.Type, for subject: AnyObject?) -> M? {
        guard let value = value(for: subject) else { return nil }
        return value as? M
    }

    func replays<M: TypedNotification>(
        of type: M.Type, matching filters: Filters?, after sequence: UInt64
    ) -> [RetainedValues<M>.Replay] {
        replays(matching: filters, after: sequence).compactMap { replay in
            (replay.value as? M).map {
                RetainedValues<M>.Replay(value: $0, subjectID: replay.subjectID, sequence: replay.sequence)
            }
        }
    }

    mutating func removeAllValues() -> (count: Int, released: (any Sendable)?) {
        let (count, values) = removeAll()
        return (count, values)
    }
}
