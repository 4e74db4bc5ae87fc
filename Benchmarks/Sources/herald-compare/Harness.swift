import CHeraldCompareSupport
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Keeping the optimizer honest

/// The place every handler writes to, so that the optimizer cannot delete a delivery.
///
/// A relaxed load and store (not a read-modify-write) compile to plain moves: the sink costs
/// about the same as writing a field, and it is the same for every contender.
///
/// The counter sits two cache lines away from the object's header, and two more lines follow it.
/// Handlers capture the sink, so registering one retains it: without the padding, a thread that
/// registers and cancels observers would write the header's reference count on the same line that
/// another thread's deliveries write the counter on, and the faster hub (whose background thread
/// delivers more often) would pay more for that shared line than its peer.
final class Sink: Sendable {
    private let leadingPadding = CacheLines()
    private let storage = Atomic<Int>(0)
    private let trailingPadding = CacheLines()

    @inline(__always)
    func add(_ value: Int) {
        storage.store(storage.load(ordering: .relaxed) &+ value, ordering: .relaxed)
    }

    var value: Int { storage.load(ordering: .relaxed) }
}

/// 128 bytes: two cache lines of 64 bytes, which some processors fetch in pairs.
private struct CacheLines: Sendable {
    private let words: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
}

/// Consumes a value in a way the optimizer cannot see through.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Returns `value` through a call the optimizer cannot see through, so that a closure built
/// from it cannot be inlined into the timing loop.
@inline(never)
func opaque<T>(_ value: T) -> T {
    value
}

// MARK: - Clock and statistics

/// Monotonic nanoseconds.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// CPU time the whole process has used so far, user and system, in nanoseconds (`getrusage`).
func processCPUNanoseconds() -> UInt64 {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000 }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// Sleeps until the monotonic clock reads `deadline` (returns at once if it has passed).
func sleep(untilNanoseconds deadline: UInt64) {
    let now = nowNanoseconds()
    guard deadline > now else { return }
    let remaining = deadline - now
    var spec = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
    var left = timespec()
    while nanosleep(&spec, &left) != 0 { spec = left }  // interrupted by a signal: sleep the rest
}

/// Runs the main thread's run loop, which drains the main dispatch queue, until `done` returns
/// true or `timeoutSeconds` pass; `false` on timeout.
///
/// herald-compare's top-level code runs on the main thread, and every scenario that needs the main
/// queue calls this instead of blocking: a main-queue observer, a probe block and the check that
/// ends the wait all run here, in the order the main queue holds them.
@MainActor
func runMainQueue(until done: () -> Bool, timeoutSeconds: Double = 120) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
    while !done() {
        if Date() >= deadline { return false }
        _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.01))
    }
    return true
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

// MARK: - Memory readings

enum Memory {
    /// Bytes the allocator has handed out and not taken back (glibc `mallinfo2`).
    static var heapInUse: UInt64 { herald_heap_bytes_in_use() }
    /// Resident set size (`/proc/self/statm`).
    static var resident: UInt64 { herald_resident_bytes() }
    /// malloc, calloc and realloc calls made so far by the calling thread.
    static var threadMallocCount: UInt64 { herald_thread_malloc_count() }
    static var countsMallocs: Bool { herald_malloc_counting_available() != 0 }
    /// Whether `heapInUse` reads the allocator (glibc); where it does not, it reads 0.
    static var readsHeap: Bool { herald_heap_reading_available() != 0 }
    /// Whether `resident` reads the resident set (Linux); where it does not, it reads 0.
    static var readsResident: Bool { herald_resident_reading_available() != 0 }

    static func trim() { herald_heap_trim() }
}

// MARK: - Run settings

struct Settings {
    /// A short run for CI smoke tests.
    var quick = false
    /// Print the table as markdown.
    var markdown = false
    /// Where to write the SVG chart, if anywhere.
    var svgPath: String?
    /// Exit with a failure status when a target is missed.
    var strict = false
    /// The scenarios to run; all when `nil`.
    var only: Set<String>?

    func runs(_ scenario: String) -> Bool { only?.contains(scenario) ?? true }

