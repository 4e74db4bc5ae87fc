import Herald
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A delivery executor that queues jobs until the test runs them, on the test's thread: the one
/// manual scheduler of HeraldTests (HeraldTesting's `TestDeliveryTarget` is not a dependency of
/// this target, and has no `onEnqueue`).
///
/// `onEnqueue`, when set, sees each job as it is enqueued and may run it right there instead (on
/// a thread of its choice), to pause the enqueueing thread at that exact point.
final class ManualExecutor: DeliveryExecutor {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var runners: [UInt] = []
    }

    private let state = Locked(State())
    private let hook = Locked<(@Sendable (@escaping @Sendable () -> Void) -> Bool)?>(nil)

    /// Sees each enqueued job; returns `true` if it took care of the job.
    func onEnqueue(_ body: (@Sendable (@escaping @Sendable () -> Void) -> Bool)?) {
        hook.withLock { $0 = body }
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        if let hook = hook.withLock({ $0 }), hook(job) { return }
        state.withLock { $0.jobs.append(job) }
    }

    var isCurrent: Bool {
        let me = Self.thread()
        return state.withLock { $0.runners.contains(me) }
    }

    /// The number of jobs waiting.
    var pendingCount: Int { state.withLock { $0.jobs.count } }

    /// Runs the oldest job, if any, on the calling thread.
    @discardableResult
    func runNext() -> Bool {
        let me = Self.thread()
        guard
            let job = state.withLock({ state -> (@Sendable () -> Void)? in
                guard !state.jobs.isEmpty else { return nil }
                state.runners.append(me)
                return state.jobs.removeFirst()
            })
        else { return false }
        job()
        state.withLock { state in
            if let index = state.runners.lastIndex(of: me) { state.runners.remove(at: index) }
        }
        return true
    }

    /// Runs jobs until none is left; returns how many ran.
    @discardableResult
    func runUntilIdle() -> Int {
        var count = 0
        while runNext() { count += 1 }
        return count
    }

    private static func thread() -> UInt {
        #if canImport(Darwin)
        return UInt(bitPattern: pthread_self())
        #else
        return UInt(pthread_self())
        #endif
    }
}
