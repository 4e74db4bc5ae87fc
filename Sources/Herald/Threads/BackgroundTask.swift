import Foundation

/// A piece of work queued on a ``BackgroundQueue``: await its value, wait for it, cancel it, or
/// make later work depend on it.
///
/// ```swift
/// let download = queue.enqueue { try fetchArchive() }
/// let unpack = queue.enqueue(after: [download]) { try unpackArchive() }
/// let files = try await unpack.value
/// ```
///
/// ## Threading
/// - The work runs once, on one of the queue's threads, when a slot is free and every dependency
///   has finished or been cancelled.
/// - ``cancel()`` may be called from any thread. A task cancelled before its work started never
///   runs it; its ``value`` throws `CancellationError` at once, and tasks that depend on it still
///   run (a dependency only orders work, it does not pass results on). A task cancelled while
///   its work runs is not interrupted: the work can poll ``BackgroundQueue/isCurrentTaskCancelled``,
///   and ``value`` is whatever the work returns or throws.
/// - ``value`` and ``wait()`` can be used from any number of callers, any number of times.
public final class BackgroundTask<Value: Sendable>: BackgroundTaskDependency, Hashable {
    let operation: TaskOperation<Value>

    init(operation: TaskOperation<Value>) {
        self.operation = operation
    }

    /// The task as a dependency of later work.
    public var dependencyHandle: BackgroundTaskHandle {
        BackgroundTaskHandle(operation: operation)
    }

    /// Cancels the task.
    ///
    /// ```swift
    /// let preview = queue.enqueue { renderPreview() }
    /// preview.cancel()     // the user scrolled away
    /// ```
    ///
    /// If the work has not started, it never runs, and ``value`` throws `CancellationError` from
    /// now on. If it is running, it is not interrupted; it can poll
    /// ``BackgroundQueue/isCurrentTaskCancelled``. Calling it again, or after the task finished,
    /// does nothing more than set ``isCancelled``.
    public func cancel() {
        // Only the task's own state: the operation still runs, finds the task cancelled, and
        // finishes at once. `Operation.cancel()` is avoided because swift-corelibs-foundation's
        // OperationQueue can crash when operations are cancelled while it schedules them.
        operation.cancelTask()
    }

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool {
        operation.cancellation.isSet
    }

    /// Whether the task has finished: its work returned or threw, or it was cancelled before it
    /// started.
    public var isFinished: Bool {
        operation.outcome != nil
    }

    /// The outcome, if the task has finished; `nil` while it is queued or running.
    public var result: Result<Value, any Error>? {
        operation.outcome
    }

    /// The value the work returned, once the task has finished.
    ///
    /// ```swift
    /// let thumbnail = try await queue.enqueue { try makeThumbnail(of: photo) }.value
    /// ```
    ///
    /// It suspends without blocking a thread. Cancelling the awaiting Swift task does not cancel
    /// this background task (use ``BackgroundQueue/performAndWait(priority:after:_:)`` for that). It never
    /// suspends forever for a cancelled task; it suspends for as long as the work and its
    /// dependencies take, forever if one of them never finishes.
    ///
    /// - Throws: `CancellationError` if the task was cancelled before its work started, or the
    ///   error the work threw.
    public var value: Value {
        get async throws {
            try await operation.outcome().get()
        }
    }

    /// Blocks the calling thread until the task has finished, and returns its value.
    ///
    /// ```swift
    /// let config = try queue.enqueue { try loadConfiguration() }.wait()
    /// ```
    ///
    /// ## When it can block forever
    /// It returns as soon as the task finishes, or at once if it was cancelled before it started.
    /// It blocks forever if the task never gets to run: when called from inside a task of the same
    /// queue while every slot of the queue is taken by tasks that are waiting too, or when a
    /// dependency never finishes.
    ///
    /// - Returns: The value the work returned.
    /// - Throws: `CancellationError` if the task was cancelled before its work started, or the
    ///   error the work threw.
    @available(*, noasync, message: "wait() blocks the calling thread; use `await task.value`")
    public func wait() throws -> Value {
        try operation.waitForOutcome().get()
    }

    /// Two handles are equal when they are the same task.
    public static func == (lhs: BackgroundTask, rhs: BackgroundTask) -> Bool {
        lhs === rhs
    }

    /// Hashes the task's identity.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}

/// Something later background work can wait for: a ``BackgroundTask``.
///
/// ```swift
/// let a = queue.enqueue { … }
/// let b = queue.enqueue { … }
/// queue.enqueue(after: [a, b]) { … }      // starts once a and b have finished or been cancelled
/// ```
///
/// Only Herald makes ``BackgroundTaskHandle``s, so a conforming type of your own forwards to a
/// task's handle.
public protocol BackgroundTaskDependency: Sendable {
    /// The handle that dependent work waits for.
    var dependencyHandle: BackgroundTaskHandle { get }
}

/// An opaque reference to a queued task, used to make later work depend on it.
public struct BackgroundTaskHandle: Sendable, Hashable {
    let operation: Operation

    /// Two handles are equal when they refer to the same task.
    public static func == (lhs: BackgroundTaskHandle, rhs: BackgroundTaskHandle) -> Bool {
        lhs.operation === rhs.operation
    }

    /// Hashes the identity of the task the handle refers to.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(operation))
    }
}

