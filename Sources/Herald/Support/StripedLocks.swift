/// A fixed set of locks that many small objects share, each object using the lock its address
/// picks: for an object with no room for a lock of its own. An ``ObservationToken`` stays one
/// reference, in the allocator's 32-byte chunks, where a `Mutex` beside the reference would move
/// it to the 48-byte ones; its reads and its cancel take one of ``tokens``' locks instead.
///
/// Each lock is a ``Lock``: it passes priority to its holder (a priority-inheritance futex on
/// Linux, `os_unfair_lock` on Apple platforms) and tells ThreadSanitizer about itself. Two objects
/// that pick the same lock only wait for each other's few instructions under it.
struct StripedLocks: Sendable {
    private final class Stripe: Sendable {
        let lock = Lock((), rank: .token)
    }

    /// A power of two of them, so that a mask of the address picks one.
    private let stripes = (0..<64).map { _ in Stripe() }

    /// The locks of the ``ObservationToken``s.
    static let tokens = StripedLocks()

    /// Runs `body` holding the lock that `object`'s address picks.
    @inline(__always)
    func withLock<Result: Sendable>(for object: AnyObject, _ body: () -> Result) -> Result {
        let bits = UInt(bitPattern: ObjectIdentifier(object))
        // Objects are at least 16-byte aligned: skip the bits every address shares.
        let index = Int(truncatingIfNeeded: (bits >> 4) & UInt(stripes.count - 1))
        // The stripes live as long as the process: no reference count for the one used here.
        return Unmanaged.passUnretained(stripes[index])._withUnsafeGuaranteedRef { stripe in
            stripe.lock.withLock { _ in body() }
        }
    }
}
