/// Work that must run on a given target, offered to blocked waiters that may occupy it.
final class HelpRequest: Sendable {
    private let target: DeliveryTarget
    private let work: @Sendable () -> Void

    init(target: DeliveryTarget, work: @escaping @Sendable () -> Void) {
        self.target = target
        self.work = work
    }

    func runIfCurrent(isolation: (any Actor)?) {
        if target.isCurrent(isolation: isolation) {
            work()
        }
    }
}
