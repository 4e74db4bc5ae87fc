// herald-soak: pushes millions of notifications through every kind of delivery target while
// observers churn, then proves that every delivery that should have happened happened exactly
// once and in order, and that resident memory did not grow.
//
//     swift run -c release --scratch-path .build-harden herald-soak --count 10000000
//
// Options: --count N (data notifications, default 10,000,000), --posters P (posting threads,
// default 2), --window W (posts between two waiting flushes per poster, default 4,096),
// --growth-limit PERCENT (allowed RSS growth after warm-up, default 5).
//
// Memory is bounded by construction: every poster waits for all observers (`postAndWait`) every
// W posts, so no mailbox ever holds more than P × W notifications. The process exits 0 only if
// every count reconciles and RSS at the end is within the limit of RSS after warm-up.
import Dispatch
import Foundation
import Herald
import Synchronization

// MARK: - Options

struct Options {
    var count = 10_000_000
    var posters = 2
    var window = 4_096
    var growthLimitPercent = 5.0
    var trace = false
    /// Whether the soak's dispatch queues target the global concurrent queue (the default) or
    /// libdispatch's overcommit pool.
    var overcommitQueues = false

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var index = 1
        func value(_ name: String) -> String {
            index += 1
            guard index < arguments.count else { fail("missing value for \(name)") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--count": options.count = positive(value(argument), argument)
            case "--posters": options.posters = positive(value(argument), argument)
            case "--window": options.window = positive(value(argument), argument)
            case "--growth-limit":
                guard let limit = Double(value(argument)), limit >= 0 else { fail("bad --growth-limit") }
                options.growthLimitPercent = limit
            case "--trace": options.trace = true
            case "--overcommit-queues": options.overcommitQueues = true
            case "-h", "--help":
                print(
                    "usage: herald-soak [--count N] [--posters P] [--window W] [--growth-limit PERCENT] [--trace]"
                        + " [--overcommit-queues]")
                exit(0)
            default: fail("unknown argument \(argument)")
            }
            index += 1
        }
        return options
    }

    private static func positive(_ text: String, _ name: String) -> Int {
        guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number > 0 else {
            fail("\(name) needs a positive integer, got \(text)")
        }
        return number
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("herald-soak: \(message)\n".utf8))
    exit(64)
}

// MARK: - Notifications

/// The soaked notification. `sequence` counts every post of one poster, data and flushes alike.
struct SoakPing: TypedNotification {
    enum Kind: UInt8, Sendable { case data, flush, final }
    let poster: Int32
    let kind: Kind
    let sequence: Int
}

/// Posted by the churn thread only while an observer of it is registered, so each churned
/// observer of this type must see exactly what the churn thread posted to it.
struct ChurnPing: TypedNotification {
    let round: Int
    let index: Int
}

struct Deliberate: Error {}

// MARK: - Bookkeeping

/// A lock-protected value. `NSLock`, so that the soak also runs clean under ThreadSanitizer.
final class Locked<Value>: @unchecked Sendable {  // Every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Problems found by churned observers, which are gone by the time the report is printed.
let churnViolations = Atomic<Int>(0)
let churnDeliveries = Atomic<Int>(0)
let churnLateStarts = Atomic<Int>(0)
/// Trackers alive right now; a churned observer's tracker dies with the observer's handler.
let liveTrackers = Atomic<Int>(0)

/// What one observer saw, per poster.
final class Tracker: Sendable {
    enum Expectation: Sendable {
        /// Every post of every poster, contiguous.
        case everything
        /// Only some posts (a subject filter): strictly increasing per poster.
        case subset
        /// A churned observer: one contiguous run per poster, nothing after `cancel()` returned
        /// but calls already admitted (at most `lateAllowance`).
        case churned(lateAllowance: Int)
    }

    struct State {
        var last: [Int]
        var delivered = 0
        var flushes = 0
        var violations = 0
        var running = 0
        var lateStarts = 0
    }

    let name: String
    let expectation: Expectation
    let checksOverlap: Bool
    let state: Locked<State>
    let cancelReturned = Atomic<Bool>(false)
    let firstSeen = DispatchSemaphore(value: 0)

    init(name: String, posters: Int, expectation: Expectation, checksOverlap: Bool) {
        self.name = name
        self.expectation = expectation
        self.checksOverlap = checksOverlap
        self.state = Locked(State(last: Array(repeating: -1, count: posters)))
        liveTrackers.add(1, ordering: .relaxed)
    }

