import Foundation

/// The queue, timers and OS thread behind a ``DeliveryThread``.
///
/// The OS thread holds this core, not the `DeliveryThread`, so that releasing the last reference to
/// the `DeliveryThread` shuts the thread down.
final class ThreadCore: Sendable {
    enum Item: Sendable {
        case block(@Sendable () -> Void)
        case job(UnownedJob, UnownedSerialExecutor)
    }

    private typealias DelayedItem = (deadline: UInt64, item: Item)

    enum Phase {
        case running, stopping, stopped
    }

    private struct State {
        var ready: [Item] = []
        /// Delayed work, sorted by deadline; equal deadlines keep submission order.
        var timers: [DelayedItem] = []
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
    /// Receives the work the thread rejects (see ``DeliveryThread/init(name:qualityOfService:rejectionHandler:)``).
    let rejectionHandler: @Sendable (DeliveryThreadError) -> Void
    private let state = Lock(State(), rank: .thread)
    private let wakeUp = DispatchSemaphore(value: 0)

    init(name: String, rejectionHandler: @escaping @Sendable (DeliveryThreadError) -> Void) {
        self.name = name
        self.rejectionHandler = rejectionHandler
        stopped.enter()
    }

    var phase: Phase {
        state.withLock { $0.phase }
    }

    /// Queues `item`, to become ready once `delay`, if any, has passed; returns the error if the
    /// thread no longer accepts work.
    func submit(_ item: Item, after delay: Duration? = nil) -> DeliveryThreadError? {
        let deadline = delay?.deadlineFromNow.uptimeNanoseconds
        let (accepted, mustWake) = state.withLock { state -> (Bool, Bool) in
            guard state.phase == .running else { return (false, false) }
            guard let deadline else {
                state.ready.append(item)
                return (true, Self.takeSleeper(&state))
            }
            let index = state.timers.firstIndex { $0.deadline > deadline } ?? state.timers.endIndex
            state.timers.insert((deadline, item), at: index)
            return (true, index == 0 && Self.takeSleeper(&state))
        }
        if mustWake { wakeUp.signal() }
        return accepted ? nil : DeliveryThreadError(code: .shutDown, threadName: name)
    }

    func shutdown() {
        let mustWake = state.withLock { state -> Bool in
            if state.phase == .running { state.phase = .stopping }
            return Self.takeSleeper(&state)
        }
        if mustWake { wakeUp.signal() }
    }

    /// `name`, cut to the 15 bytes that Linux allows for a thread name, on a character boundary.
    static func osThreadName(_ name: String) -> String {
        #if os(Linux)
        var result = name
        while result.utf8.count > 15 {
            result.removeLast()
        }
        return result
        #else
        return name
        #endif
    }

    /// Clears the sleeping flag; returns whether the caller must signal `wakeUp`.
    private static func takeSleeper(_ state: inout State) -> Bool {
        defer { state.isSleeping = false }
        return state.isSleeping
    }

    private enum Step {
        case run
        case sleep(until: DispatchTime)
        case exit
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
            var rejected: [DelayedItem] = []
            while true {
                let step = state.withLock { state -> Step in
                    let now = DispatchTime.now().uptimeNanoseconds
                    let dueCount = state.timers.firstIndex { $0.deadline > now } ?? state.timers.endIndex
                    if dueCount > 0 {
                        state.ready.append(contentsOf: state.timers[..<dueCount].lazy.map(\.item))
                        state.timers.removeFirst(dueCount)
                    }
                    if !state.ready.isEmpty {
                        swap(&state.ready, &batch)
                        return .run
                    }
                    if state.phase != .running {
                        state.phase = .stopped
                        swap(&state.timers, &rejected)
                        return .exit
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
                case .exit:
                    for _ in rejected {
                        rejectionHandler(DeliveryThreadError(code: .shutDownBeforeDelayEnded, threadName: name))
                    }
                    rejected.removeAll()  // released here, outside the lock, before anyone learns it stopped
                    stopped.leave()
                    return
                }
            }
        }
    }
}
