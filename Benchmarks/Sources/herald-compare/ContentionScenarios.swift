import Dispatch
import Foundation
import Herald
import Synchronization

/// Registration churn and concurrent posting: what observe + cancel costs, alone and while another
/// thread posts, and how much a second posting thread slows each post.
@MainActor
struct ContentionScenarios {
    let settings: Settings
    let sink = Sink()

    // MARK: Observe + cancel

    /// What another thread does while the main thread observes and cancels.
    enum Background: CaseIterable {
        case none
        /// Posts a type (a name) that the churned observer does not observe.
        case otherType
        /// Posts the churned observer's own type (name).
        case sameType

        var title: String {
            switch self {
            case .none: "alone"
            case .otherType: "while another thread posts another type (name)"
            case .sameType: "while another thread posts the same type (name)"
            }
        }
    }

    struct ChurnResult {
        var section: Section
        var background: Background
        var herald: Double?
        var foundation: Double?
    }

    /// Observe + cancel of one posting-thread observer, against `addObserver` + `removeObserver`.
    ///
    /// Under load, the background thread posts to whichever contender is being timed (each
    /// contender aims it at its own hub or center as its sample starts), and a sample is one whole
    /// slice rather than the best of several.
    func observeAndCancel(_ background: Background) -> ChurnResult {
        let sink = self.sink

        // Each system has one permanent observer of the churned type and one of the other type, so
        // that the background posts deliver something.
        let hub = NotificationHub()
        let hubObservers = [
            hub.observe(Ping.self) { note in sink.add(note.value) },
            hub.observe(Tick.self) { note in sink.add(note.sequence) },
        ]
        let center = NotificationCenter()
        let centerObservers = [
            center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in sink.add(1) },
            center.addObserver(forName: .tick, object: nil, queue: nil) { @Sendable _ in sink.add(1) },
        ]

        let poster: BackgroundPoster?
        switch background {
        case .none:
            poster = nil
        case .otherType:
            poster = BackgroundPoster(
                herald: { i in hub.post(Tick(sequence: i)) },
                foundation: { _ in center.post(name: .tick, object: nil) })
        case .sameType:
            poster = BackgroundPoster(
                herald: { i in hub.post(Ping(value: i)) },
                foundation: { _ in center.post(name: .ping, object: nil) })
        }

