import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

/// `perform`, `performAndWait` and `perform(after:)` on `DeliveryTarget` and `MainActor`.
@Suite("DeliveryTarget perform")
struct PerformTests {
    // MARK: performAndWait onto the main actor

    @Test func aStructAndABoolSetOnAMainActorObjectFromABackgroundThreadAreReadBack() async throws {
        let view = await MainActor.run { FakeView() }
        let target = ViewFrame(x: 10, y: 20, width: 320, height: 44)
        let (returnedFrame, returnedHidden, ranOnMain) = try await onThread {
            MainActor.performAndWait {
                view.frame = target
                view.isHidden = false
                return (view.frame, view.isHidden, MainQueueProbe.isOnMainQueue)
            }
        }
        #expect(returnedFrame == target)
        #expect(returnedHidden == false)
        #expect(ranOnMain)
        let (storedFrame, storedHidden) = await MainActor.run { (view.frame, view.isHidden) }
        #expect(storedFrame == target)
        #expect(storedHidden == false)
    }

    @Test func aMethodWithArgumentsOfAnyTypeIsCalledOnTheMainActorAndReturnsItsResult() async throws {
        let view = await MainActor.run { FakeView() }
        let summary = try await onThread {
            MainActor.performAndWait {
                view.configure(
                    frame: ViewFrame(x: 0, y: 0, width: 100, height: 50), alpha: 0.5, mode: .aspectFit, animated: true
                )
            }
        }
        #expect(summary == "100.0x50.0 alpha 0.5 aspectFit animated")
        let alpha = await MainActor.run { view.alpha }
        #expect(alpha == 0.5)
    }

    @Test func aResultComputedOnTheMainQueueIsReturnedToABackgroundCaller() async throws {
        let (answer, ranOnMain, callerOnMain) = try await onThread {
            let answer = DeliveryTarget.mainQueue.performAndWait { (6 * 7, MainQueueProbe.isOnMainQueue) }
            return (answer.0, answer.1, MainQueueProbe.isOnMainQueue)
        }
        #expect(answer == 42)
        #expect(ranOnMain)
        #expect(!callerOnMain)
    }

    @Test func performAndWaitRethrowsTheWorksErrorWithItsType() async throws {
        let queue = DispatchQueue(label: "herald.test.rethrow")
        let caught = try await onThread { () -> LoadError? in
            do throws(LoadError) {
                _ = try DeliveryTarget.queue(queue).performAndWait { () throws(LoadError) -> Int in
                    throw LoadError(path: "/tmp/missing")
                }
                return nil
            } catch {
                return error  // typed: LoadError, no cast needed
            }
        }
        #expect(caught == LoadError(path: "/tmp/missing"))
    }

    @Test func mainActorPerformAndWaitRethrowsTheWorksError() async throws {
        let caught = try await onThread { () -> LoadError? in
            do throws(LoadError) {
                try MainActor.performAndWait { () throws(LoadError) in throw LoadError(path: "main") }
                return nil
            } catch {
                return error
            }
        }
        #expect(caught == LoadError(path: "main"))
    }

    // MARK: Inline when already on the target

    @Test @MainActor func performAndWaitOnMainFromTheMainActorRunsInline() {
        var steps = ["before"]
        let value = DeliveryTarget.mainQueue.performAndWait {
            // Inline: the work runs here, before performAndWait returns.
            MainActor.assumeIsolated { () -> Int in
                1
            }
        }
        steps.append("work")
        let other = MainActor.performAndWait {
            steps.append("main actor work")
            return 2
        }
        steps.append("after")
        #expect(value + other == 3)
        #expect(steps == ["before", "work", "main actor work", "after"])
    }

