/// The task of the `async` call an observer is running, so that `cancel()` can cancel it.
///
/// The mailbox starts one call at a time, so there is at most one task here. The task's body first
/// waits until ``launch(_:)`` has stored it (``armed()``), so that a `cancel()` made once the
/// handler has started always finds the task and cancels it before returning.
final class AsyncCallSlot: Sendable {
    private struct State: Sendable {
        /// The running call's task, once ``launch(_:)`` has stored it: the call is then armed.
        var task: Task<Void, Never>?
        var waiter: CheckedContinuation<Void, Never>?
        var isCancelled = false
    }

    /// Herald's ``Lock``, which ThreadSanitizer sees, rather than a bare `Mutex`.
    private let state = Lock(State(), rank: .asyncCall)

    /// Starts the call's task with `makeTask` and stores it.
    func launch(_ makeTask: () -> Task<Void, Never>) {
        let task = makeTask()
        let (waiter, cancelled) = state.withLock { state in
            state.task = task
            return (state.waiter.take(), state.isCancelled)
        }
        if cancelled { task.cancel() }
        waiter?.resume()
    }

    /// Returns once ``launch(_:)`` has stored the task that calls it.
    func armed() async {
        if state.withLock({ $0.task != nil }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isArmed = state.withLock { state in
                if state.task != nil { return true }
                state.waiter = continuation
                return false
            }
            if isArmed { continuation.resume() }
        }
    }

    /// The call has returned: the next one gets a task of its own.
    func finished() {
        state.withLock { $0.task = nil }
    }

    /// The observation ended: cancels the running task, if any, and every later one.
    func cancel() {
        let task = state.withLock { state in
            state.isCancelled = true
            return state.task
        }
        task?.cancel()
    }
}
