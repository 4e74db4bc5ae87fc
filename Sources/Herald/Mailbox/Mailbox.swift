import Synchronization

/// The mailbox of one observer on an asynchronous target: its items, the decisions of its
/// ``LaneStateMachine``, and the effects of those decisions.
///
/// Everything the state machine decides is decided under the lane's lock; everything it asks for
/// (handing a job to the target, running handlers, destroying dropped items) happens after
/// unlocking. Items are copied in on append and moved out, in batches, by the drain.
///
/// It also carries the rarely used parts of an observer: its target, its filters and a contextual
/// handler. Posting-thread observers without filters or a contextual handler have no lane.
///
/// The handler of an observer whose deliveries a drain runs (on an asynchronous target, or any
/// `async` handler) lives here, under the lane's lock, as a ``DrainedHandler``: each drain takes
/// it when it starts, and ``close()`` takes it out, so that cancelling releases the handler and
/// what it captures at once, even while a drain job still waits on the target. A drain running at
/// that moment keeps its own reference until it ends.
final class Lane<N: TypedNotification>: Sendable {
    let target: DeliveryTarget
    let filters: Filters?
    /// The contextual handler of a posting-thread observer (a drained one's is in its
    /// ``DrainedHandler``).
    let contextual: (@Sendable (N, DeliveryContext) throws -> Void)?
    /// The buffer of the ``NotificationSequence`` a stream observer feeds; the rest of the lane is
    /// unused then.
    let stream: NotificationSequence<N>.Storage?
    /// The task of the `async` call running now, for an observer with an `async` handler.
    let asyncCalls: AsyncCallSlot?
    /// The layout of one queued item of type `N`.
    let layout = ItemQueue.Layout(of: N.self)
    /// The mailbox policy and its counts; `nil` for an unbounded mailbox.
    let policy: MailboxPolicy?
    /// The observer's priority: among the observers of a post, higher ones come first.
    let priority: Int
    /// The family the observer receives, for an observer of a protocol, a class hierarchy or
    /// every notification (see ``Family``).
    let family: AnyFamily?

    private let mailbox = Lock(LaneMailbox())
    /// How a lingering drain tells a poster at work without taking the lock; `nil` for lanes that
    /// do not linger (see ``BurstGauge``).
    private let gauge: BurstGauge?
    /// The number of waiters in `mailbox.helpers`, read without the lock by ``helpers``.
    private let helperCount = Atomic<Int>(0)

    init(
        target: DeliveryTarget, filters: Filters?, contextual: (@Sendable (N, DeliveryContext) throws -> Void)?,
        stream: NotificationSequence<N>.Storage? = nil, drained handler: Handler<N>? = nil,
        policy: MailboxPolicy? = nil, priority: Int = 0, family: AnyFamily? = nil
    ) {
        let isAsync = handler?.isAsync == true
        self.policy = policy
        self.priority = priority
        self.family = family
        self.stream = stream
        self.asyncCalls = isAsync ? AsyncCallSlot() : nil
        self.target = target
        self.filters = filters
        self.contextual = contextual
        let lingers = !isAsync && stream == nil && target.drainMayLinger
        gauge = lingers ? BurstGauge() : nil
        if let handler {
            mailbox.withLock { $0.handler = DrainedHandler(handler) }
        }
        if isAsync {
            mailbox.withLock { $0.machine.batchLimit = 1 }
        } else if lingers {
            mailbox.withLock { $0.machine.lingers = true }
        }
        if case .latest = policy?.rule {
            mailbox.withLock { $0.machine.oneBatchPerJob = true }
        }
    }

    // MARK: Appending

    /// Appends a copy of `notification`, held under `hold` unless it is 0.
    @inline(__always)
    func append(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, hold: UInt
    ) -> LaneStateMachine.AppendAction {
        mailbox.withLock { mailbox in
            let action = mailbox.machine.append(hold: hold)
            if action != .reject {
                store(notification, subjectID: subjectID, group: group, in: &mailbox.items)
            }
            return action
        }
    }

