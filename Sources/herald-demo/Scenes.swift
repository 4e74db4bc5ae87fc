import Foundation
import Herald
import Synchronization

/// One part of the demo, runnable on its own with `herald-demo NAME`.
struct Scene: Sendable {
    let name: String
    let summary: String
    let run: @MainActor @Sendable () async throws -> Void
}

enum Demo {
    static let networkThreadName = "network"

    static let scenes: [Scene] = [
        Scene(
            name: "api",
            summary: "a background API client posts typed notifications to a @MainActor UI",
            run: apiClientToUI),
        Scene(
            name: "wait",
            summary: "post returns at once; postAndWait returns after the UI has run",
            run: postVersusPostAndWait),
        Scene(
            name: "network",
            summary: "a DeliveryThread serialises socket writes from several callers",
            run: networkThread),
        Scene(
            name: "frame",
            summary: "MainActor.performAndWait sets a view's frame from the background and reads it back",
            run: performAndWaitOnMain),
        Scene(
            name: "forward",
            summary: "a NotificationCenter observer and a typed observer get the same event through forward",
            run: forwarding),
        Scene(
            name: "errors",
            summary: "a throwing observer goes to the error handler; the others still run",
            run: throwingObserver),
    ]

    // MARK: - 1. api

    /// The scenario Herald was made for: blocking calls on a background queue post typed
    /// notifications, and the UI receives them on the main actor.
    @MainActor
    static func apiClientToUI() async throws {
        let hub = NotificationHub()
        let api = try BettingAPIClient(hub: hub)
        let screen = PoolScreen(hub: hub)

        say("UI", "tap “Sign up” as Ada")
        let userID = try await api.createUser(named: "Ada")
        say("UI", "tap “Join” on pool 42")
        try await api.joinPool(42, userID: userID, stakeInCents: 2_500)
        await Task.yield()  // the PoolJoined delivery was queued on the main queue before we resumed
        say("UI", "screen title is now “\(screen.title)”")
    }

    // MARK: - 2. wait

    /// `post` enqueues the main-actor delivery and returns; `postAndWait` returns once it ran.
    @MainActor
    static func postVersusPostAndWait() async throws {
        let hub = NotificationHub()
        let api = try BettingAPIClient(hub: hub)
        let handled = Tally()
        let observation = hub.observe(OddsChanged.self, on: MainActor.shared) { note in
            say("UI", "odds for pool \(note.poolID) are now \(String(format: "%.2f", note.odds))")
            handled.increment()
        }

        try await api.queue.performAndWait {
            say("API", "post(OddsChanged 2.50) …")
            hub.post(OddsChanged(poolID: 42, odds: 2.5))
            say("API", "… post returned; the UI had handled \(handled.count) of 1")

            say("API", "postAndWait(OddsChanged 3.10) …")
            let report = hub.postAndWait(OddsChanged(poolID: 42, odds: 3.1))
            say(
                "API",
                "… postAndWait returned; the UI had handled \(handled.count) of 2 (report: \(report.deliveredCount) ran, \(report.failures.count) failed)"
            )
        }
        observation.cancel()
    }

    // MARK: - 3. network

    /// Three callers write to one socket at the same time; the writes run one at a time, in a
    /// single sequence, on the network thread.
    @MainActor
    static func networkThread() async throws {
        let network = DeliveryThread(name: networkThreadName)
        let socket = BettingSocket(thread: network)

        say("UI", "3 callers send 2 frames each, concurrently")
        await withTaskGroup(of: Void.self) { group in
            for caller in ["odds feed", "bet slip", "chat"] {
                group.addTask {
                    for frame in 1...2 {
                        _ = await socket.write("\(caller) frame \(frame)", from: caller)
                    }
                }
            }
        }
        let frames = await socket.frames
        // The socket's work ran on the network thread; a plain closure can go there too:
        let bytes = try await BackgroundQueue.shared.performAndWait {
            try network.performAndWait {
                say("NET", "flush: \(frames.count) frames, \(frames.joined().utf8.count) bytes")
                return frames.joined().utf8.count
            }
        }
        await network.shutdownGracefully()
        say("UI", "\(frames.count) writes in one sequence, \(bytes) bytes flushed; network thread stopped")
    }

    // MARK: - 4. frame

