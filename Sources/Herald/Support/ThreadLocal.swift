import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("Herald supports Darwin, Glibc and Musl platforms")
#endif

/// A per-thread slot that holds an object reference without retaining it.
///
/// ``withValue(_:_:)`` installs a value for the duration of a closure and keeps it alive for that
/// long, so the slot never holds a dangling reference.
struct ThreadLocalSlot<Value: AnyObject>: Sendable {
    private let key = makeThreadKey()

    /// The value installed on the calling thread, if any.
    var current: Value? {
        pthread_getspecific(key).map { Unmanaged<Value>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with `value` installed on the calling thread, then restores the previous value.
    func withValue<R, E: Error>(_ value: Value?, _ body: () throws(E) -> R) throws(E) -> R {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, value.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
        defer {
            pthread_setspecific(key, previous)
            withExtendedLifetime(value) {}
        }
        return try body()
    }
}

/// A per-thread object, made on first use and released when its thread exits.
struct ThreadLocalObject<Value: AnyObject & Sendable>: Sendable {
    private let key: pthread_key_t
    private let make: @Sendable () -> Value

    init(_ make: @escaping @Sendable () -> Value) {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { raw in
            // The argument is optional on Glibc and Musl, not on Darwin.
            if let raw = raw as UnsafeMutableRawPointer? { Unmanaged<AnyObject>.fromOpaque(raw).release() }
        }
        precondition(status == 0, "Herald: pthread_key_create failed with \(status)")
        self.key = key
        self.make = make
    }

    /// The calling thread's object.
    var current: Value {
        if let raw = pthread_getspecific(key) {
            return Unmanaged<Value>.fromOpaque(raw).takeUnretainedValue()
        }
        let value = make()
        pthread_setspecific(key, Unmanaged.passRetained(value).toOpaque())
        return value
    }
}

/// A small number per thread, handed out in the order threads first ask for one: 0, 1, 2, and so
/// on. Threads that run at the same time get different numbers, however their stacks are laid
/// out, which a hash of the thread's identity cannot promise: thread identities are stack
/// addresses a fixed distance apart, and a hash of them puts many threads on the same few values.
final class ThreadNumbers: Sendable {
    private let key = makeThreadKey()
    private let next = Atomic<UInt>(0)

    deinit {
        pthread_key_delete(key)
    }

    /// The calling thread's number.
    @inline(__always)
    var current: UInt {
        // Stored plus one, so that a thread without a number reads `nil`.
        if let stored = pthread_getspecific(key) { return UInt(bitPattern: stored) &- 1 }
        return assign()
    }

    @inline(never)
    private func assign() -> UInt {
        // Only uniqueness matters: the number orders nothing, so a relaxed increment will do.
        let number = next.wrappingAdd(1, ordering: .relaxed).oldValue
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: number &+ 1))
        return number
    }
}

/// A number that identifies the calling thread while it runs.
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}

/// A new thread-specific data key, without a destructor; traps if the process has no key left.
private func makeThreadKey() -> pthread_key_t {
    var key = pthread_key_t()
    let status = pthread_key_create(&key, nil)
    precondition(status == 0, "Herald: pthread_key_create failed with \(status)")
    return key
}
