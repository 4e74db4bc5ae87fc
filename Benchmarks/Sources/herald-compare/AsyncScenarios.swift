import Dispatch
import Foundation
import Herald
import OpenCombine
import OpenCombineDispatch
import Synchronization

/// Asynchronous delivery: a burst posted from one thread, timed until the last delivery.
@MainActor
struct AsyncScenarios {
    let settings: Settings
    let sink = Sink()

    // MARK: Burst to a serial queue

    struct SerialBurstResult {
        var section: Section
        var herald: BurstResult
        var dispatch: BurstResult
        var asyncMessage: BurstResult
        /// Jobs Herald handed to the queue for one burst, and the burst's size.
        var heraldHops: Int
        var hopsBurstSize: Int
    }

    func serialQueueBurst() -> SerialBurstResult {
        let sink = self.sink
        let queue = DispatchQueue(label: "herald.compare.serial")

        var contenders = [
            BurstContender("Herald, observer on .queue(serial)") { count in
                let hub = NotificationHub()
                let check = OrderCheck(expecting: count, sink: sink)
                let token = hub.observe(Tick.self, on: .queue(queue)) { note in check.receive(note.sequence) }
                defer { token.cancel() }
                return timeBurst(count: count, check: check) { i in hub.post(Tick(sequence: i)) }
            },
            BurstContender("DispatchQueue.async per notification") { count in
                let check = OrderCheck(expecting: count, sink: sink)
                return timeBurst(count: count, check: check) { i in
                    let note = Tick(sequence: i)
                    queue.async { check.receive(note.sequence) }
                }
            },
        ]
        contenders.append(asyncMessageContender(mainActor: false))
        contenders.append(
            BurstContender("OpenCombine receive(on: serial queue)") { count in
                let check = OrderCheck(expecting: count, sink: sink)
                let subject = PassthroughSubject<Tick, Never>()
                let cancellable = subject.receive(on: queue.ocombine).sink { @Sendable note in
                    check.receive(note.sequence)
                }
                defer { cancellable.cancel() }
                return timeBurst(count: count, check: check) { i in subject.send(Tick(sequence: i)) }
            })
        contenders.append(
            BurstContender("NotificationCenter, OperationQueue on serial queue") { count in
                let check = OrderCheck(expecting: count, sink: sink)
                let center = NotificationCenter()
                let operations = OperationQueue()
                operations.maxConcurrentOperationCount = 1
                operations.underlyingQueue = queue
                let token = center.addObserver(forName: .tick, object: nil, queue: operations) { @Sendable note in
                    check.receive(note.userInfo?["sequence"] as? Int ?? -1)
                }
                defer { center.removeObserver(token) }
                return timeBurst(count: count, check: check) { i in
                    center.post(name: .tick, object: nil, userInfo: ["sequence": i])
                }
            })

        let results = measureBursts(contenders, size: settings.burstSize, rounds: settings.burstRounds)
        let rows = burstRows(contenders, results)
        let (hops, hopsSize) = heraldHopsPerBurst()
        var section = Section(
            title: "Asynchronous burst of \(settings.burstSize.formatted) posts to 1 observer on a serial queue",
            metric: "ns/notification", rows: rows)
        section.rows[0].notes.append(
            "\(hops.formatted) hops for \(hopsSize.formatted) posts (counted through a DeliveryExecutor, where "
                + "drains do not linger)")
        return SerialBurstResult(
            section: section, herald: results[0], dispatch: results[1], asyncMessage: results[2],
            heraldHops: hops, hopsBurstSize: hopsSize)
    }

    /// Counts the jobs Herald hands to the target during one burst, through an executor that
    /// forwards to a serial queue.
    private func heraldHopsPerBurst() -> (hops: Int, posts: Int) {
        let count = settings.burstSize
        let executor = CountingExecutor(DispatchQueue(label: "herald.compare.counted"))
        let hub = NotificationHub()
        let check = OrderCheck(expecting: count, sink: sink)
        let token = hub.observe(Tick.self, on: .executor(executor)) { note in check.receive(note.sequence) }
        _ = timeBurst(count: count, check: check) { i in hub.post(Tick(sequence: i)) }
        token.cancel()
        return (executor.jobs, count)
    }

