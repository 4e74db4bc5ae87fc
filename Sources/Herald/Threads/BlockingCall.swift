import Synchronization

/// A value handed from one thread to another, once: the one transfer box Herald uses to move a
/// caller's non-`Sendable` value to another thread.
///
/// The sender gives the value up (`sending`), and the receiver takes it out exactly once; the
/// mutex makes the box `Sendable` without an unchecked promise.
final class HandOver<Value>: Sendable {
    private let slot: Mutex<Value?>

    init(_ value: sending Value) {
        slot = Mutex(value)
    }

    /// Takes the value out; `nil` if it was taken before.
    func take() -> sending Value? {
        slot.withLock { value in
            let taken = value.take()
            return taken
        }
    }
}

/// A caller's closure, handed to the thread that runs it, and its result, handed back, while the
/// caller is blocked: what every `performAndWait` hands over.
///
/// Both hand-overs are `sending` (see ``HandOver``): the caller gives up the closure, and whatever
/// it captures, when it makes the call, and the result comes back as a value nobody else holds.
/// So no value is ever shared between the two threads.
final class BlockingCall<T, E: Error>: Sendable {
    private let work: HandOver<() throws(E) -> T>
    private let outcome = Mutex<HandOver<Result<T, E>>?>(nil)

    init(_ work: sending @escaping () throws(E) -> T) {
        self.work = HandOver(work)
    }

    /// Runs the work, at most once, on the calling thread, and keeps its outcome for ``result()``.
    func run() {
        guard let work = work.take() else { return }
        let result: Result<T, E>
        do throws(E) {
            result = .success(try work())
        } catch {
            result = .failure(error)
        }
        let box = HandOver(result)
        outcome.withLock { $0 = box }
    }

    /// The outcome of ``run()``, which must have finished.
    func result() throws(E) -> sending T {
        switch outcome.withLock({ $0 })?.take() {
        case .success(let value): return value
        case .failure(let error): throw error
        case nil: preconditionFailure("Herald: a completed wait has no result")
        }
    }
}
