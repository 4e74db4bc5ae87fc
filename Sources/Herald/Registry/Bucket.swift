/// The registrations of one notification type, and its retained values: a value inside the
/// registry's ``RegistryState``, so it is reachable only through the `inout` that the registry's
/// lock hands out, and the compiler checks every access.
///
/// A registration or cancellation changes a list in O(1) (amortised) and drops the published
/// snapshot; the next post, or the next reader that needs one, builds a new snapshot from the
/// lists. So *n* registrations in a row cost O(*n*), not O(*n*²), and churn that no post sees
/// allocates no snapshot at all.
///
/// Nothing here releases what it lets go of: every mutation hands it back, for the registry to
/// release after its lock.
struct Bucket: Sendable {
    /// The bucket's notification type: decides family membership and makes family members.
    let type: any TypedNotification.Type
    /// Observers with a mailbox or a stream, in registration order.
    private var queued = ObserverList()
    /// Posting-thread observers, in registration order.
    private var posting = ObserverList()
    /// The snapshot of the current lists, once something asked for it; `nil` after a change.
    private var published: ObserverSnapshot?
    /// Whether a post shard holds `published` itself (the other shards hold copies).
    private var publishedInShard = false
    /// The number of observers with a priority other than 0; while it is 0, the lists are
    /// already in the order posts call them.
    private var prioritizedCount = 0
    /// The members (``Member``) of the family observers whose family this type belongs to.
    private(set) var members: [AnyObserver] = []
    /// The registry's family generation that `members` reflects (see
    /// ``updateMembers(families:generation:sample:joined:)``).
    private(set) var membersGeneration: UInt64 = 0
    /// Whether this type belongs to a family, per family type: decided once, from the first
    /// notification of this type posted after the family's first observer was registered.
    private var memberships: [ObjectIdentifier: Bool] = [:]
    /// The retained (sticky) values of this type, per subject. They outlive the observers.
    var retainedValues = RetainedValues()

    init(type: any TypedNotification.Type) {
        self.type = type
    }

    /// Adds `observer`, whose registration number is `sequence`, at the end of its list, which
    /// takes over the reference (see ``ObserverList/append(_:sequence:)``).
    ///
    /// - Returns: The snapshot it outdates, to release once the lock is no longer held.
    mutating func add(_ observer: Unmanaged<AnyObserver>, sequence: UInt64) -> ObserverSnapshot? {
        if observer._withUnsafeGuaranteedRef({ $0.priority }) != 0 { prioritizedCount += 1 }
        if observer._withUnsafeGuaranteedRef({ $0.isPosting }) {
            posting.append(observer, sequence: sequence)
        } else {
            queued.append(observer, sequence: sequence)
        }
        return unpublish()
    }

    /// Adds `member`, the member of an observer of a family of this type alone (see
    /// ``AnyFamily/onlyType``), as its registration is made: such an observer counts among this
    /// type's observers at once, where other family observers join at the type's next post.
    ///
    /// - Returns: The snapshot it outdates, to release once the lock is no longer held.
    mutating func join(_ member: AnyObserver) -> ObserverSnapshot? {
        members.append(member)
        return unpublish()
    }

    /// Takes `observer` out of its list.
    ///
    /// The observer (and whatever its handler captures) may be released with what this returns,
    /// so the caller releases that after the lock, never under it.
    ///
    /// - Returns: The removed observer and the snapshot it outdates, or `nil` if the observer was
    ///   not registered.
    /// - Complexity: O(1), amortised.
    mutating func remove(_ observer: AnyObserver) -> (AnyObserver, ObserverSnapshot?)? {
        guard let removed = observer.isPosting ? posting.remove(observer) : queued.remove(observer) else { return nil }
        if removed.priority != 0 { prioritizedCount -= 1 }
        return (removed, unpublish())
    }

    /// Drops the published snapshot, which a change outdated.
    ///
    /// - Returns: It, to release once the lock is no longer held.
    private mutating func unpublish() -> ObserverSnapshot? {
        publishedInShard = false
        return published.take()
    }

    /// The snapshot of the current observers, built if a change outdated the last one; `nil` if
    /// there are none.
    mutating func snapshot() -> ObserverSnapshot? {
        if published == nil { published = source()?.build() }
        return published
    }

    /// What a snapshot of the current observers is built from, copied out so that it can be
    /// built after the lock; `nil` if there are none.
    func source() -> SnapshotSource? {
        guard queued.count > 0 || posting.count > 0 || !members.isEmpty else { return nil }
        return SnapshotSource(queued: queued, posting: posting, members: members, prioritized: prioritizedCount != 0)
    }

