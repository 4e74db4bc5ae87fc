import Dispatch
import Foundation

/// Where an observer's handler runs, and where ``perform(_:)`` sends work.
///
/// Pick the target when you observe:
///
/// ```swift
/// hub.observe(UserCreated.self) { note in … }                          // the posting thread
/// hub.observe(UserCreated.self, on: MainActor.shared) { note in … }   // the main actor (@MainActor handler)
/// hub.observe(UserCreated.self, on: .mainQueue) { note in … }          // the main queue, nonisolated handler
/// hub.observe(UserCreated.self, on: .queue(database)) { note in … }    // a DispatchQueue
/// hub.observe(UserCreated.self, on: .operationQueue(imports)) { … }    // an OperationQueue
/// hub.observe(UserCreated.self, on: .executor(myLoop)) { … }           // a custom executor
/// ```
///
/// ## Threading
/// - ``posting`` runs the handler synchronously inside `post`, on the caller's thread.
/// - Every other target gives each observer its own serial mailbox: deliveries to one observer
///   run one at a time and in post order, even on a concurrent queue or an `OperationQueue` that
///   runs several operations at once. A burst of posts is drained by one job per slice of up to
///   128 notifications, not one job per post; between slices the target runs its other work.
/// - ``mainQueue`` is the main dispatch queue, which is also the `MainActor`'s executor. On Linux a
///   worker thread may drain it (under `dispatchMain()`, an async `main`, or Swift Testing);
///   Herald recognises it by a queue-specific value, never by `Thread.isMainThread` alone.
public struct DeliveryTarget: Sendable, Equatable, CustomStringConvertible {
    enum Kind: Sendable {
        case posting
        case main
        case queue(DispatchQueue, QueueToken)
        case operationQueue(OperationQueue)
        case thread(any SerialThread)
        case executor(any DeliveryExecutor)
        case actor(any Actor)
    }

    let kind: Kind

    /// The posting thread: the handler runs synchronously inside `post`, before `post` returns.
    public static let posting = DeliveryTarget(kind: .posting)

    /// The main dispatch queue, which is the `MainActor`'s executor, for a handler that is not
    /// isolated to the main actor.
    ///
    /// Use it where the target is a value chosen at run time, for example a view model that takes
    /// its target as a parameter so that a test can pass its own (`HeraldTesting`'s
    /// `TestDeliveryTarget`). When the handler itself must be `@MainActor`, observe with
    /// `on: MainActor.shared` instead: the compiler then checks the handler's isolation.
    public static let mainQueue = DeliveryTarget(kind: .main)

    /// Not available: say which of the two you mean.
    @available(
        *, unavailable,
        message:
            "for a @MainActor handler observe with `on: MainActor.shared`; for a nonisolated handler on the main queue use `.mainQueue`; to run main-actor work use MainActor.perform / performAndWait / perform(after:)"
    )
    public static var main: DeliveryTarget { mainQueue }

    /// A dispatch queue, serial or concurrent.
    ///
    /// - Parameter queue: The queue to deliver on. `DispatchQueue.main` is the same as ``mainQueue``.
    /// - Returns: A target that runs work on `queue`.
    public static func queue(_ queue: DispatchQueue) -> DeliveryTarget {
        let token = QueueIdentity.token(for: queue)
        if token === QueueIdentity.mainToken { return .mainQueue }
        return DeliveryTarget(kind: .queue(queue, token))
    }

    /// An operation queue, with any `maxConcurrentOperationCount`.
    ///
    /// - Parameter queue: The queue to deliver on. Each batch of deliveries is one operation.
    /// - Returns: A target that runs work on `queue`.
    public static func operationQueue(_ queue: OperationQueue) -> DeliveryTarget {
        DeliveryTarget(kind: .operationQueue(queue))
    }

    /// A custom executor, such as an event loop or a test scheduler.
    ///
    /// - Parameter executor: The executor to deliver on.
    /// - Returns: A target that runs work through `executor`.
    public static func executor(_ executor: some DeliveryExecutor) -> DeliveryTarget {
        DeliveryTarget(kind: .executor(executor))
    }

    /// Whether work is delivered synchronously on the posting thread.
    public var isPosting: Bool {
        if case .posting = kind { true } else { false }
    }

    /// A short name for the target, spelled as in code, for example `mainQueue` or
    /// `queue(com.example.db)`, for logs and test failures.
    public var description: String {
        switch kind {
        case .posting: return "posting"
        case .main: return "mainQueue"
        case .queue(let queue, _): return "queue(\(queue.label))"
        case .operationQueue(let queue): return "operationQueue(\(queue.name ?? "unnamed"))"
        case .thread(let thread): return "thread(\(thread.name))"
        case .executor(let executor): return "executor(\(type(of: executor)))"
        case .actor(let actor): return "actor(\(type(of: actor)))"
        }
    }

    /// Two targets are equal when they deliver on the same queue, executor or actor.
    public static func == (lhs: DeliveryTarget, rhs: DeliveryTarget) -> Bool {
        switch (lhs.kind, rhs.kind) {
        case (.posting, .posting), (.main, .main): return true
        case (.queue(_, let a), .queue(_, let b)): return a === b
        case (.operationQueue(let a), .operationQueue(let b)): return a === b
        case (.thread(let a), .thread(let b)): return a === b
        case (.executor(let a), .executor(let b)): return a === b
        case (.actor(let a), .actor(let b)): return a === b
        default: return false
        }
    }
}

/// A thread that runs submitted work in order, one job at a time: what ``DeliveryTarget/thread(_:)``
/// delivers on. ``DeliveryThread`` is the one conformer; the target needs no more of it than this.
protocol SerialThread: AnyObject, Sendable {
    /// The thread's name, for descriptions.
    var name: String { get }
    /// Whether the calling code runs on this thread right now.
    var isCurrent: Bool { get }
    /// Runs `job` later on the thread (or reports it to the thread's rejection handler once the
    /// thread is shut down).
    func perform(_ job: @escaping @Sendable () -> Void)
    /// Runs `job` later on the thread, or returns why the thread never will.
    func trySubmit(_ job: @escaping @Sendable () -> Void) -> (any Error)?
    /// Runs `job` on the thread once `delay` has passed.
    func perform(after delay: Duration, _ job: @escaping @Sendable () -> Void)
}
