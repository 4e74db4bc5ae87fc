import Dispatch
import Foundation
import Herald
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a mailbox policy saves: the main queue's work under a flood of state updates with
/// `.latest`, and the memory of a slow observer behind a fast poster with a bounded mailbox. The
/// peer of each is the same observer with the default, unbounded mailbox, in the same run (no peer
/// of Herald's offers a policy for typed notifications: each delivers every post).
@MainActor
struct MailboxPolicyScenarios {
    let settings: Settings

    // MARK: Coalescing flood

    struct CoalescingResult {
        var section: Section
    }

    /// What one observer saw.
    private final class FloodObserver: Sendable {
        let calls = Atomic<Int>(0)
        let last = Atomic<Int>(-1)
        let inversions = Atomic<Int>(0)

        func receive(_ sequence: Int) {
            calls.add(1, ordering: .relaxed)
            if sequence < last.load(ordering: .relaxed) { inversions.add(1, ordering: .relaxed) }
            last.store(sequence, ordering: .relaxed)
        }
    }

    private struct FloodSample {
        var handlerCalls = 0
        var replaced = 0
        var mainMilliseconds = 0.0
        var elapsedMilliseconds = 0.0
        var worstWait = 0.0
        var medianWait = 0.0
        var inversions = 0
        var completed = true
    }

    /// A background thread posts `floodSize` progress values to one `MainActor` observer, with
    /// `.latest` and with the default policy, while a probe block is sent to the main queue every
    /// 1 ms. Reports the main thread's CPU time (it drains the main queue and does nothing else
    /// here), the handler calls and the probes' worst wait. The handler does 1 µs of work, as a
    /// progress bar's does (format a label, set a value), or none, which shows the cost of
    /// delivery alone.
    func coalescingFlood() -> CoalescingResult {
        let count = settings.floodSize
        let policies: [(String, NotificationBufferingPolicy, UInt64)] = [
            ("Herald, bufferingPolicy: .latest, handler works 1 µs", .latest, 1_000),
            ("Herald, default (.unbounded: every post), handler works 1 µs", .unbounded, 1_000),
            ("Herald, bufferingPolicy: .latest, empty handler", .latest, 0),
            ("Herald, default (.unbounded: every post), empty handler", .unbounded, 0),
        ]
        var samples = [[FloodSample]](repeating: [], count: policies.count)
        for round in 0..<settings.floodRounds {
            for offset in 0..<policies.count {
                let index = (offset + round) % policies.count
                samples[index].append(floodRun(policies[index].1, handlerWork: policies[index].2, count: count))
            }
        }
        let rows = policies.enumerated().map { index, entry in
            let runs = samples[index]
            var row = Row(contender: entry.0, value: median(runs.map(\.mainMilliseconds)))
            row.isHerald = index == 0
            row.notes = [
                "\(Int(median(runs.map { Double($0.handlerCalls) })).formatted) handler calls",
                String(format: "worst wait of other main-queue work %.1f ms", median(runs.map(\.worstWait))),
                String(format: "median wait %.3f ms", median(runs.map(\.medianWait))),
                String(format: "%.0f ms from first post to last delivery", median(runs.map(\.elapsedMilliseconds))),
                "\(Int(median(runs.map { Double($0.replaced) })).formatted) replaced (counted)",
                "\(runs.map(\.inversions).reduce(0, +)) inversions",
            ]
            if runs.contains(where: { !$0.completed }) { row.notes.append("did not finish (timeout)") }
            return row
        }
        return CoalescingResult(
            section: Section(
                title: "Mailbox policy: a background thread posts \(count.formatted) progress values to 1 MainActor "
                    + "observer; a DispatchQueue.main.async probe every 1 ms",
                metric: "ms of main-thread CPU", rows: rows))
    }

