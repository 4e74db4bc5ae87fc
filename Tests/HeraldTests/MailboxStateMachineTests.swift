import Testing

@testable import Herald

@Suite("MailboxStateMachine")
struct MailboxStateMachineTests {
    @Test("A held item is not taken; its release schedules the drain")
    func heldItemWaitsForRelease() {
        var machine = MailboxStateMachine()
        do {
            let result = machine.append(hold: 7)
            #expect(result == .store)
        }
        #expect(machine.readyCount == 0)
        do {
            let result = machine.append(hold: 0)
            #expect(result == .store)
        }  // behind the held one: not ready either
        #expect(machine.readyCount == 0)
        do {
            let result = machine.release(hold: 7)
            #expect(result)
        }
        #expect(machine.readyCount == 2)
        do {
            let result = machine.jobStarted(on: 1)
            #expect(result == .run(2))
        }
        do {
            let result = machine.jobRanBatch()
            #expect(result == .stop)
        }
        #expect(!machine.isJobPending)
    }

    @Test("Items before the first held one are ready; a later release frees the rest")
    func interleavedHolds() {
        var machine = MailboxStateMachine()
        do {
            let result = machine.append(hold: 1)
            #expect(result == .store)
        }
        do {
            let result = machine.append(hold: 2)
            #expect(result == .store)
        }
        do {
            let result = machine.release(hold: 2)
            #expect(!result)
        }  // the first item is still held
        #expect(machine.readyCount == 0)
        do {
            let result = machine.release(hold: 1)
            #expect(result)
        }
        #expect(machine.readyCount == 2)
    }

