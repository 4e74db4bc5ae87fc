import Synchronization

/// The parts of a registration that do not depend on the notification type.
protocol Cancellable: AnyObject, Sendable {
    func cancel()
    var isCancelled: Bool { get }
}

/// Where a handler was registered, kept as the literal `#fileID` and `#line`.
struct SourceLocation: Sendable {
    let fileID: StaticString
    let line: UInt32

    var fileString: String { fileID.description }
}

/// What a contextual handler learns about the delivery besides the notification.
///
/// Exposed as SPI for `HeraldTesting`'s recorder; not public API.
@_spi(Testing)
public struct DeliveryContext: Sendable {
    /// The identity of the post's subject, if it had one.
    public let subjectID: ObjectIdentifier?
    /// The target the delivery runs on.
    public let target: DeliveryTarget
}

/// The handler of one observer.
enum Handler<N: Sendable>: Sendable {
    case plain(@Sendable (N) throws -> Void)
    case contextual(@Sendable (N, DeliveryContext) throws -> Void)
}

/// The optional `from:` subject and `owner:` of an observer, both held weakly.
///
/// Both references are written once, in `init`, and only read afterwards; the Swift runtime makes
/// loading a weak reference thread-safe. Herald only compares the subject's identity and never
/// calls into either object, so holding them here does not share their state between threads.
final class Filters: @unchecked Sendable {
    private(set) weak var subject: AnyObject?
    private(set) weak var owner: AnyObject?
    let hasSubject: Bool
    let hasOwner: Bool

    init(subject: AnyObject?, owner: AnyObject?) {
        self.subject = subject
        self.owner = owner
        self.hasSubject = subject != nil
        self.hasOwner = owner != nil
    }

    /// Whether an object the registration depends on has been deallocated.
    var isDead: Bool {
        (hasOwner && owner == nil) || (hasSubject && subject == nil)
    }

    /// Whether a post with `postedSubject` matches. The poster keeps `postedSubject` alive, so a
    /// weak reference that still loads to the same address is the very same object.
    func matches(_ postedSubject: AnyObject?) -> Bool {
        guard hasSubject else { return true }
        guard let postedSubject, let subject else { return false }
        return subject === postedSubject
    }
}

/// One queued delivery.
struct QueuedItem<N: Sendable>: Sendable {
    let notification: N
    let subjectID: ObjectIdentifier?
    let group: WaitGroup?
}

/// The serial mailbox of an observer on an asynchronous target.
///
/// At most one drain runs at a time. A drain takes the whole buffer as one batch, so a burst of
/// posts costs one hop to the target, not one per notification.
final class Lane<N: Sendable>: Sendable {
    struct State {
        var buffer = ContiguousArray<QueuedItem<N>>()
        /// A drain job has been handed to the target and has not finished.
        var isScheduled = false
        /// The thread draining right now, or 0.
        var drainer: UInt = 0
        /// The observation ended: no more items are accepted.
        var isClosed = false
    }

    let state = Lock(State())
}

/// One registration: a handler, its target, its filters and, for asynchronous targets, a lane.
final class Observer<N: Sendable>: Cancellable {
    let core: HubCore
    let target: DeliveryTarget
    let handler: Handler<N>
    let filters: Filters?
    let lane: Lane<N>?
    let location: SourceLocation
    private let cancelled = Atomic<Bool>(false)

    init(core: HubCore, target: DeliveryTarget, filters: Filters?, location: SourceLocation, handler: Handler<N>) {
        self.core = core
        self.target = target
        self.handler = handler
        self.filters = filters
        self.location = location
        self.lane = target.isPosting ? nil : Lane<N>()
    }

    // MARK: Cancellation

    /// Whether ``cancel()`` has run, without checking the owner or subject.
    var isCancelledFlag: Bool { cancelled.load(ordering: .acquiring) }

    var isCancelled: Bool {
        if cancelled.load(ordering: .acquiring) { return true }
        if let filters, filters.isDead {
            cancel()
            return true
        }
        return false
    }

