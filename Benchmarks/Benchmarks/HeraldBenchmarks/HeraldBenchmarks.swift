// Herald's package-benchmark suite: wall clock and malloc counts, with checked-in thresholds.
//
//   swift package --package-path Benchmarks benchmark                      # run and print
//   swift package --package-path Benchmarks benchmark thresholds check \
//       --path "$PWD/Benchmarks/Thresholds"                                # compare with Thresholds/
//   swift package --package-path Benchmarks --allow-writing-to-package-directory \
//       benchmark thresholds update --path "$PWD/Benchmarks/Thresholds"   # record new thresholds
//
// Benchmark names have no spaces: package-benchmark 1.38.1 writes threshold files with spaces
// turned into underscores but reads them back with the spaces, so such names never match.
//
// The checked-in thresholds hold mallocCountTotal exactly (a synchronous post to posting-thread
// observers makes no heap allocation: p90 = 0) and wall clock with a wide tolerance, because the
// machines that run CI are shared. Ratios against the alternatives are herald-compare's job.

import Benchmark
import Dispatch
import Foundation
import Herald
import Synchronization

struct Ping: TypedNotification {
    let value: Int
}

struct OtherRoot: TypedNotification {}
struct Zero<T>: TypedNotification {}
struct One<T>: TypedNotification {}

/// Every handler writes here, so that no delivery can be optimised away.
final class Sink: Sendable {
    private let storage = Atomic<Int>(0)

    func add(_ value: Int) {
        storage.store(storage.load(ordering: .relaxed) &+ value, ordering: .relaxed)
    }
}

/// Registers one posting-thread observer on each of `count` distinct notification types.
func observeOtherTypes(_ count: Int, on hub: NotificationHub, sink: Sink) -> [ObservationToken] {
    var bits = 0
    while 1 << bits < count { bits += 1 }
    var tokens: [ObservationToken] = []
    func walk<T: TypedNotification>(_ type: T.Type, depth: Int, number: Int) {
        if depth == bits {
            if number < count { tokens.append(hub.observe(type) { _ in sink.add(1) }) }
            return
        }
        walk(Zero<T>.self, depth: depth + 1, number: number << 1)
        walk(One<T>.self, depth: depth + 1, number: (number << 1) | 1)
    }
    walk(OtherRoot.self, depth: 0, number: 0)
    return tokens
}

/// Waits until a serial-queue observer has seen `count` notifications.
final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let done = DispatchSemaphore(value: 0)

    init(_ count: Int) { remaining = Atomic(count) }

    func hit() {
        if remaining.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }

    func wait() { done.wait() }
}

