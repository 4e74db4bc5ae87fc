/// What the registry's lock guards: every type's ``Bucket`` (its observers and retained values),
/// the family observers, and the generations that order changes. A value: the only way to reach
/// it is the `inout` that ``Registry``'s private lock hands to that file's methods.
///
/// Nothing here releases what it lets go of; each mutation returns it, for the registry to
/// release after the lock.
struct RegistryState: Sendable {
    /// Per notification type: the index of its bucket in `buckets`, and the shards that may cache
    /// a snapshot of it.
    private(set) var types = TypeTable()
    /// The buckets, in the order their types were first given one; never removed (a bucket is
    /// emptied instead), so an index stays valid.
    var buckets = ContiguousArray<Bucket>()
    /// Incremented by every change of any bucket's observers.
    var generation: UInt64 = 0
    /// The observers of families (protocols, class hierarchies, every notification), in
    /// registration order. Each type's bucket keeps members for those whose family it belongs
    /// to (see ``Bucket/members``).
    var families = ObserverList()
    /// Incremented by every registration of a family observer, which outdates the snapshots of
    /// every type at once (see ``Registry``); a bucket whose members reflect an older one is
    /// brought up to date when a post of its type next reads it.
    var familyGeneration: UInt64 = 0
    /// Per family observer: the types whose buckets hold a member of it, so that its
    /// cancellation visits those and no other.
    var memberTypes: [ObjectIdentifier: [ObjectIdentifier]] = [:]
    /// The per-type entries whose observers registrations and cancellations have changed, in
    /// all (see `NotificationHub.registryEntriesTouched`).
    private(set) var entriesTouched = 0
    /// The buckets that posts brought up to date with the family observers, in all.
    private(set) var membershipUpdates = 0
    /// The sequence number of the latest registration.
    private var lastSequence: UInt64 = 0

    /// The number of the latest retaining post, of any type: one sequence for every type (see
    /// ``RetainedValues``), incremented by each retaining post.
    var retainSequence: UInt64 = 0

    /// The retained values that `observer` replays, retained after the post numbered `sequence`,
    /// oldest first: those of its type, or of every type of its family.
    func replays<N>(for observer: Observer<N>, after sequence: UInt64) -> [RetainedValues.Replay<N>] {
        if let family = observer.family {
            return family.replays(of: N.self, in: buckets, matching: observer.filters, after: sequence)
        }
        let values = retainedValues(of: ObjectIdentifier(N.self))
        return values?.replays(matching: observer.filters, after: sequence) { value, _ in value as? N } ?? []
    }

    /// The number of a new registration, in registration order; 0 while the hub has never had a
    /// family observer, since what comes before every family observer needs no number (see
    /// ``ObserverList``).
    mutating func nextSequence() -> UInt64 {
        guard familyGeneration > 0 else { return 0 }
        lastSequence += 1
        return lastSequence
    }

    /// The index in `buckets` of the bucket of the type whose identity is `key`, if it has one.
    @inline(__always)
    func bucket(_ key: ObjectIdentifier) -> Int? {
        types[key].bucket
    }

    /// The retained values of the type whose identity is `key`, if it has a bucket.
    func retainedValues(of key: ObjectIdentifier) -> RetainedValues? {
        bucket(key).map { buckets[$0].retainedValues }
    }

    /// Adds `observer` to the bucket at `index`, that of the type `key`, with the next registration
    /// number; the bucket takes over the reference.
    ///
    /// - Returns: The snapshot it outdated, to release after the lock, and the change to publish.
    mutating func add(
        _ observer: Unmanaged<AnyObserver>, at index: Int, key: ObjectIdentifier
    ) -> (ObserverSnapshot?, RegistryChange) {
        (buckets[index].add(observer, sequence: nextSequence()), recordChange(of: key))
    }

    /// The index in `buckets` of `type`'s bucket, created if needed.
    mutating func bucket(creating type: any TypedNotification.Type) -> Int {
        let slot = types.insert(ObjectIdentifier(type)).slot
        if let index = types[slot: slot].bucket { return index }
        buckets.append(Bucket(type: type))
        types[slot: slot].bucket = buckets.count - 1
        return buckets.count - 1
    }

