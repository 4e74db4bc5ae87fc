/// A registration with a ``NotificationHub``; the observation lasts as long as you keep it.
///
/// ```swift
/// final class LoginModel {
///     private var observations = Set<ObservationToken>()
///
///     init(hub: NotificationHub) {
///         hub.observe(UserCreated.self, on: MainActor.shared) { note in … }
///             .store(in: &observations)
///     }
/// }
/// ```
///
/// The observation ends when you call ``cancel()`` or when the last reference to it goes away.
/// Observations made with an `owner:` are the exception: they end when the owner is deallocated,
/// so their token may be discarded.
///
/// ## Threading
/// ``cancel()`` may be called from any thread, including from inside the handler. Once it returns,
/// the handler is not started again, not even for notifications already queued for it. A call
/// that is already running on another thread at that moment is not interrupted and may finish.
public final class ObservationToken: Hashable, Sendable {
    // One reference and nothing else: a token stays in the allocator's 32-byte chunks (a mutex
    // of its own would move it to the next size). The reference is read and replaced under one of
    // `StripedLocks.tokens`' locks, picked by the token's address; only `deinit`, the last owner,
    // reads it without. Whether it cancels on deinit is the registration's own `cancelsWithToken`.
    // Once cancelled, the token holds an `EndedRegistration` with the final counts instead, or
    // nothing for an observation without a policy, so that it no longer keeps the observer, and
    // with it the handler, alive.
    private nonisolated(unsafe) var state: Cancellable?

    init(registration: Cancellable, cancelsOnDeinit: Bool = true) {
        assert(cancelsOnDeinit == registration.cancelsWithToken, "Herald: the registration decides")
        self.state = registration
    }

    /// The registration, or what is left of it once cancelled (`nil`: an observation without a
    /// policy, which has ended).
    private var registration: Cancellable? {
        StripedLocks.tokens.withLock(for: self) { state }
    }

