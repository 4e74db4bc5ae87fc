import Dispatch
import Foundation
import Herald
import Synchronization

struct Ping: TypedNotification, Equatable {
    var value: Int
}

struct Pong: TypedNotification, Equatable {
    var value: Int
}

/// A lock-protected value for tests: the one lock box of HeraldTests (use it rather than a `Mutex`).
///
/// Built on `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`: on Linux a contended
/// `Mutex` is handed over inside the kernel, where ThreadSanitizer cannot see it, so it would
/// report false races in the stress suite.
final class Locked<Value>: @unchecked Sendable {  // Every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A thread-safe list that test handlers append to.
final class Log<Element: Sendable>: Sendable {
    private let storage = Locked<[Element]>([])

    func append(_ element: Element) {
        storage.withLock { $0.append(element) }
    }

    var values: [Element] {
        storage.withLock { $0 }
    }

    var count: Int {
        storage.withLock { $0.count }
    }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    @discardableResult
    func increment() -> Int {
        value.add(1, ordering: .relaxed).newValue
    }

    var count: Int {
        value.load(ordering: .relaxed)
    }
}

struct Boom: Error, Equatable {
    var code: Int
}

/// Recognises the main queue by a queue-specific value, however the main queue is drained.
enum MainQueueProbe {
    private static let shared: DispatchSpecificKeyBox = {
        let key = DispatchSpecificKeyBox()
        DispatchQueue.main.setSpecific(key: key.key, value: 1)
        return key
    }()

    static var isOnMainQueue: Bool {
        DispatchQueue.getSpecific(key: shared.key) == 1
    }
}

/// A queue that can be held shut until the test opens it, without sleeping.
final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    /// Blocks the queue `queue` until ``open()`` is called.
    func close(_ queue: DispatchQueue) {
        let closed = DispatchSemaphore(value: 0)
        queue.async {
            closed.signal()
            self.semaphore.wait()
        }
        closed.wait()
    }

    func open() {
        semaphore.signal()
    }
}

/// A custom executor over a serial dispatch queue.
final class QueueExecutor: DeliveryExecutor {
    let queue: DispatchQueue
    private let key = DispatchSpecificKeyBox()

    init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key.key, value: 1)
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        queue.async(execute: job)
    }

    var isCurrent: Bool {
        DispatchQueue.getSpecific(key: key.key) == 1
    }
}

/// A dispatch-specific key that a `Sendable` closure may capture: the one key box of the tests.
final class DispatchSpecificKeyBox: @unchecked Sendable {  // Immutable after creation: `key` is a `let`.
    let key = DispatchSpecificKey<Int>()
}

/// Runs `body` on `queue` and resumes when it is done, without blocking the caller's thread.
func onQueue<T: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: body()) }
    }
}

/// Runs `body` on a new thread and resumes when it is done.
///
/// The thread gets a 64 MiB stack (reserved, not committed): the recursion tests go 1,000 waiting
/// posts deep, and AddressSanitizer makes every frame several times larger.
///
/// What `body` captures is released before the caller resumes: a `Thread` keeps its block until the
/// thread has ended, which may be after the resume, so the block holds `body` only until it runs.
func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    let work = Locked<(@Sendable () -> T)?>(body)
    return await withCheckedContinuation { continuation in
        let thread = Thread {
            let result: T
            do {
                guard let body = work.withLock({ $0.take() }) else {
                    preconditionFailure("onNewThread: a thread's block ran twice")
                }
                result = body()
            }  // `body` and its captures are released here, before the resume
            continuation.resume(returning: result)
        }
        thread.stackSize = 64 << 20
        thread.start()
    }
}

/// Runs `body(i)` on `count` new threads at once and resumes when all are done.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                body(index)
                group.leave()
            }.start()
        }
        group.notify(queue: .global()) { continuation.resume() }
    }
}

final class Subject: Sendable {}

actor Store {
    private(set) var values: [Int] = []

    func append(_ value: Int) {
        values.append(value)
    }
}
