import Synchronization

/// The mailbox of one observer on an asynchronous target: its items, the decisions of its
/// ``MailboxStateMachine``, and the effects of those decisions.
///
/// The mailbox decides nothing itself. Under its one lock (private to this file) it gives each
/// input to its ``MailboxStateMachine`` (whose state is private to that file) and moves items as
/// the returned action says; everything else the action asks for (handing a job to the target,
/// running handlers, starting an async call, destroying discarded items) happens after unlocking.
/// Items are copied in on append and moved out, in batches, by the drain; their layout is
/// ``ItemQueue/Layout``'s.
///
/// The handler of an observer whose deliveries a drain runs (on an asynchronous target, or any
/// `async` handler) lives here, under the mailbox's lock, as a ``HandlerBox``: each drain takes
/// it when it starts, and ``close()`` takes it out, so that cancelling releases the handler and
/// what it captures at once, even while a drain job still waits on the target. A drain running at
/// that moment keeps its own reference until it ends.
@usableFromInline
class AnyMailbox: @unchecked Sendable {  // Immutable but for its lock and atomics.
    /// Where the drains run.
    let target: DeliveryTarget
    /// The mailbox policy and its counts; `nil` for an unbounded mailbox.
    let policy: MailboxPolicy?
    /// The state machine, the items, the drained handler and the helpers, behind the one lock of
    /// the mailbox. Nothing outside this file takes it.
    fileprivate let locked: Lock<MailboxStorage>
    /// How a lingering drain tells a poster at work without taking the lock (see ``BurstGauge``);
    /// `nil` for a mailbox whose drain job does not linger. A `let`, so that a poster reads it
    /// without a retain: a retain at every post would write the gauge's reference count, next to
    /// the count that the job reads while a burst goes on.
    fileprivate let gauge: BurstGauge?
    /// The number of waiters in `locked.helpers`, read without the lock by ``helpers``.
    private let helperCount = Atomic<Int>(0)
    /// Whether the mailbox feeds a ``NotificationSequence``: its consumers take the items, and no
    /// drain runs (see ``MailboxStateMachine``'s "Streams").
    let feedsStream: Bool

    /// A mailbox of `machine`'s configuration whose drains run `handler` (a ``HandlerBox``) on
    /// `target`; no handler and ``DeliveryTarget/posting`` for a mailbox that feeds a stream.
    fileprivate init(
        target: DeliveryTarget, policy: MailboxPolicy?, machine: MailboxStateMachine,
        handler: (any AnyObject & Sendable)? = nil
    ) {
        self.target = target
        self.policy = policy
        self.gauge = machine.configuration.lingers ? BurstGauge() : nil
        self.locked = Lock(MailboxStorage(machine: machine, handler: handler), rank: .mailbox)
        self.feedsStream = machine.configuration.feedsStream
    }

    /// What the policy has discarded so far: notifications replaced by newer ones, and
    /// notifications dropped.
    final var discardedCounts: (replaced: Int, dropped: Int) {
        guard let policy else { return (0, 0) }
        return (policy.replacedCount.load(ordering: .relaxed), policy.droppedCount.load(ordering: .relaxed))
    }

    /// The thread draining the mailbox right now, or 0.
    final var drainerThread: UInt {
        locked.withLock { $0.machine.runner?.thread ?? 0 }
    }

    /// Whether a drain or an `async` call runs: a handler may be running.
    final var isRunning: Bool {
        locked.withLock { $0.machine.runner != nil }
    }