    /// Appends copies of `items`, which a drain may take at once (replayed values), under the
    /// lane's policy if it has one.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target, and the notifications
    ///   the policy discarded, to release after every lock.
    func append(_ items: [QueuedItem<N>]) -> (mustSchedule: Bool, discarded: [N]) {
        mailbox.withLock { mailbox in
            var mustSchedule = false
            var discarded: [N] = []
            for item in items {
                if let policy {
                    // Replayed items have no wait group: only payloads are left to release.
                    let action = withUnsafeTemporaryAllocation(byteCount: layout.stride, alignment: layout.alignment) {
                        buffer in
                        let slot = buffer.baseAddress.unsafelyUnwrapped
                        let (action, displacement) = withUnsafePointer(to: item.notification) {
                            append(
                                $0, subjectID: item.subjectID, subject: nil, group: nil, hold: 0, under: policy,
                                displacingInto: slot, in: &mailbox)
                        }
                        if displacement == .removed {
                            discarded.append((slot + layout.payloadOffset).assumingMemoryBound(to: N.self).move())
                        }
                        return action
                    }
                    switch action {
                    case .reject: return (false, discarded)
                    case .store: break
                    case .storeAndSchedule: mustSchedule = true
                    }
                    continue
                }
                switch mailbox.machine.append(hold: 0) {
                case .reject: return (false, discarded)
                case .store: break
                case .storeAndSchedule: mustSchedule = true
                }
                withUnsafePointer(to: item.notification) {
                    store($0, subjectID: item.subjectID, group: item.group, in: &mailbox.items)
                }
            }
            return (mustSchedule, discarded)
        }
    }

    // MARK: Mailbox policies

    /// Appends a copy of `notification` under the lane's policy: it may replace a pending item,
    /// push out the oldest, or be dropped itself. Only lanes with a policy call it.
    ///
    /// A removed item is moved into `slot` (room for one item of ``layout``), so that its payload
    /// is destroyed after unlocking: its `deinit` is user code.
    func appendUnderPolicy(
        _ notification: UnsafePointer<N>, subject: AnyObject?, group: WaitGroup?, hold: UInt,
        policy: MailboxPolicy, displacingInto slot: UnsafeMutableRawPointer
    ) -> (action: LaneStateMachine.AppendAction, displacement: MailboxPolicy.Displacement) {
        mailbox.withLock { mailbox in
            append(
                notification, subjectID: subject.map(ObjectIdentifier.init), subject: subject, group: group,
                hold: hold, under: policy, displacingInto: slot, in: &mailbox)
        }
    }

    /// Finishes what ``appendUnderPolicy(_:subjectID:group:hold:policy:displacingInto:)`` left, outside
    /// the lane's lock: destroys a removed item's payload and tells the waiting posts that lost
    /// their notification.
    func finish(
        _ displacement: MailboxPolicy.Displacement, in slot: UnsafeMutableRawPointer, newGroup group: WaitGroup?
    ) {
        switch displacement {
        case .none:
            return
        case .rejectedNew:
            group?.leave(.dropped)
        case .removed:
            (slot + layout.payloadOffset).assumingMemoryBound(to: N.self).deinitialize(count: 1)
            Self.takeHeader(slot).1?.leave(.dropped)
        }
    }

