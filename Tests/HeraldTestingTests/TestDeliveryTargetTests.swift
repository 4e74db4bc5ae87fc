import Herald
import HeraldTesting
import Synchronization
import Testing

private struct Ping: TypedNotification, Equatable {
    let value: Int
}

/// A thread-safe log of what jobs did.
private final class Log: Sendable {
    private let entries = Mutex<[String]>([])

    func append(_ entry: String) {
        entries.withLock { $0.append(entry) }
    }

    var all: [String] { entries.withLock { $0 } }
}

@Suite("TestDeliveryTarget")
struct TestDeliveryTargetTests {
    @Test("Enqueued work waits until the test runs it")
    func workWaits() {
        let target = TestDeliveryTarget()
        let log = Log()
        target.enqueue { log.append("a") }
        target.target.perform { log.append("b") }
        #expect(log.all.isEmpty)
        #expect(target.pendingCount == 2)
        #expect(target.dueCount == 2)
        #expect(target.runNext())
        #expect(log.all == ["a"])
        #expect(target.runNext())
        #expect(log.all == ["a", "b"])
        #expect(!target.runNext(), "nothing else was due")
        #expect(target.executedCount == 2)
    }

    @Test("runUntilIdle runs work that jobs enqueue, in FIFO order")
    func runUntilIdleRunsNestedWork() {
        let target = TestDeliveryTarget()
        let log = Log()
        target.enqueue {
            log.append("first")
            target.enqueue { log.append("third") }
        }
        target.enqueue { log.append("second") }
        #expect(target.runUntilIdle() == 3)
        #expect(log.all == ["first", "second", "third"])
        #expect(target.pendingCount == 0)
    }

    @Test("Delayed work runs when the clock reaches it, by due time and then by enqueue order")
    func delayedWorkOrder() {
        let target = TestDeliveryTarget()
        let log = Log()
        target.enqueue(after: .seconds(2)) { log.append("2s at \(target.now)") }
        target.enqueue(after: .seconds(1)) { log.append("1s-a at \(target.now)") }
        target.enqueue(after: .seconds(1)) { log.append("1s-b at \(target.now)") }
        target.enqueue { log.append("now") }
        #expect(target.nextDueTime == .zero)

        #expect(target.runUntilIdle() == 1, "delayed work is not due yet")
        #expect(log.all == ["now"])

        #expect(target.advance(by: .milliseconds(999)) == 0)
        #expect(target.now == .milliseconds(999))

        #expect(target.advance(by: .seconds(5)) == 3)
        #expect(log.all == ["now", "1s-a at 1.0 seconds", "1s-b at 1.0 seconds", "2s at 2.0 seconds"])
        #expect(target.now == .milliseconds(5_999))
    }

    @Test("Work enqueued with a delay by a job is due relative to the job's due time")
    func delaysAreRelativeToTheRunningJob() {
        let target = TestDeliveryTarget()
        let log = Log()
        target.enqueue(after: .seconds(1)) {
            target.enqueue(after: .seconds(1)) { log.append("at \(target.now)") }
        }
        target.advance(by: .seconds(10))
        #expect(log.all == ["at 2.0 seconds"])
    }

    @Test("runAll runs delayed work too, moving the clock to each job")
    func runAllRunsEverything() {
        let target = TestDeliveryTarget()
        let log = Log()
        target.target.perform(after: .seconds(3)) { log.append("3") }
        target.target.perform(after: .seconds(1)) { log.append("1") }
        #expect(target.runAll() == 2)
        #expect(log.all == ["1", "3"])
        #expect(target.now == .seconds(3))
        target.expectNoPendingWork()
    }

    @Test("Going back in time or by a negative duration runs only what is already due")
    func clockNeverGoesBack() {
        let target = TestDeliveryTarget()
        target.advance(by: .seconds(5))
        target.advance(to: .seconds(1))
        target.advance(by: .seconds(-3))
        #expect(target.now == .seconds(5))
    }

    @Test("isCurrent is true only while one of its jobs runs")
    func isCurrentDuringJobs() {
        let target = TestDeliveryTarget()
        let other = TestDeliveryTarget()
        let inside = Mutex<[Bool]>([])
        target.enqueue { inside.withLock { $0 += [target.isCurrent, other.isCurrent] } }
        #expect(!target.isCurrent)
        target.runUntilIdle()
        #expect(inside.withLock { $0 } == [true, false])
        #expect(!target.isCurrent)
    }

    @Test("A hub observer on the target receives posts only when the test runs it")
    func hubObserverOnTestTarget() {
        let hub = NotificationHub()
        let target = TestDeliveryTarget()
        let log = Log()
        let token = hub.observe(Ping.self, on: target.target) { log.append("ping \($0.value)") }
        hub.post(Ping(value: 1))
        hub.post(Ping(value: 2))
        #expect(log.all.isEmpty)
        #expect(target.pendingCount == 1, "one drain job for the burst")
        target.runUntilIdle()
        #expect(log.all == ["ping 1", "ping 2"])
        token.cancel()
    }

    @Test("postAndWait from inside a job runs the target's observers inline instead of waiting")
    func postAndWaitInsideJobRunsInline() {
        let hub = NotificationHub()
        let target = TestDeliveryTarget()
        let log = Log()
        let token = hub.observe(Ping.self, on: target.target) { log.append("ping \($0.value)") }
        target.enqueue {
            let report = hub.postAndWait(Ping(value: 1))
            log.append("returned after \(report.deliveredCount)")
        }
        target.runUntilIdle()
        #expect(log.all == ["ping 1", "returned after 1"])
        target.expectNoPendingWork()
        token.cancel()
    }

    @Test("performAndWait from inside a job runs inline and returns the value")
    func performAndWaitInsideJob() {
        let target = TestDeliveryTarget()
        let result = Mutex<Int?>(nil)
        target.enqueue {
            let value = target.target.performAndWait { 6 * 7 }
            result.withLock { $0 = value }
        }
        target.runUntilIdle()
        #expect(result.withLock { $0 } == 42)
    }

    @Test("expectNoPendingWork passes when the queue is empty and reports what is left otherwise")
    func expectNoPendingWorkReports() {
        let target = TestDeliveryTarget(name: "main")
        #expect(target.expectNoPendingWork())
        target.enqueue {}
        target.enqueue(after: .seconds(2)) {}
        withKnownIssue {
            #expect(!target.expectNoPendingWork())
        } matching: { issue in
            issue.comments.contains { comment in
                comment.rawValue.contains("TestDeliveryTarget(main)")
                    && comment.rawValue.contains("found 2 jobs: 1 due now")
                    && comment.rawValue.contains("1 due later, the first at 2.0 seconds")
            }
        }
    }

    @Test("runUntilIdle stops and reports work that keeps enqueueing work")
    func runawayWorkIsReported() {
        let target = TestDeliveryTarget()
        let stopped = Atomic<Bool>(false)
        @Sendable func forever() { target.enqueue { if !stopped.load(ordering: .relaxed) { forever() } } }
        forever()
        withKnownIssue {
            #expect(target.runUntilIdle(maxJobs: 50) == 50)
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("work keeps enqueueing work") }
        }
        #expect(target.pendingCount == 1)
        // The pending job holds the target: let it run once without enqueueing, to end the cycle.
        stopped.store(true, ordering: .relaxed)
        #expect(target.runNext())
        #expect(target.pendingCount == 0)
    }
}
