import Foundation

/// A value behind an `NSLock`.
///
/// HeraldTesting uses it instead of `Mutex` so that tests run under ThreadSanitizer stay quiet:
/// on Linux a contended `Mutex` is handed over inside the kernel, where ThreadSanitizer cannot
/// see it, and it reports races between critical sections that are in fact serialised.
final class Locked<Value: Sendable>: @unchecked Sendable {  // Every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. Never call out to user code inside it.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}
