/// The decisions of one ``Mailbox``: which items a drain may take, when a drain job must be handed
/// to the target, and what a mailbox policy does with a new item. It holds counts, never items,
/// and has no effects: ``Mailbox`` stores the items and acts on what each input returns, after
/// unlocking.
///
/// Its state is one ``State`` value, and beside it the holds on its items (see "Items"), changed
/// only by the `mutating` inputs below, each of which returns what the mailbox must do:
///
/// | State | Items (``Queue``) | Job with the target | Drain running |
/// |---|---|---|---|
/// | `idle` | yes | no | no |
/// | `scheduled` | yes | yes, maybe lingering | no |
/// | `draining` | yes | for a job's drain; maybe, for an inline one | a job's or an inline one |
/// | `suspended` | yes | maybe (a job that found the suspension ends) | no: an async call runs |
/// | `awaitingItems` | yes, none ready until an append | no | no: a stream's consumers wait |
/// | `closed` | none, and none accepted | maybe | maybe, until it ends |
///
/// ## Items
/// Items are numbered in the order they are appended. A post that reaches several mailboxes
/// appends its item to each of them *held*, under a hold token of its own, and releases the holds
/// once every mailbox has the item. A drain takes only the items before the first held one, so no
/// handler can react to a post before the post has reached every mailbox: an effect posted by
/// that handler is appended behind the cause in every mailbox.
///
/// The holds are kept beside the ``State``, not in its ``Queue``, so that the state is a plain value
/// of a few words: every post to a queue observer changes it, and a state holding an array would
/// retain and release that array, through outlined copies, on every post.
///
/// ## Drains
/// - A *job* is the drain handed to the target. It takes at most ``sliceLimit`` items, then gives
///   the target back and is handed to it again, behind whatever the target queued meanwhile.
/// - An *inline* drain runs on a thread that is already on the target (a waiting post on its own
///   target, or a blocked waiter helping). It is never sliced: it takes every ready item, because
///   the thread that runs it would otherwise wait for a job queued behind itself.
/// - At most one drain runs at a time, and at most one job is with the target at a time.
///
/// ## Lingering
/// On a target where handing a job back is cheap (a serial queue, a ``DeliveryThread``), a job
/// runs one batch and, if more items are ready by then, hands itself back to the target instead
/// of taking them (``Configuration/lingers``): a drain that keeps up with a poster would otherwise
/// take one or two items at a time, and the two threads would pass the mailbox's lock back and
/// forth at every post. A job that empties the mailbox while a poster is at work also goes back to
/// the target once more instead of ending. A poster is at work when items arrived while the job ran
/// (it took a second batch), or when a lingering job found items. A burst is then drained by a
/// chain of jobs that the target hands itself, instead of one job per gap, each woken by the
/// poster. A job that starts and finds nothing ends, so an idle mailbox costs one empty job, never
/// a spin; and a job for a lone post (one batch) ends at once, so lone posts keep their drains in
/// the order of the posts' scans. Before a job that the target runs again takes the mailbox's
/// lock, ``BurstGauge`` may send it back once more while the poster is still adding items.
///
/// ## Mailbox policies
/// A mailbox with a ``MailboxPolicy`` decides here, in ``append(hold:pendingItemOfSubject:)``,
/// what a new item does: replace a pending one (`.latest`), push out the oldest or be dropped
/// itself when the mailbox is full. Items a drain has taken are never removed. A `.latest` mailbox
/// takes one batch per job (``Configuration/oneBatchPerJob``): what was pending when the job
/// started.
///
/// ## Bounds and waiting consumers
/// A bounded policy's limit counts the items that wait in the mailbox. An item that a waiting
/// consumer takes at once does not wait, so there is room for it beyond the limit, as in
/// `AsyncStream`: a stream's consumers wait while they are suspended in `next()`
/// (`awaitingItems`), and a handler's drain waits while its mailbox is idle and empty. So a limit of
/// 0 keeps nothing that waits: an item is stored only for a waiting consumer, and otherwise
/// dropped. (For a larger limit, the item an idle handler's job is handed counts until the job
/// takes it.)
///
/// ## Streams
/// A mailbox that feeds a ``NotificationSequence`` (``Configuration/feedsStream``) has no drains:
/// its consumers take one item each (``consumerArrived(mayWait:)``). Items wait for them in `idle`;
/// a consumer that finds none ready waits (`awaitingItems`), and an append or a release that makes
/// items ready asks the mailbox to hand them to the waiting consumers, oldest first
/// (``handToConsumers()``).
///
/// ## Asynchronous handlers
/// A mailbox whose handler is `async` takes one item per batch (``Configuration/batchLimit`` 1).
/// When the drain has started the handler's task it *suspends* the mailbox (``suspend()``): the
/// drain ends and gives the target back, and no other drain starts until the task finishes and
/// ``resume()`` is called. So one observer's async calls never overlap and run in the order of
/// its items, while its target runs other work during the suspension.
struct MailboxStateMachine: Sendable {
    /// The most items a drain job runs before it gives its target back.
    static let sliceLimit = 128