    deinit { liveTrackers.subtract(1, ordering: .relaxed) }

    func see(_ note: SoakPing) {
        let late = cancelReturned.load(ordering: .acquiring)
        let (violation, first) = state.withLock { state -> (Bool, Bool) in
            var violation = false
            if checksOverlap {
                state.running += 1
                if state.running > 1 { violation = true }
            }
            state.delivered += 1
            defer { if violation { state.violations += 1 } }
            if note.kind == .final { return (violation, state.delivered == 1) }  // the last post, sequence -1
            let poster = Int(note.poster)
            let previous = state.last[poster]
            switch expectation {
            case .everything:
                if note.sequence != previous + 1 { violation = true }
            case .subset:
                if note.sequence <= previous { violation = true }
            case .churned(let allowance):
                if previous >= 0 && note.sequence != previous + 1 { violation = true }
                if late {
                    state.lateStarts += 1
                    if state.lateStarts > allowance { violation = true }
                }
            }
            state.last[poster] = note.sequence
            if note.kind == .flush { state.flushes += 1 }
            return (violation, state.delivered == 1)
        }
        if case .churned = expectation {
            churnDeliveries.add(1, ordering: .relaxed)
            if violation { churnViolations.add(1, ordering: .relaxed) }
            if late { churnLateStarts.add(1, ordering: .relaxed) }
        }
        if first { firstSeen.signal() }
    }

    func leave() {
        if checksOverlap { state.withLock { $0.running -= 1 } }
    }

    var snapshot: State { state.withLock { $0 } }
}

/// A custom executor over a serial dispatch queue.
final class QueueExecutor: DeliveryExecutor {
    let queue: DispatchQueue
    private let key: DispatchSpecificKeyBox

    init(label: String, target: DispatchQueue?) {
        queue = DispatchQueue(label: label, target: target)
        key = DispatchSpecificKeyBox()
        queue.setSpecific(key: key.key, value: 1)
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) { queue.async(execute: job) }
    var isCurrent: Bool { DispatchQueue.getSpecific(key: key.key) == 1 }
}

final class DispatchSpecificKeyBox: @unchecked Sendable {  // Immutable after creation.
    let key = DispatchSpecificKey<Int>()
}

actor SoakActor {
    private(set) var seen = 0
    func count() { seen += 1 }
}

final class Owner: Sendable {
    init() { liveOwners.add(1, ordering: .relaxed) }
    deinit { liveOwners.subtract(1, ordering: .relaxed) }
}
final class SubjectObject: Sendable {}

/// Resident memory in bytes, from `/proc/self/statm` (0 where there is no procfs).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// A field of `/proc/self/status` in bytes (for `RssAnon:`, `RssFile:` and the like), or 0.
func statusKilobytes(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field) {
        let number = line.dropFirst(field.count).split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 0
        return number * 1_024
    }
    return 0
}

/// The number of threads in this process, from `/proc/self/status` (0 where there is no procfs).
func threadCount() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}

func megabytes(_ bytes: Int) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
}

/// `1234567` as `"1,234,567"`. Written by hand: `NumberFormatter` loads ICU's data, megabytes of
/// resident memory that would land in the middle of the measurement.
func grouped(_ number: Int) -> String {
    let digits = String(number.magnitude)
    var result = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
        result.append(digit)
    }
    return number < 0 ? "-" + result : result
}

// MARK: - Targets

enum TargetKind: CaseIterable {
    case posting, mainActor, serialQueue, concurrentQueue, operationQueue, executor, actor

    var name: String {
        switch self {
        case .posting: return "posting"
        case .mainActor: return "main actor"
        case .serialQueue: return "serial queue"
        case .concurrentQueue: return "concurrent queue"
        case .operationQueue: return "operation queue ×4"
        case .executor: return "executor"
        case .actor: return "actor"
        }
    }
}

struct Targets: Sendable {
    let serial: DispatchQueue
    let concurrent: DispatchQueue
    let operations: OperationQueue
    let executor: QueueExecutor
    let actor = SoakActor()