/// How soon a queued task should start, relative to the others waiting in the same queue.
///
/// It maps to `Operation.QueuePriority`: among the tasks that are ready to start, a higher priority
/// starts first. It never makes a task start before its dependencies have finished.
///
/// ```swift
/// queue.enqueue(priority: .high) { try renderVisibleThumbnails() }
/// queue.enqueue(priority: .low) { try prefetchNextPage() }
/// ```
public enum BackgroundTaskPriority: Sendable, Hashable, CaseIterable {
    /// Starts after every ready task of a higher priority.
    case veryLow
    /// Starts before `veryLow` tasks.
    case low
    /// The default.
    case normal
    /// Starts before `normal` tasks.
    case high
    /// Starts before every other ready task.
    case veryHigh

    var queuePriority: Operation.QueuePriority {
        switch self {
        case .veryLow: return .veryLow
        case .low: return .low
        case .normal: return .normal
        case .high: return .high
        case .veryHigh: return .veryHigh
        }
    }
}

/// The operation that runs one task, and the task's state, which its handle reads.
///
/// It never holds the ``BackgroundTask`` handle: a task still runs when nobody holds its handle,
/// and there is no reference cycle. Herald cancels a task with ``cancelTask()``, not with
/// `Operation.cancel()`: the operation then runs, finds the task cancelled, and finishes at once.
/// If someone cancels the operation itself, the task is cancelled first, so it still finishes even
/// though `Operation` never calls `main()` for it.
// `@unchecked Sendable` restated from Operation; it adds only immutable, Sendable stored properties.
final class TaskOperation<Value: Sendable>: Operation, TaskOperating, @unchecked Sendable {
    private enum Phase {
        case pending(@Sendable () throws -> Value)
        case running
        case finished(Result<Value, any Error>)
    }

    let cancellation = CancellationFlag()
    let dependents = DependentsKeeper()
    private let phase: Lock<Phase>
    /// Entered until the task finishes: what both ``waitForOutcome()`` and ``outcome()`` wait for.
    private let done = DispatchGroup()

    init(work: @escaping @Sendable () throws -> Value) {
        phase = Lock(.pending(work), rank: .backgroundTask)
        super.init()
        done.enter()
        // Foundation calls the completion block once it is done with this operation's dependents.
        completionBlock = { [dependents] in dependents.releaseAll() }
    }

    /// The outcome, if the task has finished.
    var outcome: Result<Value, any Error>? {
        phase.withLock { phase in
            guard case .finished(let result) = phase else { return nil }
            return result
        }
    }

    /// Runs the work, unless the task was cancelled first.
    override func main() {
        guard let work = claimWork() else { return }
        finish(BackgroundQueue.current.withValue(cancellation) { Result { try work() } })
    }

    override func cancel() {
        cancelTask()
        super.cancel()
    }

    func cancelTask() {
        cancellation.set()
        // Once claimed here, the work never starts. It is released after the lock: releasing a
        // closure can run any `deinit`, which may use this very task.
        guard claimWork() != nil else { return }
        finish(.failure(CancellationError()))
    }

    /// Takes the work out, once: `nil` if it has been taken by ``main()`` or ``cancelTask()`` before.
    private func claimWork() -> (@Sendable () throws -> Value)? {
        phase.withLock { phase in
            guard case .pending(let work) = phase else { return nil }
            phase = .running
            return work
        }
    }

    private func finish(_ result: Result<Value, any Error>) {
        phase.withLock { $0 = .finished(result) }
        done.leave()
    }

    /// Suspends, blocking no thread, until the task has finished, and returns its outcome.
    func outcome() async -> Result<Value, any Error> {
        await withCheckedContinuation { continuation in
            done.notify(queue: .global()) { continuation.resume(returning: self.finishedOutcome) }
        }
    }

    /// Blocks until the task has finished, and returns its outcome.
    func waitForOutcome() -> Result<Value, any Error> {
        done.wait()
        return finishedOutcome
    }

    private var finishedOutcome: Result<Value, any Error> {
        guard let outcome else {
            preconditionFailure("Herald: a finished background task has no outcome")
        }
        return outcome
    }
}

/// What a ``BackgroundQueue`` needs of a ``TaskOperation``, whatever its value type.
protocol TaskOperating: AnyObject {
    /// Keeps the operations depending on this one alive until it has finished.
    var dependents: DependentsKeeper { get }

    /// Cancels the task behind the operation, without cancelling the operation.
    func cancelTask()
}

/// Keeps the operations that depend on one task alive until that task has finished.
///
/// swift-corelibs-foundation remembers an operation's dependents without retaining them, and walks
/// them when the operation finishes. A dependent that was cancelled, finished and released first
/// (its handle dropped) was then read after it had been freed: a crash in
/// `Operation.observeValue(forKeyPath:ofObject:)`. Each task keeps its dependents here until its
/// completion block runs, which Foundation does after it is done with them.
final class DependentsKeeper: Sendable {
    private let dependents = Lock<[BackgroundTaskHandle]?>([], rank: .backgroundTaskDependents)

    /// Keeps `dependent` until ``releaseAll()``; does nothing once the task has finished.
    func keep(_ dependent: BackgroundTaskHandle) {
        dependents.withLock { $0?.append(dependent) }
    }

    /// Lets the dependents go, outside the lock; later ``keep(_:)`` calls keep nothing.
    func releaseAll() {
        withExtendedLifetime(dependents.exchange(nil)) {}
    }
}