    /// What a mailbox is set up with; it never changes.
    struct Configuration: Sendable, Equatable {
        /// The most items one batch takes: 1 for an async handler, which suspends the mailbox
        /// after each.
        var batchLimit = Int.max
        /// Whether a job that finds the mailbox empty while a poster is at work is handed to the
        /// target once more (see "Lingering").
        var lingers = false
        /// The mailbox policy's rule, or `nil` for an unbounded mailbox.
        var rule: MailboxPolicy.Rule?
        /// Whether the mailbox feeds a stream, whose consumers take its items (see "Streams").
        var feedsStream = false

        /// Whether a job runs only the items that were ready when it started: what arrives during
        /// its batch waits for the next job, so other work on the target runs in between. Set for a
        /// `.latest` mailbox, which then runs at most one call per pending value (per subject) in
        /// one job, rather than following the posting rate for a whole slice.
        var oneBatchPerJob: Bool {
            if case .latest = rule { return true }
            return false
        }
    }

    /// A post's hold on one item.
    struct Hold: Sendable, Equatable {
        let token: UInt
        /// The item's number.
        var sequence: Int
    }

    /// The items of an open mailbox, counted: every state but `closed` carries one. (Which of
    /// them are held is in the machine's `holds`.)
    struct Queue: Sendable, Equatable {
        /// Items appended so far.
        var appended = 0
        /// Items taken out so far, by drains or by a policy.
        var taken = 0

        /// Items in the mailbox, held or not.
        var count: Int { appended - taken }
    }

    /// Whether a job is with the target while no job's drain runs.
    enum PendingJob: Sendable, Equatable {
        case none
        /// A job handed to the target by a post, a release or a resumed handler.
        case fresh
        /// A job that handed itself back (see "Lingering").
        case lingering
    }

    /// A drain that runs.
    enum Drain: Sendable, Equatable {
        /// The job handed to the target, on `thread`: the items it may still take in its slice, and
        /// the batches it has taken (a lingering job starts at 1).
        case job(thread: UInt, sliceRemaining: Int, batches: Int)
        /// A thread that is on the target already, outside any job, while `pending` may be with
        /// the target.
        case inline(thread: UInt, pending: PendingJob)
    }

    /// What is left of a closed mailbox: a job still with the target, and the drain or async call
    /// that was running when it closed, until they end.
    struct Remains: Sendable, Equatable {
        var isJobPending: Bool
        var runner: Runner?
    }

