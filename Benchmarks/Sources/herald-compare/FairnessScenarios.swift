import Dispatch
import Foundation
import Herald
import Synchronization

/// Whether asynchronous delivery leaves room for other work: how long other main-queue work
/// waits while a background thread posts to a `MainActor` observer, and how much CPU a trickle of
/// posts to a serial queue burns.
///
/// The main thread runs its run loop (`runMainQueue`), which drains the main queue: the observer,
/// the probes and the check that ends a run all run there, and nothing blocks it.
@MainActor
struct FairnessScenarios {
    let settings: Settings
    let sink = Sink()

    /// Probes are sent this often.
    static let probeInterval: UInt64 = 1_000_000
    /// The pace of the paced run: one post per 5 µs.
    static let pace: UInt64 = 5_000

    /// A contender of the main-queue runs: posts notification `i` to a main-queue observer that
    /// reports to `check`; `setUp` returns the post and a tear-down.
    struct MainContender {
        let name: String
        let setUp: @MainActor (OrderCheck) -> (post: @Sendable (Int) -> Void, tearDown: () -> Void)
    }

    private func mainContenders() -> [MainContender] {
        [
            MainContender(name: "Herald, observer on MainActor") { check in
                let hub = NotificationHub()
                let token = hub.observe(Tick.self, on: MainActor.shared) { note in check.receive(note.sequence) }
                return ({ i in hub.post(Tick(sequence: i)) }, { token.cancel() })
            },
            MainContender(name: "DispatchQueue.main.async per notification") { check in
                (
                    { i in
                        let note = Tick(sequence: i)
                        DispatchQueue.main.async { check.receive(note.sequence) }
                    }, {}
                )
            },
        ]
    }

    // MARK: Flood

    struct FloodResult {
        var section: Section
        /// Milliseconds, the median over the runs.
        var heraldWorst: Double?
        var heraldMedian: Double?
        var dispatchWorst: Double?
    }

    /// A background thread posts `floodSize` notifications as fast as it can, while a probe block
    /// is sent to the main queue every 1 ms; reports how long the probes waited to run.
    func flood() -> FloodResult {
        let count = settings.floodSize
        let contenders = mainContenders()
        var samples = [[ProbeSample]](repeating: [], count: contenders.count)
        for round in 0..<settings.floodRounds {
            for offset in 0..<contenders.count {
                let index = (offset + round) % contenders.count
                samples[index].append(floodRun(contenders[index], count: count))
            }
        }
        let rows = contenders.enumerated().map { index, contender in
            var row = Row(contender: contender.name, value: median(samples[index].map(\.worstMilliseconds)))
            row.isHerald = index == 0
            row.notes = samples[index].summary(perNotificationOf: count)
            return row
        }
        return FloodResult(
            section: Section(
                title: "Main-queue fairness: a background thread floods 1 main-queue observer with \(count.formatted) "
                    + "posts; a DispatchQueue.main.async probe every 1 ms",
                metric: "ms worst wait", rows: rows),
            heraldWorst: rows[0].value,
            heraldMedian: median(samples[0].map(\.medianMilliseconds)),
            dispatchWorst: rows[1].value)
    }

    private func floodRun(_ contender: MainContender, count: Int) -> ProbeSample {
        let check = OrderCheck(expecting: count, sink: sink)
        let (post, tearDown) = contender.setUp(check)
        let probe = MainQueueProbe(interval: Self.probeInterval)
        let start = nowNanoseconds()
        let poster = Thread {
            for i in 0..<count { post(i) }
        }
        poster.start()
        let completed = runMainQueue(until: { check.isComplete })
        let elapsed = (check.finishedAt ?? nowNanoseconds()) - start
        var sample = probe.finish()
        tearDown()
        sample.nanoseconds = elapsed
        sample.inversions = check.inversions
        sample.lost = completed ? 0 : count - check.received
        return sample
    }

    // MARK: Paced

    struct PacedResult {
        var section: Section
        /// Milliseconds added to the probes' median wait and worst wait, against no posts.
        var heraldAddedMedian: Double?
        var heraldAddedWorst: Double?
        var dispatchAddedMedian: Double?
    }

