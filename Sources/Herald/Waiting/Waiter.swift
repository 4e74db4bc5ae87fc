import Dispatch

/// A thread that is blocked in a waiting call (`postAndWait`, `performAndWait`).
///
/// While it waits, the thread still serves *help requests*: work for a target that the waiting
/// thread itself occupies. This is how a nested wait A → B → A completes: the handler on B wants
/// to run something on A, A's only thread is the one blocked here, so that thread runs it.
///
/// Waiters form a chain through ``parent``: a handler that runs on behalf of a waiting caller
/// installs that caller's waiter as the thread's current chain, so a wait started inside the
/// handler can ask every waiter up the chain for help.
final class Waiter: Sendable {
    private struct State {
        var isDone = false
        var requests: [HelpRequest] = []
    }

    /// The chain of waiters on whose behalf the current thread runs, if any.
    static let chain = ThreadLocalSlot<Waiter>()

    /// The isolation of the waiting caller, used to decide whether help requests run here.
    let isolation: (any Actor)?
    /// The waiter this one runs on behalf of.
    let parent: Waiter?
    private let state = Lock(State(), rank: .waiter)
    /// The waiting thread's semaphore. One per thread, reused by its waits: ``wait(until:for:)``
    /// checks its own state after each wake-up, so a signal meant for an outer wait of the same
    /// thread, or one left over from a wait that timed out, only costs a turn of its loop.
    let semaphore = Waiter.threadSemaphore.current

    /// The semaphore of each thread that has waited.
    private static let threadSemaphore = ThreadLocalObject { DispatchSemaphore(value: 0) }

    /// A waiter for the calling thread, which is the one that will call ``wait(until:for:)``.
    init(isolation: (any Actor)?) {
        self.isolation = isolation
        self.parent = Waiter.chain.current
    }

    /// Marks the wait as complete and wakes the waiting thread.
    func finish() {
        state.withLock { $0.isDone = true }
        semaphore.signal()
    }

    /// Offers work to the waiting thread; it runs it if it occupies the request's target.
    func offer(_ request: HelpRequest) {
        let accepted = state.withLock { state -> Bool in
            guard !state.isDone else { return false }
            state.requests.append(request)
            return true
        }
        if accepted { semaphore.signal() }
    }

    /// The waiters up the calling thread's chain, which `waiter` (made on this thread) runs for.
    static func chainAbove(_ waiter: Waiter) -> [Waiter] {
        Array(sequence(first: waiter, next: \.parent).dropFirst())
    }

    /// Offers `request` to every waiter up the calling thread's chain.
    static func askChainForHelp(_ makeRequest: () -> HelpRequest) {
        guard let first = chain.current else { return }
        let request = makeRequest()
        for waiter in sequence(first: first, next: \.parent) {
            waiter.offer(request)
        }
    }

    /// Blocks until ``finish()`` is called, `group` completes, or `deadline` passes, serving help
    /// requests meanwhile.
    ///
    /// A group made for this waiter signals its semaphore itself when it completes, without
    /// touching this waiter: the delivering thread then writes one object fewer before the wake.
    ///
    /// - Returns: `true` if the wait completed, `false` if the deadline passed first.
    func wait(until deadline: DispatchTime = .distantFuture, for group: WaitGroup? = nil) -> Bool {
        // However the wait ends, no more help is offered to it.
        defer { state.withLock { $0.isDone = true } }
        while true {
            let (isDone, requests) = state.withLock { state in
                defer { state.requests.removeAll() }
                return (state.isDone, state.requests)
            }
            for request in requests where request.target.isCurrent(isolation: isolation) {
                request.work()
            }
            if isDone || group?.isComplete == true { return true }
            if !requests.isEmpty { continue }
            if semaphore.wait(timeout: deadline) == .timedOut {
                return state.withLock { $0.isDone } || group?.isComplete == true
            }
        }
    }
}
