import Dispatch
import Foundation
import Synchronization

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
        core.isAcceptingWork
    }

    /// Whether the OS thread has finished: it was shut down and all queued work has run.
    public var isStopped: Bool {
        core.isStopped
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
        submit(work)
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
        submit(after: delay, work)
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
        let waiter = Waiter(isolation: isolation)
        let job = OnceJob {
            Waiter.chain.withValue(waiter) { call.run() }
            waiter.finish()
        }
        guard core.submit(.block(job.run)) else {
            throw DeliveryThreadError(code: .shutDown, threadName: name)
        }
        Waiter.askChainForHelp { HelpRequest(target: .thread(self), work: job.run) }
        _ = waiter.wait()
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
        let stopped = core.stopped
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            stopped.notify(queue: .global()) { continuation.resume() }
        }
    }

    // MARK: - Submitting work (the delivery target's side)

    /// Schedules `job` to run later on this thread; rejected work goes to the `rejectionHandler`.
    func submit(_ job: @escaping @Sendable () -> Void) {
        if !core.submit(.block(job)) {
            core.reject(DeliveryThreadError(code: .shutDown, threadName: name))
        }
    }

    /// Schedules `job` to run later on this thread, or returns the error if the thread was shut down.
    ///
    /// Herald uses this for notification deliveries: when the thread has been shut down, the
    /// observation that needed it ends, the error goes to the hub's
    /// ``NotificationHub/errorHandler`` (not to this thread's `rejectionHandler`), and a waiting
    /// post gets the failure in its report instead of waiting forever.
    func trySubmit(_ job: @escaping @Sendable () -> Void) -> (any Error)? {
        core.submit(.block(job)) ? nil : DeliveryThreadError(code: .shutDown, threadName: name)
    }

    /// Schedules `job` to run on this thread once `delay` has passed. The thread keeps its own
    /// timers: no dispatch queue or run loop is involved.
    func submit(after delay: Duration, _ job: @escaping @Sendable () -> Void) {
        if !core.submit(after: delay, job) {
            core.reject(DeliveryThreadError(code: .shutDown, threadName: name))
        }
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
        let unownedJob = UnownedJob(job)
        if !core.submit(.job(unownedJob, asUnownedSerialExecutor())) {
            core.reject(DeliveryThreadError(code: .shutDown, threadName: name))
        }
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

/// The error for work that a ``DeliveryThread`` rejected because it was shut down.
///
/// ```swift
/// do {
///     try network.performAndWait { socket.flush() }
/// } catch let error as DeliveryThreadError where error.code == .shutDown {
///     print(error)   // DeliveryThread 'network' rejected work: expected a running thread, found it shut down
/// }
/// ```
///
/// ``DeliveryThread/performAndWait(isolation:_:)`` throws it; every other rejection goes to the
/// thread's `rejectionHandler`.
public struct DeliveryThreadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; compare it with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case shutDown
            case shutDownBeforeDelayEnded
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// Work was submitted after ``DeliveryThread/shutdown()``.
        public static let shutDown = Code(.shutDown)

        /// Work submitted with ``DeliveryThread/perform(after:_:)`` was still waiting for its delay
        /// when the thread was shut down.
        public static let shutDownBeforeDelayEnded = Code(.shutDownBeforeDelayEnded)

        /// The code's name, such as `shutDown`.
        public var description: String {
            switch value {
            case .shutDown: return "shutDown"
            case .shutDownBeforeDelayEnded: return "shutDownBeforeDelayEnded"
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// The name of the thread that rejected the work.
    public let threadName: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - threadName: The name of the thread that rejected the work.
    public init(code: Code, threadName: String) {
        self.code = code
        self.threadName = threadName
    }

    /// A message that names the thread, what was expected and what was found.
    public var description: String {
        switch code {
        case .shutDownBeforeDelayEnded:
            return "DeliveryThread '\(threadName)' rejected work scheduled with perform(after:): "
                + "expected the thread to be running when the delay ended, found it shut down first"
        default:
            return "DeliveryThread '\(threadName)' rejected work: expected a running thread, found it shut down"
        }
    }
}

/// The queue, timers and OS thread behind a ``DeliveryThread``.
///
/// The OS thread holds this core, not the `DeliveryThread`, so that releasing the last reference to
/// the `DeliveryThread` shuts the thread down.
final class ThreadCore: Sendable {
    enum Item: Sendable {
        case block(@Sendable () -> Void)
        case job(UnownedJob, UnownedSerialExecutor)
    }

    private struct DelayedWork {
        let deadline: UInt64
        let work: @Sendable () -> Void
    }

    private enum Phase {
        case running, stopping, stopped
    }

    private struct State {
        var ready: [Item] = []
        /// Delayed work, sorted by deadline; equal deadlines keep submission order.
        var timers: [DelayedWork] = []
        var phase = Phase.running
        /// The OS thread is waiting (or about to wait) on `wakeUp`; whoever clears it signals.
        var isSleeping = false
    }

    /// The core whose OS thread is the calling thread, if any.
    static let current = ThreadLocalSlot<ThreadCore>()

    let name: String
    /// Entered until the OS thread exits.
    let stopped = DispatchGroup()
    /// Signalled once `Thread.start()` has returned on the creating thread.
    let started = DispatchSemaphore(value: 0)
    private let rejectionHandler: @Sendable (DeliveryThreadError) -> Void
    private let state = Lock(State())
    private let wakeUp = DispatchSemaphore(value: 0)

    init(name: String, rejectionHandler: @escaping @Sendable (DeliveryThreadError) -> Void) {
        self.name = name
        self.rejectionHandler = rejectionHandler
        stopped.enter()
    }

    var isAcceptingWork: Bool {
        state.withLock { $0.phase == .running }
    }

    var isStopped: Bool {
        state.withLock { $0.phase == .stopped }
    }

    /// Queues `item`; returns `false` if the thread no longer accepts work.
    func submit(_ item: Item) -> Bool {
        let (accepted, mustWake) = state.withLock { state -> (Bool, Bool) in
            guard state.phase == .running else { return (false, false) }
            state.ready.append(item)
            return (true, Self.takeSleeper(&state))
        }
        if mustWake { wakeUp.signal() }
        return accepted
    }

    /// Queues `work` to become ready after `delay`; returns `false` if the thread no longer accepts
    /// work.
    func submit(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let (deadline, overflow) = now.addingReportingOverflow(UInt64(delay.clampedNanoseconds))
        let timer = DelayedWork(deadline: overflow ? .max : deadline, work: work)
        let (accepted, mustWake) = state.withLock { state -> (Bool, Bool) in
            guard state.phase == .running else { return (false, false) }
            let index = state.timers.firstIndex { $0.deadline > timer.deadline } ?? state.timers.endIndex
            state.timers.insert(timer, at: index)
            return (true, index == 0 && Self.takeSleeper(&state))
        }
        if mustWake { wakeUp.signal() }
        return accepted
    }

    func shutdown() {
        let mustWake = state.withLock { state -> Bool in
            if state.phase == .running { state.phase = .stopping }
            return Self.takeSleeper(&state)
        }
        if mustWake { wakeUp.signal() }
    }

    func reject(_ error: DeliveryThreadError) {
        rejectionHandler(error)
    }

    /// `name`, cut to the 15 bytes that Linux allows for a thread name, on a character boundary.
    static func osThreadName(_ name: String) -> String {
        #if os(Linux)
        var result = ""
        var length = 0
        for character in name {
            length += character.utf8.count
            guard length <= 15 else { break }
            result.append(character)
        }
        return result
        #else
        return name
        #endif
    }

    /// Clears the sleeping flag; returns whether the caller must signal `wakeUp`.
    private static func takeSleeper(_ state: inout State) -> Bool {
        guard state.isSleeping else { return false }
        state.isSleeping = false
        return true
    }

    private enum Step {
        case run
        case sleep(until: DispatchTime)
        case exit(rejectedTimers: Int)
    }

    /// The OS thread's body.
    func run() {
        // On Linux a name set before `start()` does not reach the thread, a name set on the thread
        // before `start()` has returned on the creating thread is lost too (the `Thread` does not
        // know its pthread yet), and one longer than the OS limit is refused outright. So the name
        // is set here, after `started`, cut to the limit.
        started.wait()
        Thread.current.name = Self.osThreadName(name)
        Self.current.withValue(self) {
            var batch: [Item] = []
            // Delayed work still pending at the exit, released only after the lock: releasing a
            // closure can run any `deinit`, which may use this thread.
            var rejected: [DelayedWork] = []
            while true {
                let step = state.withLock { state -> Step in
                    let now = DispatchTime.now().uptimeNanoseconds
                    if let firstLater = state.timers.firstIndex(where: { $0.deadline > now }) {
                        if firstLater > 0 {
                            state.ready.append(contentsOf: state.timers[..<firstLater].lazy.map { .block($0.work) })
                            state.timers.removeFirst(firstLater)
                        }
                    } else if !state.timers.isEmpty {
                        state.ready.append(contentsOf: state.timers.lazy.map { .block($0.work) })
                        state.timers.removeAll()
                    }
                    if !state.ready.isEmpty {
                        swap(&state.ready, &batch)
                        return .run
                    }
                    if state.phase != .running {
                        state.phase = .stopped
                        swap(&state.timers, &rejected)
                        return .exit(rejectedTimers: rejected.count)
                    }
                    state.isSleeping = true
                    let deadline = state.timers.first.map { DispatchTime(uptimeNanoseconds: $0.deadline) }
                    return .sleep(until: deadline ?? .distantFuture)
                }
                switch step {
                case .run:
                    for item in batch {
                        switch item {
                        case .block(let work): work()
                        case .job(let job, let executor): job.runSynchronously(on: executor)
                        }
                    }
                    batch.removeAll(keepingCapacity: batch.capacity <= 4096)
                case .sleep(let deadline):
                    _ = wakeUp.wait(timeout: deadline)
                    // A signal that arrives after a timeout only causes one extra pass of the loop.
                    state.withLock { $0.isSleeping = false }
                case .exit(let rejectedTimers):
                    for _ in 0..<rejectedTimers {
                        reject(DeliveryThreadError(code: .shutDownBeforeDelayEnded, threadName: name))
                    }
                    rejected.removeAll()  // released here, outside the lock, before anyone learns it stopped
                    stopped.leave()
                    return
                }
            }
        }
    }
}