    /// Keeps the class of the observers of `key` and its latest registration site (see
    /// ``Registry/registrationInfo(of:at:)``).
    mutating func noteRegistration(_ registration: TypeEntry.Registration, of key: ObjectIdentifier) {
        types.update(key) { $0.registration = registration }
    }

    /// Notes that shard `shard` may cache a snapshot of `key`, so that the next change of the type
    /// clears it.
    mutating func markCached(_ key: ObjectIdentifier, inShard shard: Int) {
        types.update(key) { $0.cachedShards |= 1 << UInt64(shard) }
    }

    /// The bucket of `key`, with its family members brought up to date.
    ///
    /// When families are registered, a type that has no bucket yet gets one, so that its
    /// membership can be cached; `sample`, a notification of the type, decides the families it
    /// was never checked against. (`sample` is not optional on purpose: the address of a
    /// notification of a type without stored properties may be 0, which an optional pointer
    /// would take for `nil`.)
    ///
    /// - Returns: The bucket's index, and what the update let go of, to release after the lock.
    mutating func bucket(
        _ key: ObjectIdentifier, type: any TypedNotification.Type, sample: UnsafeRawPointer
    ) -> (Int?, [any Sendable]) {
        guard families.count > 0 else { return (bucket(key), []) }
        let index = bucket(creating: type)
        guard buckets[index].membersGeneration != familyGeneration else { return (index, []) }
        membershipUpdates += 1
        var joined: [AnyObserver] = []
        let released = buckets[index].updateMembers(
            families: families, generation: familyGeneration, sample: sample, joined: &joined)
        for observer in joined { memberTypes[ObjectIdentifier(observer), default: []].append(key) }
        return (index, released)
    }

    /// Numbers a change of `key`'s observers; the registry clears the shards it names once the
    /// lock is released.
    mutating func recordChange(of key: ObjectIdentifier) -> RegistryChange {
        generation += 1
        entriesTouched += 1
        // One lookup; read first: a write checks that the table is unique, and most changes find
        // nothing cached.
        let slot = types.insert(key).slot
        let shards = types[slot: slot].cachedShards
        if shards != 0 { types[slot: slot].cachedShards = 0 }
        return RegistryChange(key: key, generation: generation, shards: shards)
    }

    /// Drops every registration, retained value and family observer (the hub is going away).
    ///
    /// - Returns: What it held, to release after the lock.
    mutating func removeAll() -> [any Sendable] {
        generation += 1
        defer {
            buckets = []
            types = TypeTable()
            families = ObserverList()
            memberTypes = [:]
        }
        return [families, buckets]
    }
}

/// A change of one type's observers, to clear from the shards that may cache that type.
struct RegistryChange: Sendable {
    let key: ObjectIdentifier
    let generation: UInt64
    let shards: UInt64
}

/// The registry's entry for one notification type (see ``TypeTable``).
struct TypeEntry: Sendable {
    /// The index of the type's bucket in ``RegistryState/buckets``, once it has one.
    var bucket: Int?
    /// The shards that may cache a snapshot of the type (one bit per shard).
    var cachedShards: UInt64 = 0
    /// The class of Herald's observers of the type and the latest site that registered one, once
    /// one registered (see ``Registry/registrationInfo(of:at:)``).
    var registration: Registration?

    /// What a registration of the type looked up, kept for the next one.
    struct Registration: Sendable {
        /// The class of Herald's observers of the type.
        let observerClass: AnyClass
        /// The latest registration site, and its index in the site table.
        let location: SourceLocation
        let site: UInt32
    }
}

/// The registry's table from notification type to its bucket and the shards that may cache it.
typealias TypeTable = IdentityTable<TypeEntry>

extension TypeTable {
    /// A table for a new registry.
    init() { self.init(capacity: 16, empty: TypeEntry()) }
}
