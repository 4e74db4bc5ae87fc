import Foundation
import Herald
import Synchronization

// Stand-ins for the app code that the documentation's examples call. They make each example
// compile as written; they are not part of Herald.

final class Store: Sendable {
    func vacuum() {}
    func count() throws -> Int { 0 }
}

@MainActor
final class View {
    var frame = (x: 0, y: 0, width: 320, height: 44)
    var isHidden = false
    func dismiss() { isHidden = true }
}

@MainActor
final class StatusBar {
    private(set) var isSignedIn = false
    func showSignedIn(_ isSignedIn: Bool) { self.isSignedIn = isSignedIn }
}

@MainActor func hideToast() {}

func sha256(of file: URL) throws -> [UInt8] { Array(repeating: 0, count: 32) }

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

struct SessionState: TypedNotification {
    let isLoggedIn: Bool
}
