import Foundation

/// A queue for background work, with a maximum concurrency, priorities, dependencies, and handles
/// you can await, wait for or cancel.
///
/// ```swift
/// let thumbnails = BackgroundQueue.shared.enqueue(priority: .high) { try renderThumbnails() }
/// let upload = BackgroundQueue.shared.enqueue(after: [thumbnails]) { try uploadAlbum() }
/// let receipt = try await upload.value
///
/// let size = try await BackgroundQueue.shared.perform { try measure(file) }   // enqueue and await
/// ```
///
/// ``shared`` is created on first use with a concurrency of the active processor count; replace it
/// once at start-up with ``setShared(_:)``. Make your own queues for separate pools of work: they
/// are cheap.
///
/// ## Threading
/// - It is built on `OperationQueue`. Work runs on the queue's threads, at most
///   ``maxConcurrentTasks`` at a time, each task once.
/// - A task starts when a slot is free and every task it depends on has finished or been cancelled.
///   Among the ready tasks, a higher ``BackgroundTaskPriority`` starts first; tasks of equal
///   priority start in the order they were enqueued.
/// - Work is synchronous code: it occupies a thread while it runs. Blocking inside it (for example
///   ``BackgroundTask/wait()`` on another task of the same queue) holds a slot for that long.
/// - All methods may be called from any thread.
public final class BackgroundQueue: Sendable {
    /// The queue's name, which is also the name of its `OperationQueue`.
    public let name: String

    private let operations: OperationQueue

    /// Creates a queue that runs as many tasks at once as there are active processors.
    ///
    /// ```swift
    /// let imports = BackgroundQueue(name: "imports", qualityOfService: .userInitiated)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The queue's name, for debugging.
    ///   - qualityOfService: The quality of service of the queue's threads.
    public init(name: String = "Herald.BackgroundQueue", qualityOfService: QualityOfService = .utility) {
        self.name = name
        operations = OperationQueue()
        operations.name = name
        operations.qualityOfService = qualityOfService
        operations.maxConcurrentOperationCount = max(1, ProcessInfo.processInfo.activeProcessorCount)
    }

    deinit {
        // swift-corelibs-foundation hands queued operations (cancelled ones too) to blocks that do
        // not keep the OperationQueue alive: releasing it while some are still queued crashed in
        // `Operation.observeValue(forKeyPath:ofObject:)`. A barrier that holds the queue keeps it
        // until everything queued before it has finished, then lets it go.
        let operations = self.operations
        operations.addBarrierBlock { withExtendedLifetime(operations) {} }
    }

    /// Creates a queue that runs at most `maxConcurrentTasks` tasks at once.
    ///
    /// ```swift
    /// let downloads = try BackgroundQueue(name: "downloads", maxConcurrentTasks: 2)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The queue's name, for debugging.
    ///   - maxConcurrentTasks: The maximum number of tasks running at once; at least 1.
    ///   - qualityOfService: The quality of service of the queue's threads.
    /// - Throws: ``BackgroundQueueError`` with code ``BackgroundQueueError/Code/invalidMaxConcurrentTasks``
    ///   if `maxConcurrentTasks` is less than 1.
    public convenience init(
        name: String = "Herald.BackgroundQueue",
        maxConcurrentTasks: Int,
        qualityOfService: QualityOfService = .utility
    ) throws(BackgroundQueueError) {
        self.init(name: name, qualityOfService: qualityOfService)
        try setMaxConcurrentTasks(maxConcurrentTasks)
    }

    /// The maximum number of tasks that run at once.
    public var maxConcurrentTasks: Int {
        operations.maxConcurrentOperationCount
    }

    /// Changes the maximum number of tasks that run at once.
    ///
    /// ```swift
    /// try queue.setMaxConcurrentTasks(1)     // from now on, one task at a time
    /// ```
    ///
    /// Tasks already running are not interrupted; a lower limit applies as they finish.
    ///
    /// - Parameter count: The new maximum; at least 1.
    /// - Throws: ``BackgroundQueueError`` with code ``BackgroundQueueError/Code/invalidMaxConcurrentTasks``
    ///   if `count` is less than 1; the limit is then unchanged.
    public func setMaxConcurrentTasks(_ count: Int) throws(BackgroundQueueError) {
        guard count >= 1 else {
            throw BackgroundQueueError(code: .invalidMaxConcurrentTasks, detail: "found \(count)")
        }
        operations.maxConcurrentOperationCount = count
    }

