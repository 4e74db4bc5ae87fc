import Dispatch
import Herald

/// A latch for async code: ``wait()`` suspends until ``open()`` has been called, without sleeping.
final class AsyncLatch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isOpen: Bool {
        state.withLock { $0.isOpen }
    }
}

/// Checks that calls never overlap: ``enter()`` and ``leave()`` around each call.
final class OverlapProbe: Sendable {
    private let state = Locked((inside: 0, overlaps: 0))

    func enter() {
        state.withLock { state in
            state.inside += 1
            if state.inside > 1 { state.overlaps += 1 }
        }
    }

    func leave() {
        state.withLock { $0.inside -= 1 }
    }

    var overlaps: Int {
        state.withLock { $0.overlaps }
    }
}

struct Numbered: TypedNotification, Equatable {
    let poster: Int
    let index: Int
}

/// How long a test waits for async handlers before it fails. Only a failing test waits that long:
/// async handlers run on the cooperative pool (two threads on two cores), which a CPU-bound
/// synchronous test running in parallel, such as the user-info fuzz under ThreadSanitizer, can
/// hold for minutes.
let asyncPatience = Duration.seconds(600)
