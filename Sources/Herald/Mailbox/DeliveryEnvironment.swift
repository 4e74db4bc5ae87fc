import Foundation
import Synchronization

/// What every delivery of one hub needs from that hub: where a handler's failure goes, the watch
/// that wakes `waitUntilIdle`, and the executor that runs main-queue deliveries in place of the
/// main queue, if the hub was given one.
///
/// The hub's core owns it through its ``Registry``; observers and mailboxes reach it from there,
/// so that nothing below the hub names the hub.
final class DeliveryEnvironment: Sendable {
    private let errorHandler = Lock(
        StoredHandler<ObserverFailure> { FileHandle.standardError.write(Data("Herald: \($0)\n".utf8)) },
        rank: .errorHandler)
    /// Wakes ``NotificationHub/waitUntilIdle(timeout:isolation:)``.
    let idleWatch = IdleWatch()
    private let mainExecutor = Lock<MainExecutorBox?>(nil, rank: .mainQueueExecutor)
    /// Whether a main-queue executor was ever set; lets main-queue schedules skip the lock.
    private let hasMainExecutor = Atomic<Bool>(false)

    /// An existential behind the lock is stored in a struct (see ``StoredHandler``).
    private struct MainExecutorBox: Sendable {
        let executor: any MainQueueExecutor
    }

    // MARK: Failures

    /// Where handlers' failures go: standard error until the hub is given a handler.
    var errorHandlerValue: @Sendable (ObserverFailure) -> Void {
        get { errorHandler.withLock { $0 }.call }
        set {
            let old = errorHandler.exchange(StoredHandler(call: newValue))
            withExtendedLifetime(old) {}  // the old closure and its captures go here, after the lock
        }
    }

    /// Hands `failure` to the hub's error handler.
    func report(_ failure: ObserverFailure) {
        errorHandler.withLock { $0 }.call(failure)  // called after the lock
    }

    // MARK: The main queue

    /// The executor that runs this hub's main-queue deliveries instead of the main queue, if one
    /// was given (`HeraldTesting`'s `TestMainActor`).
    var mainQueueExecutor: (any MainQueueExecutor)? {
        get {
            guard hasMainExecutor.load(ordering: .acquiring) else { return nil }
            return mainExecutor.withLock { $0 }?.executor
        }
        set {
            let old = mainExecutor.exchange(newValue.map(MainExecutorBox.init(executor:)))
            if newValue != nil { hasMainExecutor.store(true, ordering: .releasing) }
            withExtendedLifetime(old) {}
        }
    }

    /// Where a drain job for an observer on `target` goes: the main-queue executor for the main
    /// queue, if the hub has one.
    @inline(__always)
    func schedulingTarget(for target: DeliveryTarget) -> DeliveryTarget {
        guard hasMainExecutor.load(ordering: .acquiring) else { return target }
        guard case .main = target.kind, let executor = mainQueueExecutor else { return target }
        return .executor(executor)
    }
}

/// An executor that runs a hub's main-queue deliveries in place of the main queue (see
/// ``DeliveryEnvironment/mainQueueExecutor``). It also starts the tasks of the `async` main-actor
/// handlers its jobs begin, so that it can tell when they have ended.
@_spi(Testing)
public protocol MainQueueExecutor: DeliveryExecutor {
    /// Starts the task of an async main-actor handler, begun by one of the executor's jobs. The
    /// executor does not count as idle until the task has finished.
    ///
    /// - Parameters:
    ///   - runsOnExecutor: Whether the handler is not isolated to the main actor (a nonisolated
    ///     handler on `.mainQueue`): the main queue would run it, so the executor runs the task's
    ///     jobs itself.
    ///   - work: The task's body.
    /// - Returns: The task, which Herald cancels when the observation ends while it runs.
    func startTask(runsOnExecutor: Bool, _ work: @escaping @Sendable () async -> Void) -> Task<Void, Never>
}

/// A user's handler (of failures, of unobserved posts), as stored behind a lock.
///
/// Closures behind a ``Lock`` are always wrapped in a struct. A bare function type stored in a
/// generic container is re-abstracted on every `inout` access, so each `withLock` would wrap the
/// stored closure in two more thunks: a long-lived hub would call its handler through an ever
/// deeper chain, growing memory on every report until the stack overflows. A struct's field
/// keeps the closure as it was stored.
struct StoredHandler<Argument>: Sendable {
    let call: @Sendable (Argument) -> Void
}
