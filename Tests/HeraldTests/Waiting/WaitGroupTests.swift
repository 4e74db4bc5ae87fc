import Testing

@testable import Herald

@Suite("WaitGroup")
struct WaitGroupTests {
    private struct Gone: Error {}

    private static func failure() -> ObserverFailure {
        ObserverFailure(error: Gone(), notificationType: "Ping", fileID: "Test.swift", line: 1)
    }

    @Test("An abandoned wait fails each outstanding delivery once, never the poster's own hold")
    func abandonBeforeThePosterArrived() {
        // A stand-in's scope can end between the scan, which entered the delivery, and the
        // poster's `arrive()`.
        let group = WaitGroup(waiter: nil)
        group.enter()
        let failures = group.abandon(Self.failure)
        #expect(failures.count == 1)
        #expect(group.isComplete)
        group.arrive()  // late: changes nothing
        #expect(group.abandon(Self.failure).isEmpty, "abandoned once")
    }

    @Test("An abandoned wait after the poster arrived fails only what is still outstanding")
    func abandonAfterThePosterArrived() {
        let group = WaitGroup(waiter: nil)
        group.enter()
        group.enter()
        group.arrive()
        group.leave(.delivered)
        #expect(!group.isComplete)
        #expect(group.abandon(Self.failure).count == 1)
        #expect(group.isComplete)
        group.leave(.delivered)  // the outcome that comes after is ignored
    }
}