        let contenders = [
            SyncContender("Herald observe + token.cancel()") { n in
                poster?.aim(at: .herald)
                for _ in 0..<n {
                    let token = hub.observe(Ping.self) { note in sink.add(note.value) }
                    token.cancel()
                }
            },
            SyncContender("NotificationCenter addObserver + removeObserver") { n in
                poster?.aim(at: .foundation)
                for _ in 0..<n {
                    let token = center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in
                        sink.add(1)
                    }
                    center.removeObserver(token)
                }
            },
        ]
        let medians = measureInterleaved(contenders, settings: settings, slices: poster == nil ? nil : 1)
        let posts = poster?.stop()

        var rows = contenders.enumerated().map { index, contender in
            Row(contender: contender.name, value: medians[index], unavailable: contender.unavailable)
        }
        rows[0].isHerald = true
        if let posts {
            rows[0].notes.append("background: \(formatNumber(posts.herald)) posts/µs")
            rows[1].notes.append("background: \(formatNumber(posts.foundation)) posts/µs")
        }
        for observer in hubObservers { observer.cancel() }
        for observer in centerObservers { center.removeObserver(observer) }
        return ChurnResult(
            section: Section(
                title: "Observe + cancel of one observer, \(background.title)", metric: "ns/pair", rows: rows),
            background: background, herald: medians[0], foundation: medians[1])
    }

    // MARK: Two threads posting the same type

    struct TwoPostersResult {
        var section: Section
        /// ns per post on 2 concurrent posting threads / ns per post on 1.
        var heraldSlowdown: Double?
        var foundationSlowdown: Double?
        /// The same for a direct closure call that shares nothing: the machine's own slowdown.
        var controlSlowdown: Double?
    }

    /// The cost per post when 2 threads post the same type at once, against 1 thread alone.
    ///
    /// The observer reads the payload and writes nothing shared: two threads writing one counter
    /// would measure that counter's cache line, not the hub.
    func twoPosters() -> TwoPostersResult {
        let sink = self.sink
        let hub = NotificationHub()
        let token = hub.observe(Ping.self) { note in
            if note.value < 0 { sink.add(note.value) }  // never true: the posts count up from 0
        }
        let center = NotificationCenter()
        let centerToken = center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable note in
            if note.object != nil { sink.add(1) }  // never true: the posts have no object
        }
        // The control: a call of a closure that shares nothing. Its slowdown is the machine's own
        // (two cores that are not free, shared caches, frequency), which no hub can beat.
        let direct: @Sendable (Ping) -> Void = opaque({ @Sendable note in
            if note.value < 0 { sink.add(note.value) }
        })
        let directCall: @Sendable (Int) -> Void = { i in direct(Ping(value: i)) }
        let heraldPost: @Sendable (Int) -> Void = { i in hub.post(Ping(value: i)) }
        let foundationPost: @Sendable (Int) -> Void = { _ in center.post(name: .ping, object: nil) }

        // Posts per thread in one sample: enough for about one sample's duration on one thread.
        func postsPerSample(_ post: @Sendable (Int) -> Void) -> Int {
            let probe = 10_000
            let start = nowNanoseconds()
            for i in 0..<probe { post(i) }
            let perPost = Double(nowNanoseconds() - start) / Double(probe)
            return max(1_000, Int(Double(settings.sampleNanoseconds) / perPost))
        }
        let directCount = postsPerSample(directCall)
        let heraldCount = postsPerSample(heraldPost)
        let foundationCount = postsPerSample(foundationPost)

        let runs: [(name: String, threads: Int, count: Int, post: @Sendable (Int) -> Void)] = [
            ("Herald post, 1 thread", 1, heraldCount, heraldPost),
            ("Herald post, 2 threads at once", 2, heraldCount, heraldPost),
            ("NotificationCenter.post, 1 thread", 1, foundationCount, foundationPost),
            ("NotificationCenter.post, 2 threads at once", 2, foundationCount, foundationPost),
            ("control: direct closure call, 1 thread", 1, directCount, directCall),
            ("control: direct closure call, 2 threads at once", 2, directCount, directCall),
        ]
        var samples = [[Double]](repeating: [], count: runs.count)
        for round in 0..<settings.syncRounds {
            for offset in 0..<runs.count {
                let index = (offset + round) % runs.count
                let run = runs[index]
                samples[index].append(timeConcurrentPosters(threads: run.threads, postsEach: run.count, post: run.post))
            }
        }
        token.cancel()
        center.removeObserver(centerToken)

        // The slowdown pairs the samples of each round (taken a few milliseconds apart), so that a
        // change in the machine's load between rounds does not pass for a slowdown.
        func slowdown(one: Int, two: Int) -> Double {
            median(zip(samples[two], samples[one]).map { $0 / $1 })
        }
        let medians = samples.map(median)
        let heraldSlowdown = slowdown(one: 0, two: 1)
        let foundationSlowdown = slowdown(one: 2, two: 3)
        let controlSlowdown = slowdown(one: 4, two: 5)
        var rows = runs.enumerated().map { index, run in Row(contender: run.name, value: medians[index]) }
        rows[1].isHerald = true
        rows[1].notes.append("\(formatRatio(heraldSlowdown)) of 1 thread (median of the rounds' ratios)")
        rows[3].notes.append("\(formatRatio(foundationSlowdown)) of 1 thread (median of the rounds' ratios)")
        rows[5].notes.append("\(formatRatio(controlSlowdown)) of 1 thread (median of the rounds' ratios)")
        return TwoPostersResult(
            section: Section(
                title: "Two threads posting the same type (name) to 1 observer, each post timed on its own thread",
                metric: "ns/post", rows: rows),
            heraldSlowdown: heraldSlowdown, foundationSlowdown: foundationSlowdown, controlSlowdown: controlSlowdown)
    }
}