    private func floodRun(_ policy: NotificationBufferingPolicy, handlerWork: UInt64, count: Int) -> FloodSample {
        let hub = NotificationHub()
        let observer = FloodObserver()
        let token = hub.observe(Tick.self, on: MainActor.shared, bufferingPolicy: policy) { note in
            observer.receive(note.sequence)
            if handlerWork > 0 {  // a progress bar's work: format a label, set a value
                let until = nowNanoseconds() + handlerWork
                while nowNanoseconds() < until {}
            }
        }
        let probe = MainQueueProbe(interval: FairnessScenarios.probeInterval)
        let cpuStart = threadCPUNanoseconds()
        let start = nowNanoseconds()
        let poster = Thread {
            for i in 0..<count { hub.post(Tick(sequence: i)) }
        }
        poster.start()
        let completed = runMainQueue(until: { observer.last.load(ordering: .relaxed) == count - 1 })
        let elapsed = nowNanoseconds() - start
        let cpu = threadCPUNanoseconds() - cpuStart
        let probes = probe.finish()
        let sample = FloodSample(
            handlerCalls: observer.calls.load(ordering: .relaxed), replaced: token.replacedCount,
            mainMilliseconds: Double(cpu) / 1e6, elapsedMilliseconds: Double(elapsed) / 1e6,
            worstWait: probes.worstMilliseconds, medianWait: probes.medianMilliseconds,
            inversions: observer.inversions.load(ordering: .relaxed), completed: completed)
        token.cancel()
        return sample
    }

    // MARK: Bounded mailbox memory

    struct BoundedResult {
        var section: Section
    }

    /// How many notifications the fast poster sends to the slow observer.
    private var slowObserverPosts: Int { settings.quick ? 200_000 : 1_000_000 }
    /// How long the slow observer's handler works on each notification.
    private nonisolated static let slowHandlerNanoseconds: UInt64 = 20_000

    /// A fast poster sends `slowObserverPosts` notifications to an observer on a serial queue whose
    /// handler takes 20 µs each, with `.bufferingNewest(1000)` and with the default policy. Reports
    /// the heap the run added by the time the poster finished (the observer's mailbox, mostly),
    /// then ends the observation.
    func boundedMemory() -> BoundedResult {
        let policies: [(String, NotificationBufferingPolicy)] = [
            ("Herald, slow queue observer, bufferingPolicy: .bufferingNewest(1000)", .bufferingNewest(1000)),
            ("Herald, slow queue observer, default (.unbounded: every post)", .unbounded),
        ]
        let rounds = settings.quick ? 1 : 3
        var samples = [[(bytes: Double, calls: Int, dropped: Int, milliseconds: Double)]](
            repeating: [], count: policies.count)
        for round in 0..<rounds {
            for offset in 0..<policies.count {
                let index = (offset + round) % policies.count
                samples[index].append(boundedRun(policies[index].1))
            }
        }
        let count = slowObserverPosts
        let rows = policies.enumerated().map { index, entry in
            let runs = samples[index]
            var row = Row(contender: entry.0, value: median(runs.map { $0.bytes / 1_048_576 }))
            row.isHerald = index == 0
            row.notes = [
                "\(Int(median(runs.map { Double($0.calls) })).formatted) handler calls while posting",
                "\(Int(median(runs.map { Double($0.dropped) })).formatted) dropped (counted)",
                String(format: "%.0f ms of posting", median(runs.map(\.milliseconds))),
            ]
            return row
        }
        return BoundedResult(
            section: Section(
                title: "Mailbox policy: a fast poster sends \(count.formatted) notifications to 1 queue observer that "
                    + "takes 20 µs each; heap added when the poster is done (mallinfo2)",
                metric: "MiB", rows: rows))
    }

    private func boundedRun(
        _ policy: NotificationBufferingPolicy
    ) -> (
        bytes: Double, calls: Int, dropped: Int, milliseconds: Double
    ) {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "herald.compare.slow-observer")
        let observer = FloodObserver()
        let token = hub.observe(Tick.self, on: .queue(queue), bufferingPolicy: policy) { note in
            observer.receive(note.sequence)
            let until = nowNanoseconds() + Self.slowHandlerNanoseconds
            while nowNanoseconds() < until {}
        }
        let count = slowObserverPosts
        let before = Memory.heapInUse
        let start = nowNanoseconds()
        for i in 0..<count { hub.post(Tick(sequence: i)) }
        let elapsed = nowNanoseconds() - start
        let after = Memory.heapInUse
        let sample = (
            bytes: Double(after) - Double(before), calls: observer.calls.load(ordering: .relaxed),
            dropped: token.droppedCount,
            milliseconds: Double(elapsed) / 1e6
        )
        token.cancel()  // drops what is still queued
        queue.sync {}  // lets the job that runs now finish
        return sample
    }
}

/// The CPU time the calling thread has used.
func threadCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