    /// The state of a mailbox.
    enum State: Sendable, Equatable {
        /// No job, no drain.
        case idle(Queue)
        /// A job is with the target and no drain runs.
        case scheduled(Queue, PendingJob)
        /// A drain runs.
        case draining(Queue, Drain)
        /// The drain that ran started an async call, which has not returned; `pending` is a job
        /// that was with the target when an inline drain suspended the mailbox.
        case suspended(Queue, pending: PendingJob)
        /// A stream's consumers wait in `next()` for an item; none is ready (see "Streams").
        case awaitingItems(Queue, consumers: Int)
        /// The observation ended, or its target refused the job: nothing more is accepted.
        case closed(Remains)
    }

    /// Who drains right now.
    enum Runner: Sendable, Equatable {
        /// The job handed to the target, on the given thread.
        case job(thread: UInt)
        /// A thread that is on the target already, outside any job.
        case inline(thread: UInt)
        /// No thread: an async handler started by a drain has not finished yet.
        case suspended

        var thread: UInt {
            switch self {
            case .job(let thread), .inline(let thread): return thread
            case .suspended: return 0
            }
        }
    }

    let configuration: Configuration
    private var state: State
    /// The holds on the items of an open mailbox, oldest first; none once it is closed.
    private(set) var holds: [Hold]

    init(_ configuration: Configuration = Configuration(), state: State = .idle(Queue()), holds: [Hold] = []) {
        self.configuration = configuration
        self.state = state
        self.holds = holds
    }

    init(batchLimit: Int = .max, lingers: Bool = false, rule: MailboxPolicy.Rule? = nil, feedsStream: Bool = false) {
        self.init(Configuration(batchLimit: batchLimit, lingers: lingers, rule: rule, feedsStream: feedsStream))
    }

    // MARK: Reading the state

    /// The state now, for tests and diagnostics.
    var current: State { state }

    /// The items of an open mailbox; an empty queue once it is closed.
    private var queue: Queue {
        switch state {
        case .idle(let queue), .scheduled(let queue, _), .draining(let queue, _), .suspended(let queue, _),
            .awaitingItems(let queue, _):
            return queue
        case .closed:
            return Queue()
        }
    }

    /// Items in the mailbox, held or not.
    var count: Int { queue.count }

    /// Items a drain may take now: those before the first held one.
    var readyCount: Int { ready(queue) }

    /// The items of `queue` a drain may take now: those before the first held one.
    @inline(__always)
    private func ready(_ queue: Queue) -> Int { (holds.first?.sequence ?? queue.appended) - queue.taken }

    /// Whether a drain job has been handed to the target and has not finished.
    var isJobPending: Bool {
        switch state {
        case .idle, .awaitingItems: return false
        case .scheduled, .draining(_, .job): return true
        case .draining(_, .inline(_, let pending)), .suspended(_, let pending): return pending != .none
        case .closed(let remains): return remains.isJobPending
        }
    }

    /// The drain running now, or `.suspended` while an async call runs; `nil` otherwise.
    var runner: Runner? {
        switch state {
        case .idle, .scheduled, .awaitingItems: return nil
        case .draining(_, .job(let thread, _, _)): return .job(thread: thread)
        case .draining(_, .inline(let thread, _)): return .inline(thread: thread)
        case .suspended: return .suspended
        case .closed(let remains): return remains.runner
        }
    }

    /// Whether the mailbox has work left: items, a job with the target, a drain running, or an
    /// async handler that has not finished.
    var isBusy: Bool {
        switch state {
        case .idle(let queue), .awaitingItems(let queue, _): return queue.count > 0
        case .scheduled, .draining, .suspended: return true
        case .closed(let remains): return remains.isJobPending || remains.runner != nil
        }
    }

    /// Whether the mailbox waits only for its target to run the job it was handed.
    var waitsForTarget: Bool { isJobPending && runner == nil }

    // MARK: Appending

    enum AppendAction: Sendable, Equatable {
        /// The mailbox is closed; the item must not be stored.
        case reject
        /// Store the item.
        case store
        /// Store the item, then hand a drain job to the target.
        case storeAndSchedule
    }

