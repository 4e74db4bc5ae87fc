import PostgresNIO
import Synchronization

/// Wakes a durable link's loop: the reader's (``DurableReader``) on a `NOTIFY`, on a timer, or on
/// cancellation; a write-only link's (``WriteOnlyConsumer``) on its timer or on cancellation. A
/// wake-up that comes while the reader reads is kept for its next wait (that read may have missed
/// the row).
final class Waker: Sendable {
    private struct State {
        var isSignalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard let waiter = state.waiter else {
                state.isSignalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns on the next signal, after `timeout`, or on cancellation.
    func wait(for timeout: Duration, on loop: any EventLoop) async {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        let timer = loop.scheduleTask(in: .nanoseconds(nanoseconds)) { self.signal() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isDue = state.withLock { state in
                    if state.isSignalled || Task.isCancelled {
                        state.isSignalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if isDue { continuation.resume() }
            }
        } onCancel: {
            self.signal()
        }
        timer.cancel()
    }
}
