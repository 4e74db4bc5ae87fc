/// The registrations of one notification type, and its retained values. Touched only under the
/// registry lock.
///
/// A registration or cancellation changes a list in O(1) (amortised) and drops the published
/// snapshot; the next post, or the next reader that needs one, builds a new snapshot from the
/// lists. So *n* registrations in a row cost O(*n*), not O(*n*²), and churn that no post sees
/// allocates no snapshot at all.
class AnyBucket: @unchecked Sendable {  // Mutated only under `Registry.state`'s lock.
    // Only touched under the registry lock, so the exclusivity checks are left out.
    /// Observers with a lane or a stream, in registration order.
    @exclusivity(unchecked) private var queued = ObserverList()
    /// Posting-thread observers, in registration order.
    @exclusivity(unchecked) private var posting = ObserverList()
    /// The snapshot of the current lists, once something asked for it; `nil` after a change.
    @exclusivity(unchecked) private var published: ObserverSnapshot?
    /// Whether a post shard holds `published` itself (the other shards hold copies).
    @exclusivity(unchecked) private var publishedInShard = false

    /// Whether the type has no observers.
    var isEmpty: Bool { queued.count == 0 && posting.count == 0 }

    /// Adds `observer` at the end of its list.
    ///
    /// - Returns: The snapshot it outdates, to release once the lock is no longer held.
    func add(_ observer: AnyObserver) -> ObserverSnapshot? {
        if observer.isPosting {
            posting.append(observer)
        } else {
            queued.append(observer)
        }
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
    func remove(_ observer: AnyObserver) -> (AnyObserver, ObserverSnapshot?)? {
        let removed = observer.isPosting ? posting.remove(observer) : queued.remove(observer)
        guard let removed else { return nil }
        return (removed, unpublish())
    }

    private func unpublish() -> ObserverSnapshot? {
        defer {
            published = nil
            publishedInShard = false
        }
        return published
    }

    /// The snapshot of the current observers, built if a change outdated the last one; `nil` if
    /// there are none.
    func snapshot() -> ObserverSnapshot? {
        if let published { return published }
        guard !isEmpty else { return nil }
        let snapshot = ObserverSnapshot(queued: queued.observers, posting: posting.observers)
        published = snapshot
        return snapshot
    }

    /// The snapshot for a post shard to cache: the published one for the first shard, a copy
    /// for the others, so that threads posting through different shards do not share a reference
    /// count.
    func snapshotForShard() -> ObserverSnapshot? {
        guard let current = snapshot() else { return nil }
        if publishedInShard { return current.copy() }
        publishedInShard = true
        return current
    }

    /// Drops every registration and retained value.
    ///
    /// - Returns: What the bucket held, to release once the lock is no longer held.
    func removeAll() -> [any Sendable] {
        defer {
            queued = ObserverList()
            posting = ObserverList()
            published = nil
        }
        return [Box(queued), Box(posting), published]
    }

    /// Drops the retained values, keeping the registrations. Overridden by ``Bucket``, which
    /// holds them.
    ///
    /// - Returns: The number of values that belonged to live subjects (or to no subject), and
    ///   the values, to release once the lock is no longer held.
    func removeRetainedValues() -> (count: Int, released: (any Sendable)?) {
        (0, nil)
    }
}

/// The bucket of notification type `N`.
final class Bucket<N: TypedNotification>: AnyBucket, @unchecked Sendable {  // See AnyBucket.
    /// The retained (sticky) values of this type, per subject. They outlive the observers.
    var retained = RetainedValues<N>()

    override func removeAll() -> [any Sendable] {
        let values = retained
        retained = RetainedValues<N>()
        return super.removeAll() + [Box(values)]
    }

    override func removeRetainedValues() -> (count: Int, released: (any Sendable)?) {
        // Keeps the sequence numbers running, so a removal comparing outside the lock never
        // mistakes a value retained afterwards for the one it compared.
        let (count, values) = retained.removeAll()
        return (count, values)
    }
}

/// Observers in registration order, with O(1) removal: a removed observer leaves a hole, and the
/// holes are squeezed out once they outnumber the observers. Each observer knows its slot.
struct ObserverList {
    private var slots: ContiguousArray<AnyObserver?> = []
    /// The number of observers (slots that are not holes).
    private(set) var count = 0

    /// The observers, in registration order.
    var observers: some Collection<AnyObserver> { slots.lazy.compactMap { $0 } }

    mutating func append(_ observer: AnyObserver) {
        if slots.count == slots.capacity && slots.count > count { compact() }
        observer.registrySlot = slots.count
        slots.append(observer)
        count += 1
    }

    /// Takes `observer` out, if it is in the list.
    ///
    /// - Returns: The list's reference to it, to release after the registry lock.
    mutating func remove(_ observer: AnyObserver) -> AnyObserver? {
        let index = observer.registrySlot
        guard index >= 0, index < slots.count, slots[index] === observer else { return nil }
        observer.registrySlot = -1
        if index == slots.count - 1 {
            // The latest registration, the usual one to cancel first: no hole.
            count -= 1
            let removed = slots.removeLast()
            while let last = slots.last, last == nil { slots.removeLast() }
            return removed
        }
        defer {
            count -= 1
            if count == 0 {
                slots.removeAll(keepingCapacity: slots.capacity <= 16)
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
            next += 1
        }
        slots.removeLast(slots.count - next)
    }
}

/// A value carried out of a lock as an object, to be released after it.
final class Box<Value>: @unchecked Sendable {  // Only moved out of a lock and dropped, never read.
    let value: Value
    init(_ value: Value) { self.value = value }
}
