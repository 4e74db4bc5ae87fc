import Dispatch

/// Counts the outstanding deliveries of one waiting post and wakes whoever waits for them.
final class WaitGroup: Sendable {
    private struct State {
        var remaining = 1  // one for the poster itself, released by `arrive()` after enqueueing
        /// Whether the poster has released its own hold (`arrive()`).
        var hasArrived = false
        /// The outcomes recorded so far.
        var report = DeliveryReport()
        var continuation: CheckedContinuation<Bool, Never>?
        /// Set when the count reaches zero, or by ``abandon(_:)``: later outcomes are not recorded.
        var isComplete = false
    }

    /// The blocked thread to wake, for the blocking `postAndWait`; `nil` for the async one.
    let waiter: Waiter?
    /// The semaphore of `waiter`'s thread, signalled once the group completes (see
    /// ``Waiter/wait(until:for:)``). Retained by `init` and released by `deinit`, and signalled
    /// through the unmanaged reference: the completing delivery then leaves its reference count,
    /// which the waiting thread uses, alone.
    private let semaphore: Unmanaged<DispatchSemaphore>?
    private let state = Lock(State(), rank: .waitGroup)
    /// For a relay (see ``init(relaying:replaced:)``), the groups it passes outcomes on to: those
    /// of one mailbox item that replaced others, its own post's group, if that post waits, and the
    /// groups of the waiting posts whose items it replaced.
    private let relay: (primary: WaitGroup?, replaced: [WaitGroup])?

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
        self.relay = (primary, groups)
        self.waiter = primary?.waiter ?? groups.lazy.compactMap(\.waiter).first
        self.semaphore = nil  // a relay never completes: the groups it relays to do
    }

    /// Registers one more delivery to wait for.
    func enter() {
        state.withLock { $0.remaining += 1 }
    }

    /// Records the outcome of one delivery.
    func leave(_ outcome: DeliveryOutcome) {
        guard let relay else {
            return release { state in
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
            }
        }
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
            state.isComplete = true
            return failures
        }
        if !failures.isEmpty { wake() }
        return failures
    }

    /// Takes back an ``enter()`` whose delivery was not accepted.
    func withdraw() {
        release()
    }

    /// Releases the poster's own hold, once every delivery has been enqueued.
    func arrive() {
        release { $0.hasArrived = true }
    }

    /// Suspends until every delivery has been recorded, or until `deadline`.
    ///
    /// - Returns: Whether every delivery was recorded (`false`: the deadline passed first).
    func wait(until deadline: DispatchTime = .distantFuture) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let isComplete = state.withLock { state in
                if !state.isComplete { state.continuation = continuation }
                return state.isComplete
            }
            if isComplete {
                continuation.resume(returning: true)
            } else if deadline != .distantFuture {
                DispatchQueue.global().asyncAfter(deadline: deadline) { [self] in
                    // Whoever takes the continuation resumes it: the timer or the last delivery.
                    state.withLock { $0.continuation.take() }?.resume(returning: false)
                }
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

    /// Runs `update` and takes one off the count, unless the group is complete (an abandoned
    /// group ignores what comes later); wakes whoever waits when the count reaches zero.
    private func release(_ update: (inout State) -> Void = { _ in }) {
        let completes = state.withLock { state -> Bool in
            guard !state.isComplete else { return false }
            update(&state)
            state.remaining -= 1
            state.isComplete = state.remaining == 0
            return state.isComplete
        }
        if completes { wake() }
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
        state.withLock { $0.continuation.take() }?.resume(returning: true)
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
