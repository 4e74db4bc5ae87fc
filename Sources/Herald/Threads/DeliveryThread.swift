import Foundation

/// A long-lived thread that runs submitted work one item at a time, in the order it was submitted.
///
/// Use it to own something that is not thread-safe, such as a socket or a parser: every call that
/// touches it goes through the thread, so the object itself needs no lock.
///
/// ```swift
/// let network = DeliveryThread(name: "network")
/// network.perform { socket.send(frame) }                         // later, on the thread
/// let bytes = try network.performAndWait { try socket.read() }   // waits for the result
/// network.perform(after: .seconds(30)) { socket.sendKeepAlive() }
/// hub.observe(Outgoing.self, on: .thread(network)) { note in socket.send(note.frame) }
/// network.shutdown()                                             // drains, then the thread exits
/// ```
///
/// It is also a `SerialExecutor`, so an actor can be pinned to it and all of its methods run there:
///
/// ```swift
/// actor Connection {
///     let thread: DeliveryThread
///     nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
/// }
/// ```
///
/// ## Threading
/// - Work runs on one dedicated OS thread, named `name` (`Thread.current.name`), in FIFO order of
///   submission. Work submitted from one thread runs in the order it was submitted; plain work,
///   hub deliveries and actor jobs share that one queue.
/// - ``perform(_:)`` always enqueues, even on the thread itself. ``performAndWait(isolation:_:)``
///   always completes before it returns, and runs inline when called on the thread itself.
/// - ``shutdown()`` stops accepting work; the work already queued still runs, then the OS thread
///   exits. Releasing the last reference to a thread shuts it down the same way.
/// - Work that is rejected because the thread was shut down is never dropped silently:
///   ``performAndWait(isolation:_:)`` throws ``DeliveryThreadError``, and every other path
///   (``perform(_:)``, ``perform(after:_:)``, hub deliveries, actor jobs) reports the error to the
///   `rejectionHandler` given to ``init(name:qualityOfService:rejectionHandler:)``, once per piece
///   of work and once per notification.
/// - It is built from a `Mutex` and a semaphore, not from a run loop, and behaves the same on
///   Linux and Apple platforms.
public final class DeliveryThread: SerialExecutor, CustomStringConvertible {
    /// The name of the thread, also set as the OS thread's `Thread.current.name` (on Linux cut to
    /// 15 bytes there).
    public let name: String

    let core: ThreadCore

    /// Creates and starts a thread.
    ///
    /// ```swift
    /// let network = DeliveryThread(name: "network", qualityOfService: .userInitiated) { error in
    ///     logger.error("\(error)")    // work submitted after shutdown
    /// }
    /// ```
    ///
    /// The thread runs until ``shutdown()`` is called or the last reference to it goes away.
    ///
    /// - Parameters:
    ///   - name: The thread's name, used in ``DeliveryThreadError`` messages and as the OS thread's
    ///     name (`Thread.current.name`). Linux limits OS thread names to 15 bytes, so a longer name is
    ///     cut to its first 15 bytes there; ``name`` keeps it whole.
    ///   - qualityOfService: The OS thread's quality of service. Linux ignores it.
    ///   - rejectionHandler: Receives the error for every piece of work the thread rejects without
    ///     being able to throw it (see ``DeliveryThreadError``). It is called on the thread that
    ///     submitted the work, or on this thread for delayed work that was still pending at shutdown,
    ///     and never while Herald holds a lock. The default writes one line to standard error.
    public init(
        name: String,
        qualityOfService: QualityOfService = .default,
        rejectionHandler: @escaping @Sendable (DeliveryThreadError) -> Void = DeliveryThread.writeToStandardError
    ) {
        self.name = name
        let core = ThreadCore(name: name, rejectionHandler: rejectionHandler)
        self.core = core
        // The OS thread holds the core only, never `self`, so releasing the last reference to the
        // DeliveryThread shuts it down instead of keeping it alive forever.
        let thread = Thread { core.run() }
        thread.qualityOfService = qualityOfService
        thread.start()
        core.started.signal()
    }

    deinit {
        core.shutdown()
    }

    /// Whether the calling code runs on this thread right now.
    ///
    /// It reads a thread-local value: it is cheap and never compares `Thread` objects.
    public var isCurrent: Bool {
        ThreadCore.current.current === core
    }

    /// Whether the thread still accepts new work, that is, ``shutdown()`` has not been called.
    public var isAcceptingWork: Bool {
        core.phase == .running
    }