/// Starts `threads` threads at once, each making `postsEach` posts, and returns the mean over the
/// threads of each one's ns per post (its own wall time from the common start to its last post).
func timeConcurrentPosters(threads: Int, postsEach: Int, post: @escaping @Sendable (Int) -> Void) -> Double {
    let gate = StartGate()
    let elapsed = Mutex<[UInt64]>([])
    let finished = DispatchSemaphore(value: 0)
    for _ in 0..<threads {
        let thread = Thread {
            gate.arriveAndWait()
            let start = nowNanoseconds()
            for i in 0..<postsEach { post(i) }
            let time = nowNanoseconds() - start
            elapsed.withLock { $0.append(time) }
            finished.signal()
        }
        thread.start()
    }
    gate.open(whenArrived: threads)
    for _ in 0..<threads { finished.wait() }
    let times = elapsed.withLock { $0 }
    return times.map { Double($0) / Double(postsEach) }.reduce(0, +) / Double(times.count)
}

/// Lets threads start their timed work at the same moment: each spins at the gate until it opens.
final class StartGate: Sendable {
    private let arrived = Atomic<Int>(0)
    private let isOpen = Atomic<Bool>(false)

    func arriveAndWait() {
        arrived.add(1, ordering: .releasing)
        while !isOpen.load(ordering: .acquiring) {}
    }

    /// Opens the gate once `count` threads wait at it.
    func open(whenArrived count: Int) {
        while arrived.load(ordering: .acquiring) < count {}
        isOpen.store(true, ordering: .releasing)
    }
}

/// A thread that posts in a loop to whichever system is being timed, until stopped.
final class BackgroundPoster: Sendable {
    enum Aim: Int {
        case herald = 0
        case foundation = 1
        case stop = 2
    }

    private let aim = Atomic<Int>(Aim.herald.rawValue)
    private let heraldPosts = Atomic<Int>(0)
    private let foundationPosts = Atomic<Int>(0)
    private let stopped = DispatchSemaphore(value: 0)
    /// How long the thread was aimed at each system, and since when at the current one (kept by
    /// the thread that aims it).
    private let aimedTime = Mutex<(herald: UInt64, foundation: UInt64, since: UInt64)>((0, 0, nowNanoseconds()))

    /// Starts posting with `herald`; `aim(at:)` switches between the two.
    init(herald: @escaping @Sendable (Int) -> Void, foundation: @escaping @Sendable (Int) -> Void) {
        let thread = Thread { [self] in
            var i = 0
            while true {
                switch Aim(rawValue: aim.load(ordering: .relaxed)) {
                case .herald?:
                    for _ in 0..<64 {
                        herald(i)
                        i &+= 1
                    }
                    heraldPosts.store(heraldPosts.load(ordering: .relaxed) + 64, ordering: .relaxed)
                case .foundation?:
                    for _ in 0..<64 {
                        foundation(i)
                        i &+= 1
                    }
                    foundationPosts.store(foundationPosts.load(ordering: .relaxed) + 64, ordering: .relaxed)
                default:
                    stopped.signal()
                    return
                }
            }
        }
        thread.start()
    }

    func aim(at target: Aim) {
        let previous = Aim(rawValue: aim.exchange(target.rawValue, ordering: .relaxed))
        aimedTime.withLock { time in
            let now = nowNanoseconds()
            switch previous {
            case .herald?: time.herald += now - time.since
            case .foundation?: time.foundation += now - time.since
            default: break
            }
            time.since = now
        }
    }

    /// Stops the thread and returns how many posts it made to each system, per microsecond aimed
    /// at it: a reader can tell whether the thread ran while a contender was timed, which on a
    /// busy machine it may not.
    func stop() -> (herald: Double, foundation: Double) {
        aim(at: .stop)
        stopped.wait()
        let time = aimedTime.withLock { $0 }
        return (
            Double(heraldPosts.load(ordering: .relaxed)) / (Double(time.herald) / 1_000),
            Double(foundationPosts.load(ordering: .relaxed)) / (Double(time.foundation) / 1_000)
        )
    }
}
