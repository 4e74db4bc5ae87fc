import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("Herald supports Darwin, Glibc and Musl platforms")
#endif

/// The registry of a hub: one bucket per notification type, behind one lock, and the snapshots
/// that posts read, cached per thread group.
///
/// ## Posts
/// A post finds its type's snapshot in a *post shard*: a small table behind a lock of its own,
/// chosen by the posting thread. It retains the snapshot under that lock, then scans it after
/// unlocking. Threads that post at the same time mostly use different shards, so they do not
/// contend on one lock or one reference count. A shard that has no current snapshot for a type
/// fills its entry from the registry.
///
/// ## Registrations
/// A registration or cancellation changes its bucket's lists under the registry lock and drops
/// the bucket's snapshot, then clears the type's entry in every shard that may cache it, before it
/// returns. The next post of the type builds a new snapshot. Each change has a generation number,
/// so a post that read the registry before a change cannot store its older snapshot in a shard
/// after the change cleared it. Everything replaced (snapshots, and with them observers and their
/// handlers) is released after unlocking.
///
/// ## Families
/// A family observer or a tap may receive posts of any type, so its registration would outdate
/// every cached snapshot. Rather than clear them one type at a time (which costs O(every type the
/// hub has seen), and lets a post of a type not yet cleared miss the observer after a post of a
/// type already cleared found it), it increments the *family generation*, under the registry
/// lock, and touches no type. Each shard entry keeps the family generation its snapshot was built
/// at; a post loads the current one (one atomic load) and takes an entry built at another as a
/// miss. The post that misses brings the type's bucket up to date (deciding, once per family,
/// whether the type belongs to it) and builds a new snapshot. So the registration becomes visible
/// to every type at the same moment: a thread whose post found the new observer loads, for its
/// later posts, a generation at least as new. A family observer's cancellation drops its stand-ins
/// from the types that joined it (the registry keeps their list), as the cancellation of an
/// observer of each of those types would.
final class Registry: @unchecked Sendable {  // `shardRefs` is immutable after init.
    struct State: Sendable {
        /// Per notification type: its bucket, and the shards that may cache a snapshot of it.
        var types = TypeTable()
        /// Incremented by every change of any bucket's observers.
        var generation: UInt64 = 0
        /// The observers of families (protocols, class hierarchies, every notification), in
        /// registration order. Each type's bucket keeps stand-ins for those whose family it belongs
        /// to (see ``AnyBucket/members``).
        var families = ObserverList()
        /// Incremented by every registration of a family observer, which outdates the snapshots of
        /// every type at once (see ``Registry``); a bucket whose members reflect an older one is
        /// brought up to date when a post of its type next reads it.
        var familyGeneration: UInt64 = 0
        /// Per family observer: the types whose buckets hold a stand-in of it, so that its
        /// cancellation visits those and no other.
        private var memberTypes: [ObjectIdentifier: [ObjectIdentifier]] = [:]
        /// The per-type entries whose observers registrations and cancellations have changed, in
        /// all (see `NotificationHub.registryEntriesTouched`).
        private(set) var entriesTouched = 0
        /// The buckets that posts brought up to date with the family observers, in all.
        private(set) var membershipUpdates = 0
        /// The sequence number of the latest registration.
        private var lastSequence: UInt64 = 0

        /// The number of a new registration, in registration order; 0 while the hub has never had a
        /// family observer, since what comes before every family observer needs no number (see
        /// ``ObserverList``).
        mutating func nextSequence() -> UInt64 {
            guard familyGeneration > 0 else { return 0 }
            lastSequence += 1
            return lastSequence
        }

        /// The bucket of `key`, with its family stand-ins brought up to date.
        ///
        /// When families are registered, a type that has no bucket yet gets one, so that its
        /// membership can be cached; `sample`, a notification of the type, decides the families it
        /// was never checked against. (`sample` is not optional on purpose: the address of a
        /// notification of a type without stored properties may be 0, which an optional pointer
        /// would take for `nil`.)
        ///
        /// - Returns: The bucket, and what the update let go of, to release after the lock.
        mutating func bucket(
            _ key: ObjectIdentifier, type: any TypedNotification.Type, sample: UnsafeRawPointer
        ) -> (AnyBucket?, [any Sendable]) {
            guard families.count > 0 else { return (bucket(key), []) }
            let existing = bucket(key)
            let bucket = existing ?? makeBucket(for: type)
            if existing == nil { types.update(key) { $0.bucket = bucket } }
            guard bucket.membersGeneration != familyGeneration else { return (bucket, []) }
            membershipUpdates += 1
            var joined: [AnyObserver] = []
            let released = bucket.updateMembers(
                families: families, generation: familyGeneration, sample: sample, joined: &joined)
            for observer in joined { memberTypes[ObjectIdentifier(observer), default: []].append(key) }
            return (bucket, released)
        }