    /// The async handler started by the last drain has finished.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    final func resume() -> Bool {
        locked.withLock { $0.machine.resume() }
    }

    // MARK: Quiescence

    /// What the mailbox still has to do: whether it has items, a job with its target, a drain
    /// running or an async handler that has not finished (`isBusy`); how many items it holds; and
    /// whether it waits only for its target to run its job.
    final var pendingState: (isBusy: Bool, count: Int, waitsForTarget: Bool, isSuspended: Bool) {
        locked.withLock { locked in
            let machine = locked.machine
            return (machine.isBusy, machine.count, machine.waitsForTarget, machine.runner == .suspended)
        }
    }

    // MARK: Helpers

    /// Registers a blocked waiter that may occupy the target and waits for items of this mailbox:
    /// whenever a drain job is handed to the target, the waiter is offered the drain too, so
    /// that it runs items that became ready while it was blocked (an item held by another post,
    /// released after the waiter's own drain found it held).
    final func addHelper(_ waiter: Waiter) {
        locked.withLock { locked in
            locked.helpers.append(waiter)
            helperCount.store(locked.helpers.count, ordering: .relaxed)
        }
    }

    /// Ends a registration made by ``addHelper(_:)``.
    final func removeHelper(_ waiter: Waiter) {
        locked.withLock { locked in
            if let index = locked.helpers.firstIndex(where: { $0 === waiter }) {
                locked.helpers.remove(at: index)
            }
            helperCount.store(locked.helpers.count, ordering: .relaxed)
        }
    }

    /// The registered helpers. Without the lock while there are none: a waiter registers before it
    /// drains, and a post that made items ready before that registration left them for that drain.
    final var helpers: [Waiter] {
        guard helperCount.load(ordering: .relaxed) > 0 else { return [] }
        return locked.withLock { $0.helpers }
    }

    // MARK: Closing

    /// Closes the mailbox and takes out every item, for the caller to drop outside the lock, and the
    /// handler, for the caller to release outside the lock.
    final func close() -> (items: ItemQueue, handler: (any AnyObject & Sendable)?) {
        locked.withLock { locked in
            _ = locked.machine.close()
            return (exchange(&locked.items, with: ItemQueue()), locked.handler.take())
        }
    }
}

/// ``AnyMailbox`` for notifications of type `N`: the appends, the drains and the stream's
/// consumers, which copy and move items of `N`.
@usableFromInline
final class Mailbox<N: TypedNotification>: AnyMailbox, @unchecked Sendable {  // Immutable (AnyMailbox)
    /// The layout of one queued item of type `N`.
    let layout = ItemQueue.Layout(of: N.self)
    /// The `async` call running now and the arguments of the next, for an observer with an
    /// `async` handler.
    let asyncCalls: AsyncCallSlot<AsyncCallArguments>?

    /// A mailbox whose drains run `handler`, on `target`.
    init(target: DeliveryTarget, handler: Handler<N>, policy: MailboxPolicy?) {
        let isAsync = handler.isAsync
        let lingers = !isAsync && target.drainMayLinger
        let machine = MailboxStateMachine(batchLimit: isAsync ? 1 : .max, lingers: lingers, rule: policy?.rule)
        asyncCalls = isAsync ? AsyncCallSlot() : nil
        super.init(target: target, policy: policy, machine: machine, handler: HandlerBox(handler))
    }

    /// A mailbox whose items the consumers of a ``NotificationSequence`` take.
    init(streamPolicy policy: MailboxPolicy?) {
        let machine = MailboxStateMachine(rule: policy?.rule, feedsStream: true)
        asyncCalls = nil
        super.init(target: .posting, policy: policy, machine: machine)
    }

    // MARK: Appending

    /// Appends a copy of `notification` for `observer`, held under `hold` unless it is 0, and hands
    /// a drain job to the target if the append asks for one (``scheduleDrain(for:continued:)``). For
    /// a mailbox without a policy; see ``enqueueUnderPolicy(_:subject:group:hold:for:)``.
    @inline(__always)
    func enqueue<Record: TypedDeliveryRecord<N>>(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, hold: UInt,
        for observer: Record
    ) -> DeliveryRecord.EnqueueOutcome {
        let action = locked.withLock {
            appendUnbounded(notification, subjectID: subjectID, group: group, hold: hold, in: &$0)
        }
        if action == .reject { return .refused }
        gauge?.noteAppended()
        if action == .storeAndSchedule { scheduleDrain(for: observer) }
        return .queued
    }

    /// Ends the hold of a post that has reached every mailbox, and hands a drain job to the target
    /// if that makes the items runnable.
    func release<Record: TypedDeliveryRecord<N>>(hold: UInt, for observer: Record) {
        if locked.withLock({ $0.machine.release(hold: hold) }) { scheduleDrain(for: observer) }
    }