    /// Foundation's `AsyncMessage`: delivered on Foundation's own task queue (it offers no choice of
    /// queue), on the main actor when `mainActor` is set.
    private func asyncMessageContender(mainActor: Bool) -> BurstContender {
        let name = mainActor ? "AsyncMessage, @MainActor observer" : "AsyncMessage (Foundation's own queue)"
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
            return BurstContender(name, unavailable: typedMessagesMissing)
        }
        let sink = self.sink
        let spinsMainRunLoop = mainActor
        return BurstContender(name) { count in
            // Its deliveries may overlap, so the check takes a lock (see OrderCheck).
            let check = OrderCheck(expecting: count, sink: sink, concurrent: true)
            let center = NotificationCenter()
            let token: NotificationCenter.ObservationToken
            if mainActor {
                token = center.addObserver(for: TickMessage.self) { @MainActor message in
                    check.receive(message.sequence)
                }
            } else {
                token = center.addObserver(for: TickMessage.self) { message in check.receive(message.sequence) }
            }
            defer { center.removeObserver(token) }
            let post: @Sendable (Int) -> Void = { i in center.post(TickMessage(sequence: i)) }
            return spinsMainRunLoop
                ? timeMainBurst(count: count, check: check, post: post)
                : timeBurst(count: count, check: check, timeoutSeconds: 120, post: post)
        }
    }

    // MARK: Burst to the main queue from a background thread

    struct MainBurstResult {
        var section: Section
        var herald: BurstResult
    }

    func mainQueueBurst() -> MainBurstResult {
        let sink = self.sink
        var contenders = [
            BurstContender("Herald, observer on MainActor") { count in
                let hub = NotificationHub()
                let check = OrderCheck(expecting: count, sink: sink)
                let token = hub.observe(Tick.self, on: MainActor.shared) { note in check.receive(note.sequence) }
                defer { token.cancel() }
                return timeMainBurst(count: count, check: check) { i in hub.post(Tick(sequence: i)) }
            },
            BurstContender("DispatchQueue.main.async per notification") { count in
                let check = OrderCheck(expecting: count, sink: sink)
                return timeMainBurst(count: count, check: check) { i in
                    let note = Tick(sequence: i)
                    DispatchQueue.main.async { check.receive(note.sequence) }
                }
            },
        ]
        contenders.append(asyncMessageContender(mainActor: true))
        contenders.append(mainActorMessageViaTaskContender())
        contenders.append(
            BurstContender("OpenCombine receive(on: DispatchQueue.main)") { count in
                let check = OrderCheck(expecting: count, sink: sink)
                let subject = PassthroughSubject<Tick, Never>()
                let cancellable = subject.receive(on: DispatchQueue.main.ocombine).sink { @Sendable note in
                    check.receive(note.sequence)
                }
                defer { cancellable.cancel() }
                let sender = UncheckedBox(subject)
                return timeMainBurst(count: count, check: check) { i in sender.value.send(Tick(sequence: i)) }
            })
        contenders.append(
            BurstContender("NotificationCenter, OperationQueue.main observer") { count in
                let check = OrderCheck(expecting: count, sink: sink)
                let center = NotificationCenter()
                let token = center.addObserver(forName: .tick, object: nil, queue: .main) { @Sendable note in
                    check.receive(note.userInfo?["sequence"] as? Int ?? -1)
                }
                defer { center.removeObserver(token) }
                return timeMainBurst(count: count, check: check) { i in
                    center.post(name: .tick, object: nil, userInfo: ["sequence": i])
                }
            })

        let results = measureBursts(contenders, size: settings.mainBurstSize, rounds: settings.burstRounds)
        return MainBurstResult(
            section: Section(
                title: "Burst of \(settings.mainBurstSize.formatted) posts from a background thread to the main queue",
                metric: "ns/notification", rows: burstRows(contenders, results)),
            herald: results[0])
    }

    /// `MainActorMessage` can only be posted on the main actor: a background poster hops first.
    private func mainActorMessageViaTaskContender() -> BurstContender {
        let name = "MainActorMessage, posted via Task { @MainActor }"
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
            return BurstContender(name, unavailable: typedMessagesMissing)
        }
        let sink = self.sink
        return BurstContender(name) { count in
            let check = OrderCheck(expecting: count, sink: sink)
            let center = NotificationCenter()
            let token = center.addObserver(for: MainTickMessage.self) { message in check.receive(message.sequence) }
            defer { center.removeObserver(token) }
            return timeMainBurst(count: count, check: check) { i in
                Task { @MainActor in center.post(MainTickMessage(sequence: i)) }
            }
        }
    }

    // MARK: Round trip

    struct RoundTripResult {
        var section: Section
        var herald: Double?
        var bare: Double?
    }

    func roundTrip() -> RoundTripResult {
        let queue = DispatchQueue(label: "herald.compare.round-trip")
        let semaphore = DispatchSemaphore(value: 0)
        let sink = self.sink

        let hub = NotificationHub()
        let token = hub.observe(Ping.self, on: .queue(queue)) { note in sink.add(note.value) }

        let center = NotificationCenter()
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 1
        operations.underlyingQueue = queue
        let centerToken = center.addObserver(forName: .ping, object: nil, queue: operations) { @Sendable _ in
            sink.add(1)
        }

        let contenders = [
            SyncContender("bare: queue.async { signal }; wait") { n in
                for i in 0..<n {
                    queue.async {
                        sink.add(i)
                        semaphore.signal()
                    }
                    semaphore.wait()
                }
            },
            SyncContender("Herald postAndWait") { n in
                for i in 0..<n { hub.postAndWait(Ping(value: i)) }
            },
            SyncContender("NotificationCenter.post, OperationQueue observer") { n in
                for _ in 0..<n { center.post(name: .ping, object: nil) }
            },
        ]
        let medians = measureInterleaved(contenders, settings: settings)
        token.cancel()
        center.removeObserver(centerToken)
        var rows = contenders.enumerated().map { index, contender in
            Row(contender: contender.name, value: medians[index], unavailable: contender.unavailable)
        }
        rows[1].isHerald = true
        rows[2].notes.append("on Linux, post waits for the operation")
        return RoundTripResult(
            section: Section(title: "Round trip to another serial queue", metric: "ns/round trip", rows: rows),
            herald: medians[1], bare: medians[0])
    }
}

