import Synchronization

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
/// later posts, a generation at least as new. A family observer's cancellation drops its members
/// from the types that joined it (the registry keeps their list), as the cancellation of an
/// observer of each of those types would.
///
/// ## One owner of the lock
/// The registry lock and what it guards (``RegistryState``: the buckets with their observers and
/// retained values, the families, the generations) are private to this file: each method below is
/// one critical section, with one intent (add, remove, retain, replay, ...), and releases what it
/// lets go of (observers, handlers, snapshots, retained values, whose `deinit` may use the hub)
/// after the lock. The data logic lives in the types the state is made of (``RegistryState``,
/// ``Bucket``, ``RetainedValues``, ``IdentityTable``); the shards in ``PostShard``.
final class Registry: DeliveryHost, @unchecked Sendable {  // `shardRefs` is immutable after init.
    // MARK: Registrations

    /// Makes and registers a plain posting-thread observer of `N` (no filters, priority or
    /// family) that calls `handler`, registered at `location`.
    ///
    /// When the type's latest registration was made at the same site (see
    /// ``registrationInfo(of:at:)``), the observer is made and added in one critical section: the
    /// usual observe takes the registry lock once. (Making it under the lock allocates there, and
    /// calls nothing else: the initializer only stores.)
    func addPosting<N: TypedNotification>(
        at location: SourceLocation, handler: @escaping @Sendable (N) throws -> Void
    ) -> Observer<N> {
        let key = ObjectIdentifier(N.self)
        // The critical section returns `AnyObserver`, not `Observer<N>`: a result type that
        // depends on `N` would cost a run-time lookup of its metadata on every call.
        let (made, replaced, change) = state.withLock {
            state -> (AnyObserver?, ObserverSnapshot?, RegistryChange?) in
            guard let known = state.types[key].registration, known.location == location else { return (nil, nil, nil) }
            let observerClass = unsafeBitCast(known.observerClass, to: Observer<N>.Type.self)  // stored for this key
            // The list takes the new observer's reference and the result retains one.
            let observer = Unmanaged<AnyObserver>.passRetained(
                observerClass.init(registry: self, site: known.site, handler: handler))
            let (replaced, change) = state.add(observer, at: state.bucket(creating: N.self), key: key)
            return (observer.takeUnretainedValue(), replaced, change)
        }
        if let made {
            if let change { didChange(change) }
            withExtendedLifetime(replaced) {}  // released here, outside the locks
            return unsafeDowncast(made, to: Observer<N>.self)  // made above, of this class
        }
        let (observerClass, site) = registrationInfo(of: N.self, at: location)
        let observer = observerClass.init(registry: self, site: site, handler: handler)
        add(observer)
        return observer
    }

    /// Makes `observer` visible to posts: in its type's bucket, or, for a family observer, for
    /// every type at once (see ``add(_:in:)``).
    func add<N: TypedNotification>(_ observer: Observer<N>) {
        let (replaced, change) = state.withLock { add(observer, in: &$0) }
        if let change { didChange(change) }
        withExtendedLifetime(replaced) {}  // released here, outside the locks
    }

    /// Ends `observer`'s registration (see ``removeFamily(_:)`` for a family observer). What the
    /// registry lets go of (the observer, whose handler may capture anything, and the outdated
    /// snapshot) is released after the locks.
    func remove<N: TypedNotification>(_ observer: Observer<N>) {
        guard observer.family == nil else { return removeFamily(observer) }
        let key = ObjectIdentifier(N.self)
        let (released, change) = state.withLock { state -> ((AnyObserver, ObserverSnapshot?)?, RegistryChange?) in
            guard let index = state.bucket(key), let released = state.buckets[index].remove(observer) else {
                return (nil, nil)
            }
            return (released, state.recordChange(of: key))
        }
        if let change { didChange(change) }
        withExtendedLifetime(released) {}  // released here, outside the locks
    }