    /// A background thread posts 1 notification per 5 µs for `pacedNanoseconds`, with the same
    /// probes; and a baseline in which the same thread keeps the same pace but posts nothing.
    func paced() -> PacedResult {
        let duration = settings.pacedNanoseconds
        let contenders = mainContenders()
        // Index 0 is the baseline: no posts.
        var samples = [[ProbeSample]](repeating: [], count: contenders.count + 1)
        for round in 0..<settings.pacedRounds {
            for offset in 0...contenders.count {
                let index = (offset + round) % (contenders.count + 1)
                samples[index].append(pacedRun(index == 0 ? nil : contenders[index - 1], duration: duration))
            }
        }
        let medians = samples.map { median($0.map(\.medianMilliseconds)) }
        let worsts = samples.map { median($0.map(\.worstMilliseconds)) }
        var rows = [Row(contender: "baseline: same pace, no posts", value: medians[0] * 1_000)]
        rows[0].notes.append(String(format: "worst %.2f ms", worsts[0]))
        rows[0].notes.append("\(samples[0].map(\.probes).reduce(0, +).formatted) probes")
        for (offset, contender) in contenders.enumerated() {
            let index = offset + 1
            var row = Row(contender: contender.name, value: medians[index] * 1_000)
            row.isHerald = offset == 0
            row.notes.append(String(format: "%+.3f ms median", medians[index] - medians[0]))
            row.notes.append(String(format: "worst %.2f ms (%+.2f)", worsts[index], worsts[index] - worsts[0]))
            row.notes.append("\(samples[index].map(\.posts).reduce(0, +).formatted) posts")
            let inversions = samples[index].map(\.inversions).reduce(0, +)
            let lost = samples[index].map(\.lost).reduce(0, +)
            row.notes.append("\(inversions) inversions" + (lost > 0 ? ", \(lost.formatted) not delivered" : ""))
            rows.append(row)
        }
        return PacedResult(
            section: Section(
                title: "Main-queue fairness: posts paced 1 per 5 µs for "
                    + String(format: "%.2f s", Double(duration) / 1e9)
                    + " to 1 main-queue observer; a DispatchQueue.main.async probe every 1 ms",
                metric: "µs median wait", rows: rows),
            heraldAddedMedian: medians[1] - medians[0],
            heraldAddedWorst: worsts[1] - worsts[0],
            dispatchAddedMedian: medians[2] - medians[0])
    }

    /// One paced run; `contender` `nil` keeps the pace without posting.
    private func pacedRun(_ contender: MainContender?, duration: UInt64) -> ProbeSample {
        let check = OrderCheck(expecting: .max, sink: sink)
        var post: (@Sendable (Int) -> Void)?
        var tearDown: () -> Void = {}
        if let contender { (post, tearDown) = contender.setUp(check) }
        let probe = MainQueueProbe(interval: Self.probeInterval)
        let pacer = Pacer(every: Self.pace, for: duration, post: post)
        let completed = runMainQueue(until: {
            guard let posts = pacer.posts else { return false }
            return check.received >= posts
        })
        let posts = pacer.posts ?? 0
        var sample = probe.finish()
        tearDown()
        sample.posts = posts
        sample.inversions = check.inversions
        sample.lost = completed ? 0 : posts - check.received
        return sample
    }

    // MARK: Idle CPU

    struct IdleResult {
        var section: Section
        /// Process CPU ns per notification.
        var herald: Double?
        var dispatch: Double?
    }

    /// Bursts of 10 posts to a serial-queue observer with 1 ms pauses between them; the process
    /// CPU time (user + system, `getrusage`) per notification, until the last one was delivered.
    /// In each run the contenders take turns every 100 bursts; the median of the runs is shown.
    func idleCPU() -> IdleResult {
        let bursts = settings.idleBursts
        let count = bursts * 10
        let sink = self.sink
        let queue = DispatchQueue(label: "herald.compare.idle")
        let contenders: [(name: String, setUp: (OrderCheck) -> (post: (Int) -> Void, tearDown: () -> Void))] = [
            (
                "Herald, observer on .queue(serial)",
                { check in
                    let hub = NotificationHub()
                    let token = hub.observe(Tick.self, on: .queue(queue)) { note in check.receive(note.sequence) }
                    return ({ i in hub.post(Tick(sequence: i)) }, { token.cancel() })
                }
            ),
            (
                "DispatchQueue.async per notification",
                { check in
                    (
                        { i in
                            let note = Tick(sequence: i)
                            queue.async { check.receive(note.sequence) }
                        }, {}
                    )
                }
            ),
        ]
        var cpu = [[Double]](repeating: [], count: contenders.count)
        var wall = [[Double]](repeating: [], count: contenders.count)
        var inversions = [Int](repeating: 0, count: contenders.count)
        var lost = [Int](repeating: 0, count: contenders.count)
        // The contenders take turns every `chunk` bursts rather than every round: this machine's
        // speed drifts over seconds, and a drift then weighs on both alike.
        let chunk = min(100, bursts)
        for round in 0..<settings.idleRounds {
            let checks = contenders.map { _ in OrderCheck(expecting: count, sink: sink) }
            let setUps = contenders.indices.map { contenders[$0].setUp(checks[$0]) }
            var cpuTotal = [UInt64](repeating: 0, count: contenders.count)
            var wallTotal = [UInt64](repeating: 0, count: contenders.count)
            for (turn, first) in stride(from: 0, to: bursts, by: chunk).enumerated() {
                for offset in 0..<contenders.count {
                    let index = (offset + turn + round) % contenders.count
                    let post = setUps[index].post
                    let last = min(first + chunk, bursts)
                    let cpuStart = processCPUNanoseconds()
                    let start = nowNanoseconds()
                    for burst in first..<last {
                        for i in (burst * 10)..<(burst * 10 + 10) { post(i) }
                        sleep(untilNanoseconds: nowNanoseconds() + 1_000_000)
                    }
                    // The last pause leaves time for every delivery; on a stalled machine, wait
                    // in pauses too, until they are in or a minute has passed.
                    let deadline = nowNanoseconds() + 60_000_000_000
                    while checks[index].received < last * 10 && nowNanoseconds() < deadline {
                        sleep(untilNanoseconds: nowNanoseconds() + 100_000)
                    }
                    cpuTotal[index] += processCPUNanoseconds() - cpuStart
                    wallTotal[index] += nowNanoseconds() - start
                }
            }
            for index in contenders.indices {
                let completed = checks[index].wait(seconds: 60)
                cpu[index].append(Double(cpuTotal[index]) / Double(count))
                wall[index].append(Double(wallTotal[index]) / 1e9)
                setUps[index].tearDown()
                inversions[index] += checks[index].inversions
                if !completed { lost[index] += count - checks[index].received }
            }
        }
        let rows = contenders.enumerated().map { index, contender in
            var row = Row(contender: contender.name, value: median(cpu[index]))
            row.isHerald = index == 0
            row.notes.append(String(format: "%.2f s a run", median(wall[index])))
            row.notes.append("\(inversions[index]) inversions")
            if lost[index] > 0 { row.notes.append("\(lost[index].formatted) not delivered (timeout)") }
            return row
        }
        return IdleResult(
            section: Section(
                title: "Idle CPU: \(bursts.formatted) bursts of 10 posts to 1 serial-queue observer, 1 ms pauses; "
                    + "process CPU (getrusage, user + system)",
                metric: "CPU ns/notif.", rows: rows),
            herald: rows[0].value, dispatch: rows[1].value)
    }
}