    /// The typed `performSelectorOnMainThread:withObject:waitUntilDone:YES`: any arguments in,
    /// a value out, checked by the compiler as `@MainActor`.
    @MainActor
    static func performAndWaitOnMain() async throws {
        let view = BetSlipView()
        try await BackgroundQueue(name: BettingAPIClient.queueName).performAndWait {
            let target = Frame(x: 0, y: 560, width: 390, height: 284)
            say("API", "MainActor.performAndWait { set frame \(target), isHidden = false } …")
            let (frame, isVisible) = MainActor.performAndWait {
                view.frame = target
                view.isHidden = false
                say("UI", "view.frame = \(view.frame), view.isHidden = \(view.isHidden)")
                return (view.frame, !view.isHidden)
            }
            say("API", "… returned frame \(frame), visible: \(isVisible)")
        }
    }

    // MARK: - 6. forward

    /// Bridging both ways: a legacy `NotificationCenter` observer and a typed observer receive the
    /// same event, whichever side posts it, exactly once each.
    @MainActor
    static func forwarding() async throws {
        let hub = NotificationHub()
        let center = NotificationCenter()  // NotificationCenter.default in an app
        let api = try BettingAPIClient(hub: hub)
        var observations: Set<ObservationToken> = []
        hub.forward(UserCreated.self, toCenter: center).store(in: &observations)
        hub.forward(UserCreated.self, fromCenter: center).store(in: &observations)

        // Legacy code, unchanged: it reads the user info by string keys.
        let legacyCount = Tally()
        let typedCount = Tally()
        let legacy = center.addObserver(forName: UserCreated.notificationName, object: nil, queue: nil) { note in
            legacyCount.increment()
            let userID = note.userInfo?["userID"] as? Int ?? -1
            let name = note.userInfo?["name"] as? String ?? "?"
            say("LEGACY", "observer got \(note.name.rawValue), userInfo userID \(userID), name \(name)")
        }
        hub.observe(UserCreated.self, on: MainActor.shared) { user in
            typedCount.increment()
            say("UI", "typed observer got UserCreated(userID: \(user.userID), name: \(user.name))")
        }
        .store(in: &observations)

        say("UI", "the API client posts to the hub …")
        _ = try await api.createUser(named: "Ada")
        await Task.yield()  // the main-actor delivery was queued before we resumed
        try await BackgroundQueue(name: BettingAPIClient.queueName).performAndWait {
            say("LEGACY", "legacy code posts on the NotificationCenter …")
            center.post(
                name: UserCreated.notificationName, object: nil,
                userInfo: ["userID": 8, "name": "Grace", "status": 201])
        }
        await Task.yield()
        say(
            "UI", "2 events: the legacy observer got \(legacyCount.count), the typed one \(typedCount.count); no echoes"
        )
        center.removeObserver(legacy)
        observations.removeAll()
    }

    // MARK: - 6. errors

    /// A throwing handler is reported with its type and location; the other observers still run,
    /// and the waiting post returns the failure in its report.
    @MainActor
    static func throwingObserver() async throws {
        let hub = NotificationHub()
        hub.errorHandler = { failure in
            say(
                "ERR",
                "error handler: \(failure.error) from the \(failure.notificationType) observer at \(failure.fileID):\(failure.line)"
            )
        }
        var observations: Set<ObservationToken> = []
        hub.observe(BetPlaced.self) { bet in
            say("LEDGER", "recorded bet of $\(bet.amountInCents / 100) by user #\(bet.userID)")
        }
        .store(in: &observations)
        hub.observe(BetPlaced.self) { bet in
            throw BetLimitExceeded(limitInCents: 10_000, amountInCents: bet.amountInCents)
        }
        .store(in: &observations)
        hub.observe(BetPlaced.self, on: MainActor.shared) { bet in
            say("UI", "bet slip shows $\(bet.amountInCents / 100), pending review")
        }
        .store(in: &observations)

        try await BackgroundQueue(name: BettingAPIClient.queueName).performAndWait {
            say("API", "postAndWait(BetPlaced $150) to 3 observers, the 2nd throws …")
            let report = hub.postAndWait(BetPlaced(userID: 7, amountInCents: 15_000))
            say("API", "… returned: \(report.deliveredCount) observers ran, \(report.failures.count) failed")
        }
        observations.removeAll()
    }
}

/// The error the limits observer throws.
struct BetLimitExceeded: Error, CustomStringConvertible {
    let limitInCents: Int
    let amountInCents: Int

    var description: String {
        "BetLimitExceeded($\(amountInCents / 100) > $\(limitInCents / 100))"
    }
}

/// A counter that any thread may bump and read.
final class Tally: Sendable {
    private let value = Atomic<Int>(0)

    func increment() {
        value.add(1, ordering: .relaxed)
    }

    var count: Int {
        value.load(ordering: .relaxed)
    }
}