    /// - Parameter overcommit: Whether the serial queues use libdispatch's overcommit pool (the
    ///   default for a new queue). On Linux that pool grows by a thread whenever work arrives and
    ///   no idle worker wakes at once, and idle workers only exit after 5 s without work, so under
    ///   a steady load it keeps growing (to ~190 threads in a 6-million-post run here), and RSS
    ///   with it. Targeting the global concurrent queue keeps the pool at its size, so that RSS
    ///   measures Herald, not libdispatch's thread cache.
    init(overcommit: Bool) {
        let target: DispatchQueue? = overcommit ? nil : .global()
        serial = DispatchQueue(label: "soak.serial", target: target)
        concurrent = DispatchQueue(label: "soak.concurrent", attributes: .concurrent, target: target)
        executor = QueueExecutor(label: "soak.executor", target: target)
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 4
        operations.name = "soak.operations"
        self.operations = operations
    }

    /// Observes `SoakPing` on `kind` with `tracker`, optionally from a subject or with an owner.
    func observe(
        _ hub: NotificationHub, _ kind: TargetKind, _ tracker: Tracker,
        subject: AnyObject? = nil, owner: Owner? = nil, throwEvery: Int = 0
    ) -> ObservationToken {
        let body: @Sendable (SoakPing) throws -> Void = { note in
            tracker.see(note)
            tracker.leave()
            if throwEvery > 0, note.kind == .data, note.sequence % throwEvery == throwEvery - 1 { throw Deliberate() }
        }
        let target: DeliveryTarget
        switch kind {
        case .posting: target = .posting
        case .serialQueue: target = .queue(serial)
        case .concurrentQueue: target = .queue(concurrent)
        case .operationQueue: target = .operationQueue(operations)
        case .executor: target = .executor(executor)
        case .mainActor:
            if let owner {
                return hub.observe(SoakPing.self, owner: owner, from: subject, on: MainActor.shared) { _, note in
                    MainActor.assertIsolated()
                    try body(note)
                }
            }
            return hub.observe(SoakPing.self, from: subject, on: MainActor.shared) { note in
                MainActor.assertIsolated()
                try body(note)
            }
        case .actor:
            precondition(owner == nil, "no owner form on actors")
            return hub.observe(SoakPing.self, from: subject, on: actor) { actor, note in
                actor.count()
                try body(note)
            }
        }
        if let owner {
            return hub.observe(SoakPing.self, owner: owner, from: subject, on: target) { _, note in try body(note) }
        }
        return hub.observe(SoakPing.self, from: subject, on: target, body)
    }

    /// Observes `ChurnPing` on `kind`, counting into ``churnExactSeen``.
    func observeChurn(_ hub: NotificationHub, _ kind: TargetKind) -> ObservationToken {
        @Sendable func seen() { churnExactSeen.add(1, ordering: .relaxed) }
        switch kind {
        case .posting: return hub.observe(ChurnPing.self) { _ in seen() }
        case .mainActor: return hub.observe(ChurnPing.self, on: MainActor.shared) { _ in seen() }
        case .serialQueue: return hub.observe(ChurnPing.self, on: .queue(serial)) { _ in seen() }
        case .concurrentQueue: return hub.observe(ChurnPing.self, on: .queue(concurrent)) { _ in seen() }
        case .operationQueue: return hub.observe(ChurnPing.self, on: .operationQueue(operations)) { _ in seen() }
        case .executor: return hub.observe(ChurnPing.self, on: .executor(executor)) { _ in seen() }
        case .actor: return hub.observe(ChurnPing.self, on: actor) { _, _ in seen() }
        }
    }
}

let churnExactSeen = Atomic<Int>(0)
/// Owners alive right now: every churned owner must be gone by the end.
let liveOwners = Atomic<Int>(0)

// MARK: - The soak

