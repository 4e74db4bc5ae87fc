/// Something an ``ObservationToken`` ends: a Herald observer, or a closure given by the user.
///
/// A class without stored properties rather than a protocol, so that a token holds one pointer
/// instead of an existential.
@usableFromInline
class Cancellable: @unchecked Sendable {  // No state of its own; subclasses make their own choice.
    /// Ends the registration. Calling it again does nothing.
    func cancel() {}
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