    /// The body of ``appendUnderPolicy(_:subject:group:hold:policy:displacingInto:)``. Call under
    /// the lane's lock.
    ///
    /// - Parameter subject: The post's subject, alive for the length of the call, or `nil` when
    ///   only its identity is known (a replayed value).
    private func append(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, subject: AnyObject?, group: WaitGroup?,
        hold: UInt, under policy: MailboxPolicy, displacingInto slot: UnsafeMutableRawPointer,
        in mailbox: inout LaneMailbox
    ) -> (action: LaneStateMachine.AppendAction, displacement: MailboxPolicy.Displacement) {
        if mailbox.machine.isClosed { return (.reject, .none) }
        var displacement = MailboxPolicy.Displacement.none
        var storedGroup = group
        switch policy.rule {
        case .latest(let perSubject):
            // Per subject, a pending item is replaced only by a post of the same live object: a
            // new object at a dead one's address has the same identity bits but is another subject.
            let isSameSubject = !perSubject || policy.subjects.isSame(subjectID, subject)
            if isSameSubject, let index = pendingIndex(subjectID, matchingSubject: perSubject, in: mailbox.items) {
                removeItem(at: index, into: slot, from: &mailbox)
                displacement = .removed
                // The replaced post's wait moves to the new item: it completes with the new one.
                let groupSlot = slot + 8
                if let oldGroup = Self.takeHeader(slot).1 {
                    groupSlot.storeBytes(of: 0, as: UInt.self)
                    storedGroup = WaitGroup(relaying: group, replaced: oldGroup)
                }
                policy.noteReplaced()
            }
            if perSubject { policy.subjects.record(subjectID, subject) }
        case .dropOldest(let limit):
            if mailbox.machine.count >= limit {
                removeItem(at: 0, into: slot, from: &mailbox)
                displacement = .removed
                policy.noteDropped()
            }
        case .dropNewest(let limit):
            if mailbox.machine.count >= limit {
                policy.noteDropped()
                return (.store, .rejectedNew)
            }
        }
        let action = mailbox.machine.append(hold: hold)
        store(notification, subjectID: subjectID, group: storedGroup, in: &mailbox.items)
        return (action, displacement)
    }

    /// The index of the pending item a new one replaces: the one of `subjectID` if
    /// `matchingSubject`, otherwise the only one.
    private func pendingIndex(_ subjectID: ObjectIdentifier?, matchingSubject: Bool, in items: ItemQueue) -> Int? {
        guard !items.isEmpty else { return nil }
        guard matchingSubject else { return items.count - 1 }
        let bits = subjectID.map { UInt(bitPattern: $0) } ?? 0
        let layout = self.layout
        var index = items.count - 1
        while index >= 0 {
            if items.item(index, layout).load(as: UInt.self) == bits { return index }
            index -= 1
        }
        return nil
    }

    /// Moves the item at `index` out of the lane into `slot`. Call under the lane's lock.
    private func removeItem(at index: Int, into slot: UnsafeMutableRawPointer, from mailbox: inout LaneMailbox) {
        let layout = self.layout
        Self.move(from: mailbox.items.item(index, layout), to: slot, count: 1, layout)
        mailbox.items.removeMoved(at: index, layout) { Self.move(from: $0, to: $1, count: $2, layout) }
        mailbox.machine.remove(at: index)
    }

    /// What the policy has discarded so far: notifications replaced by newer ones, and
    /// notifications dropped.
    var discardedCounts: (replaced: Int, dropped: Int) {
        guard let policy else { return (0, 0) }
        return (policy.replacedCount.load(ordering: .relaxed), policy.droppedCount.load(ordering: .relaxed))
    }

    /// Ends the hold of a post that has reached every lane.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    @inline(__always)
    func release(hold: UInt) -> Bool {
        mailbox.withLock { $0.machine.release(hold: hold) }
    }

    /// Copies an item to the back of `items`. Call under the lane's lock.
    @inline(__always)
    private func store(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, in items: inout ItemQueue
    ) {
        gauge?.noteAppended()
        let layout = self.layout
        let slot = items.appendSlot(layout) { Self.move(from: $0, to: $1, count: $2, layout) }
        slot.storeBytes(of: subjectID.map { UInt(bitPattern: $0) } ?? 0, as: UInt.self)
        let groupBits = group.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
        slot.storeBytes(of: groupBits, toByteOffset: 8, as: UInt.self)
        (slot + layout.payloadOffset).assumingMemoryBound(to: N.self).initialize(to: notification.pointee)
    }

    /// Moves `count` items between two buffers that do not overlap.
    private static func move(
        from source: UnsafeMutableRawPointer, to destination: UnsafeMutableRawPointer, count: Int,
        _ layout: ItemQueue.Layout
    ) {
        if _isBitwiseTakable(N.self) {
            destination.copyMemory(from: source, byteCount: count * layout.stride)
            return
        }
        for index in 0..<count {
            let from = source + index * layout.stride
            let to = destination + index * layout.stride
            to.copyMemory(from: from, byteCount: 16)
            (to + layout.payloadOffset).assumingMemoryBound(to: N.self).moveInitialize(
                from: (from + layout.payloadOffset).assumingMemoryBound(to: N.self), count: 1)
        }
    }

