import Synchronization

/// A registration as the registry keeps it: what registered (its filters, its family, its
/// priority), where, and the type-erased calls that hand a post to it. What delivering to it
/// needs (whether it is live, its kind, where failures go, its target) is its ``DeliveryRecord``.
///
/// Posts scan snapshots of `AnyObserver` (see ``ObserverSnapshot``) with code that is not generic,
/// so an unspecialised post asks the runtime for no generic metadata. Only the final step, handing
/// the notification to the handler, mailbox or stream, is a call into the generic ``Observer``.
@usableFromInline
class AnyObserver: DeliveryRecord, @unchecked Sendable {  // Immutable but for the atomic state.
    /// An observer registered at the site whose index is `site` (see ``SourceLocation/siteIndex``).
    init(registry: Registry, site: UInt32, flags: UInt8) {
        super.init(host: registry, siteAndFlags: site << 8 | UInt32(flags))
    }

    /// The registry the observer is registered in: the record's host, which is always one.
    final var registry: Registry { unsafeDowncast(host, to: Registry.self) }

    /// The observer's index in its bucket's list (see ``ObserverList``), or -1 when it is not in
    /// one: the record's state above the cancelled and plain bits. Read and written only under
    /// the registry lock.
    @inline(__always) final var registrySlot: Int {
        get { Int(state.load(ordering: .relaxed) >> StateBits.slotShift) - 1 }
        set {
            let shift = StateBits.slotShift
            let encoded = newValue >= 0 && newValue < Int(UInt32.max >> shift) ? UInt32(newValue + 1) << shift : 0
            // Only the registry, under its lock, writes the slot's bits: flipping those that differ
            // changes them alone, in one atomic operation that keeps a cancelled bit set meanwhile.
            let current = (state.load(ordering: .relaxed) >> shift) << shift
            state.bitwiseXor(current ^ encoded, ordering: .relaxed)
        }
    }

    /// Sets ``registrySlot`` to -1, under the registry lock, as its list lets go of the observer.
    /// That is usually when it has been cancelled: the cancelled bit is then set for good, so a
    /// plain store of the bits below the slot keeps them, where the setter needs an atomic
    /// exclusive-or.
    final func leaveRegistrySlot() {
        let bits = state.load(ordering: .relaxed) & (StateBits.cancelled | StateBits.plain)
        if bits & StateBits.cancelled != 0 {
            state.store(bits, ordering: .relaxed)
        } else {
            registrySlot = -1
        }
    }

    // MARK: Order (`SortKey` in Bucket.swift sorts by these)

    /// The priority given at registration; 0 by default.
    var priority: Int { 0 }

    /// For a family observer's member among a type's observers (a ``Member``), the family
    /// observer; otherwise `nil`.
    var familyObserver: AnyObserver? { nil }

    /// For a family observer, its family.
    var family: AnyFamily? { nil }

    /// The registration this observer stands for among its type's observers: itself; for the
    /// member of a family of that one type (``AnyFamily/isOneType``), its family observer; for
    /// the member of another family observer, `nil` (the family observer is listed on its own).
    final var registrationOfItsType: AnyObserver? {
        guard let familyObserver else { return self }
        return familyObserver.family?.isOneType == true ? familyObserver : nil
    }

    /// For a family observer's member (a ``Member``), the family observer's registration number.
    var memberSequence: UInt64 { 0 }

    // MARK: Filters

    /// Whether the notification at `payload` can reach this observer's handler: always, but for a
    /// family observer's member (a ``Member``) whose type's membership was decided from another
    /// value (a cast can depend on the value, as one through an `Optional` does).
    func admits(_ payload: UnsafeRawPointer) -> Bool { true }

    /// The `from:` subject and `owner:`, if any (a family observer's member has its family
    /// observer's).
    var filters: Filters? { nil }

    /// Whether an object the registration depends on has been deallocated.
    var filtersAreDead: Bool { false }