    @Test(
        "A lingering job that finds items after its batch hands itself back instead of taking them; once it empties the mailbox it lingers once; a lingering job that finds nothing ends"
    )
    func lingeringJob() {
        var machine = MailboxStateMachine()
        machine.lingers = true
        #expect(machine.append(hold: 0) == .storeAndSchedule)
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.append(hold: 0) == .store)  // arrives while the job runs: a poster is at work
        // The job does not take it: it gives the target back and stays pending, so a post
        // meanwhile schedules nothing and no other drain starts.
        #expect(machine.jobRanBatch() == .reschedule)
        #expect(machine.isJobPending)
        #expect(machine.runner == nil)
        #expect(machine.append(hold: 0) == .store)
        // The job handed back takes both, then lingers once more after emptying the mailbox.
        #expect(machine.jobStarted(on: 1) == .run(2))
        #expect(machine.jobRanBatch() == .reschedule)
        #expect(machine.isJobPending)
        #expect(machine.append(hold: 0) == .store)
        // The lingering job finds that item and runs it, then lingers again.
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.jobRanBatch() == .reschedule)
        // Nothing came: the job ends, and the next post hands a new one to the target.
        #expect(machine.jobStarted(on: 1) == .stop)
        #expect(!machine.isJobPending)
        #expect(!machine.isBusy)
        #expect(machine.append(hold: 0) == .storeAndSchedule)
    }

    @Test("A job handed back that saw the poster pause ends once it has emptied the mailbox, instead of lingering")
    func pausedPosterEndsTheChain() {
        var machine = MailboxStateMachine()
        machine.lingers = true
        #expect(machine.append(hold: 0) == .storeAndSchedule)
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.append(hold: 0) == .store)
        #expect(machine.jobRanBatch() == .reschedule)
        #expect(machine.jobStarted(on: 1, posterPaused: true) == .run(1))
        #expect(machine.jobRanBatch() == .stop)
        #expect(!machine.isJobPending)
        #expect(machine.append(hold: 0) == .storeAndSchedule)
    }

    @Test("A job that does not linger takes what arrived during its batch in the same job")
    func nonLingeringJobTakesMore() {
        var machine = MailboxStateMachine()
        #expect(machine.append(hold: 0) == .storeAndSchedule)
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.append(hold: 0) == .store)
        #expect(machine.jobRanBatch() == .run(1))
        #expect(machine.jobRanBatch() == .stop)
        #expect(!machine.isJobPending)
    }

    @Test("A job for a lone post ends as soon as the mailbox is empty, lingering or not")
    func loneJobDoesNotLinger() {
        for lingers in [false, true] {
            var machine = MailboxStateMachine()
            machine.lingers = lingers
            #expect(machine.append(hold: 0) == .storeAndSchedule)
            #expect(machine.jobStarted(on: 1) == .run(1))
            #expect(machine.jobRanBatch() == .stop)
            #expect(!machine.isJobPending)
        }
    }

    @Test("A job runs at most one slice, then asks to be rescheduled")
    func jobIsSliced() {
        var machine = MailboxStateMachine()
        let total = MailboxStateMachine.sliceLimit + 10
        do {
            let result = machine.append(hold: 0)
            #expect(result == .storeAndSchedule)
        }
        for _ in 1..<total {
            let result = machine.append(hold: 0)
            #expect(result == .store)
        }
        do {
            let result = machine.jobStarted(on: 1)
            #expect(result == .run(MailboxStateMachine.sliceLimit))
        }
        do {
            let result = machine.jobRanBatch()
            #expect(result == .reschedule)
        }
        #expect(machine.isJobPending)
        do {
            let result = machine.append(hold: 0)
            #expect(result == .store)
        }  // the job is pending: no second one
        do {
            let result = machine.jobStarted(on: 1)
            #expect(result == .run(11))
        }
        do {
            let result = machine.jobRanBatch()
            #expect(result == .stop)
        }
    }

    @Test("Items appended while a job runs are taken by that job, within its slice")
    func jobTakesWhatArrives() {
        var machine = MailboxStateMachine()
        do {
            let result = machine.append(hold: 0)
            #expect(result == .storeAndSchedule)
        }
        do {
            let result = machine.jobStarted(on: 1)
            #expect(result == .run(1))
        }
        do {
            let result = machine.append(hold: 0)
            #expect(result == .store)
        }
        do {
            let result = machine.jobRanBatch()
            #expect(result == .run(1))
        }
        do {
            let result = machine.jobRanBatch()
            #expect(result == .stop)
        }
    }

    @Test("An inline drain takes everything ready, unsliced; a job that starts meanwhile stops")
    func inlineDrain() {
        var machine = MailboxStateMachine()
        let total = MailboxStateMachine.sliceLimit * 3
        do {
            let result = machine.append(hold: 0)
            #expect(result == .storeAndSchedule)
        }
        for _ in 1..<total { _ = machine.append(hold: 0) }
        do {
            let result = machine.inlineStarted(on: 5)
            #expect(result == total)
        }
        #expect(machine.runner == .inline(thread: 5))
        do {
            let result = machine.jobStarted(on: 6)
            #expect(result == .stop)
        }
        do {
            let result = machine.inlineRanBatch()
            #expect(result == nil)
        }
        #expect(machine.runner == nil)
        #expect(!machine.isJobPending)
    }

    @Test("Closing drops every item, held or not, and rejects later ones")
    func close() {
        var machine = MailboxStateMachine()
        _ = machine.append(hold: 0)
        _ = machine.append(hold: 3)
        do {
            let result = machine.close()
            #expect(result == 2)
        }
        do {
            let result = machine.append(hold: 0)
            #expect(result == .reject)
        }
        do {
            let result = machine.release(hold: 3)
            #expect(!result)
        }
        #expect(machine.count == 0)
    }

    @Test("An async mailbox takes one item per batch, suspends, and schedules its next job on resume")
    func asyncMailboxSuspendsAndResumes() {
        var machine = MailboxStateMachine()
        machine.batchLimit = 1
        let r1 = machine.append(hold: 0)
        #expect(r1 == .storeAndSchedule)
        let r2 = machine.append(hold: 0)
        #expect(r2 == .store)
        let r3 = machine.jobStarted(on: 1)
        #expect(r3 == .run(1))
        machine.suspend()
        #expect(machine.isBusy)
        #expect(!machine.isJobPending, "the target is given back while the handler is suspended")
        let r4 = machine.append(hold: 0)
        #expect(r4 == .store, "no job while suspended")
        let r5 = machine.inlineStarted(on: 2)
        #expect(r5 == nil, "no inline drain while suspended")
        let r6 = machine.resume()
        #expect(r6, "the next item needs a job")
        let r7 = machine.jobStarted(on: 1)
        #expect(r7 == .run(1))
        let r8 = machine.jobRanBatch()
        #expect(r8 == .run(1), "a handler that did not start a task lets the job go on")
        machine.suspend()
        let last = machine.resume()
        #expect(!last, "nothing left")
        #expect(!machine.isBusy)
    }

    @Test("A mailbox closed while its async handler runs stays busy until the handler returns")
    func closedWhileSuspended() {
        var machine = MailboxStateMachine()
        machine.batchLimit = 1
        _ = machine.append(hold: 0)
        _ = machine.append(hold: 0)
        let r9 = machine.jobStarted(on: 1)
        #expect(r9 == .run(1))
        machine.suspend()
        let r10 = machine.close()
        #expect(r10 == 1)
        #expect(machine.isBusy)
        let resumed = machine.resume()
        #expect(!resumed)
        #expect(!machine.isBusy)
    }

    @Test("A policy removes a held item in the middle: its hold goes, and the later holds keep their items")
    func removeHeldItemInTheMiddle() {
        var machine = MailboxStateMachine()
        _ = machine.append(hold: 0)  // 0: ready
        _ = machine.append(hold: 5)  // 1: held by 5
        _ = machine.append(hold: 6)  // 2: held by 6
        #expect(machine.readyCount == 1)
        machine.remove(at: 1)  // the item held by 5
        #expect(machine.count == 2)
        #expect(machine.heldCount == 1)
        let releasedRemoved = machine.release(hold: 5)
        #expect(!releasedRemoved)  // nothing left to release
        #expect(machine.readyCount == 1)
        let releasedLast = machine.release(hold: 6)
        #expect(!releasedLast)  // the job the first item asked for is still pending
        #expect(machine.readyCount == 2)
    }

    @Test("A policy removes the front item, held or not, as if a drain had taken it")
    func removeFrontItem() {
        var machine = MailboxStateMachine()
        _ = machine.append(hold: 3)
        _ = machine.append(hold: 0)
        #expect(machine.readyCount == 0)
        machine.remove(at: 0)
        #expect(machine.count == 1)
        #expect(machine.heldCount == 0)
        #expect(machine.readyCount == 1)
        let appended = machine.append(hold: 0)  // a removal always comes with an append
        #expect(appended == .storeAndSchedule)
        let started = machine.jobStarted(on: 1)
        #expect(started == .run(2))
    }
}
