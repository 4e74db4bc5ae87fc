import Foundation
import Testing

/// Runs `herald-runloop-probe`, whose main thread drives `RunLoop.main.run()`, so main-queue
/// delivery is checked on the real main thread as well as under the Swift Testing runner.
@Suite("Main thread under RunLoop")
struct RunLoopMainThreadTests {
    @Test("main delivery works on the real main thread driven by RunLoop.main")
    func probePasses() async throws {
        let result = try await runProduct("herald-runloop-probe")
        #expect(result.status == 0, "\(result.output)")
        for line in [
            "PASS postAndWait from top-level main-thread code ran the main observer inline",
            "PASS post from a background thread delivered on the real main thread",
            "PASS postAndWait from a background thread returned after the main observer ran",
            "PASS MainActor.performAndWait from a background thread ran on the main thread",
            "PASS postAndWait from a main-queue block ran inline",
            "PASS DeliveryTarget.mainQueue.performAndWait from the main queue ran inline",
            "PASS postAndWait from a RunLoop timer on the main thread ran inline",
            "ALL PASSED",
        ] {
            #expect(result.output.contains(line), "missing: \(line)\n\(result.output)")
        }
    }
}

/// Runs an executable built next to the test bundle and collects its output, without blocking.
func runProduct(_ name: String, arguments: [String] = []) async throws -> (status: Int32, output: String) {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let process = Process()
    process.executableURL = directory.appendingPathComponent(name)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    let collected = Locked(Data())
    pipe.fileHandleForReading.readabilityHandler = { handle in
        let chunk = handle.availableData
        collected.withLock { $0.append(chunk) }
    }
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
    pipe.fileHandleForReading.readabilityHandler = nil
    let rest = pipe.fileHandleForReading.readDataToEndOfFile()
    let output = collected.withLock { $0 + rest }
    return (status, String(decoding: output, as: UTF8.self))
}