    /// A delivery target on this queue, for hub observers and ``DeliveryTarget/perform(_:)``.
    ///
    /// ```swift
    /// hub.observe(PhotoAdded.self, on: BackgroundQueue.shared.deliveryTarget) { note in … }
    /// ```
    public var deliveryTarget: DeliveryTarget {
        .operationQueue(operations)
    }

    // MARK: - Enqueueing

    /// Queues `work` and returns its handle at once.
    ///
    /// ```swift
    /// let a = queue.enqueue { try download(first) }
    /// let b = queue.enqueue(priority: .high) { try download(second) }
    /// let merged = queue.enqueue(after: [a, b]) { try merge() }
    /// let result = try await merged.value
    /// ```
    ///
    /// The task starts when a slot is free and every dependency has finished or been cancelled.
    /// A dependency only orders the work: a task still runs when its dependency threw or was
    /// cancelled. If that matters, check the dependency's ``BackgroundTask/result`` in the work,
    /// or cancel the dependent too.
    ///
    /// If you discard the handle, the work still runs, but an error it throws is seen by nobody.
    ///
    /// - Parameters:
    ///   - priority: How soon the task starts relative to the other ready tasks of this queue.
    ///   - dependencies: Tasks that must finish (or be cancelled) before this one starts. They may
    ///     belong to other `BackgroundQueue`s.
    ///   - work: The work. It runs on one of the queue's threads.
    /// - Returns: The task's handle.
    /// - Complexity: O(*d*) in the number of dependencies.
    @discardableResult
    public func enqueue<Value: Sendable>(
        priority: BackgroundTaskPriority = .normal,
        after dependencies: [any BackgroundTaskDependency] = [],
        _ work: @escaping @Sendable () throws -> Value
    ) -> BackgroundTask<Value> {
        let operation = TaskOperation(work: work)
        operation.queuePriority = priority.queuePriority
        for dependency in dependencies {
            let upstream = dependency.dependencyHandle.operation
            // Foundation does not retain an operation's dependents (see `DependentsKeeper`).
            (upstream as? any TaskOperating)?.dependents.keep(BackgroundTaskHandle(operation: operation))
            operation.addDependency(upstream)
        }
        operations.addOperation(operation)
        return BackgroundTask(operation: operation)
    }

