import Dispatch
import Foundation
import Herald
import OpenCombine
import OpenCombineDispatch

/// The sink of the per-observer memory scenario: a global, so that each handler captures only its
/// own index, like a typical handler that captures one value: one 32-byte closure context per
/// observer, for every contender.
let memorySink = Sink()

/// Memory: what a registered observer and a queued notification cost, and a long soak.
///
/// Heap figures are deltas of glibc's `mallinfo2()` (bytes allocated and not freed, including
/// the allocator's per-block overhead); the soak also reads the resident set from
/// `/proc/self/statm`.
@MainActor
struct MemoryScenarios {
    let settings: Settings
    let sink = Sink()

    // MARK: Per observer

    struct ObserverResult {
        var section: Section
        var heraldPosting: Double?
    }

    func bytesPerObserver() -> ObserverResult {
        let count = settings.memoryObservers
        let queue = DispatchQueue(label: "herald.compare.memory")

        var rows: [Row] = []

        let hub = NotificationHub()
        let heraldPosting = heapDelta(count) { tokens in
            for index in 0..<count {
                tokens.append(hub.observe(Ping.self) { note in memorySink.add(note.value &+ index) })
            }
        }
        rows.append(Row(contender: "Herald, posting-thread observer", value: heraldPosting, isHerald: true))

        let queueHub = NotificationHub()
        let heraldQueued = heapDelta(count) { tokens in
            for index in 0..<count {
                tokens.append(
                    queueHub.observe(Ping.self, on: .queue(queue)) { note in memorySink.add(note.value &+ index) })
            }
        }
        rows.append(Row(contender: "Herald, observer on .queue (with its mailbox)", value: heraldQueued))

        let center = NotificationCenter()
        let foundation = heapDelta(count) { tokens in
            for index in 0..<count {
                tokens.append(
                    center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in memorySink.add(index) }
                )
            }
        }
        rows.append(Row(contender: "NotificationCenter.addObserver(forName:…using:)", value: foundation))

        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            let messageCenter = NotificationCenter()
            let messages = heapDelta(count) { tokens in
                for index in 0..<count {
                    tokens.append(
                        messageCenter.addObserver(for: PingMessage.self) { message in
                            memorySink.add(message.value &+ index)
                        })
                }
            }
            rows.append(Row(contender: "NotificationCenter MainActorMessage observer", value: messages))
        } else {
            rows.append(
                Row(contender: "NotificationCenter MainActorMessage observer", unavailable: typedMessagesMissing))
        }

        let subject = PassthroughSubject<Ping, Never>()
        let combine = heapDelta(count) { tokens in
            for index in 0..<count {
                tokens.append(subject.sink { @Sendable note in memorySink.add(note.value &+ index) })
            }
        }
        rows.append(Row(contender: "OpenCombine PassthroughSubject.sink", value: combine))

        withExtendedLifetime((hub, queueHub, center, subject)) {}
        return ObserverResult(
            section: Section(
                title:
                    "Memory per registered observer (\(count.formatted) observers, each handler capturing one value; mallinfo2 delta)",
                metric: "bytes/observer", rows: rows),
            heraldPosting: heraldPosting)
    }

    /// Heap bytes per item that `body` adds, with the token array reserved up front (so the
    /// caller's own storage of the tokens does not count) and the tokens released afterwards.
    private func heapDelta(_ count: Int, _ body: (inout [Any]) -> Void) -> Double {
        var tokens: [Any] = []
        tokens.reserveCapacity(count)
        let before = Memory.heapInUse
        body(&tokens)
        let after = Memory.heapInUse
        withExtendedLifetime(tokens) {}
        tokens.removeAll()
        return (Double(after) - Double(before)) / Double(count)
    }

    // MARK: Per queued notification

    struct QueuedResult {
        var section: Section
        var heraldBeyondPayload: Double?
    }

    func bytesPerQueuedNotification() -> QueuedResult {
        let count = settings.memoryQueued
        let sink = self.sink
        let payload = Double(MemoryLayout<Tick>.size)
        var rows: [Row] = []

        let herald = queuedDelta(count) { queue, check in
            let hub = NotificationHub()
            let token = hub.observe(Tick.self, on: .queue(queue)) { note in check.receive(note.sequence) }
            return ({ i in hub.post(Tick(sequence: i)) }, { token.cancel() })
        }
        rows.append(Row(contender: "Herald, observer on a suspended .queue", value: herald - payload, isHerald: true))

        let dispatch = queuedDelta(count) { queue, check in
            (
                { i in
                    let note = Tick(sequence: i)
                    queue.async { check.receive(note.sequence) }
                }, {}
            )
        }
        rows.append(Row(contender: "DispatchQueue.async to a suspended queue", value: dispatch - payload))

        let combine = queuedDelta(count) { queue, check in
            let subject = PassthroughSubject<Tick, Never>()
            let cancellable = subject.receive(on: queue.ocombine).sink { @Sendable note in check.receive(note.sequence)
            }
            return ({ i in subject.send(Tick(sequence: i)) }, { cancellable.cancel() })
        }
        rows.append(Row(contender: "OpenCombine receive(on: suspended queue)", value: combine - payload))

        rows.append(
            Row(
                contender: "NotificationCenter, suspended OperationQueue",
                unavailable: "n/a: post waits for the operation on Linux"))
        rows.append(Row(contender: "AsyncMessage", unavailable: "n/a: its queue cannot be paused"))
        withExtendedLifetime(sink) {}
        return QueuedResult(
            section: Section(
                title:
                    "Memory per queued notification (\(count.formatted) queued, beyond the \(Int(payload)) B payload)",
                metric: "bytes/notification", rows: rows),
            heraldBeyondPayload: herald - payload)
    }

    /// Heap bytes per notification queued to a suspended serial queue; then resumes the queue and
    /// waits until every notification was delivered.
    private func queuedDelta(
        _ count: Int,
        _ setUp: (DispatchQueue, OrderCheck) -> (post: (Int) -> Void, tearDown: () -> Void)
    ) -> Double {
        let queue = DispatchQueue(label: "herald.compare.paused")
        let check = OrderCheck(expecting: count, sink: sink)
        let (post, tearDown) = setUp(queue, check)
        queue.suspend()
        post(-1)  // the first post may allocate lazily created state; it is delivered too
        let before = Memory.heapInUse
        for i in 1..<count { post(i) }
        let after = Memory.heapInUse
        queue.resume()
        _ = check.wait(seconds: 120)
        tearDown()
        return (Double(after) - Double(before)) / Double(count - 1)
    }

    // MARK: Soak

    struct SoakResult {
        var lines: [String]
        var residentStart: UInt64
        var residentEnd: UInt64
        var heapStart: UInt64
        var heapEnd: UInt64
        var inversions: Int
        var delivered: Int
    }

    /// Posts `soakSize` notifications to a posting-thread observer and a serial-queue observer,
    /// in rounds that wait for the queue to catch up, and reads memory after the first round and
    /// after the last.
    func soak() -> SoakResult {
        let total = settings.soakSize
        let round = 100_000
        let rounds = total / round
        let queue = DispatchQueue(label: "herald.compare.soak")
        let hub = NotificationHub()
        let check = OrderCheck(expecting: rounds * round, sink: sink)
        let sink = self.sink
        let posting = hub.observe(Tick.self) { note in sink.add(note.sequence) }
        let queued = hub.observe(Tick.self, on: .queue(queue)) { note in check.receive(note.sequence) }

        var residentStart: UInt64 = 0
        var heapStart: UInt64 = 0
        var lines: [String] = []
        let start = nowNanoseconds()
        for r in 0..<rounds {
            for i in (r * round)..<((r + 1) * round) { hub.post(Tick(sequence: i)) }
            // The drain gives the queue back after each slice and re-enqueues itself, so one
            // `sync` waits for one slice only: wait until the round has been delivered.
            while check.received < (r + 1) * round { queue.sync {} }
            if r == 0 {
                residentStart = Memory.resident
                heapStart = Memory.heapInUse
            }
        }
        let seconds = Double(nowNanoseconds() - start) / 1e9
        let residentEnd = Memory.resident
        let heapEnd = Memory.heapInUse
        posting.cancel()
        queued.cancel()
        func mib(_ bytes: UInt64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        func signedKiB(_ end: UInt64, _ start: UInt64) -> String {
            String(format: "%+.1f KiB", (Double(end) - Double(start)) / 1024)
        }
        lines.append(
            "Soak: \((rounds * round).formatted) posts to 2 observers (posting thread + serial queue) in "
                + String(format: "%.1f s", seconds))
        lines.append(
            "  resident (statm): start \(mib(residentStart)), end \(mib(residentEnd)) "
                + "(\(signedKiB(residentEnd, residentStart)))")
        lines.append(
            "  heap in use (mallinfo2): start \(mib(heapStart)), end \(mib(heapEnd)) "
                + "(\(signedKiB(heapEnd, heapStart)))")
        lines.append("  serial-queue observer: \(check.received.formatted) delivered, \(check.inversions) inversions")
        return SoakResult(
            lines: lines, residentStart: residentStart, residentEnd: residentEnd, heapStart: heapStart,
            heapEnd: heapEnd, inversions: check.inversions, delivered: check.received)
    }
}
