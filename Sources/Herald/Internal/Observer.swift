import Synchronization

/// Something an ``ObservationToken`` token ends: a Herald observer, or a closure given by the user.
///
/// A class without stored properties rather than a protocol, so that a token holds one pointer
/// instead of an existential (see the memory target in DESIGN.md).
class Cancellable: @unchecked Sendable {  // No state of its own; subclasses make their own choice.
    /// Ends the registration. Calling it again does nothing.
    func cancel() {}
    /// Whether the registration has ended.
    var isCancelled: Bool { true }
    /// Whether letting go of the last token ends the registration.
    var cancelsWithToken: Bool { true }
}

/// Where a handler was registered, kept as the literal `#fileID` and `#line`.
struct SourceLocation: Sendable, Hashable {
    let fileID: StaticString
    let line: UInt32

    var fileString: String { fileID.description }

    static func == (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        lhs.line == rhs.line && lhs.fileID.utf8Start == rhs.fileID.utf8Start
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(line)
        hasher.combine(UInt(bitPattern: fileID.utf8Start))
    }

    /// Every registration site seen so far, so that an observer stores a 4-byte index instead of
    /// a 24-byte location. The table grows with the number of distinct `observe` call sites in
    /// the program, not with the number of observers.
    private static let sites = Lock<(indices: [SourceLocation: UInt32], locations: [SourceLocation])>(([:], []))

    /// The index of `self` in the table of registration sites.
    var siteIndex: UInt32 {
        Self.sites.withLock { sites in
            if let index = sites.indices[self] { return index }
            let index = UInt32(sites.locations.count)
            sites.locations.append(self)
            sites.indices[self] = index
            return index
        }
    }

    /// The registration site with index `index`.
    static func site(_ index: UInt32) -> SourceLocation {
        sites.withLock { $0.locations[Int(index)] }
    }
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
enum Handler<N: TypedNotification>: Sendable {
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
struct QueuedItem<N: TypedNotification>: Sendable {
    let notification: N
    let subjectID: ObjectIdentifier?
    let group: WaitGroup?
}

/// The serial mailbox of an observer on an asynchronous target, and the rarely used parts of an
/// observer: its target, its filters and a contextual handler.
///
/// Posting-thread observers without filters or a contextual handler have none, which keeps the
/// common observer small. For them the mailbox part stays unused.
///
/// At most one drain runs at a time. A drain takes the whole buffer as one batch, so a burst of
/// posts costs one hop to the target, not one per notification.
final class Lane<N: TypedNotification>: Sendable {
    let target: DeliveryTarget
    let filters: Filters?
    let contextual: (@Sendable (N, DeliveryContext) throws -> Void)?

    init(target: DeliveryTarget, filters: Filters?, contextual: (@Sendable (N, DeliveryContext) throws -> Void)?) {
        self.target = target
        self.filters = filters
        self.contextual = contextual
    }

    let state = Lock(LaneState())
    /// The layout of one queued item of type `N`.
    let layout = ItemQueue.Layout(of: N.self)
    /// Set by a poster that appends while a drain runs, so that a lingering drain sees new items
    /// without taking the lock.
    let hasNews = Atomic<Bool>(false)

    /// Appends a copy of `notification`, unless the lane is closed.
    ///
    /// - Returns: Whether the item was accepted, and whether the caller must schedule a drain.
    @inline(__always)
    func append(_ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?) -> (Bool, Bool) {
        state.withLock { state -> (Bool, Bool) in
            if state.isClosed { return (false, false) }
            append(notification, subjectID: subjectID, group: group, to: &state.items)
            if state.drainer != 0 {
                // Written only when a lingering drain cleared it: no cache-line traffic otherwise.
                if !hasNews.load(ordering: .relaxed) { hasNews.store(true, ordering: .relaxed) }
                return (true, false)
            }
            if state.isScheduled { return (true, false) }
            state.isScheduled = true
            return (true, true)
        }
    }