    /// Appends a copy of `notification` as the state machine decides, with no policy to ask. Call
    /// under the mailbox's lock.
    @inline(__always)
    private func appendUnbounded(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, hold: UInt,
        in locked: inout MailboxStorage
    ) -> MailboxStateMachine.AppendAction {
        let action = locked.machine.append(hold: hold)
        if action != .reject { store(notification, subjectID: subjectID, group: group, in: &locked.items) }
        return action
    }

    /// Appends copies of replayed values, which a drain may take at once, under the mailbox's policy
    /// if it has one.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target, and the notifications
    ///   the policy discarded, to release after every lock.
    func append(replaying replays: [(value: N, subjectID: ObjectIdentifier?)]) -> (mustSchedule: Bool, dropped: [N]) {
        let result = withItemSlot { slot in
            locked.withLock { locked in
                var mustSchedule = false
                var discarded: [N] = []
                for replay in replays {
                    let (action, displacement) = withUnsafePointer(to: replay.value) {
                        append(
                            $0, subjectID: replay.subjectID, subject: nil, group: nil, hold: 0, displacingInto: slot,
                            in: &locked)
                    }
                    // Replayed items have no wait group: only payloads are left to release.
                    if displacement == .removed { discarded.append(takeMoved(slot)) }
                    if action == .reject { break }
                    if action == .storeAndSchedule { mustSchedule = true }
                }
                return (mustSchedule, discarded)
            }
        }
        gauge?.noteAppended(replays.count)
        return result
    }

    // MARK: Mailbox policies

    /// ``enqueue(_:subjectID:group:hold:for:)`` under the mailbox's policy (``policy``, which the
    /// mailbox must have): the notification may replace a pending item, push out the oldest, or be
    /// dropped itself (``DeliveryRecord/EnqueueOutcome/dropped``). Kept out of the path of an
    /// unbounded mailbox.
    ///
    /// A removed item's payload is destroyed and its waiting post told after unlocking: its
    /// `deinit` is user code, and a dropped waiting post completes at once.
    @inline(never)
    func enqueueUnderPolicy<Record: TypedDeliveryRecord<N>>(
        _ notification: UnsafePointer<N>, subject: AnyObject?, group: WaitGroup?, hold: UInt, for observer: Record
    ) -> DeliveryRecord.EnqueueOutcome {
        let (action, displacement) = withItemSlot { slot in
            let (action, displacement) = locked.withLock { locked in
                append(
                    notification, subjectID: subject.map(ObjectIdentifier.init), subject: subject, group: group,
                    hold: hold, displacingInto: slot, in: &locked)
            }
            // After the mailbox's lock.
            if action != .reject && displacement != .rejectedNew { gauge?.noteAppended() }
            switch displacement {
            case .none: break
            case .rejectedNew: group?.leave(.dropped)
            case .removed: layout.destroy(slot, as: N.self, leaving: .dropped)
            }
            return (action, displacement)
        }
        switch action {
        case .reject: return .refused
        case .store: return displacement == .rejectedNew ? .dropped : .queued
        case .storeAndSchedule:
            scheduleDrain(for: observer)
            return .queued
        }
    }

