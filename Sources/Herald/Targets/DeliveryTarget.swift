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
        case thread(DeliveryThread)
        case executor(any DeliveryExecutor)
        case actor(any Actor)
    }

    let kind: Kind

    init(kind: Kind) {
        self.kind = kind
    }

    /// The posting thread: the handler runs synchronously inside `post`, before `post` returns.
    public static let posting = DeliveryTarget(kind: .posting)

    /// The main dispatch queue, which is the `MainActor`'s executor, for a handler that is not
    /// isolated to the main actor.
    ///
    /// Use it where the target is a value chosen at run time, for example a view model that takes
    /// its target as a parameter so that a test can pass a stand-in. When the handler itself must
    /// be `@MainActor`, observe with `on: MainActor.shared` instead: the compiler then checks the
    /// handler's isolation.
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
        if case .posting = kind { return true }
        return false
    }

    /// Whether the calling code already runs on this target.
    ///
    /// ``posting`` is always current. For an actor target, only the `isolation` passed in can tell.
    func isCurrent(isolation: (any Actor)?) -> Bool {
        switch kind {
        case .posting: return true
        // Not `isolation === MainActor.shared`: a non-Sendable closure formed on the main actor
        // keeps that static isolation when `performAndWait` runs it on another thread, so only
        // the queue itself can tell.
        case .main: return QueueIdentity.isMain
        case .queue(_, let token): return QueueIdentity.isCurrent(token)
        case .operationQueue(let queue): return OperationQueue.current === queue
        case .thread(let thread): return thread.isCurrent
        case .executor(let executor): return executor.isCurrent
        case .actor(let actor): return isolation === actor
        }
    }

    /// Whether an async handler on this target runs on it (isolated to the main actor or an
    /// actor, or confined to the queue, thread or executor by a ``TargetTaskExecutor``), so that a
    /// thread blocked on the target keeps the handler from finishing.
    var isolatesAsyncHandlers: Bool {
        switch kind {
        case .posting: return false
        case .main, .actor, .queue, .operationQueue, .thread, .executor: return true
        }
    }

    /// Whether a drain job that found its mailbox empty may go back to this target once more, in
    /// case the poster is still at work (see ``MailboxStateMachine/lingers``): a queue or thread
    /// of Herald's own knowing, where handing over a job from the target itself wakes no thread.
    /// Never the main queue, which other work must get at, nor executors and actors, whose cost
    /// Herald does not know.
    var drainMayLinger: Bool {
        switch kind {
        case .queue, .thread: return true
        default: return false
        }
    }

    /// Runs `job` later on this target. ``posting`` runs it right away.
    func schedule(_ job: @escaping @Sendable () -> Void) {
        switch kind {
        case .posting: job()
        case .main: DispatchQueue.main.async(execute: job)
        case .queue(let queue, _): queue.async(execute: job)
        case .operationQueue(let queue): queue.addOperation(job)
        case .thread(let thread): thread.submit(job)
        case .executor(let executor): executor.enqueue(job)
        case .actor(let actor): Task.detached { await runIsolated(to: actor, job) }
        }
    }

    /// Runs `job` later on this target, or returns why the target will never run it (a shut-down
    /// ``DeliveryThread`` or another executor that refuses work).
    func trySchedule(_ job: @escaping @Sendable () -> Void) -> (any Error)? {
        switch kind {
        case .thread(let thread): return thread.trySubmit(job)
        case .executor(let executor): return executor.tryEnqueue(job)
        default: break
        }
        schedule(job)
        return nil
    }

    /// Runs `job` on this target once `delay` has passed.
    func schedule(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        switch kind {
        case .posting:
            DispatchQueue.global().asyncAfter(deadline: delay.deadlineFromNow, execute: job)
        case .main:
            DispatchQueue.main.asyncAfter(deadline: delay.deadlineFromNow, execute: job)
        case .queue(let queue, _):
            queue.asyncAfter(deadline: delay.deadlineFromNow, execute: job)
        case .operationQueue(let queue):
            DispatchQueue.global().asyncAfter(deadline: delay.deadlineFromNow) { queue.addOperation(job) }
        case .thread(let thread):
            thread.submit(after: delay, job)
        case .executor(let executor):
            executor.enqueue(after: delay, job)
        case .actor(let actor):
            DispatchQueue.global().asyncAfter(deadline: delay.deadlineFromNow) {
                Task.detached { await runIsolated(to: actor, job) }
            }
        }
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

extension DeliveryExecutor {
    /// Calls ``enqueue(_:)`` and returns `nil`: an executor that never refuses work.
    public func tryEnqueue(_ job: @escaping @Sendable () -> Void) -> (any Error)? {
        enqueue(job)
        return nil
    }

    /// Waits on a background dispatch queue for `delay`, then calls ``enqueue(_:)``.
    public func enqueue(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: delay.deadlineFromNow) { [self] in
            enqueue(job)
        }
    }
}

/// Runs `job` isolated to `actor`.
private func runIsolated(to actor: isolated any Actor, _ job: @Sendable () -> Void) {
    job()
}

extension DeliveryTarget {
    /// A ``DeliveryThread``: deliveries and work run on that thread, in order.
    ///
    /// ```swift
    /// let network = DeliveryThread(name: "network")
    /// hub.observe(Outgoing.self, on: .thread(network)) { note in socket.send(note.frame) }
    /// DeliveryTarget.thread(network).perform { socket.flush() }
    /// ```
    ///
    /// After the thread is shut down, a notification for an observer on it ends that observation:
    /// the ``DeliveryThreadError`` goes to the hub's ``NotificationHub/errorHandler``, and
    /// `postAndWait(_:from:)` returns with the failure in its report.
    /// ``perform(_:)`` calls are rejected and reported to the thread's `rejectionHandler`.
    /// ``performAndWait(isolation:_:)`` through the target cannot throw that error, so it waits
    /// forever; use ``DeliveryThread/performAndWait(isolation:_:)``, which throws.
    ///
    /// - Parameter thread: The thread to run on.
    /// - Returns: A target that runs work on `thread`. The target keeps the thread alive.
    public static func thread(_ thread: DeliveryThread) -> DeliveryTarget {
        DeliveryTarget(kind: .thread(thread))
    }
}
