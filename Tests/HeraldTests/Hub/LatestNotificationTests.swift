import Dispatch
import Foundation
import Herald
import Observation
import Testing

private struct Progress: TypedNotification, Equatable {
    let fraction: Double
}

private final class Download: Sendable {}

@MainActor
@Observable
private final class DownloadViewModel {
    let progress: LatestNotification<Progress>

    init(hub: NotificationHub, download: Download? = nil) {
        progress = LatestNotification(Progress.self, in: hub, from: download)
    }

    var percent: Int { Int((progress.value?.fraction ?? 0) * 100) }
}

/// Counts Observation's change reports for `read`, re-arming after each, and checks each report
/// comes on the main queue.
@MainActor
private final class ChangeWatcher {
    private(set) var changes = 0
    private(set) var offMain = 0
    private let read: @MainActor () -> Void
    var onChange: (@MainActor () -> Void)?

    init(_ read: @escaping @MainActor () -> Void) {
        self.read = read
        arm()
    }

    private func arm() {
        // The model's registrar keeps this closure until the next change: it holds the watcher
        // weakly, so that a watcher left armed at the end of a test is no reference cycle.
        withObservationTracking {
            read()
        } onChange: { [weak self] in
            let isMain = MainQueueProbe.isOnMainQueue
            MainActor.assumeIsolated {
                guard let self else { return }
                self.changes += 1
                if !isMain { self.offMain += 1 }
                // Re-arm after the change has been made.
                DispatchQueue.main.async {
                    MainActor.assumeIsolated {
                        self.arm()
                        self.onChange?()
                    }
                }
            }
        }
    }
}

/// A block on the main queue that enqueues itself again, and the most a counter grew between two
/// of its runs.
@MainActor
private final class MainQueueTurns {
    private let counter: @MainActor () -> Int
    private var isTicking = true
    private var lastCount = 0
    private(set) var mostInOneTurn = 0

    init(_ counter: @escaping @MainActor () -> Int) {
        self.counter = counter
    }

    func start() {
        let count = counter()
        mostInOneTurn = max(mostInOneTurn, count - lastCount)
        lastCount = count
        guard isTicking else { return }
        DispatchQueue.main.async { MainActor.assumeIsolated { self.start() } }
    }

    func stop() {
        isTicking = false
    }
}

@Suite("LatestNotification: the newest notification as Observation state")
@MainActor
struct LatestNotificationTests {
    @Test("a view model's LatestNotification changes once per delivered value, on the main actor")
    func changesOncePerDeliveredValue() async {
        let hub = NotificationHub()
        let model = DownloadViewModel(hub: hub)
        let watcher = ChangeWatcher { _ = model.percent }
        #expect(model.progress.value == nil)
        for (index, fraction) in [0.25, 0.5, 0.5].enumerated() {
            _ = await Task.detached { await hub.postAndWait(Progress(fraction: fraction)) }.value
            #expect(model.progress.updateCount == index + 1)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.main.async { done.resume() }  // the re-arm is queued behind the change
            }
        }
        #expect(model.percent == 50)
        #expect(watcher.changes == 3, "an equal value is reported too")
        #expect(watcher.offMain == 0)
    }

    @Test("a flood of 100,000 posts updates it at most once per main-queue turn, ending with the newest")
    func floodCoalesces() async {
        let hub = NotificationHub()
        let model = DownloadViewModel(hub: hub)
        let last = 99_999
        let done = AsyncLatch()
        let turns = MainQueueTurns { model.progress.updateCount }
        let watcher = ChangeWatcher { _ = model.progress.value }
        watcher.onChange = { if model.progress.value?.fraction == Double(last) { done.open() } }
        turns.start()
        let poster = Thread {
            for value in 0...last { hub.post(Progress(fraction: Double(value))) }
        }
        poster.start()
        await done.wait()
        turns.stop()
        #expect(model.progress.value == Progress(fraction: Double(last)))
        #expect(model.progress.updateCount + model.progress.replacedCount == last + 1)
        #expect(turns.mostInOneTurn <= 1, "\(turns.mostInOneTurn) updates between two runs of a main-queue block")
        #expect(watcher.offMain == 0)
    }

    @Test("with from:, it holds the newest notification of that subject only")
    func perSubject() async {
        let hub = NotificationHub()
        let mine = Download()
        let other = Download()
        let model = DownloadViewModel(hub: hub, download: mine)
        await Task.detached {
            await hub.postAndWait(Progress(fraction: 0.1), from: mine)
            await hub.postAndWait(Progress(fraction: 0.9), from: other)
        }.value
        #expect(model.progress.value == Progress(fraction: 0.1))
    }

    @Test("it starts with the retained value, and its observation ends with the view model")
    func replayAndLifetime() async {
        let hub = NotificationHub()
        hub.postAndRetain(Progress(fraction: 0.3))
        var model: DownloadViewModel? = DownloadViewModel(hub: hub)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async { done.resume() }
        }
        #expect(model?.progress.value == Progress(fraction: 0.3))
        #expect(hub.observerCount(of: Progress.self) == 1)
        model = nil
        #expect(hub.observerCount(of: Progress.self) == 0)
    }
}
