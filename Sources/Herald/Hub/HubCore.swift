import Foundation
import Synchronization

/// The state behind a ``NotificationHub``: the registry, the error handler and the counters.
///
/// Observers keep the core alive, so deliveries queued when the hub is deallocated still run and
/// still report their errors.
final class HubCore: Sendable {
    let registry = Registry()
    /// The hub's unobserved-post handler, as stored behind its lock (see ``StoredHandler``).
    let unobservedHandler = Lock<StoredHandler<UnobservedPost>?>(nil, rank: .unobservedHandler)
    let unobservedCount = Atomic<Int>(0)
    /// Registrations refused for a ``FamilyMismatch`` that HeraldTesting has not reported yet.
    let misuses = Lock<[RegistrationMisuse]>([], rank: .misuses)

    /// What the hub's deliveries need from it: the error handler, the idle watch and the
    /// main-queue executor.
    var environment: DeliveryEnvironment { registry.environment }

    // MARK: The main queue

    /// The hub's main-queue executor, if it was given one: an executor whose jobs run only when
    /// someone runs them (see ``ManualMainQueueExecutor``).
    var manualMainQueue: (any ManualMainQueueExecutor)? {
        environment.mainQueueExecutor as? any ManualMainQueueExecutor
    }

    // MARK: Registry

    /// Delivers a fire-and-forget post: the registry's snapshot of `type`'s observers scans it
    /// (``ObserverSnapshot/scan(_:subject:wait:)``).
    ///
    /// - Returns: Whether the post reached at least one observer (a tap does not count).
    @inline(__always)  // a method of the core, so that reading its registry retains nothing
    func post(
        _ payload: UnsafeRawPointer, type: any TypedNotification.Type, subject: AnyObject?, postingLoop: PostingLoop
    ) -> Bool {
        registry.snapshot(of: type, payload: payload)?.scan(payload, subject: subject, postingLoop: postingLoop)
            ?? false
    }

    /// Rounds a posting-thread registration replays outside the lock before it falls back to
    /// replaying the remainder after it became visible.
    static let maxReplayRounds = 8

    /// Makes `observer` visible to posts, for every type at once if it observes a family; with
    /// `replayLatest`, it first gets the retained values it matches, before any live post:
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
    func add<N: TypedNotification>(_ observer: Observer<N>, replayLatest: Bool) {
        if !replayLatest {
            registry.add(observer)
        } else if !observer.isPosting {
            if registry.addPreloaded(observer) { observer.mailbox?.scheduleDrain(for: observer) }
        } else {
            replay(to: observer)
        }
    }

    /// The replay rounds of a posting-thread observer (see ``add(_:replayLatest:)``). Out of line:
    /// inlined, its array of replayed values made every registration ask the runtime for their type.
    @inline(never) private func replay<N: TypedNotification>(to observer: Observer<N>) {
        var seen: UInt64 = 0
        for round in 0... {
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
        }
    }

    /// The live observers of `type`, in registration order (posting-thread observers first).
    /// Registrations whose owner or subject has been deallocated are ended first.
    func observers<N: TypedNotification>(of type: N.Type) -> [AnyObserver] {
        guard let snapshot = registry.snapshot(of: type) else { return [] }
        return snapshot.withObservers { queued, posting in
            (Array(posting) + Array(queued)).compactMap { $0.takeUnretainedValue().registrationOfItsType }
        }.filter { !$0.isCancelled }
    }

    /// The live family observers with the family `key` (every family when `nil`) that are taps
    /// or not, in registration order.
    func familyObservers(key: ObjectIdentifier?, taps: Bool) -> [AnyObserver] {
        registry.familyObservers.filter { observer in
            guard let family = observer.family, family.isTap == taps else { return false }
            return (key == nil || family.key == key) && !observer.isCancelled
        }
    }

    // MARK: Errors and diagnostics

    func noteUnobserved(_ type: any Any.Type, hadSubject: Bool) {
        unobservedCount.add(1, ordering: .relaxed)
        if let handler = unobservedHandler.withLock({ $0 }) {
            handler.call(UnobservedPost(notificationType: String(describing: type), hadSubject: hadSubject))
        }
    }
}
