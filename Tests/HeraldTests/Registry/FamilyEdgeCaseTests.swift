import Dispatch
import Foundation
import Herald
import Testing

// Families: edge cases found in review (observe(every:), observeAll, priorities).

/// A notification type whose values do not all cast alike: the runtime's casts look through an
/// `Optional`, so `SignedIn?.some(_) is any AnalyticsEvent` but `.none` is not. (Non-final classes
/// cannot conform to `TypedNotification`, so this is how a type's membership can be decided from
/// one value and not hold for another.)
extension Optional: TypedNotification where Wrapped: TypedNotification {}

@Suite("Families: edge cases")
struct FamilyEdgeCaseTests {
    // MARK: Values that do not cast like the first one

    /// When a member value decided the membership, a later value whose cast fails reaches no
    /// handler: the post is counted as unobserved, and `postAndWait` reports no delivery.
    @Test("A value that no family observer receives is counted as unobserved")
    func undeliveredValueIsUnobserved() {
        let hub = NotificationHub()
        let received = Log<Int>()
        let token = hub.observe(every: (any Auditable).self) { event in received.append(event.auditID) }
        hub.post(SignedIn?.some(SignedIn(auditID: 1)))  // decides membership from a member value
        #expect(received.values == [1])
        #expect(hub.unobservedPostCount == 0)

        hub.post(SignedIn?.none)  // nobody receives it
        #expect(received.values == [1])
        #expect(hub.unobservedPostCount == 1, "a post that reached nobody must be counted as unobserved")

        let report = hub.postAndWait(SignedIn?.none)
        #expect(received.values == [1])
        #expect(report.deliveredCount == 0, "nothing received the notification: \(report)")
        #expect(hub.unobservedPostCount == 2)
        withExtendedLifetime(token) {}
    }

    // MARK: Guarantees that hold

    /// Every shard may cache a snapshot holding the family observer's stand-in; once the token
    /// is cancelled and dropped, no shard, bucket or family list may still hold the handler.
    @Test("Cancel releases a family observer's handler even when every shard cached its stand-in")
    func cancelReleasesAcrossShards() async {
        final class Capture: Sendable {}
        let hub = NotificationHub()
        weak var weakCapture: Capture?
        var token: ObservationToken? = {
            let capture = Capture()
            weakCapture = capture
            return hub.observe(every: (any AnalyticsEvent).self) { _ in withExtendedLifetime(capture) {} }
        }()
        let tap = hub.observeAll { _ in }
        // Many threads, so that many shards cache snapshots of both types.
        await onThreads(16) { index in
            for round in 0..<50 {
                hub.post(SignedIn(auditID: index * 100 + round))
                hub.post(Purchased(cents: round))
            }
        }
        #expect(weakCapture != nil)
        token?.cancel()
        token = nil  // the token itself holds the registration
        #expect(weakCapture == nil)
        withExtendedLifetime(tap) {}
    }

