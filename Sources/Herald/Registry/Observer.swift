import Synchronization

/// The parts of a registration that a post reads without knowing the notification type.
///
/// Posts scan snapshots of `AnyObserver` (see ``ObserverSnapshot``) with code that is not generic,
/// so an unspecialised post asks the runtime for no generic metadata. Only the final step, handing
/// the notification to the handler, mailbox or stream, is a call into the generic ``Observer``.
@usableFromInline
class AnyObserver: Cancellable, @unchecked Sendable {  // Immutable but for the atomic state.
    // An observer is the largest block a registration allocates, so its fields are packed: the
    // whole object is 56 bytes, which the allocator serves from its 64-byte size class.
    /// The registry the observer is registered in, which also holds what its deliveries need
    /// from the hub (``Registry/environment``).
    let registry: Registry
    /// The index of the registration site (see ``SourceLocation/site(_:)``) above the `Flags` bits.
    @usableFromInline let siteAndFlags: UInt32
    /// Bit 0: cancelled. Bits 1...31: the observer's index in its bucket's list, plus one; 0 when
    /// it is in none. The index is written only under the registry lock; the flag only by
    /// ``markCancelled()``.
    @usableFromInline let state = Atomic<UInt32>(0)

    /// `Flags` bits.
    @inline(__always)
    final var flags: UInt8 { UInt8(truncatingIfNeeded: siteAndFlags) }

    /// The observer's index in its bucket's list (see ``ObserverList``), or -1 when it is not in
    /// one. Read and written only under the registry lock.
    final var registrySlot: Int {
        get { Int(state.load(ordering: .relaxed) >> 1) - 1 }
        set {
            let encoded = newValue >= 0 && newValue < Int(UInt32.max >> 1) ? UInt32(newValue + 1) << 1 : 0
            var current = state.load(ordering: .relaxed)
            while true {
                let (exchanged, found) = state.compareExchange(
                    expected: current, desired: (current & 1) | encoded, ordering: .relaxed)
                if exchanged { return }
                current = found
            }
        }
    }

    /// Sets ``registrySlot`` to -1, under the registry lock, as its list lets go of the observer.
    /// That is usually when it has been cancelled: the cancelled bit is then set for good, so a
    /// plain store of it alone keeps it, where the setter needs a compare-and-exchange.
    final func leaveRegistrySlot() {
        if state.load(ordering: .relaxed) & 1 != 0 {
            state.store(1, ordering: .relaxed)
        } else {
            registrySlot = -1
        }
    }

    enum Flags {
        static let hasFilters: UInt8 = 1 << 0
        static let hasOwner: UInt8 = 1 << 1
        static let isPosting: UInt8 = 1 << 2
        static let isContextual: UInt8 = 1 << 3
        static let isStream: UInt8 = 1 << 4
        static let isAsync: UInt8 = 1 << 5
        /// The mailbox has a mailbox policy other than unbounded (see ``MailboxPolicy``).
        static let hasPolicy: UInt8 = 1 << 6
        /// A tap's member among a type's observers: what it receives is not counted as
        /// observed, and waiting posts do not wait for it.
        static let isTap: UInt8 = 1 << 7
    }

    init(registry: Registry, location: SourceLocation, flags: UInt8) {
        self.registry = registry
        self.siteAndFlags = location.siteIndex << 8 | UInt32(flags)
    }

    /// An observer registered at the site whose index is `site` (see ``SourceLocation/siteIndex``).
    init(registry: Registry, site: UInt32, flags: UInt8) {
        self.registry = registry
        self.siteAndFlags = site << 8 | UInt32(flags)
    }

    init(registry: Registry, siteAndFlags: UInt32) {
        self.registry = registry
        self.siteAndFlags = siteAndFlags
    }

    // MARK: Order

    /// Where an observer comes among the observers of a post: higher priorities first, then in
    /// registration order (the sequence number its registration got under the registry lock,
    /// kept in its bucket's list: see ``ObserverList``).
    struct SortKey: Comparable {
        let priority: Int
        let sequence: UInt64
        /// The position in its list, for registrations with the same number (0).
        let index: Int

