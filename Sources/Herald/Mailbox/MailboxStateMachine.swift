/// The decisions of one ``Mailbox``: which items a drain may take, and when a drain job must be
/// handed to the target. It holds counts, never items, and has no effects: ``Mailbox`` stores the
/// items and acts on what each transition returns, after unlocking.
///
/// ## Items
/// Items are numbered in the order they are appended. A post that reaches several mailboxes appends
/// its item to each of them *held*, under a hold token of its own, and releases the holds once
/// every mailbox has the item. A drain takes only the items before the first held one, so no handler
/// can react to a post before the post has reached every mailbox: an effect posted by that handler is
/// appended behind the cause in every mailbox.
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
/// of taking them (``lingers``): a drain that keeps up with a poster would otherwise take one or two
/// items at a time, and the two threads would pass the mailbox's lock back and forth at every post.
/// A job that empties the mailbox while a poster is at work also goes back to the target once more
/// instead of ending. A poster is at work when items arrived while the job ran (it took a second
/// batch), or when a lingering job found items. A burst is then drained by a chain of jobs that
/// the target hands itself, instead of one job per gap, each woken by the poster. A job that
/// starts and finds nothing ends, so an idle mailbox costs one empty job, never a spin; and a job for
/// a lone post (one batch) ends at once, so lone posts keep their drains in the order of the
/// posts' scans. Before a job that the target runs again takes the mailbox's lock, ``BurstGauge``
/// may send it back once more while the poster is still adding items.
///
/// ## Mailbox policies
/// A mailbox with a ``NotificationBufferingPolicy`` other than `unbounded` removes items that are
/// still in it (``remove(at:)``) before it appends a new one: the item a newer one replaces, or
/// the oldest when the mailbox is full. Items a drain has taken are never removed. A `.latest`
/// mailbox takes one batch per job (``oneBatchPerJob``): what was pending when the job started.
///
/// ## Asynchronous handlers
/// A mailbox whose handler is `async` takes one item per batch (``batchLimit`` 1). When the drain
/// has started the handler's task it *suspends* the mailbox (``suspend()``): the drain ends and gives
/// the target back, and no other drain starts until the task finishes and ``resume()`` is called.
/// So one observer's async calls never overlap and run in the order of its items, while its
/// target runs other work during the suspension.
struct MailboxStateMachine: Sendable {
    /// The most items a drain job runs before it gives its target back.
    static let sliceLimit = 128

    /// A post's hold on one item.
    private struct Hold: Sendable {
        let token: UInt
        var sequence: Int
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

    /// Items appended so far.
    private(set) var appendedCount = 0
    /// Items taken out so far, by drains or by ``close()``.
    private(set) var takenCount = 0
    /// The items still held, oldest first.
    private var holds: [Hold] = []
    /// Whether a drain job has been handed to the target and has not finished.
    private(set) var isJobPending = false
    /// The drain running now, if any.
    private(set) var runner: Runner?
    /// Items the running job may still take in its slice.
    private var sliceRemaining = 0
    /// Whether the mailbox has been closed: it accepts nothing more.
    private(set) var isClosed = false
    /// The most items one batch takes: 1 for an async handler, which suspends the mailbox after each.
    var batchLimit = Int.max
    /// Whether a job that finds the mailbox empty while a poster is at work is handed to the target
    /// once more (see "Lingering").
    var lingers = false
    /// Whether a job runs only the items that were ready when it started: what arrives during
    /// its batch waits for the next job, so other work on the target runs in between. Set for a
    /// `.latest` mailbox, which then runs at most one call per pending value (per subject) in one
    /// job, rather than following the posting rate for a whole slice.
    var oneBatchPerJob = false
    /// The batches the running job has taken; a lingering job starts at 1.
    private var jobBatches = 0
    /// Whether the pending job is a lingering one.
    private var jobIsLingering = false

    /// Whether the mailbox has work left: items, a job with the target, a drain running, or an async
    /// handler that has not finished.
    var isBusy: Bool { count > 0 || isJobPending || runner != nil }

    /// Whether the mailbox waits only for its target to run the job it was handed.
    var waitsForTarget: Bool { isJobPending && runner == nil }

    /// Items in the mailbox, held or not.
    var count: Int { appendedCount - takenCount }

    /// Items a drain may take now: those before the first held one.
    var readyCount: Int { (holds.first?.sequence ?? appendedCount) - takenCount }

    /// Items still held.
    var heldCount: Int { holds.count }

    // MARK: Appending

    enum AppendAction: Equatable {
        /// The mailbox is closed; the item must not be stored.
        case reject
        /// Store the item.
        case store
        /// Store the item, then hand a drain job to the target.
        case storeAndSchedule
    }

    /// An item arrives.
    ///
    /// - Parameter hold: The poster's hold token, or 0 for an item a drain may take at once.
    mutating func append(hold: UInt) -> AppendAction {
        if isClosed { return .reject }
        if hold != 0 {
            holds.append(Hold(token: hold, sequence: appendedCount))
        }
        appendedCount += 1
        return claimJob() ? .storeAndSchedule : .store
    }

    /// A post has reached every mailbox: its hold on this mailbox ends.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    mutating func release(hold: UInt) -> Bool {
        guard let index = holds.firstIndex(where: { $0.token == hold }) else { return false }
        holds.remove(at: index)
        return claimJob()
    }