    /// Rounds of interleaved samples for the synchronous scenarios.
    var syncRounds: Int { quick ? 3 : 9 }
    /// Slices per synchronous sample; the sample is the fastest slice.
    var slicesPerSample: Int { quick ? 3 : 5 }
    /// The target duration of one synchronous sample.
    var sampleNanoseconds: UInt64 { quick ? 2_000_000 : 10_000_000 }
    /// Rounds for the asynchronous bursts.
    var burstRounds: Int { quick ? 1 : 7 }
    /// Notifications in one asynchronous burst.
    var burstSize: Int { quick ? 20_000 : 100_000 }
    /// Notifications in one main-queue burst.
    var mainBurstSize: Int { quick ? 5_000 : 20_000 }
    /// Round trips in one `postAndWait` sample.
    var roundTripsPerSample: Int { quick ? 500 : 2_000 }
    var roundTripRounds: Int { quick ? 3 : 9 }
    /// Observers registered for the per-observer memory figure.
    var memoryObservers: Int { quick ? 10_000 : 100_000 }
    /// Notifications queued to a paused target for the per-notification memory figure.
    var memoryQueued: Int { quick ? 100_000 : 1_000_000 }
    /// Notifications in the soak.
    var soakSize: Int { quick ? 1_000_000 : 10_000_000 }
    /// Notifications in one main-queue flood, and the floods per contender.
    var floodSize: Int { quick ? 300_000 : 3_000_000 }
    var floodRounds: Int { quick ? 1 : 5 }
    /// How long one paced run posts, and the runs per contender.
    var pacedNanoseconds: UInt64 { quick ? 250_000_000 : 1_500_000_000 }
    var pacedRounds: Int { quick ? 1 : 3 }
    /// Bursts of 10 posts in one idle-CPU run, and the runs per contender.
    var idleBursts: Int { quick ? 200 : 2_000 }
    var idleRounds: Int { quick ? 1 : 7 }
}

// MARK: - Synchronous measurement

/// One contender in a synchronous scenario: `run(n)` performs `n` operations.
struct SyncContender {
    let name: String
    /// Why the contender cannot run on this toolchain or platform; `nil` when it runs.
    let unavailable: String?
    let run: (Int) -> Void

    init(_ name: String, run: @escaping (Int) -> Void) {
        self.name = name
        self.unavailable = nil
        self.run = run
    }

    init(_ name: String, unavailable: String) {
        self.name = name
        self.unavailable = unavailable
        self.run = { _ in }
    }
}

/// Measures every contender in interleaved rounds and returns the median ns per operation.
///
/// Each round samples every contender once, in an order that rotates from round to round, so a
/// burst of load from other processes hits all contenders alike.
///
/// A sample is the best of `slices` short slices (`settings.slicesPerSample` unless given). Pass
/// 1 where another thread loads the contender on purpose: the best slice would be one in which
/// that thread happened not to run.
func measureInterleaved(_ contenders: [SyncContender], settings: Settings, slices: Int? = nil) -> [Double?] {
    let runnable = contenders.indices.filter { contenders[$0].unavailable == nil }
    // Warm up and calibrate: find how many operations fill one sample.
    var counts = [Int](repeating: 1, count: contenders.count)
    for index in runnable {
        let contender = contenders[index]
        var n = 1
        while true {
            let start = nowNanoseconds()
            contender.run(n)
            let elapsed = nowNanoseconds() - start
            if elapsed >= settings.sampleNanoseconds / 8 || n >= 1 << 30 {
                let perOp = Double(elapsed) / Double(n)
                counts[index] = max(1, Int(Double(settings.sampleNanoseconds) / max(perOp, 0.01)))
                break
            }
            n *= 2
        }
    }
    var samples = [[Double]](repeating: [], count: contenders.count)
    let slices = slices ?? settings.slicesPerSample
    for round in 0..<settings.syncRounds {
        for offset in 0..<runnable.count {
            let index = runnable[(offset + round) % runnable.count]
            // The sample is the best of a few short slices: a slice during which another process
            // took the processor is discarded rather than averaged in.
            let n = max(1, counts[index] / slices)
            var best = Double.infinity
            for _ in 0..<slices {
                let start = nowNanoseconds()
                contenders[index].run(n)
                let elapsed = nowNanoseconds() - start
                best = min(best, Double(elapsed) / Double(n))
            }
            samples[index].append(best)
        }
    }
    return contenders.indices.map { contenders[$0].unavailable == nil ? median(samples[$0]) : nil }
}

/// The heap allocations the calling thread makes per operation, over `n` operations.
func mallocsPerOperation(_ n: Int, _ body: (Int) -> Void) -> Double? {
    guard Memory.countsMallocs else { return nil }
    body(n)  // warm up: first-use allocations do not count
    let before = Memory.threadMallocCount
    body(n)
    return Double(Memory.threadMallocCount - before) / Double(n)
}

// MARK: - Asynchronous measurement

/// Counts deliveries and checks their order.
///
/// For a contender that delivers one notification at a time (a serial queue, the main queue, an
/// operation queue limited to one operation), the check uses relaxed atomic loads and stores:
/// no read-modify-write and no lock, so the handler costs the same few nanoseconds for every
/// such contender. For a contender whose deliveries may overlap (`AsyncMessage`), it takes a lock.
final class OrderCheck: Sendable {
    private struct State {
        var count = 0
        var last = -1
        var inversions = 0
    }

