/// One post shard: a table from notification type to snapshot, behind its own lock.
final class PostShard: Sendable {
    /// Keeps the lock off the cache lines of whatever was allocated just before the shard.
    private let leadingPadding = CacheLinePadding()
    let table = Lock(SnapshotTable(), rank: .postShard)
    /// Keeps the next shard's lock off this one's cache lines: the shards are made one after
    /// another, and threads posting through two shards would otherwise write the same line.
    private let trailingPadding = CacheLinePadding()
}

/// A post shard's entry for one notification type: the snapshot it caches, with the generation of
/// the change it reflects and the family generation it was read at (see ``SnapshotTable``).
struct SnapshotEntry: Sendable {
    var generation: UInt64 = 0
    /// The registry's family generation when the snapshot was read (see ``Registry``), or
    /// ``SnapshotEntry/invalid`` while the entry holds none: one word, so that a slot stays
    /// 32 bytes and a lookup compares once.
    var familyGeneration = SnapshotEntry.invalid
    var snapshot: ObserverSnapshot?

    /// The family generation of an entry without a valid snapshot; the registry's never reaches it.
    static let invalid = UInt64.max
}

/// A post shard's table from notification type to the snapshot it caches; one entry per type
/// ever posted from the shard.
typealias SnapshotTable = IdentityTable<SnapshotEntry>

extension SnapshotTable {
    /// A table for a new shard.
    init() { self.init(capacity: 8, empty: SnapshotEntry()) }

    /// The snapshot of `key`, carried out of the shard's lock (retained); a hit only if it was
    /// read at family generation `familyGeneration`.
    @inline(__always)
    func lookup(_ key: ObjectIdentifier, familyGeneration: UInt64) -> (isHit: Bool, snapshot: ObserverSnapshot?) {
        let entry = self[key]
        return (entry.familyGeneration == familyGeneration, entry.snapshot)
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
            defer {
                entry = SnapshotEntry(generation: generation, familyGeneration: familyGeneration, snapshot: snapshot)
            }
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