    /// The class of Herald's observers of `N`, and the index of the registration site `location`
    /// (see ``SourceLocation/siteIndex``), in one critical section: both are kept with the type.
    /// `Observer<N>` in code that does not know `N` would ask the runtime's metadata cache at every
    /// registration, and the site table is behind a lock of its own; a type is usually observed
    /// again from the site that observed it last, so the common registration takes neither.
    func registrationInfo<N: TypedNotification>(
        of type: N.Type, at location: SourceLocation
    ) -> (observerClass: Observer<N>.Type, site: UInt32) {
        let key = ObjectIdentifier(type)
        let known = state.withLock { $0.types[key].registration }
        if let known, known.location == location {
            // Stored for this key below, so the cast is exact.
            return (unsafeBitCast(known.observerClass, to: Observer<N>.Type.self), known.site)
        }
        let observerClass = Observer<N>.self
        let registration = TypeEntry.Registration(
            observerClass: observerClass, location: location, site: location.siteIndex)
        state.withLock { $0.noteRegistration(registration, of: key) }
        return (observerClass, registration.site)
    }

    /// Adds `observer`, of a type or of a family, under the registry lock.
    ///
    /// An observer of a family is registered for every type at once: a new family generation
    /// outdates every cached snapshot, and each type joins the observer when a post of it next
    /// reads the registry. That touches no type, but for a family of one type
    /// (``AnyFamily/onlyType``), which that type joins at once.
    ///
    /// - Returns: The snapshot it outdated, to release after the lock, and the change to publish
    ///   (none for a family observer, which the family generation publishes, but for the family of
    ///   one type).
    /// - Complexity: O(1), amortised.
    private func add<N: TypedNotification>(
        _ observer: Observer<N>, in state: inout RegistryState
    ) -> (ObserverSnapshot?, RegistryChange?) {
        guard let family = observer.family else {
            return state.add(.passRetained(observer), at: state.bucket(creating: N.self), key: ObjectIdentifier(N.self))
        }
        state.familyGeneration += 1  // first: a family observer's number is never 0
        let sequence = state.nextSequence()
        state.families.append(.passRetained(observer), sequence: sequence)
        // Orders this registration among the changes of single types, so that a shard refuses
        // a snapshot read before it (see `SnapshotTable.store`).
        state.generation += 1
        // Under the lock: a post that read the registry after this registration (and so found
        // the observer) then loads this generation, or a newer one, for its thread's next posts.
        familyGeneration.store(state.familyGeneration, ordering: .releasing)
        guard let type = family.onlyType else { return (nil, nil) }
        // The family of one type: its type joins it now, as an observer of the type is added.
        let key = ObjectIdentifier(type)
        let index = state.bucket(creating: type)
        let member = family.member(of: type, for: observer, sequence: sequence)
        state.memberTypes[ObjectIdentifier(observer), default: []].append(key)
        return (state.buckets[index].join(member), state.recordChange(of: key))
    }

    /// Ends the registration of `observer`, an observer of a family: drops its members from the
    /// types that joined it, as the cancellation of an observer of each of those types would.
    ///
    /// What it lets go of (the observer, its members and the outdated snapshots) is released
    /// after the locks.
    ///
    /// - Complexity: O(the types that joined the observer).
    private func removeFamily(_ observer: AnyObserver) {
        let (released, changes) = state.withLock { state -> ([any Sendable], [RegistryChange]) in
            guard let removed = state.families.remove(observer) else { return ([], []) }
            var released: [any Sendable] = [removed]
            var changes: [RegistryChange] = []
            for key in state.memberTypes.removeValue(forKey: ObjectIdentifier(observer)) ?? [] {
                guard let index = state.bucket(key), case let dropped = state.buckets[index].dropMembers(of: observer),
                    !dropped.isEmpty
                else { continue }
                released += dropped
                changes.append(state.recordChange(of: key))
            }
            return (released, changes)
        }
        for change in changes { didChange(change) }
        withExtendedLifetime(released) {}  // released here, outside the locks
    }

    /// The current snapshot of `type`'s observers, built if a change outdated the last one.
    func snapshot(of type: any TypedNotification.Type) -> ObserverSnapshot? {
        state.withLock { state in state.bucket(ObjectIdentifier(type)).flatMap { state.buckets[$0].snapshot() } }
    }

    /// The snapshot of every type's observers, and the family observers, in registration order.
    func allObservers() -> (snapshots: [ObserverSnapshot], families: [AnyObserver]) {
        state.withLock { state in
            (state.buckets.indices.compactMap { state.buckets[$0].snapshot() }, Array(state.families.observers))
        }
    }

