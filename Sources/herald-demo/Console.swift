import Dispatch
import Foundation

/// Where the calling code runs right now, decided at run time, never assumed.
///
/// - The main queue is recognised by a queue-specific value set on `DispatchQueue.main`, which
///   holds however the main queue is drained (Herald's "main" is the main queue, not a thread).
/// - The background queue by `OperationQueue.current`, which `BackgroundQueue` runs its work on.
/// - A `DeliveryThread` by the name it gives its OS thread.
enum Place {
    /// The label of the place the caller runs on, for example `main queue` or `network thread`.
    static var current: String {
        if DispatchQueue.getSpecific(key: MainQueueMarker.key) == MainQueueMarker.value {
            return Thread.isMainThread ? "main queue" : "main queue (worker)"
        }
        if let queue = OperationQueue.current?.name, queue == BettingAPIClient.queueName {
            return "background queue"
        }
        if let thread = Thread.current.name, thread == Demo.networkThreadName {
            return "network thread"
        }
        return "other thread"
    }

    /// Marks `DispatchQueue.main`; call once at start-up, before anything is printed.
    static func markMainQueue() {
        DispatchQueue.main.setSpecific(key: MainQueueMarker.key, value: MainQueueMarker.value)
    }
}

/// The queue-specific key that marks the main queue.
private enum MainQueueMarker {
    static let value = 1
    static var key: DispatchSpecificKey<Int> { storage.key }

    // `DispatchSpecificKey` is not `Sendable` in Dispatch; this one is created once and never
    // mutated, and Dispatch only compares its identity, so sharing it between threads is safe.
    private final class Storage: @unchecked Sendable {
        let key = DispatchSpecificKey<Int>()
    }
    private static let storage = Storage()
}

/// Prints one event line: where it ran, who acted, and what happened, in aligned columns.
///
/// ```
///   main queue          UI    welcome, Ada (user #7)
/// ```
func say(_ actor: String, _ message: String) {
    let place = Place.current
    let line =
        "  " + place.padding(toLength: 20, withPad: " ", startingAt: 0)
        + actor.padding(toLength: 8, withPad: " ", startingAt: 0) + message
    print(line)
}
