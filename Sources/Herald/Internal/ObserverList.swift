import Synchronization

/// An append-only array of observers that posts scan without taking a lock.
///
/// The registry appends under its lock: it writes the new slot, then publishes the new count with
/// a releasing store. A post loads the count once (acquiring) and scans that many slots, so an
/// observer appended during the scan is not part of that post. A list never shrinks: removing
/// observers means building a new list and retiring this one (see ``Bucket``).
final class ObserverList: @unchecked Sendable {  // Slots below `published` are immutable.
    let capacity: Int
    private let published = Atomic<Int>(0)
    private let slots: UnsafeMutablePointer<Unmanaged<AnyObserver>>

    init(capacity: Int) {
        self.capacity = capacity
        self.slots = .allocate(capacity: capacity)
    }

    deinit {
        for index in 0..<published.load(ordering: .acquiring) {
            slots[index].release()
        }
        slots.deallocate()
    }

    /// The observers published so far; stable for as long as the list is alive.
    @inline(__always)
    var observers: UnsafeBufferPointer<Unmanaged<AnyObserver>> {
        UnsafeBufferPointer(start: slots, count: published.load(ordering: .acquiring))
    }

    /// Appends `observer` if there is room. Only the registry calls this, under its lock.
    ///
    /// - Returns: `false` when the list is full.
    func append(_ observer: AnyObserver) -> Bool {
        let count = published.load(ordering: .relaxed)
        guard count < capacity else { return false }
        slots[count] = .passRetained(observer)
        published.store(count + 1, ordering: .releasing)
        return true
    }

    /// A new list with room for `capacity` observers, holding those of this list that pass `keep`.
    func copy(capacity: Int, keeping keep: (AnyObserver) -> Bool = { _ in true }) -> ObserverList {
        let copy = ObserverList(capacity: capacity)
        for observer in observers where keep(observer.takeUnretainedValue()) {
            _ = copy.append(observer.takeUnretainedValue())
        }
        return copy
    }

    /// The observers as an array of their concrete type, in registration order.
    func array<N: TypedNotification>(of type: N.Type) -> ContiguousArray<Observer<N>> {
        ContiguousArray(observers.lazy.map { unsafeDowncast($0.takeUnretainedValue(), to: Observer<N>.self) })
    }
}

/// A map from notification type to bucket that posts read without taking a lock.
///
/// Open addressing over the type's metadata address. The registry inserts under its lock: it
/// writes the value, then publishes the key with a releasing store. When the table fills up to
/// half, the registry publishes a twice-as-large copy; older tables stay alive until the hub core
/// is deallocated, because a post may still be reading one (their total size is less than the
/// newest table's). Buckets are never removed while the hub lives.
final class TypeIndex: @unchecked Sendable {  // Mutated only under the registry lock; see above.
    private final class Table: @unchecked Sendable {
        let mask: Int
        let shift: Int
        let keys: UnsafeMutablePointer<Atomic<UInt>>
        let values: UnsafeMutablePointer<Unmanaged<AnyBucket>?>
        var count = 0

        init(capacity: Int) {
            mask = capacity - 1
            shift = UInt.bitWidth - capacity.trailingZeroBitCount
            keys = .allocate(capacity: capacity)
            values = .allocate(capacity: capacity)
            for index in 0..<capacity {
                (keys + index).initialize(to: Atomic(0))
                (values + index).initialize(to: nil)
            }
        }

        deinit {
            keys.deinitialize(count: mask + 1)
            keys.deallocate()
            values.deallocate()
        }

        @inline(__always)
        func slot(of key: UInt) -> Int {
            Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt(shift))
        }

        @inline(__always)
        func find(_ key: UInt) -> Unmanaged<AnyBucket>? {
            var index = slot(of: key)
            while true {
                let found = keys[index].load(ordering: .acquiring)
                if found == key { return values[index] }
                if found == 0 { return nil }
                index = (index + 1) & mask
            }
        }

        func insert(_ key: UInt, _ value: Unmanaged<AnyBucket>) {
            var index = slot(of: key)
            while keys[index].load(ordering: .relaxed) != 0 {
                index = (index + 1) & mask
            }
            values[index] = value
            keys[index].store(key, ordering: .releasing)
            count += 1
        }
    }

    private let current = Atomic<Unmanaged<Table>?>(nil)
    /// Every table ever published, newest last; they are freed with the index.
    private var tables: [Table] = []
    /// Set by ``removeAll()``: the next insert starts a new, empty table.
    private var isCleared = false

    /// The bucket of `key`, without a lock. The bucket lives as long as the hub core.
    @inline(__always)
    func bucket(for key: ObjectIdentifier) -> Unmanaged<AnyBucket>? {
        guard let table = current.load(ordering: .acquiring) else { return nil }
        return table._withUnsafeGuaranteedRef { $0.find(UInt(bitPattern: key)) }
    }

    /// Adds a bucket. Call under the registry lock; the bucket must stay alive until ``removeAll()``.
    func insert(_ bucket: AnyBucket, for key: ObjectIdentifier) {
        let value = Unmanaged.passUnretained(bucket)
        let previous = isCleared ? nil : tables.last
        isCleared = false
        if let table = previous, (table.count + 1) * 2 <= table.mask + 1 {
            table.insert(UInt(bitPattern: key), value)
            return
        }
        let capacity = max(16, ((previous?.count ?? 0) + 1) * 4).roundedUpToPowerOfTwo
        let table = Table(capacity: capacity)
        if let old = previous {
            for index in 0...old.mask {
                let key = old.keys[index].load(ordering: .relaxed)
                if key != 0, let value = old.values[index] { table.insert(key, value) }
            }
        }
        table.insert(UInt(bitPattern: key), value)
        tables.append(table)
        current.store(.passUnretained(table), ordering: .releasing)
    }

    /// Forgets every bucket; posts find none afterwards. Call under the registry lock.
    func removeAll() {
        current.store(nil, ordering: .releasing)
        isCleared = true
        // The tables stay alive: a post that started before may still read them.
    }
}

extension Int {
    var roundedUpToPowerOfTwo: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
