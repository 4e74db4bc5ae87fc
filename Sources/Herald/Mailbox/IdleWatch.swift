import Dispatch
import Synchronization

/// Wakes the tasks waiting for a hub to become idle whenever one of its mailboxes may have become
/// idle. Costs one relaxed load per drain while nobody waits.
final class IdleWatch: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Lock(State(), rank: .idleWatch)
    /// The number of tasks inside ``NotificationHub/waitUntilIdle(timeout:isolation:)``.
    private let watchers = Atomic<Int>(0)
    /// The batches and `async` calls that ended while a task watched (see ``noteBatchEnding()``).
    private let endedBatches = Atomic<UInt64>(0)
    /// The registrations that ended while a handler of theirs ran (see ``endingRegistrations(adding:)``).
    private let ending = Lock<[Ending]>([], rank: .endedRegistrations)

    /// A mailbox finished a drain, an async handler or closed. Call after the mailbox's lock: a watcher
    /// registers before it reads the mailboxes, under their locks, so it either sees the mailbox idle or
    /// is woken here.
    @inline(__always)
    func noteProgress() {
        guard watchers.load(ordering: .relaxed) > 0 else { return }
        wakeAll()
    }

    /// A drain is about to end a batch, or an `async` call has returned; its mailbox may then
    /// become idle. Call before the mailbox's lock that records it.
    ///
    /// A watcher's scan reads the mailboxes one at a time, so a handler that posts to a mailbox
    /// the scan has already read, and returns before the scan reads its own, leaves both looking
    /// idle. The count moves before such a mailbox can look idle, so the scan sees it move (see
    /// ``batchesEnded``) and reads them again.
    @inline(__always)
    func noteBatchEnding() {
        guard watchers.load(ordering: .relaxed) > 0 else { return }
        endedBatches.add(1, ordering: .releasing)
    }

    /// The registrations that ended while a handler of theirs ran, and whose handler still runs;
    /// first adds `record`, whose registration is ending while a handler of its may run (one that
    /// cancelled its own observation, or an `async` call that is suspended): a hub is not idle
    /// until it returns, though the registry no longer lists it. Add it before the registry lets go.
    @discardableResult
    func endingRegistrations(adding record: DeliveryRecord? = nil) -> [DeliveryRecord] {
        let (running, loaded) = ending.withLock { entries in
            let loaded = entries.compactMap(\.record)  // released after the lock: one may be the last reference
            let running = loaded.filter { $0.anyMailbox?.isRunning == true }
            entries = (running + [record].compactMap { $0 }).map { Ending(record: $0) }
            return (running, loaded)
        }
        withExtendedLifetime(loaded) {}
        return running
    }

    /// A registration that ended while a handler of its ran, held weakly: the record's host (the
    /// registry) holds this watch, and the drain or call that runs the handler holds the record.
    private struct Ending: Sendable { weak var record: DeliveryRecord? }

    /// The batches and calls that ended while a task watched; a scan that found every mailbox
    /// idle proves the hub idle only if this did not move meanwhile.
    var batchesEnded: UInt64 { endedBatches.load(ordering: .acquiring) }

    @inline(never)
    private func wakeAll() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            return Array(exchange(&state.waiters, with: [:]).values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `body` counted as a watcher.
    func watching<R, E: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(E) -> R
    ) async throws(E) -> R {
        watchers.add(1, ordering: .sequentiallyConsistent)
        defer { watchers.subtract(1, ordering: .sequentiallyConsistent) }
        return try await body()
    }

    /// The current generation; read it before reading the mailboxes.
    var generation: UInt64 {
        state.withLock { $0.generation }
    }

    /// Suspends until the generation moves past `generation` or `deadline` passes.
    func wait(since generation: UInt64, until deadline: DispatchTime) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id = state.withLock { state -> UInt64? in
                guard state.generation == generation else { return nil }
                let id = state.nextID
                state.nextID &+= 1
                state.waiters[id] = continuation
                return id
            }
            guard let id else {
                continuation.resume()
                return
            }
            guard deadline != .distantFuture else { return }
            DispatchQueue.global().asyncAfter(deadline: deadline) { [self] in
                let timedOut = state.withLock { $0.waiters.removeValue(forKey: id) }
                timedOut?.resume()
            }
        }
    }
}