        /// Forgets the types that hold a stand-in of `observer`, a family observer whose
        /// registration ends.
        ///
        /// - Returns: Those types.
        mutating func takeMemberTypes(of observer: AnyObserver) -> [ObjectIdentifier] {
            memberTypes.removeValue(forKey: ObjectIdentifier(observer)) ?? []
        }

        /// Forgets every family observer's types (the hub is going away).
        mutating func removeAllMemberTypes() {
            memberTypes = [:]
        }

        /// The bucket of the type whose identity is `key`, if it has one.
        @inline(__always)
        func bucket(_ key: ObjectIdentifier) -> AnyBucket? {
            types[key].bucket
        }

        /// The bucket of `type`, if it has one.
        func bucket<N: TypedNotification>(of type: N.Type) -> Bucket<N>? {
            // The table is keyed by the type's identity, so the bucket under `N`'s key is a `Bucket<N>`.
            bucket(ObjectIdentifier(type)).map { unsafeDowncast($0, to: Bucket<N>.self) }
        }

        /// The bucket of `type`, created if needed.
        mutating func bucket<N: TypedNotification>(creating type: N.Type) -> Bucket<N> {
            types.update(ObjectIdentifier(type)) { entry in
                if let existing = entry.bucket {
                    return unsafeDowncast(existing, to: Bucket<N>.self)
                }
                let bucket = Bucket<N>()
                entry.bucket = bucket
                return bucket
            }
        }

        /// Numbers a change of `key`'s observers; the caller passes it to ``Registry/didChange(_:)``
        /// once the lock is released.
        mutating func recordChange(of key: ObjectIdentifier) -> Change {
            generation += 1
            entriesTouched += 1
            let shards = types.update(key) { entry in
                defer { entry.cachedShards = 0 }
                return entry.cachedShards
            }
            return Change(key: key, generation: generation, shards: shards)
        }
    }

    /// Registers `observer`, an observer of a family, for every type at once: a new family
    /// generation outdates every cached snapshot, and each type joins the observer when a post of
    /// it next reads the registry. Touches no type.
    ///
    /// - Complexity: O(1), amortised.
    func addFamily(_ observer: AnyObserver) {
        state.withLock { state in
            state.familyGeneration += 1  // first: a family observer's number is never 0
            state.families.append(observer, sequence: state.nextSequence())
            // Orders this registration among the changes of single types, so that a shard refuses
            // a snapshot read before it (see `SnapshotTable.store`).
            state.generation += 1
            // Under the lock: a post that read the registry after this registration (and so found
            // the observer) then loads this generation, or a newer one, for its thread's next posts.
            familyGeneration.store(state.familyGeneration, ordering: .releasing)
        }
    }

    /// Ends the registration of `observer`, an observer of a family: drops its stand-ins from the
    /// types that joined it, as the cancellation of an observer of each of those types would.
    ///
    /// - Returns: What it let go of (the observer, its stand-ins and the outdated snapshots), to
    ///   release after the locks.
    /// - Complexity: O(the types that joined the observer).
    func removeFamily(_ observer: AnyObserver) -> [any Sendable] {
        let (released, changes) = state.withLock { state -> ([any Sendable], [Change]) in
            guard let removed = state.families.remove(observer) else { return ([], []) }
            var released: [any Sendable] = [removed]
            var changes: [Change] = []
            for key in state.takeMemberTypes(of: observer) {
                guard let bucket = state.bucket(key), case let dropped = bucket.dropMembers(of: observer),
                    !dropped.isEmpty
                else { continue }
                released += dropped
                changes.append(state.recordChange(of: key))
            }
            return (released, changes)
        }
        for change in changes { didChange(change) }
        return released
    }

