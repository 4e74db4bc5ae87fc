import Dispatch
import Foundation
import Herald
import Synchronization

/// Whether ``stackAddress()`` measures the thread's real stack.
///
/// Under AddressSanitizer with `detect_stack_use_after_return` (its default), locals live in
/// "fake stack" frames on the heap, so addresses say nothing about depth. `.ci/run` turns that
/// option off for its sanitizer run; elsewhere the depth checks are skipped under ASan.
let stackDepthIsMeasurable: Bool = {
    typealias CurrentFakeStack = @convention(c) () -> UnsafeMutableRawPointer?
    guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "__asan_get_current_fake_stack") else {
        return true
    }
    return unsafeBitCast(symbol, to: CurrentFakeStack.self)() == nil
}()

/// The address of a local variable in the caller's frame: how deep the calling thread's stack is.
///
/// Stacks grow downwards, so `outer - inner` is the number of bytes between two frames on one
/// thread. Tests use it to show that something does not get deeper each time it is used.
@inline(never)
func stackAddress() -> UInt {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}

/// A weak reference that a test checks after the strong ones are gone.
final class WeakProbe<Object: AnyObject>: @unchecked Sendable {  // Written once, in init; read only.
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }

    var isReleased: Bool { object == nil }
}

/// An object whose only job is to be captured and then released.
final class Captured: Sendable {
    let id: Int

    init(id: Int = 0) {
        self.id = id
    }
}

/// A delivery target that a test can hold shut while notifications queue behind it, then open.
///
/// Dispatch queues are suspended and a ``DeliveryThread`` is kept busy by a blocked work item.
/// The main queue and actors cannot be held shut without blocking a thread the test runner needs,
/// and an operation queue is not suspended (see below), so for them `close` and `open` do nothing.
final class GatedTarget: Sendable {
    let name: String
    /// The target, or `nil` for the actor kind, which observes on ``store``.
    let target: DeliveryTarget?
    let store: Store?
    let isGated: Bool
    private let closeBody: @Sendable () -> Void
    private let openBody: @Sendable () -> Void
    private let finishBody: @Sendable () -> Void

    init(
        _ name: String, _ target: DeliveryTarget?, store: Store? = nil, isGated: Bool = true,
        close: @escaping @Sendable () -> Void = {}, open: @escaping @Sendable () -> Void = {},
        finish: @escaping @Sendable () -> Void = {}
    ) {
        self.name = name
        self.target = target
        self.store = store
        self.isGated = isGated
        self.closeBody = close
        self.openBody = open
        self.finishBody = finish
    }

    func close() { closeBody() }
    func open() { openBody() }
    /// Releases what the target owns (a thread); call once the test is done with it.
    func finish() { finishBody() }

    /// One fresh target of every asynchronous kind.
    static func all() -> [GatedTarget] {
        let serial = DispatchQueue(label: "gated.serial")
        let concurrent = DispatchQueue(label: "gated.concurrent", attributes: .concurrent)
        let operations = makeKeptOperationQueue()
        operations.maxConcurrentOperationCount = 4
        let executor = QueueExecutor(label: "gated.executor")
        let thread = DeliveryThread(name: "gated.thread")
        let threadGate = DispatchSemaphore(value: 0)
        return [
            GatedTarget("main", .mainQueue, isGated: false),
            GatedTarget("serial queue", .queue(serial), close: { serial.suspend() }, open: { serial.resume() }),
            GatedTarget(
                "concurrent queue", .queue(concurrent), close: { concurrent.suspend() }, open: { concurrent.resume() }),
            // Not suspended: toggling `isSuspended` while other threads add operations crashed inside
            // swift-corelibs-foundation under AddressSanitizer (see `makeKeptOperationQueue()`).
            GatedTarget("operation queue ×4", .operationQueue(operations), isGated: false),
            GatedTarget(
                "executor", .executor(executor), close: { executor.queue.suspend() },
                open: { executor.queue.resume() }),
            GatedTarget(
                "delivery thread", .thread(thread), close: { thread.perform { threadGate.wait() } },
                open: { threadGate.signal() }, finish: { thread.shutdown() }),
            GatedTarget("actor", nil, store: Store(), isGated: false),
        ]
    }
}

extension NotificationHub {
    /// Observes `N` on `gated`'s target, or on its actor.
    func observe<N: TypedNotification>(
        _ type: N.Type, on gated: GatedTarget, _ handler: @escaping @Sendable (N) throws -> Void
    ) -> ObservationToken {
        if let target = gated.target {
            return observe(type, on: target, handler)
        }
        guard let store = gated.store else { preconditionFailure("a gated target without a target or an actor") }
        return observe(type, on: store) { _, note in try handler(note) }
    }
}

/// Counts arrivals and resumes a waiting test once `expected` have arrived.
final class Countdown: Sendable {
    private struct State {
        var remaining: Int
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Locked<State>

    init(_ expected: Int) {
        state = Locked(State(remaining: expected))
    }

    func arrive() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Suspends until every expected arrival has happened.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.remaining <= 0 { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// An object that calls back when it is deallocated: a `deinit` that uses the API it was captured
/// by, as a model or a connection that cleans up after itself does.
final class Tattler: Sendable {
    private let onDeinit: @Sendable () -> Void

    init(onDeinit: @escaping @Sendable () -> Void) {
        self.onDeinit = onDeinit
    }

    deinit {
        onDeinit()
    }
}

/// Runs a blocking `body` on a new thread and returns its result with how long it took there.
///
/// The time is measured on that thread, around `body` only: resuming the awaiting test can take
/// much longer when the cooperative pool is busy with other tests (under a sanitizer, seconds).
func timedOnNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> (result: T, elapsed: Duration) {
    await onNewThread { () -> (result: T, elapsed: Duration) in
        let clock = ContinuousClock()
        let start = clock.now
        let result = body()
        return (result, clock.now - start)
    }
}

/// Runs `body` on a new thread with a stack of `stackSize` bytes and resumes when it is done.
///
/// For deliberately deep recursion: AddressSanitizer's red zones make every frame several times
/// larger, so a depth that fits an 8 MiB stack in a normal build may not under the sanitizer.
func onNewThread<T: Sendable>(stackSize: Int, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = stackSize
        thread.start()
    }
}

/// Operation queues that live until the process exits.
private let keptOperationQueues = Locked<[OperationQueue]>([])

/// An `OperationQueue` that is never deallocated.
///
/// swift-corelibs-foundation crashes (a bad pointer dereference in
/// `Operation.observeValue(forKeyPath:ofObject:)`, called from `OperationQueue._schedule`) when an
/// operation queue's last reference goes while it is still finishing an operation, which is what
/// happens when a test ends right after its last delivery. Tests that do not test that keep their
/// queues; there are a few dozen.
func makeKeptOperationQueue() -> OperationQueue {
    let queue = OperationQueue()
    keptOperationQueues.withLock { $0.append(queue) }
    return queue
}
