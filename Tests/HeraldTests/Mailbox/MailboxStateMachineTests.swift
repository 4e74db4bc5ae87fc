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
            let result = machine.batchRan()
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
        var machine = MailboxStateMachine(lingers: true)
        #expect(machine.append(hold: 0) == .storeAndSchedule)
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.append(hold: 0) == .store)  // arrives while the job runs: a poster is at work
        // The job does not take it: it gives the target back and stays pending, so a post
        // meanwhile schedules nothing and no other drain starts.
        #expect(machine.batchRan() == .reschedule)
        #expect(machine.isJobPending)
        #expect(machine.runner == nil)
        #expect(machine.append(hold: 0) == .store)
        // The job handed back takes both, then lingers once more after emptying the mailbox.
        #expect(machine.jobStarted(on: 1) == .run(2))
        #expect(machine.batchRan() == .reschedule)
        #expect(machine.isJobPending)
        #expect(machine.append(hold: 0) == .store)
        // The lingering job finds that item and runs it, then lingers again.
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.batchRan() == .reschedule)
        // Nothing came: the job ends, and the next post hands a new one to the target.
        #expect(machine.jobStarted(on: 1) == .stop)
        #expect(!machine.isJobPending)
        #expect(!machine.isBusy)
        #expect(machine.append(hold: 0) == .storeAndSchedule)
    }

    @Test("A job handed back that saw the poster pause ends once it has emptied the mailbox, instead of lingering")
    func pausedPosterEndsTheChain() {
        var machine = MailboxStateMachine(lingers: true)
        #expect(machine.append(hold: 0) == .storeAndSchedule)
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.append(hold: 0) == .store)
        #expect(machine.batchRan() == .reschedule)
        #expect(machine.jobStarted(on: 1, posterPaused: true) == .run(1))
        #expect(machine.batchRan() == .stop)
        #expect(!machine.isJobPending)
        #expect(machine.append(hold: 0) == .storeAndSchedule)
    }

    @Test("A job that does not linger takes what arrived during its batch in the same job")
    func nonLingeringJobTakesMore() {
        var machine = MailboxStateMachine()
        #expect(machine.append(hold: 0) == .storeAndSchedule)
        #expect(machine.jobStarted(on: 1) == .run(1))
        #expect(machine.append(hold: 0) == .store)
        #expect(machine.batchRan() == .run(1))
        #expect(machine.batchRan() == .stop)
        #expect(!machine.isJobPending)
    }

    @Test("A job for a lone post ends as soon as the mailbox is empty, lingering or not")
    func loneJobDoesNotLinger() {
        for lingers in [false, true] {
            var machine = MailboxStateMachine(lingers: lingers)
            #expect(machine.append(hold: 0) == .storeAndSchedule)
            #expect(machine.jobStarted(on: 1) == .run(1))
            #expect(machine.batchRan() == .stop)
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
            let result = machine.batchRan()
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
            let result = machine.batchRan()
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
            let result = machine.batchRan()
            #expect(result == .run(1))
        }
        do {
            let result = machine.batchRan()
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
            #expect(result == .run(total))
        }
        #expect(machine.runner == .inline(thread: 5))
        do {
            let result = machine.jobStarted(on: 6)
            #expect(result == .stop)
        }
        do {
            let result = machine.batchRan()
            #expect(result == .stop)
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
        var machine = MailboxStateMachine(batchLimit: 1)
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
        #expect(r5 == .stop, "no inline drain while suspended")
        let r6 = machine.resume()
        #expect(r6, "the next item needs a job")
        let r7 = machine.jobStarted(on: 1)
        #expect(r7 == .run(1))
        let r8 = machine.batchRan()
        #expect(r8 == .run(1), "a handler that did not start a task lets the job go on")
        machine.suspend()
        let last = machine.resume()
        #expect(!last, "nothing left")
        #expect(!machine.isBusy)
    }

    @Test("A mailbox closed while its async handler runs stays busy until the handler returns")
    func closedWhileSuspended() {
        var machine = MailboxStateMachine(batchLimit: 1)
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
        #expect(machine.holds.count == 1)
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
        #expect(machine.holds.count == 0)
        #expect(machine.readyCount == 1)
        let appended = machine.append(hold: 0)  // a removal always comes with an append
        #expect(appended == .storeAndSchedule)
        let started = machine.jobStarted(on: 1)
        #expect(started == .run(2))
    }
}

/// Every transition of ``MailboxStateMachine``, one row each: from a state, an input leads to a
/// new state and an action. The rows cover every input in every state where it is valid; the
/// inputs a state does not allow (a batch end without a drain, a resume without a suspension, a
/// job start without a pending job) stop the process with a precondition failure.
@Suite("MailboxStateMachine transitions")
struct MailboxStateMachineTransitionTests {
    typealias Machine = MailboxStateMachine
    typealias State = Machine.State

    /// An input, as the mailbox gives it.
    enum Input: Sendable {
        case append(hold: UInt)
        /// A policy append; `subjectIndex` answers the machine's question for `.latest(perSubject: true)`.
        case appendUnderPolicy(hold: UInt, subjectIndex: Int?)
        case release(hold: UInt)
        case remove(at: Int)
        case jobStarted(thread: UInt, posterPaused: Bool)
        case inlineStarted(thread: UInt)
        case suspend
        case resume
        case close
        case jobRefused
        case consumerArrived(mayWait: Bool)
        case handToConsumers
        case batchRan(startedCall: Bool)
    }