        static func < (lhs: SortKey, rhs: SortKey) -> Bool {
            if lhs.priority != rhs.priority { return lhs.priority > rhs.priority }
            if lhs.sequence != rhs.sequence { return lhs.sequence < rhs.sequence }
            return lhs.index < rhs.index
        }
    }

    /// The priority given at registration; 0 by default.
    var priority: Int { 0 }

    /// For a family observer's member among a type's observers (a ``Member``), the family
    /// observer; otherwise `nil`.
    var familyObserver: AnyObserver? { nil }

    /// For a family observer, its family.
    var family: AnyFamily? { nil }

    /// For a family observer's member (a ``Member``), the family observer's registration number.
    var memberSequence: UInt64 { 0 }

    /// Whether the notification at `payload` can reach this observer's handler: always, but for a
    /// family observer's member (a ``Member``) whose type's membership was decided from another
    /// value (a cast can depend on the value, as one through an `Optional` does).
    func admits(_ payload: UnsafeRawPointer) -> Bool { true }

    /// Whether the registration has a `from:` subject and an `owner:`.
    var filtersInfo: (hasSubject: Bool, hasOwner: Bool) { (false, false) }

    /// Where the observer was registered.
    var location: SourceLocation { SourceLocation.site(siteAndFlags >> 8) }

    override var cancelsWithToken: Bool { flags & Flags.hasOwner == 0 }

    /// Whether the observer runs on the posting thread, inside `post`.
    @inline(__always)
    final var isPosting: Bool { flags & Flags.isPosting != 0 }

    /// Whether the observer feeds a ``NotificationSequence``.
    @inline(__always)
    final var isStream: Bool { flags & Flags.isStream != 0 }

    /// Whether the handler is `async`.
    final var isAsync: Bool { flags & Flags.isAsync != 0 }

    /// Whether this is a posting-thread observer without filters or a contextual handler, whose
    /// registration has not ended: one whose plain handler a post calls without asking more.
    @inlinable @inline(__always)
    final var isPlainPostingAndLive: Bool {
        // `Flags.isPosting` alone among the flags, and the cancelled bit clear.
        UInt8(truncatingIfNeeded: siteAndFlags) == 1 << 2 && state.load(ordering: .acquiring) & 1 == 0
    }

    // MARK: Cancellation

    /// Whether ``cancel()`` has run, without checking the owner or subject.
    var isCancelledFlag: Bool { state.load(ordering: .acquiring) & 1 != 0 }