    private let locked = Mutex(State())
    private let count = Atomic<Int>(0)
    private let last = Atomic<Int>(-1)
    private let inversionCount = Atomic<Int>(0)
    private let concurrent: Bool
    private let expected: Int
    private let sink: Sink
    private let finished = DispatchSemaphore(value: 0)
    private let finishTime = Atomic<UInt64>(0)

    init(expecting expected: Int, sink: Sink, concurrent: Bool = false) {
        self.expected = expected
        self.sink = sink
        self.concurrent = concurrent
    }

    /// Records the delivery of sequence number `sequence`.
    @inline(__always)
    func receive(_ sequence: Int) {
        let isLast: Bool
        if concurrent {
            isLast = locked.withLock { state -> Bool in
                if sequence < state.last { state.inversions += 1 }
                state.last = sequence
                state.count += 1
                return state.count == expected
            }
        } else {
            if sequence < last.load(ordering: .relaxed) {
                inversionCount.store(inversionCount.load(ordering: .relaxed) + 1, ordering: .relaxed)
            }
            last.store(sequence, ordering: .relaxed)
            let received = count.load(ordering: .relaxed) + 1
            count.store(received, ordering: .relaxed)
            isLast = received == expected
        }
        sink.add(sequence)
        if isLast {
            finishTime.store(nowNanoseconds(), ordering: .releasing)
            finished.signal()
        }
    }

    /// When the last delivery was recorded, if it was.
    var finishedAt: UInt64? {
        let time = finishTime.load(ordering: .acquiring)
        return time == 0 ? nil : time
    }

    /// Waits for the last delivery; `false` on timeout.
    func wait(seconds: Int) -> Bool {
        finished.wait(timeout: .now() + .seconds(seconds)) == .success
    }

    var received: Int { concurrent ? locked.withLock { $0.count } : count.load(ordering: .acquiring) }
    var isComplete: Bool { received >= expected }
    var inversions: Int {
        concurrent ? locked.withLock { $0.inversions } : inversionCount.load(ordering: .acquiring)
    }
}

/// The outcome of one timed burst.
struct BurstSample {
    var nanosecondsPerNotification: Double
    var inversions: Int
    var lost: Int
}

/// One contender in an asynchronous scenario: `run(count)` posts a burst of `count` notifications
/// and returns once the last one was delivered (or a timeout passed).
struct BurstContender {
    let name: String
    let unavailable: String?
    let run: (Int) -> BurstSample

    init(_ name: String, run: @escaping (Int) -> BurstSample) {
        self.name = name
        self.unavailable = nil
        self.run = run
    }

    init(_ name: String, unavailable: String) {
        self.name = name
        self.unavailable = unavailable
        self.run = { _ in BurstSample(nanosecondsPerNotification: .nan, inversions: 0, lost: 0) }
    }
}

/// The aggregated result of a contender's bursts.
struct BurstResult {
    var nanosecondsPerNotification: Double?
    var inversions: Int
    var lost: Int
}

/// Runs every contender's bursts in interleaved rounds.
func measureBursts(_ contenders: [BurstContender], size: Int, rounds: Int) -> [BurstResult] {
    var samples = [[BurstSample]](repeating: [], count: contenders.count)
    let runnable = contenders.indices.filter { contenders[$0].unavailable == nil }
    for round in 0..<rounds {
        for offset in 0..<runnable.count {
            let index = runnable[(offset + round) % runnable.count]
            samples[index].append(contenders[index].run(size))
        }
    }
    return contenders.indices.map { index in
        guard contenders[index].unavailable == nil else {
            return BurstResult(nanosecondsPerNotification: nil, inversions: 0, lost: 0)
        }
        let runs = samples[index]
        return BurstResult(
            nanosecondsPerNotification: median(runs.map(\.nanosecondsPerNotification)),
            inversions: runs.map(\.inversions).reduce(0, +),
            lost: runs.map(\.lost).reduce(0, +)
        )
    }
}

/// Times `post` and waits for `check` to see the last delivery.
///
/// - Parameters:
///   - count: The notifications to post.
///   - check: The order check every delivery reports to.
///   - timeoutSeconds: How long to wait for the last delivery.
///   - post: Posts notification number `i`.
func timeBurst(
    count: Int,
    check: OrderCheck,
    timeoutSeconds: Int = 60,
    post: (Int) -> Void
) -> BurstSample {
    let start = nowNanoseconds()
    for i in 0..<count { post(i) }
    let completed = check.wait(seconds: timeoutSeconds)
    let elapsed = (check.finishedAt ?? nowNanoseconds()) - start
    return BurstSample(
        nanosecondsPerNotification: Double(elapsed) / Double(count),
        inversions: check.inversions,
        lost: completed ? 0 : count - check.received
    )
}