    /// Copies an item into `items`. Call under the lane's lock.
    @inline(__always)
    func append(
        _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, to items: inout ItemQueue
    ) {
        let layout = self.layout
        let slot = items.appendSlot(layout) { from, to, count in
            if _isBitwiseTakable(N.self) {
                to.copyMemory(from: from, byteCount: count * layout.stride)
                return
            }
            for index in 0..<count {
                let source = from + index * layout.stride
                let destination = to + index * layout.stride
                destination.copyMemory(from: source, byteCount: 16)
                (destination + layout.payloadOffset).assumingMemoryBound(to: N.self).moveInitialize(
                    from: (source + layout.payloadOffset).assumingMemoryBound(to: N.self), count: 1)
            }
        }
        slot.storeBytes(of: subjectID.map { UInt(bitPattern: $0) } ?? 0, as: UInt.self)
        let groupBits = group.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
        slot.storeBytes(of: groupBits, toByteOffset: 8, as: UInt.self)
        (slot + layout.payloadOffset).assumingMemoryBound(to: N.self).initialize(to: notification.pointee)
    }

    /// Releases `items`, taken out of the lane, without running them, telling each waiting post
    /// `outcome`. Call outside the lane's lock.
    func skipAll(_ items: inout ItemQueue, leaving outcome: DeliveryOutcome = .skipped) {
        for index in 0..<items.count {
            let item = items.item(index, layout)
            (item + layout.payloadOffset).assumingMemoryBound(to: N.self).deinitialize(count: 1)
            Self.takeHeader(item).1?.leave(outcome)
        }
        items.deallocate()
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
        // Items left when the last reference goes (a target that never ran the drain job).
        var items = state.withLock { state in
            defer { state.items = ItemQueue() }
            return state.items
        }
        for index in 0..<items.count {
            let item = items.item(index, layout)
            (item + layout.payloadOffset).assumingMemoryBound(to: N.self).deinitialize(count: 1)
            Self.takeHeader(item).1?.leave(.skipped)
        }
        items.deallocate()
    }
}

/// The parts of a registration that a post reads without knowing the notification type.
///
/// Posts scan lists of `AnyObserver` (see ``ObserverList``) with code that is not generic, so an
/// unspecialised post asks the runtime for no generic metadata. Only the final step, handing the
/// notification to the handler, is a call into the generic ``Observer`` subclass.
///
/// The layout is kept to 56 bytes with its subclass (a 64-byte heap block): the hub core, the
/// interned registration site, the cancelled flag and a few flags here; the handler and an
/// optional ``Lane`` (target, filters, mailbox) in ``Observer``.
class AnyObserver: Cancellable, @unchecked Sendable {  // Immutable but for the atomic flag.
    let core: HubCore
    /// The index of the registration site (see ``SourceLocation/site(_:)``).
    private let site: UInt32
    private let cancelled = Atomic<Bool>(false)
    /// `Flags` bits.
    let flags: UInt8

    enum Flags {
        static let hasFilters: UInt8 = 1 << 0
        static let hasOwner: UInt8 = 1 << 1
        static let isPosting: UInt8 = 1 << 2
        static let isContextual: UInt8 = 1 << 3
    }

    init(core: HubCore, location: SourceLocation, flags: UInt8) {
        self.core = core
        self.site = location.siteIndex
        self.flags = flags
    }

    /// Where the observer was registered.
    var location: SourceLocation { SourceLocation.site(site) }

    override var cancelsWithToken: Bool { flags & Flags.hasOwner == 0 }

    // MARK: Cancellation

    /// Whether ``cancel()`` has run, without checking the owner or subject.
    var isCancelledFlag: Bool { cancelled.load(ordering: .acquiring) }

    override var isCancelled: Bool {
        if cancelled.load(ordering: .acquiring) { return true }
        if flags & Flags.hasFilters != 0, filtersAreDead {
            cancel()
            return true
        }
        return false
    }

    /// Ends the registration. Once this returns, the handler is not started again; a call already
    /// running on another thread may finish.
    override func cancel() {
        guard markCancelled() else { return }
        didCancel()
    }

