import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The stress suite: `.ci/run` runs it under ThreadSanitizer.
@Suite("Stress")
struct StressTests {
    static let posters = 4
    static let postsPerPoster = 100_000

    /// What one observer saw, per posting thread.
    final class Tracker: Sendable {
        struct State {
            var last = [Int](repeating: -1, count: StressTests.posters)
            var delivered = 0
            var gaps = 0  // exactly-once violations (persistent observers)
            var inversions = 0  // FIFO violations
            var lateStarts = 0  // handler started after cancel() returned
            var running = 0
            var overlaps = 0
        }

        let name: String
        let persistent: Bool
        let state = Locked(State())
        let cancelReturned = Atomic<Bool>(false)

        init(name: String, persistent: Bool) {
            self.name = name
            self.persistent = persistent
        }

        func see(_ note: Ping, overlapCheck: Bool) {
            let late = cancelReturned.load(ordering: .acquiring)
            state.withLock { state in
                if late { state.lateStarts += 1 }
                if overlapCheck {
                    state.running += 1
                    if state.running > 1 { state.overlaps += 1 }
                }
                guard note.value >= 0 else { return }
                let poster = note.value / 1_000_000
                let sequence = note.value % 1_000_000
                let previous = state.last[poster]
                if sequence <= previous { state.inversions += 1 }
                if persistent && sequence != previous + 1 { state.gaps += 1 }
                state.last[poster] = sequence
                state.delivered += 1
            }
        }

        func leave(overlapCheck: Bool) {
            if overlapCheck { state.withLock { $0.running -= 1 } }
        }
    }

    static func targets(store: Store) -> [(String, DeliveryTarget?)] {
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 4
        return [
            ("posting", .posting),
            ("main", .mainQueue),
            ("serial queue", .queue(DispatchQueue(label: "stress.serial"))),
            ("concurrent queue", .queue(DispatchQueue(label: "stress.concurrent", attributes: .concurrent))),
            ("operation queue x4", .operationQueue(operations)),
            ("executor", .executor(QueueExecutor(label: "stress.executor"))),
            ("actor", nil),
        ]
    }

    static func observe(
        _ hub: NotificationHub, _ tracker: Tracker, target: DeliveryTarget?, store: Store
    ) -> ObservationToken {
        guard let target else {
            return hub.observe(Ping.self, on: store) { _, note in
                tracker.see(note, overlapCheck: true)
                tracker.leave(overlapCheck: true)
            }
        }
        let overlapCheck = !target.isPosting
        return hub.observe(Ping.self, on: target) { note in
            tracker.see(note, overlapCheck: overlapCheck)
            tracker.leave(overlapCheck: overlapCheck)
        }
    }

    @Test(
        "4 posting threads × 100,000 posts reach every observer exactly once and in order, under churn",
        .timeLimit(.minutes(10))
    )
    func postersObserversAndChurn() async {
        let hub = NotificationHub()
        let store = Store()
        let targets = Self.targets(store: store)
        let persistent = targets.map { Tracker(name: $0.0, persistent: true) }
        let tokens = zip(targets, persistent).map { target, tracker in
            Self.observe(hub, tracker, target: target.1, store: store)
        }
        let churned = Locked<[(Tracker, Bool)]>([])  // tracker, whether its target is posting
        let stop = Atomic<Bool>(false)

        // Churn: register and cancel observers on every target while the posters run, on a thread
        // of its own so that busy test workers cannot starve it.
        let postersDone = Atomic<Bool>(false)
        let churn = Task.detached {
            await onNewThread {
                var round = 0
                while !stop.load(ordering: .relaxed) || round < 3 * targets.count {
                    let (name, target) = targets[round % targets.count]
                    let tracker = Tracker(name: "churn \(name)", persistent: false)
                    let token = Self.observe(hub, tracker, target: target, store: store)
                    // Keep it registered until it has seen a delivery, or until the posters are done.
                    var spins = 0
                    while tracker.state.withLock({ $0.delivered }) == 0 && !postersDone.load(ordering: .relaxed)
                        && spins < 100_000
                    {
                        spins += 1
                        sched_yield()
                    }
                    token.cancel()
                    tracker.cancelReturned.store(true, ordering: .releasing)
                    churned.withLock { $0.append((tracker, target?.isPosting ?? false)) }
                    round += 1
                }
            }
        }

        await onThreads(Self.posters) { poster in
            for sequence in 0..<Self.postsPerPoster {
                hub.post(Ping(value: poster * 1_000_000 + sequence))
            }
        }
        postersDone.store(true, ordering: .relaxed)
        stop.store(true, ordering: .relaxed)
        await churn.value
        // Posted after every poster finished: when it has reached everyone, so has everything else.
        let report = await hub.postAndWait(Ping(value: -1))
        #expect(report.deliveredCount == persistent.count)

        for tracker in persistent {
            let state = tracker.state.withLock { $0 }
            #expect(state.delivered == Self.posters * Self.postsPerPoster, "\(tracker.name)")
            #expect(state.gaps == 0, "\(tracker.name)")
            #expect(state.inversions == 0, "\(tracker.name)")
            #expect(state.overlaps == 0, "\(tracker.name)")
            #expect(state.last == [Int](repeating: Self.postsPerPoster - 1, count: Self.posters), "\(tracker.name)")
        }
        let churnedTrackers = churned.withLock { $0 }
        #expect(churnedTrackers.count > targets.count)
        for (tracker, isPosting) in churnedTrackers {
            let state = tracker.state.withLock { $0 }
            #expect(state.inversions == 0, "\(tracker.name)")
            #expect(state.overlaps == 0, "\(tracker.name)")
            // A call already admitted when cancel() returned may still run: one per lane, or one
            // per posting thread for posting-thread observers. Nothing queued runs after cancel.
            #expect(state.lateStarts <= (isPosting ? Self.posters : 1), "\(tracker.name)")
        }
        #expect(hub.observerCount(of: Ping.self) == persistent.count)
        withExtendedLifetime(tokens) {}
    }

    @Test("postAndWait from 4 threads at once reaches every observer once and in order", .timeLimit(.minutes(5)))
    func waitingPostsUnderChurn() async {
        let hub = NotificationHub()
        let store = Store()
        let targets = Self.targets(store: store).filter { $0.0 != "main" }  // posters block: keep main free
        let trackers = targets.map { Tracker(name: $0.0, persistent: true) }
        let tokens = zip(targets, trackers).map { Self.observe(hub, $1, target: $0.1, store: store) }
        let perThread = 2_000
        let reports = Log<Int>()
        await onThreads(Self.posters) { poster in
            for sequence in 0..<perThread {
                let report = hub.postAndWait(Ping(value: poster * 1_000_000 + sequence))
                reports.append(report.deliveredCount)
            }
        }
        #expect(reports.count == Self.posters * perThread)
        #expect(reports.values.allSatisfy { $0 == trackers.count })
        for tracker in trackers {
            let state = tracker.state.withLock { $0 }
            #expect(state.delivered == Self.posters * perThread, "\(tracker.name)")
            #expect(state.gaps == 0 && state.inversions == 0 && state.overlaps == 0, "\(tracker.name)")
        }
        withExtendedLifetime(tokens) {}
    }
}