    /// The family observers, in registration order.
    var familyObservers: [AnyObserver] {
        state.withLock { Array($0.families.observers) }
    }

    /// Drops every registration and retained value (the hub is going away); they are released
    /// after the locks.
    func removeAll() {
        let released = state.withLock { $0.removeAll() }
        for shard in shards {
            withExtendedLifetime(shard.table.exchange(SnapshotTable())) {}  // released after the shard's lock
        }
        withExtendedLifetime(released) {}  // released here, outside the locks
    }

    /// The per-type entries whose observers registrations and cancellations have changed, in all.
    var entriesTouched: Int { state.withLock { $0.entriesTouched } }

    /// The buckets that posts brought up to date with the family observers, in all.
    var membershipUpdates: Int { state.withLock { $0.membershipUpdates } }

    // MARK: Retained values
    //
    // Retained values are stored in the buckets, under the registry lock. A retaining post stores
    // its value and takes its observer snapshot in one critical section (`retain`), and a
    // replaying registration reads the retained values and becomes visible in one critical
    // section (`addPreloaded`; or, on the posting thread, `replayRound`, whose final round checks
    // that nothing was retained in between: see `HubCore.add`). So every retaining post
    // reaches a replaying observer exactly once: through the replay if it came first, live if it
    // came after. Values that are replaced or removed are released after the lock, never under
    // it: their `deinit` may observe, cancel, post or remove retained values on the same hub.

    /// Stores `value` as the retained value of its type for `subject`, and returns the snapshot
    /// of the observers it reaches, read in the same critical section, and what the lock let go
    /// of: the value it replaces, which the caller releases once it has delivered the post (that
    /// value's `deinit` may post, and such a post comes after the one that replaced it).
    func retain<N: TypedNotification>(_ value: N, subject: AnyObject?) -> (ObserverSnapshot?, (any Sendable)?) {
        let key = ObjectIdentifier(N.self)
        let (snapshot, released, members) = withUnsafePointer(to: value) { sample in
            state.withLock { state -> (ObserverSnapshot?, (any Sendable)?, [any Sendable]) in
                let bucket = state.bucket(creating: N.self)
                state.retainSequence += 1
                let released = state.buckets[bucket].retainedValues.store(
                    value, subject: subject, sequence: state.retainSequence)
                let (index, members) = state.bucket(key, type: N.self, sample: sample)
                return (index.flatMap { state.buckets[$0].snapshot() }, released, members)
            }
        }
        withExtendedLifetime(members) {}  // released here, outside the lock
        return (snapshot, released)
    }