    /// A mailbox policy removes an item that is still in the mailbox, `offset` items from its front:
    /// it was replaced by a newer one or dropped. Its hold, if any, goes with it, and the items
    /// behind it move up.
    mutating func remove(at offset: Int) {
        precondition(offset >= 0 && offset < count, "Herald: a mailbox removed an item it does not hold")
        let position = takenCount + offset
        if offset == 0 {
            // The front item: as if a drain took it.
            takenCount += 1
            if holds.first?.sequence == position { holds.removeFirst() }
            return
        }
        appendedCount -= 1
        if let index = holds.firstIndex(where: { $0.sequence >= position }) {
            if holds[index].sequence == position {
                holds.remove(at: index)
            }
            for later in index..<holds.count {
                holds[later].sequence -= 1
            }
        }
    }

    /// Marks a job as pending when one is needed and none is pending or running.
    private mutating func claimJob() -> Bool {
        guard !isClosed, !isJobPending, runner == nil, readyCount > 0 else { return false }
        isJobPending = true
        return true
    }

    // MARK: Draining

    enum DrainAction: Equatable {
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
        precondition(isJobPending, "Herald: a mailbox job started that was not scheduled")
        let isLingering = jobIsLingering
        jobIsLingering = false
        guard runner == nil, !isClosed, readyCount > 0 else {
            // An inline drain runs (and takes what comes), or there is nothing to run.
            isJobPending = false
            return .stop
        }
        runner = .job(thread: thread)
        sliceRemaining = Self.sliceLimit
        jobBatches = isLingering && !posterPaused ? 1 : 0
        return takeForJob()
    }

    /// The job ran the items it took.
    mutating func jobRanBatch() -> DrainAction {
        precondition(runner?.isJob == true, "Herald: a mailbox batch ended outside its job")
        if sliceRemaining == 0 && !isClosed && readyCount > 0 {
            runner = nil
            return .reschedule  // still pending
        }
        return takeForJob(afterBatch: true)
    }

    /// - Parameter afterBatch: Whether the job has just run a batch; a lingering job then hands
    ///   itself back rather than take more (see "Lingering").
    private mutating func takeForJob(afterBatch: Bool = false) -> DrainAction {
        if afterBatch && oneBatchPerJob {
            runner = nil
            guard !isClosed, readyCount > 0 else {
                isJobPending = false
                return .stop
            }
            return .reschedule  // still pending, behind what the target queued meanwhile
        }
        if afterBatch && lingers && !isClosed && readyCount > 0 {
            runner = nil
            jobIsLingering = true
            return .reschedule
        }
        let count = min(readyCount, sliceRemaining, batchLimit)
        guard !isClosed, count > 0 else {
            runner = nil
            if lingers && !isClosed && jobBatches >= 2 {
                jobIsLingering = true
                return .reschedule  // the job stays pending; it ends if it then finds nothing
            }
            isJobPending = false
            return .stop
        }
        jobBatches += 1
        sliceRemaining -= count
        takenCount += count
        return .run(count)
    }

    /// A thread that is on the target wants to drain the mailbox itself.
    ///
    /// - Returns: How many items to run, or `nil` if another drain runs or nothing is ready.
    mutating func inlineStarted(on thread: UInt) -> Int? {
        guard runner == nil, !isClosed, readyCount > 0 else { return nil }
        runner = .inline(thread: thread)
        let count = min(readyCount, batchLimit)
        takenCount += count
        return count
    }

    /// The inline drain ran the items it took.
    ///
    /// - Returns: How many more items to run, or `nil` when the drain ends.
    mutating func inlineRanBatch() -> Int? {
        precondition(runner?.isInline == true, "Herald: an inline batch ended outside its drain")
        let count = min(readyCount, batchLimit)
        guard !isClosed, count > 0 else {
            runner = nil
            return nil
        }
        takenCount += count
        return count
    }

    // MARK: Suspending

    /// The drain that is running started an async handler: the drain ends, and the mailbox waits
    /// for ``resume()``.
    mutating func suspend() {
        precondition(runner != nil && runner != .suspended, "Herald: a mailbox suspended outside a drain")
        if runner?.isJob == true { isJobPending = false }
        runner = .suspended
    }

    /// The async handler finished.
    ///
    /// - Returns: Whether the caller must hand a drain job to the target.
    mutating func resume() -> Bool {
        precondition(runner == .suspended, "Herald: a mailbox resumed that was not suspended")
        runner = nil
        return claimJob()
    }

    // MARK: Closing

    /// The observation ended, or its target refused the job: nothing more is accepted.
    ///
    /// - Returns: The number of items to drop, all of them in the mailbox.
    mutating func close() -> Int {
        let dropped = count
        isClosed = true
        takenCount = appendedCount
        holds.removeAll()
        return dropped
    }

    /// A job the target refused is no longer pending.
    mutating func jobRefused() {
        isJobPending = false
        jobIsLingering = false
    }
}

extension MailboxStateMachine.Runner {
    fileprivate var isJob: Bool {
        if case .job = self { return true }
        return false
    }

    fileprivate var isInline: Bool {
        if case .inline = self { return true }
        return false
    }
}