/// The result rows of a burst scenario, with inversions and losses as notes.
private func burstRows(_ contenders: [BurstContender], _ results: [BurstResult]) -> [Row] {
    contenders.enumerated().map { index, contender in
        var row = Row(
            contender: contender.name, value: results[index].nanosecondsPerNotification,
            unavailable: contender.unavailable)
        row.isHerald = index == 0
        if contender.unavailable == nil {
            row.notes.append("\(results[index].inversions.formatted) inversions")
            if results[index].lost > 0 { row.notes.append("\(results[index].lost.formatted) not delivered (timeout)") }
        }
        return row
    }
}

/// Posts from a background thread while the main thread runs its run loop, which drains the
/// main queue; timed until the last delivery.
@MainActor
func timeMainBurst(count: Int, check: OrderCheck, post: @escaping @Sendable (Int) -> Void) -> BurstSample {
    let start = nowNanoseconds()
    let poster = Thread {
        for i in 0..<count { post(i) }
    }
    poster.start()
    _ = runMainQueue(until: { check.isComplete })
    let end = check.finishedAt ?? nowNanoseconds()
    return BurstSample(
        nanosecondsPerNotification: Double(end - start) / Double(count),
        inversions: check.inversions,
        lost: count - check.received
    )
}

/// A delivery executor that counts the jobs it is handed and runs them on a serial queue.
final class CountingExecutor: DeliveryExecutor {
    private let queue: DispatchQueue
    private let count = Atomic<Int>(0)

    init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        count.add(1, ordering: .relaxed)
        queue.async(execute: job)
    }

    var isCurrent: Bool { false }

    var jobs: Int { count.load(ordering: .relaxed) }
}

/// Hands a non-`Sendable` value to the one poster thread that uses it.
final class UncheckedBox<T>: @unchecked Sendable {  // Used by one thread at a time: set up, then the poster.
    let value: T
    init(_ value: T) { self.value = value }
}
