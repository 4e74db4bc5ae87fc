import Synchronization
import Testing

@testable import Herald

/// The mailbox stores items in fixed-size blocks: a large backlog keeps its order, every payload
/// is delivered or destroyed exactly once, and the blocks a drain empties are given back.
@Suite("Mailbox blocks", .serialized)
struct MailboxBlockTests {
    /// A payload with a reference, so that a lost or doubled move shows up as a wrong count of
    /// live objects.
    final class Tracked: Sendable {
        static let live = Atomic<Int>(0)
        let value: Int
        init(_ value: Int) {
            self.value = value
            Self.live.add(1, ordering: .relaxed)
        }
        deinit { Self.live.subtract(1, ordering: .relaxed) }
    }

    struct Big: TypedNotification {
        let tracked: Tracked
        let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    }

    @Test("A backlog of many blocks drains in order, slice by slice, with every payload released once")
    func backlogAcrossBlocks() {
        let layout = ItemQueue.Layout(of: Big.self)
        #expect(layout.blockItems < MailboxStateMachine.sliceLimit)  // slices straddle blocks
        let live = Tracked.live.load(ordering: .relaxed)
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let received = Locked<[Int]>([])
        let token = hub.observe(Big.self, on: .executor(executor)) { note in
            received.withLock { $0.append(note.tracked.value) }
        }
        let count = 10 * layout.blockItems * 7 + 3
        for value in 0..<count {
            hub.post(Big(tracked: Tracked(value)))
        }
        #expect(Tracked.live.load(ordering: .relaxed) == live + count)
        executor.runUntilIdle()
        #expect(received.withLock { $0 } == Array(0..<count))
        #expect(Tracked.live.load(ordering: .relaxed) == live)
        token.cancel()
    }

    @Test("Cancelling an observer with a backlog of many blocks destroys every queued payload")
    func cancelDropsEveryBlock() {
        let live = Tracked.live.load(ordering: .relaxed)
        let hub = NotificationHub()
        let executor = ManualExecutor()
        let token = hub.observe(Big.self, on: .executor(executor)) { _ in }
        for value in 0..<5_000 {
            hub.post(Big(tracked: Tracked(value)))
        }
        executor.runNext()  // one slice runs; the rest stays queued
        token.cancel()
        #expect(Tracked.live.load(ordering: .relaxed) == live)
        executor.runUntilIdle()
    }

    @Test("The queue keeps at most one block once it is empty, and moves runs across block edges")
    func queueBlocks() {
        let layout = ItemQueue.Layout(of: Int.self)
        let move: ItemQueue.Move = { $1.copyMemory(from: $0, byteCount: $2 * layout.stride) }
        var queue = ItemQueue()
        let total = layout.blockItems * 5 + 1
        for value in 0..<total {
            let slot = queue.appendSlot(layout)
            (slot + layout.payloadOffset).storeBytes(of: value, as: Int.self)
        }
        #expect(queue.blockCount == 6)
        var seen: [Int] = []
        var batch = ItemQueue()
        while !queue.isEmpty {
            let take = min(queue.count, layout.blockItems / 2 + 3)
            queue.moveFront(take, into: &batch, layout, move: move)
            for index in 0..<batch.count {
                seen.append((batch.item(index, layout) + layout.payloadOffset).load(as: Int.self))
            }
            batch.removeAllMoved()
            #expect(queue.blockCount <= 6 - (total - queue.count) / layout.blockItems)
        }
        #expect(seen == Array(0..<total))
        #expect(queue.blockCount <= 1)
        #expect(batch.blockCount <= 1)
        queue.deallocate()
        batch.deallocate()
    }
}