    @Test func performAndWaitOnMainFromAPlainMainQueueBlockRunsInline() async {
        let steps = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                var steps = ["before"]
                steps.append(
                    DeliveryTarget.mainQueue.performAndWait { "work on main: \(MainQueueProbe.isOnMainQueue)" })
                steps.append("after")
                continuation.resume(returning: steps)
            }
        }
        #expect(steps == ["before", "work on main: true", "after"])
    }

    @Test func theMainDispatchQueuePassedAsAQueueIsTheMainTarget() async {
        // On Linux each read of `DispatchQueue.main` is a new wrapper object.
        #expect(DeliveryTarget.queue(DispatchQueue.main) == .mainQueue)
        let target = DeliveryTarget.queue(DispatchQueue.main)
        let steps = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                var steps = ["before"]
                steps.append(target.performAndWait { "work" })
                steps.append("after")
                continuation.resume(returning: steps)
            }
        }
        #expect(steps == ["before", "work", "after"])
    }

    @Test func performAndWaitOnAQueueFromThatQueueRunsInline() async {
        let queue = DispatchQueue(label: "herald.test.inline")
        let target = DeliveryTarget.queue(queue)
        let steps = await withCheckedContinuation { continuation in
            queue.async {
                var steps = ["before"]
                steps.append(target.performAndWait { "work" })
                steps.append("after")
                continuation.resume(returning: steps)
            }
        }
        #expect(steps == ["before", "work", "after"])
    }

    @Test func aNestedWaitFromOneQueueToAnotherAndBackCompletes() async throws {
        let first = DispatchQueue(label: "herald.test.nested-1")
        let key = DispatchSpecificKey<Int>()
        first.setSpecific(key: key, value: 1)
        let a = DeliveryTarget.queue(first)
        let b = DeliveryTarget.queue(DispatchQueue(label: "herald.test.nested-2"))
        // A waits for B, which waits for A: the blocked queue A runs the innermost work.
        let innermost = try await onThread {
            a.performAndWait {
                b.performAndWait {
                    a.performAndWait { DispatchQueue.getSpecific(key: key) }
                }
            }
        }
        #expect(innermost == 1)
    }

    // MARK: perform always enqueues

    @Test func performOnTheCurrentQueueRunsAfterTheCallerReturns() async {
        let queue = DispatchQueue(label: "herald.test.enqueue")
        let target = DeliveryTarget.queue(queue)
        let log = Locked<[String]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                target.perform {
                    log.withLock { $0.append("performed") }
                    continuation.resume()
                }
                log.withLock { $0.append("caller returned") }
            }
        }
        #expect(log.withLock { $0 } == ["caller returned", "performed"])
    }

    @Test func performOnPostingDoesNotRunInsideTheCall() async {
        let log = Locked<[String]>([])
        // The work waits until the caller has returned from `perform`: if `perform` ran it inside
        // the call, the wait would time out with "caller returned" still missing from the log.
        let callerReturned = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            log.withLock { $0.append("before") }
            DeliveryTarget.posting.perform {
                let waited = callerReturned.wait(timeout: .now() + 60)
                log.withLock { $0.append(waited == .success ? "performed" : "performed inside the call") }
                continuation.resume()
            }
            log.withLock { $0.append("caller returned") }
            callerReturned.signal()
        }
        #expect(log.withLock { $0 } == ["before", "caller returned", "performed"])
    }

    @Test @MainActor func mainActorPerformEnqueuesEvenOnTheMainActor() async {
        var steps: [String] = []
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            MainActor.perform {
                steps.append("performed")
                continuation.resume()
            }
            steps.append("caller returned")
        }
        #expect(steps == ["caller returned", "performed"])
    }

    @Test func performRunsWorkFromOneThreadInSubmissionOrder() async {
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 1
        let target = DeliveryTarget.operationQueue(operations)
        let order = Locked<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for index in 0..<50 {
                target.perform {
                    order.withLock { $0.append(index) }
                    if index == 49 { continuation.resume() }
                }
            }
        }
        #expect(order.withLock { $0 } == Array(0..<50))
    }

    // MARK: perform(after:)

    @Test(arguments: PerformTargetKind.allCases)
    func performAfterFiresNoEarlierThanAskedOnTheRightTarget(kind: PerformTargetKind) async throws {
        let fixture = TargetFixture(kind)
        defer { fixture.tearDown() }
        let delay = Duration.milliseconds(120)
        let clock = ContinuousClock()
        let start = clock.now
        let (elapsed, onTarget) = await withCheckedContinuation { continuation in
            fixture.target.perform(after: delay) {
                continuation.resume(returning: (clock.now - start, fixture.isCurrent()))
            }
        }
        #expect(elapsed >= delay)
        #expect(onTarget)
    }

    @Test func mainActorPerformAfterFiresNoEarlierThanAskedOnTheMainActor() async {
        let view = await MainActor.run { FakeView() }
        let delay = Duration.milliseconds(120)
        let clock = ContinuousClock()
        let start = clock.now
        let (elapsed, hidden) = await withCheckedContinuation { continuation in
            MainActor.perform(after: delay) {
                view.isHidden = false
                continuation.resume(returning: (clock.now - start, view.isHidden))
            }
        }
        #expect(elapsed >= delay)
        #expect(hidden == false)
    }
}

// MARK: - Fixtures

private struct ViewFrame: Sendable, Equatable {
    var x: Double
    var y: Double
    var width: Double
    var height: Double
}

private enum ContentMode: Sendable {
    case scaleToFill, aspectFit
}

@MainActor
private final class FakeView {
    var frame = ViewFrame(x: 0, y: 0, width: 0, height: 0)
    var isHidden = true
    var alpha: Float = 1

    func configure(frame: ViewFrame, alpha: Float, mode: ContentMode, animated: Bool) -> String {
        self.frame = frame
        self.alpha = alpha
        return "\(frame.width)x\(frame.height) alpha \(alpha) \(mode)\(animated ? " animated" : "")"
    }
}

private struct LoadError: Error, Equatable {
    let path: String
}

/// The kinds of target `perform(after:)` is checked on.
enum PerformTargetKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case main, queue, operationQueue, thread

    var testDescription: String { rawValue }
}

/// A target of one kind, and a way to tell whether the calling code runs on it.
private struct TargetFixture: Sendable {
    let target: DeliveryTarget
    let isCurrent: @Sendable () -> Bool
    let tearDown: @Sendable () -> Void

    init(_ kind: PerformTargetKind) {
        switch kind {
        case .main:
            target = .mainQueue
            isCurrent = { MainQueueProbe.isOnMainQueue }
            tearDown = {}
        case .queue:
            let queue = QueueExecutor(label: "herald.test.after")
            target = .queue(queue.queue)
            isCurrent = { queue.isCurrent }
            tearDown = {}
        case .operationQueue:
            let queue = OperationQueue()
            target = .operationQueue(queue)
            isCurrent = { OperationQueue.current === queue }
            tearDown = {}
        case .thread:
            let thread = DeliveryThread(name: "herald-after")
            target = .thread(thread)
            isCurrent = { thread.isCurrent }
            tearDown = { thread.shutdown() }
        }
    }
}

/// Runs blocking code on a fresh thread, so that the test's own executor is never blocked.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