    /// Makes `observer` visible to posts.
    func add<N: TypedNotification>(_ observer: Observer<N>) {
        let key = ObjectIdentifier(N.self)
        let (replaced, change) = state.withLock { state in
            // Not `bucket(creating:)`: that asks the runtime for `Bucket<N>`'s metadata on every
            // call, which was a tenth of a registration's cost.
            let bucket = state.types.update(key) { entry in
                if let bucket = entry.bucket { return bucket }
                let bucket = observer.makeBucket()
                entry.bucket = bucket
                return bucket
            }
            return (bucket.add(observer, sequence: state.nextSequence()), state.recordChange(of: key))
        }
        didChange(change)
        withExtendedLifetime(replaced) {}  // released here, outside the locks
    }

    /// Ends `observer`'s registration. What the registry lets go of (the observer, whose handler
    /// may capture anything, and the outdated snapshot) is released after the locks.
    func remove<N: TypedNotification>(_ observer: Observer<N>) {
        let key = ObjectIdentifier(N.self)
        let (released, change) = state.withLock { state -> ((AnyObserver, ObserverSnapshot?)?, Change?) in
            guard let released = state.bucket(key)?.remove(observer) else { return (nil, nil) }
            return (released, state.recordChange(of: key))
        }
        if let change { didChange(change) }
        withExtendedLifetime(released) {}  // released here, outside the locks
    }

    /// The current snapshot of `type`'s observers, built if a change outdated the last one.
    func snapshot(of type: any TypedNotification.Type) -> ObserverSnapshot? {
        state.withLock { $0.bucket(ObjectIdentifier(type))?.snapshot() }
    }

    /// The snapshot of every type's observers, and the family observers, in registration order.
    func allObservers() -> (snapshots: [ObserverSnapshot], families: [AnyObserver]) {
        state.withLock { state in
            (state.types.buckets.compactMap { $0.snapshot() }, Array(state.families.observers))
        }
    }

    /// The family observers, in registration order.
    var familyObservers: [AnyObserver] {
        state.withLock { Array($0.families.observers) }
    }

    /// Drops every registration and retained value (the hub is going away); they are released
    /// after the locks.
    func removeAll() {
        let released = state.withLock { state -> [any Sendable] in
            defer {
                state.types = TypeTable()
                state.families = ObserverList()
                state.removeAllMemberTypes()
            }
            state.generation += 1
            return state.types.buckets.flatMap { $0.removeAll() } + [Box(state.families)]
        }
        clearShards()
        withExtendedLifetime(released) {}  // released here, outside the locks
    }

    /// The per-type entries whose observers registrations and cancellations have changed, in all.
    var entriesTouched: Int { state.withLock { $0.entriesTouched } }

    /// The buckets that posts brought up to date with the family observers, in all.
    var membershipUpdates: Int { state.withLock { $0.membershipUpdates } }

    // MARK: Retained values

    /// Stores `value` as the retained value of its type for `subject`, and returns the snapshot
    /// of the observers it reaches, read in the same critical section. The values it replaces are
    /// released after the lock.
    func retain<N: TypedNotification>(_ value: N, subject: AnyObject?) -> ObserverSnapshot? {
        let (snapshot, released, members) = withUnsafePointer(to: value) { sample in
            state.withLock { state -> (ObserverSnapshot?, [N], [any Sendable]) in
                let bucket = state.bucket(creating: N.self)
                let released = bucket.retained.store(value, subject: subject)
                let (_, members) = state.bucket(ObjectIdentifier(N.self), type: N.self, sample: sample)
                return (bucket.snapshot(), released, members)
            }
        }
        withExtendedLifetime((members, released)) {}  // released here, outside the lock
        return snapshot
    }

