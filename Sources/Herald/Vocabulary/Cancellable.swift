/// Something an ``ObservationToken`` ends: a Herald observer, or a closure given by the user.
///
/// A class without stored properties rather than a protocol, so that a token holds one pointer
/// instead of an existential.
@usableFromInline
class Cancellable: @unchecked Sendable {  // No state of its own; subclasses make their own choice.
    /// Ends the registration. Calling it again does nothing.
    func cancel() {}

    /// What ``ObservationToken/cancel()`` may do in its one critical section (see
    /// ``claimCancellation()``).
    enum TokenClaim {
        /// Nothing can be decided under the token's lock: cancel, then keep what
        /// `EndedRegistration` makes of the registration.
        case later
        /// The registration had already ended (the token holds an `EndedRegistration`).
        case ended
        /// The registration's ending is now irrevocable, and the token keeps nothing of it;
        /// ``finishClaimedCancellation()`` must run, after the token's lock.
        case claimed
        /// The registration had already been cancelled elsewhere, and the token keeps nothing of
        /// it either.
        case alreadyCancelled
    }

    /// Called by ``ObservationToken/cancel()`` under the token's lock, so that the common
    /// cancellation takes that lock once instead of twice: a registration that the token keeps
    /// nothing of once cancelled (no counts to read afterwards) makes its cancellation final here,
    /// with nothing but an atomic operation (no call out, no other lock), and the token lets go of
    /// it in the same critical section.
    func claimCancellation() -> TokenClaim { hasEnded ? .ended : .later }

    /// The rest of a cancellation once the cancelled bit is set: after the token's lock for one
    /// that ``claimCancellation()`` claimed.
    func finishClaimedCancellation() {}
    /// Whether the registration has ended.
    var isCancelled: Bool { true }
    /// Whether this is what a cancelled token keeps of its registration, which has nothing left
    /// to cancel.
    var hasEnded: Bool { false }
    /// Whether letting go of the last token ends the registration.
    var cancelsWithToken: Bool { true }
    /// The registration's mailbox policy.
    var bufferingPolicy: NotificationBufferingPolicy { .unbounded }
    /// The notifications the registration's mailbox policy has replaced and dropped so far.
    var discardedCounts: (replaced: Int, dropped: Int) { (0, 0) }
    /// The subject identities a `.latest(perSubject: true)` mailbox remembers (see
    /// ``SubjectIdentities``); 0 for any other.
    var rememberedSubjectCount: Int { 0 }
}
