import Dispatch
import Herald
import Synchronization
import Testing

@testable import HeraldTesting

private struct Tap: TypedNotification, Equatable { let value: Int }
private struct Echo: TypedNotification, Equatable { let value: Int }

/// A blocking `postAndWait` made from synchronous main-actor code, as an app's button action does.
@MainActor
private func postAndWaitFromTheMainActor(_ hub: NotificationHub, _ tap: Tap) -> DeliveryReport {
    hub.postAndWait(tap)
}

@Suite("TestMainActor")
@MainActor
struct TestMainActorTests {
    @Test("Main-actor deliveries wait in the stand-in and run on the main actor, in order")
    func deliveriesRunOnTheMainActorInOrder() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(Tap.self, on: MainActor.shared) { note in
                MainActor.assertIsolated()
                seen.append(note.value)
            }
            for value in 1...3 { hub.post(Tap(value: value)) }
            #expect(seen.isEmpty)
            #expect(main.pendingCount == 1, "one drain job for the three notifications")
            #expect(main.runNext())
            #expect(seen == [1, 2, 3])
            #expect(!main.runNext())
            token.cancel()
        }
    }

    @Test("Observers on .mainQueue go to the stand-in too, and registrations report the main target")
    func mainQueueObserversAndRegistrations() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let recorder = hub.record(Tap.self, on: .mainQueue)
            hub.post(Tap(value: 1))
            #expect(recorder.values.isEmpty)
            await main.runUntilIdle()
            #expect(recorder.takeAll() == [Tap(value: 1)])
            #expect(hub.registrations(of: Tap.self).map(\.target) == [.mainQueue])
            hub.expectRegistered(Tap.self, on: .mainQueue)
        }
    }

    @Test(
        "run(_:) runs the stand-in while a background operation waits for its own main-actor deliveries, and returns what the operation returned"
    )
    func runDrivesTheStandInDuringABackgroundWaitingPost() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(Tap.self, on: MainActor.shared) { note in
                MainActor.assertIsolated()
                seen.append(note.value)
                hub.post(Echo(value: note.value))  // work that a delivery sets off
            }
            var echoes: [Int] = []
            let echoToken = hub.observe(Echo.self, on: MainActor.shared) { echoes.append($0.value) }
            // The operation posts and waits from the background, as a @concurrent function does:
            // its deliveries run only when the test runs the stand-in.
            let reports = await main.run { () async -> [DeliveryReport] in
                var reports: [DeliveryReport] = []
                for value in 1...3 { reports.append(await hub.postAndWait(Tap(value: value))) }
                return reports
            }
            #expect(reports.map(\.deliveredCount) == [1, 1, 1])
            #expect(seen == [1, 2, 3])
            #expect(echoes == [1, 2, 3], "what the deliveries posted ran too: the stand-in is idle")
            main.expectNoPendingWork()
            token.cancel()
            echoToken.cancel()
        }
    }

    @Test("run(_:) rethrows what the operation threw, once the stand-in is idle")
    func runRethrows() async {
        struct Refused: Error, Equatable {}
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(Tap.self, on: MainActor.shared) { seen.append($0.value) }
            var caught: Refused?
            do throws(Refused) {
                _ = try await main.run { () async throws(Refused) -> Int in
                    _ = await hub.postAndWait(Tap(value: 9))
                    throw Refused()
                }
            } catch {
                caught = error
            }
            #expect(caught == Refused())
            #expect(seen == [9])
            main.expectNoPendingWork()
            token.cancel()
        }
    }

    @Test("A blocking postAndWait made on the main actor still runs main-actor observers inline")
    func blockingWaitFromTheMainActorRunsInline() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(Tap.self, on: MainActor.shared) { note in seen.append(note.value) }
            let report = postAndWaitFromTheMainActor(hub, Tap(value: 7))
            #expect(report.deliveredCount == 1)
            #expect(seen == [7])
            await main.runUntilIdle()  // the drain job handed to the stand-in finds nothing left
            #expect(seen == [7])
            token.cancel()
        }
    }

    @Test("An async postAndWait on the main actor runs the held jobs in order, then its own, and reports as the app")
    func asyncWaitingPostOnTheMainActorRunsTheStandIn() async throws {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let failures = Counted()
            hub.errorHandler = { _ in failures.increment() }
            var seen: [Int] = []
            let token = hub.observe(Tap.self, on: MainActor.shared) { note in seen.append(note.value) }
            hub.post(Tap(value: 1))  // held by the stand-in before the waiting post
            let report = await hub.postAndWait(Tap(value: 2))
            #expect(report == DeliveryReport(deliveredCount: 1), "what the app's report says")
            #expect(seen == [1, 2], "per-observer FIFO: the held post first, then the waiting one")

            let timed = try? await hub.postAndWait(Tap(value: 3), timeout: .seconds(600))
            #expect(timed == DeliveryReport(deliveredCount: 1))
            #expect(seen == [1, 2, 3])
            #expect(failures.count == 0)
            await main.runUntilIdle()  // the drain jobs handed to the stand-in find nothing left
            #expect(seen == [1, 2, 3])
            token.cancel()
        }
    }

    @Test("An async postAndWait off the main actor waits until the test runs the stand-in, and counts every observer")
    func asyncWaitingPostOffTheMainActorWaitsForTheTest() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let onMain = hub.observe(Tap.self, on: MainActor.shared) { note in seen.append(note.value) }
            let queued = Counted()
            let onQueue = hub.observe(Tap.self, on: .queue(DispatchQueue(label: "real"))) { _ in queued.increment() }
            let waiting = Task.detached { await hub.postAndWait(Tap(value: 1)) }
            while main.pendingCount == 0 { await Task.yield() }  // the post has reached the stand-in
            #expect(seen.isEmpty)
            await main.runUntilIdle()
            let report = await waiting.value
            #expect(seen == [1])
            #expect(queued.count == 1)
            #expect(report == DeliveryReport(deliveredCount: 2), "both observers, each counted once")
            onMain.cancel()
            onQueue.cancel()
        }
    }

    @Test("A waiting post still held when the stand-in's scope ends fails the test, names the post, and returns")
    func heldWaitingPostEndsWithTheScope() async throws {
        let hub = NotificationHub()
        let reported = Counted()
        hub.errorHandler = { _ in reported.increment() }
        var waiting: Task<DeliveryReport, Never>?
        var token: ObservationToken?
        var standIn: TestMainActor?
        await withKnownIssue {
            await withMainActorStandIn { main in
                standIn = main
                hub.useMainActorStandIn(main)
                token = hub.observe(Tap.self, on: MainActor.shared) { _ in }
                waiting = Task.detached { await hub.postAndWait(Tap(value: 1)) }
                while main.pendingCount == 0 { await Task.yield() }
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("postAndWait(Tap) still waited for deliveries held by") }
        }
        let report = try #require(await waiting?.value)
        #expect(report.deliveredCount + report.skippedCount == 1)
        #expect(report.skippedCount == 1)
        let failure = try #require(report.failures.first)
        #expect((failure.error as? PendingWorkError)?.waitsForManualExecutor == true)
        #expect(failure.fileID.hasSuffix("TestMainActorTests.swift"))
        #expect(reported.count == 1, "the failure in the report also went to the error handler, once")
        // The job still held by the stand-in runs now and counts nothing more; running it also lets
        // go of the observer it holds, which holds the hub that holds the stand-in.
        await standIn?.runUntilIdle()
        #expect(reported.count == 1)
        #expect(report == (try #require(await waiting?.value)))
        token?.cancel()
    }

    @Test(
        "An async postAndWait whose notification a full mailbox dropped returns at once with the drop, and no failure")
    func asyncWaitingPostDroppedByAPolicy() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(Tap.self, on: MainActor.shared, bufferingPolicy: .bufferingOldest(2)) { note in
                seen.append(note.value)
            }
            hub.post(Tap(value: 1))
            hub.post(Tap(value: 2))
            // The mailbox is full: the third is dropped, so there is nothing for the test to run.
            let report = await hub.postAndWait(Tap(value: 3))
            #expect(report.droppedCount == 1)
            #expect(report.deliveredCount == 0)
            #expect(report.failures.isEmpty, "a dropped notification does not wait in the stand-in")
            #expect(token.droppedCount == 1)
            await main.runUntilIdle()
            #expect(seen == [1, 2])
            token.cancel()
        }
    }

    @Test("waitUntilIdle fails fast while the stand-in holds deliveries, and returns once they ran")
    func quiescenceFailsFast() async throws {
        try await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let token = hub.observe(Tap.self, on: MainActor.shared) { _ in }
            hub.post(Tap(value: 1))
            do throws(PendingWorkError) {
                try await hub.waitUntilIdle(timeout: .seconds(60))
                Issue.record("expected waitUntilIdle to fail fast")
            } catch {
                #expect(error.waitsForManualExecutor)
                #expect(!error.isTimeout)
                #expect(error.pending.first?.target == .mainQueue)
                #expect(error.pending.first?.queuedCount == 1)
            }
            await main.runUntilIdle()
            try await hub.waitUntilIdle()
            token.cancel()
        }
    }

    @Test(
        "Two drives that wait for the same async handler both return when it ends",
        .timeLimit(.minutes(1))
    )
    func twoWaitingDrivesBothReturn() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let (gate, open) = AsyncStream<Void>.makeStream()
            var finished = false
            let token = hub.observe(Tap.self, on: MainActor.shared) { _ async in
                for await _ in gate { break }
                finished = true
            }
            hub.post(Tap(value: 1))
            #expect(main.runNext())  // starts the handler, which waits at the gate
            async let first = main.runUntilIdle()
            async let second = main.runUntilIdle()
            // Both drives wait for the handler's task before it may end.
            await main.waitUntilDrivesWait(2)
            open.finish()
            let ran = await (first, second)
            #expect(finished)
            #expect(ran == (0, 0))
            token.cancel()
        }
    }

    @Test("A nonisolated async handler on .mainQueue runs as the stand-in's jobs, when the test runs them")
    func nonisolatedAsyncHandlerOnTheMainQueueRunsOnTheStandIn() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let onStandIn = Locked<[Bool]>([])  // for each part of the handler, whether it ran on the stand-in
            let token = hub.observe(Tap.self, on: .mainQueue) { _ async in
                onStandIn.withLock { $0.append(main.isCurrent) }
                await Task.yield()
                onStandIn.withLock { $0.append(main.isCurrent) }
            }
            hub.post(Tap(value: 1))
            #expect(main.runNext())  // the drain job: it starts the handler's task
            #expect(onStandIn.withLock { $0 } == [], "the task waits for the test to run the stand-in")
            await main.runUntilIdle()
            #expect(onStandIn.withLock { $0 } == [true, true])
            token.cancel()
        }
    }

    @Test("A waiting post made by a handler that the test runs does not fail: the stand-in is running")
    func waitingPostInsideARunningStandIn() async throws {
        try await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var echoes: [Int] = []
            var reports: [DeliveryReport] = []
            let echo = hub.observe(Echo.self, on: MainActor.shared) { note in echoes.append(note.value) }
            let tap = hub.observe(Tap.self, on: MainActor.shared) { note async in
                reports.append(await hub.postAndWait(Echo(value: note.value)))
            }
            hub.post(Tap(value: 5))
            await main.runUntilIdle()
            #expect(echoes == [5])
            #expect(reports.map(\.deliveredCount) == [1])
            #expect(reports.map(\.isSuccess) == [true])
            try await hub.waitUntilIdle()
            echo.cancel()
            tap.cancel()
        }
    }

    @Test("MainActor.perform and perform(after:) go to the stand-in and follow its clock")
    func performFollowsTheStandIn() async {
        await withMainActorStandIn { main in
            var log: [String] = []
            MainActor.perform(after: .seconds(2)) { log.append("later") }
            MainActor.perform { log.append("now") }
            #expect(log.isEmpty)
            await main.runUntilIdle()
            #expect(log == ["now"])
            await main.advance(by: .milliseconds(1_999))
            #expect(log == ["now"])
            await main.advance(by: .milliseconds(1))
            #expect(log == ["now", "later"])
            #expect(main.now == .seconds(2))
        }
    }

    @Test("expectNoPendingWork says what is left: jobs due now, jobs due later")
    func pendingWorkIsReported() async {
        await withMainActorStandIn(name: "ui") { main in
            MainActor.perform {}
            MainActor.perform(after: .seconds(1)) {}
            withKnownIssue {
                main.expectNoPendingWork()
            } matching: { issue in
                let text = String(describing: issue)
                return text.contains("TestMainActor(ui) expected no pending work, found 2 jobs")
                    && text.contains("1 due now") && text.contains("1 due later")
            }
            await main.advance(by: .seconds(1))
            #expect(main.expectNoPendingWork())
            #expect(main.executedCount == 2)
        }
    }
}
