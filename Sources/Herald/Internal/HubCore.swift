import Foundation
import Synchronization

/// The observers of one notification type, split by how they are called.
///
/// Buckets are only touched while the hub's registry lock is held.
class AnyBucket: @unchecked Sendable {  // Mutated only under `HubCore.buckets`' lock.
    func removeAll() {}
}

final class Bucket<N: Sendable>: AnyBucket, @unchecked Sendable {
    /// Posting-thread observers, in registration order.
    var posting = ContiguousArray<Observer<N>>()
    /// Observers with a lane, in registration order.
    var queued = ContiguousArray<Observer<N>>()
    /// Registrations not yet cancelled.
    var liveCount = 0
    /// The retained (sticky) values of this type, per subject. They outlive the observers.
    var retained = RetainedValues<N>()

    override func removeAll() {
        removeObservers()
        retained = RetainedValues<N>()
    }

    /// Drops every registration and keeps the retained values.
    func removeObservers() {
        posting = []
        queued = []
        liveCount = 0
    }

    /// Takes `observer` out of its list at once, so that the registry stops holding its handler.
    ///
    /// - Returns: The observer, for the caller to release once the registry lock is no longer
    ///   held; `nil` if it is not registered.
    /// - Complexity: O(*n*) in the observers of this type.
    func remove(_ observer: Observer<N>) -> Observer<N>? {
        if let index = posting.firstIndex(where: { $0 === observer }) {
            liveCount -= 1
            return posting.remove(at: index)
        }
        if let index = queued.firstIndex(where: { $0 === observer }) {
            liveCount -= 1
            return queued.remove(at: index)
        }
        return nil
    }
}

/// The observers of one type at the moment of a post. Observers added later are not in it.
struct Snapshot<N: Sendable>: Sendable {
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
    /// The registry. Retained values live in the same buckets, under the same lock, so that a
    /// retaining post and a replaying registration are atomic with respect to each other.
    let buckets = Lock<[ObjectIdentifier: AnyBucket]>([:])
    private let errorHandler = Lock(ErrorHandler(call: HubCore.writeToStandardError))
    private let unobservedHandler = Lock<UnobservedPostHandler?>(nil)
    let unobservedCount = Atomic<Int>(0)

    // MARK: Registry

    @inline(__always)
    func snapshot<N: Sendable>(of type: N.Type) -> Snapshot<N>? {
        buckets.withLock { buckets -> Snapshot<N>? in
            guard let bucket = buckets[ObjectIdentifier(type)] else { return nil }
            let typed = unsafeDowncast(bucket, to: Bucket<N>.self)
            return Snapshot(posting: typed.posting, queued: typed.queued)
        }
    }

    func add<N: Sendable>(_ observer: Observer<N>) {
        buckets.withLock { buckets in
            let key = ObjectIdentifier(N.self)
            let bucket: Bucket<N>
            if let existing = buckets[key] {
                bucket = unsafeDowncast(existing, to: Bucket<N>.self)
            } else {
                bucket = Bucket<N>()
                buckets[key] = bucket
            }
            if observer.target.isPosting {
                bucket.posting.append(observer)
            } else {
                bucket.queued.append(observer)
            }
            bucket.liveCount += 1
        }
    }

    /// Ends `observer`'s registration, so that the hub no longer holds its handler, nor anything
    /// the handler captures, once ``Observer/cancel()`` returns.
    ///
    /// The observer leaves the registry after the lock is released: releasing a handler can run
    /// any `deinit`, and one that cancels another observation or releases the hub needs this lock.
    func remove<N: Sendable>(_ observer: Observer<N>) {
        let removed = buckets.withLock { buckets -> Observer<N>? in
            guard let existing = buckets[ObjectIdentifier(N.self)] else { return nil }
            return unsafeDowncast(existing, to: Bucket<N>.self).remove(observer)
        }
        withExtendedLifetime(removed) {}  // released here, outside the lock
    }

    /// The live observers of `type`, in registration order (posting-thread observers first).
    /// Registrations whose owner or subject has been deallocated are ended first.
    func observers<N: Sendable>(of type: N.Type) -> [Observer<N>] {
        guard let snapshot = snapshot(of: type) else { return [] }
        return (snapshot.posting + snapshot.queued).filter { !$0.isCancelled }
    }

    /// Drops every registration; used when the hub is deallocated.
    func removeAll() {
        let all = buckets.withLock { buckets in
            defer { buckets = [:] }
            return Array(buckets.values)
        }
        for bucket in all { bucket.removeAll() }
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

    func noteUnobserved<N>(_ type: N.Type, hadSubject: Bool) {
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
