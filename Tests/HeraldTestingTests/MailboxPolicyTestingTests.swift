import Herald
import HeraldTesting
import Testing

private struct DownloadProgress: TypedNotification, Equatable {
    let percent: Int
}

private final class Download: Sendable {}

@Suite("Mailbox policies in HeraldTesting")
struct MailboxPolicyTestingTests {
    @Test("a recorder on a test target coalesces deterministically and counts what it replaced")
    func recorderCoalesces() {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let recorder = hub.record(DownloadProgress.self, on: main.target, bufferingPolicy: .latest)
        for percent in 1...100 { hub.post(DownloadProgress(percent: percent)) }
        main.runUntilIdle()
        #expect(recorder.values == [DownloadProgress(percent: 100)])
        #expect(recorder.replacedCount == 99)
        #expect(recorder.droppedCount == 0)
        #expect(recorder.bufferingPolicy == .latest)
        hub.post(DownloadProgress(percent: 100))
        main.runUntilIdle()
        #expect(recorder.count == 2)
        recorder.stop()
        #expect(recorder.replacedCount == 99)  // still readable
    }

    @Test("a bounded recorder counts its drops")
    func recorderDrops() {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let recorder = hub.record(DownloadProgress.self, on: main.target, bufferingPolicy: .bufferingOldest(2))
        for percent in 1...5 { hub.post(DownloadProgress(percent: percent)) }
        main.runUntilIdle()
        #expect(recorder.values.map(\.percent) == [1, 2])
        #expect(recorder.droppedCount == 3)
    }

    @Test("a per-subject recorder keeps the newest of each subject")
    func recorderPerSubject() {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let first = Download()
        let second = Download()
        let recorder = hub.record(DownloadProgress.self, on: main.target, bufferingPolicy: .latest(perSubject: true))
        for percent in 1...10 {
            hub.post(DownloadProgress(percent: percent), from: first)
            hub.post(DownloadProgress(percent: percent * 10), from: second)
        }
        main.runUntilIdle()
        #expect(recorder.records.count == 2)
        #expect(recorder.records[0].isFrom(first) && recorder.records[0].notification.percent == 10)
        #expect(recorder.records[1].isFrom(second) && recorder.records[1].notification.percent == 100)
        #expect(recorder.replacedCount == 18)
        withExtendedLifetime((first, second)) {}
    }

    @Test("registration expectations see the policy and the counts")
    func registrationExpectations() {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let token = hub.observe(DownloadProgress.self, on: main.target, bufferingPolicy: .latest) { _ in }
        hub.expectRegistered(DownloadProgress.self, on: main.target, bufferingPolicy: .latest)
        for percent in 1...3 { hub.post(DownloadProgress(percent: percent)) }
        hub.expectDiscarded(DownloadProgress.self, replaced: 2)
        main.runUntilIdle()

        withKnownIssue {
            hub.expectRegistered(DownloadProgress.self, bufferingPolicy: .bufferingNewest(10))
        } matching: { issue in
            let text = String(describing: issue.comments)
            return text.contains("buffering bufferingNewest(10)")
                && text.contains("buffering latest (replaced 2, dropped 0)")
        }
        withKnownIssue {
            hub.expectDiscarded(DownloadProgress.self, replaced: 0)
        } matching: { issue in
            String(describing: issue.comments).contains("found replaced 2 and dropped 0")
        }
        withExtendedLifetime(token) {}
    }
}