    /// A post that starts after `observe(every:)` returned, on another thread whose shard cached
    /// the type's snapshot before, reaches the new observer; one that starts after `cancel()`
    /// returned does not.
    @Test("Membership at post time across threads for family observers")
    func membershipAtPostTime() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "poster")
        // Warm the poster thread's shard with a snapshot of Purchased that has no family stand-in.
        let concrete = hub.observe(Purchased.self) { _ in }
        await onQueue(queue) { hub.post(Purchased(cents: 0)) }
        for round in 1...200 {
            let calls = Counter()
            let token = hub.observe(every: (any AnalyticsEvent).self) { _ in calls.increment() }
            await onQueue(queue) { hub.post(Purchased(cents: round)) }
            #expect(calls.count == 1, "round \(round)")
            token.cancel()
            await onQueue(queue) { hub.post(Purchased(cents: -round)) }
            #expect(calls.count == 1, "round \(round)")
        }
        withExtendedLifetime(concrete) {}
    }

    /// `observerCount(of:)` and `registrations(of:)` never count family stand-ins, and the
    /// family observer's priority is reported by `registrations(every:)`.
    @Test("Counts and registrations keep concrete and family observers apart")
    func countsAndRegistrations() {
        let hub = NotificationHub()
        let tokens = [
            hub.observe(SignedIn.self, priority: 3) { _ in },
            hub.observe(every: (any AnalyticsEvent).self, priority: 5) { _ in },
            hub.observeAll(priority: -1) { _ in },
        ]
        hub.post(SignedIn(auditID: 1))  // builds the snapshot with the stand-ins
        #expect(hub.observerCount(of: SignedIn.self) == 1)
        #expect(hub.registrations(of: SignedIn.self).map(\.priority) == [3])
        #expect(hub.registrations(every: (any AnalyticsEvent).self).map(\.priority) == [5])
        #expect(hub.tapRegistrations().map(\.priority) == [-1])
        withExtendedLifetime(tokens) {}
    }

    /// A family observer whose owner died is pruned by the next post of a member type, and the
    /// post is then counted as unobserved.
    @Test("A family observer whose owner died is pruned and its post counted unobserved")
    func ownerDies() {
        final class Owner: Sendable {}
        let hub = NotificationHub()
        var owner: Owner? = Owner()
        let calls = Counter()
        hub.observe(every: (any AnalyticsEvent).self, owner: owner!, priority: 2) { _, _ in calls.increment() }
        hub.post(Purchased(cents: 1))
        #expect(calls.count == 1)
        owner = nil
        hub.post(Purchased(cents: 2))
        #expect(calls.count == 1)
        #expect(hub.unobservedPostCount == 1)
        #expect(hub.registrations(every: (any AnalyticsEvent).self).isEmpty)
    }

    /// A blocking waiting post made on a serial queue that hosts a family observer and a tap
    /// drains the family observer inline (it would deadlock otherwise), does not wait for the tap,
    /// and the tap still runs afterwards; from inside the family observer's own handler, a waiting
    /// post of a member type enqueues to its own mailbox without waiting.
    @Test("Waiting posts on the target of a family observer and a tap")
    func waitingPostOnOwnTarget() async {
        let hub = NotificationHub()
        let queue = DispatchQueue(label: "family.own")
        let family = Log<Int>()
        let tapped = Log<String>()
        let nested = Locked<DeliveryReport?>(nil)
        let tokens = [
            hub.observe(every: (any AnalyticsEvent).self, on: .queue(queue)) { event in
                let cents = (event as? Purchased)?.cents ?? -1
                family.append(cents)
                if cents == 1 {
                    // Its own mailbox: must not wait for itself.
                    nested.withLock { $0 = hub.postAndWait(Purchased(cents: 2)) }
                }
            },
            hub.observeAll(on: .queue(queue)) { posted in tapped.append(String(describing: posted.type)) },
        ]
        let report = await onQueue(queue) { hub.postAndWait(Purchased(cents: 1)) }
        #expect(report.deliveredCount == 1)
        #expect(nested.withLock { $0?.deliveredCount } == 0)
        await onQueue(queue) {}  // the drains queued behind the waiting post
        await onQueue(queue) {}
        #expect(family.values == [1, 2])
        #expect(tapped.values == ["Purchased", "Purchased"])
        withExtendedLifetime(tokens) {}
    }

    /// When the hub goes away, it lets go of owner-bound family observers and taps it alone
    /// holds; tokens that outlive it can still be cancelled (a no-op), and then release theirs.
    @Test("Hub deallocation with family observers and taps alive")
    func hubDeallocation() {
        final class Capture: Sendable {}
        final class Owner: Sendable {}
        weak var ownedCapture: Capture?
        weak var tokenCapture: Capture?
        weak var tapCapture: Capture?
        let owner = Owner()
        var hub: NotificationHub? = NotificationHub()
        var tokens: [ObservationToken] = []
        do {
            let owned = Capture()
            let viaToken = Capture()
            let viaTap = Capture()
            ownedCapture = owned
            tokenCapture = viaToken
            tapCapture = viaTap
            hub!.observe(every: (any AnalyticsEvent).self, owner: owner) { _, _ in withExtendedLifetime(owned) {} }
            tokens.append(hub!.observe(every: (any AnalyticsEvent).self) { _ in withExtendedLifetime(viaToken) {} })
            tokens.append(hub!.observeAll { _ in withExtendedLifetime(viaTap) {} })
        }
        hub!.post(Purchased(cents: 1))
        hub = nil
        #expect(ownedCapture == nil, "the owner-bound family observer was held only by the hub")
        #expect(tokenCapture != nil)
        for token in tokens { token.cancel() }
        tokens = []
        #expect(tokenCapture == nil)
        #expect(tapCapture == nil)
        withExtendedLifetime(owner) {}
    }
}

