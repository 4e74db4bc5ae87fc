import Dispatch
import Testing

@testable import Herald

@Suite("Waiter and HelpRequest")
struct WaiterTests {
    /// Starts a waiter on `queue` and returns it once it exists, with the result of its wait.
    private static func waitOn(
        _ queue: DispatchQueue, until deadline: DispatchTime = .distantFuture
    ) async throws -> (Waiter, Task<Bool, Never>) {
        let created = Locked<Waiter?>(nil)
        let latch = AsyncLatch()
        let wait = Task {
            await onQueue(queue) {
                let waiter = Waiter(isolation: nil)
                created.withLock { $0 = waiter }
                latch.open()
                return waiter.wait(until: deadline)
            }
        }
        await latch.wait()
        let waiter = created.withLock { $0 }
        return (try #require(waiter), wait)
    }

    @Test("finish() from another thread ends the wait, which reports that it completed")
    func finishWakesTheWaitingThread() async throws {
        let (waiter, wait) = try await Self.waitOn(DispatchQueue(label: "waiting"))
        waiter.finish()
        #expect(await wait.value)
    }

    @Test("A wait whose deadline passes before finish() reports that it did not complete")
    func deadlinePasses() async throws {
        let (_, wait) = try await Self.waitOn(DispatchQueue(label: "waiting"), until: .now())
        #expect(await wait.value == false)
    }

    @Test("The waiting thread runs help for the target it occupies, and only that help")
    func helpRunsOnTheOccupiedTarget() async throws {
        let queue = DispatchQueue(label: "waiting")
        let other = DispatchQueue(label: "other")
        let key = DispatchSpecificKeyBox()
        queue.setSpecific(key: key.key, value: 1)
        let ran = Log<String>()
        let (waiter, wait) = try await Self.waitOn(queue)
        waiter.offer(HelpRequest(target: .queue(other)) { ran.append("other") })
        waiter.offer(
            HelpRequest(target: .queue(queue)) {
                ran.append(DispatchQueue.getSpecific(key: key.key) == 1 ? "on the waiting queue" : "elsewhere")
                waiter.finish()
            })
        #expect(await wait.value)
        #expect(ran.values == ["on the waiting queue"])
    }

    @Test("Help offered after the wait completed is refused, and never runs")
    func helpAfterTheWaitIsRefused() async throws {
        let queue = DispatchQueue(label: "waiting")
        let (waiter, wait) = try await Self.waitOn(queue)
        waiter.finish()
        #expect(await wait.value)
        let ran = Log<Int>()
        waiter.offer(HelpRequest(target: .queue(queue)) { ran.append(1) })
        await onQueue(queue) {}
        #expect(ran.values.isEmpty)
    }

    @Test("A waiter made inside another's chain has it as parent, and help asked of the chain reaches both")
    func chainReachesEveryWaiterAbove() {
        let outer = Waiter(isolation: nil)
        let offered = Log<Int>()
        Waiter.chain.withValue(outer) {
            let inner = Waiter(isolation: nil)
            #expect(inner.parent === outer)
            #expect(Waiter.chainAbove(inner).map(ObjectIdentifier.init) == [ObjectIdentifier(outer)])
            Waiter.chain.withValue(inner) {
                Waiter.askChainForHelp { HelpRequest(target: .posting) { offered.append(1) } }
            }
            // Each waiter holds the request until its thread waits: run both waits now, finished.
            inner.finish()
            #expect(inner.wait())
        }
        outer.finish()
        #expect(outer.wait())
        #expect(offered.values == [1, 1])
    }
}
