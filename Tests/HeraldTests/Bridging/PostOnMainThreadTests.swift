import Dispatch
import Foundation
import Herald
import Testing

@Suite("NotificationCenter.postOnMainThread")
struct PostOnMainThreadTests {
    /// Posts from a nonisolated async function: Swift picks the async form.
    private static func postFromNonisolatedCode(_ center: NotificationCenter, bytes: Int, wait: Bool) async {
        await center.postOnMainThread(
            Notification(name: .heraldTestDownloadFinished, object: nil, userInfo: ["bytes": bytes]),
            waitUntilDone: wait)
    }

    @Test("the async form from a nonisolated async function suspends until the main-queue observers ran")
    func asyncFormFromNonisolatedCodeWaits() async {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
        }
        defer { center.removeObserver(token) }
        await Self.postFromNonisolatedCode(center, bytes: 4096, wait: true)
        #expect(record.calls == [ObserverRecord.Call(onMain: true, bytes: 4096)])
    }

    @Test("the async form without waiting returns once enqueued; the observers run on the main queue in order")
    func asyncFormWithoutWaiting() async {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let latch = AsyncLatch()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
            if record.calls.count == 3 { latch.open() }
        }
        defer { center.removeObserver(token) }
        for bytes in [1, 2, 3] { await Self.postFromNonisolatedCode(center, bytes: bytes, wait: false) }
        await latch.wait()
        #expect(record.calls == [1, 2, 3].map { ObserverRecord.Call(onMain: true, bytes: $0) })
    }

    @Test("the async form from a @MainActor async function posts inline, with either waitUntilDone")
    @MainActor
    func asyncFormFromTheMainActor() async {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
        }
        defer { center.removeObserver(token) }
        await center.postOnMainThread(name: .heraldTestDownloadFinished, userInfo: ["bytes": 1])
        #expect(record.calls == [ObserverRecord.Call(onMain: true, bytes: 1)])
        await center.postOnMainThread(name: .heraldTestDownloadFinished, userInfo: ["bytes": 2], waitUntilDone: false)
        #expect(record.calls.map(\.bytes) == [1, 2])
    }

    @Test func fromABackgroundThreadTheObserverRunsOnTheMainQueueBeforeTheCallReturns() async throws {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
        }
        defer { center.removeObserver(token) }

        let seenWhenReturned = try await onThread { () -> [ObserverRecord.Call] in
            center.postOnMainThread(
                Notification(name: .heraldTestDownloadFinished, object: nil, userInfo: ["bytes": 4096])
            )
            return record.calls
        }
        #expect(seenWhenReturned == [ObserverRecord.Call(onMain: true, bytes: 4096)])
    }

    @Test func theNameObjectAndUserInfoFormDeliversAllThreeOnTheMainQueue() async throws {
        let center = NotificationCenter()
        let sender = Sender(id: 7)
        let record = ObserverRecord()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: sender, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
            record.noteSender((note.object as? Sender)?.id)
        }
        defer { center.removeObserver(token) }

        let seenWhenReturned = try await onThread { () -> ([ObserverRecord.Call], [Int?]) in
            center.postOnMainThread(
                name: .heraldTestDownloadFinished, object: sender, userInfo: ["bytes": 512], waitUntilDone: true)
            return (record.calls, record.senders)
        }
        #expect(seenWhenReturned.0 == [ObserverRecord.Call(onMain: true, bytes: 512)])
        #expect(seenWhenReturned.1 == [7])
    }

    @Test func withoutWaitingTheObserversStillRunOnTheMainQueueInPostOrder() async throws {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let allSeen = DispatchSemaphore(value: 0)
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
            if record.calls.count == 3 { allSeen.signal() }
        }
        defer { center.removeObserver(token) }

        try await onThread {
            for bytes in [1, 2, 3] {
                center.postOnMainThread(
                    name: .heraldTestDownloadFinished, object: nil, userInfo: ["bytes": bytes], waitUntilDone: false)
            }
            allSeen.wait()
        }
        #expect(record.calls.map(\.bytes) == [1, 2, 3])
        #expect(record.calls.allSatisfy { $0.onMain })
    }

    @Test @MainActor func fromTheMainActorItPostsInlineWithoutDeadlock() {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
        }
        defer { center.removeObserver(token) }

        center.postOnMainThread(Notification(name: .heraldTestDownloadFinished, object: nil, userInfo: ["bytes": 1]))
        let afterWaiting = record.calls.count
        center.postOnMainThread(
            name: .heraldTestDownloadFinished, object: nil, userInfo: ["bytes": 2], waitUntilDone: false)
        let afterNotWaiting = record.calls.count

        #expect(afterWaiting == 1)
        #expect(afterNotWaiting == 2)  // inline on the main queue, like the old category
        #expect(
            record.calls == [ObserverRecord.Call(onMain: true, bytes: 1), ObserverRecord.Call(onMain: true, bytes: 2)])
    }

    @Test func fromAPlainMainQueueBlockItPostsInlineWithoutDeadlock() async {
        let center = NotificationCenter()
        let record = ObserverRecord()
        let token = center.addObserver(forName: .heraldTestDownloadFinished, object: nil, queue: nil) { note in
            record.note(onMain: MainQueueProbe.isOnMainQueue, bytes: note.userInfo?["bytes"] as? Int)
        }
        defer { center.removeObserver(token) }

        let countWhenReturned = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                center.postOnMainThread(name: .heraldTestDownloadFinished, userInfo: ["bytes": 9])
                continuation.resume(returning: record.calls.count)
            }
        }
        #expect(countWhenReturned == 1)
        #expect(record.calls == [ObserverRecord.Call(onMain: true, bytes: 9)])
    }
}

// MARK: - Fixtures

extension Notification.Name {
    fileprivate static let heraldTestDownloadFinished = Notification.Name("HeraldTests.DownloadFinished")
}

private final class Sender: Sendable {
    let id: Int

    init(id: Int) {
        self.id = id
    }
}

/// What the observer saw, readable from any thread.
private final class ObserverRecord: Sendable {
    struct Call: Equatable, Sendable {
        let onMain: Bool
        let bytes: Int?
    }

    private let state = Locked<(calls: [Call], senders: [Int?])>(([], []))

    func note(onMain: Bool, bytes: Int?) {
        state.withLock { $0.calls.append(Call(onMain: onMain, bytes: bytes)) }
    }

    func noteSender(_ id: Int?) {
        state.withLock { $0.senders.append(id) }
    }

    var calls: [Call] { state.withLock { $0.calls } }
    var senders: [Int?] { state.withLock { $0.senders } }
}

/// Runs blocking code on a fresh thread, so that the test's own executor is never blocked.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