    /// Sets the cancelled flag; returns `false` if it was already set.
    final func markCancelled() -> Bool {
        !cancelled.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Removes the registration from the registry and drops what is queued for it.
    func didCancel() {}

    /// Whether an object the registration depends on has been deallocated.
    var filtersAreDead: Bool { false }

    /// Whether a post with `subject` passes the filters; called only when there are filters.
    func filtersMatch(_ subject: AnyObject?) -> Bool { true }

    /// Whether a post with `subject` should reach this observer right now.
    @inline(__always)
    final func accepts(_ subject: AnyObject?) -> Bool {
        if cancelled.load(ordering: .acquiring) { return false }
        if flags & Flags.hasFilters == 0 { return true }
        if filtersAreDead {
            cancel()
            return false
        }
        return filtersMatch(subject)
    }

    // MARK: Type-erased delivery

    /// Calls the handler with the notification at `payload`, on the calling thread; a failure is
    /// reported to the hub's error handler.
    func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) {}

    /// Calls the handler like ``deliver(_:subjectID:)`` and returns the failure, if any.
    func deliverReporting(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? { nil }

    /// Enqueues a copy of the notification at `payload` on the observer's lane.
    ///
    /// - Returns: `false` if the observation has ended and nothing was enqueued.
    func enqueue(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?, group: WaitGroup?) -> Bool { false }

    /// Where the handler runs.
    var target: DeliveryTarget { .posting }

    /// The thread draining the lane right now, or 0.
    var drainer: UInt { 0 }

    /// Drains the lane on the calling thread, which must be on the target, unless another thread
    /// drains it already.
    func drainInline() {}
}

/// One registration: a handler and, for asynchronous targets, filters or a contextual handler,
/// a ``Lane``.
final class Observer<N: TypedNotification>: AnyObserver, @unchecked Sendable {  // Immutable; see AnyObserver.
    /// The handler; unused when `extras` holds a contextual one.
    private let handler: @Sendable (N) throws -> Void
    /// Target, filters, contextual handler and mailbox; `nil` for a plain posting-thread observer.
    private let extras: Lane<N>?

    init(core: HubCore, target: DeliveryTarget, filters: Filters?, location: SourceLocation, handler: Handler<N>) {
        var flags: UInt8 = 0
        if filters != nil { flags |= Flags.hasFilters }
        if filters?.hasOwner == true { flags |= Flags.hasOwner }
        if target.isPosting { flags |= Flags.isPosting }
        switch handler {
        case .plain(let body):
            self.handler = body
            self.extras =
                target.isPosting && filters == nil ? nil : Lane(target: target, filters: filters, contextual: nil)
        case .contextual(let body):
            flags |= Flags.isContextual
            self.handler = { _ in }
            self.extras = Lane(target: target, filters: filters, contextual: body)
        }
        super.init(core: core, location: location, flags: flags)
    }

    /// Where the handler runs.
    override var target: DeliveryTarget { extras?.target ?? .posting }
    /// The `from:` subject and `owner:`, if any.
    var filters: Filters? { extras?.filters }
    /// The mailbox, for an observer on an asynchronous target.
    var lane: Lane<N>? { flags & Flags.isPosting != 0 ? nil : extras }

    override var filtersAreDead: Bool { extras?.filters?.isDead ?? false }

    override func filtersMatch(_ subject: AnyObject?) -> Bool { extras?.filters?.matches(subject) ?? true }

    override func didCancel() {
        end(leaving: .skipped)
    }

    /// Removes the registration and drops its queued items, telling their waiters `outcome`.
    ///
    /// - Returns: The number of items dropped.
    @discardableResult
    private func end(leaving outcome: DeliveryOutcome) -> Int {
        core.remove(self)
        guard let lane else { return 0 }
        var dropped = lane.state.withLock { state in
            state.isClosed = true
            defer { state.items = ItemQueue() }
            return state.items
        }
        let count = dropped.count
        lane.skipAll(&dropped, leaving: outcome)
        return count
    }

    /// The target refused the drain job and will never run work again (for example a
    /// ``DeliveryThread`` that was shut down). The observation ends, and every queued delivery is
    /// dropped: each one is reported to the hub's error handler, and its waiter, if any, is told
    /// it was refused. Later posts find no observer and are counted as unobserved.
    private func targetRefused(_ error: any Error) {
        let failure = makeFailure(error)
        guard markCancelled() else {
            core.report(failure)
            return
        }
        let dropped = end(leaving: .refused(failure))
        for _ in 0..<max(dropped, 1) {
            core.report(failure)
        }
    }