    /// The body of ``enqueueUnderPolicy(_:subject:group:hold:for:)`` and of a replay: does what the state
    /// machine decides, moving a removed item into `slot` (room for one item of ``layout``) for the
    /// caller to finish after unlocking. Call under the mailbox's lock.
    ///
    /// - Parameter subject: The post's subject, alive for the length of the call, or `nil` when
    ///   only its identity is known (a replayed value).
    private func append(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, subject: AnyObject?, group: WaitGroup?,
        hold: UInt, displacingInto slot: UnsafeMutableRawPointer, in locked: inout MailboxStorage
    ) -> (action: MailboxStateMachine.AppendAction, displacement: MailboxPolicy.Displacement) {
        guard let policy else {
            return (appendUnbounded(notification, subjectID: subjectID, group: group, hold: hold, in: &locked), .none)
        }
        let decision: MailboxStateMachine.PolicyAppendAction
        do {
            let items = locked.items
            decision = locked.machine.append(hold: hold) {
                // Per subject, a pending item is replaced only by a post of the same live object: a
                // new object at a dead one's address has the same identity bits but is another
                // subject.
                guard policy.subjects.claim(subjectID, subject) else { return nil }
                return lastIndex(of: subjectID, in: items)
            }
        }
        var storedGroup = group
        let schedule: Bool
        switch decision {
        case .reject:
            return (.reject, .none)
        case .dropNew:
            policy.droppedCount.wrappingAdd(1, ordering: .relaxed)
            return (.store, .rejectedNew)
        case .store(let scheduling):
            store(notification, subjectID: subjectID, group: group, in: &locked.items)
            return (scheduling ? .storeAndSchedule : .store, .none)
        case .replace(let index, let scheduling):
            removeItem(at: index, into: slot, from: &locked.items)
            // The replaced post's wait moves to the new item: it completes with the new one.
            if let oldGroup = layout.takeGroup(slot) {
                storedGroup = WaitGroup(relaying: group, replaced: oldGroup)
            }
            policy.replacedCount.wrappingAdd(1, ordering: .relaxed)
            schedule = scheduling
        case .dropOldest(let scheduling):
            removeItem(at: 0, into: slot, from: &locked.items)
            policy.droppedCount.wrappingAdd(1, ordering: .relaxed)
            schedule = scheduling
        }
        store(notification, subjectID: subjectID, group: storedGroup, in: &locked.items)
        return (schedule ? .storeAndSchedule : .store, .removed)
    }

    /// Calls `body` with room for one item of ``layout``, on the stack.
    @inline(__always)
    private func withItemSlot<R>(_ body: (UnsafeMutableRawPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: layout.stride, alignment: layout.alignment) {
            body($0.baseAddress.unsafelyUnwrapped)
        }
    }

    /// The position from the front of the newest item of `subjectID`.
    private func lastIndex(of subjectID: ObjectIdentifier?, in items: ItemQueue) -> Int? {
        let bits = ItemQueue.Layout.bits(of: subjectID)
        let layout = self.layout
        return (0..<items.count).last { layout.subjectBits(items.item($0, layout)) == bits }
    }

    /// Moves the item at `index` out of `items` into `slot`, as the state machine has removed it.
    /// Call under the mailbox's lock.
    private func removeItem(at index: Int, into slot: UnsafeMutableRawPointer, from items: inout ItemQueue) {
        let layout = self.layout
        layout.move(N.self, from: items.item(index, layout), to: slot, count: 1)
        items.removeMoved(at: index, layout) { layout.move(N.self, from: $0, to: $1, count: $2) }
    }

    /// Copies an item to the back of `items`. Call under the mailbox's lock.
    @inline(__always)
    private func store(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, in items: inout ItemQueue
    ) {
        let layout = self.layout
        let slot = items.appendSlot(layout)
        layout.initialize(slot, with: notification, subjectID: subjectID, group: group)
    }

    // MARK: Draining

    /// Hands a drain job to the target, once the state machine asked for it (an append or a
    /// release returned `.storeAndSchedule`, or an async call returned), and offers the drain to the
    /// blocked waiters that occupy the target: they would otherwise wait for this job forever.
    ///
    /// The job a post starts captures only `observer`, which is then its whole context: no
    /// allocation. A job that hands itself back on a lingering target is a ``GatheringJob``, made
    /// once per hand-back. A target that will never run work again (a ``DeliveryThread`` that was
    /// shut down) refuses the job: nothing would ever drain the mailbox then, so the observation
    /// ends (``TypedDeliveryRecord/targetRefused(_:)``). A job that hands itself back runs on the
    /// target, though, which still runs the work it took before it stopped: when that hand-back is
    /// refused, the job goes on here.
    ///
    /// - Parameter continued: Whether the job hands itself back (a slice ended, or a burst goes
    ///   on), rather than a post or a resumed handler starting it.
    /// - Returns: `false` when the target refused a job that hands itself back: the caller, on
    ///   the target, drains on.
    @discardableResult
    func scheduleDrain<Record: TypedDeliveryRecord<N>>(for observer: Record, continued: Bool = false) -> Bool {
        if feedsStream {
            handToConsumers()
            return true
        }
        let scheduling = observer.environment.schedulingTarget(for: target)
        let job: @Sendable () -> Void
        if continued, let gauge {
            let gathering = GatheringJob(gauge: gauge, target: scheduling) { [observer] posterPaused in
                observer.mailbox?.runJob(for: observer, posterPaused: posterPaused)
            }
            job = { gathering.look() }
        } else {
            job = { [observer] in observer.mailbox?.runJob(for: observer, posterPaused: false) }
        }
        if let refusal = scheduling.trySchedule(job) {
            guard !continued else { return false }
            // The refused job is no longer pending; a lingering job that found the mailbox empty
            // leaves nothing behind (the next post's job is refused in turn).
            if locked.withLock({ $0.machine.jobRefused() }) { observer.targetRefused(refusal) }
            return true
        }
        let helpers = self.helpers
        guard !helpers.isEmpty else { return true }
        let request = HelpRequest(target: target) { [observer] in observer.mailbox?.drainInline(for: observer) }
        for helper in helpers {
            helper.offer(request)
        }
        return true
    }