    /// The value of `type` retained for `subject` (which the caller keeps alive), if any.
    func retainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        state.withLock { $0.retainedValues(of: ObjectIdentifier(type))?.entry(for: subject)?.value as? N }
    }

    /// Removes the value of `type` retained for `subject` and returns it; what the entry held is
    /// released after the lock.
    func removeRetainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        let (value, released) = state.withLock { state -> (N?, (any Sendable)?) in
            guard let index = state.bucket(ObjectIdentifier(type)) else { return (nil, nil) }
            let value = state.buckets[index].retainedValues.entry(for: subject)?.value as? N
            return (value, state.buckets[index].retainedValues.removeEntry(for: subject))
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return value
    }

    /// Removes the value of `N` retained for `subject` if `shouldRemove` says so; returns whether
    /// it did.
    ///
    /// `shouldRemove` (an `==`, for example) is user code, so it never runs under the lock: the
    /// current value is copied with its sequence number under the lock, judged after it, and
    /// removed under the lock again only if its entry still has that sequence number. If a
    /// retaining post replaced it in between, the newer value is judged in turn (if it was removed
    /// instead, the next round finds none). Each retry follows a retaining post or a removal that
    /// succeeded, so the loop ends as soon as the value stops changing. Values are released after
    /// the lock.
    func removeRetainedValue<N: TypedNotification>(
        of type: N.Type, subject: AnyObject?, where shouldRemove: (N) throws -> Bool
    ) rethrows -> Bool {
        let key = ObjectIdentifier(type)
        while true {
            // The copy is released at the end of each round, outside the lock.
            let current = state.withLock { state -> (value: N, sequence: UInt64)? in
                guard let entry = state.retainedValues(of: key)?.entry(for: subject), let value = entry.value as? N
                else { return nil }
                return (value, entry.sequence)
            }
            guard let current, try shouldRemove(current.value) else { return false }
            let removed = state.withLock { state -> (any Sendable)? in
                guard let index = state.bucket(key) else { return nil }
                return state.buckets[index].retainedValues.remove(for: subject, ifSequence: current.sequence)
            }
            if removed != nil { return true }  // the value is released here, outside the lock
        }
    }

    /// Removes every retained value of `type`, or of every type when `type` is `nil`, and returns
    /// how many belonged to live subjects (or to none). The values are released after the lock.
    func removeAllRetainedValues(of type: (any TypedNotification.Type)?) -> Int {
        let removals = state.withLock { state in
            let indices =
                type.map { state.bucket(ObjectIdentifier($0)).map { [$0] } ?? [] }
                ?? Array(state.buckets.indices)
            return indices.map { state.buckets[$0].retainedValues.removeAll() }
        }
        return removals.reduce(0) { $0 + $1.count }  // the values go with `removals`, outside the lock
    }

    /// Registers `observer`, which has a mailbox or a stream, with the retained values it matches
    /// preloaded into it, in one critical section: they come before any live post.
    ///
    /// - Returns: Whether the observer's drain must be scheduled.
    func addPreloaded<N: TypedNotification>(_ observer: Observer<N>) -> Bool {
        let (mustSchedule, dropped, replaced, change) = state.withLock {
            state -> (Bool, [N], ObserverSnapshot?, RegistryChange?) in
            let (mustSchedule, dropped) = observer.preload(state.replays(for: observer, after: 0))
            let (replaced, change) = add(observer, in: &state)
            return (mustSchedule, dropped, replaced, change)
        }
        if let change { didChange(change) }
        withExtendedLifetime((dropped, replaced)) {}  // released here, outside the locks
        return mustSchedule
    }

    /// One round of a posting-thread observer's replaying registration: the retained values it
    /// matches that were retained after sequence number `seen`, and the latest sequence number.
    /// Registers `observer` in the same critical section if there are none, or if `force`.
    func replayRound<N: TypedNotification>(
        _ observer: Observer<N>, after seen: UInt64, force: Bool
    ) -> (replays: [RetainedValues.Replay<N>], latest: UInt64, added: Bool) {
        let (replays, latest, added, change, replaced) = state.withLock {
            state -> ([RetainedValues.Replay<N>], UInt64, Bool, RegistryChange?, ObserverSnapshot?) in
            let replays = state.replays(for: observer, after: seen)
            guard replays.isEmpty || force else { return (replays, state.retainSequence, false, nil, nil) }
            let (replaced, change) = add(observer, in: &state)
            return (replays, state.retainSequence, true, change, replaced)
        }
        if let change { didChange(change) }
        withExtendedLifetime(replaced) {}  // released here, outside the locks
        return (replays, latest, added)
    }

    // MARK: Posts

    /// The buckets. Retained values live in the same buckets, under the same lock, so that a
    /// retaining post and a replaying registration are atomic with respect to each other.
    /// Private: every critical section is one of this file's methods, which release what they
    /// let go of after the lock.
    private let state = Lock(RegistryState(), rank: .registry)

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

    override init() {
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
        // The calling thread's shard: threads take the shards in turn, in the order they first
        // post, so threads that start posting about the same time use different shards. Two threads
        // share one only when a multiple of `shardCount` threads first posted between them.
        let index = Int(truncatingIfNeeded: Self.threadNumbers.current & UInt(Self.shardCount - 1))
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
            state.markCached(key, inShard: index)
            let (bucket, released) = state.bucket(key, type: type, sample: payload)
            return (
                state.generation, state.familyGeneration, bucket.map { state.buckets[$0].snapshotForShard() }, released
            )
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
    /// registry lock, so the change sees that mark. Inlined: most changes clear no shard, and
    /// then cost a test of `shards` rather than a call.
    @inline(__always) private func didChange(_ change: RegistryChange) {
        var remaining = change.shards
        while remaining != 0 {
            let index = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            let cleared = shards[index].table.withLock { $0.invalidate(change.key, generation: change.generation) }
            withExtendedLifetime(cleared) {}  // released here, after the lock
        }
    }

    /// The numbers of the posting threads, shared by every hub.
    private static let threadNumbers = ThreadNumbers()
}
