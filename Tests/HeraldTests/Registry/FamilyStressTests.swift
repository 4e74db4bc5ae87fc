import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

protocol Sequenced: TypedNotification {
    var value: Int { get }
}

struct SequencedA: Sequenced {
    var value: Int
}

struct SequencedB: Sequenced {
    var value: Int
}

/// Families under load: `.ci/run` runs it under ThreadSanitizer with the rest of the suite.
@Suite("Family stress")
struct FamilyStressTests {
    static let posters = 4
    static let postsPerPoster = 20_000

    @Test(
        "4 threads posting two types of a family reach family observers and taps exactly once, in order, under churn",
        .timeLimit(.minutes(10)))
    func familiesUnderChurn() async {
        let hub = NotificationHub()
        let store = Store()
        let targets = StressTests.targets(store: store).compactMap { name, target in target.map { (name, $0) } }
        let persistent = targets.map { StressTests.Tracker(name: "family \($0.0)", persistent: true) }
        var tokens = zip(targets, persistent).map { target, tracker in
            Self.observeFamily(hub, tracker, on: target.1)
        }
        let tap = StressTests.Tracker(name: "tap", persistent: true)
        tokens.append(
            hub.observeAll(on: .queue(DispatchQueue(label: "family.stress.tap"))) { posted in
                guard let note = posted.notification as? any Sequenced else { return }
                tap.see(Ping(value: note.value), overlapCheck: true)
                tap.leave(overlapCheck: true)
            })
        let stop = Atomic<Bool>(false)
        let churned = Locked<[StressTests.Tracker]>([])
        // Churn: family observers and taps come and go while the posters run.
        let churn = Task.detached {
            await onNewThread {
                var round = 0
                while !stop.load(ordering: .relaxed) || round < 2 * targets.count {
                    let tracker = StressTests.Tracker(name: "churn \(round)", persistent: false)
                    let token: ObservationToken
                    if round.isMultiple(of: 3) {
                        token = hub.observeAll(on: targets[round % targets.count].1) { posted in
                            guard let note = posted.notification as? any Sequenced else { return }
                            tracker.see(Ping(value: note.value), overlapCheck: false)
                        }
                    } else {
                        token = Self.observeFamily(hub, tracker, on: targets[round % targets.count].1)
                    }
                    for _ in 0..<200 { sched_yield() }
                    token.cancel()
                    tracker.cancelReturned.store(true, ordering: .releasing)
                    churned.withLock { $0.append(tracker) }
                    round += 1
                }
            }
        }
        await onThreads(Self.posters) { poster in
            for sequence in 0..<Self.postsPerPoster {
                let value = poster * 1_000_000 + sequence
                if sequence.isMultiple(of: 2) {
                    hub.post(SequencedA(value: value))
                } else {
                    hub.post(SequencedB(value: value))
                }
            }
        }
        stop.store(true, ordering: .relaxed)
        await churn.value
        let report = await hub.postAndWait(SequencedA(value: -1))
        #expect(report.deliveredCount == persistent.count)
        try? await hub.waitUntilIdle()

        for tracker in persistent + [tap] {
            let state = tracker.state.withLock { $0 }
            #expect(state.delivered == Self.posters * Self.postsPerPoster, "\(tracker.name)")
            #expect(state.gaps == 0, "\(tracker.name)")
            #expect(state.inversions == 0, "\(tracker.name)")
            #expect(state.overlaps == 0, "\(tracker.name)")
        }
        for tracker in churned.withLock({ $0 }) {
            let state = tracker.state.withLock { $0 }
            #expect(state.inversions == 0, "\(tracker.name)")
        }
        #expect(hub.observerCount(every: (any Sequenced).self) == persistent.count)
        #expect(hub.tapRegistrations().count == 1)
        withExtendedLifetime(tokens) {}
    }

    static func observeFamily(
        _ hub: NotificationHub, _ tracker: StressTests.Tracker, on target: DeliveryTarget
    ) -> ObservationToken {
        let overlapCheck = !target.isPosting
        return hub.observe(every: (any Sequenced).self, on: target) { note in
            tracker.see(Ping(value: note.value), overlapCheck: overlapCheck)
            tracker.leave(overlapCheck: overlapCheck)
        }
    }
}