    /// The drain job handed to the target: at most one slice of items; then, if items are left, the
    /// job goes back to the target behind whatever it queued meanwhile, or, if the target no
    /// longer takes work, drains the next slice here.
    private func runJob<Record: TypedDeliveryRecord<N>>(for observer: Record, posterPaused: Bool) {
        var posterPaused = posterPaused
        while drain(for: observer, asJob: true, posterPaused: posterPaused) {
            if scheduleDrain(for: observer, continued: true) { return }
            posterPaused = false
        }
        observer.environment.idleWatch.noteProgress()
    }

    /// Drains the mailbox on the calling thread, which is on the target, unless another drain
    /// runs: for a waiting post, or a waiter that helps. Never sliced.
    func drainInline<Record: TypedDeliveryRecord<N>>(for observer: Record) {
        _ = drain(for: observer, asJob: false)
        if asyncCalls == nil { observer.environment.idleWatch.noteProgress() }
    }

    /// The one drain loop: takes a batch under the lock, as the state machine says, and runs it
    /// outside the lock, item by item (``run(_:_:_:for:)``), until the machine says stop. For an
    /// `async` handler, a batch is one item whose call is prepared (``prepareCall(_:_:for:)``) and
    /// started once the mailbox is suspended, so the call cannot finish before the suspension;
    /// ``resume()`` goes on once it has returned.
    ///
    /// - Parameters:
    ///   - asJob: Whether this is the job handed to the target (sliced), rather than an inline drain.
    ///   - posterPaused: Whether the ``GatheringJob`` that started the job saw the poster pause.
    /// - Returns: Whether the job must be handed to the target again.
    private func drain<Record: TypedDeliveryRecord<N>>(
        for observer: Record, asJob: Bool, posterPaused: Bool = false
    ) -> Bool {
        var batch = ItemQueue()
        defer { batch.deallocate() }
        let thread = currentThreadID()
        // The critical section returns the action alone and sets `handler`: a result, or a call of
        // `Optional.map`, whose type depends on `N` would ask the runtime for its metadata at
        // every drain.
        var handler: HandlerBox<N>?
        var action = locked.withLock { locked in
            let action =
                asJob
                ? locked.machine.jobStarted(on: thread, posterPaused: posterPaused)
                : locked.machine.inlineStarted(on: thread)
            take(action, from: &locked.items, into: &batch)
            if action != .stop, let box = locked.handler { handler = unsafeDowncast(box, to: HandlerBox<N>.self) }
            return action
        }
        var plain = handler?.plain  // read once per drain: a read per item would retain and release it
        let isAsync = asyncCalls != nil
        // Read once per drain, like every field of the mailbox the loop needs: a read per item would
        // pull the mailbox's first cache line, which the poster's appends write (the lock is next to
        // it), back and forth between the two threads at every item.
        let layout = self.layout
        while case .run = action {
            var launch: (() -> Void)?
            var index = 0
            while index < batch.count {  // a while loop: `for in` over a range costs witness calls here
                let item = batch.item(index, layout)
                if isAsync {
                    launch = prepareCall(item, handler, for: observer) ?? launch
                } else {
                    run(item, plain, layout, for: observer)
                }
                index += 1
            }
            // One block is kept, so that a drain that runs several batches does not allocate for each.
            batch.removeAllMoved()
            // Once the observation has ended, the mailbox no longer holds the handler, and the
            // drain's references are the last: they go before the lock that may make the mailbox
            // idle, so that what the handler captures is released (a `deinit` that may post) while
            // the mailbox still counts as running.
            if !observer.isLive { (handler, plain) = (nil, nil) }
            observer.environment.idleWatch.noteBatchEnding()
            action = locked.withLock { locked in
                let action = locked.machine.batchRan(startedCall: launch != nil)
                take(action, from: &locked.items, into: &batch)
                Self.recycle(&batch, into: &locked.items)
                return action
            }
            if launch != nil { (handler, plain) = (nil, nil) }  // the drain ends; the call has its handler
            launch?()
        }
        return action == .reschedule
    }

