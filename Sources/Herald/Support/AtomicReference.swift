import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An optional strong reference that any thread may read or replace, in one word.
///
/// The word holds the object's address, retained once by this reference (0 for `nil`), with bit
/// 0 set while a thread reads or replaces it: a spin lock held only for a retain or a swap, never
/// across other code. An object's address is aligned, so bit 0 of the address itself is always 0.
/// Used where a ``Lock`` would not fit: an ``ObservationToken`` stays one word beyond its object
/// header, the allocator's 32-byte size class.
struct AtomicReference<Object: AnyObject & Sendable>: ~Copyable, Sendable {
    private let word: Atomic<UInt>

    init(_ object: Object?) {
        word = Atomic(Self.bits(retaining: object))
    }

    deinit {
        Self.object(at: word.load(ordering: .acquiring))?.release()
    }

    /// The object now.
    func load() -> Object? {
        let bits = lock()
        // Retained explicitly while the lock is held: after unlocking, `replace` may release the
        // reference's own +1.
        let retained = Self.object(at: bits)?.retain()
        word.store(bits, ordering: .releasing)
        return retained?.takeRetainedValue()
    }

    /// Calls `body` with the object, without locking or retaining it: only for the reference's
    /// last owner, when no other thread can reach it (a `deinit`).
    func withObjectOfLastOwner<Result>(_ body: (Object?) -> Result) -> Result {
        guard let object = Self.object(at: word.load(ordering: .acquiring)) else { return body(nil) }
        return object._withUnsafeGuaranteedRef { body($0) }
    }

    /// Replaces the object with `new` if it is still `expected`; returns `expected`, which this
    /// reference no longer holds, or `nil` if the object was another one.
    func replace(_ expected: Object, with new: Object?) -> Object? {
        let bits = lock()
        guard let current = Self.object(at: bits), current.toOpaque() == Unmanaged.passUnretained(expected).toOpaque()
        else {
            word.store(bits, ordering: .releasing)
            return nil
        }
        word.store(Self.bits(retaining: new), ordering: .releasing)
        return current.takeRetainedValue()  // the reference's +1 passes to the caller
    }

    /// Sets bit 0 and returns the word as it was, without it.
    private func lock() -> UInt {
        var spins = 0
        var current = word.load(ordering: .relaxed)
        while true {
            if current & 1 == 0 {
                let (exchanged, found) = word.compareExchange(
                    expected: current, desired: current | 1, ordering: .acquiring)
                if exchanged { return current }
                current = found
            } else {
                spins += 1
                if spins % 64 == 0 { sched_yield() }  // the holder may have been preempted
                current = word.load(ordering: .relaxed)
            }
        }
    }

    private static func bits(retaining object: Object?) -> UInt {
        object.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
    }

    /// The object whose address `bits` holds (with bit 0 clear), or `nil` for 0.
    private static func object(at bits: UInt) -> Unmanaged<Object>? {
        UnsafeRawPointer(bitPattern: bits).map { Unmanaged.fromOpaque($0) }
    }
}
