import Herald
import HeraldTesting
import Testing

private struct Ping: TypedNotification {}

/// A Swift Testing helper that forwards its caller's location, as Swift Testing helpers do.
private func expectIdle(_ target: TestDeliveryTarget, sourceLocation: SourceLocation = #_sourceLocation) {
    target.expectNoPendingWork("from the helper", sourceLocation: sourceLocation)
}

@Suite("Failure reporting")
struct FailureReportingTests {
    @Test("Inside a Swift Testing test, a check records an issue at the caller's file and line")
    func checksRecordIssuesAtTheCaller() {
        let target = TestDeliveryTarget(name: "main")
        target.enqueue {}
        let line = #line + 2
        withKnownIssue {
            target.expectNoPendingWork()
        } matching: { issue in
            issue.sourceLocation?.fileID == #fileID && issue.sourceLocation?.filePath == #filePath
                && issue.sourceLocation?.line == line
        }
        target.runUntilIdle()
    }

    @Test("Inside a Swift Testing test, an XCTest twin records an issue too, at the caller's line")
    func twinsRecordIssuesUnderSwiftTesting() {
        let hub = NotificationHub()
        let line = #line + 2
        withKnownIssue {
            hub.assertRegistered(Ping.self)
        } matching: { issue in
            issue.sourceLocation?.fileID == #fileID && issue.sourceLocation?.line == line
                && String(describing: issue).contains("expected 1 registration for Ping, found 0")
        }
    }

    @Test("A helper that forwards a SourceLocation reports at its caller")
    func sourceLocationFormsReportAtTheGivenLocation() {
        let target = TestDeliveryTarget(name: "main")
        target.enqueue {}
        let line = #line + 2
        withKnownIssue {
            expectIdle(target)
        } matching: { issue in
            issue.sourceLocation?.line == line && String(describing: issue).contains("from the helper")
        }
        target.runUntilIdle()
    }
}
