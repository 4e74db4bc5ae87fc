import Synchronization

/// A flag set once, when something is cancelled, and read from any thread.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    var isSet: Bool {
        flag.load(ordering: .acquiring)
    }

    func set() {
        flag.store(true, ordering: .releasing)
    }
}