    /// Ends the registration. Once this returns, the handler is not started again; a call already
    /// running on another thread may finish.
    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        core.remove(self)
        guard let lane else { return }
        let dropped = lane.state.withLock { state in
            state.isClosed = true
            defer { state.buffer = [] }
            return state.buffer
        }
        for item in dropped {
            item.group?.leave(.skipped)
        }
    }

    /// Whether a post with `subject` should reach this observer right now.
    @inline(__always)
    func accepts(_ subject: AnyObject?) -> Bool {
        if cancelled.load(ordering: .acquiring) { return false }
        guard let filters else { return true }
        if filters.isDead {
            cancel()
            return false
        }
        return filters.matches(subject)
    }

    // MARK: Calling the handler

    /// Calls the handler; reports and returns the failure if it throws.
    @inline(__always)
    func invoke(_ notification: N, subjectID: ObjectIdentifier?) -> ObserverFailure? {
        do {
            switch handler {
            case .plain(let body):
                try body(notification)
            case .contextual(let body):
                try body(notification, DeliveryContext(subjectID: subjectID, target: target))
            }
            return nil
        } catch {
            let failure = ObserverFailure(
                error: error,
                notificationType: String(describing: N.self),
                fileID: location.fileString,
                line: Int(location.line)
            )
            core.report(failure)
            return failure
        }
    }

    // MARK: The lane

    /// Appends an item to the lane and schedules a drain if none is pending.
    ///
    /// If the target rejects the drain (a ``DeliveryThread`` that was shut down), the item is not
    /// kept: the rejection is reported and a waiting post counts it as skipped (see
    /// ``scheduleDrain()``).
    ///
    /// - Returns: `false` if the observation has ended and the item was not accepted.
    @discardableResult
    func enqueue(_ item: QueuedItem<N>) -> Bool {
        guard let lane else { return false }
        let (accepted, mustSchedule) = lane.state.withLock { state -> (Bool, Bool) in
            if state.isClosed { return (false, false) }
            state.buffer.append(item)
            if state.isScheduled || state.drainer != 0 { return (true, false) }
            state.isScheduled = true
            return (true, true)
        }
        if mustSchedule {
            scheduleDrain()
        }
        return accepted
    }

    /// Puts items into the lane of an observer that posts cannot see yet (replayed values).
    ///
    /// Called under the registry lock, before the observer is added, so the items come before any
    /// live post. It never calls out: when it returns `true`, call ``scheduleDrain()`` once the
    /// registry lock is released.
    ///
    /// - Returns: Whether a drain must be scheduled.
    func preload(_ items: [QueuedItem<N>]) -> Bool {
        guard let lane, !items.isEmpty else { return false }
        return lane.state.withLock { state -> Bool in
            if state.isClosed { return false }
            state.buffer.append(contentsOf: items)
            if state.isScheduled || state.drainer != 0 { return false }
            state.isScheduled = true
            return true
        }
    }

    /// Hands the drain job to the target, once the lane was marked as scheduled.
    ///
    /// A target that will never run work again (a ``DeliveryThread`` that was shut down) rejects
    /// the job. Nothing would ever drain the lane then, so what it holds is taken out at once
    /// instead of piling up: each item is reported to the thread's rejection handler and counted
    /// as skipped by a post waiting for it, and the lane is left unscheduled, so the next post
    /// tries, and is reported, again.
    func scheduleDrain() {
        guard let lane, !target.scheduleDrain({ [self] in drainScheduled() }) else { return }
        let rejected = lane.state.withLock { state in
            state.isScheduled = false
            defer { state.buffer = [] }
            return state.buffer
        }
        target.reportRejectedDeliveries(rejected.count)
        for item in rejected {
            item.group?.leave(.skipped)
        }
    }

    /// The thread draining the lane right now, or 0.
    var drainer: UInt {
        lane?.state.withLock { $0.drainer } ?? 0
    }

    /// The drain job handed to the target.
    private func drainScheduled() {
        guard let lane else { return }
        let me = currentThreadID()
        let claimed = lane.state.withLock { state -> Bool in
            guard state.drainer == 0 else {
                // Someone drains inline right now and keeps going until the lane is empty.
                state.isScheduled = false
                return false
            }
            state.drainer = me
            return true
        }
        if claimed { drainLoop(lane, endsSchedule: true) }
    }

    /// Drains the lane on the calling thread, which must be on the target, unless another thread
    /// drains it already.
    func drainInline() {
        guard let lane else { return }
        let me = currentThreadID()
        let claimed = lane.state.withLock { state -> Bool in
            guard state.drainer == 0 else { return false }
            state.drainer = me
            return true
        }
        if claimed { drainLoop(lane, endsSchedule: false) }
    }

    private func drainLoop(_ lane: Lane<N>, endsSchedule: Bool) {
        var batch = ContiguousArray<QueuedItem<N>>()
        while true {
            let hasWork = lane.state.withLock { state -> Bool in
                if state.buffer.isEmpty {
                    state.drainer = 0
                    if endsSchedule { state.isScheduled = false }
                    return false
                }
                swap(&state.buffer, &batch)
                return true
            }
            guard hasWork else { return }
            for item in batch {
                run(item)
            }
            if batch.capacity > 4096 {
                batch = []  // release the memory of an exceptional burst
            } else {
                batch.removeAll(keepingCapacity: true)
            }
        }
    }

    @inline(__always)
    private func run(_ item: QueuedItem<N>) {
        guard !isCancelled else {
            item.group?.leave(.skipped)
            return
        }
        guard let group = item.group else {
            _ = invoke(item.notification, subjectID: item.subjectID)
            return
        }
        let failure: ObserverFailure?
        if let waiter = group.waiter {
            failure = Waiter.chain.withValue(waiter) { invoke(item.notification, subjectID: item.subjectID) }
        } else {
            failure = invoke(item.notification, subjectID: item.subjectID)
        }
        group.leave(failure.map(DeliveryOutcome.failed) ?? .delivered)
    }
}
