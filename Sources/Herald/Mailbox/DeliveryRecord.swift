import Synchronization

/// The delivery record of one registration: all that the posting-thread loop and the drains ask
/// of it.
///
/// - Whether it is live: the cancelled bit, set once by ``markCancelled()``.
/// - How it is delivered: its ``Flags`` (on the posting thread or by a drain, sync or `async`,
///   to a stream, with a mailbox policy, as a tap).
/// - Where its handler's failures go: ``report(_:)`` gives them, with the registration site, to
///   the hub's error handler (``environment``).
/// - Where its deliveries run: its mailbox's target (``anyMailbox``), or the posting thread.
/// - How a post reaches it: ``deliver(_:subjectID:)`` on the posting thread, or
///   ``enqueue(_:subject:group:hold:)`` into its mailbox or stream, type-erased; the generic
///   observer implements them.
///
/// The handler is declared by its typed face, ``TypedDeliveryRecord``, whose posting-thread loop
/// and mailbox read it.
///
/// It names neither the observer nor the registry. The registry's observer (`AnyObserver`) is its
/// subclass and adds what registered, where, and with which filters; the record knows the
/// registry only as the ``DeliveryHost`` that gives it its environment. One object rather than two,
/// so that a registration stays one allocation of 56 bytes (the allocator's 64-byte class), and a
/// post reads the cancelled bit and the handler from the same cache line.
@usableFromInline
class DeliveryRecord: Cancellable, @unchecked Sendable {  // Immutable but for the atomic state.
    /// What the registration is registered in: it gives the deliveries their environment.
    let host: DeliveryHost
    /// The index of the registration site (see ``SourceLocation/site(_:)``) above the `Flags` bits.
    @usableFromInline let siteAndFlags: UInt32
    /// The bits that change, in one word so that the record stays in its size class (see
    /// ``StateBits``).
    @usableFromInline let state: Atomic<UInt32>

    /// The layout of ``state``.
    @usableFromInline
    enum StateBits {
        /// Set only by ``markCancelled()``.
        @usableFromInline static let cancelled: UInt32 = 1 << 0
        /// A plain posting-thread record (`Flags.isPosting` alone), set at `init`, so that the
        /// posting loop's test of a record is one load.
        @usableFromInline static let plain: UInt32 = 1 << 1
        /// The bits above belong to the registry: the registration's index in its bucket's list
        /// (see `AnyObserver.registrySlot`).
        static let slotShift = 2
    }

    enum Flags {
        static let hasFilters: UInt8 = 1 << 0
        static let hasOwner: UInt8 = 1 << 1
        static let isPosting: UInt8 = 1 << 2
        static let isStream: UInt8 = 1 << 3
        static let isAsync: UInt8 = 1 << 4
        /// The mailbox has a mailbox policy other than unbounded (see ``MailboxPolicy``).
        static let hasPolicy: UInt8 = 1 << 5
        /// A tap's member among a type's observers: what it receives is not counted as
        /// observed, and waiting posts do not wait for it.
        static let isTap: UInt8 = 1 << 6
    }

    init(host: DeliveryHost, siteAndFlags: UInt32) {
        self.host = host
        self.siteAndFlags = siteAndFlags
        state = Atomic(UInt8(truncatingIfNeeded: siteAndFlags) == Flags.isPosting ? StateBits.plain : 0)
    }

    // MARK: How it is delivered

    /// `Flags` bits.
    @inline(__always)
    final var flags: UInt8 { UInt8(truncatingIfNeeded: siteAndFlags) }

    /// Whether the handler runs on the posting thread, inside `post`.
    @inline(__always)
    final var isPosting: Bool { flags & Flags.isPosting != 0 }

    /// Whether the deliveries feed a ``NotificationSequence``.
    @inline(__always)
    final var isStream: Bool { flags & Flags.isStream != 0 }

    /// Whether the handler is `async`.
    final var isAsync: Bool { flags & Flags.isAsync != 0 }

    /// Whether this is a posting-thread observer without filters, whose registration has not
    /// ended: one whose plain handler a post calls without asking more.
    @inlinable @inline(__always)
    final var isPlainPostingAndLive: Bool {
        state.load(ordering: .acquiring) & (StateBits.plain | StateBits.cancelled) == StateBits.plain
    }

    // MARK: Whether it is live

    /// Whether the cancelled bit is set, without asking the registration's filters.
    final var isCancelledFlag: Bool { state.load(ordering: .acquiring) & StateBits.cancelled != 0 }

    /// Whether the registration is live: the answer of `isCancelled`, without its dynamic call
    /// (which retains and releases the record) for a registration without filters, whose
    /// cancelled bit is the whole answer. A drain asks before each item.
    @inline(__always)
    final var isLive: Bool {
        if isCancelledFlag { return false }
        return flags & Flags.hasFilters == 0 || !isCancelled
    }

    /// Sets the cancelled bit; returns `false` if it was already set.
    final func markCancelled() -> Bool {
        state.bitwiseOr(StateBits.cancelled, ordering: .acquiringAndReleasing).oldValue & StateBits.cancelled == 0
    }