    override var isCancelled: Bool {
        if isCancelledFlag { return true }
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

    /// Without a mailbox policy, the token keeps nothing of a cancelled observer (see
    /// ``ObservationToken/cancel()``), so the cancellation is claimed under the token's lock: the
    /// cancelled bit is set there, and ``didCancel()`` runs after it.
    override final func claimCancellation() -> TokenClaim {
        guard flags & Flags.hasPolicy == 0 else { return .later }
        return markCancelled() ? .claimed : .alreadyCancelled
    }

    override final func finishClaimedCancellation() {
        didCancel()
    }

    /// Sets the cancelled flag; returns `false` if it was already set.
    final func markCancelled() -> Bool {
        state.bitwiseOr(1, ordering: .acquiringAndReleasing).oldValue & 1 == 0
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
        if isCancelledFlag { return false }
        if flags & Flags.hasFilters == 0 { return true }
        if filtersAreDead {
            cancel()
            return false
        }
        return filtersMatch(subject)
    }

    // MARK: Type-erased delivery

    /// Calls the handler of a posting-thread observer with the notification at `payload`, on the
    /// calling thread.
    ///
    /// - Returns: The failure, if the handler threw; it has been reported to the hub.
    @discardableResult
    func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? { nil }

    /// Calls the handler like ``deliver(_:subjectID:)`` if the observer accepts a post with
    /// `subject`; returns whether it did.
    @usableFromInline
    func deliverIfAccepted(_ payload: UnsafeRawPointer, subject: AnyObject?) -> Bool {
        guard accepts(subject) else { return false }
        deliver(payload, subjectID: subject.map(ObjectIdentifier.init))
        return true
    }

    /// What ``enqueue(_:subjectID:group:hold:)`` did with a notification.
    enum EnqueueOutcome: Equatable {
        /// Nothing: the observation has ended.
        case refused
        /// The notification is in the mailbox or stream.
        case queued
        /// The observer's mailbox policy dropped it at once; its waiting post, if any, has been
        /// told. It reached the observer, but nothing is left to run or wait for.
        case dropped
    }

    /// Appends a copy of the notification at `payload`, posted with `subject`, to the observer's
    /// mailbox or stream, held under `hold` unless it is 0 (see ``MailboxStateMachine``).
    func enqueue(
        _ payload: UnsafeRawPointer, subject: AnyObject?, group: WaitGroup?, hold: UInt
    )
        -> EnqueueOutcome
    {
        .refused
    }

    /// Ends the hold `hold` on the item the same post appended; does nothing if there is none.
    func release(hold: UInt) {}

    /// Where the handler runs.
    var target: DeliveryTarget { .posting }

    /// The thread draining the mailbox right now, or 0.
    var drainerThread: UInt { 0 }

    /// Drains the mailbox on the calling thread, which must be on the target, unless another drain
    /// runs. Never sliced.
    func drainInline() {}

    /// Offers every drain of the mailbox to `waiter` until ``detach(helper:)`` (see ``Mailbox/addHelper(_:)``).
    func attach(helper waiter: Waiter) {}

    /// Ends ``attach(helper:)``.
    func detach(helper waiter: Waiter) {}

    /// What the observer's mailbox still holds or runs, or `nil` when it is idle.
    var pendingDelivery: PendingDelivery? { nil }
}

/// One registration: a handler, and an ``Extras`` record of what else it has (filters, priority,
/// family, and the ``Mailbox`` of an observer whose deliveries a drain runs, which knows the target,
/// or the buffer of the ``NotificationSequence`` it feeds).
@usableFromInline
final class Observer<N: TypedNotification>: AnyObserver, MailboxOwner, @unchecked Sendable {  // Immutable (AnyObserver)
    /// The handler of a plain synchronous posting-thread observer, which the posting-thread loop
    /// calls. Unused otherwise: a contextual posting-thread handler is in ``Extras``, and
    /// the handler of an observer whose deliveries a drain runs is in its mailbox (see
    /// ``HandlerBox``), so that cancelling releases it at once.
    @usableFromInline let handler: @Sendable (N) throws -> Void
    /// Everything else; `nil` for a plain posting-thread observer without filters, priority or family.
    private let extras: Extras?

    init(
        registry: Registry, target: DeliveryTarget, filters: Filters?, site: UInt32, handler: Handler<N>,
        bufferingPolicy: NotificationBufferingPolicy = .unbounded, priority: Int = 0, family: AnyFamily? = nil
    ) {
        var flags: UInt8 = 0
        if filters != nil { flags |= Flags.hasFilters }
        if filters?.hasOwner == true { flags |= Flags.hasOwner }
        switch handler {
        case .plain(let body) where target.isPosting:
            flags |= Flags.isPosting
            self.handler = body
            self.extras =
                filters == nil && priority == 0 && family == nil
                ? nil : Extras(filters: filters, priority: priority, family: family, feed: nil)
        case .contextual(let body) where target.isPosting:
            flags |= Flags.isPosting | Flags.isContextual
            self.handler = { _ in }
            self.extras = Extras(
                filters: filters, priority: priority, family: family, feed: .contextual(HandlerBox(.contextual(body))))
        case .plain, .contextual, .async:
            // A drain runs the deliveries (even on the posting thread, an async handler has a
            // mailbox: it orders the calls), and the mailbox holds the handler.
            if handler.isAsync { flags |= Flags.isAsync }
            if case .contextual = handler { flags |= Flags.isContextual }
            let policy = MailboxPolicy(bufferingPolicy)
            if policy != nil { flags |= Flags.hasPolicy }
            self.handler = { _ in }
            self.extras = Extras(
                filters: filters, priority: priority, family: family,
                mailbox: Mailbox(target: target, handler: handler, policy: policy), feed: nil)
        }
        super.init(registry: registry, site: site, flags: flags)
    }