    /// Runs one item and consumes it (its payload is destroyed, its wait group told the outcome):
    /// the drain's call of the handler. `plain` is the handler the drain read once, `nil` once the
    /// mailbox has closed.
    @inline(__always)
    private func run<Record: TypedDeliveryRecord<N>>(
        _ item: UnsafeMutableRawPointer, _ plain: HandlerBox<N>.Plain?, _ layout: ItemQueue.Layout,
        for observer: Record
    ) {
        // Moved out: the handler borrows the item's own copy, which is destroyed when this returns
        // (read in place, it would be copied again for the call: a retain and a release more per
        // item for a notification that holds a reference).
        let value = layout.payload(item, as: N.self).move()
        let (_, group) = layout.takeHeader(item)
        defer { withExtendedLifetime(value) {} }
        guard let group else {
            // The common case, kept apart: no outcome to build and destroy per item. The liveness
            // check comes before the binding: the other way round, the binding would retain and
            // release the closure around that check's call, per item.
            if observer.isLive, let plain { HandlerCall.run(plain, with: value, reportingTo: observer) }
            return
        }
        var outcome = DeliveryOutcome.skipped
        if observer.isLive, let plain {
            let failure =
                if let waiter = group.waiter {
                    Waiter.chain.withValue(waiter) { HandlerCall.run(plain, with: value, reportingTo: observer) }
                } else {
                    HandlerCall.run(plain, with: value, reportingTo: observer)
                }
            outcome = failure.map(DeliveryOutcome.failed) ?? .delivered
        }
        group.leave(outcome)
    }

    /// Moves the items a drain action takes into `batch`. Call under the mailbox's lock.
    @inline(__always)
    private func take(
        _ action: MailboxStateMachine.DrainAction, from items: inout ItemQueue, into batch: inout ItemQueue
    ) {
        guard case .run(let count) = action else { return }
        gauge?.noteTaken()
        let layout = self.layout
        items.moveFront(count, into: &batch, layout) { layout.move(N.self, from: $0, to: $1, count: $2) }
    }

    /// Gives the block of a drained batch to the mailbox, if the mailbox is empty and has none, so that
    /// the next post reuses it instead of allocating one: the block then stays with the mailbox
    /// rather than being allocated by the posting thread and freed by the draining one at each
    /// burst or round trip. Call under the mailbox's lock.
    private static func recycle(_ batch: inout ItemQueue, into items: inout ItemQueue) {
        guard batch.isEmpty, batch.blockCount > 0, items.isEmpty, items.blockCount == 0 else { return }
        swap(&batch, &items)
    }

    // MARK: Stream consumers

    /// The next item, for a consumer of the stream this mailbox feeds: the front item if one is
    /// ready; otherwise the consumer waits until an append or a release hands it one
    /// (``handToConsumers()``). `nil` once the stream has ended.
    func next(isolation actor: isolated (any Actor)?) async -> N? {
        var item: N?
        // Not counted as waiting on the first look: if it must wait, it waits below.
        if takeForConsumer(waiting: nil, into: &item) { return item }
        return await withCheckedContinuation(isolation: actor) { (continuation: CheckedContinuation<N?, Never>) in
            var item: N?
            if takeForConsumer(waiting: Consumer(continuation), into: &item) { continuation.resume(returning: item) }
        }
    }