    /// An item arrives, in a mailbox without a policy.
    ///
    /// - Parameter hold: The poster's hold token, or 0 for an item a drain may take at once.
    @inline(__always)
    mutating func append(hold: UInt) -> AppendAction {
        let claimed = changeQueue { queue, holds in
            if hold != 0 { holds.append(Hold(token: hold, sequence: queue.appended)) }
            queue.appended += 1
            return true
        }
        guard let claimed else { return .reject }
        return claimed ? .storeAndSchedule : .store
    }

    /// What a mailbox with a policy does with a new item.
    enum PolicyAppendAction: Sendable, Equatable {
        /// The mailbox is closed; the item must not be stored.
        case reject
        /// Store the item, then hand a drain job to the target if `schedule`.
        case store(schedule: Bool)
        /// Move the pending item `index` items from the front out of the storage (a newer one
        /// replaces it: its waiting post now waits for the new item), then store the new item, and
        /// hand a drain job to the target if `schedule`.
        case replace(index: Int, schedule: Bool)
        /// Move the front item out of the storage (the mailbox is full: it is dropped), then store
        /// the new item, and hand a drain job to the target if `schedule`.
        case dropOldest(schedule: Bool)
        /// Store nothing: the mailbox is full and the new item is dropped.
        case dropNew
    }

    /// An item arrives in a mailbox with a policy (``Configuration/rule``).
    ///
    /// - Parameters:
    ///   - hold: The poster's hold token, or 0 for an item a drain may take at once.
    ///   - pendingItemOfSubject: For `.latest(perSubject: true)`: the position from the front of
    ///     the newest pending item that the new one's subject posted, if any. The mailbox looks it
    ///     up in its storage (and notes the subject as the newest of its identity); it is asked
    ///     only when an open mailbox needs it.
    mutating func append(hold: UInt, pendingItemOfSubject: () -> Int?) -> PolicyAppendAction {
        if case .closed = state { return .reject }
        let room = waitingConsumers
        switch configuration.rule {
        case .latest(let perSubject):
            let pending = perSubject ? pendingItemOfSubject() : (count > 0 ? count - 1 : nil)
            // With a consumer waiting for each pending item, the new one waits for nothing either.
            if let index = pending, count >= room {
                return .replace(index: index, schedule: store(hold: hold, removing: index))
            }
        case .dropOldest(let limit) where count >= limit + room:
            // A limit of 0 keeps nothing to push out: what the mailbox holds is a consumer's already.
            return limit > 0 ? .dropOldest(schedule: store(hold: hold, removing: 0)) : .dropNew
        case .dropNewest(let limit) where count >= limit + room:
            return .dropNew
        case nil, .dropOldest, .dropNewest:
            break  // unbounded, or room for the new item
        }
        return .store(schedule: store(hold: hold))
    }

