import Dispatch
import Foundation
import Herald
import HeraldTesting
import Synchronization
import Testing

private struct Reading: TypedNotification, Equatable {
    let thread: Int
    let index: Int
}

private final class Sensor: Sendable {}

/// Counts finished threads down to zero.
private final class Countdown: Sendable {
    private let remaining: Atomic<Int>

    init(_ count: Int) {
        remaining = Atomic(count)
    }

    /// Returns `true` for the call that reaches zero.
    func countDown() -> Bool {
        remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0
    }
}

/// Runs `body` on `count` new threads at once, and returns when all have finished.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        let remaining = Countdown(count)
        let start = DispatchGroup()
        start.enter()
        for index in 0..<count {
            Thread {
                start.wait()  // start together, so that the posts overlap
                body(index)
                if remaining.countDown() {
                    done.resume()
                }
            }.start()
        }
        start.leave()
    }
}

@Suite("NotificationRecorder")
struct NotificationRecorderTests {
    @Test("It records each notification with its subject and the target it arrived on")
    func recordsSubjectAndTarget() {
        let hub = NotificationHub()
        let sensor = Sensor()
        let recorder = hub.record(Reading.self)
        hub.post(Reading(thread: 0, index: 1), from: sensor)
        hub.post(Reading(thread: 0, index: 2))
        #expect(recorder.values == [Reading(thread: 0, index: 1), Reading(thread: 0, index: 2)])
        #expect(recorder.count == 2)
        let records = recorder.records
        #expect(records[0].isFrom(sensor))
        #expect(!records[0].isFrom(nil))
        #expect(records[1].isFrom(nil))
        #expect(records.allSatisfy { $0.target == .posting })
    }

    @Test("A recorder on a TestDeliveryTarget records only when the test runs it, and says so")
    func recordsOnTestTarget() {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let recorder = hub.record(Reading.self, on: main.target)
        hub.post(Reading(thread: 0, index: 1))
        #expect(recorder.values.isEmpty)
        main.runUntilIdle()
        #expect(recorder.values == [Reading(thread: 0, index: 1)])
        #expect(recorder.records.first?.target == main.target)
        #expect(recorder.target == main.target)
    }

    @Test("Notifications posted from 4 threads are all recorded, in each thread's order")
    func fourThreadsNoLosses() async {
        let hub = NotificationHub()
        let recorder = hub.record(Reading.self)
        let perThread = 2_500
        await onThreads(4) { thread in
            for index in 0..<perThread {
                hub.post(Reading(thread: thread, index: index))
            }
        }
        let values = recorder.values
        #expect(values.count == 4 * perThread)
        for thread in 0..<4 {
            #expect(values.filter { $0.thread == thread }.map(\.index) == Array(0..<perThread))
        }
        #expect(hub.unobservedPostCount == 0)
    }

    @Test("next() returns notifications one at a time, waiting for deliveries on another queue")
    func nextWaitsForAsyncDeliveries() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "recorder.async")
        let recorder = hub.record(Reading.self, on: .queue(queue))
        hub.post(Reading(thread: 0, index: 1))
        hub.post(Reading(thread: 0, index: 2))
        #expect(try await recorder.next() == Reading(thread: 0, index: 1))
        #expect(try await recorder.next() == Reading(thread: 0, index: 2))
        #expect(recorder.unconsumedCount == 0)

        async let third = recorder.next()
        hub.post(Reading(thread: 0, index: 3))
        #expect(try await third == Reading(thread: 0, index: 3))
        recorder.expectNoFurtherNotifications()
    }

    @Test("next(timeout:) throws a timeout error naming the type when nothing arrives")
    func nextTimesOut() async {
        let hub = NotificationHub()
        let recorder = hub.record(Reading.self)
        do {
            _ = try await recorder.next(timeout: .milliseconds(20))
            Issue.record("next() returned without any post")
        } catch {
            #expect(error.isTimeout)
            #expect(error.description.contains("expected a Reading within"))
        }
    }

    @Test("Stopping the recorder wakes a waiting next() with an error and ends the registration")
    func stopEndsRecording() async throws {
        let hub = NotificationHub()
        let recorder = hub.record(Reading.self)
        hub.post(Reading(thread: 0, index: 1))
        _ = try await recorder.next()
        let waiter = Task { () -> NotificationRecorderError? in
            do throws(NotificationRecorderError) {
                _ = try await recorder.next()  // waiting, or not yet: either way stop() ends it
                return nil
            } catch {
                return error
            }
        }
        recorder.stop()
        let error = await waiter.value
        #expect(error == .stopped(notificationType: "Reading", recordedCount: 1))
        #expect(recorder.isStopped)
        #expect(hub.observerCount(of: Reading.self) == 0)
        hub.post(Reading(thread: 0, index: 2))
        #expect(recorder.count == 1)
    }

    @Test("Cancelling a task waiting in next() makes it throw")
    func cancelledWaitThrows() async {
        let hub = NotificationHub()
        let recorder = hub.record(Reading.self)
        let waiter = Task { () -> NotificationRecorderError? in
            do throws(NotificationRecorderError) {
                _ = try await recorder.next()
                return nil
            } catch {
                return error
            }
        }
        waiter.cancel()
        #expect(await waiter.value == .cancelled(notificationType: "Reading", recordedCount: 0))
    }

    @Test("Letting go of the recorder ends its registration")
    func deinitUnregisters() {
        let hub = NotificationHub()
        do {
            let recorder = hub.record(Reading.self)
            #expect(hub.observerCount(of: Reading.self) == 1)
            hub.post(Reading(thread: 0, index: 1))
            #expect(recorder.count == 1)
        }
        #expect(hub.observerCount(of: Reading.self) == 0)
    }

    @Test("expectNoFurtherNotifications reports what arrived and was not consumed")
    func expectNoFurtherNotificationsReports() async throws {
        let hub = NotificationHub()
        let recorder = hub.record(Reading.self)
        #expect(recorder.expectNoFurtherNotifications())
        hub.post(Reading(thread: 0, index: 1))
        hub.post(Reading(thread: 0, index: 2))
        _ = try await recorder.next()
        withKnownIssue {
            #expect(!recorder.expectNoFurtherNotifications())
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("expected no further notifications, found 1") }
        }
        _ = try await recorder.next()
        #expect(await recorder.expectNoFurtherNotifications(within: .milliseconds(10)))
    }

    @Test("A recorder from a subject records only that subject's posts")
    func subjectFilter() {
        let hub = NotificationHub()
        let mine = Sensor()
        let other = Sensor()
        let recorder = hub.record(Reading.self, from: mine)
        hub.post(Reading(thread: 0, index: 1), from: other)
        hub.post(Reading(thread: 0, index: 2), from: mine)
        hub.post(Reading(thread: 0, index: 3))
        #expect(recorder.values == [Reading(thread: 0, index: 2)])
    }

    @Test("A recorder with replayLatest starts with the retained value")
    func replayLatest() {
        let hub = NotificationHub()
        hub.postAndRetain(Reading(thread: 0, index: 1))
        let recorder = hub.record(Reading.self, replayLatest: true)
        hub.post(Reading(thread: 0, index: 2))
        #expect(recorder.values.map(\.index) == [1, 2])
    }
}