    /// Takes the front item for a consumer into `item` (`nil` once the stream has ended) and
    /// returns `true`; or, if none is ready, has `consumer` wait (when it is not `nil`) and returns
    /// `false`. The critical section returns the machine's action alone: a result whose type
    /// depends on `N` would ask the runtime for its metadata at every look.
    private func takeForConsumer(waiting consumer: Consumer?, into item: inout N?) -> Bool {
        withItemSlot { slot in
            let action = locked.withLock { locked in
                let action = locked.machine.consumerArrived(mayWait: consumer != nil)
                switch action {
                case .take: removeItem(at: 0, into: slot, from: &locked.items)
                case .wait: if let consumer { locked.consumers.append(consumer) }
                case .finished: break
                }
                return action
            }
            if action == .take { item = takeMoved(slot) }
            return action != .wait
        }
    }

    /// Hands the items that became ready to the consumers that wait, oldest first.
    ///
    /// The items move into a batch, as a drain's do, and the consumers into an array of objects:
    /// an array of `(Consumer, N)` made the runtime look up the metadata of about twenty types,
    /// each a type that depends on `N`, at every hand-off.
    private func handToConsumers() {
        var batch = ItemQueue()
        defer { batch.deallocate() }
        let layout = self.layout
        let consumers = locked.withLock { locked -> [any AnyObject & Sendable] in
            let count = locked.machine.handToConsumers()
            guard count > 0 else { return [] }
            locked.items.moveFront(count, into: &batch, layout) { layout.move(N.self, from: $0, to: $1, count: $2) }
            guard count < locked.consumers.count else { return exchange(&locked.consumers, with: []) }
            defer { locked.consumers.removeFirst(count) }
            return Array(locked.consumers.prefix(count))
        }
        for (index, consumer) in consumers.enumerated() {
            let item = takeMoved(batch.item(index, layout))
            unsafeDowncast(consumer, to: Consumer.self).continuation.resume(returning: item)
        }
        batch.removeAllMoved()
    }

    /// Ends the stream this mailbox feeds: closes the mailbox, drops its items and tells every
    /// waiting consumer that the stream has ended. Does nothing the second time.
    func finishStream() {
        var (items, _) = close()  // once closed, no consumer starts to wait
        drop(&items)
        let consumers = locked.withLock { exchange(&$0.consumers, with: []) }
        for consumer in consumers {
            unsafeDowncast(consumer, to: Consumer.self).continuation.resume(returning: nil)
        }
    }

    /// The notification of the item moved into `slot`, which has no wait group.
    private func takeMoved(_ slot: UnsafeMutableRawPointer) -> N {
        _ = layout.takeHeader(slot)
        return layout.payload(slot, as: N.self).move()
    }

    /// A consumer of the stream this mailbox feeds, waiting in ``next(isolation:)``.
    private final class Consumer: Sendable {
        let continuation: CheckedContinuation<N?, Never>

        init(_ continuation: CheckedContinuation<N?, Never>) {
            self.continuation = continuation
        }
    }

    // MARK: Closing

    /// Destroys `items`, taken out of the mailbox, without running them, telling each waiting post
    /// `outcome`. Call outside the mailbox's lock: destroying a payload can run any `deinit`.
    ///
    /// - Returns: The number of items dropped.
    @discardableResult
    func drop(_ items: inout ItemQueue, leaving outcome: DeliveryOutcome = .skipped) -> Int {
        let count = items.count
        for index in 0..<count {
            layout.destroy(items.item(index, layout), as: N.self, leaving: outcome)
        }
        items.deallocate()
        return count
    }

    deinit {
        // Items left when the last reference goes (a target that never ran the drain job), and
        // the block an empty mailbox keeps for its next post (see `recycle`).
        var (items, _) = close()
        drop(&items)
    }
}

/// The state of a mailbox behind its lock: the decisions and the items. Not generic, so that an
/// unspecialised mailbox asks the runtime for no generic metadata to lock it.
private struct MailboxStorage: Sendable {
    var machine = MailboxStateMachine()
    var items = ItemQueue()
    /// Blocked waiters offered each drain (see ``Mailbox/addHelper(_:)``).
    var helpers: [Waiter] = []
    /// The ``HandlerBox`` of the mailbox's observer until the mailbox closes.
    var handler: (any AnyObject & Sendable)?
    /// For a mailbox that feeds a stream, its consumers that wait for an item, oldest first.
    var consumers: [any AnyObject & Sendable] = []
}
