import Dispatch
@_spi(Testing) import Herald
import Testing

// `observeWithContext(_:)`, the hook under HeraldTesting's recorder and the forwarding to
// NotificationCenter: an observer of one type whose handler also learns the post's subject. It
// is an observer of a family of that one type, so what it receives carries the subject.

@Suite("An observer of one type with its post's subject")
struct ContextObserverTests {
    @Test("It is called in registration order among the type's other observers")
    func registrationOrder() {
        let hub = NotificationHub()
        let seen = Log<String>()
        let first = hub.observe(Ping.self) { _ in seen.append("first") }
        let context = hub.observeWithContext(Ping.self) { _, _ in seen.append("context") }
        let last = hub.observe(Ping.self) { _ in seen.append("last") }
        hub.post(Ping(value: 1))
        #expect(seen.values == ["first", "context", "last"])
        withExtendedLifetime((first, context, last)) {}
    }

    @Test("It counts among the type's observers from its registration on, and not as a family observer")
    func countsAsAnObserverOfItsType() {
        let hub = NotificationHub()
        let token = hub.observeWithContext(Ping.self, on: .queue(DispatchQueue(label: "context"))) { _, _ in }
        #expect(hub.observerCount(of: Ping.self) == 1)
        #expect(hub.registrations(of: Ping.self).map(\.fileID) == ["HeraldTests/ContextObserverTests.swift"])
        #expect(hub.observerCount(every: Ping.self) == 0)
        #expect(hub.observerCount(of: Pong.self) == 0)
        token.cancel()
        #expect(hub.observerCount(of: Ping.self) == 0)
    }

    @Test("pendingDeliveries lists it with its type, in the order the hub first saw the types")
    func pendingOrder() {
        let hub = NotificationHub()
        let first = DispatchQueue(label: "first")
        let second = DispatchQueue(label: "second")
        first.suspend()
        second.suspend()
        let ping = hub.observe(Ping.self, on: .queue(first)) { _ in }
        let context = hub.observeWithContext(Pong.self, on: .queue(second)) { _, _ in }
        hub.post(Ping(value: 1))
        hub.post(Pong(value: 1))
        let order = hub.pendingDeliveries.map(\.notificationType)
        first.resume()
        second.resume()
        #expect(order == ["Ping", "Pong"])
        withExtendedLifetime((ping, context)) {}
    }

    @Test("It receives its own type only, not a type whose values cast to it")
    func exactType() {
        let hub = NotificationHub()
        let seen = Log<String>()
        let context = hub.observeWithContext(SignedIn.self) { event, _ in seen.append("one type \(event.auditID)") }
        let family = hub.observe(every: (any Auditable).self) { event in seen.append("family \(event.auditID)") }
        // `SignedIn?.some(_)` casts to `SignedIn`, but it is a notification of another type.
        hub.post(SignedIn?.some(SignedIn(auditID: 1)))
        hub.post(SignedIn(auditID: 2))
        #expect(seen.values == ["family 1", "one type 2", "family 2"])
        withExtendedLifetime((context, family)) {}
    }

    @Test("It replays the retained values of its own type only")
    func replaysItsOwnType() {
        let hub = NotificationHub()
        hub.postAndRetain(SignedIn?.some(SignedIn(auditID: 1)))
        hub.postAndRetain(SignedIn(auditID: 2))
        let seen = Log<Int>()
        let token = hub.observeWithContext(SignedIn.self, replayLatest: true) { event, _ in
            seen.append(event.auditID)
        }
        #expect(seen.values == [2])
        withExtendedLifetime(token) {}
    }

    @Test("It learns the post's subject on the posting thread and through a mailbox")
    func learnsTheSubject() async {
        let hub = NotificationHub()
        let subject = Subject()
        let onPostingThread = Log<ObjectIdentifier?>()
        let throughMailbox = Log<ObjectIdentifier?>()
        let posting = hub.observeWithContext(Ping.self) { _, subjectID in onPostingThread.append(subjectID) }
        let queued = hub.observeWithContext(Ping.self, on: .queue(DispatchQueue(label: "context"))) { _, subjectID in
            throughMailbox.append(subjectID)
        }
        hub.post(Ping(value: 1), from: subject)
        let report = await hub.postAndWait(Ping(value: 2))
        #expect(report.deliveredCount == 2)
        #expect(onPostingThread.values == [ObjectIdentifier(subject), nil])
        #expect(throughMailbox.values == [ObjectIdentifier(subject), nil])
        withExtendedLifetime((posting, queued)) {}
    }
}