    /// What an input returned.
    enum Output: Sendable, Equatable {
        case append(Machine.AppendAction)
        case policy(Machine.PolicyAppendAction)
        case schedule(Bool)
        case drain(Machine.DrainAction)
        case dropped(Int)
        case strandedItems(Bool)
        case consumer(Machine.ConsumerAction)
        case handed(Int)
        case nothing
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        var configuration = Machine.Configuration()
        let from: State
        /// The holds in `from`, as (token, item number).
        var holds: [(UInt, Int)] = []
        let input: Input
        let to: State
        /// The holds in `to`.
        var holdsAfter: [(UInt, Int)] = []
        let output: Output

        var testDescription: String { name }
    }

    static func apply(_ input: Input, to machine: inout Machine) -> Output {
        switch input {
        case .append(let hold): return .append(machine.append(hold: hold))
        case .appendUnderPolicy(let hold, let subjectIndex):
            return .policy(machine.append(hold: hold) { subjectIndex })
        case .release(let hold): return .schedule(machine.release(hold: hold))
        case .remove(let offset):
            machine.remove(at: offset)
            return .nothing
        case .jobStarted(let thread, let posterPaused):
            return .drain(machine.jobStarted(on: thread, posterPaused: posterPaused))
        case .inlineStarted(let thread): return .drain(machine.inlineStarted(on: thread))
        case .suspend:
            machine.suspend()
            return .nothing
        case .resume: return .schedule(machine.resume())
        case .close: return .dropped(machine.close())
        case .jobRefused: return .strandedItems(machine.jobRefused())
        case .consumerArrived(let mayWait): return .consumer(machine.consumerArrived(mayWait: mayWait))
        case .handToConsumers: return .handed(machine.handToConsumers())
        case .batchRan(let startedCall): return .drain(machine.batchRan(startedCall: startedCall))
        }
    }

    /// A queue of `appended` items of which `taken` are gone.
    static func queue(_ appended: Int, taken: Int = 0) -> Machine.Queue {
        Machine.Queue(appended: appended, taken: taken)
    }

    /// Holds given as (token, item number).
    static func holds(_ holds: [(UInt, Int)]) -> [Machine.Hold] {
        holds.map { Machine.Hold(token: $0.0, sequence: $0.1) }
    }

    static func job(_ thread: UInt, slice: Int, batches: Int) -> Machine.Drain {
        .job(thread: thread, sliceRemaining: slice, batches: batches)
    }

    static func closed(jobPending: Bool, _ runner: Machine.Runner?) -> State {
        .closed(Machine.Remains(isJobPending: jobPending, runner: runner))
    }

    static let slice = Machine.sliceLimit
    static let lingering = Machine.Configuration(lingers: true)
    static let async = Machine.Configuration(batchLimit: 1)
    static let latest = Machine.Configuration(rule: .latest(perSubject: false))
    static let latestPerSubject = Machine.Configuration(rule: .latest(perSubject: true))
    static let newestZero = Machine.Configuration(rule: .dropOldest(limit: 0))
    static let oldestZero = Machine.Configuration(rule: .dropNewest(limit: 0))
    static let stream = Machine.Configuration(feedsStream: true)
    static let streamNewestZero = Machine.Configuration(rule: .dropOldest(limit: 0), feedsStream: true)
    static let streamNewestOne = Machine.Configuration(rule: .dropOldest(limit: 1), feedsStream: true)

    static let rows: [Row] =
        appendRows + policyRows + releaseRows + jobRows + inlineRows + suspensionRows + closingRows + zeroLimitRows
        + streamRows