    // MARK: Cancellation

    override var cancelsWithToken: Bool { flags & Flags.hasOwner == 0 }

    /// Without a mailbox policy, the token keeps nothing of a cancelled registration (see
    /// ``ObservationToken/cancel()``), so the cancellation is claimed under the token's lock: the
    /// cancelled bit is set there, and ``finishClaimedCancellation()`` runs after it.
    override final func claimCancellation() -> TokenClaim {
        guard flags & Flags.hasPolicy == 0 else { return .later }
        return markCancelled() ? .claimed : .alreadyCancelled
    }

    // MARK: Handing a post to it (type-erased; the generic observer implements them)

    /// Calls the handler of a posting-thread registration with the notification at `payload`, on
    /// the calling thread.
    ///
    /// - Returns: The failure, if the handler threw; it has been reported to the hub.
    @discardableResult
    func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? { nil }

    /// Calls the handler like ``deliver(_:subjectID:)`` if the registration accepts a post with
    /// `subject` (it is live, and its filters pass); returns whether it did.
    @usableFromInline
    func deliverIfAccepted(_ payload: UnsafeRawPointer, subject: AnyObject?) -> Bool { false }

    /// What ``enqueue(_:subject:group:hold:)`` did with a notification.
    enum EnqueueOutcome: Equatable {
        /// Nothing: the observation has ended.
        case refused
        /// The notification is in the mailbox or stream.
        case queued
        /// The mailbox policy dropped it at once; its waiting post, if any, has been told. It
        /// reached the registration, but nothing is left to run or wait for.
        case dropped
    }

    /// Appends a copy of the notification at `payload`, posted with `subject`, to the mailbox or
    /// stream, held under `hold` unless it is 0 (see ``MailboxStateMachine``).
    func enqueue(_ payload: UnsafeRawPointer, subject: AnyObject?, group: WaitGroup?, hold: UInt) -> EnqueueOutcome {
        .refused
    }

    /// Ends the hold `hold` on the item the same post appended; does nothing if there is none.
    func release(hold: UInt) {}

    /// Drains the mailbox on the calling thread, which must be on the target, unless another drain
    /// runs. Never sliced.
    func drainInline() {}

    // MARK: Where it runs

    /// The mailbox of a registration whose deliveries a drain runs, or of a stream observer (a
    /// family observer's member has its family observer's). Waiting posts and diagnostics ask it
    /// directly: its target, its drainer, its helpers.
    var anyMailbox: AnyMailbox? { nil }

    /// Where the handler runs.
    final var target: DeliveryTarget { anyMailbox?.target ?? .posting }

    /// What the mailbox still holds or runs, or `nil` when it is idle (or feeds a stream: nobody
    /// waits for a stream's consumer).
    final var pendingDelivery: PendingDelivery? {
        guard let mailbox = anyMailbox, !mailbox.feedsStream else { return nil }
        let state = mailbox.pendingState
        guard state.isBusy else { return nil }
        let location = self.location
        return PendingDelivery(
            notificationType: notificationTypeName, fileID: location.fileString, line: Int(location.line),
            target: mailbox.target, queuedCount: state.count, isHandlerRunning: state.isSuspended,
            waitsForTarget: state.waitsForTarget)
    }

    // MARK: The mailbox policy, for the token

    override var bufferingPolicy: NotificationBufferingPolicy {
        flags & Flags.hasPolicy == 0 ? .unbounded : anyMailbox?.policy?.policy ?? .unbounded
    }

    override var discardedCounts: (replaced: Int, dropped: Int) {
        anyMailbox?.discardedCounts ?? (0, 0)
    }

    override var rememberedSubjectCount: Int {
        anyMailbox?.policy?.subjects.count ?? 0
    }

    // MARK: Where failures go

    /// What the deliveries need from the hub: its error handler, its idle watch, its main queue.
    final var environment: DeliveryEnvironment { host.environment }

    /// Where the registration was made.
    final var location: SourceLocation { SourceLocation.site(siteAndFlags >> 8) }

    /// The name of the observed type, for reports.
    var notificationTypeName: String { "" }

    /// Reports a handler's error to the hub and returns it as a failure. Out of line: the hot
    /// loops that call it stay small.
    @usableFromInline
    @discardableResult
    @inline(never)
    final func report(_ error: any Error) -> ObserverFailure {
        let failure = self.failure(error)
        environment.report(failure)
        return failure
    }

    /// A failure of this registration's handler, with its registration site.
    final func failure(_ error: any Error) -> ObserverFailure {
        let location = self.location
        return ObserverFailure(
            error: error, notificationType: notificationTypeName, fileID: location.fileString, line: Int(location.line))
    }
}

/// What a ``DeliveryRecord``'s registration is registered in, as the delivery layer sees it: the
/// environment its deliveries run in. The registry is its one subclass, so that a record holds its
/// registry in one reference without naming it.
class DeliveryHost: @unchecked Sendable {  // Immutable.
    /// What the deliveries of the registered observers need from the hub.
    let environment = DeliveryEnvironment()
}
