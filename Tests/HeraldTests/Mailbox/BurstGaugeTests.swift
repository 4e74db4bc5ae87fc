import Dispatch
import Testing

@testable import Herald

@Suite("BurstGauge")
struct BurstGaugeTests {
    @Test("A continued job goes back to the target while items keep arriving, and takes them once they stop")
    func gathersWhileThePosterWorks() {
        let gauge = BurstGauge()
        // Nothing arrived since the last batch: take (and find nothing).
        #expect(gauge.look() == .take(posterPaused: false))
        gauge.noteAppended()
        gauge.noteAppended()
        // Two items arrived since the last look: the poster is at work.
        #expect(gauge.look() == .gather)
        gauge.noteAppended()
        #expect(gauge.look() == .gather)
        // Nothing more since the last look: the poster stopped, so the job takes what is there,
        // and does not linger after it.
        #expect(gauge.look() == .take(posterPaused: true))
    }

    @Test("A continued job takes at once when a slice has piled up since its last batch")
    func takesAFullSlice() {
        let gauge = BurstGauge()
        for _ in 0..<MailboxStateMachine.sliceLimit { gauge.noteAppended() }
        #expect(gauge.look() == .take(posterPaused: false))
        // After a take, the count starts again from there.
        gauge.noteTaken()
        gauge.noteAppended()
        #expect(gauge.look() == .gather)
    }

    @Test("A continued job goes back at most gatherLimit times in a row, however the poster goes on")
    func looksAreBounded() {
        let gauge = BurstGauge()
        var looks = 0
        while looks <= BurstGauge.gatherLimit {
            gauge.noteAppended()
            if gauge.look() != .gather { break }
            looks += 1
        }
        #expect(looks == BurstGauge.gatherLimit)
        // The count of looks starts again after the job took items.
        gauge.noteAppended()
        #expect(gauge.look() == .gather)
    }

    @Test("A burst to a serial queue arrives whole and in order while the drain gathers, and a lone post after it too")
    func burstThroughTheGauge() async throws {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "herald.tests.gauge")
        let received = Locked<[Int]>([])
        let total = 20_000
        let token = hub.observe(GaugeTick.self, on: .queue(queue)) { counter in
            received.withLock { $0.append(counter.value) }
        }
        for value in 0..<total { hub.post(GaugeTick(value: value)) }
        try await hub.waitUntilIdle()
        #expect(received.withLock { $0 } == Array(0..<total))
        // A lone post after the burst is not held back by a gathering job.
        await hub.postAndWait(GaugeTick(value: total))
        #expect(received.withLock { $0.last } == total)
        token.cancel()
    }
}

private struct GaugeTick: TypedNotification {
    let value: Int
}