    /// A limit of 0 keeps nothing that waits: an item is stored only for a consumer that waits
    /// for it (a handler's drain while its mailbox is idle and empty; a stream's waiting consumer).
    static let zeroLimitRows: [Row] = [
        Row(
            name: "newest(0), idle and empty + item → stored, schedule: the idle drain takes it",
            configuration: newestZero, from: .idle(queue(0)), input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .scheduled(queue(1), .fresh), output: .policy(.store(schedule: true))),
        Row(
            name: "newest(0), scheduled + item → the new one dropped: no drain waits",
            configuration: newestZero, from: .scheduled(queue(1), .fresh),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(1), .fresh),
            output: .policy(.dropNew)),
        Row(
            name: "newest(0), draining with nothing left + item → dropped: the drain runs a handler",
            configuration: newestZero, from: .draining(queue(1, taken: 1), job(1, slice: 127, batches: 1)),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .draining(queue(1, taken: 1), job(1, slice: 127, batches: 1)), output: .policy(.dropNew)),
        Row(
            name: "oldest(0), idle and empty + item → stored, schedule", configuration: oldestZero,
            from: .idle(queue(0)), input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .scheduled(queue(1), .fresh), output: .policy(.store(schedule: true))),
        Row(
            name: "oldest(0), scheduled + item → dropped", configuration: oldestZero,
            from: .scheduled(queue(1), .fresh),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(1), .fresh),
            output: .policy(.dropNew)),
        Row(
            name: "stream newest(0), a consumer waits + item → stored, hand it", configuration: streamNewestZero,
            from: .awaitingItems(queue(0), consumers: 1), input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .awaitingItems(queue(1), consumers: 1), output: .policy(.store(schedule: true))),
        Row(
            name: "stream newest(0), no consumer waits + item → dropped", configuration: streamNewestZero,
            from: .idle(queue(0)), input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .idle(queue(0)),
            output: .policy(.dropNew)),
        Row(
            name: "stream newest(1), a consumer waits behind a held item + item → stored: room for the consumer",
            configuration: streamNewestOne, from: .awaitingItems(queue(1), consumers: 1), holds: [(3, 0)],
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .awaitingItems(queue(2), consumers: 1), holdsAfter: [(3, 0)], output: .policy(.store(schedule: false))),
    ]

    /// A mailbox that feeds a stream: consumers take its items; no drain runs.
    static let streamRows: [Row] = [
        Row(
            name: "stream, idle + ready item → idle: it waits for a consumer", configuration: stream,
            from: .idle(queue(0)), input: .append(hold: 0), to: .idle(queue(1)), output: .append(.store)),
        Row(
            name: "stream, a consumer waits + ready item → hand it", configuration: stream,
            from: .awaitingItems(queue(0), consumers: 1), input: .append(hold: 0),
            to: .awaitingItems(queue(1), consumers: 1), output: .append(.storeAndSchedule)),
        Row(
            name: "stream, a consumer waits + held item → nothing to hand yet", configuration: stream,
            from: .awaitingItems(queue(0), consumers: 1), input: .append(hold: 3),
            to: .awaitingItems(queue(1), consumers: 1), holdsAfter: [(3, 0)], output: .append(.store)),
        Row(
            name: "stream, a consumer waits + release of the held item → hand it", configuration: stream,
            from: .awaitingItems(queue(1), consumers: 1), holds: [(3, 0)], input: .release(hold: 3),
            to: .awaitingItems(queue(1), consumers: 1), output: .schedule(true)),
        Row(
            name: "stream, idle with a ready item + consumer → take", configuration: stream, from: .idle(queue(1)),
            input: .consumerArrived(mayWait: true), to: .idle(queue(1, taken: 1)), output: .consumer(.take)),
        Row(
            name: "stream, idle and empty + consumer → it waits", configuration: stream, from: .idle(queue(0)),
            input: .consumerArrived(mayWait: true), to: .awaitingItems(queue(0), consumers: 1),
            output: .consumer(.wait)),
        Row(
            name: "stream, idle with only a held item + a first look → idle, nothing taken", configuration: stream,
            from: .idle(queue(1)), holds: [(3, 0)], input: .consumerArrived(mayWait: false),
            to: .idle(queue(1)), holdsAfter: [(3, 0)], output: .consumer(.wait)),
        Row(
            name: "stream, a consumer waits + another → two wait", configuration: stream,
            from: .awaitingItems(queue(0), consumers: 1), input: .consumerArrived(mayWait: true),
            to: .awaitingItems(queue(0), consumers: 2), output: .consumer(.wait)),
        Row(
            name: "stream, items to hand + a new consumer → it takes one first", configuration: stream,
            from: .awaitingItems(queue(1), consumers: 1), input: .consumerArrived(mayWait: true),
            to: .awaitingItems(queue(1, taken: 1), consumers: 1), output: .consumer(.take)),
        Row(
            name: "closed + consumer → finished", configuration: stream, from: closed(jobPending: false, nil),
            input: .consumerArrived(mayWait: true), to: closed(jobPending: false, nil), output: .consumer(.finished)),
        Row(
            name: "stream, two consumers wait, one item ready + hand → one handed, one still waits",
            configuration: stream, from: .awaitingItems(queue(1), consumers: 2), input: .handToConsumers,
            to: .awaitingItems(queue(1, taken: 1), consumers: 1), output: .handed(1)),
        Row(
            name: "stream, one consumer waits, two items ready + hand → one handed, idle", configuration: stream,
            from: .awaitingItems(queue(2), consumers: 1), input: .handToConsumers, to: .idle(queue(2, taken: 1)),
            output: .handed(1)),
        Row(
            name: "stream, idle + hand → nothing: no consumer waits", configuration: stream, from: .idle(queue(1)),
            input: .handToConsumers, to: .idle(queue(1)), output: .handed(0)),
        Row(
            name: "stream, consumers wait + close → closed", configuration: stream,
            from: .awaitingItems(queue(1), consumers: 2), holds: [(3, 0)], input: .close,
            to: closed(jobPending: false, nil), output: .dropped(1)),
        Row(
            name: "stream, consumers wait + a refused job → unchanged, nothing stranded", configuration: stream,
            from: .awaitingItems(queue(0), consumers: 1), input: .jobRefused,
            to: .awaitingItems(queue(0), consumers: 1), output: .strandedItems(false)),
    ]

    static let appendRows: [Row] = [
        Row(
            name: "idle + ready item → scheduled, schedule", from: .idle(queue(0)), input: .append(hold: 0),
            to: .scheduled(queue(1), .fresh), output: .append(.storeAndSchedule)),
        Row(
            name: "idle + held item → idle", from: .idle(queue(0)), input: .append(hold: 7),
            to: .idle(queue(1)), holdsAfter: [(7, 0)], output: .append(.store)),
        Row(
            name: "idle + item behind a held one → idle", from: .idle(queue(1)), holds: [(7, 0)],
            input: .append(hold: 0), to: .idle(queue(2)), holdsAfter: [(7, 0)], output: .append(.store)),
        Row(
            name: "scheduled + item → scheduled", from: .scheduled(queue(1), .fresh), input: .append(hold: 0),
            to: .scheduled(queue(2), .fresh), output: .append(.store)),
        Row(
            name: "scheduled (lingering) + held item → scheduled (lingering)",
            from: .scheduled(queue(1), .lingering), input: .append(hold: 3),
            to: .scheduled(queue(2), .lingering), holdsAfter: [(3, 1)], output: .append(.store)),
        Row(
            name: "draining (job) + item → draining",
            from: .draining(queue(1, taken: 1), job(1, slice: 127, batches: 1)),
            input: .append(hold: 0), to: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)),
            output: .append(.store)),
        Row(
            name: "draining (inline) + held item → draining",
            from: .draining(queue(1, taken: 1), .inline(thread: 2, pending: .none)), input: .append(hold: 3),
            to: .draining(queue(2, taken: 1), .inline(thread: 2, pending: .none)), holdsAfter: [(3, 1)],
            output: .append(.store)),
        Row(
            name: "suspended + item → suspended, no job", from: .suspended(queue(1, taken: 1), pending: .none),
            input: .append(hold: 0), to: .suspended(queue(2, taken: 1), pending: .none), output: .append(.store)),
        Row(
            name: "closed + item → rejected", from: closed(jobPending: false, nil), input: .append(hold: 0),
            to: closed(jobPending: false, nil), output: .append(.reject)),
    ]

    static let policyRows: [Row] = [
        Row(
            name: "latest, idle and empty + item → stored, schedule", configuration: latest, from: .idle(queue(0)),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(1), .fresh),
            output: .policy(.store(schedule: true))),
        Row(
            name: "latest, scheduled with a pending item + item → replaces it", configuration: latest,
            from: .scheduled(queue(1), .fresh), input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .scheduled(queue(2, taken: 1), .fresh), output: .policy(.replace(index: 0, schedule: false))),
        Row(
            name: "latest, idle with a held pending item + held item → replaces it, still held",
            configuration: latest, from: .idle(queue(1)), holds: [(4, 0)],
            input: .appendUnderPolicy(hold: 5, subjectIndex: nil), to: .idle(queue(2, taken: 1)), holdsAfter: [(5, 1)],
            output: .policy(.replace(index: 0, schedule: false))),
        Row(
            name: "latest per subject, draining + item of a pending subject → replaces that item",
            configuration: latestPerSubject, from: .draining(queue(3, taken: 1), job(1, slice: 127, batches: 1)),
            input: .appendUnderPolicy(hold: 0, subjectIndex: 0),
            to: .draining(queue(4, taken: 2), job(1, slice: 127, batches: 1)),
            output: .policy(.replace(index: 0, schedule: false))),
        Row(
            name: "latest per subject, draining + item of a subject in the middle → replaces it, later ones move up",
            configuration: latestPerSubject, from: .draining(queue(4, taken: 1), job(1, slice: 127, batches: 1)),
            input: .appendUnderPolicy(hold: 0, subjectIndex: 1),
            to: .draining(queue(4, taken: 1), job(1, slice: 127, batches: 1)),
            output: .policy(.replace(index: 1, schedule: false))),
        Row(
            name: "latest per subject, idle + item of a new subject → stored, schedule",
            configuration: latestPerSubject, from: .idle(queue(0)),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .scheduled(queue(1), .fresh), output: .policy(.store(schedule: true))),
        Row(
            name: "latest, closed + item → rejected", configuration: latestPerSubject,
            from: closed(jobPending: true, nil),
            input: .appendUnderPolicy(hold: 0, subjectIndex: 0), to: closed(jobPending: true, nil),
            output: .policy(.reject)),
        Row(
            name: "bufferingNewest(2), idle and full of held items + item → drops the oldest",
            configuration: Machine.Configuration(rule: .dropOldest(limit: 2)),
            from: .idle(queue(2)), holds: [(5, 0), (6, 1)], input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .idle(queue(3, taken: 1)), holdsAfter: [(6, 1)], output: .policy(.dropOldest(schedule: false))),
        Row(
            name: "bufferingNewest(2), idle and full + item → drops the oldest, schedule",
            configuration: Machine.Configuration(rule: .dropOldest(limit: 2)), from: .idle(queue(2)), holds: [(5, 0)],
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(3, taken: 1), .fresh),
            output: .policy(.dropOldest(schedule: true))),
        Row(
            name: "bufferingNewest(2), scheduled with room + item → stored",
            configuration: Machine.Configuration(rule: .dropOldest(limit: 2)), from: .scheduled(queue(1), .fresh),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(2), .fresh),
            output: .policy(.store(schedule: false))),
        Row(
            name: "bufferingOldest(1), scheduled and full + item → the new one is dropped",
            configuration: Machine.Configuration(rule: .dropNewest(limit: 1)), from: .scheduled(queue(1), .fresh),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(1), .fresh),
            output: .policy(.dropNew)),
        Row(
            name: "bufferingOldest(1), suspended and empty + item → stored, no job",
            configuration: Machine.Configuration(rule: .dropNewest(limit: 1)),
            from: .suspended(queue(1, taken: 1), pending: .none), input: .appendUnderPolicy(hold: 0, subjectIndex: nil),
            to: .suspended(queue(2, taken: 1), pending: .none), output: .policy(.store(schedule: false))),
        Row(
            name: "no policy rule + item → stored as by append", from: .idle(queue(0)),
            input: .appendUnderPolicy(hold: 0, subjectIndex: nil), to: .scheduled(queue(1), .fresh),
            output: .policy(.store(schedule: true))),
        Row(
            name: "remove the front held item of an idle mailbox → taken, no job claimed",
            from: .idle(queue(2)), holds: [(3, 0)], input: .remove(at: 0), to: .idle(queue(2, taken: 1)),
            output: .nothing),
        Row(
            name: "remove a held item in the middle → its hold goes, later holds move up",
            from: .scheduled(queue(3), .fresh), holds: [(5, 1), (6, 2)], input: .remove(at: 1),
            to: .scheduled(queue(2), .fresh), holdsAfter: [(6, 1)], output: .nothing),
    ]

    static let releaseRows: [Row] = [
        Row(
            name: "idle + release of the only hold → scheduled, schedule", from: .idle(queue(1)), holds: [(7, 0)],
            input: .release(hold: 7), to: .scheduled(queue(1), .fresh), output: .schedule(true)),
        Row(
            name: "idle + release of a later hold → idle", from: .idle(queue(2)), holds: [(1, 0), (2, 1)],
            input: .release(hold: 2), to: .idle(queue(2)), holdsAfter: [(1, 0)], output: .schedule(false)),
        Row(
            name: "idle + release of an unknown hold → unchanged", from: .idle(queue(1, taken: 1)),
            input: .release(hold: 42), to: .idle(queue(1, taken: 1)), output: .schedule(false)),
        Row(
            name: "scheduled + release → scheduled", from: .scheduled(queue(2), .lingering), holds: [(9, 1)],
            input: .release(hold: 9), to: .scheduled(queue(2), .lingering), output: .schedule(false)),
        Row(
            name: "draining + release → draining",
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)), holds: [(9, 1)],
            input: .release(hold: 9), to: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)),
            output: .schedule(false)),
        Row(
            name: "suspended + release → suspended, no job",
            from: .suspended(queue(1), pending: .none), holds: [(4, 0)], input: .release(hold: 4),
            to: .suspended(queue(1), pending: .none), output: .schedule(false)),
        Row(
            name: "closed + release → closed", from: closed(jobPending: false, nil), input: .release(hold: 3),
            to: closed(jobPending: false, nil), output: .schedule(false)),
    ]

    static let jobRows: [Row] = [
        Row(
            name: "scheduled + job starts → draining its first batch", from: .scheduled(queue(2), .fresh),
            input: .jobStarted(thread: 1, posterPaused: false),
            to: .draining(queue(2, taken: 2), job(1, slice: slice - 2, batches: 1)), output: .drain(.run(2))),
        Row(
            name: "scheduled (lingering) + job starts → draining, counted as a second batch",
            from: .scheduled(queue(2), .lingering), input: .jobStarted(thread: 1, posterPaused: false),
            to: .draining(queue(2, taken: 2), job(1, slice: slice - 2, batches: 2)), output: .drain(.run(2))),
        Row(
            name: "scheduled (lingering) + job starts, poster paused → draining, a first batch",
            from: .scheduled(queue(2), .lingering), input: .jobStarted(thread: 1, posterPaused: true),
            to: .draining(queue(2, taken: 2), job(1, slice: slice - 2, batches: 1)), output: .drain(.run(2))),
        Row(
            name: "scheduled with more than a slice + job starts → one slice", from: .scheduled(queue(200), .fresh),
            input: .jobStarted(thread: 1, posterPaused: false),
            to: .draining(queue(200, taken: slice), job(1, slice: 0, batches: 1)), output: .drain(.run(slice))),
        Row(
            name: "async, scheduled + job starts → one item", configuration: async, from: .scheduled(queue(2), .fresh),
            input: .jobStarted(thread: 1, posterPaused: false),
            to: .draining(queue(2, taken: 1), job(1, slice: slice - 1, batches: 1)), output: .drain(.run(1))),
        Row(
            name: "scheduled with nothing ready + job starts → idle",
            from: .scheduled(queue(1), .lingering), holds: [(5, 0)], input: .jobStarted(thread: 1, posterPaused: false),
            to: .idle(queue(1)), holdsAfter: [(5, 0)], output: .drain(.stop)),
        Row(
            name: "draining inline with a job pending + job starts → the job ends",
            from: .draining(queue(1, taken: 1), .inline(thread: 5, pending: .lingering)),
            input: .jobStarted(thread: 6, posterPaused: false),
            to: .draining(queue(1, taken: 1), .inline(thread: 5, pending: .none)), output: .drain(.stop)),
        Row(
            name: "suspended with a job pending + job starts → the job ends",
            from: .suspended(queue(2, taken: 1), pending: .fresh), input: .jobStarted(thread: 1, posterPaused: false),
            to: .suspended(queue(2, taken: 1), pending: .none), output: .drain(.stop)),
        Row(
            name: "closed with a job pending + job starts → the job ends",
            from: closed(jobPending: true, .inline(thread: 5)),
            input: .jobStarted(thread: 1, posterPaused: false), to: closed(jobPending: false, .inline(thread: 5)),
            output: .drain(.stop)),
        Row(
            name: "draining (job) + batch ran, more ready → the next batch",
            from: .draining(queue(3, taken: 1), job(1, slice: 127, batches: 1)), input: .batchRan(startedCall: false),
            to: .draining(queue(3, taken: 3), job(1, slice: 125, batches: 2)), output: .drain(.run(2))),
        Row(
            name: "draining (job) + batch ran, nothing left → idle",
            from: .draining(queue(1, taken: 1), job(1, slice: 127, batches: 1)), input: .batchRan(startedCall: false),
            to: .idle(queue(1, taken: 1)), output: .drain(.stop)),
        Row(
            name: "draining (job) + batch ran, only held items left → idle",
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)), holds: [(8, 1)],
            input: .batchRan(startedCall: false),
            to: .idle(queue(2, taken: 1)), holdsAfter: [(8, 1)], output: .drain(.stop)),
        Row(
            name: "draining (job) + slice used up, more ready → scheduled, reschedule",
            from: .draining(queue(200, taken: slice), job(1, slice: 0, batches: 1)),
            input: .batchRan(startedCall: false),
            to: .scheduled(queue(200, taken: slice), .fresh), output: .drain(.reschedule)),
        Row(
            name: "draining (job) + slice used up, nothing ready → idle",
            from: .draining(queue(slice, taken: slice), job(1, slice: 0, batches: 1)),
            input: .batchRan(startedCall: false),
            to: .idle(queue(slice, taken: slice)), output: .drain(.stop)),
        Row(
            name: "lingering, draining (job) + batch ran, more ready → scheduled (lingering)", configuration: lingering,
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)), input: .batchRan(startedCall: false),
            to: .scheduled(queue(2, taken: 1), .lingering), output: .drain(.reschedule)),
        Row(
            name: "lingering, draining (job) after two batches + emptied → scheduled (lingering)",
            configuration: lingering, from: .draining(queue(2, taken: 2), job(1, slice: 126, batches: 2)),
            input: .batchRan(startedCall: false), to: .scheduled(queue(2, taken: 2), .lingering),
            output: .drain(.reschedule)),
        Row(
            name: "lingering, draining (job) after one batch + emptied → idle", configuration: lingering,
            from: .draining(queue(1, taken: 1), job(1, slice: 127, batches: 1)), input: .batchRan(startedCall: false),
            to: .idle(queue(1, taken: 1)), output: .drain(.stop)),
        Row(
            name: "latest, draining (job) + batch ran, more ready → scheduled, one batch per job",
            configuration: latest, from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)),
            input: .batchRan(startedCall: false), to: .scheduled(queue(2, taken: 1), .fresh),
            output: .drain(.reschedule)),
        Row(
            name: "latest, draining (job) + batch ran, nothing ready → idle", configuration: latest,
            from: .draining(queue(1, taken: 1), job(1, slice: 127, batches: 1)), input: .batchRan(startedCall: false),
            to: .idle(queue(1, taken: 1)), output: .drain(.stop)),
        Row(
            name: "closed while its job drained + batch ran → closed, job over",
            from: closed(jobPending: true, .job(thread: 1)),
            input: .batchRan(startedCall: false), to: closed(jobPending: false, nil), output: .drain(.stop)),
        Row(
            name: "scheduled + target refused the job → idle, items stranded", from: .scheduled(queue(2), .fresh),
            input: .jobRefused, to: .idle(queue(2)), output: .strandedItems(true)),
        Row(
            name: "scheduled (lingering), empty + target refused the job → idle",
            from: .scheduled(queue(1, taken: 1), .lingering),
            input: .jobRefused, to: .idle(queue(1, taken: 1)), output: .strandedItems(false)),
        Row(
            name: "draining inline with a job pending + target refused the job → no job pending",
            from: .draining(queue(2, taken: 2), .inline(thread: 5, pending: .fresh)), input: .jobRefused,
            to: .draining(queue(2, taken: 2), .inline(thread: 5, pending: .none)), output: .strandedItems(false)),
        Row(
            name: "suspended with a job pending + target refused the job → no job pending",
            from: .suspended(queue(2, taken: 1), pending: .fresh), input: .jobRefused,
            to: .suspended(queue(2, taken: 1), pending: .none), output: .strandedItems(true)),
        Row(
            name: "closed with a job pending + target refused the job → none pending",
            from: closed(jobPending: true, nil), input: .jobRefused, to: closed(jobPending: false, nil),
            output: .strandedItems(false)),
        Row(
            name: "idle + target refused a job it no longer has → unchanged", from: .idle(queue(0)),
            input: .jobRefused, to: .idle(queue(0)), output: .strandedItems(false)),
    ]

    static let inlineRows: [Row] = [
        Row(
            name: "idle + inline drain starts → draining everything ready", from: .idle(queue(3)),
            input: .inlineStarted(thread: 5), to: .draining(queue(3, taken: 3), .inline(thread: 5, pending: .none)),
            output: .drain(.run(3))),
        Row(
            name: "scheduled (lingering) + inline drain starts → draining unsliced, the job still pending",
            from: .scheduled(queue(300), .lingering), input: .inlineStarted(thread: 5),
            to: .draining(queue(300, taken: 300), .inline(thread: 5, pending: .lingering)), output: .drain(.run(300))),
        Row(
            name: "async, idle + inline drain starts → one item", configuration: async, from: .idle(queue(2)),
            input: .inlineStarted(thread: 5), to: .draining(queue(2, taken: 1), .inline(thread: 5, pending: .none)),
            output: .drain(.run(1))),
        Row(
            name: "idle with only held items + inline drain starts → nothing", from: .idle(queue(1)), holds: [(3, 0)],
            input: .inlineStarted(thread: 5), to: .idle(queue(1)), holdsAfter: [(3, 0)], output: .drain(.stop)),
        Row(
            name: "draining (job) + inline drain starts → nothing",
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)), input: .inlineStarted(thread: 5),
            to: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)), output: .drain(.stop)),
        Row(
            name: "suspended + inline drain starts → nothing", from: .suspended(queue(2, taken: 1), pending: .none),
            input: .inlineStarted(thread: 5), to: .suspended(queue(2, taken: 1), pending: .none), output: .drain(.stop)),
        Row(
            name: "closed + inline drain starts → nothing", from: closed(jobPending: true, nil),
            input: .inlineStarted(thread: 5), to: closed(jobPending: true, nil), output: .drain(.stop)),
        Row(
            name: "draining (inline) + batch ran, more ready → the next batch",
            from: .draining(queue(3, taken: 2), .inline(thread: 5, pending: .none)),
            input: .batchRan(startedCall: false),
            to: .draining(queue(3, taken: 3), .inline(thread: 5, pending: .none)), output: .drain(.run(1))),
        Row(
            name: "draining (inline) + batch ran, nothing ready → idle",
            from: .draining(queue(2, taken: 2), .inline(thread: 5, pending: .none)),
            input: .batchRan(startedCall: false),
            to: .idle(queue(2, taken: 2)), output: .drain(.stop)),
        Row(
            name: "draining (inline) with a job pending + batch ran, nothing ready → scheduled",
            from: .draining(queue(2, taken: 2), .inline(thread: 5, pending: .fresh)),
            input: .batchRan(startedCall: false),
            to: .scheduled(queue(2, taken: 2), .fresh), output: .drain(.stop)),
        Row(
            name: "draining (inline) with a lingering job pending + batch ran → scheduled (lingering)",
            from: .draining(queue(2, taken: 2), .inline(thread: 5, pending: .lingering)),
            input: .batchRan(startedCall: false),
            to: .scheduled(queue(2, taken: 2), .lingering), output: .drain(.stop)),
        Row(
            name: "closed while draining inline + batch ran → closed, drain over",
            from: closed(jobPending: true, .inline(thread: 5)), input: .batchRan(startedCall: false),
            to: closed(jobPending: true, nil), output: .drain(.stop)),
    ]

    static let suspensionRows: [Row] = [
        Row(
            name: "draining (job) + suspend → suspended, the job over", configuration: async,
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)), input: .suspend,
            to: .suspended(queue(2, taken: 1), pending: .none), output: .nothing),
        Row(
            name: "draining (inline) with a job pending + suspend → suspended, the job still pending",
            configuration: async, from: .draining(queue(2, taken: 1), .inline(thread: 5, pending: .lingering)),
            input: .suspend, to: .suspended(queue(2, taken: 1), pending: .lingering), output: .nothing),
        Row(
            name: "closed while its job drained + suspend → closed, suspended, the job over",
            from: closed(jobPending: true, .job(thread: 1)), input: .suspend,
            to: closed(jobPending: false, .suspended), output: .nothing),
        Row(
            name: "closed while draining inline + suspend → closed, suspended",
            from: closed(jobPending: true, .inline(thread: 5)), input: .suspend,
            to: closed(jobPending: true, .suspended), output: .nothing),
        Row(
            name: "async, draining (job) + batch started a call → suspended, stop", configuration: async,
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)),
            input: .batchRan(startedCall: true), to: .suspended(queue(2, taken: 1), pending: .none),
            output: .drain(.stop)),
        Row(
            name: "async, draining (job) + batch started no call → the next item", configuration: async,
            from: .draining(queue(2, taken: 1), job(1, slice: 127, batches: 1)),
            input: .batchRan(startedCall: false),
            to: .draining(queue(2, taken: 2), job(1, slice: 126, batches: 2)), output: .drain(.run(1))),
        Row(
            name: "async, draining (inline) + batch started a call → suspended, stop", configuration: async,
            from: .draining(queue(2, taken: 1), .inline(thread: 5, pending: .none)),
            input: .batchRan(startedCall: true), to: .suspended(queue(2, taken: 1), pending: .none),
            output: .drain(.stop)),
        Row(
            name: "async, draining (inline) + batch started no call → the next item", configuration: async,
            from: .draining(queue(2, taken: 1), .inline(thread: 5, pending: .none)),
            input: .batchRan(startedCall: false),
            to: .draining(queue(2, taken: 2), .inline(thread: 5, pending: .none)), output: .drain(.run(1))),
        Row(
            name: "suspended, empty + resume → idle", from: .suspended(queue(1, taken: 1), pending: .none),
            input: .resume, to: .idle(queue(1, taken: 1)), output: .schedule(false)),
        Row(
            name: "suspended with items + resume → scheduled, schedule",
            from: .suspended(queue(2, taken: 1), pending: .none),
            input: .resume, to: .scheduled(queue(2, taken: 1), .fresh), output: .schedule(true)),
        Row(
            name: "suspended with a job pending + resume → scheduled, no second job",
            from: .suspended(queue(2, taken: 1), pending: .fresh), input: .resume,
            to: .scheduled(queue(2, taken: 1), .fresh), output: .schedule(false)),
        Row(
            name: "suspended with a lingering job pending + resume → scheduled (lingering)",
            from: .suspended(queue(2, taken: 1), pending: .lingering), input: .resume,
            to: .scheduled(queue(2, taken: 1), .lingering), output: .schedule(false)),
        Row(
            name: "closed while suspended + resume → closed, idle", from: closed(jobPending: false, .suspended),
            input: .resume, to: closed(jobPending: false, nil), output: .schedule(false)),
    ]

    static let closingRows: [Row] = [
        Row(
            name: "idle + close → closed, items dropped", from: .idle(queue(2)), input: .close,
            to: closed(jobPending: false, nil), output: .dropped(2)),
        Row(
            name: "scheduled + close → closed, the job still pending",
            from: .scheduled(queue(2), .fresh), holds: [(3, 1)], input: .close, to: closed(jobPending: true, nil),
            output: .dropped(2)),
        Row(
            name: "draining (job) + close → closed, the drain still running",
            from: .draining(queue(3, taken: 1), job(1, slice: 127, batches: 1)), input: .close,
            to: closed(jobPending: true, .job(thread: 1)), output: .dropped(2)),
        Row(
            name: "draining (inline) + close → closed, the drain still running",
            from: .draining(queue(3, taken: 1), .inline(thread: 5, pending: .none)), input: .close,
            to: closed(jobPending: false, .inline(thread: 5)), output: .dropped(2)),
        Row(
            name: "draining (inline) with a job pending + close → closed, both still there",
            from: .draining(queue(3, taken: 1), .inline(thread: 5, pending: .lingering)), input: .close,
            to: closed(jobPending: true, .inline(thread: 5)), output: .dropped(2)),
        Row(
            name: "suspended + close → closed, the call still running",
            from: .suspended(queue(2, taken: 1), pending: .fresh),
            input: .close, to: closed(jobPending: true, .suspended), output: .dropped(1)),
        Row(
            name: "closed + close → unchanged, nothing dropped", from: closed(jobPending: true, nil), input: .close,
            to: closed(jobPending: true, nil), output: .dropped(0)),
    ]

    @Test("Each input in each state leads to the row's state and action", arguments: rows)
    func transition(_ row: Row) {
        var machine = Machine(row.configuration, state: row.from, holds: Self.holds(row.holds))
        let output = Self.apply(row.input, to: &machine)
        #expect(machine.current == row.to)
        #expect(machine.holds == Self.holds(row.holdsAfter))
        #expect(output == row.output)
    }

    @Test("The rows cover every state and every input")
    func rowsCoverEveryCase() {
        func kind(_ state: State) -> String {
            switch state {
            case .idle: return "idle"
            case .scheduled: return "scheduled"
            case .draining(_, .job): return "draining job"
            case .draining(_, .inline): return "draining inline"
            case .suspended: return "suspended"
            case .awaitingItems: return "awaiting items"
            case .closed: return "closed"
            }
        }
        func kind(_ input: Input) -> String { String(String(describing: input).prefix { $0 != "(" }) }
        let states = Set(Self.rows.map { kind($0.from) })
        let inputs = Set(Self.rows.map { kind($0.input) })
        #expect(states.count == 7)
        #expect(inputs.count == 13)
    }

    @Test("Queries read the state: busy, pending job, runner, waiting for the target")
    func queries() {
        let rows:
            [(State, holds: [(UInt, Int)], busy: Bool, pending: Bool, runner: Machine.Runner?, waitsForTarget: Bool)] =
                [
                    (.idle(Self.queue(0)), [], false, false, nil, false),
                    (.idle(Self.queue(1)), [(3, 0)], true, false, nil, false),
                    (.scheduled(Self.queue(1), .fresh), [], true, true, nil, true),
                    (
                        .draining(Self.queue(1, taken: 1), Self.job(1, slice: 127, batches: 1)), [], true, true,
                        .job(thread: 1),
                        false
                    ),
                    (
                        .draining(Self.queue(1, taken: 1), .inline(thread: 5, pending: .none)), [], true, false,
                        .inline(thread: 5),
                        false
                    ),
                    (
                        .draining(Self.queue(1, taken: 1), .inline(thread: 5, pending: .fresh)), [], true, true,
                        .inline(thread: 5),
                        false
                    ),
                    (.suspended(Self.queue(1, taken: 1), pending: .none), [], true, false, .suspended, false),
                    (.awaitingItems(Self.queue(0), consumers: 1), [], false, false, nil, false),
                    (.awaitingItems(Self.queue(1), consumers: 1), [(3, 0)], true, false, nil, false),
                    (Self.closed(jobPending: false, nil), [], false, false, nil, false),
                    (Self.closed(jobPending: true, nil), [], true, true, nil, true),
                    (Self.closed(jobPending: false, .suspended), [], true, false, .suspended, false),
                ]
        for (state, holds, busy, pending, runner, waitsForTarget) in rows {
            let machine = Machine(state: state, holds: Self.holds(holds))
            #expect(machine.isBusy == busy, "\(state)")
            #expect(machine.isJobPending == pending, "\(state)")
            #expect(machine.runner == runner, "\(state)")
            #expect(machine.waitsForTarget == waitsForTarget, "\(state)")
        }
    }
}
