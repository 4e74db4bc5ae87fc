import Herald
import Testing

@testable import Herald

/// Fair drains: a drain job gives its target back after a bounded slice and goes back behind what
/// the target queued meanwhile; inline drains are never sliced.
@Suite("Fair drains")
struct FairDrainTests {
    static let slice = MailboxStateMachine.sliceLimit

    @Test("A drain job runs one slice, then lets work queued meanwhile run, while the mailbox keeps being refilled")
    func drainGivesTheExecutorBack() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let handled = Counter()
        let token = hub.observe(Ping.self, on: .executor(executor)) { [weak hub] note in
            // Each of the first 200 deliveries posts one more: the mailbox never runs dry meanwhile.
            if handled.increment() <= 200 { hub?.post(Ping(value: note.value + 1000)) }
        }
        for value in 0..<300 {
            hub.post(Ping(value: value))
        }
        #expect(executor.pendingCount == 1)  // one drain job for the whole burst
        let other = Counter()
        executor.enqueue { other.increment() }

        executor.runNext()  // the drain job: one slice
        #expect(handled.count == Self.slice)
        #expect(executor.pendingCount == 2)  // the other work, then the drain job again
        executor.runNext()
        #expect(other.count == 1)
        #expect(handled.count == Self.slice)
        executor.runNext()
        #expect(handled.count == 2 * Self.slice)

        let jobs = executor.runUntilIdle()
        #expect(handled.count == 500)
        #expect(jobs == (500 + Self.slice - 1) / Self.slice - 2)  // still one job per slice
        token.cancel()
    }

    @Test("A waiting post on the drain's own executor drains the whole mailbox inline, unsliced")
    func inlineDrainIsNotSliced() {
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let handled = Counter()
        let token = hub.observe(Ping.self, on: .executor(executor)) { _ in handled.increment() }
        let report = Locked<DeliveryReport?>(nil)
        executor.enqueue {
            let result = hub.postAndWait(Ping(value: -1))
            report.withLock { $0 = result }
        }
        for value in 0..<300 {
            hub.post(Ping(value: value))
        }
        executor.runNext()  // the waiting post, on the executor: everything ready runs inline
        #expect(handled.count == 301)
        #expect(report.withLock { $0 }?.deliveredCount == 1)
        executor.runUntilIdle()  // the drain job finds the mailbox empty
        #expect(handled.count == 301)
        token.cancel()
    }
}
