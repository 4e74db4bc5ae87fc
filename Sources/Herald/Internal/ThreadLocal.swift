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
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "Herald: pthread_key_create failed with \(status)")
        self.key = key
    }

    /// The value installed on the calling thread, if any.
    var current: Value? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Value>.fromOpaque(raw).takeUnretainedValue()
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
        #if canImport(Darwin)
        let status = pthread_key_create(&key) { raw in Unmanaged<AnyObject>.fromOpaque(raw).release() }
        #else
        let status = pthread_key_create(&key) { raw in
            if let raw { Unmanaged<AnyObject>.fromOpaque(raw).release() }
        }
        #endif
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

/// A number that identifies the calling thread while it runs.
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}