    // MARK: Draining

    /// The thread draining the lane right now, or 0.
    var drainerThread: UInt {
        mailbox.withLock { $0.machine.runner?.thread ?? 0 }
    }

    /// Runs the drain job handed to the target: at most one slice of items, each consumed by
    /// `run` outside the lock.
    ///
    /// - Returns: Whether the job must be handed to the target again.
    func runJob(
        on thread: UInt, continued: Bool, _ run: (UnsafeMutableRawPointer, DrainedHandler<N>?) -> Void
    ) -> Bool {
        var posterPaused = false
        if continued, let gauge {
            switch gauge.look() {
            case .gather: return true  // the job stays pending: posts meanwhile only append
            case .take(let paused): posterPaused = paused
            }
        }
        var batch = ItemQueue()
        defer { batch.deallocate() }
        let (firstAction, handler) = startJob(on: thread, posterPaused: posterPaused, into: &batch)
        var action = firstAction
        while case .run = action {
            runBatch(&batch) { run($0, handler) }
            action = mailbox.withLock { mailbox in
                let action = mailbox.machine.jobRanBatch()
                take(action, from: &mailbox.items, into: &batch)
                Self.recycle(&batch, into: &mailbox.items)
                return action
            }
        }
        return action == .reschedule
    }

    /// Drains every ready item on the calling thread, which is on the target, unless another
    /// drain runs. Never sliced.
    func runInline(on thread: UInt, _ run: (UnsafeMutableRawPointer, DrainedHandler<N>?) -> Void) {
        var batch = ItemQueue()
        defer { batch.deallocate() }
        let (firstCount, handler) = startInline(on: thread, into: &batch)
        var count = firstCount
        while count != nil {
            runBatch(&batch) { run($0, handler) }
            count = mailbox.withLock { mailbox in
                let count = mailbox.machine.inlineRanBatch()
                take(count.map(LaneStateMachine.DrainAction.run) ?? .stop, from: &mailbox.items, into: &batch)
                Self.recycle(&batch, into: &mailbox.items)
                return count
            }
        }
    }

    /// Starts the drain of the job handed to the target: its first action, with the items it takes
    /// moved into `batch`, and the handler that runs them (`nil` once the lane is closed).
    private func startJob(
        on thread: UInt, posterPaused: Bool = false, into batch: inout ItemQueue
    ) -> (LaneStateMachine.DrainAction, DrainedHandler<N>?) {
        let (action, handler) = mailbox.withLock { mailbox in
            let action = mailbox.machine.jobStarted(on: thread, posterPaused: posterPaused)
            take(action, from: &mailbox.items, into: &batch)
            return (action, action == .stop ? nil : mailbox.handler)
        }
        return (action, handler.map { unsafeDowncast($0, to: DrainedHandler<N>.self) })
    }

    /// Starts an inline drain: how many items it runs first, moved into `batch`, or `nil` if
    /// another drain runs or nothing is ready; and the handler that runs them.
    private func startInline(on thread: UInt, into batch: inout ItemQueue) -> (Int?, DrainedHandler<N>?) {
        let (count, handler) = mailbox.withLock { mailbox in
            let count = mailbox.machine.inlineStarted(on: thread)
            take(count.map(LaneStateMachine.DrainAction.run) ?? .stop, from: &mailbox.items, into: &batch)
            return (count, count == nil ? nil : mailbox.handler)
        }
        return (count, handler.map { unsafeDowncast($0, to: DrainedHandler<N>.self) })
    }

    /// Moves the items a drain action takes into `batch`. Call under the lane's lock.
    @inline(__always)
    private func take(_ action: LaneStateMachine.DrainAction, from items: inout ItemQueue, into batch: inout ItemQueue)
    {
        guard case .run(let count) = action else { return }
        gauge?.noteTaken()
        let layout = self.layout
        items.moveFront(count, into: &batch, layout) { Self.move(from: $0, to: $1, count: $2, layout) }
    }