let benchmarks: @Sendable () -> Void = {
    // Allocation counts are exact; wall clock may move a lot on shared CI machines.
    let zeroAllocations = BenchmarkThresholds(absolute: [.p90: 0])
    let noisyTime = BenchmarkThresholds(relative: [.p90: 300.0])
    // Asynchronous work allocates per hop and per batch; how many hops a burst needs depends on
    // thread scheduling, so the recorded count only bounds it loosely (a tenfold regression).
    let someAllocations = BenchmarkThresholds(relative: [.p90: 1_000.0])
    // A hop to another thread costs what the scheduler makes it cost: only a tenfold slowdown fails.
    let hoppingTime = BenchmarkThresholds(relative: [.p90: 1_000.0])
    let asynchronous: [BenchmarkMetric: BenchmarkThresholds] = [
        .mallocCountTotal: someAllocations, .wallClock: hoppingTime,
    ]

    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: .kilo(10),
        thresholds: [.mallocCountTotal: zeroAllocations, .wallClock: noisyTime]
    )

    // MARK: Synchronous delivery: no heap allocation

    Benchmark("sync-post-1-observer") { benchmark in
        let sink = Sink()
        let hub = NotificationHub()
        let token = hub.observe(Ping.self) { note in sink.add(note.value) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            hub.post(Ping(value: index))
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(token) {}
    }

    Benchmark("sync-post-10-observers") { benchmark in
        let sink = Sink()
        let hub = NotificationHub()
        let tokens = (0..<10).map { _ in hub.observe(Ping.self) { note in sink.add(note.value) } }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            hub.post(Ping(value: index))
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(tokens) {}
    }

    Benchmark("sync-post-1-observer-plus-10000-of-other-types") { benchmark in
        let sink = Sink()
        let hub = NotificationHub()
        let token = hub.observe(Ping.self) { note in sink.add(note.value) }
        let others = observeOtherTypes(10_000, on: hub, sink: sink)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            hub.post(Ping(value: index))
        }
        benchmark.stopMeasurement()
        withExtendedLifetime((token, others)) {}
    }

    Benchmark("sync-post-no-observer") { benchmark in
        let hub = NotificationHub()
        for index in benchmark.scaledIterations {
            hub.post(Ping(value: index))
        }
        blackHole(hub.unobservedPostCount)
    }

    // MARK: Peers in the same run

    Benchmark(
        "peer-NotificationCenter-post-1-observer",
        configuration: .init(thresholds: [.mallocCountTotal: someAllocations, .wallClock: noisyTime])
    ) { benchmark in
        let sink = Sink()
        let center = NotificationCenter()
        let name = Notification.Name("herald.benchmark.ping")
        let token = center.addObserver(forName: name, object: nil, queue: nil) { @Sendable _ in sink.add(1) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            center.post(name: name, object: nil)
        }
        benchmark.stopMeasurement()
        center.removeObserver(token)
    }

    // MARK: Asynchronous delivery and waiting (allocations are expected here; thresholds record them)

    Benchmark(
        "async-burst-1000-posts-to-serial-queue",
        configuration: .init(scalingFactor: .one, maxIterations: .kilo(1), thresholds: asynchronous)
    ) { benchmark in
        let queue = DispatchQueue(label: "herald.benchmark.serial")
        let hub = NotificationHub()
        let countdown = Mutex<Countdown?>(nil)
        let token = hub.observe(Ping.self, on: .queue(queue)) { _ in countdown.withLock { $0 }?.hit() }
        for _ in benchmark.scaledIterations {
            let burst = Countdown(1_000)
            countdown.withLock { $0 = burst }
            benchmark.startMeasurement()
            for index in 0..<1_000 {
                hub.post(Ping(value: index))
            }
            burst.wait()
            benchmark.stopMeasurement()
        }
        token.cancel()
    }

    Benchmark(
        "postAndWait-round-trip-to-serial-queue",
        configuration: .init(scalingFactor: .one, maxIterations: .kilo(2), thresholds: asynchronous)
    ) { benchmark in
        let sink = Sink()
        let queue = DispatchQueue(label: "herald.benchmark.round-trip")
        let hub = NotificationHub()
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in sink.add(note.value) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            hub.postAndWait(Ping(value: index))
        }
        benchmark.stopMeasurement()
        token.cancel()
    }

    Benchmark(
        "peer-bare-DispatchQueue-round-trip",
        configuration: .init(scalingFactor: .one, maxIterations: .kilo(2), thresholds: asynchronous)
    ) { benchmark in
        let sink = Sink()
        let queue = DispatchQueue(label: "herald.benchmark.bare")
        let semaphore = DispatchSemaphore(value: 0)
        for index in benchmark.scaledIterations {
            queue.async {
                sink.add(index)
                semaphore.signal()
            }
            semaphore.wait()
        }
    }

    // MARK: Registration

    Benchmark(
        "observe-and-cancel",
        configuration: .init(thresholds: [.mallocCountTotal: someAllocations, .wallClock: noisyTime])
    ) { benchmark in
        let sink = Sink()
        let hub = NotificationHub()
        let keep = hub.observe(Ping.self) { note in sink.add(note.value) }
        for _ in benchmark.scaledIterations {
            let token = hub.observe(Ping.self) { note in sink.add(note.value) }
            token.cancel()
        }
        withExtendedLifetime(keep) {}
    }
}
