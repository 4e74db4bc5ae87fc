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
        let (snapshot, released, members) = withUnsafePointer(to: value) { sample in
            registry.state.withLock { state -> (ObserverSnapshot?, [N], [any Sendable]) in
                let bucket = bucket(of: N.self, in: &state)
                let released = bucket.retained.store(value, subject: subject)
                let (_, members) = state.bucket(ObjectIdentifier(N.self), type: N.self, sample: sample)
                return (bucket.snapshot(), released, members)
            }
        }
        withExtendedLifetime(members) {}  // released here, outside the lock
        withExtendedLifetime(released) {}  // released here, outside the lock
        return snapshot
    }

    /// The value of `type` retained for `subject`.
    func retainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        registry.state.withLock { state -> N? in
            guard let bucket = state.bucket(ObjectIdentifier(type)) else { return nil }
            return unsafeDowncast(bucket, to: Bucket<N>.self).retained.value(for: subject)
        }
    }

    /// Removes the value of `type` retained for `subject` and returns it.
    func removeRetainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        let (value, released) = registry.state.withLock { state -> (N?, N?) in
            guard let bucket = state.bucket(ObjectIdentifier(type)) else { return (nil, nil) }
            return unsafeDowncast(bucket, to: Bucket<N>.self).retained.remove(for: subject)
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return value
    }

    /// Removes every retained value of `type`; returns how many there were.
    func removeAllRetainedValues<N: TypedNotification>(of type: N.Type) -> Int {
        let (count, released) = registry.state.withLock { state -> (Int, [N]) in
            guard let bucket = state.bucket(ObjectIdentifier(type)) else { return (0, []) }
            return unsafeDowncast(bucket, to: Bucket<N>.self).retained.removeAll()
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return count
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
        let key = ObjectIdentifier(N.self)
        while true {
            let current = registry.state.withLock { state -> (value: N, sequence: UInt64)? in
                guard let bucket = state.bucket(key) else { return nil }
                return unsafeDowncast(bucket, to: Bucket<N>.self).retained.entry(for: subject)
            }
            // The copy is released at the end of each round, outside the lock.
            guard let current, try shouldRemove(current.value) else { return false }
            let (outcome, released) = registry.state.withLock {
                state -> (RetainedValues<N>.ConditionalRemoval, N?) in
                guard let bucket = state.bucket(key) else { return (.absent, nil) }
                return unsafeDowncast(bucket, to: Bucket<N>.self).retained.remove(
                    for: subject, ifSequence: current.sequence)
            }
            withExtendedLifetime(released) {}  // released here, outside the lock
            switch outcome {
            case .removed: return true
            case .absent: return false
            case .replaced: continue
            }
        }
    }

    /// Removes every retained value of every type; returns how many there were.
    func removeAllRetainedValues() -> Int {
        let (count, released) = registry.state.withLock { state -> (Int, [any Sendable]) in
            var count = 0
            var released: [any Sendable] = []
            for bucket in state.types.buckets {
                let (removed, values) = bucket.removeRetainedValues()
                count += removed
                if let values { released.append(values) }
            }
            return (count, released)
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
        return count
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
        let key = ObjectIdentifier(N.self)
        if !observer.isPosting {
            let (mustSchedule, dropped, replaced, change) = registry.state.withLock {
                state -> (Bool, [N], ObserverSnapshot?, Registry.Change) in
                let bucket = bucket(of: N.self, in: &state)
                let items = bucket.retained.replays(matching: observer.filters, after: 0).map {
                    QueuedItem(notification: $0.value, subjectID: $0.subjectID, group: nil)
                }
                let (mustSchedule, dropped) = observer.preload(items)
                let replaced = bucket.add(observer, sequence: state.nextSequence())
                return (mustSchedule, dropped, replaced, state.recordChange(of: key))
            }
            registry.didChange(change)
            withExtendedLifetime((dropped, replaced)) {}  // released here, outside the locks
            if mustSchedule { observer.scheduleDrain() }
            return
        }

        var seen: UInt64 = 0
        var round = 0
        while true {
            let (replays, latest, change, replaced) = registry.state.withLock {
                state -> ([RetainedValues<N>.Replay], UInt64, Registry.Change?, ObserverSnapshot?) in
                let bucket = bucket(of: N.self, in: &state)
                let latest = bucket.retained.lastSequence
                let replays = bucket.retained.replays(matching: observer.filters, after: seen)
                guard replays.isEmpty || round >= Self.maxReplayRounds else { return (replays, latest, nil, nil) }
                let replaced = bucket.add(observer, sequence: state.nextSequence())
                return (replays, latest, state.recordChange(of: key), replaced)
            }
            if let change { registry.didChange(change) }
            withExtendedLifetime(replaced) {}  // released here, outside the locks
            // No one else holds the observer yet, so only `isCancelledFlag` may be read here:
            // `isCancelled` could end a registration that is not in the registry.
            for replay in replays where !observer.isCancelledFlag {
                _ = withUnsafePointer(to: replay.value) {
                    observer.deliver(UnsafeRawPointer($0), subjectID: replay.subjectID)
                }
            }
            if change != nil { return }
            seen = latest
            round += 1
        }
    }
}
