import Foundation
import Synchronization

/// The observers of one notification type, split by how they are called.
///
/// The registry mutates a bucket only while it holds its lock. Posts read the observer lists
/// without any lock (see ``post(_:subject:)``), which is why a bucket lives as long as the hub.
/// A list that is replaced goes to ``Reclamation``, which frees it once no post can be scanning it.
class AnyBucket: @unchecked Sendable {  // Mutated only under `HubCore.buckets`' lock; see `post`.
    typealias ListSlot = Atomic<Unmanaged<ObserverList>?>

    /// Posting-thread observers, in registration order. The bucket owns one reference.
    fileprivate let postingList = ListSlot(nil)
    /// Observers with a lane, in registration order. The bucket owns one reference.
    fileprivate let queuedList = ListSlot(nil)
    /// Registrations not yet cancelled.
    var liveCount = 0
    /// Cancelled registrations still in the lists of a large type; removed in batches.
    var deadCount = 0

    // MARK: Posting without a lock

    /// Delivers a fire-and-forget post: enqueues it for every observer with a lane, then calls
    /// every posting-thread observer, in registration order.
    ///
    /// It takes no lock, makes no atomic read-modify-write and no heap allocation when only
    /// posting-thread observers match. The lists it scans are the ones published when it starts;
    /// a list replaced meanwhile stays alive until no post scans it (see ``Reclamation``).
    ///
    /// - Returns: Whether the post reached at least one observer.
    @inline(never)  // keeps this scan out of generic callers, where it would run unspecialised
    func post(_ payload: UnsafeRawPointer, subject: AnyObject?) -> Bool {
        withLists { queuedObservers, postingObservers in
            var reached = false
            let subjectID = subject.map(ObjectIdentifier.init)
            for observer in queuedObservers {
                observer._withUnsafeGuaranteedRef { observer in
                    if observer.accepts(subject) && observer.enqueue(payload, subjectID: subjectID, group: nil) {
                        reached = true
                    }
                }
            }
            for observer in postingObservers {
                observer._withUnsafeGuaranteedRef { observer in
                    if observer.accepts(subject) {
                        reached = true
                        observer.deliver(payload, subjectID: subjectID)
                    }
                }
            }
            return reached
        }
    }

    /// Runs `body` with the observer lists published when it starts (queued, then posting), and
    /// keeps them alive until it returns: it runs in a read section (see ``Reclamation``).
    @inline(__always)
    func withLists<R>(
        _ body: (UnsafeBufferPointer<Unmanaged<AnyObserver>>, UnsafeBufferPointer<Unmanaged<AnyObserver>>) -> R
    ) -> R {
        Reclamation.reading(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())) {
            // Sequentially consistent (a plain load on x86-64, the same as acquiring on ARMv8):
            // see `Reclamation.retire` for the thread that registers its record meanwhile.
            let queued = queuedList.load(ordering: .sequentiallyConsistent)
            let posting = postingList.load(ordering: .sequentiallyConsistent)
            let empty = UnsafeBufferPointer<Unmanaged<AnyObserver>>(start: nil, count: 0)
            return body(
                queued?._withUnsafeGuaranteedRef { $0.observers } ?? empty,
                posting?._withUnsafeGuaranteedRef { $0.observers } ?? empty
            )
        }
    }

    // MARK: Registry (under the registry lock)

    /// Adds a registration at the end of its list.
    ///
    /// - Returns: What must be released once the registry lock is no longer held.
    func add(_ observer: AnyObserver) -> RetiredLists {
        liveCount += 1
        let isPosting = observer.flags & AnyObserver.Flags.isPosting != 0
        return isPosting ? append(observer, to: postingList) : append(observer, to: queuedList)
    }

    /// Takes a cancelled registration out of its list.
    ///
    /// While the type has at most 64 observers, the list is rebuilt without it at once, so the
    /// registry stops holding its handler (and whatever the handler captures) as soon as
    /// `cancel()` returns. Above that, lists are rebuilt in batches, once one entry in eight is
    /// cancelled, so that cancelling many observers one by one stays linear instead of
    /// quadratic; until then a cancelled entry is skipped by every post (it is never called
    /// again) and released with the next batch. Old lists, and with them the observers, are
    /// released once the registry lock is no longer held and no post scans them.
    ///
    /// - Returns: What must be released once the registry lock is no longer held.
    /// - Complexity: Amortised O(1) per cancelled observer in a large type; O(*n*) for at most 64.
    func remove(_ observer: AnyObserver) -> RetiredLists {
        liveCount -= 1
        if liveCount == 0 {
            deadCount = 0
            return removeObservers()  // the retained values stay
        }
        deadCount += 1
        guard liveCount + deadCount <= 64 || deadCount * 8 >= liveCount else { return RetiredLists() }
        deadCount = 0
        return rebuild(postingList) + rebuild(queuedList)
    }

    /// Drops every registration.
    ///
    /// - Returns: What must be released once the registry lock is no longer held.
    func removeObservers() -> RetiredLists {
        liveCount = 0
        return replace(postingList, with: nil) + replace(queuedList, with: nil)
    }

    /// Drops every registration and whatever else the bucket holds.
    ///
    /// - Returns: What must be released once the registry lock is no longer held.
    func removeAll() -> RetiredLists {
        removeObservers()
    }

    private func append(_ observer: AnyObserver, to slot: borrowing ListSlot) -> RetiredLists {
        guard let current = slot.load(ordering: .relaxed) else {
            let list = ObserverList(capacity: 4)
            _ = list.append(observer)
            return replace(slot, with: list)
        }
        if current._withUnsafeGuaranteedRef({ $0.append(observer) }) { return RetiredLists() }
        let old = current.takeUnretainedValue()
        let grown = old.copy(capacity: old.capacity * 2)
        _ = grown.append(observer)
        return replace(slot, with: grown)
    }

    private func rebuild(_ slot: borrowing ListSlot) -> RetiredLists {
        guard let current = slot.load(ordering: .relaxed) else { return RetiredLists() }
        let old = current.takeUnretainedValue()
        let survivors = old.observers.reduce(0) { $0 + ($1.takeUnretainedValue().isCancelledFlag ? 0 : 1) }
        if survivors == 0 { return replace(slot, with: nil) }
        let list = old.copy(capacity: max(4, survivors.roundedUpToPowerOfTwo)) { !$0.isCancelledFlag }
        return replace(slot, with: list)
    }

    /// Publishes `list` in `slot` and retires the list it replaces.
    private func replace(_ slot: borrowing ListSlot, with list: ObserverList?) -> RetiredLists {
        let new = list.map { Unmanaged.passRetained($0) }
        let old = slot.exchange(new, ordering: .sequentiallyConsistent)
        guard let old else { return RetiredLists() }
        return RetiredLists(old.takeRetainedValue(), of: self)  // the bucket's reference
    }

    /// The observers in `slot`, as their concrete type. Call under the registry lock.
    fileprivate static func array<N: TypedNotification>(
        in slot: borrowing ListSlot, of type: N.Type
    ) -> ContiguousArray<Observer<N>> {
        slot.load(ordering: .acquiring)?.takeUnretainedValue().array(of: type) ?? []
    }

    deinit {
        postingList.load(ordering: .acquiring)?.release()
        queuedList.load(ordering: .acquiring)?.release()
    }
}

