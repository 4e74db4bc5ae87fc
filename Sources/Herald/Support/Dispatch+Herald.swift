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
    /// The key whose value on a queue is that queue's identity token, and the main queue's token,
    /// set on the main queue as they are made.
    private final class Shared: @unchecked Sendable {  // Immutable after creation; `marking` is a lock.
        let key = DispatchSpecificKey<QueueToken>()
        let main = QueueToken()
        let marking = Lock<Void>((), rank: .queueIdentity)

        init() {
            DispatchQueue.main.setSpecific(key: key, value: main)
        }
    }

    private static let shared = Shared()

    /// The identity of `queue`, created and attached to it on first use.
    ///
    /// On Linux `DispatchQueue.main` and `DispatchQueue.global()` return a new wrapper object each
    /// time, so a queue's identity lives on the queue itself, not in the wrapper's address.
    static func token(for queue: DispatchQueue) -> QueueToken {
        shared.marking.withLock { _ in
            if let token = queue.getSpecific(key: shared.key) { return token }
            let token = QueueToken()
            queue.setSpecific(key: shared.key, value: token)
            return token
        }
    }

    /// The main queue's identity.
    static var mainToken: QueueToken { shared.main }

    /// Whether the calling code runs on the queue identified by `token` (or on a queue targeting it).
    static func isCurrent(_ token: QueueToken) -> Bool {
        DispatchQueue.getSpecific(key: shared.key) === token
    }

    /// Whether the calling code runs on the main queue, or on the main thread outside any queue.
    static var isMain: Bool {
        isCurrent(shared.main) || Thread.isMainThread
    }
}

/// The identity of one dispatch queue, stored on the queue as a queue-specific value.
final class QueueToken: Sendable {}

extension Duration {
    /// The dispatch time `self` from now, in whole nanoseconds; zero and negative durations are
    /// now, very long ones `.distantFuture`.
    var deadlineFromNow: DispatchTime {
        // About 100 years: anything longer is "never" for a dispatch deadline.
        if self >= .seconds(3_153_600_000) { return .distantFuture }
        if self <= .zero { return .now() }
        let (seconds, attoseconds) = components
        return .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}