    /// Gives the block of a drained batch to the lane, if the lane is empty and has none, so that
    /// the next post reuses it instead of allocating one: the block then stays with the lane
    /// rather than being allocated by the posting thread and freed by the draining one at each
    /// burst or round trip. Call under the lane's lock.
    private static func recycle(_ batch: inout ItemQueue, into items: inout ItemQueue) {
        guard batch.isEmpty, batch.blockCount > 0, items.isEmpty, items.blockCount == 0 else { return }
        swap(&batch, &items)
    }

    /// Runs and consumes every item of `batch`, outside the lock.
    @inline(__always)
    private func runBatch(_ batch: inout ItemQueue, _ run: (UnsafeMutableRawPointer) -> Void) {
        let layout = self.layout
        var index = 0
        while index < batch.count {  // a while loop: `for in` over a range costs witness calls here
            run(batch.item(index, layout))
            index += 1
        }
        // One block is kept, so that a drain that runs several batches does not allocate for each.
        batch.removeAllMoved(keepingCapacity: true)
    }

    // MARK: Async handlers

    /// Runs the drain handed to the target for a lane whose handler is `async`: it takes one item
    /// at a time and gives it to `prepare`, which consumes it and returns the start of the
    /// handler's task, or `nil` when no call is due (the observation has ended). The lane is
    /// suspended before that task starts, so it cannot finish before the lane is suspended, and the
    /// drain ends; ``resume()`` goes on once the call has returned.
    ///
    /// - Returns: Whether the job must be handed to the target again.
    func runAsyncJob(
        on thread: UInt, _ prepare: (UnsafeMutableRawPointer, DrainedHandler<N>?) -> (() -> Void)?
    ) -> Bool {
        var batch = ItemQueue()
        defer { batch.deallocate() }
        let (firstAction, handler) = startJob(on: thread, into: &batch)
        var action = firstAction
        while case .run = action {
            let launch = prepareAsyncBatch(&batch) { prepare($0, handler) }
            action = mailbox.withLock { mailbox in
                if launch != nil {
                    mailbox.machine.suspend()
                    return .stop
                }
                let action = mailbox.machine.jobRanBatch()
                take(action, from: &mailbox.items, into: &batch)
                return action
            }
            launch?()
        }
        return action == .reschedule
    }

    /// ``runInline(on:_:)`` for a lane whose handler is `async`: it starts at most one call.
    func runAsyncInline(on thread: UInt, _ prepare: (UnsafeMutableRawPointer, DrainedHandler<N>?) -> (() -> Void)?) {
        var batch = ItemQueue()
        defer { batch.deallocate() }
        let (firstCount, handler) = startInline(on: thread, into: &batch)
        var count = firstCount
        while count != nil {
            let launch = prepareAsyncBatch(&batch) { prepare($0, handler) }
            count = mailbox.withLock { mailbox in
                if launch != nil {
                    mailbox.machine.suspend()
                    return nil
                }
                let count = mailbox.machine.inlineRanBatch()
                take(count.map(LaneStateMachine.DrainAction.run) ?? .stop, from: &mailbox.items, into: &batch)
                return count
            }
            launch?()
        }
    }

    /// Gives the item of `batch` (an async lane takes one at a time) to `prepare`, outside the lock.
    ///
    /// - Returns: The start of the handler's task, if a call is due.
    private func prepareAsyncBatch(
        _ batch: inout ItemQueue, _ prepare: (UnsafeMutableRawPointer) -> (() -> Void)?
    ) -> (() -> Void)? {
        let layout = self.layout
        var launch: (() -> Void)?
        var index = 0
        while index < batch.count {
            if let next = prepare(batch.item(index, layout)) { launch = next }
            index += 1
        }
        batch.removeAllMoved(keepingCapacity: true)
        return launch
    }