    /// A plain posting-thread observer without filters, priority or family (the most common
    /// registration, made by ``Registry/addPosting(at:handler:)``), registered at the site whose
    /// index is `site`: what the general initializer would make of it, without its switch.
    init(registry: Registry, site: UInt32, handler: @escaping @Sendable (N) throws -> Void) {
        self.handler = handler
        self.extras = nil
        super.init(registry: registry, site: site, flags: Flags.isPosting)
    }

    /// An observer that feeds `stream`, on the posting thread.
    init(
        registry: Registry, stream: StreamBuffer<N>, filters: Filters?, location: SourceLocation,
        family: AnyFamily? = nil
    ) {
        var flags = Flags.isStream
        if filters != nil { flags |= Flags.hasFilters }
        if stream.mailbox.policy != nil { flags |= Flags.hasPolicy }
        self.handler = { _ in }
        self.extras = Extras(filters: filters, family: family, mailbox: stream.mailbox, feed: .stream(stream))
        super.init(registry: registry, location: location, flags: flags)
    }

    /// Where the handler runs.
    override var target: DeliveryTarget { mailbox?.target ?? .posting }

    override var priority: Int { extras?.priority ?? 0 }
    override var family: AnyFamily? { extras?.family }
    override var filtersInfo: (hasSubject: Bool, hasOwner: Bool) {
        (filters?.hasSubject ?? false, filters?.hasOwner ?? false)
    }
    /// The `from:` subject and `owner:`, if any.
    var filters: Filters? { extras?.filters }
    /// The mailbox of an observer whose deliveries a drain runs.
    var mailbox: Mailbox<N>? { extras?.mailbox }
    /// The buffer of the ``NotificationSequence`` this observer feeds, if it feeds one.
    var stream: StreamBuffer<N>? {
        guard flags & Flags.isStream != 0, case .stream(let stream)? = extras?.feed else { return nil }
        return stream
    }

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
        if family != nil {
            registry.removeFamily(self)
        } else {
            registry.remove(self)
        }
        if let stream { stream.finish() }
        guard let mailbox else { return 0 }
        mailbox.asyncCalls?.cancel()
        var (dropped, handler) = mailbox.close()
        let count = mailbox.drop(&dropped, leaving: outcome)  // outside the mailbox's lock
        withExtendedLifetime(handler) {}  // the handler and its captures go here, outside the lock
        environment.idleWatch.noteProgress()
        return count
    }

    /// The target refused the drain job and will never run work again (for example a
    /// ``DeliveryThread`` that was shut down). The observation ends, and every queued delivery is
    /// dropped: each one is reported to the hub's error handler, and its waiter, if any, is told
    /// it was refused. Later posts find no observer and are counted as unobserved.
    func targetRefused(_ error: any Error) {
        let failure = makeFailure(error)
        guard markCancelled() else {
            environment.report(failure)
            return
        }
        let dropped = end(leaving: .refused(failure))
        for _ in 0..<max(dropped, 1) {
            environment.report(failure)
        }
    }