    /// Removes the item `removing` items from the front, if any, then appends the new item.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    private mutating func store(hold: UInt, removing index: Int? = nil) -> Bool {
        if let index { remove(at: index) }
        return append(hold: hold) == .storeAndSchedule
    }

    /// The consumers that would take a new item at once (see "Bounds and waiting consumers"): a
    /// stream's waiting consumers, or a handler's drain while the mailbox is idle and empty.
    private var waitingConsumers: Int {
        switch state {
        case .awaitingItems(_, let consumers): return consumers
        case .idle(let queue) where !configuration.feedsStream && queue.count == 0: return 1
        default: return 0
        }
    }

    /// A post has reached every mailbox: its hold on this mailbox ends.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    mutating func release(hold: UInt) -> Bool {
        changeQueue { _, holds in
            guard let index = holds.firstIndex(where: { $0.token == hold }) else { return false }
            holds.remove(at: index)
            return true
        } == true
    }

    /// Removes an item that is still in the mailbox, `offset` items from its front: a policy
    /// replaced it with a newer one or dropped it. Its hold, if any, goes with it, and the items
    /// behind it move up. It claims no job: the append that comes with every removal does. (A step
    /// of ``append(hold:pendingItemOfSubject:)``.)
    mutating func remove(at offset: Int) {
        precondition(offset >= 0 && offset < count, "Herald: a mailbox removed an item it does not hold")
        changeQueue { queue, holds in
            let position = queue.taken + offset
            if offset == 0 {
                // The front item: as if a drain took it.
                queue.taken += 1
                if holds.first?.sequence == position { holds.removeFirst() }
                return false
            }
            queue.appended -= 1
            if let index = holds.firstIndex(where: { $0.sequence >= position }) {
                if holds[index].sequence == position { holds.remove(at: index) }
                for later in index..<holds.count { holds[later].sequence -= 1 }
            }
            return false
        }
    }

    /// Applies `change` to the queue and holds of an open mailbox, then, if `change` returned
    /// `true` and the mailbox is idle with items ready, claims a job.
    ///
    /// - Returns: Whether a job was claimed (the caller must hand it to the target), or `nil` when
    ///   the mailbox is closed.
    @inline(__always)
    @discardableResult
    private mutating func changeQueue(_ change: (inout Queue, inout [Hold]) -> Bool) -> Bool? {
        switch state {
        case .closed:
            return nil
        case .idle(var queue):
            let mayClaim = change(&queue, &holds)
            if mayClaim && ready(queue) > 0 && !configuration.feedsStream {
                state = .scheduled(queue, .fresh)
                return true
            }
            state = .idle(queue)
        case .awaitingItems(var queue, let consumers):
            // Items a waiting consumer may take: the mailbox hands them (`handToConsumers`).
            let mayClaim = change(&queue, &holds)
            state = .awaitingItems(queue, consumers: consumers)
            return mayClaim && ready(queue) > 0
        case .scheduled(var queue, let pending):
            _ = change(&queue, &holds)
            state = .scheduled(queue, pending)
        case .draining(var queue, let drain):
            _ = change(&queue, &holds)
            state = .draining(queue, drain)
        case .suspended(var queue, let pending):
            _ = change(&queue, &holds)
            state = .suspended(queue, pending: pending)
        }
        return false
    }

    // MARK: Draining

    enum DrainAction: Sendable, Equatable {
        /// Take the given number of items from the front of the mailbox and run them.
        case run(Int)
        /// Give the target back and hand the job to it again.
        case reschedule
        /// Stop.
        case stop
    }

    /// The job handed to the target starts on `thread`.
    ///
    /// - Parameter posterPaused: Whether the job, handed back to the target, saw that nothing
    ///   arrived since it last looked (see ``BurstGauge``): it then does not linger once it has
    ///   emptied the mailbox, as a job for a lone post does not.
    mutating func jobStarted(on thread: UInt, posterPaused: Bool = false) -> DrainAction {
        switch state {
        case .scheduled(let queue, let pending):
            // A job that finds nothing ready ends: it has taken fewer than two batches, so it does not linger.
            let batches = pending == .lingering && !posterPaused ? 1 : 0
            return takeForJob(queue, thread: thread, sliceRemaining: Self.sliceLimit, batches: batches)
        case .draining(_, .inline), .suspended, .closed:
            // An inline drain runs, and takes what comes; or an async call runs; or it closed.
            precondition(isJobPending, "Herald: a mailbox job started that was not scheduled")
            dropPendingJob()
            return .stop
        case .idle, .draining(_, .job), .awaitingItems:
            preconditionFailure("Herald: a mailbox job started that was not scheduled")
        }
    }

    /// The running job takes its next batch, or ends.
    private mutating func takeForJob(
        _ queue: consuming Queue, thread: UInt, sliceRemaining: Int, batches: Int
    ) -> DrainAction {
        let count = min(ready(queue), sliceRemaining, configuration.batchLimit)
        guard count > 0 else {
            if configuration.lingers && batches >= 2 {
                state = .scheduled(queue, .lingering)
                return .reschedule  // the job stays pending; it ends if it then finds nothing
            }
            state = .idle(queue)
            return .stop
        }
        queue.taken += count
        state = .draining(queue, .job(thread: thread, sliceRemaining: sliceRemaining - count, batches: batches + 1))
        return .run(count)
    }

    /// A thread that is on the target wants to drain the mailbox itself.
    ///
    /// - Returns: `.run` with how many items to run, or `.stop` if another drain runs or nothing
    ///   is ready. An inline drain is never rescheduled.
    mutating func inlineStarted(on thread: UInt) -> DrainAction {
        switch state {
        case .idle(let queue):
            return takeInlineBatch(from: queue, on: thread, pending: .none)
        case .scheduled(let queue, let pending):
            return takeInlineBatch(from: queue, on: thread, pending: pending)
        case .draining, .suspended, .awaitingItems, .closed:
            return .stop
        }
    }

    /// Takes the inline drain's next batch from `queue`, or ends the drain when nothing is ready.
    private mutating func takeInlineBatch(
        from queue: consuming Queue, on thread: UInt, pending: PendingJob
    ) -> DrainAction {
        let count = min(ready(queue), configuration.batchLimit)
        guard count > 0 else {
            state = pending == .none ? .idle(queue) : .scheduled(queue, pending)
            return .stop
        }
        queue.taken += count
        state = .draining(queue, .inline(thread: thread, pending: pending))
        return .run(count)
    }

    // MARK: Suspending

    /// The drain that is running started an async handler: the drain ends, and the mailbox waits
    /// for ``resume()``.
    mutating func suspend() {
        switch state {
        case .draining(let queue, .job):
            state = .suspended(queue, pending: .none)
        case .draining(let queue, .inline(_, let pending)):
            state = .suspended(queue, pending: pending)
        case .closed(let remains) where remains.runner != nil && remains.runner != .suspended:
            endClosedDrain(remains, runner: .suspended)
        case .idle, .scheduled, .suspended, .awaitingItems, .closed:
            preconditionFailure("Herald: a mailbox suspended outside a drain")
        }
    }

    /// The drain that runs, a job's or an inline one, ran the batch it took: the one input a
    /// drain gives after each batch. If the batch started an async call (`startedCall`), the
    /// mailbox suspends and the drain ends. Otherwise a job may end its slice, hand itself back
    /// (one batch per job for `.latest`; lingering) or take its next batch; an inline drain takes
    /// every ready item, unsliced.
    mutating func batchRan(startedCall: Bool = false) -> DrainAction {
        if startedCall {
            suspend()
            return .stop
        }
        switch state {
        case .draining(let queue, .job(let thread, let sliceRemaining, let batches)):
            let isReady = ready(queue) > 0
            if isReady && (sliceRemaining == 0 || configuration.oneBatchPerJob) {
                state = .scheduled(queue, .fresh)
                return .reschedule  // behind what the target queued meanwhile
            }
            if isReady && configuration.lingers {
                state = .scheduled(queue, .lingering)
                return .reschedule
            }
            if configuration.oneBatchPerJob {
                state = .idle(queue)
                return .stop
            }
            return takeForJob(queue, thread: thread, sliceRemaining: sliceRemaining, batches: batches)
        case .draining(let queue, .inline(let thread, let pending)):
            return takeInlineBatch(from: queue, on: thread, pending: pending)
        case .closed(let remains) where remains.runner != nil && remains.runner != .suspended:
            endClosedDrain(remains, runner: nil)
            return .stop
        case .idle, .scheduled, .suspended, .awaitingItems, .closed:
            preconditionFailure("Herald: a mailbox batch ended outside its drain")
        }
    }

    /// The drain that ran when the mailbox closed ends, or suspends (`runner` is then
    /// `.suspended`); a job's drain ends its job.
    private mutating func endClosedDrain(_ remains: Remains, runner: Runner?) {
        var remains = remains
        if case .job = remains.runner { remains.isJobPending = false }
        remains.runner = runner
        state = .closed(remains)
    }

    /// The async handler finished.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    mutating func resume() -> Bool {
        switch state {
        case .suspended(let queue, let pending):
            guard pending == .none, ready(queue) > 0 else {
                state = pending == .none ? .idle(queue) : .scheduled(queue, pending)
                return false
            }
            state = .scheduled(queue, .fresh)
            return true
        case .closed(var remains) where remains.runner == .suspended:
            remains.runner = nil
            state = .closed(remains)
            return false
        case .idle, .scheduled, .draining, .awaitingItems, .closed:
            preconditionFailure("Herald: a mailbox resumed that was not suspended")
        }
    }

    // MARK: Stream consumers

    enum ConsumerAction: Sendable, Equatable {
        /// Take the front item.
        case take
        /// Wait: no item is ready. The consumer now counts as waiting, if it may wait.
        case wait
        /// The mailbox is closed: the stream has ended.
        case finished
    }

    /// A stream's consumer asks for an item (see "Streams").
    ///
    /// - Parameter mayWait: Whether the consumer waits when no item is ready; `false` for a first
    ///   look that does not wait yet.
    mutating func consumerArrived(mayWait: Bool) -> ConsumerAction {
        switch state {
        case .idle(var queue), .awaitingItems(var queue, _):
            let waiting = waitingConsumers  // 0 when idle: a stream's mailbox has no drain
            guard ready(queue) > 0 else {
                let consumers = mayWait ? waiting + 1 : waiting
                state = consumers == 0 ? .idle(queue) : .awaitingItems(queue, consumers: consumers)
                return .wait
            }
            queue.taken += 1
            state = waiting == 0 ? .idle(queue) : .awaitingItems(queue, consumers: waiting)
            return .take
        case .closed:
            return .finished
        case .scheduled, .draining, .suspended:
            preconditionFailure("Herald: a consumer took from a mailbox whose drains run")
        }
    }

    /// Items became ready while consumers wait (an append or a release returned
    /// `.storeAndSchedule`).
    ///
    /// - Returns: How many items to hand out from the front, one to each of as many waiting
    ///   consumers, oldest first.
    mutating func handToConsumers() -> Int {
        guard case .awaitingItems(var queue, let consumers) = state else { return 0 }
        let count = min(ready(queue), consumers)
        queue.taken += count
        state = count == consumers ? .idle(queue) : .awaitingItems(queue, consumers: consumers - count)
        return count
    }

    // MARK: Closing

    /// The observation ended, or its target refused the job: nothing more is accepted.
    ///
    /// - Returns: The number of items to drop, all of them in the mailbox.
    mutating func close() -> Int {
        let dropped = count
        state = .closed(Remains(isJobPending: isJobPending, runner: runner))
        holds = []
        return dropped
    }

    /// The job the target refused is no longer pending.
    ///
    /// - Returns: Whether the mailbox holds items, which nothing will ever run now; `false` for a
    ///   lingering job that found the mailbox empty (the next post's job will be refused in turn).
    mutating func jobRefused() -> Bool {
        dropPendingJob()
        return count > 0
    }

    /// The job with the target, if any, is no longer pending: it ended, or it never runs.
    private mutating func dropPendingJob() {
        switch state {
        case .idle, .draining(_, .job), .awaitingItems:
            break
        case .scheduled(let queue, _):
            state = .idle(queue)
        case .draining(let queue, .inline(let thread, _)):
            state = .draining(queue, .inline(thread: thread, pending: .none))
        case .suspended(let queue, _):
            state = .suspended(queue, pending: .none)
        case .closed(var remains):
            remains.isJobPending = false
            state = .closed(remains)
        }
    }
}
