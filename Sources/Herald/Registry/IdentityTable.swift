/// A table from a type's identity (an `ObjectIdentifier`) to a small value: the registry's table of
/// types (``TypeEntry``) and each post shard's table of cached snapshots (``SnapshotEntry``).
///
/// Open addressing with linear probing, at most half full, over a multiplicative (Fibonacci) hash
/// of the identity: cheaper than a `Dictionary`, whose hashing dominated a registration, and one
/// array read and one compare on a post's hit. Entries are never removed, only emptied: there is
/// one per type ever put in, and the key 0 (no type has it) marks a free slot.
///
/// A free slot holds the table's `empty` value, so ``subscript(_:)`` needs no branch for a key
/// that is absent: the shards' lookup, on every post, reads the slot it lands on either way.
/// (`Value` conforms to no protocol of its own, so that making the table's metadata at run time
/// checks no conformance.)
struct IdentityTable<Value: Sendable>: Sendable {
    struct Slot: Sendable {
        var key: UInt
        var value: Value
    }

    private var slots: ContiguousArray<Slot>
    private var count = 0
    /// The value of a key that is absent.
    private let empty: Value

    /// An empty table with room for `capacity` slots, a power of two, whose absent keys have the
    /// value `empty`.
    init(capacity: Int, empty: Value) {
        self.empty = empty
        slots = ContiguousArray(repeating: Slot(key: 0, value: empty), count: capacity)
    }

    /// The index of `key`'s slot, or of the free slot where it would go.
    @inline(__always)
    private func find(_ key: UInt) -> Int {
        let mask = slots.count - 1
        let shift = UInt(UInt.bitWidth - slots.count.trailingZeroBitCount)
        var index = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
        while true {
            let found = slots[index].key
            if found == key || found == 0 { return index }
            index = (index + 1) & mask
        }
    }

    /// The value of `key`, or the table's `empty` value if it has none.
    @inline(__always)
    subscript(_ key: ObjectIdentifier) -> Value {
        slots[find(UInt(bitPattern: key))].value
    }

    /// The index of `key`'s slot, inserted (holding the `empty` value) if needed; valid
    /// until the next insertion.
    @inline(__always)
    mutating func insert(_ key: ObjectIdentifier) -> (slot: Int, inserted: Bool) {
        let raw = UInt(bitPattern: key)
        let index = find(raw)
        if slots[index].key == raw { return (index, false) }
        return (insertNew(raw, at: index), true)
    }

    /// Puts `key`, which is absent and whose free slot is `index`, in the table, growing it if needed.
    @inline(never)
    private mutating func insertNew(_ key: UInt, at index: Int) -> Int {
        var index = index
        if (count + 1) * 2 > slots.count {
            let old = slots
            slots = ContiguousArray(repeating: Slot(key: 0, value: empty), count: old.count * 2)
            for slot in old where slot.key != 0 {
                slots[find(slot.key)] = slot
            }
            index = find(key)
        }
        slots[index].key = key
        count += 1
        return index
    }

    /// The value in slot `slot`, an index from ``insert(_:)``.
    @inline(__always)
    subscript(slot slot: Int) -> Value {
        get { slots[slot].value }
        _modify { yield &slots[slot].value }
    }

    /// Runs `body` on the value of `key`, inserted if needed.
    @inline(__always)
    mutating func update<R>(_ key: ObjectIdentifier, _ body: (inout Value) -> R) -> R {
        let slot = insert(key).slot
        return body(&self[slot: slot])
    }
}
