import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `Mutex` that ThreadSanitizer understands.
///
/// On Linux, a contended `Mutex` is handed over inside the kernel (a priority-inheritance futex),
/// where ThreadSanitizer cannot see it, so it reports races between critical sections that are in
/// fact serialised. When the process runs under ThreadSanitizer, this lock tells it about each
/// acquire and release; otherwise it costs one predictable branch.
struct Lock<Value: Sendable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    /// The address ThreadSanitizer knows this lock by; only allocated when it is running.
    private let sanitizerToken: SanitizerToken?
    #if DEBUG
    /// Where the lock stands in the lock order, which debug builds check.
    private let rank: LockRank
    #endif

    init(_ value: Value, rank: LockRank) {
        mutex = Mutex(value)
        sanitizerToken = ThreadSanitizerHooks.shared == nil ? nil : SanitizerToken()
        #if DEBUG
        self.rank = rank
        #endif
    }

    @inline(__always)
    borrowing func withLock<Result: Sendable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        #if DEBUG
        LockOrder.willAcquire(rank)
        defer { LockOrder.didRelease(rank) }
        #endif
        guard let sanitizerToken, let hooks = ThreadSanitizerHooks.shared else {
            return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in try body(&value) }
        }
        let address = UnsafeRawPointer(Unmanaged.passUnretained(sanitizerToken).toOpaque())
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            hooks.acquire(address)
            defer { hooks.release(address) }
            return try body(&value)
        }
    }

    /// Stores `newValue` and returns the value it replaces, which the caller releases after the
    /// lock: releasing a closure or an object can run any `deinit`.
    borrowing func exchange(_ newValue: Value) -> Value {
        withLock { value in
            defer { value = newValue }
            return value
        }
    }
}

/// An object whose address names one ``Lock`` to ThreadSanitizer.
final class SanitizerToken: Sendable {}

/// ThreadSanitizer's annotation functions, found at run time when its runtime is loaded.
struct ThreadSanitizerHooks: @unchecked Sendable {  // Two C function pointers, immutable.
    typealias Hook = @convention(c) (UnsafeRawPointer) -> Void

    let acquire: Hook
    let release: Hook

    static let shared: ThreadSanitizerHooks? = {
        guard let process = dlopen(nil, RTLD_NOW),
            let acquire = dlsym(process, "__tsan_acquire"),
            let release = dlsym(process, "__tsan_release")
        else { return nil }
        return ThreadSanitizerHooks(
            acquire: unsafeBitCast(acquire, to: Hook.self),
            release: unsafeBitCast(release, to: Hook.self)
        )
    }()
}
