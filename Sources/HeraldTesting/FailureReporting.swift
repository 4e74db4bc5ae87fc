import Testing

#if canImport(XCTest)
import XCTest
#endif

/// Where a check was called, to report its failure there.
///
/// Built from the caller's `#fileID`, `#filePath`, `#line` and `#column` default arguments, so that
/// a file that imports only XCTest and HeraldTesting can call every check (a
/// `#_sourceLocation` default argument needs `import Testing` at the call site).
struct FailureSite: Sendable {
    /// Where Swift Testing reports.
    let sourceLocation: SourceLocation
    /// Where `XCTFail` reports: `XCTFail` takes a `StaticString` file.
    let file: StaticString
    let line: UInt
    /// Appended to an XCTest failure made at a site that has no `StaticString` file.
    let note: String?

    init(fileID: String, filePath: StaticString, line: Int, column: Int) {
        sourceLocation = SourceLocation(fileID: fileID, filePath: "\(filePath)", line: line, column: column)
        file = filePath
        self.line = UInt(line)
        note = nil
    }

    /// The site of an XCTest twin, which takes XCTest's `file:` and `line:`.
    init(fileID: String, file: StaticString, line: UInt, column: UInt) {
        self.init(fileID: fileID, filePath: file, line: Int(line), column: Int(column))
    }

    /// A site given as a Swift Testing `SourceLocation`; XCTest failures name it in the message.
    init(_ sourceLocation: SourceLocation, file: StaticString = #filePath, line: UInt = #line) {
        self.sourceLocation = sourceLocation
        self.file = file
        self.line = line
        note = " (at \(sourceLocation))"
    }
}

/// Reports a HeraldTesting failure: with `Issue.record` inside a Swift Testing test, and with
/// `XCTFail` otherwise, at `site`.
///
/// Every check, and every failure the stand-in or a recorder records on its own, ends here. On
/// Linux, `Issue.record` outside a Swift Testing test is dropped, so an XCTest test would pass.
///
/// - Parameters:
///   - message: What was expected and what was found.
///   - comment: The caller's note, appended after a colon.
///   - site: Where the check was called.
func reportFailure(_ message: String, comment: Comment? = nil, at site: FailureSite) {
    let text = message + (comment.map { ": \($0.rawValue)" } ?? "")
    #if canImport(XCTest)
    if Test.current == nil {
        XCTFail(text + (site.note ?? ""), file: site.file, line: site.line)
        return
    }
    #endif
    Issue.record(Comment(rawValue: text), sourceLocation: site.sourceLocation)
}

/// Reports `failure`, if there is one, with `comment` at `site`: the end of every check.
///
/// - Parameters:
///   - failure: What the check found wrong, or `nil` if it held.
///   - comment: The caller's note, appended after a colon.
///   - site: Where the check was called.
/// - Returns: `true` if the check held (`failure` is `nil`).
func reportIfFailed(_ failure: String?, comment: Comment?, at site: FailureSite) -> Bool {
    guard let failure else { return true }
    reportFailure(failure, comment: comment, at: site)
    return false
}
