import Dispatch
import Herald
import HeraldTesting
import Synchronization
import Testing

private struct Alarm: TypedNotification {}

/// A component that registers correctly: its token ends the observation on deinit.
private final class Siren: Sendable {
    private let token: ObservationToken

    init(hub: NotificationHub, on target: DeliveryTarget) {
        token = hub.observe(Alarm.self, on: target) { _ in }
    }
}

/// A component whose handler captures it strongly: it is never deallocated.
private final class LeakySiren: Sendable {
    private let token = Mutex<ObservationToken?>(nil)

    init(hub: NotificationHub) {
        let observation = hub.observe(Alarm.self) { _ in self.ring() }
        token.withLock { $0 = observation }
    }

    func ring() {}

    /// Breaks the cycle, so that the test does not leak it.
    func tearDown() {
        token.withLock { $0 = nil }
    }
}

/// A component that binds its observation to a longer-lived owner by mistake.
private final class MisboundSiren: Sendable {
    init(hub: NotificationHub, appState: AppState) {
        hub.observe(Alarm.self, owner: appState) { _, _ in }
    }
}

private final class AppState: Sendable {}

/// A component that forgets to register.
private final class SilentSiren: Sendable {}

@Suite("Registration expectations")
struct RegistrationExpectationTests {
    @Test("expectRegistered passes for the right target and count")
    func expectRegisteredPasses() {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "sirens")
        let siren = Siren(hub: hub, on: .queue(queue))
        #expect(hub.expectRegistered(Alarm.self, on: .queue(queue)))
        #expect(hub.expectRegistered(Alarm.self))
        #expect(hub.expectNotRegistered(Alarm.self, on: .mainQueue))
        withExtendedLifetime(siren) {}
    }

    @Test("expectRegistered reports a registration on the wrong target, with where it was made")
    func expectRegisteredReportsWrongTarget() {
        let hub = NotificationHub()
        let siren = Siren(hub: hub, on: .posting)
        withKnownIssue {
            #expect(!hub.expectRegistered(Alarm.self, on: .mainQueue))
        } matching: { issue in
            issue.comments.contains { comment in
                comment.rawValue.contains("expected 1 registration for Alarm on mainQueue, found 0")
                    && comment.rawValue.contains("RegistrationExpectationTests.swift")
                    && comment.rawValue.contains("on posting")
            }
        }
        withExtendedLifetime(siren) {}
    }

    @Test("expectNotRegistered reports a registration that is still there")
    func expectNotRegisteredReports() {
        let hub = NotificationHub()
        let siren = Siren(hub: hub, on: .posting)
        withKnownIssue {
            #expect(!hub.expectNotRegistered(Alarm.self))
        }
        withExtendedLifetime(siren) {}
    }

    @Test("expectUnregistersOnDeinit passes for a component that ends its observation on deinit")
    func unregistersOnDeinitPasses() {
        let hub = NotificationHub()
        #expect(expectUnregistersOnDeinit(Alarm.self, in: hub, on: .posting) { Siren(hub: hub, on: .posting) })
        #expect(hub.observerCount(of: Alarm.self) == 0)
    }

    @Test("expectUnregistersOnDeinit reports a component kept alive by its own handler")
    func unregistersOnDeinitReportsLeak() {
        let hub = NotificationHub()
        weak var leaked: LeakySiren?
        withKnownIssue {
            #expect(
                !expectUnregistersOnDeinit(Alarm.self, in: hub) {
                    let siren = LeakySiren(hub: hub)
                    leaked = siren
                    return siren
                })
        } matching: { issue in
            // Two failures: the component is still alive, so its registration is still there.
            issue.comments.contains { comment in
                comment.rawValue.contains("expected LeakySiren to be deallocated")
                    || comment.rawValue.contains("after LeakySiren was released, expected 0 registrations")
            }
        }
        #expect(leaked != nil)
        leaked?.tearDown()
        #expect(leaked == nil)
        #expect(hub.observerCount(of: Alarm.self) == 0)
    }

    @Test("expectUnregistersOnDeinit reports an observation left behind by a deallocated component")
    func unregistersOnDeinitReportsLeftovers() {
        let hub = NotificationHub()
        let appState = AppState()
        withKnownIssue {
            expectUnregistersOnDeinit(Alarm.self, in: hub) { MisboundSiren(hub: hub, appState: appState) }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("after MisboundSiren was released, expected 0") }
        }
        #expect(hub.observerCount(of: Alarm.self) == 1)
    }

    @Test("expectUnregistersOnDeinit reports a component that never registered")
    func unregistersOnDeinitReportsNoRegistration() {
        let hub = NotificationHub()
        withKnownIssue {
            expectUnregistersOnDeinit(Alarm.self, in: hub) { SilentSiren() }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("while SilentSiren is alive, expected 1") }
        }
    }
}