    /// What a post shard caches: the published snapshot for the first shard that asks, if one
    /// was built; otherwise the source for the shard to build a snapshot of its own from, after
    /// the lock, so that threads posting through different shards do not share a reference count
    /// and a registration does not wait while a poster builds one.
    mutating func snapshotForShard() -> (snapshot: ObserverSnapshot?, source: SnapshotSource?) {
        if let published, !publishedInShard {
            publishedInShard = true
            return (published, nil)
        }
        return (nil, source())
    }

    // MARK: Families

    /// Brings ``members`` up to date with the registry's family observers: drops the members of
    /// observers that are gone and adds one for each new family observer whose family this type
    /// belongs to. A family this type was never checked against is decided from `sample`, a
    /// notification of this type (whose address may be 0 for a type without stored properties).
    ///
    /// The registry calls it only when ``membersGeneration`` is not the family generation
    /// `generation`, which it then becomes.
    ///
    /// - Parameter joined: Receives the family observers that this type now has a member of.
    /// - Returns: The members and the snapshot it let go of, to release after the lock.
    mutating func updateMembers(
        families: ObserverList, generation: UInt64, sample: UnsafeRawPointer, joined: inout [AnyObserver]
    ) -> [any Sendable] {
        let type = self.type  // a local: a call opens its existential, not a stored property's
        let live = Set(families.observers.map(ObjectIdentifier.init))
        func isLive(_ member: AnyObserver) -> Bool {
            member.familyObserver.map { live.contains(ObjectIdentifier($0)) } ?? false
        }
        var kept = members.filter(isLive)
        var released: [any Sendable] = members.filter { !isLive($0) }
        let present = Set(kept.compactMap { $0.familyObserver.map(ObjectIdentifier.init) })
        for (observer, sequence) in families.entries where !present.contains(ObjectIdentifier(observer)) {
            guard let family = observer.family, belongs(to: family, sample: sample) else { continue }
            kept.append(family.member(of: type, for: observer, sequence: sequence))
            joined.append(observer)
        }
        membersGeneration = generation
        if kept.count != members.count || !released.isEmpty {
            members = kept
            if let snapshot = unpublish() { released.append(snapshot) }
        }
        return released
    }

    /// Whether this type belongs to `family`: decided from `sample`, a notification of this type,
    /// the first time it is asked, and kept.
    private mutating func belongs(to family: AnyFamily, sample: UnsafeRawPointer) -> Bool {
        if family.isTap { return true }
        if let known = memberships[family.key] { return known }
        let type = self.type
        let belongs = family.contains(sample, of: type)
        memberships[family.key] = belongs
        return belongs
    }

    /// Drops the member of `observer`, a family observer whose registration ended.
    ///
    /// - Returns: What it let go of, to release after the lock; empty if this type had none.
    mutating func dropMembers(of observer: AnyObserver) -> [any Sendable] {
        guard let index = members.firstIndex(where: { $0.familyObserver === observer }) else { return [] }
        var released: [any Sendable] = [members.remove(at: index)]
        if let snapshot = unpublish() { released.append(snapshot) }
        return released
    }
}

/// Observers in registration order, with O(1) removal: a removed observer leaves a hole, and the
/// holes are squeezed out once they outnumber the observers. Each observer knows its slot.
///
/// Beside each slot it keeps the registration's number in the hub's registration order (see
/// `SortKey`), which places a type's observers among family observers. Only
/// registrations made once the hub has had a family observer need one: every earlier registration
/// comes before every family observer, so it counts as number 0, and list order orders those
/// among themselves. So a hub without family observers stores no numbers at all, and an observer
/// keeps the allocator's 64-byte chunks.
struct ObserverList: Sendable {
    private var slots: ContiguousArray<AnyObserver?> = []
    /// The registration number of the observer in the same slot; empty while every number is 0.
    private var sequences: ContiguousArray<UInt64> = []
    /// The number of observers (slots that are not holes).
    private(set) var count = 0

    /// The observers, in registration order.
    var observers: some Collection<AnyObserver> { slots.lazy.compactMap { $0 } }

    /// The observers with their registration numbers, in registration order.
    var entries: [(AnyObserver, UInt64)] {
        slots.indices.compactMap { index in
            slots[index].map { ($0, sequences.isEmpty ? 0 : sequences[index]) }
        }
    }

