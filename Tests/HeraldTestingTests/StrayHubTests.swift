import Herald
import HeraldTesting
import Testing

private struct Tap: TypedNotification, Equatable { let value: Int }

/// A `@MainActor` view model that observes as it is written, with `on: MainActor.shared`.
@MainActor
private final class TapCounter {
    private(set) var values: [Int] = []
    private var token: ObservationToken?

    init(hub: NotificationHub) {
        token = hub.observe(Tap.self, on: MainActor.shared) { [weak self] note in self?.values.append(note.value) }
    }
}

@Suite("A hub without the main-actor stand-in")
@MainActor
struct StrayHubTests {
    @Test("Running the stand-in while a hub without it delivers to the real main queue names useMainActorStandIn")
    func runningTheStandInNamesUseMainActorStandIn() async {
        let hub = NotificationHub()
        var counter: TapCounter?
        await withKnownIssue {
            await withMainActorStandIn(name: "ui") { main in
                counter = TapCounter(hub: hub)
                hub.expectRegistered(Tap.self, on: .mainQueue)  // the test hands the hub to HeraldTesting
                hub.post(Tap(value: 1))
                await main.runUntilIdle()
                #expect(counter?.values == [], "the delivery waits on the real main queue")
                await main.runUntilIdle()  // reported once per hub
            }
        } matching: { issue in
            let text = String(describing: issue)
            return text.contains("a hub that was not given TestMainActor(ui) delivers to the real main queue")
                && text.contains("Tap (observed at HeraldTestingTests/StrayHubTests.swift:")
                && text.contains("hub.useMainActorStandIn(main)")
        }
        counter = nil
    }

    @Test("A view model test that forgot useMainActorStandIn is told so when it runs the stand-in")
    func aForgottenStandInIsNamed() async {
        let hub = NotificationHub()
        var counter: TapCounter?
        await withKnownIssue {
            await withMainActorStandIn { main in
                counter = TapCounter(hub: hub)  // registers on MainActor.shared; the hub has no stand-in
                hub.post(Tap(value: 1))
                await main.runUntilIdle()  // runs nothing: the delivery waits on the real main queue
            }
        } matching: { issue in
            String(describing: issue).contains("hub.useMainActorStandIn(main)")
        }
        withExtendedLifetime(counter) {}
    }

    @Test("A registration check on such a hub reports it at the check's line")
    func aCheckReportsTheHubAtItsLine() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            let counter = TapCounter(hub: hub)
            hub.post(Tap(value: 1))
            let line = #line + 2
            withKnownIssue {
                hub.expectRegistered(Tap.self, on: .mainQueue)
            } matching: { issue in
                issue.sourceLocation?.line == line && String(describing: issue).contains("useMainActorStandIn")
            }
            withExtendedLifetime(counter) {}
        }
    }

    @Test("A hub given the stand-in after its observers registered, before its first post, is not reported")
    func aHubGivenTheStandInBeforeItsFirstPostIsNotReported() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            let counter = TapCounter(hub: hub)
            let recorder = hub.record(Tap.self, on: .mainQueue)
            hub.useMainActorStandIn(main)
            hub.post(Tap(value: 1))
            await main.runUntilIdle()
            #expect(counter.values == [1])
            #expect(recorder.takeAll() == [Tap(value: 1)])
            hub.expectRegistered(Tap.self, on: .mainQueue, count: 2)
        }
    }

    @Test("A hub whose observers use other targets is not reported")
    func aHubWithoutMainActorObserversIsNotReported() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            let target = TestDeliveryTarget(name: "background")
            let recorder = hub.record(Tap.self, on: target.target)
            hub.post(Tap(value: 1))
            await main.runUntilIdle()
            hub.expectRegistered(Tap.self, on: target.target)
            target.runUntilIdle()
            #expect(recorder.takeAll() == [Tap(value: 1)])
        }
    }
}
