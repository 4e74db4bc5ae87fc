import Synchronization

/// A job that runs at most once, whoever gets to it first: the target or a helping waiter.
final class OnceJob: Sendable {
    private let claimed = Atomic<Bool>(false)
    private let work: @Sendable () -> Void

    init(_ work: @escaping @Sendable () -> Void) {
        self.work = work
    }

    func run() {
        if !claimed.exchange(true, ordering: .acquiringAndReleasing) {
            work()
        }
    }
}