/// Observer lists replaced under the registry lock, for ``Reclamation`` once the lock is released.
struct RetiredLists: Sendable {
    private(set) var lists: [ObserverList] = []
    /// The address of the bucket the lists belonged to, which read sections announce.
    private var scope: UInt = 0

    init() {}

    init(_ list: ObserverList, of bucket: AnyBucket) {
        lists = [list]
        scope = UInt(bitPattern: Unmanaged.passUnretained(bucket).toOpaque())
    }

    /// Both sides' lists; they must come from the same bucket (one scope).
    static func + (lhs: RetiredLists, rhs: RetiredLists) -> RetiredLists {
        guard !lhs.lists.isEmpty else { return rhs }
        assert(rhs.lists.isEmpty || rhs.scope == lhs.scope, "Herald: retired lists of two buckets")
        var sum = lhs
        sum.lists += rhs.lists
        return sum
    }

    /// Hands the lists to ``Reclamation``. Call without holding a lock: freeing a list can release
    /// observers, and with them anything their handlers captured.
    func release() {
        Reclamation.retire(lists, scope: UnsafeRawPointer(bitPattern: scope))
    }
}

/// The bucket of notification type `N`.
final class Bucket<N: TypedNotification>: AnyBucket, @unchecked Sendable {
    /// The retained (sticky) values of this type, per subject. They outlive the observers.
    var retained = RetainedValues<N>()

    override func removeAll() -> RetiredLists {
        retained = RetainedValues<N>()
        return super.removeAll()
    }

    /// Posting-thread observers, in registration order. Read under the registry lock.
    var posting: ContiguousArray<Observer<N>> { Self.array(in: postingList, of: N.self) }
    /// Observers with a lane, in registration order. Read under the registry lock.
    var queued: ContiguousArray<Observer<N>> { Self.array(in: queuedList, of: N.self) }
}

/// The observers of one type at the moment of a post. Observers added later are not in it.
struct Snapshot<N: TypedNotification>: Sendable {
    let posting: ContiguousArray<Observer<N>>
    let queued: ContiguousArray<Observer<N>>
}

/// The hub's error handler, as stored behind its lock.
///
/// Closures behind a ``Lock`` are always wrapped in a struct. A bare function type stored in a
/// generic container is re-abstracted on every `inout` access, so each `withLock` would wrap the
/// stored closure in two more thunks: a long-lived hub would call its handler through an ever
/// deeper chain, growing memory on every report until the stack overflows. A struct's field
/// keeps the closure as it was stored.
struct ErrorHandler: Sendable {
    let call: @Sendable (ObserverFailure) -> Void
}

/// The hub's unobserved-post handler, as stored behind its lock (see ``ErrorHandler``).
struct UnobservedPostHandler: Sendable {
    let call: @Sendable (UnobservedPost) -> Void
}