    /// Whether a post with `subject` should reach this observer right now.
    @inline(__always)
    final func accepts(_ subject: AnyObject?) -> Bool {
        if isCancelledFlag { return false }
        if flags & Flags.hasFilters == 0 { return true }
        if filtersAreDead {
            cancel()
            return false
        }
        return filters?.matches(subject) ?? true
    }

    // MARK: Cancellation

    override var isCancelled: Bool {
        if isCancelledFlag { return true }
        if flags & Flags.hasFilters != 0, filtersAreDead {
            cancel()
            return true
        }
        return false
    }

    /// Ends the registration. Once this returns, the handler is not started again; a call already
    /// running on another thread may finish. (Here, not in the delivery record: the rest of the
    /// cancellation is the registry's.)
    override func cancel() {
        guard markCancelled() else { return }
        finishClaimedCancellation()
    }

    // MARK: Delivery

    /// Calls the handler like ``deliver(_:subjectID:)`` if the observer accepts a post with
    /// `subject`; returns whether it did.
    override func deliverIfAccepted(_ payload: UnsafeRawPointer, subject: AnyObject?) -> Bool {
        guard accepts(subject) else { return false }
        deliver(payload, subjectID: subject.map(ObjectIdentifier.init))
        return true
    }
}

/// One registration: a handler, and an ``Extras`` record of what else it has (filters, priority,
/// family, and the ``Mailbox`` of an observer whose deliveries a drain runs, which knows the target,
/// or the buffer of the ``NotificationSequence`` it feeds).
@usableFromInline
final class Observer<N: TypedNotification>: AnyObserver, @unchecked Sendable {  // Immutable (AnyObserver)
    /// The handler of a synchronous posting-thread observer (see ``TypedDeliveryRecord/handler``).
    /// Unused otherwise: the handler of an observer whose deliveries a drain runs is in its
    /// mailbox (see ``HandlerBox``), so that cancelling releases it at once.
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
        var mailbox: Mailbox<N>?
        switch handler {
        case .plain(let body) where target.isPosting:
            flags |= Flags.isPosting
            self.handler = body
        case .plain, .async:
            // A drain runs the deliveries (even on the posting thread, an async handler has a
            // mailbox: it orders the calls), and the mailbox holds the handler.
            if handler.isAsync { flags |= Flags.isAsync }
            let policy = MailboxPolicy(bufferingPolicy)
            if policy != nil { flags |= Flags.hasPolicy }
            self.handler = { _ in }
            mailbox = Mailbox(target: target, handler: handler, policy: policy)
        }
        let isPlain = filters == nil && priority == 0 && family == nil && mailbox == nil
        self.extras =
            isPlain ? nil : Extras(filters: filters, priority: priority, family: family, mailbox: mailbox, stream: nil)
        super.init(registry: registry, site: site, flags: flags)
    }

    /// A plain posting-thread observer without filters, priority or family (the most common
    /// registration, made by ``Registry/addPosting(at:handler:)``), registered at the site whose
    /// index is `site`: what the general initializer would make of it, without its switch.
    ///
    /// It keeps the registry and the handler it is given, so it takes them owned: turned into a
    /// borrowing call by the optimizer, each observe would retain and release both around it.
    @_semantics("optimize.sil.specialize.owned2guarantee.never")
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
        self.extras = Extras(filters: filters, family: family, mailbox: stream.mailbox, stream: stream)
        super.init(registry: registry, site: location.siteIndex, flags: flags)
    }

    override var anyMailbox: AnyMailbox? { extras?.mailbox }

    override var priority: Int { extras?.priority ?? 0 }
    override var family: AnyFamily? { extras?.family }
    override var filters: Filters? { extras?.filters }
    override var filtersAreDead: Bool { extras?.filters?.isDead ?? false }
    /// The mailbox of an observer whose deliveries a drain runs.
    @usableFromInline var mailbox: Mailbox<N>? { extras?.mailbox }

    /// Removes the registration from the registry and drops what is queued for it, once the
    /// cancelled bit is set.
    override func finishClaimedCancellation() {
        end(leaving: .skipped)
    }

    /// Removes the registration and drops its queued items, telling their waiters `outcome`.
    ///
    /// - Returns: The number of items dropped.
    @discardableResult
    private func end(leaving outcome: DeliveryOutcome) -> Int {
        // A handler of this registration may be running (one that cancels its own observation, or
        // an `async` call that is suspended): the hub is not idle until it returns.
        if let mailbox, !mailbox.feedsStream, mailbox.isRunning {
            environment.idleWatch.endingRegistrations(adding: self)
        }
        // The registry is borrowed: the observer holds it for the whole call.
        Unmanaged.passUnretained(registry)._withUnsafeGuaranteedRef { $0.remove(self) }
        extras?.stream?.finish()
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
    @usableFromInline func targetRefused(_ error: any Error) {
        let failure = self.failure(error)
        let dropped = markCancelled() ? end(leaving: .refused(failure)) : 0
        for _ in 0..<max(dropped, 1) {
            environment.report(failure)
        }
    }

    /// Calls the handler of this posting-thread observer with the notification at `payload`.
    override func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? {
        HandlerCall.run(handler, with: payload.assumingMemoryBound(to: N.self).pointee, reportingTo: self)
    }

    /// The name of the observed type, for reports: the family's (such as `any AnalyticsEvent`)
    /// for a family observer.
    override var notificationTypeName: String { family?.name ?? String(describing: N.self) }

    // MARK: The mailbox or stream

    override func enqueue(
        _ payload: UnsafeRawPointer, subject: AnyObject?, group: WaitGroup?, hold: UInt
    ) -> EnqueueOutcome {
        let notification = payload.assumingMemoryBound(to: N.self)
        if flags & Flags.hasPolicy != 0 {
            return mailbox?.enqueueUnderPolicy(notification, subject: subject, group: group, hold: hold, for: self)
                ?? .refused
        }
        // Through `Extras`, which borrows the mailbox: a `guard let` would retain and release it on
        // every post, a write to a reference count that the drain on another thread shares.
        return extras?.enqueue(
            notification, subjectID: subject.map(ObjectIdentifier.init), group: group, hold: hold, for: self)
            ?? .refused
    }

    override func release(hold: UInt) { mailbox?.release(hold: hold, for: self) }

    /// Puts replayed values into the mailbox or stream of an observer that posts cannot see yet.
    ///
    /// Called under the registry lock, before the observer is added, so the items come before any
    /// live post. It never calls out.
    ///
    /// - Returns: Whether ``Mailbox/scheduleDrain(for:continued:)`` must be called once the registry lock is released,
    ///   and the values a bounded stream dropped, to be released after that lock too.
    func preload(_ replays: [RetainedValues.Replay<N>]) -> (mustSchedule: Bool, dropped: [N]) {
        guard !replays.isEmpty, let mailbox else { return (false, []) }
        return mailbox.append(replaying: replays.map { ($0.value, $0.subjectID) })
    }

    override func drainInline() { mailbox?.drainInline(for: self) }

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
        /// The buffer of the ``NotificationSequence`` a stream observer feeds.
        let stream: StreamBuffer<N>?

        /// Enqueues in the mailbox, if there is one. A method, so that the mailbox is borrowed where
        /// it is kept: `extras?.mailbox?.enqueue` would retain and release it on every post, a write
        /// to a reference count that the drain on another thread shares.
        @inline(__always)
        func enqueue(
            _ notification: UnsafePointer<N>, subjectID: ObjectIdentifier?, group: WaitGroup?, hold: UInt,
            for observer: Observer<N>
        ) -> EnqueueOutcome? {
            mailbox?.enqueue(notification, subjectID: subjectID, group: group, hold: hold, for: observer)
        }

        init(filters: Filters?, priority: Int = 0, family: AnyFamily?, mailbox: Mailbox<N>?, stream: StreamBuffer<N>?) {
            self.filters = filters
            self.priority = priority
            self.family = family
            self.mailbox = mailbox
            self.stream = stream
        }
    }
}

extension Observer: TypedDeliveryRecord {}