    override func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) {
        guard flags & Flags.isContextual == 0 else {
            return deliverContextual(payload, subjectID: subjectID)
        }
        do {
            try N._heraldCall(handler, with: payload)
        } catch {
            report(error)
        }
    }

    /// ``deliver(_:subjectID:)`` for a contextual handler; kept out of the plain path.
    @inline(never)
    private func deliverContextual(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) {
        _ = invoke(payload.assumingMemoryBound(to: N.self).pointee, subjectID: subjectID)
    }

    override func enqueue(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?, group: WaitGroup?) -> Bool {
        append(payload.assumingMemoryBound(to: N.self), subjectID: subjectID, group: group)
    }

    override func deliverReporting(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? {
        invoke(payload.assumingMemoryBound(to: N.self).pointee, subjectID: subjectID)
    }

    /// Reports a handler's error to the hub and returns it as a failure.
    @discardableResult
    @inline(never)
    private func report(_ error: any Error) -> ObserverFailure {
        let failure = makeFailure(error)
        core.report(failure)
        return failure
    }

    /// A failure of this observer, with its registration site.
    private func makeFailure(_ error: any Error) -> ObserverFailure {
        let location = self.location
        return ObserverFailure(
            error: error,
            notificationType: String(describing: N.self),
            fileID: location.fileString,
            line: Int(location.line)
        )
    }

    // MARK: Calling the handler

    /// Calls the handler; reports and returns the failure if it throws.
    @inline(__always)
    func invoke(_ notification: N, subjectID: ObjectIdentifier?) -> ObserverFailure? {
        do {
            if let contextual = extras?.contextual {
                try contextual(notification, DeliveryContext(subjectID: subjectID, target: target))
            } else {
                try handler(notification)
            }
            return nil
        } catch {
            return report(error)
        }
    }

    // MARK: The lane

    /// Appends an item to the lane and schedules a drain if none is pending.
    ///
    /// If the target refuses the drain (a ``DeliveryThread`` that was shut down), the observation
    /// ends and nothing is kept: each dropped item is reported, and a waiting post gets the failure
    /// (see ``scheduleDrain()``).
    ///
    /// - Returns: `false` if the observation has ended and the item was not accepted.
    @discardableResult
    func enqueue(_ item: QueuedItem<N>) -> Bool {
        withUnsafePointer(to: item.notification) { append($0, subjectID: item.subjectID, group: item.group) }
    }

    /// Appends a copy of `notification` to the lane and schedules a drain if none is pending.
    ///
    /// - Returns: `false` if the observation has ended and the item was not accepted.
    private func append(_ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?) -> Bool {
        guard flags & Flags.isPosting == 0 else { return false }
        // Called on the field itself, so that the lane is borrowed rather than retained.
        guard let (accepted, mustSchedule) = extras?.append(notification, subjectID: subjectID, group: group) else {
            return false
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
            for item in items {
                withUnsafePointer(to: item.notification) {
                    lane.append($0, subjectID: item.subjectID, group: item.group, to: &state.items)
                }
            }
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
        if let refusal = target.trySchedule({ [self] in drainScheduled() }) {
            targetRefused(refusal)
        }
    }

    /// The thread draining the lane right now, or 0.
    override var drainer: UInt {
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
    override func drainInline() {
        guard let lane else { return }
        let me = currentThreadID()
        let claimed = lane.state.withLock { state -> Bool in
            guard state.drainer == 0 else { return false }
            state.drainer = me
            return true
        }
        if claimed { drainLoop(lane, endsSchedule: false) }
    }

    /// How long a drain job waits for more items once the lane is empty, before it gives the
    /// target back, when items piled up while it ran (a burst is under way). The
    /// poster keeps adding items, so the job keeps going and the burst costs one hop instead of
    /// one per batch; the price is at most this much spinning on the target after a burst. A
    /// single notification (or a `postAndWait` round trip) never lingers.
    static var lingerNanoseconds: UInt64 { 20_000 }

    private func drainLoop(_ lane: Lane<N>, endsSchedule: Bool) {
        let layout = lane.layout
        var batch = ItemQueue()
        var lingerDeadline: UInt64 = 0
        var sawBurst = false
        while true {
            let hasWork = lane.state.withLock { state -> Bool? in
                if state.items.isEmpty {
                    if endsSchedule && !state.isClosed && lingerDeadline == 0 && sawBurst {
                        lane.hasNews.store(false, ordering: .relaxed)
                        return nil  // linger: wait a little for more items before giving up the target
                    }
                    state.drainer = 0
                    if endsSchedule { state.isScheduled = false }
                    if state.items.capacity > Self.idleCapacity {
                        swap(&state.items, &batch)  // both empty: free the burst's buffer below
                    } else if state.items.capacity == 0 && batch.capacity <= Self.idleCapacity {
                        swap(&state.items, &batch)  // both empty: keep a small buffer for the next post
                    }
                    return false
                }
                swap(&state.items, &batch)
                return true
            }
            guard let hasWork else {
                lingerDeadline = monotonicNanoseconds() &+ Self.lingerNanoseconds
                while !lane.hasNews.load(ordering: .relaxed) && monotonicNanoseconds() < lingerDeadline {
                    yieldProcessor()  // lingering must not starve other threads on a busy machine
                }
                continue
            }
            guard hasWork else { break }
            lingerDeadline = 0
            if batch.count > 1 { sawBurst = true }
            // Read once per batch: the lane's first cache line also holds its lock, which the
            // poster writes on every post.
            let isPlain = lane.contextual == nil
            var index = 0
            while index < batch.count {  // a while loop: `for in` over a range costs witness calls here
                run(batch.item(index, layout), isPlain: isPlain, layout)
                index += 1
            }
            let batchCount = batch.count
            // Keep the buffer for the next batch while the job runs: a burst swaps two buffers
            // back and forth instead of mapping fresh pages for each batch.
            batch.removeAllMoved(keepingCapacity: batch.capacity <= Self.burstCapacity)
            if sawBurst && batchCount < Self.gatherCount {
                // The drain keeps up with the poster: let a batch gather before taking the lane's
                // lock again, so that the poster does not find it held on every post.
                let until = monotonicNanoseconds() &+ Self.gatherNanoseconds
                while monotonicNanoseconds() < until { yieldProcessor() }
            }
        }
        batch.deallocate()
    }

    /// A batch smaller than this, during a burst, means the drain outpaces the poster.
    static var gatherCount: Int { 256 }
    /// How long a drain job lets items gather after a small batch during a burst.
    static var gatherNanoseconds: UInt64 { 2_000 }

    /// The most items a buffer may keep room for while a drain job runs.
    static var burstCapacity: Int { 65_536 }
    /// The most items an idle lane keeps room for.
    static var idleCapacity: Int { 64 }

    /// Runs one item and consumes it (its payload is moved out, its group released).
    @inline(__always)
    private func run(_ item: UnsafeMutableRawPointer, isPlain: Bool, _ layout: ItemQueue.Layout) {
        let payload = (item + layout.payloadOffset).assumingMemoryBound(to: N.self)
        let (subjectID, group) = Lane<N>.takeHeader(item)
        if group == nil && isPlain {
            // The common case: the handler reads the notification where it lies in the batch.
            if !isCancelled {
                do { try N._heraldCall(handler, with: payload) } catch { report(error) }
            }
            if !_isPOD(N.self) { payload.deinitialize(count: 1) }
            return
        }
        let notification = payload.move()
        guard !isCancelled else {
            group?.leave(.skipped)
            return
        }
        guard let group else {
            _ = invoke(notification, subjectID: subjectID)
            return
        }
        let failure: ObserverFailure?
        if let waiter = group.waiter {
            failure = Waiter.chain.withValue(waiter) { invoke(notification, subjectID: subjectID) }
        } else {
            failure = invoke(notification, subjectID: subjectID)
        }
        group.leave(failure.map(DeliveryOutcome.failed) ?? .delivered)
    }
}
