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
        !hasSubject || (postedSubject != nil && subject === postedSubject)
    }
}