    /// Queues `work`, then suspends until it has finished, and returns its value.
    ///
    /// ```swift
    /// let digest = try await BackgroundQueue.shared.performAndWait(priority: .high) { try sha256(of: file) }
    /// ```
    ///
    /// Cancelling the calling Swift task cancels the background task: if its work has not started,
    /// it never runs and this throws `CancellationError`.
    ///
    /// - Parameters:
    ///   - priority: How soon the task starts relative to the other ready tasks of this queue.
    ///   - dependencies: Tasks that must finish (or be cancelled) before this one starts.
    ///   - work: The work. It runs on one of the queue's threads.
    /// - Returns: What `work` returns.
    /// - Throws: `CancellationError` if the task was cancelled before its work started, or the error
    ///   `work` threw.
    public func performAndWait<Value: Sendable>(
        priority: BackgroundTaskPriority = .normal,
        after dependencies: [any BackgroundTaskDependency] = [],
        _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        let task = enqueue(priority: priority, after: dependencies, work)
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Cancels every task queued or running on this queue, as ``BackgroundTask/cancel()`` does:
    /// work that has not started never runs, and its ``BackgroundTask/value`` throws
    /// `CancellationError`.
    public func cancelAllTasks() {
        for case let operation as any TaskOperating in operations.operations {
            operation.cancelTask()
        }
    }

    /// Whether the work of the ``BackgroundTask`` running on the calling thread has been cancelled.
    ///
    /// Long work polls it to stop early:
    ///
    /// ```swift
    /// queue.enqueue {
    ///     for page in pages {
    ///         if BackgroundQueue.isCurrentTaskCancelled { throw CancellationError() }
    ///         render(page)
    ///     }
    /// }
    /// ```
    ///
    /// It is `false` outside the work of a background task.
    public static var isCurrentTaskCancelled: Bool {
        current.current?.isSet ?? false
    }

    /// The cancellation flag of the task whose work runs on the calling thread.
    static let current = ThreadLocalSlot<CancellationFlag>()

    // MARK: - The shared queue

    private static let sharedSlot = Lock(SharedSlot<BackgroundQueue>(), rank: .backgroundQueueShared)

    /// The app-wide queue, created on first use with a concurrency of the active processor count.
    ///
    /// ```swift
    /// BackgroundQueue.shared.enqueue { try compactDatabase() }
    /// ```
    ///
    /// Prefer your own queues in libraries and tests.
    public static var shared: BackgroundQueue {
        sharedSlot.withLock { slot in
            slot.use(orMake: { BackgroundQueue(name: "Herald.BackgroundQueue.shared") })
        }
    }

    /// Replaces ``shared``, once, before anything has used it.
    ///
    /// ```swift
    /// // At start-up, before any other code runs:
    /// try BackgroundQueue.setShared(BackgroundQueue(name: "app", maxConcurrentTasks: 4))
    /// ```
    ///
    /// - Parameter queue: The queue that ``shared`` returns from now on.
    /// - Throws: ``BackgroundQueueError`` with code ``BackgroundQueueError/Code/sharedAlreadyInUse`` if
    ///   ``shared`` has already been used, or ``BackgroundQueueError/Code/sharedAlreadyReplaced`` if it
    ///   was replaced before. In both cases ``shared`` is unchanged.
    public static func setShared(_ queue: BackgroundQueue) throws(BackgroundQueueError) {
        try sharedSlot.withLock { (slot: inout SharedSlot<BackgroundQueue>) throws(BackgroundQueueError) in
            try slot.replace(with: queue)
        }
    }
}

/// A lazily created value that can be replaced once, before its first use.
struct SharedSlot<Value: Sendable>: Sendable {
    private var value: Value?
    private var wasUsed = false

    /// Returns the value, creating it with `make` if nobody set it.
    mutating func use(orMake make: () -> Value) -> Value {
        wasUsed = true
        let used = value ?? make()
        value = used
        return used
    }

    /// Sets the value, if it has not been used or replaced yet.
    mutating func replace(with newValue: Value) throws(BackgroundQueueError) {
        guard !wasUsed else {
            throw BackgroundQueueError(
                code: .sharedAlreadyInUse, detail: "found BackgroundQueue.shared already used")
        }
        // Not used yet: only a replacement can have set the value.
        guard value == nil else {
            throw BackgroundQueueError(
                code: .sharedAlreadyReplaced, detail: "found it already replaced once")
        }
        value = newValue
    }
}

/// The error for a ``BackgroundQueue`` used with a value it cannot take.
///
/// ```swift
/// do {
///     try queue.setMaxConcurrentTasks(0)
/// } catch {
///     print(error)   // BackgroundQueue: expected maxConcurrentTasks of at least 1, found 0
/// }
/// ```
public struct BackgroundQueueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; compare it with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        /// What the message says was expected.
        let expectation: String

        /// A maximum concurrency below 1 was given.
        public static let invalidMaxConcurrentTasks = Code(
            name: "invalidMaxConcurrentTasks", expectation: "expected maxConcurrentTasks of at least 1")
        /// ``BackgroundQueue/setShared(_:)`` was called after ``BackgroundQueue/shared`` was used.
        public static let sharedAlreadyInUse = Code(
            name: "sharedAlreadyInUse",
            expectation: "expected setShared(_:) before the first use of BackgroundQueue.shared")
        /// ``BackgroundQueue/setShared(_:)`` was called a second time.
        public static let sharedAlreadyReplaced = Code(
            name: "sharedAlreadyReplaced", expectation: "expected setShared(_:) to be called at most once")

        /// The code's name, such as `invalidMaxConcurrentTasks`.
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// What was found instead of what was expected.
    public let detail: String

    /// A message that says what was expected and what was found.
    public var description: String {
        "BackgroundQueue: \(code.expectation), \(detail)"
    }
}