    /// Whether the OS thread has finished: it was shut down and all queued work has run.
    public var isStopped: Bool {
        core.phase == .stopped
    }

    /// `DeliveryThread(name)`, for logs and test failures.
    public var description: String {
        "DeliveryThread(\(name))"
    }

    // MARK: - Running work

    /// Runs `work` later on this thread. It always enqueues, even when called on the thread itself.
    ///
    /// ```swift
    /// network.perform { socket.send(frame) }
    /// ```
    ///
    /// Work submitted from one thread runs in the order it was submitted. If the thread has been
    /// shut down, `work` does not run: the `rejectionHandler` receives a
    /// ``DeliveryThreadError/Code/shutDown`` error on the calling thread before `perform` returns.
    ///
    /// - Parameter work: The work to run on this thread.
    /// - Complexity: Amortised O(1).
    public func perform(_ work: @escaping @Sendable () -> Void) {
        report(core.submit(.block(work)))
    }

    /// Runs `work` on this thread once `delay` has passed, never earlier.
    ///
    /// ```swift
    /// network.perform(after: .seconds(30)) { socket.sendKeepAlive() }
    /// ```
    ///
    /// When the delay has passed, `work` is queued behind the work already waiting. If the thread is
    /// shut down before the delay ends, `work` does not run: the thread reports a
    /// ``DeliveryThreadError/Code/shutDownBeforeDelayEnded`` error to the `rejectionHandler`, on
    /// this thread, once the work queued before the shutdown has run. If it was already shut down
    /// when `perform(after:_:)` is called, the `rejectionHandler` is called right away on the
    /// calling thread.
    ///
    /// - Parameters:
    ///   - delay: The minimum time to wait. Zero or negative means "as soon as possible".
    ///   - work: The work to run on this thread.
    /// - Complexity: O(*t*) in the number of delayed items pending.
    public func perform(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        report(core.submit(.block(work), after: delay))
    }

    /// Runs `work` on this thread and waits for its result.
    ///
    /// ```swift
    /// let reply = try network.performAndWait {
    ///     try socket.send(request)        // any arguments by capture, any result, errors rethrown
    ///     return try socket.receive()
    /// }
    /// ```
    ///
    /// `performAndWait` always completes `work` before it returns. Called on the thread itself,
    /// `work` runs inline (also while a shut-down thread drains its queue). It takes part in Herald's
    /// waiting machinery: when work running on behalf of this call waits for this caller's own
    /// thread (A waits for B, which waits for A, between two `DeliveryThread`s, or with
    /// ``DeliveryTarget/performAndWait(isolation:_:)`` and `postAndWait(_:from:)`),
    /// the blocked caller runs that work, so the chain completes.
    ///
    /// ## When it can block forever
    /// It waits until the thread runs `work`, which happens after the work queued before it. It
    /// blocks forever if that earlier work never finishes, for example because it waits for
    /// something the caller holds outside Herald (a lock, a semaphore, `DispatchQueue.sync`).
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor isolation; leave the default.
    ///   - work: The work to run on this thread. It need not be `Sendable`, but it is `sending`:
    ///     the caller hands it over, with whatever it captures, and gets the result back the
    ///     same way, so no state is shared between the two threads. Return what the work
    ///     produces rather than mutating the caller's variables from inside it.
    /// - Returns: What `work` returns.
    /// - Throws: ``DeliveryThreadError`` with code ``DeliveryThreadError/Code/shutDown`` if the thread
    ///   no longer accepts work (then `work` did not run), or else whatever `work` throws.
    @available(*, noasync, message: "performAndWait blocks the calling thread; pin an actor to the thread and await it")
    public func performAndWait<T>(
        isolation: (any Actor)? = #isolation,
        _ work: sending @escaping () throws -> T
    ) throws -> sending T {
        if isCurrent {
            return try work()
        }
        let call = BlockingCall(work)
        try call.runWaiting(for: .thread(self), isolation: isolation) { job in
            if let error = trySubmit(job) { throw error }
        }
        return try call.result()
    }

    // MARK: - Shutting down