func runSoak(_ options: Options) -> Int32 {
    let posters = options.posters
    let perPoster = options.count / posters
    let dataPosts = perPoster * posters
    let flushesPerPoster = (perPoster + options.window - 1) / options.window
    let throwEvery = 1_000
    let start = DispatchTime.now()
    // The header also runs every formatting path once, before the warm-up measurement.
    print(
        String(
            format: "herald-soak: %@ data notifications from %d threads, a waited flush every %@ posts; "
                + "RSS at start %@", grouped(options.count), options.posters, grouped(options.window),
            megabytes(residentBytes())) + ", \(threadCount()) threads")
    let hub = NotificationHub()
    let reportedErrors = Atomic<Int>(0)
    let unexpectedErrors = Atomic<Int>(0)
    hub.errorHandler = { failure in
        if failure.error is Deliberate {
            reportedErrors.add(1, ordering: .relaxed)
        } else {
            unexpectedErrors.add(1, ordering: .relaxed)
        }
    }
    let targets = Targets(overcommit: options.overcommitQueues)
    let subjectA = SubjectObject()
    let subjectB = SubjectObject()
    let keptOwner = Owner()

    // Persistent observers: one per target, plus an owner-bound one, a subject-filtered one and a
    // throwing one.
    var persistent: [(Tracker, ObservationToken)] = []
    for kind in TargetKind.allCases {
        let tracker = Tracker(
            name: kind.name, posters: posters, expectation: .everything, checksOverlap: kind != .posting)
        persistent.append((tracker, targets.observe(hub, kind, tracker)))
    }
    let ownerTracker = Tracker(
        name: "owner-bound, serial queue", posters: posters, expectation: .everything, checksOverlap: true)
    persistent.append((ownerTracker, targets.observe(hub, .serialQueue, ownerTracker, owner: keptOwner)))
    let subjectTracker = Tracker(
        name: "from subject A, concurrent", posters: posters, expectation: .subset, checksOverlap: true)
    persistent.append((subjectTracker, targets.observe(hub, .concurrentQueue, subjectTracker, subject: subjectA)))
    let throwingTracker = Tracker(
        name: "throws every 1,000th, op queue", posters: posters, expectation: .everything, checksOverlap: true)
    persistent.append((throwingTracker, targets.observe(hub, .operationQueue, throwingTracker, throwEvery: throwEvery)))
    let unfilteredCount = persistent.count - 1  // all but the subject-filtered one

    // A bounded stream: what it receives plus what it drops must be everything posted.
    let stream = hub.notifications(of: SoakPing.self, bufferingPolicy: .bufferingNewest(1_024))
    let streamReceived = Atomic<Int>(0)
    let streamDone = DispatchSemaphore(value: 0)
    Task.detached {
        for await note in stream {
            streamReceived.add(1, ordering: .relaxed)
            if note.kind == .final { break }
        }
        streamDone.signal()
    }

    // Churn: observers come and go on every target for as long as the posters run.
    let stop = Atomic<Bool>(false)
    let churnRounds = Atomic<Int>(0)
    let churnRegistrations = Atomic<Int>(0)
    let churnExactExpected = Atomic<Int>(0)
    let churnExactMismatches = Atomic<Int>(0)
    let churnFinished = DispatchSemaphore(value: 0)
    Thread {
        var round = 0
        let kinds = TargetKind.allCases
        while !stop.load(ordering: .relaxed) {
            let kind = kinds[round % kinds.count]
            // Most rounds are bursts, which take microseconds; the others wait for a delivery on
            // targets that may have thousands of notifications queued ahead of it.
            switch round % 8 {
            case 0:
                // A churned SoakPing observer: lives until it has seen something, then is cancelled.
                let allowance = kind == .posting ? posters : 1
                let tracker = Tracker(
                    name: "churn", posters: posters, expectation: .churned(lateAllowance: allowance),
                    checksOverlap: kind != .posting)
                let token = targets.observe(hub, kind, tracker)
                while tracker.firstSeen.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
                    if stop.load(ordering: .relaxed) { break }
                }
                token.cancel()
                tracker.cancelReturned.store(true, ordering: .releasing)
            case 2, 6:
                // An exact churned observer: it must see exactly what was posted while it lived.
                let before = churnExactSeen.load(ordering: .relaxed)
                let token = targets.observeChurn(hub, kind)
                let posts = 1 + round % 64
                for index in 0..<posts { hub.post(ChurnPing(round: round, index: index)) }
                let report = hub.postAndWait(ChurnPing(round: round, index: posts))
                token.cancel()
                churnExactExpected.add(posts + 1, ordering: .relaxed)
                let seen = churnExactSeen.load(ordering: .relaxed) - before
                if seen != posts + 1 || report.deliveredCount != 1 { churnExactMismatches.add(1, ordering: .relaxed) }
            case 1, 3, 5, 7:
                // A burst: eight observers on eight targets, cancelled at once, newest first.
                var burst: [(Tracker, ObservationToken)] = []
                for offset in 0..<8 {
                    let burstKind = kinds[(round + offset) % kinds.count]
                    let tracker = Tracker(
                        name: "burst churn", posters: posters,
                        expectation: .churned(lateAllowance: burstKind == .posting ? posters : 1),
                        checksOverlap: burstKind != .posting)
                    burst.append((tracker, targets.observe(hub, burstKind, tracker)))
                }
                churnRegistrations.add(burst.count - 1, ordering: .relaxed)
                for (tracker, token) in burst.reversed() {
                    token.cancel()
                    tracker.cancelReturned.store(true, ordering: .releasing)
                }
            default:
                // An owner-bound observer: ends when its owner goes, and the hub does not keep it.
                var owner: Owner? = Owner()
                let tracker = Tracker(
                    name: "owner churn", posters: posters,
                    expectation: .churned(lateAllowance: kind == .posting ? posters : 1),
                    checksOverlap: kind != .posting && kind != .actor)
                let token = targets.observe(hub, kind == .actor ? .serialQueue : kind, tracker, owner: owner)
                while tracker.firstSeen.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
                    if stop.load(ordering: .relaxed) { break }
                }
                owner = nil
                token.cancel()  // ends it now rather than at the next post
                tracker.cancelReturned.store(true, ordering: .releasing)
            }
            round += 1
            churnRounds.store(round, ordering: .relaxed)
            churnRegistrations.add(1, ordering: .relaxed)
        }
        churnFinished.signal()
    }.start()

    // Posters.
    let warmUpPosts = min(dataPosts / 10, 1_000_000)
    let warmedUp = DispatchSemaphore(value: 0)
    let rssAfterWarmUp = Atomic<Int>(0)
    let threadsAfterWarmUp = Atomic<Int>(0)
    let rssPeak = Atomic<Int>(0)
    let flushMismatches = Atomic<Int>(0)
    let timeouts = Atomic<Int>(0)
    let postersDone = DispatchGroup()
    for poster in 0..<posters {
        postersDone.enter()
        let thread = Thread {
            var sequence = 0
            var sinceFlush = 0
            var flushes = 0
            let id = Int32(poster)
            for index in 0..<perPoster {
                let subject: SubjectObject? =
                    switch sequence % 3 {
                    case 0: subjectA
                    case 1: subjectB
                    default: nil
                    }
                hub.post(SoakPing(poster: id, kind: .data, sequence: sequence), from: subject)
                sequence += 1
                sinceFlush += 1
                if sinceFlush == options.window || index == perPoster - 1 {
                    // Wait until every observer has everything this poster sent: bounds memory.
                    let flush = SoakPing(poster: id, kind: .flush, sequence: sequence)
                    let report: DeliveryReport
                    if flushes % 2 == 0 {
                        report = hub.postAndWait(flush)
                    } else {
                        do {
                            report = try hub.postAndWait(flush, timeout: .seconds(120))
                        } catch {
                            timeouts.add(1, ordering: .relaxed)
                            report = DeliveryReport()
                        }
                    }
                    // Persistent unfiltered observers, the stream and whichever churned ones were live.
                    if report.deliveredCount < unfilteredCount + 1 || !report.isSuccess {
                        flushMismatches.add(1, ordering: .relaxed)
                    }
                    sequence += 1
                    sinceFlush = 0
                    flushes += 1
                    if poster == 0 {
                        let rss = residentBytes()
                        if rss > rssPeak.load(ordering: .relaxed) { rssPeak.store(rss, ordering: .relaxed) }
                        if options.trace && flushes % 32 == 0 {
                            print(
                                "trace: \(grouped((index + 1) * posters)) posts, RSS \(megabytes(rss)) (anonymous "
                                    + "\(megabytes(statusKilobytes("RssAnon:"))), files \(megabytes(statusKilobytes("RssFile:")))), "
                                    + "\(threadCount()) threads")
                        }
                        if rssAfterWarmUp.load(ordering: .relaxed) == 0, (index + 1) * posters >= warmUpPosts {
                            rssAfterWarmUp.store(rss, ordering: .relaxed)
                            threadsAfterWarmUp.store(threadCount(), ordering: .relaxed)
                            warmedUp.signal()
                        }
                    }
                }
            }
            precondition(flushes == flushesPerPoster, "flush count")
            postersDone.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    warmedUp.wait()
    let warmUpTime = DispatchTime.now()
    print("warm-up: \(grouped(warmUpPosts)) posts, RSS \(megabytes(rssAfterWarmUp.load(ordering: .relaxed)))")
    postersDone.wait()
    stop.store(true, ordering: .relaxed)
    churnFinished.wait()
    // One last waited post reaches everything still queued, then the stream's sentinel.
    hub.postAndWait(SoakPing(poster: 0, kind: .final, sequence: -1))
    streamDone.wait()
    let postEnd = DispatchTime.now()
    let rssEnd = residentBytes()
    let threadsEnd = threadCount()

    // MARK: Reconcile

    var failures: [String] = []
    func check(_ condition: Bool, _ what: @autoclosure () -> String) {
        if !condition { failures.append(what()) }
    }
    let flushPosts = flushesPerPoster * posters
    let soakPosts = dataPosts + flushPosts + 1
    let perUnfiltered = dataPosts + flushPosts + 1
    let withSubjectA = (0..<posters).reduce(0) { sum, _ in
        // Per poster, sequences run over data and flush posts; data posts with sequence % 3 == 0
        // go from subject A. Recount them exactly as the posters numbered them.
        var sequence = 0
        var count = 0
        var sinceFlush = 0
        for index in 0..<perPoster {
            if sequence % 3 == 0 { count += 1 }
            sequence += 1
            sinceFlush += 1
            if sinceFlush == options.window || index == perPoster - 1 {
                sequence += 1
                sinceFlush = 0
            }
        }
        return sum + count
    }
    let expectedThrows = (0..<posters).reduce(0) { sum, _ in
        var sequence = 0
        var count = 0
        var sinceFlush = 0
        for index in 0..<perPoster {
            if sequence % throwEvery == throwEvery - 1 { count += 1 }
            sequence += 1
            sinceFlush += 1
            if sinceFlush == options.window || index == perPoster - 1 {
                sequence += 1
                sinceFlush = 0
            }
        }
        return sum + count
    }

    print("")
    print(
        "notifications posted: \(grouped(soakPosts)) SoakPing (\(grouped(dataPosts)) data from \(posters) threads, "
            + "\(grouped(flushPosts)) waited flushes, 1 final) + \(grouped(churnExactExpected.load(ordering: .relaxed))) ChurnPing"
    )
    print("")
    print("target                              expected     reconciled   violations")
    var expectedTotal = 0
    var reconciledTotal = 0
    for (tracker, _) in persistent {
        let state = tracker.snapshot
        let expected = tracker === subjectTracker ? withSubjectA : perUnfiltered
        expectedTotal += expected
        reconciledTotal += state.delivered
        let line = tracker.name.padding(toLength: 34, withPad: " ", startingAt: 0)
        print(
            "\(line) \(grouped(expected).leftPad(11)) \(grouped(state.delivered).leftPad(14)) \(String(state.violations).leftPad(12))"
        )
        check(state.delivered == expected, "\(tracker.name): delivered \(state.delivered), expected \(expected)")
        check(state.violations == 0, "\(tracker.name): \(state.violations) order, gap or overlap violations")
        if tracker !== subjectTracker {
            check(state.flushes == flushPosts, "\(tracker.name): \(state.flushes) flushes, expected \(flushPosts)")
        }
    }
    let streamGot = streamReceived.load(ordering: .relaxed)
    let streamDropped = stream.droppedCount
    print(
        "\("stream, bufferingNewest(1024)".padding(toLength: 34, withPad: " ", startingAt: 0)) "
            + "\(grouped(soakPosts).leftPad(11)) \(grouped(streamGot + streamDropped).leftPad(14))"
            + "   (\(grouped(streamGot)) received + \(grouped(streamDropped)) dropped, counted)")
    check(streamGot + streamDropped == soakPosts, "stream: \(streamGot) + \(streamDropped) dropped != \(soakPosts)")
    expectedTotal += soakPosts
    reconciledTotal += streamGot + streamDropped
    let exactExpected = churnExactExpected.load(ordering: .relaxed)
    let exactSeen = churnExactSeen.load(ordering: .relaxed)
    print(
        "\("churned ChurnPing observers".padding(toLength: 34, withPad: " ", startingAt: 0)) "
            + "\(grouped(exactExpected).leftPad(11)) \(grouped(exactSeen).leftPad(14)) "
            + "\(String(churnExactMismatches.load(ordering: .relaxed)).leftPad(12))")
    check(exactSeen == exactExpected, "churned ChurnPing: saw \(exactSeen), expected \(exactExpected)")
    check(churnExactMismatches.load(ordering: .relaxed) == 0, "churned ChurnPing rounds with a wrong count")
    expectedTotal += exactExpected
    reconciledTotal += exactSeen
    let errors = reportedErrors.load(ordering: .relaxed)
    print(
        "\("errors to hub.errorHandler".padding(toLength: 34, withPad: " ", startingAt: 0)) "
            + "\(grouped(expectedThrows).leftPad(11)) \(grouped(errors).leftPad(14)) "
            + "\(String(unexpectedErrors.load(ordering: .relaxed)).leftPad(12))")
    check(errors == expectedThrows, "errors reported \(errors), expected \(expectedThrows)")
    check(unexpectedErrors.load(ordering: .relaxed) == 0, "unexpected errors reported")
    print("")
    print(
        "deliveries expected: \(grouped(expectedTotal)), reconciled: \(grouped(reconciledTotal)) "
            + "(persistent observers, the stream's received + counted drops, churned ChurnPing observers)")
    print(
        "churn: \(grouped(churnRounds.load(ordering: .relaxed))) rounds, "
            + "\(grouped(churnRegistrations.load(ordering: .relaxed))) observers registered and cancelled, "
            + "\(grouped(churnDeliveries.load(ordering: .relaxed))) deliveries to churned SoakPing observers, "
            + "\(churnLateStarts.load(ordering: .relaxed)) admitted calls finished after cancel, "
            + "\(churnViolations.load(ordering: .relaxed)) violations, \(liveOwners.load(ordering: .relaxed) - 1) churned owners still alive"
    )
    check(
        churnViolations.load(ordering: .relaxed) == 0, "churned observers: order, gap, overlap or late-start violations"
    )
    check(liveOwners.load(ordering: .relaxed) == 1, "the hub kept a churned owner alive")
    // Every churned observer's handler (which holds its tracker) has been released.
    let leftTrackers = liveTrackers.load(ordering: .relaxed) - persistent.count
    print("churned handlers still alive: \(leftTrackers)")
    check(leftTrackers == 0, "\(leftTrackers) churned handlers are still alive")
    check(flushMismatches.load(ordering: .relaxed) == 0, "a waited flush reached too few observers or failed")
    check(timeouts.load(ordering: .relaxed) == 0, "a waited flush timed out after 120 s")
    check(hub.unobservedPostCount == 0, "\(hub.unobservedPostCount) posts reached no observer")
    check(
        hub.observerCount(of: SoakPing.self) == persistent.count + 1,
        "observers left: \(hub.observerCount(of: SoakPing.self))")
    check(hub.observerCount(of: ChurnPing.self) == 0, "churned ChurnPing observers left behind")

    let warm = rssAfterWarmUp.load(ordering: .relaxed)
    let growth = warm > 0 ? (Double(rssEnd) - Double(warm)) / Double(warm) * 100 : 0
    print(
        String(
            format: "RSS after warm-up: %@, at the end: %@ (%+.2f%%), peak: %@; limit +%.1f%%",
            megabytes(warm), megabytes(rssEnd), growth, megabytes(rssPeak.load(ordering: .relaxed)),
            options.growthLimitPercent))
    print(
        "threads after warm-up: \(threadsAfterWarmUp.load(ordering: .relaxed)), at the end: \(threadsEnd)"
            + (options.overcommitQueues ? " (overcommit queues)" : " (queues target the global queue)"))
    check(warm > 0, "could not read RSS from /proc/self/statm")
    check(growth <= options.growthLimitPercent, String(format: "RSS grew %.2f%% after warm-up", growth))
    let seconds = Double(postEnd.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    let steady = Double(postEnd.uptimeNanoseconds - warmUpTime.uptimeNanoseconds) / 1e9
    print(
        String(
            format: "time: %.1f s (%.0f data posts/s after warm-up)", seconds, Double(dataPosts - warmUpPosts) / steady)
    )
    withExtendedLifetime((persistent, keptOwner, subjectA, subjectB)) {}

    if failures.isEmpty {
        print("PASS")
        return 0
    }
    for failure in failures { print("FAIL \(failure)") }
    return 1
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
