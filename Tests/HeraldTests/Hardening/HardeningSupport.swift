import Dispatch
import Foundation
import Herald
import Synchronization

/// The address of a local variable in the caller's frame: how deep the calling thread's stack is.
///
/// Stacks grow downwards, so `outer - inner` is the number of bytes between two frames on one
/// thread. Tests use it to show that something does not get deeper each time it is used.
@inline(never)
func stackAddress() -> UInt {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}

/// A weak reference that a test checks after the strong ones are gone.
final class WeakProbe<Object: AnyObject>: @unchecked Sendable {  // Written once, in init; read only.
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }

    var isReleased: Bool { object == nil }
}

/// An object whose only job is to be captured and then released.
final class Captured: Sendable {
    let id: Int

    init(id: Int = 0) {
        self.id = id
    }
}