    /// The value of `type` retained for `subject` (which the caller keeps alive), if any.
    func retainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        state.withLock { $0.bucket(of: type)?.retained.value(for: subject) }
    }

    /// The value of `type` retained for `subject` and its sequence number (see
    /// ``RetainedValues/entry(for:)``), if any.
    func retainedEntry<N: TypedNotification>(
        of type: N.Type, subject: AnyObject?
    ) -> (value: N, sequence: UInt64)? {
        state.withLock { $0.bucket(of: type)?.retained.entry(for: subject) }
    }

    /// Removes the value of `type` retained for `subject` and returns it; what the entry held is
    /// released after the lock.
    func removeRetainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        let (value, released) = state.withLock { state -> (N?, N?) in
            state.bucket(of: type)?.retained.remove(for: subject) ?? (nil, nil)
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return value
    }

    /// Removes the value of `type` retained for `subject` if it is still the one numbered
    /// `sequence` (see ``RetainedValues/remove(for:ifSequence:)``); the value is released after
    /// the lock.
    func removeRetainedValue<N: TypedNotification>(
        of type: N.Type, subject: AnyObject?, ifSequence sequence: UInt64
    ) -> RetainedValues<N>.ConditionalRemoval {
        let (outcome, released) = state.withLock { state -> (RetainedValues<N>.ConditionalRemoval, N?) in
            state.bucket(of: type)?.retained.remove(for: subject, ifSequence: sequence) ?? (.absent, nil)
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return outcome
    }

    /// Removes every retained value of `type`, or of every type when `type` is `nil`, and returns
    /// how many belonged to live subjects (or to none). The values are released after the lock.
    func removeAllRetainedValues(of type: (any TypedNotification.Type)?) -> Int {
        let (count, released) = state.withLock { state -> (Int, [any Sendable]) in
            let buckets = type.map { state.bucket(ObjectIdentifier($0)).map { [$0] } ?? [] } ?? state.types.buckets
            var count = 0
            var released: [any Sendable] = []
            for bucket in buckets {
                let (removed, values) = bucket.removeRetainedValues()
                count += removed
                if let values { released.append(values) }
            }
            return (count, released)
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return count
    }

    /// Registers `observer`, which has a mailbox or a stream, with the retained values it matches
    /// preloaded into it, in one critical section: they come before any live post.
    ///
    /// - Returns: Whether the observer's drain must be scheduled.
    func addPreloaded<N: TypedNotification>(_ observer: Observer<N>) -> Bool {
        let key = ObjectIdentifier(N.self)
        let (mustSchedule, dropped, replaced, change) = state.withLock {
            state -> (Bool, [N], ObserverSnapshot?, Change) in
            let bucket = state.bucket(creating: N.self)
            let items = bucket.retained.replays(matching: observer.filters, after: 0).map {
                QueuedItem(notification: $0.value, subjectID: $0.subjectID, group: nil)
            }
            let (mustSchedule, dropped) = observer.preload(items)
            let replaced = bucket.add(observer, sequence: state.nextSequence())
            return (mustSchedule, dropped, replaced, state.recordChange(of: key))
        }
        didChange(change)
        withExtendedLifetime((dropped, replaced)) {}  // released here, outside the locks
        return mustSchedule
    }

    /// One round of a posting-thread observer's replaying registration: the retained values it
    /// matches that were retained after sequence number `seen`, and the latest sequence number.
    /// Registers `observer` in the same critical section if there are none, or if `force`.
    func replayRound<N: TypedNotification>(
        _ observer: Observer<N>, after seen: UInt64, force: Bool
    ) -> (replays: [RetainedValues<N>.Replay], latest: UInt64, added: Bool) {
        let key = ObjectIdentifier(N.self)
        let (replays, latest, change, replaced) = state.withLock {
            state -> ([RetainedValues<N>.Replay], UInt64, Change?, ObserverSnapshot?) in
            let bucket = state.bucket(creating: N.self)
            let latest = bucket.retained.lastSequence
            let replays = bucket.retained.replays(matching: observer.filters, after: seen)
            guard replays.isEmpty || force else { return (replays, latest, nil, nil) }
            let replaced = bucket.add(observer, sequence: state.nextSequence())
            return (replays, latest, state.recordChange(of: key), replaced)
        }
        if let change { didChange(change) }
        withExtendedLifetime(replaced) {}  // released here, outside the locks
        return (replays, latest, change != nil)
    }

    /// A change of one type's observers, to clear from the shards that may cache that type.
    struct Change: Sendable {
        let key: ObjectIdentifier
        let generation: UInt64
        let shards: UInt64
    }

    /// The buckets. Retained values live in the same buckets, under the same lock, so that a
    /// retaining post and a replaying registration are atomic with respect to each other.
    /// Private: every critical section is one of this file's methods, which release what they
    /// let go of after the lock.
    private let state = Lock(State())

    /// The number of post shards, a power of two.
    private static let shardCount = 8
    private let shards: [PostShard] = (0..<Registry.shardCount).map { _ in PostShard() }
    /// The same shards, for posts, which borrow them without touching their reference counts:
    /// `shards` keeps them alive as long as the registry.
    private let shardRefs: UnsafeMutablePointer<Unmanaged<PostShard>>
    /// `state.familyGeneration`, for posts to read without the registry lock; stored under it. It
    /// sits beside `shardRefs`, which every post reads too, and changes only when a family observer
    /// registers.
    private let familyGeneration = Atomic<UInt64>(0)

    init() {
        shardRefs = .allocate(capacity: Self.shardCount)
        for (index, shard) in shards.enumerated() {
            (shardRefs + index).initialize(to: .passUnretained(shard))
        }
    }

    deinit {
        shardRefs.deallocate()
    }

    /// The snapshot of the observers of `type` that a post of the notification at `payload` scans,
    /// or `nil` if there are none.
    @inline(__always)
    func snapshot(of type: any TypedNotification.Type, payload: UnsafeRawPointer) -> ObserverSnapshot? {
        let key = ObjectIdentifier(type)
        let index = Self.shardIndex()
        // Relaxed is enough: the snapshot itself is published under the shard's lock, and the
        // loads of one atomic never go back (a thread's later load sees at least what its earlier
        // load, or a registration that happened before it, stored). So once one of a thread's posts
        // found a family observer, its later posts take no snapshot read before that observer
        // registered.
        let families = familyGeneration.load(ordering: .relaxed)
        let cached = shardRefs[index]._withUnsafeGuaranteedRef {
            $0.table.withLock { $0.lookup(key, familyGeneration: families) }
        }
        if cached.isHit { return cached.snapshot }
        return fill(index, key, type, payload)
    }

    /// Reads the registry's snapshot of `key` and caches a copy in shard `index`. `payload`, a
    /// notification of the type, decides which families it belongs to, if that is not known yet.
    @inline(never)
    private func fill(
        _ index: Int, _ key: ObjectIdentifier, _ type: any TypedNotification.Type, _ payload: UnsafeRawPointer
    ) -> ObserverSnapshot? {
        let shard = shards[index]
        let (generation, families, cached, released) = state.withLock { state in
            state.types.update(key) { entry in entry.cachedShards |= 1 << UInt64(index) }
            let (bucket, released) = state.bucket(key, type: type, sample: payload)
            return (state.generation, state.familyGeneration, bucket?.snapshotForShard(), released)
        }
        withExtendedLifetime(released) {}  // released here, after the lock
        // Built after the lock, so that registrations do not wait for it. If the type changed
        // meanwhile, the shard refuses it (the change's generation is later) and only this post
        // scans it, as if it had come just before the change.
        let snapshot = cached?.snapshot ?? cached?.source?.build()
        let replaced = shard.table.withLock {
            $0.store(snapshot, for: key, generation: generation, familyGeneration: families)
        }
        withExtendedLifetime(replaced) {}  // released here, after the lock
        return snapshot
    }

    /// Clears the cached snapshots of a changed type in the shards that may hold one. Call without
    /// holding a lock: the cleared snapshots are released here.
    ///
    /// A shard that never read the type since its last change is skipped: it holds nothing to
    /// clear, and a post that reads the registry before the change marks its shard under the
    /// registry lock, so the change sees that mark.
    private func didChange(_ change: Change) {
        var remaining = change.shards
        while remaining != 0 {
            let index = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            let cleared = shards[index].table.withLock { $0.invalidate(change.key, generation: change.generation) }
            withExtendedLifetime(cleared) {}  // released here, after the lock
        }
    }

    /// Clears every shard (the hub is going away). Call without holding a lock.
    private func clearShards() {
        for shard in shards {
            let cleared = shard.table.withLock { table in
                defer { table = SnapshotTable() }
                return Box(table)
            }
            withExtendedLifetime(cleared) {}
        }
    }

    /// The numbers of the posting threads, shared by every hub.
    private static let threadNumbers = ThreadNumbers()

    /// The shard of the calling thread: threads take the shards in turn, in the order they first
    /// post, so threads that start posting about the same time use different shards. Two threads
    /// share one only when a multiple of `shardCount` threads first posted between them.
    @inline(__always)
    private static func shardIndex() -> Int {
        Int(truncatingIfNeeded: threadNumbers.current & UInt(shardCount - 1))
    }
}

/// One post shard: a table from notification type to snapshot, behind its own lock.
final class PostShard: Sendable {
    /// Keeps the lock off the cache lines of whatever was allocated just before the shard.
    private let leadingPadding = CacheLinePadding()
    let table = Lock(SnapshotTable())
    /// Keeps the next shard's lock off this one's cache lines: the shards are made one after
    /// another, and threads posting through two shards would otherwise write the same line.
    private let trailingPadding = CacheLinePadding()
}

/// Room that keeps an object's hot fields and its neighbours' on separate cache lines (of 64
/// bytes, fetched in pairs by some processors): objects written by different threads without a
/// shared lock end with it.
struct CacheLinePadding: Sendable {
    private let words:
        (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
            )
}

/// The registry's entry for one notification type (see ``TypeTable``).
struct TypeEntry: IdentityTableValue {
    var bucket: AnyBucket?
    /// The shards that may cache a snapshot of the type (one bit per shard).
    var cachedShards: UInt64 = 0

    static var empty: TypeEntry { TypeEntry() }
}

/// The registry's table from notification type to its bucket and the shards that may cache it.
typealias TypeTable = IdentityTable<TypeEntry>

extension TypeTable {
    /// A table for a new registry.
    init() { self.init(capacity: 16) }

    /// Every bucket.
    var buckets: [AnyBucket] { values.compactMap(\.bucket) }
}

/// A post shard's entry for one notification type: the snapshot it caches, with the generation of
/// the change it reflects and the family generation it was read at (see ``SnapshotTable``).
struct SnapshotEntry: IdentityTableValue {
    var generation: UInt64 = 0
    /// The registry's family generation when the snapshot was read (see ``Registry``), or
    /// ``SnapshotEntry/invalid`` while the entry holds none: one word, so that a slot stays
    /// 32 bytes and a lookup compares once.
    var familyGeneration = SnapshotEntry.invalid
    var snapshot: ObserverSnapshot?

    /// The family generation of an entry without a valid snapshot; the registry's never reaches it.
    static let invalid = UInt64.max

    static var empty: SnapshotEntry { SnapshotEntry() }
}

/// A post shard's table from notification type to the snapshot it caches; one entry per type
/// ever posted from the shard.
typealias SnapshotTable = IdentityTable<SnapshotEntry>

extension SnapshotTable {
    /// A table for a new shard.
    init() { self.init(capacity: 8) }

    /// What ``lookup(_:familyGeneration:)`` found, carried out of the shard's lock (the snapshot
    /// retained).
    struct Lookup: Sendable {
        let isHit: Bool
        let snapshot: ObserverSnapshot?
    }

    /// The snapshot of `key`; a hit only if it was read at family generation `familyGeneration`.
    @inline(__always)
    func lookup(_ key: ObjectIdentifier, familyGeneration: UInt64) -> Lookup {
        let entry = self[key]
        return Lookup(isHit: entry.familyGeneration == familyGeneration, snapshot: entry.snapshot)
    }

    /// Stores the registry's snapshot of `key` as of `generation` (which also orders the family
    /// registrations) and `familyGeneration`, unless a later change cleared the entry already or a
    /// later read stored its snapshot.
    ///
    /// - Returns: What it replaced, to release after the lock.
    mutating func store(
        _ snapshot: ObserverSnapshot?, for key: ObjectIdentifier, generation: UInt64, familyGeneration: UInt64
    ) -> ObserverSnapshot? {
        update(key) { entry in
            guard entry.generation <= generation else { return snapshot }
            defer { entry = SnapshotEntry(generation: generation, familyGeneration: familyGeneration, snapshot: snapshot) }
            return entry.snapshot
        }
    }

    /// Clears `key`'s entry after the change numbered `generation`.
    ///
    /// - Returns: The snapshot it held, to release after the lock.
    mutating func invalidate(_ key: ObjectIdentifier, generation: UInt64) -> ObserverSnapshot? {
        update(key) { entry in
            defer { entry = SnapshotEntry(generation: max(entry.generation, generation), snapshot: nil) }
            return entry.snapshot
        }
    }
}

/// A new, empty bucket for notifications of `type`.
private func makeBucket<N: TypedNotification>(for type: N.Type) -> AnyBucket {
    Bucket<N>()
}
