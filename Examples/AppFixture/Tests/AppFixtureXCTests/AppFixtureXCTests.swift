// An XCTest-only test target with Xcode 26's defaults: no `import Testing` anywhere in it.
// snippet: begin
import Herald
import HeraldTesting
import XCTest

@testable import AppFixture

nonisolated final class ImportViewModelXCTests: XCTestCase {
    @MainActor
    func testTheViewModelShowsEachImportedFile() async {
        let main = TestMainActor()
        let hub = NotificationHub()
        hub.useMainActorStandIn(main)
        let model = ImportViewModel(hub: hub)
        await Importer(hub: hub).importFiles(["a.txt", "b.txt"])
        XCTAssertEqual(model.importedFiles, [], "held by the stand-in until the test runs it")
        await main.runUntilIdle()
        XCTAssertEqual(model.importedFiles, ["a.txt", "b.txt"])
        hub.assertRegistered(FileImported.self, on: .mainQueue)
        main.assertNoPendingWork()
    }
}
// snippet: end

// snippet: begin
/// A twin's failure fails the XCTest test that caused it, at the caller's line. (On Linux, XCTest
/// has no `XCTExpectFailure`: the case captures its failures to check them.)
nonisolated final class ImportViewModelXCTestFailureTests: XCTestCase {
    private var isCapturing = false
    private var captured: [(message: String, line: Int)] = []

    #if canImport(Darwin)
    override func record(_ issue: XCTIssue) {
        guard isCapturing else { return super.record(issue) }
        captured.append((issue.compactDescription, issue.sourceCodeContext.location?.lineNumber ?? 0))
    }
    #else
    override func recordFailure(
        withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool
    ) {
        guard isCapturing else {
            return super.recordFailure(
                withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
        captured.append((description, lineNumber))
    }
    #endif

    @MainActor
    func testPendingMainActorWorkFailsAtTheCallersLine() async {
        let main = TestMainActor()
        let hub = NotificationHub()
        hub.useMainActorStandIn(main)
        let model = ImportViewModel(hub: hub)
        await Importer(hub: hub).importFiles(["a.txt"])
        isCapturing = true
        main.assertNoPendingWork()
        let line = #line - 1
        isCapturing = false
        XCTAssertEqual(captured.count, 1)
        XCTAssertEqual(captured.first?.line, line)
        XCTAssertTrue(captured.first?.message.contains("expected no pending work") == true)
        await main.runUntilIdle()
        XCTAssertEqual(model.importedFiles, ["a.txt"])
    }
}
// snippet: end
