import Herald
import HeraldTesting
import Observation
import Synchronization
import Testing

protocol ShopEvent: TypedNotification {
    var summary: String { get }
}

struct ItemAdded: ShopEvent, Equatable {
    let sku: String
    var summary: String { "added \(sku)" }
}

struct CheckedOut: ShopEvent, Equatable {
    let cents: Int
    var summary: String { "paid \(cents)" }
}

struct CartCleared: TypedNotification, Equatable {}

/// A `@MainActor` view model that shows the latest shop event, whatever its type.
@MainActor
@Observable
final class ShopActivityModel {
    private(set) var lines: [String] = []
    @ObservationIgnored private var token: ObservationToken?

    init(hub: NotificationHub) {
        token = hub.observe(every: (any ShopEvent).self, on: MainActor.shared) { [weak self] event in
            self?.lines.append(event.summary)
        }
    }
}

@Suite("Families in the test kit")
struct FamilyTestingTests {
    @Test("A family recorder records every type of the family, in post order, with subjects")
    func recordsFamily() {
        let hub = NotificationHub()
        let cart = Cart()
        let recorder = hub.record(every: (any ShopEvent).self)
        hub.post(ItemAdded(sku: "A1"), from: cart)
        hub.post(CartCleared())
        hub.post(CheckedOut(cents: 300))
        #expect(recorder.values.map(\.summary) == ["added A1", "paid 300"])
        #expect(recorder.records.map { $0.isFrom(cart) } == [true, false])
        #expect(recorder.takeAll().count == 2)
        recorder.expectNoFurtherNotifications()
    }

    @Test("A family recorder on a test target records only when the test runs it")
    func recordsOnTestTarget() async throws {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let recorder = hub.record(every: (any ShopEvent).self, on: main.target)
        hub.post(ItemAdded(sku: "B2"))
        #expect(recorder.count == 0)
        main.runUntilIdle()
        let next = try await recorder.next()
        #expect(next.summary == "added B2")
    }

    @Test("recordAll records every notification with its type, and does not make a post observed")
    func recordsAll() {
        let hub = NotificationHub()
        let all = hub.recordAll()
        hub.post(ItemAdded(sku: "C3"))
        hub.post(CartCleared())
        #expect(all.values.map { "\($0.type)" } == ["ItemAdded", "CartCleared"])
        #expect(hub.unobservedPostCount == 2)
    }

    @Test("expectRegistered(every:) and expectTapsRegistered count family observers and taps")
    func registrationExpectations() {
        let hub = NotificationHub()
        let main = TestDeliveryTarget(name: "main")
        let family = hub.observe(every: (any ShopEvent).self, on: main.target, priority: 3) { _ in }
        let tap = hub.observeAll(on: .posting) { _ in }
        let latestTap = hub.observeAll(on: main.target, bufferingPolicy: .latest) { _ in }
        #expect(hub.expectRegistered(every: (any ShopEvent).self, on: main.target))
        #expect(hub.expectTapsRegistered(on: .posting))
        #expect(hub.expectTapsRegistered(bufferingPolicy: .latest))  // the tap checks take a policy too
        latestTap.cancel()
        #expect(hub.registrations(every: (any ShopEvent).self).map(\.priority) == [3])
        withKnownIssue {
            #expect(!hub.expectRegistered(every: (any ShopEvent).self, on: .mainQueue))
        } matching: { issue in
            issue.comments.contains { comment in
                comment.rawValue.contains("expected 1 registration for every ShopEvent on mainQueue, found 0")
                    && comment.rawValue.contains("FamilyTestingTests.swift")
                    && comment.rawValue.contains("at priority 3")
            }
        }
        family.cancel()
        tap.cancel()
        #expect(hub.expectRegistered(every: (any ShopEvent).self, count: 0))
        #expect(hub.expectTapsRegistered(count: 0))
    }

    @Test("A @MainActor view model observing a protocol, driven by the main-actor stand-in")
    @MainActor
    func mainActorViewModel() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = ShopActivityModel(hub: hub)
            hub.expectRegistered(every: (any ShopEvent).self, on: .mainQueue)
            await Task.detached {
                hub.post(ItemAdded(sku: "D4"))
                hub.post(CartCleared())
                hub.post(CheckedOut(cents: 120))
            }.value
            #expect(model.lines.isEmpty, "queued on the stand-in, not delivered yet")
            await main.runUntilIdle()
            #expect(model.lines == ["added D4", "paid 120"])
        }
    }
}

final class Cart: Sendable {}

struct CartEmptied: ShopEvent {
    var summary: String { "emptied" }
}

@Suite("Family recorders and zero-sized types")
struct FamilyRecorderZeroSizedTests {
    @Test("A family recorder records a zero-sized type, also next to the app's own family observer")
    func zeroSized() {
        let hub = NotificationHub()
        let appSeen = Mutex<[String]>([])
        let app = hub.observe(every: (any ShopEvent).self) { event in appSeen.withLock { $0.append(event.summary) } }
        let recorder = hub.record(every: (any ShopEvent).self)
        hub.post(CartEmptied())
        hub.post(ItemAdded(sku: "E5"))
        #expect(recorder.values.map(\.summary) == ["emptied", "added E5"])
        #expect(appSeen.withLock { $0 } == ["emptied", "added E5"])
        #expect(hub.unobservedPostCount == 0)
        withExtendedLifetime(app) {}
    }
}

/// A view model that misspells its family: `String` is no notification family.
@MainActor
final class MisspeltFamilyModel {
    private var token: ObservationToken?

    init(hub: NotificationHub) {
        token = hub.observe(every: String.self, on: MainActor.shared) { _ in }
    }
}

@Suite("A registration no notification can reach, in the test kit")
@MainActor
struct FamilyMismatchTestingTests {
    @Test("The next registration check of the hub fails the test, naming the type and the registration site")
    func theNextCheckFails() {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        let model = MisspeltFamilyModel(hub: hub)
        withKnownIssue {
            hub.expectTapsRegistered(count: 0)
        } matching: { issue in
            let text = String(describing: issue)
            return text.contains("observe(every: String.self) can never receive a notification")
                && text.contains("HeraldTestingTests/FamilyTestingTests.swift")
        }
        hub.expectTapsRegistered(count: 0)  // reported once
        withExtendedLifetime(model) {}
    }

    @Test("Inside a main-actor stand-in's scope, the scope's end fails the test")
    func theScopeFails() async {
        let hub = NotificationHub()
        hub.errorHandler = { _ in }
        await withKnownIssue {
            await withMainActorStandIn { main in
                hub.useMainActorStandIn(main)
                _ = MisspeltFamilyModel(hub: hub)
            }
        } matching: { issue in
            String(describing: issue).contains("found String, a struct")
        }
    }
}