    /// The posting-thread observers' loop of a fire-and-forget post of `N` (a ``PostingLoop``):
    /// ``NotificationHub/post(_:from:)`` is inlined where it is called, and passes this loop, so
    /// that it is compiled there for `N`. A plain observer's handler is called right here; any
    /// other asks its own observer.
    ///
    /// - Returns: Whether any of `observers` accepted the post.
    @inlinable
    static func deliver(
        to observers: UnsafeBufferPointer<Unmanaged<AnyObserver>>, _ payload: UnsafeRawPointer, subject: AnyObject?
    ) -> Bool {
        var reached = false
        var index = 0
        let count = observers.count
        while index < count {  // a while loop: `for in` over a range costs witness calls here
            let accepted = observers[index]._withUnsafeGuaranteedRef { observer in
                guard observer.isPlainPostingAndLive else {
                    return observer.deliverIfAccepted(payload, subject: subject)
                }
                let typed = unsafeDowncast(observer, to: Observer<N>.self)
                HandlerCall.run(typed.handler, with: payload.assumingMemoryBound(to: N.self), reportingTo: typed)
                return true
            }
            if accepted { reached = true }
            index += 1
        }
        return reached
    }

    /// Calls the handler of this posting-thread observer with the notification at `payload`.
    override func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? {
        let notification = payload.assumingMemoryBound(to: N.self)
        if flags & Flags.isContextual == 0 {
            return HandlerCall.run(handler, with: notification, reportingTo: self)
        } else if case .contextual(let box)? = extras?.feed {
            return box.call(notification, subjectID: subjectID, on: .posting, reportingTo: self)
        }
        return nil
    }

    /// Reports a handler's error to the hub and returns it as a failure. Out of line: the hot
    /// loops that call it stay small.
    @usableFromInline
    @discardableResult
    @inline(never)
    func report(_ error: any Error) -> ObserverFailure {
        let failure = makeFailure(error)
        environment.report(failure)
        return failure
    }

    /// What the observer's deliveries need from the hub.
    var environment: DeliveryEnvironment { registry.environment }

    /// A failure of this observer, with its registration site.
    private func makeFailure(_ error: any Error) -> ObserverFailure {
        let location = self.location
        return ObserverFailure(
            error: error,
            notificationType: Self.typeName,
            fileID: location.fileString,
            line: Int(location.line)
        )
    }

    /// The name of the observed type, for reports: the family's (such as `any AnalyticsEvent`)
    /// for a family observer.
    static var typeName: String {
        (N.self as? any FamilyDeliveryProtocol.Type)?.familyName ?? String(describing: N.self)
    }

    // MARK: The mailbox or stream

    override func enqueue(
        _ payload: UnsafeRawPointer, subject: AnyObject?, group: WaitGroup?, hold: UInt
    )
        -> EnqueueOutcome
    {
        let notification = payload.assumingMemoryBound(to: N.self)
        if flags & Flags.hasPolicy != 0 {
            return enqueueRarely(notification, subject: subject, group: group, hold: hold)
        }
        let subjectID = subject.map(ObjectIdentifier.init)
        // Optional chaining borrows the mailbox: a `guard let` would retain and release it on every
        // post, a write to a reference count that the drain on another thread shares.
        switch extras?.append(notification, subjectID: subjectID, group: group, hold: hold) {
        case nil, .reject:
            return .refused
        case .store:
            return .queued
        case .storeAndSchedule:
            scheduleDrain()
            return .queued
        }
    }

    /// ``enqueue(_:subjectID:group:hold:)`` for a mailbox with a mailbox policy; kept out
    /// of the path of an unbounded mailbox.
    @inline(never)
    private func enqueueRarely(
        _ notification: UnsafePointer<N>, subject: AnyObject?, group: WaitGroup?, hold: UInt
    ) -> EnqueueOutcome {
        guard let mailbox, mailbox.policy != nil else { return .refused }
        let (action, displacement) = mailbox.appendUnderPolicy(notification, subject: subject, group: group, hold: hold)
        switch action {
        case .reject:
            return .refused
        case .store:
            return displacement == .rejectedNew ? .dropped : .queued
        case .storeAndSchedule:
            scheduleDrain()
            return .queued
        }
    }

