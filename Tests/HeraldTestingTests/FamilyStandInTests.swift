import Herald
import HeraldTesting
import Testing

private protocol Reviewed: TypedNotification { var value: Int { get } }
private struct ReviewedTap: Reviewed, Equatable { let value: Int }

@Suite("Families with the main-actor stand-in")
struct FamilyStandInTests {
    /// An async waiting post made on the main actor runs the family observer's delivery held by
    /// the stand-in, as the main queue would in the app.
    @Test("An async postAndWait on the main actor runs a family observer's delivery held by the stand-in")
    @MainActor
    func familyObserverRunByAWaitingPost() async throws {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            var seen: [Int] = []
            let token = hub.observe(every: (any Reviewed).self, on: MainActor.shared) { note in seen.append(note.value)
            }
            let report = await hub.postAndWait(ReviewedTap(value: 1))
            #expect(report == DeliveryReport(deliveredCount: 1))
            #expect(seen == [1])
            #expect(hub.pendingDeliveries.isEmpty)
            token.cancel()
        }
    }
}
