import Dispatch
import Testing

@testable import Herald

@Suite("SnapshotTable")
struct SnapshotTableTests {
    final class Key: Sendable {}

    func snapshot() -> ObserverSnapshot {
        ObserverSnapshot(queued: [AnyObserver](), posting: [AnyObserver]())
    }

    @Test("A type never stored is a miss with no snapshot")
    func missWhenAbsent() {
        let table = SnapshotTable()
        let lookup = table.lookup(ObjectIdentifier(Key.self), familyGeneration: 0)
        #expect(!lookup.isHit)
        #expect(lookup.snapshot == nil)
    }

    @Test("A stored snapshot is a hit only at the family generation it was read at")
    func hitAtItsFamilyGeneration() {
        var table = SnapshotTable()
        let key = ObjectIdentifier(Key.self)
        let stored = snapshot()
        #expect(table.store(stored, for: key, generation: 1, familyGeneration: 3) == nil)
        #expect(table.lookup(key, familyGeneration: 3).isHit)
        #expect(table.lookup(key, familyGeneration: 3).snapshot === stored)
        #expect(!table.lookup(key, familyGeneration: 4).isHit)
    }

    @Test("A snapshot read before a change is refused once the change has cleared the entry, and handed back")
    func staleStoreIsRefused() {
        var table = SnapshotTable()
        let key = ObjectIdentifier(Key.self)
        let first = snapshot()
        _ = table.store(first, for: key, generation: 1, familyGeneration: 0)
        #expect(table.invalidate(key, generation: 2) === first)
        let stale = snapshot()
        #expect(table.store(stale, for: key, generation: 1, familyGeneration: 0) === stale)
        #expect(!table.lookup(key, familyGeneration: 0).isHit)
        let fresh = snapshot()
        #expect(table.store(fresh, for: key, generation: 2, familyGeneration: 0) == nil)
        #expect(table.lookup(key, familyGeneration: 0).snapshot === fresh)
    }

    @Test("Through growth, every type keeps its own snapshot")
    func manyTypes() {
        var table = SnapshotTable()
        let keys = (0..<2_000).map { _ in Key() }
        let snapshots = keys.map { _ in snapshot() }
        for (index, key) in keys.enumerated() {
            _ = table.store(snapshots[index], for: ObjectIdentifier(key), generation: 1, familyGeneration: 0)
        }
        for (index, key) in keys.enumerated() {
            #expect(table.lookup(ObjectIdentifier(key), familyGeneration: 0).snapshot === snapshots[index])
        }
    }

    @Test(
        "Stores and clears racing under a shard's lock never leave an older snapshot than the latest stored, whatever their order"
    )
    func concurrentStoresAndClears() {
        let shard = PostShard()
        let key = ObjectIdentifier(Key.self)
        let snapshots = (0...400).map { _ in snapshot() }
        // Even generations store their snapshot; odd ones clear. The latest, 400, stores.
        DispatchQueue.concurrentPerform(iterations: 401) { generation in
            let released: ObserverSnapshot? = shard.table.withLock { table in
                if generation % 2 == 0 {
                    return table.store(
                        snapshots[generation], for: key, generation: UInt64(generation), familyGeneration: 0)
                }
                return table.invalidate(key, generation: UInt64(generation))
            }
            withExtendedLifetime(released) {}  // released after the lock, as the registry does
        }
        // A clear always clears (a miss only reads the registry again), so the entry holds either the
        // latest snapshot or none; never one that a later change outdated.
        let lookup = shard.table.withLock { $0.lookup(key, familyGeneration: 0) }
        #expect(lookup.isHit == (lookup.snapshot != nil))
        #expect(lookup.snapshot == nil || lookup.snapshot === snapshots[400])
        // Whatever was left, the next read's snapshot, of the latest change, is taken.
        let next = snapshot()
        let refused = shard.table.withLock { $0.store(next, for: key, generation: 400, familyGeneration: 0) }
        #expect(refused !== next)
        #expect(shard.table.withLock { $0.lookup(key, familyGeneration: 0).snapshot } === next)
    }
}
