import Synchronization

/// Retained (sticky) values and replaying registrations.
///
/// Retained values are stored in the registry's buckets, under the registry lock. A retaining
/// post stores its value and takes its observer snapshot in one critical section, and a replaying
/// registration reads the retained values and becomes visible in one critical section (or, on the
/// posting thread, in a final one that checks nothing was retained in between). So every
/// retaining post reaches a replaying observer exactly once: through the replay if it came
/// first, live if it came after.
///
/// Values that are replaced or removed are released after the registry lock, never under it:
/// their `deinit` may observe, cancel, post or remove retained values on the same hub.
extension HubCore {
    /// Rounds a posting-thread registration replays outside the lock before it falls back to
    /// replaying the remainder after it became visible.
    static let maxReplayRounds = 8

    /// Stores `value` as the retained value for `subject` and returns the observers it reaches.
    func retainAndSnapshot<N: TypedNotification>(_ value: N, subject: AnyObject?) -> ObserverSnapshot? {
        registry.retain(value, subject: subject)
    }

    /// The value of `type` retained for `subject`.
    func retainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        registry.retainedValue(of: type, subject: subject)
    }

    /// Removes the value of `type` retained for `subject` and returns it.
    func removeRetainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        registry.removeRetainedValue(of: type, subject: subject)
    }

    /// Removes every retained value of `type`; returns how many there were.
    func removeAllRetainedValues<N: TypedNotification>(of type: N.Type) -> Int {
        registry.removeAllRetainedValues(of: type)
    }

    /// Removes the value of `N` retained for `subject` if it equals `value`; returns whether it did.
    ///
    /// `==` is user code, so it never runs under the registry lock: the current value is copied
    /// with its sequence number under the lock, compared after it, and removed under the lock
    /// again only if its entry still has that sequence number. If a retaining post replaced it in
    /// between, the newer value is compared in turn. Each retry follows a retaining post that
    /// succeeded, so the loop ends as soon as the value stops changing.
    func removeRetainedValue<N: TypedNotification>(
        of type: N.Type, subject: AnyObject?, where shouldRemove: (N) throws -> Bool
    ) rethrows -> Bool {
        while true {
            // The copy is released at the end of each round, outside the lock.
            guard let current = registry.retainedEntry(of: type, subject: subject),
                try shouldRemove(current.value)
            else { return false }
            switch registry.removeRetainedValue(of: type, subject: subject, ifSequence: current.sequence) {
            case .removed: return true
            case .absent: return false
            case .replaced: continue
            }
        }
    }

    /// Removes every retained value of every type; returns how many there were.
    func removeAllRetainedValues() -> Int {
        registry.removeAllRetainedValues(of: nil)
    }

    /// Registers `observer` and replays the retained values it matches, before any live post.
    ///
    /// - An observer with a mailbox or a stream gets the replayed values in its mailbox or buffer before
    ///   it becomes visible to posts, in the same critical section, so they come first.
    /// - A posting-thread observer has no mailbox: the replay runs right here, on the registering
    ///   thread. To keep it ahead of live posts, the observer becomes visible only once a check
    ///   under the lock shows that nothing was retained since the last values it replayed; values
    ///   retained meanwhile are replayed in another round (a value already replaced by then is
    ///   skipped: only the latest per subject is stored). After ``maxReplayRounds`` rounds of
    ///   constant retaining posts, it becomes visible together with the last values to replay,
    ///   which then may overlap a live post made on another thread.
    func addReplaying<N: TypedNotification>(_ observer: Observer<N>) {
        if !observer.isPosting {
            if registry.addPreloaded(observer) { observer.scheduleDrain() }
            return
        }

        var seen: UInt64 = 0
        var round = 0
        while true {
            let (replays, latest, added) = registry.replayRound(
                observer, after: seen, force: round >= Self.maxReplayRounds)
            // No one else holds the observer yet, so only `isCancelledFlag` may be read here:
            // `isCancelled` could end a registration that is not in the registry.
            for replay in replays where !observer.isCancelledFlag {
                _ = withUnsafePointer(to: replay.value) {
                    observer.deliver(UnsafeRawPointer($0), subjectID: replay.subjectID)
                }
            }
            if added { return }
            seen = latest
            round += 1
        }
    }
}