/// The state behind a ``NotificationHub``: the registry, the error handler and the counters.
///
/// Observers keep the core alive, so deliveries queued when the hub is deallocated still run and
/// still report their errors.
final class HubCore: Sendable {
    /// The registry: one bucket per notification type, created on first registration and kept
    /// until the hub is deallocated. Retained values live in the same buckets, under the same lock,
    /// so that a retaining post and a replaying registration are atomic with respect to each other.
    let buckets = Lock<[ObjectIdentifier: AnyBucket]>([:])
    /// The same buckets, for posts, which read it without a lock.
    let index = TypeIndex()
    private let errorHandler = Lock(ErrorHandler(call: HubCore.writeToStandardError))
    private let unobservedHandler = Lock<UnobservedPostHandler?>(nil)
    let unobservedCount = Atomic<Int>(0)

    // MARK: Registry

    /// Delivers a fire-and-forget post without taking a lock.
    ///
    /// - Parameters:
    ///   - payload: The notification, of the type whose identity is `key`.
    ///   - key: `ObjectIdentifier` of the notification type.
    ///   - subject: The post's subject.
    /// - Returns: Whether the post reached at least one observer.
    @inline(__always)
    func post(_ payload: UnsafeRawPointer, key: ObjectIdentifier, subject: AnyObject?) -> Bool {
        guard let bucket = index.bucket(for: key) else { return false }
        return bucket._withUnsafeGuaranteedRef { $0.post(payload, subject: subject) }
    }

    func snapshot<N: TypedNotification>(of type: N.Type) -> Snapshot<N>? {
        buckets.withLock { buckets -> Snapshot<N>? in
            guard let bucket = buckets[ObjectIdentifier(type)] else { return nil }
            let typed = unsafeDowncast(bucket, to: Bucket<N>.self)
            return Snapshot(posting: typed.posting, queued: typed.queued)
        }
    }

    func add<N: TypedNotification>(_ observer: Observer<N>) {
        let retired = buckets.withLock { buckets -> RetiredLists in
            bucket(of: N.self, in: &buckets).add(observer)
        }
        retired.release()  // outside the lock
    }

    /// The bucket of `type`, created and indexed if needed. Call under the registry lock.
    func bucket<N: TypedNotification>(of type: N.Type, in buckets: inout [ObjectIdentifier: AnyBucket]) -> Bucket<N> {
        let key = ObjectIdentifier(type)
        if let existing = buckets[key] {
            return unsafeDowncast(existing, to: Bucket<N>.self)
        }
        let bucket = Bucket<N>()
        buckets[key] = bucket
        index.insert(bucket, for: key)
        return bucket
    }

    /// Ends `observer`'s registration, so that the hub no longer holds its handler, nor anything
    /// the handler captures, once ``AnyObserver/cancel()`` returns.
    ///
    /// What the registry lets go of is released after the lock: releasing a handler can run any
    /// `deinit`, and one that cancels another observation or releases the hub needs this lock.
    func remove<N: TypedNotification>(_ observer: Observer<N>) {
        let retired = buckets.withLock { buckets -> RetiredLists in
            guard let existing = buckets[ObjectIdentifier(N.self)] else { return RetiredLists() }
            return unsafeDowncast(existing, to: Bucket<N>.self).remove(observer)
        }
        retired.release()  // outside the lock
    }

    /// The live observers of `type`, in registration order (posting-thread observers first).
    /// Registrations whose owner or subject has been deallocated are ended first.
    func observers<N: TypedNotification>(of type: N.Type) -> [Observer<N>] {
        guard let snapshot = snapshot(of: type) else { return [] }
        return (snapshot.posting + snapshot.queued).filter { !$0.isCancelled }
    }

    /// Drops every registration; used when the hub is deallocated.
    func removeAll() {
        let all = buckets.withLock { buckets in
            defer {
                buckets = [:]
                index.removeAll()
            }
            return Array(buckets.values)
        }
        for bucket in all {
            bucket.removeAll().release()
        }
    }

    // MARK: Errors and diagnostics

    var errorHandlerValue: @Sendable (ObserverFailure) -> Void {
        get { errorHandler.withLock { $0 }.call }
        set { errorHandler.withLock { $0 = ErrorHandler(call: newValue) } }
    }

    var unobservedHandlerValue: (@Sendable (UnobservedPost) -> Void)? {
        get { unobservedHandler.withLock { $0 }?.call }
        set { unobservedHandler.withLock { $0 = newValue.map(UnobservedPostHandler.init(call:)) } }
    }

    func report(_ failure: ObserverFailure) {
        let handler = errorHandler.withLock { $0 }
        handler.call(failure)
    }

    func noteUnobserved(_ type: any Any.Type, hadSubject: Bool) {
        unobservedCount.add(1, ordering: .relaxed)
        if let handler = unobservedHandler.withLock({ $0 }) {
            handler.call(UnobservedPost(notificationType: String(describing: type), hadSubject: hadSubject))
        }
    }

    @Sendable
    static func writeToStandardError(_ failure: ObserverFailure) {
        FileHandle.standardError.write(Data("Herald: \(failure)\n".utf8))
    }
}