    /// Appends `observer`, whose registration number is `sequence` (0 if it comes before every
    /// family observer).
    ///
    /// The list takes over the retained reference it is given, rather than retaining one it
    /// borrows: a registration made in the registry's critical section then costs one retain (for
    /// its token), where the optimizer made it a retain and a release more (see
    /// ``Registry/addPosting(at:handler:)``).
    mutating func append(_ observer: Unmanaged<AnyObserver>, sequence: UInt64) {
        if slots.count == slots.capacity && slots.count > count { compact() }
        if sequence != 0 && sequences.isEmpty {
            sequences = ContiguousArray(repeating: 0, count: slots.count)
        }
        observer._withUnsafeGuaranteedRef { $0.registrySlot = slots.count }
        slots.append(observer.takeRetainedValue())
        if !sequences.isEmpty { sequences.append(sequence) }
        count += 1
    }

    /// Takes `observer` out, if it is in the list.
    ///
    /// - Returns: The list's reference to it, to release after the registry lock.
    mutating func remove(_ observer: AnyObserver) -> AnyObserver? {
        let index = observer.registrySlot
        guard index >= 0, index < slots.count, slots[index] === observer else { return nil }
        observer.leaveRegistrySlot()
        if index == slots.count - 1 {
            // The latest registration, the usual one to cancel first: no hole.
            count -= 1
            let removed = slots.removeLast()
            while let last = slots.last, last == nil { slots.removeLast() }
            if !sequences.isEmpty { sequences.removeLast(sequences.count - slots.count) }
            return removed
        }
        defer {
            count -= 1
            if count == 0 {
                slots.removeAll(keepingCapacity: slots.capacity <= 16)
                sequences.removeAll(keepingCapacity: sequences.capacity <= 16)
            } else if slots.count - count > count {
                compact()
            }
        }
        return slots[index].take()
    }

    /// Moves the observers to the front, in order, and drops the holes.
    private mutating func compact() {
        var next = 0
        for index in slots.indices {
            guard let observer = slots[index].take() else { continue }
            observer.registrySlot = next
            slots[next] = observer
            if !sequences.isEmpty { sequences[next] = sequences[index] }
            next += 1
        }
        slots.removeLast(slots.count - next)
        if !sequences.isEmpty { sequences.removeLast(sequences.count - next) }
    }
}

/// The observer lists of one type as of one moment: what ``ObserverSnapshot`` is built from.
/// Copying it out of a bucket costs a few reference counts (the lists are copy-on-write), so a
/// post shard can build its snapshot after the registry lock.
struct SnapshotSource: Sendable {
    let queued: ObserverList
    let posting: ObserverList
    let members: [AnyObserver]
    /// Whether an observer has a priority other than 0.
    let prioritized: Bool

    /// A snapshot of the observers, in the order posts promise.
    func build() -> ObserverSnapshot {
        if members.isEmpty && !prioritized {
            return ObserverSnapshot(queued: queued.observers, posting: posting.observers)
        }
        // Family observers and priorities: merge into the order posts promise.
        // Registrations numbered 0 keep list order: each entry's index in its own list breaks ties
        // (the queued and posting observers are separated again below).
        func keyed(_ entries: [(AnyObserver, UInt64)]) -> [(AnyObserver, SortKey)] {
            entries.enumerated().map { index, entry in
                (entry.0, SortKey(priority: entry.0.priority, sequence: entry.1, index: index))
            }
        }
        var all = keyed(queued.entries) + keyed(posting.entries) + keyed(members.map { ($0, $0.memberSequence) })
        all.sort { $0.1 < $1.1 }
        return ObserverSnapshot(
            queued: all.lazy.map(\.0).filter { !$0.isPosting }, posting: all.lazy.map(\.0).filter(\.isPosting))
    }
}

/// Where an observer comes among the observers of a post: higher priorities first, then in
/// registration order (the sequence number its registration got under the registry lock,
/// kept in its bucket's list: see ``ObserverList``).
private struct SortKey: Comparable {
    let priority: Int
    let sequence: UInt64
    /// The position in its list, for registrations with the same number (0).
    let index: Int

    static func < (lhs: SortKey, rhs: SortKey) -> Bool {
        // Priority descending (so `rhs` gives the first of each pair), then sequence, then index.
        (rhs.priority, lhs.sequence, lhs.index) < (lhs.priority, rhs.sequence, rhs.index)
    }
}
