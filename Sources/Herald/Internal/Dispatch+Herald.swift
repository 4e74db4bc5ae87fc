import Dispatch
import Foundation

/// Recognises the main dispatch queue and the queues Herald delivers on.
///
/// Herald never decides "main" by `Thread.isMainThread` alone: on Linux, under `dispatchMain()`,
/// an async `main` or Swift Testing, a worker thread drains the main queue. A queue-specific value
/// set on the main queue answers the question wherever the main queue runs. The main thread itself
/// also counts, because code running there outside a main-queue block (top-level code, a
/// `RunLoop` timer) already owns the main queue: waiting for it would deadlock.
enum QueueIdentity {
    /// The key whose value on a queue is that queue's own identity.
    private struct Key: @unchecked Sendable {  // DispatchSpecificKey is immutable after creation.
        let key = DispatchSpecificKey<ObjectIdentifier>()
    }

    /// The value that marks the main queue.
    ///
    /// Not `ObjectIdentifier(DispatchQueue.main)`: on Linux every read of `DispatchQueue.main`
    /// returns a new wrapper object, so its identity changes from one read to the next.
    private enum MainQueueTag {}
    private static let mainID = ObjectIdentifier(MainQueueTag.self)

    private static let shared: Key = {
        let key = Key()
        DispatchQueue.main.setSpecific(key: key.key, value: mainID)
        return key
    }()

    /// Whether `queue` is the main queue, whichever wrapper object refers to it.
    static func isMainQueue(_ queue: DispatchQueue) -> Bool {
        queue.getSpecific(key: shared.key) == mainID
    }

    /// Marks `queue` so that ``isCurrent(_:)`` can recognise it. The main queue keeps its own mark.
    static func mark(_ queue: DispatchQueue) {
        let id = ObjectIdentifier(queue)
        let current = queue.getSpecific(key: shared.key)
        if current != id && current != mainID {
            queue.setSpecific(key: shared.key, value: id)
        }
    }

    /// Whether the calling code runs on `queue` (or on a queue that targets it).
    static func isCurrent(_ queue: DispatchQueue) -> Bool {
        DispatchQueue.getSpecific(key: shared.key) == ObjectIdentifier(queue)
    }

    /// Whether the calling code runs on the main queue, or on the main thread outside any queue.
    static var isMain: Bool {
        DispatchQueue.getSpecific(key: shared.key) == mainID || Thread.isMainThread
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `0...Int64.max`.
    var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? .max : total
    }

    /// The dispatch time `self` from now; very long durations become `.distantFuture`.
    var deadlineFromNow: DispatchTime {
        let nanoseconds = clampedNanoseconds
        // About 100 years: anything longer is "never" for a dispatch deadline.
        if nanoseconds >= 3_153_600_000_000_000_000 { return .distantFuture }
        return .now() + .nanoseconds(Int(nanoseconds))
    }
}
