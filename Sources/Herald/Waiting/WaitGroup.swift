import Dispatch
import Synchronization

/// Counts the outstanding deliveries of one waiting post and wakes whoever waits for them.
final class WaitGroup: Sendable {
    private struct State {
        var remaining = 1  // one for the poster itself, released by `arrive()` after enqueueing
        /// Whether the poster has released its own hold (`arrive()`).
        var hasArrived = false
        /// The outcomes recorded so far.
        var report = DeliveryReport()
        var continuation: CheckedContinuation<Bool, Never>?
        var isComplete = false
        /// Set by ``abandon(_:)``: later outcomes are not recorded.
        var isAbandoned = false
    }

    /// The blocked thread to wake, for the blocking `postAndWait`; `nil` for the async one.
    let waiter: Waiter?
    /// The semaphore of `waiter`'s thread, signalled once the group completes (see
    /// ``Waiter/wait(until:for:)``). Retained by `init` and released by `deinit`, and signalled
    /// through the unmanaged reference: the completing delivery then leaves its reference count,
    /// which the waiting thread uses, alone.
    private let semaphore: Unmanaged<DispatchSemaphore>?
    private let state = Lock(State(), rank: .waitGroup)
    /// For a relay (see ``init(relaying:replaced:)``): the groups it passes outcomes on to.
    private let relay: Relay?

    /// The groups of one mailbox item that replaced others: its own post's group, if that post waits,
    /// and the groups of the waiting posts whose items it replaced.
    struct Relay: Sendable {
        let primary: WaitGroup?
        let replaced: [WaitGroup]
    }

    init(waiter: Waiter?) {
        self.waiter = waiter
        self.semaphore = waiter.map { .passRetained($0.semaphore) }
        self.relay = nil
    }

    deinit {
        semaphore?.release()
    }

    /// A group that stands in a mailbox item for several waiting posts: the item's own (`primary`)
    /// and those whose items it replaced. The item's outcome goes to `primary`; each replaced post
    /// learns that its notification was replaced, once the replacement's handler has returned (or
    /// that it was skipped, if the replacement never ran).
    ///
    /// A relay is made and held by one mailbox item only; it counts nothing itself.
    init(relaying primary: WaitGroup?, replaced: WaitGroup) {
        var groups = [replaced]
        if let relay = replaced.relay {
            groups = relay.replaced
            if let older = relay.primary { groups.append(older) }
        }
        self.relay = Relay(primary: primary, replaced: groups)
        self.waiter = primary?.waiter ?? groups.lazy.compactMap(\.waiter).first
        self.semaphore = nil  // a relay never completes: the groups it relays to do
    }

    /// Registers one more delivery to wait for.
    func enter() {
        state.withLock { $0.remaining += 1 }
    }

    /// Records the outcome of one delivery.
    func leave(_ outcome: DeliveryOutcome) {
        if let relay {
            relay.primary?.leave(outcome)
            let replacedOutcome: DeliveryOutcome
            switch outcome {
            case .delivered, .failed, .replaced: replacedOutcome = .replaced
            case .skipped, .refused: replacedOutcome = .skipped
            case .dropped: replacedOutcome = .dropped
            }
            for group in relay.replaced {
                group.leave(replacedOutcome)
            }
            return
        }
        let isComplete = state.withLock { state -> Bool in
            if state.isAbandoned { return false }
            switch outcome {
            case .delivered: state.report.deliveredCount += 1
            case .skipped: state.report.skippedCount += 1
            case .failed(let failure):
                state.report.deliveredCount += 1
                state.report.failures.append(failure)
            case .refused(let failure):
                state.report.skippedCount += 1
                state.report.failures.append(failure)
            case .replaced: state.report.replacedCount += 1
            case .dropped: state.report.droppedCount += 1
            }
            return Self.release(&state)
        }
        if isComplete { wake() }
    }

    /// Ends the wait without the deliveries still outstanding: each is recorded as skipped, with
    /// the failure `makeFailure` makes for it, and their outcomes are ignored when they come.
    ///
    /// - Returns: The failures recorded, or none if the group was complete already.
    func abandon(_ makeFailure: () -> ObserverFailure) -> [ObserverFailure] {
        let failures = state.withLock { state -> [ObserverFailure] in
            guard !state.isComplete else { return [] }
            // The poster's own hold, if it has not arrived yet, is no delivery: it is not failed.
            let outstanding = state.remaining - (state.hasArrived ? 0 : 1)
            let failures = (0..<max(outstanding, 0)).map { _ in makeFailure() }
            state.report.skippedCount += failures.count
            state.report.failures += failures
            state.remaining = 0
            state.isComplete = true
            state.isAbandoned = true
            return failures
        }
        if !failures.isEmpty { wake() }
        return failures
    }

    /// Takes back an ``enter()`` whose delivery was not accepted.
    func withdraw() {
        if state.withLock({ !$0.isAbandoned && Self.release(&$0) }) { wake() }
    }

    /// Releases the poster's own hold, once every delivery has been enqueued.
    func arrive() {
        let isComplete = state.withLock { state -> Bool in
            state.hasArrived = true
            return !state.isAbandoned && Self.release(&state)
        }
        if isComplete { wake() }
    }

    /// Suspends until every delivery has been recorded, or until `deadline`.
    ///
    /// - Returns: Whether every delivery was recorded (`false`: the deadline passed first).
    func wait(until deadline: DispatchTime = .distantFuture) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.isComplete { return true }
                state.continuation = continuation
                return false
            }
            if resumeNow {
                continuation.resume(returning: true)
                return
            }
            guard deadline != .distantFuture else { return }
            DispatchQueue.global().asyncAfter(deadline: deadline) { [self] in
                // Whoever takes the continuation resumes it: the timer or the last delivery.
                let timedOut = state.withLock { $0.continuation.take() }
                timedOut?.resume(returning: false)
            }
        }
    }

    /// The report so far and the number of deliveries still outstanding, read at once: a waiter
    /// that has just woken reads the group's state, which the delivering thread wrote, only once.
    var outcome: (report: DeliveryReport, pendingCount: Int) {
        state.withLock { ($0.report, $0.isComplete ? 0 : $0.remaining) }
    }

    /// Whether every delivery has been recorded.
    var isComplete: Bool {
        state.withLock { $0.isComplete }
    }

    /// Decrements the count.
    ///
    /// - Returns: Whether it reached zero: the caller must call ``wake()``, once.
    private static func release(_ state: inout State) -> Bool {
        state.remaining -= 1
        guard state.remaining == 0 else { return false }
        state.isComplete = true
        return true
    }

    /// Wakes whoever waits for the completed group: the blocked thread, or the suspended task.
    ///
    /// The waiting thread is woken without touching the continuation, whose type is resilient
    /// and costs value-witness calls to move around.
    private func wake() {
        if let semaphore {
            semaphore._withUnsafeGuaranteedRef { _ = $0.signal() }
            return
        }
        let continuation = state.withLock { $0.continuation.take() }
        continuation?.resume(returning: true)
    }
}

/// What happened to one delivery that somebody waits for.
enum DeliveryOutcome {
    case delivered
    case skipped
    case failed(ObserverFailure)
    /// The target refused to run the delivery; it never ran.
    case refused(ObserverFailure)
    /// A mailbox policy replaced the notification with a newer one, whose handler has returned.
    case replaced
    /// A bounded mailbox policy dropped the notification.
    case dropped
}
