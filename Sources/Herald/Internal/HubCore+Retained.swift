import Synchronization

/// Retained (sticky) values and replaying registrations.
///
/// Retained values are stored in the registry's buckets, under the registry lock. A retaining
/// post stores its value and takes its observer snapshot in one critical section, and a replaying
/// registration reads the retained values and becomes visible in one critical section (or, on the
/// posting thread, in a final one that checks nothing was retained in between). So every
/// retaining post reaches a replaying observer exactly once: through the replay if it came
/// first, live if it came after.
extension HubCore {
    /// Rounds a posting-thread registration replays outside the lock before it falls back to
    /// replaying the remainder after it became visible.
    static let maxReplayRounds = 8

    /// Stores `value` as the retained value for `subject` and returns the observers it reaches.
    func retainAndSnapshot<N: TypedNotification>(_ value: N, subject: AnyObject?) -> Snapshot<N> {
        buckets.withLock { buckets in
            let bucket = bucket(of: N.self, in: &buckets)
            bucket.retained.store(value, subject: subject)
            return Snapshot(posting: bucket.posting, queued: bucket.queued)
        }
    }

    /// The value of `type` retained for `subject`.
    func retainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        buckets.withLock { buckets -> N? in
            guard let bucket = buckets[ObjectIdentifier(type)] else { return nil }
            return unsafeDowncast(bucket, to: Bucket<N>.self).retained.value(for: subject)
        }
    }

    /// Removes the value of `type` retained for `subject` and returns it.
    func removeRetainedValue<N: TypedNotification>(of type: N.Type, subject: AnyObject?) -> N? {
        buckets.withLock { buckets -> N? in
            guard let bucket = buckets[ObjectIdentifier(type)] else { return nil }
            return unsafeDowncast(bucket, to: Bucket<N>.self).retained.remove(for: subject)
        }
    }

    /// Removes every retained value of `type`; returns how many there were.
    func removeAllRetainedValues<N: TypedNotification>(of type: N.Type) -> Int {
        buckets.withLock { buckets -> Int in
            guard let bucket = buckets[ObjectIdentifier(type)] else { return 0 }
            return unsafeDowncast(bucket, to: Bucket<N>.self).retained.removeAll()
        }
    }

    /// Registers `observer` and replays the retained values it matches, before any live post.
    ///
    /// - An observer with a lane gets the replayed values in its lane before it becomes visible to
    ///   posts, in the same critical section, so they run first, on its own target.
    /// - A posting-thread observer has no lane: the replay runs right here, on the registering
    ///   thread. To keep it ahead of live posts, the observer becomes visible only once a check
    ///   under the lock shows that nothing was retained since the last values it replayed; values
    ///   retained meanwhile are replayed in another round (a value already replaced by then is
    ///   skipped: only the latest per subject is stored). After ``maxReplayRounds`` rounds of
    ///   constant retaining posts, it becomes visible together with the last values to replay,
    ///   which then may overlap a live post made on another thread.
    func addReplaying<N: TypedNotification>(_ observer: Observer<N>) {
        if observer.lane != nil {
            let (mustSchedule, retired) = buckets.withLock { buckets -> (Bool, RetiredLists) in
                let bucket = bucket(of: N.self, in: &buckets)
                let items = bucket.retained.replays(matching: observer.filters, after: 0).map {
                    QueuedItem(notification: $0.value, subjectID: $0.subjectID, group: nil)
                }
                let mustSchedule = observer.preload(items)
                return (mustSchedule, bucket.add(observer))
            }
            retired.release()  // outside the lock
            if mustSchedule { observer.scheduleDrain() }
            return
        }

        var seen: UInt64 = 0
        var round = 0
        while true {
            let (replays, latest, isAdded, retired) = buckets.withLock {
                buckets -> ([RetainedValues<N>.Replay], UInt64, Bool, RetiredLists) in
                let bucket = bucket(of: N.self, in: &buckets)
                let latest = bucket.retained.lastSequence
                let replays = bucket.retained.replays(matching: observer.filters, after: seen)
                let addNow = replays.isEmpty || round >= Self.maxReplayRounds
                let retired = addNow ? bucket.add(observer) : RetiredLists()
                return (replays, latest, addNow, retired)
            }
            retired.release()  // outside the lock
            // No one else holds the observer yet, so only `isCancelledFlag` may be read here:
            // `isCancelled` could end a registration that is not in the registry.
            for replay in replays where !observer.isCancelledFlag {
                _ = observer.invoke(replay.value, subjectID: replay.subjectID)
            }
            if isAdded { return }
            seen = latest
            round += 1
        }
    }
}