struct EmptyEvent: AnalyticsEvent {
    var name: String { "empty" }
}

@Suite("Families: zero-sized types")
struct FamilyZeroSizedTests {
    @Test("A zero-sized type reaches a posting-thread family observer with a contextual handler")
    func zeroSized() {
        let hub = NotificationHub()
        let seen = Log<String>()
        let token = hub.observe(every: (any AnalyticsEvent).self) { event in seen.append("plain \(event.name)") }
        let other = hub.observe(every: (any AnalyticsEvent).self) { event in seen.append("second \(event.name)") }
        hub.post(EmptyEvent())
        #expect(seen.values == ["plain empty", "second empty"])
        #expect(hub.unobservedPostCount == 0)
        withExtendedLifetime((token, other)) {}
    }
}

@Suite("observe(every:) given a notification type")
struct FamilyGivenAConcreteTypeTests {
    /// Deprecated itself, so that calling the deprecated overloads here does not warn: the
    /// warning is what an app sees (see the CHANGELOG).
    @available(*, deprecated, message: "calls the deprecated observe(every:) overloads on purpose")
    @Test("it observes that one type, as observe(_:) does, on every form")
    func observesThatType() async throws {
        let hub = NotificationHub()
        let seen = Log<String>()
        let owner = Subject()
        let store = Store()
        let tokens = [
            hub.observe(every: Ping.self) { _ in seen.append("posting") },
            hub.observe(every: Ping.self, on: MainActor.shared) { _ in seen.append("main") },
            hub.observe(every: Ping.self, on: store) { _, _ in seen.append("actor") },
            hub.observe(every: Ping.self, owner: owner) { _, _ in seen.append("owner") },
            hub.observe(every: Ping.self, owner: owner, on: MainActor.shared) { _, _ in seen.append("owner main") },
            hub.observe(every: Ping.self, on: .queue(DispatchQueue(label: "every"))) { _ async in seen.append("async")
            },
            hub.observe(every: Ping.self, on: MainActor.shared) { _ async in seen.append("main async") },
            hub.observe(every: Ping.self, on: store) { _, _ async in seen.append("actor async") },
            hub.observe(every: Ping.self, owner: owner) { _, _ async in seen.append("owner async") },
            hub.observe(every: Ping.self, owner: owner, on: MainActor.shared) { _, _ async in
                seen.append("owner main async")
            },
        ]
        #expect(hub.observerCount(of: Ping.self) == 10)
        let report = await hub.postAndWait(Ping(value: 1))
        #expect(report.deliveredCount == 10)
        #expect(Set(seen.values).count == 10)
        for token in tokens { token.cancel() }
    }
}

