/// The task of the `async` call an observer is running, so that `cancel()` can cancel it, and the
/// arguments of that call until its task takes them, so that `cancel()` releases them.
///
/// The mailbox starts one call at a time, so there is at most one task here. The task's body first
/// waits until ``launch(_:)`` has stored it (``armed()``), so that a `cancel()` made once the
/// handler has started always finds the task and cancels it before returning. A `cancel()` made
/// before the task takes its arguments (``takeArguments()``) releases them, with the handler and
/// what it captures, before it returns; the call then does not run.
final class AsyncCallSlot<Arguments: Sendable>: Sendable {
    private struct State: Sendable {
        /// The running call's task, once ``launch(_:)`` has stored it: the call is then armed.
        var task: Task<Void, Never>?
        /// What the next call needs (its handler and notification), from ``prepare(_:)`` until the
        /// call takes it or the observation ends.
        var arguments: Arguments?
        var waiter: CheckedContinuation<Void, Never>?
        var isCancelled = false
    }

    /// Herald's ``Lock``, which ThreadSanitizer sees, rather than a bare `Mutex`.
    private let state = Lock(State(), rank: .asyncCall)

    /// Keeps the arguments of the next call until its task takes them; returns `false`, and keeps
    /// nothing, once the observation has ended.
    func prepare(_ arguments: Arguments) -> Bool {
        state.withLock { state in  // if not kept, `arguments` is released by the caller, after the lock
            guard !state.isCancelled else { return false }
            state.arguments = arguments
            return true
        }
    }

    /// The arguments of the call, for its task, once: `nil` if the observation ended first.
    func takeArguments() -> Arguments? {
        state.withLock { $0.arguments.take() }
    }

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

    /// The observation ended: cancels the running task, if any, and every later one, and releases
    /// the arguments of a call that has not started.
    func cancel() {
        let (task, arguments) = state.withLock { state in
            state.isCancelled = true
            return (state.task, state.arguments.take())
        }
        task?.cancel()
        withExtendedLifetime(arguments) {}  // released here, after the lock
    }
}