/// A thread that posts one notification per `interval` for `duration`, spinning between posts
/// (a sleep is far coarser than 5 µs); with no `post`, it keeps the pace without posting.
final class Pacer: Sendable {
    private let count = Atomic<Int>(-1)

    init(every interval: UInt64, for duration: UInt64, post: (@Sendable (Int) -> Void)?) {
        let thread = Thread { [self] in
            let end = nowNanoseconds() + duration
            var next = nowNanoseconds() + interval
            var posts = 0
            while next < end {
                while nowNanoseconds() < next {}
                if let post {
                    post(posts)
                    posts += 1
                }
                next = max(next + interval, nowNanoseconds())  // after a stall, resume the pace; no burst
            }
            count.store(posts, ordering: .releasing)
        }
        thread.start()
    }

    /// The posts made, once the pacer has finished; `nil` before.
    var posts: Int? {
        let value = count.load(ordering: .acquiring)
        return value < 0 ? nil : value
    }
}

// MARK: - Probes

/// The waits of one run's probes, and what the run delivered.
struct ProbeSample {
    var probes: Int
    var medianMilliseconds: Double
    var worstMilliseconds: Double
    var posts = 0
    var nanoseconds: UInt64 = 0
    var inversions = 0
    var lost = 0
}

extension [ProbeSample] {
    /// Notes for a row: the median wait and the run's pace, medians over the runs.
    func summary(perNotificationOf count: Int) -> [String] {
        var notes = [
            String(format: "median wait %.3f ms", median(map(\.medianMilliseconds))),
            String(format: "%.0f ns/notification", median(map { Double($0.nanoseconds) / Double(count) })),
            "\(map(\.probes).reduce(0, +).formatted) probes in \(self.count) runs",
            "\(map(\.inversions).reduce(0, +)) inversions",
        ]
        let lost = map(\.lost).reduce(0, +)
        if lost > 0 { notes.append("\(lost.formatted) not delivered (timeout)") }
        return notes
    }
}

/// Sends a block to the main queue every `interval` from a thread of its own, and records how long
/// each waited between being sent and starting to run.
final class MainQueueProbe: Sendable {
    private let waits = Mutex<[UInt64]>([])
    private let sent = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts probing at once.
    init(interval: UInt64) {
        let thread = Thread { [self] in
            var next = nowNanoseconds()
            while !stopping.load(ordering: .relaxed) {
                next = max(next + interval, nowNanoseconds())  // a late probe does not make the next one early
                sleep(untilNanoseconds: next)
                let sentAt = nowNanoseconds()
                sent.add(1, ordering: .relaxed)
                DispatchQueue.main.async {
                    let wait = nowNanoseconds() - sentAt
                    self.waits.withLock { $0.append(wait) }
                }
            }
            stopped.signal()
        }
        thread.start()
    }

    /// Stops probing, runs the main queue until every probe sent has run, and returns their waits.
    @MainActor
    func finish() -> ProbeSample {
        stopping.store(true, ordering: .relaxed)
        stopped.wait()
        let total = sent.load(ordering: .relaxed)
        _ = runMainQueue(until: { waits.withLock { $0.count } >= total })
        let sorted = waits.withLock { $0 }.sorted()
        let milliseconds = sorted.map { Double($0) / 1e6 }
        return ProbeSample(
            probes: sorted.count, medianMilliseconds: median(milliseconds), worstMilliseconds: milliseconds.last ?? .nan
        )
    }
}