    /// The async handler started by the last drain has finished.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    func resume() -> Bool {
        mailbox.withLock { $0.machine.resume() }
    }

    // MARK: Quiescence

    /// What the lane still has to do: whether it has items, a job with its target, a drain
    /// running or an async handler that has not finished (`isBusy`); how many items it holds; and
    /// whether it waits only for its target to run its job.
    var pendingState: (isBusy: Bool, count: Int, waitsForTarget: Bool, isSuspended: Bool) {
        mailbox.withLock { mailbox in
            let machine = mailbox.machine
            return (machine.isBusy, machine.count, machine.waitsForTarget, machine.runner == .suspended)
        }
    }

    // MARK: Helpers

    /// Registers a blocked waiter that may occupy the target and waits for items of this lane:
    /// whenever a drain job is handed to the target, the waiter is offered the drain too, so
    /// that it runs items that became ready while it was blocked (an item held by another post,
    /// released after the waiter's own drain found it held).
    func addHelper(_ waiter: Waiter) {
        mailbox.withLock { mailbox in
            mailbox.helpers.append(waiter)
            helperCount.store(mailbox.helpers.count, ordering: .relaxed)
        }
    }

    /// Ends a registration made by ``addHelper(_:)``.
    func removeHelper(_ waiter: Waiter) {
        mailbox.withLock { mailbox in
            if let index = mailbox.helpers.firstIndex(where: { $0 === waiter }) {
                mailbox.helpers.remove(at: index)
            }
            helperCount.store(mailbox.helpers.count, ordering: .relaxed)
        }
    }

    /// The registered helpers. Without the lock while there are none: a waiter registers before it
    /// drains, and a post that made items ready before that registration left them for that drain.
    var helpers: [Waiter] {
        guard helperCount.load(ordering: .relaxed) > 0 else { return [] }
        return mailbox.withLock { $0.helpers }
    }

    /// The job the target refused is no longer pending.
    ///
    /// - Returns: Whether the lane holds items, which nothing will ever run now; `false` for a
    ///   lingering job that found the lane empty (the next post's job will be refused in turn).
    func jobRefused() -> Bool {
        mailbox.withLock { mailbox in
            mailbox.machine.jobRefused()
            return mailbox.machine.count > 0
        }
    }

    // MARK: Closing

    /// Closes the lane and takes out every item, for the caller to drop outside the lock, and the
    /// handler, for the caller to release outside the lock.
    func close() -> (items: ItemQueue, handler: (any AnyObject & Sendable)?) {
        mailbox.withLock { mailbox in
            _ = mailbox.machine.close()
            defer {
                mailbox.items = ItemQueue()
                mailbox.handler = nil
            }
            return (mailbox.items, mailbox.handler)
        }
    }

    /// Destroys `items`, taken out of the lane, without running them, telling each waiting post
    /// `outcome`. Call outside the lane's lock: destroying a payload can run any `deinit`.
    ///
    /// - Returns: The number of items dropped.
    @discardableResult
    func drop(_ items: inout ItemQueue, leaving outcome: DeliveryOutcome = .skipped) -> Int {
        let count = items.count
        for index in 0..<count {
            let item = items.item(index, layout)
            (item + layout.payloadOffset).assumingMemoryBound(to: N.self).deinitialize(count: 1)
            Self.takeHeader(item).1?.leave(outcome)
        }
        items.deallocate()
        return count
    }

    /// The subject identity and wait group of an item; the group's reference passes to the caller.
    @inline(__always)
    static func takeHeader(_ item: UnsafeMutableRawPointer) -> (ObjectIdentifier?, WaitGroup?) {
        let subjectBits = item.load(as: UInt.self)
        let groupBits = item.load(fromByteOffset: 8, as: UInt.self)
        let subjectID = subjectBits == 0 ? nil : unsafeBitCast(subjectBits, to: ObjectIdentifier.self)
        let group = UnsafeRawPointer(bitPattern: groupBits).map {
            Unmanaged<WaitGroup>.fromOpaque($0).takeRetainedValue()
        }
        return (subjectID, group)
    }

    deinit {
        // Items left when the last reference goes (a target that never ran the drain job), and
        // the block an empty lane keeps for its next post (see `recycle`).
        var items = mailbox.withLock { mailbox in
            defer { mailbox.items = ItemQueue() }
            return mailbox.items
        }
        drop(&items)
    }
}