    /// Creates an observation that calls `onCancel` once, when it is cancelled or deallocated.
    ///
    /// Use it to put your own registrations (a `NotificationCenter` token, a timer) in the same
    /// `Set<ObservationToken>` as Herald's.
    ///
    /// - Parameter onCancel: The work that ends your registration. It runs at most once.
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.state = ClosureRegistration(onCancel)
    }

    deinit {
        if let state, state.cancelsWithToken {  // the last owner: no other thread reaches `state`
            state.cancel()
        }
    }

    /// Ends the observation. Calling it again does nothing.
    ///
    /// Once `cancel()` returns, the handler is not started again, including for notifications that
    /// were already queued for it. A call already running on another thread may finish.
    ///
    /// The notifications queued for the observer and the handler, with whatever it captures, are
    /// released before `cancel()` returns, although you still hold this observation and a delivery
    /// job may still wait on the target: a `self` → token → handler → `self` cycle ends here. The
    /// exception is a call running on another thread at that moment, or a post of the same type
    /// that another thread is scanning: the handler is released when that call or post returns.
    public func cancel() {
        // The usual case (an observer without a mailbox policy, whose token keeps nothing once
        // cancelled) takes the token's lock once: the claim sets the observer's cancelled bit, and
        // the token hands over its reference in the same critical section. A concurrent `cancel()`
        // that finds nothing left returns knowing the bit is set, as it would have after its own
        // `markCancelled()` failed.
        let (claimed, claim) = StripedLocks.tokens.withLock(for: self) { () -> (Cancellable?, Cancellable.TokenClaim) in
            // Taken out first, so that asking it costs no reference count; put back if it stays.
            guard let registration = state.take() else { return (nil, .ended) }
            let claim = registration.claimCancellation()
            switch claim {
            case .later, .ended:
                state = registration
                return (nil, claim)
            case .claimed, .alreadyCancelled:
                return (registration, claim)
            }
        }
        guard claim == .later else {
            if claim == .claimed, let claimed { claimed.finishClaimedCancellation() }
            return  // the observer goes here, after the lock
        }
        guard let current = registration, !current.hasEnded else { return }
        current.cancel()
        let ended = EndedRegistration(ending: current)
        let replaced = StripedLocks.tokens.withLock(for: self) { () -> Cancellable? in
            guard state === current else { return nil }
            defer { state = ended }
            return state
        }
        withExtendedLifetime(replaced) {}  // the observer goes here, after the lock
    }

    /// Whether the observation has ended, by ``cancel()`` or because its owner or subject was
    /// deallocated.
    public var isCancelled: Bool {
        registration?.isCancelled ?? true
    }

    /// The mailbox policy the observation was registered with.
    ///
    /// ``NotificationBufferingPolicy/unbounded`` for an observation without a mailbox policy,
    /// including a synchronous one on the posting thread, which has no mailbox.
    public var bufferingPolicy: NotificationBufferingPolicy {
        registration?.bufferingPolicy ?? .unbounded
    }

    /// The number of notifications that the mailbox policy
    /// (``NotificationBufferingPolicy/latest(perSubject:)``) replaced with newer ones before the
    /// handler got them, so far.
    ///
    /// ```swift
    /// let progress = hub.observe(DownloadProgress.self, on: MainActor.shared, bufferingPolicy: .latest) { note in
    ///     progressBar.value = note.fraction
    /// }
    /// // later
    /// print("\(progress.replacedCount) progress updates skipped for newer ones")
    /// ```
    ///
    /// The count is exact, and stays readable after the observation ends. It is 0 for an
    /// observation without a policy. ``NotificationHub/registrations(of:)`` reports it too, for
    /// observations made with an `owner:`.
    public var replacedCount: Int {
        registration?.discardedCounts.replaced ?? 0
    }

    /// The number of notifications that a bounded mailbox policy
    /// (``NotificationBufferingPolicy/bufferingNewest(_:)``, ``NotificationBufferingPolicy/bufferingOldest(_:)``)
    /// dropped so far, because the observer's mailbox was full.
    ///
    /// The count is exact, and stays readable after the observation ends. It is 0 for an
    /// observation without a policy. ``NotificationHub/registrations(of:)`` reports it too.
    public var droppedCount: Int {
        registration?.discardedCounts.dropped ?? 0
    }

    /// The subject identities that a `.latest(perSubject: true)` mailbox remembers, to tell a
    /// live subject from a new object at a deallocated one's address; for tests that check it
    /// stays small while subjects come and go.
    @_spi(Testing)
    public var _rememberedSubjectCount: Int {
        registration?.rememberedSubjectCount ?? 0
    }

    /// Keeps this observation alive in `set` until the set lets go of it.
    ///
    /// - Parameter set: The set that owns the observation.
    public func store(in set: inout Set<ObservationToken>) {
        set.insert(self)
    }

    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool {
        lhs === rhs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}

/// What a token keeps of its registration once cancelled: the mailbox policy and the final
/// counts, which stay readable, and nothing that holds the handler.
private final class EndedRegistration: Cancellable, @unchecked Sendable {  // Immutable.
    private let policy: NotificationBufferingPolicy
    private let counts: (replaced: Int, dropped: Int)

    /// What is left of `registration`, which has been cancelled; `nil` for an observation without
    /// a policy, whose counts are always 0.
    init?(ending registration: Cancellable) {
        policy = registration.bufferingPolicy
        guard policy != .unbounded else { return nil }
        counts = registration.discardedCounts
    }

    override var hasEnded: Bool { true }
    override var bufferingPolicy: NotificationBufferingPolicy { policy }
    override var discardedCounts: (replaced: Int, dropped: Int) { counts }
}

/// A registration ended by a closure.
private final class ClosureRegistration: Cancellable, @unchecked Sendable {  // State is in a Lock.
    /// The closure, in a struct: a bare function type behind a ``Lock`` would be wrapped in two
    /// more thunks on every access (see ``StoredHandler``).
    private struct Work: Sendable {
        let run: @Sendable () -> Void
    }

    private let onCancel: Lock<Work?>

    init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Lock(Work(run: onCancel), rank: .closureRegistration)
    }

    override func cancel() {
        onCancel.exchange(nil)?.run()  // after the lock
    }

    override var isCancelled: Bool {
        onCancel.withLock { $0 == nil }
    }
}