    /// Stops accepting work; the work already queued still runs, then the OS thread exits.
    ///
    /// ```swift
    /// network.perform { socket.flush() }
    /// network.shutdown()                 // the flush still runs; later work is rejected
    /// ```
    ///
    /// It returns at once and can be called from any thread, including this thread itself and
    /// from inside work running on it. Calling it again does nothing. Work submitted after it, even
    /// by work that runs during the drain, is rejected with ``DeliveryThreadError``; delayed work
    /// still pending is rejected and reported once the drain is over.
    public func shutdown() {
        core.shutdown()
    }

    /// Shuts the thread down and waits until the work queued before has run and the OS thread has
    /// exited.
    ///
    /// ```swift
    /// network.shutdownAndWait()
    /// assert(network.isStopped)
    /// ```
    ///
    /// Called on the thread itself, it only shuts down and returns at once, because the drain can
    /// only start once the current work returns.
    ///
    /// ## When it can block forever
    /// It waits for the queued work to finish. It blocks forever if some of that work never
    /// finishes, for example because it waits for the caller (`performAndWait` on the caller's
    /// thread from work queued here, or a lock the caller holds).
    @available(*, noasync, message: "shutdownAndWait blocks the calling thread", renamed: "shutdownGracefully()")
    public func shutdownAndWait() {
        core.shutdown()
        guard !isCurrent else { return }
        core.stopped.wait()
    }

    /// Shuts the thread down and suspends, blocking no thread, until the work queued before has
    /// run and the OS thread has exited.
    ///
    /// ```swift
    /// await network.shutdownGracefully()
    /// ```
    ///
    /// Called from work running on this thread (for example from an actor pinned to it), it only
    /// shuts down and returns, because the drain can only start once the current work returns.
    ///
    /// It suspends forever if some queued work never finishes.
    public func shutdownGracefully() async {
        core.shutdown()
        guard !isCurrent else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.stopped.notify(queue: .global()) { continuation.resume() }
        }
    }

    // MARK: - Submitting work (the delivery target's side)

    /// Schedules `job` to run later on this thread, or returns the error if the thread was shut down.
    ///
    /// Herald uses this for notification deliveries: when the thread has been shut down, the
    /// observation that needed it ends, the error goes to the hub's
    /// ``NotificationHub/errorHandler`` (not to this thread's `rejectionHandler`), and a waiting
    /// post gets the failure in its report instead of waiting forever.
    func trySubmit(_ job: @escaping @Sendable () -> Void) -> (any Error)? {
        core.submit(.block(job))
    }

    /// Reports the error of work that the core refused, because the thread was shut down, to the
    /// `rejectionHandler`.
    private func report(_ error: DeliveryThreadError?) {
        if let error { core.rejectionHandler(error) }
    }

    // MARK: - SerialExecutor

    /// Runs an actor's job on this thread; used by the Swift runtime for actors pinned to it.
    ///
    /// After ``shutdown()``, the job is rejected and reported to the `rejectionHandler`: the task
    /// waiting for it stays suspended, because running an actor's job on another thread would break
    /// the actor's isolation.
    ///
    /// - Parameter job: The job to run.
    public func enqueue(_ job: consuming ExecutorJob) {
        report(core.submit(.job(UnownedJob(job), asUnownedSerialExecutor())))
    }

    /// This thread as the executor of an actor.
    ///
    /// ```swift
    /// actor Connection {
    ///     let thread: DeliveryThread
    ///     nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    /// }
    /// ```
    ///
    /// Identity is enough to compare two `DeliveryThread`s, so this is an ordinary executor
    /// reference. The actor must keep the thread alive, for example in a stored property.
    ///
    /// - Returns: An unowned reference to this executor.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether `other` runs work in the same exclusive context as this thread: only itself does.
    ///
    /// - Parameter other: Another thread.
    /// - Returns: `true` if `other` is this thread.
    public func isSameExclusiveExecutionContext(other: DeliveryThread) -> Bool {
        self === other
    }

    /// Stops the program if the calling code does not run on this thread.
    ///
    /// The Swift runtime calls it for `assumeIsolated` and `preconditionIsolated` on an actor pinned
    /// to this thread, when the caller is not running an actor job, such as inside ``perform(_:)``.
    public func checkIsolated() {
        precondition(isCurrent, "Herald: expected to run on \(self), found another thread")
    }

    // MARK: - Reporting

    /// Writes a rejected-work error to standard error; the default `rejectionHandler`.
    ///
    /// - Parameter error: The error to report.
    @Sendable
    public static func writeToStandardError(_ error: DeliveryThreadError) {
        FileHandle.standardError.write(Data("Herald: \(error)\n".utf8))
    }
}
