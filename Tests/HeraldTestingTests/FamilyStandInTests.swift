import Herald
import HeraldTesting
import Testing

private protocol Reviewed: TypedNotification { var value: Int { get } }
private struct ReviewedTap: Reviewed, Equatable { let value: Int }

@Suite("Families with the main-actor stand-in")
struct FamilyStandInTests {
    /// An async waiting post that the stand-in cannot run fails at once, naming what waits:
    /// a family observer's delivery is named like an observer of the type.
    @Test("An async postAndWait that fails fast names a family observer's pending delivery")
    func familyObserverNamedInPendingWorkError() async throws {
        try await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(every: (any Reviewed).self, on: MainActor.shared) { note in seen.append(note.value)
            }
            let report = await hub.postAndWait(ReviewedTap(value: 1))
            #expect(report.failures.count == 1)
            let failure = try #require(report.failures.first)
            let error = try #require(failure.error as? PendingWorkError)
            #expect(error.waitsForStandIn)
            #expect(error.pending.count == 1, "\(error)")
            #expect(hub.pendingDeliveries.count == 1)
            await main.runUntilIdle()
            #expect(seen == [1])
            token.cancel()
        }
    }
}