    override var bufferingPolicy: NotificationBufferingPolicy {
        flags & Flags.hasPolicy == 0 ? .unbounded : mailbox?.policy?.policy ?? .unbounded
    }

    override var discardedCounts: (replaced: Int, dropped: Int) {
        mailbox?.discardedCounts ?? (0, 0)
    }

    override var rememberedSubjectCount: Int {
        mailbox?.policy?.subjects.count ?? 0
    }

    override func release(hold: UInt) {
        if let mailbox, mailbox.release(hold: hold) {
            scheduleDrain()
        }
    }

    /// Puts replayed values into the mailbox or stream of an observer that posts cannot see yet.
    ///
    /// Called under the registry lock, before the observer is added, so the items come before any
    /// live post. It never calls out.
    ///
    /// - Returns: Whether ``scheduleDrain()`` must be called once the registry lock is released,
    ///   and the values a bounded stream dropped, to be released after that lock too.
    func preload(_ replays: [RetainedValues<N>.Replay]) -> (mustSchedule: Bool, dropped: [N]) {
        guard !replays.isEmpty, let mailbox else { return (false, []) }
        return mailbox.append(replaying: replays.map { ($0.value, $0.subjectID) })
    }

    /// Has the mailbox hand a drain job to the target (``Mailbox/scheduleDrain(for:continued:)``).
    func scheduleDrain() {
        mailbox?.scheduleDrain(for: self)
    }

    override func attach(helper waiter: Waiter) {
        mailbox?.addHelper(waiter)
    }

    override func detach(helper waiter: Waiter) {
        mailbox?.removeHelper(waiter)
    }

    /// The thread draining the mailbox right now, or 0.
    override var drainerThread: UInt {
        mailbox?.drainerThread ?? 0
    }

    override func drainInline() {
        mailbox?.drainInline(for: self)
    }

    override var pendingDelivery: PendingDelivery? {
        guard let mailbox, !mailbox.feedsStream else { return nil }  // nobody waits for a stream's consumer
        let state = mailbox.pendingState
        guard state.isBusy else { return nil }
        let location = self.location
        return PendingDelivery(
            notificationType: Self.typeName, fileID: location.fileString, line: Int(location.line),
            target: target, queuedCount: state.count, isHandlerRunning: state.isSuspended,
            waitsForTarget: state.waitsForTarget)
    }

    /// What a registration has besides a plain posting-thread observer's handler: its filters,
    /// priority and family, and where its deliveries go when they do not go to that handler.
    final class Extras: Sendable {
        let filters: Filters?
        /// Among the observers of a post, higher priorities come first.
        let priority: Int
        /// The family the observer receives, for an observer of a protocol, a class hierarchy or
        /// every notification (see ``FamilyOf``).
        let family: AnyFamily?
        /// The mailbox of an observer whose deliveries a drain runs (on an asynchronous target, or an
        /// `async` handler).
        let mailbox: Mailbox<N>?
        /// Where the deliveries of a posting-thread observer go that has neither a plain handler
        /// nor a mailbox.
        let feed: Feed?

        enum Feed: Sendable {
            /// The handler of a contextual posting-thread observer.
            case contextual(HandlerBox<N>)
            /// The buffer of the ``NotificationSequence`` a stream observer feeds.
            case stream(StreamBuffer<N>)
        }

        /// Appends to the mailbox, if there is one. A method, so that the mailbox is borrowed where it
        /// is kept: `extras?.mailbox?.append` would retain and release it on every post, a write to a
        /// reference count that the drain on another thread shares.
        @inline(__always)
        func append(
            _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, hold: UInt
        ) -> MailboxStateMachine.AppendAction? {
            mailbox?.append(notification, subjectID: subjectID, group: group, hold: hold)
        }

        init(filters: Filters?, priority: Int = 0, family: AnyFamily?, mailbox: Mailbox<N>? = nil, feed: Feed?) {
            self.filters = filters
            self.priority = priority
            self.family = family
            self.mailbox = mailbox
            self.feed = feed
        }
    }
}
