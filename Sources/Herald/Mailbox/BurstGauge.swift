import Synchronization

/// What lets the drain job of a lingering mailbox (a serial queue, a ``DeliveryThread``) tell, without
/// taking the mailbox's lock, that a poster is still at work, so that it hands itself back to the
/// target once more instead of taking a few items.
///
/// A drain that keeps up with a poster takes one or two items at a time, and each batch takes the
/// mailbox's lock twice: the poster and the drain then pass the lock's cache line back and forth at
/// every post, and a burst runs several times slower than either side alone. A job that the target
/// runs again (a ``GatheringJob``) first reads how many items were appended since
/// its last batch. While that number is below a slice and still grows from one look to the next, it
/// goes back to the target without touching the mailbox, for at most ``gatherLimit`` looks in a row.
/// When the poster stops, the number stops growing and the next look takes the items; a lone
/// post's job is never continued, so it never gathers.
///
/// The counts are hints. Posters add to them after the mailbox's lock, the one pending job reads
/// them, and every decision about items is still made under the lock by ``MailboxStateMachine``:
/// a stale count only costs one look more or less.
final class BurstGauge: Sendable {
    /// The most looks in a row that hand the job back without taking anything.
    static let gatherLimit = 64

    /// Items appended so far. Posters add to it after the mailbox's lock: a look reads this count
    /// while a burst goes on, and a poster that found it shared would otherwise wait for the cache
    /// line with the lock held.
    private let appended = Atomic<Int>(0)
    /// `appended` when the job last took items, written under the mailbox's lock.
    private let taken = Atomic<Int>(0)
    /// `appended` at the last look, and the looks in a row so far. Only the pending job, of which
    /// there is at most one, touches them.
    private let lastSeen = Atomic<Int>(0)
    private let looks = Atomic<Int>(0)

    /// `count` items were appended. Call after the mailbox's lock.
    @inline(__always)
    func noteAppended(_ count: Int = 1) {
        appended.wrappingAdd(count, ordering: .relaxed)
    }

    /// The drain took items. Call under the mailbox's lock.
    @inline(__always)
    func noteTaken() {
        taken.store(appended.load(ordering: .relaxed), ordering: .relaxed)
    }

    /// What a job that the target runs again does before it takes the mailbox's lock.
    enum Look: Equatable {
        /// Go back to the target without taking anything: fewer than a slice of items arrived
        /// since the last batch, and more since the last look.
        case gather
        /// Take what is there. `posterPaused` when nothing arrived since the last look: the
        /// burst is likely over, so the job does not linger once it has emptied the mailbox.
        case take(posterPaused: Bool)
    }

    /// Looks at the counts, for the job that the target runs again.
    func look() -> Look {
        let now = appended.load(ordering: .relaxed)
        let looks = self.looks.load(ordering: .relaxed)
        let paused = now == lastSeen.load(ordering: .relaxed)
        if looks < Self.gatherLimit && !paused && now &- taken.load(ordering: .relaxed) < MailboxStateMachine.sliceLimit
        {
            self.looks.store(looks + 1, ordering: .relaxed)
            lastSeen.store(now, ordering: .relaxed)
            return .gather
        }
        self.looks.store(0, ordering: .relaxed)
        return .take(posterPaused: paused && looks > 0)
    }
}