/// The state of a lane behind its lock: the decisions and the items. Not generic, so that an
/// unspecialised lane asks the runtime for no generic metadata to lock it.
struct LaneMailbox: Sendable {
    var machine = LaneStateMachine()
    var items = ItemQueue()
    /// Blocked waiters offered each drain (see ``Lane/addHelper(_:)``).
    var helpers: [Waiter] = []
    /// The ``DrainedHandler`` of the lane's observer until the lane closes; `nil` for a lane whose
    /// handler runs on the posting thread, or that feeds a stream.
    var handler: (any AnyObject & Sendable)?
}

/// The handler of an observer whose deliveries a drain runs, held by its lane (see ``Lane``).
final class DrainedHandler<N: TypedNotification>: Sendable {
    let handler: Handler<N>
    /// The closure of a `.plain` handler, read once per item by the drain's common path.
    let plain: (@Sendable (N) throws -> Void)?

    init(_ handler: Handler<N>) {
        self.handler = handler
        if case .plain(let body) = handler { plain = body } else { plain = nil }
    }
}

/// What lets the drain job of a lingering lane (a serial queue, a ``DeliveryThread``) tell, without
/// taking the lane's lock, that a poster is still at work, so that it hands itself back to the
/// target once more instead of taking a few items.
///
/// A drain that keeps up with a poster takes one or two items at a time, and each batch takes the
/// lane's lock twice: the poster and the drain then pass the lock's cache line back and forth at
/// every post, and a burst runs several times slower than either side alone. A job that the target
/// runs again (``Lane/runJob(on:continued:_:)``) first reads how many items were appended since
/// its last batch. While that number is below a slice and still grows from one look to the next, it
/// goes back to the target without touching the lane, for at most ``gatherLimit`` looks in a row.
/// When the poster stops, the number stops growing and the next look takes the items; a lone
/// post's job is never continued, so it never gathers.
///
/// The counts are hints. The poster stores them under the lane's lock, the one pending job reads
/// them, and every decision about items is still made under the lock by ``LaneStateMachine``:
/// a stale count only costs one look more or less.
final class BurstGauge: Sendable {
    /// The most looks in a row that hand the job back without taking anything.
    static let gatherLimit = 64

    /// Items appended so far. Written by posters under the lane's lock only, so a relaxed load and
    /// store do not lose counts.
    private let appended = Atomic<Int>(0)
    /// `appended` when the job last took items, written under the lane's lock.
    private let taken = Atomic<Int>(0)
    /// `appended` at the last look, and the looks in a row so far. Only the pending job, of which
    /// there is at most one, touches them.
    private let lastSeen = Atomic<Int>(0)
    private let looks = Atomic<Int>(0)

    /// An item was appended. Call under the lane's lock.
    @inline(__always)
    func noteAppended() {
        appended.store(appended.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    /// The drain took items. Call under the lane's lock.
    @inline(__always)
    func noteTaken() {
        taken.store(appended.load(ordering: .relaxed), ordering: .relaxed)
    }

    /// What a job that the target runs again does before it takes the lane's lock.
    enum Look: Equatable {
        /// Go back to the target without taking anything: fewer than a slice of items arrived
        /// since the last batch, and more since the last look.
        case gather
        /// Take what is there. `posterPaused` when nothing arrived since the last look: the
        /// burst is likely over, so the job does not linger once it has emptied the lane.
        case take(posterPaused: Bool)
    }

    /// Looks at the counts, for the job that the target runs again.
    func look() -> Look {
        let now = appended.load(ordering: .relaxed)
        let looks = self.looks.load(ordering: .relaxed)
        let paused = now == lastSeen.load(ordering: .relaxed)
        if looks < Self.gatherLimit && !paused && now &- taken.load(ordering: .relaxed) < LaneStateMachine.sliceLimit {
            self.looks.store(looks + 1, ordering: .relaxed)
            lastSeen.store(now, ordering: .relaxed)
            return .gather
        }
        self.looks.store(0, ordering: .relaxed)
        return .take(posterPaused: paused && looks > 0)
    }
}