@Suite("observe(every: (any TypedNotification).self)")
struct FamilyOfEverythingTests {
    /// Deprecated itself, so that calling the deprecated overloads here does not warn.
    @available(*, deprecated, message: "calls the deprecated observe(every:) overloads on purpose")
    @Test("it keeps its behaviour, an observer of every notification that counts, on every form")
    func keepsItsBehaviour() async throws {
        let hub = NotificationHub()
        let seen = Log<String>()
        let owner = Subject()
        let store = Store()
        let everything = (any TypedNotification).self
        let tokens = [
            hub.observe(every: everything) { _ in seen.append("posting") },
            hub.observe(every: everything, on: MainActor.shared) { _ in seen.append("main") },
            hub.observe(every: everything, on: store) { _, _ in seen.append("actor") },
            hub.observe(every: everything, owner: owner) { _, _ in seen.append("owner") },
            hub.observe(every: everything, owner: owner, on: MainActor.shared) { _, _ in seen.append("owner main") },
            hub.observe(every: everything, on: .queue(DispatchQueue(label: "everything"))) { _ async in
                seen.append("async")
            },
            hub.observe(every: everything, on: MainActor.shared) { _ async in seen.append("main async") },
            hub.observe(every: everything, on: store) { _, _ async in seen.append("actor async") },
            hub.observe(every: everything, owner: owner) { _, _ async in seen.append("owner async") },
            hub.observe(every: everything, owner: owner, on: MainActor.shared) { _, _ async in
                seen.append("owner main async")
            },
        ]
        #expect(hub.observerCount(every: everything) == 10)
        let report = await hub.postAndWait(Ping(value: 1))
        #expect(report.deliveredCount == 10)
        #expect(Set(seen.values).count == 10)
        #expect(hub.unobservedPostCount == 0)
        for token in tokens { token.cancel() }
    }
}

@Suite("observe(every:) given a type no notification can be cast to")
struct FamilyMismatchTests {
    private struct Settings: Sendable {}
    private enum Mode: Sendable { case on }
    private final class Base: Sendable {}

    @Test("A struct, an enum, a tuple or a function type is refused, reported with its site, and counts as no observer")
    func refused() async {
        let hub = NotificationHub()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let line = #line + 1
        let string = hub.observe(every: String.self) { _ in Issue.record("never called") }
        let settings = hub.observe(every: Settings.self, on: .queue(DispatchQueue(label: "x"))) { _ in }
        let mode = hub.observe(every: Mode.self, on: MainActor.shared) { _ in }
        let tuple = hub.observe(every: (Int, Int).self) { _ in }
        let function = hub.observe(every: (@Sendable () -> Void).self) { _ in }
        let stream = hub.notifications(every: Int.self)

        #expect(string.isCancelled && settings.isCancelled && mode.isCancelled)
        #expect(tuple.isCancelled && function.isCancelled)
        #expect(hub.observerCount(every: String.self) == 0)
        #expect(hub.registrations(every: Settings.self).isEmpty)
        var ended = true
        for await _ in stream { ended = false }
        #expect(ended, "the stream of a refused family ends at once")
        let report = await hub.postAndWait(Ping(value: 1))
        #expect(report.deliveredCount == 0)

        let values = failures.values
        #expect(
            values.map { ($0.error as? FamilyMismatch)?.kind } == [
                "a struct", "a struct", "an enum", "a tuple", "a function type", "a struct",
            ])
        #expect(values.first?.fileID == "HeraldTests/FamilyEdgeCaseTests.swift" && values.first?.line == line)
        #expect(values.first?.notificationType == "every String")
        let message = values.first.map { "\($0.error)" } ?? ""
        #expect(message.contains("observe(every: String.self) can never receive a notification: expected a protocol's"))
        #expect(message.contains("found String, a struct that does not conform to TypedNotification"))
    }

    @Test("Families that can match are accepted: protocols, classes, any Sendable")
    func accepted() {
        let hub = NotificationHub()
        let failures = Log<ObserverFailure>()
        hub.errorHandler = { failures.append($0) }
        let tokens = [
            hub.observe(every: (any AnalyticsEvent).self) { _ in },
            hub.observe(every: (any Sendable).self) { _ in },
            hub.observe(every: Base.self) { _ in },
        ]
        #expect(tokens.allSatisfy { !$0.isCancelled })
        #expect(failures.values.isEmpty)
        hub.post(Ping(value: 1))
        for token in tokens { token.cancel() }
    }
}
