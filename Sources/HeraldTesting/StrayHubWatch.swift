@_spi(Testing) import Herald

/// Finds the hubs that deliver main-actor work to the real main queue while a test runs a
/// ``TestMainActor``: hubs that were not given the stand-in with
/// `NotificationHub/useMainActorStandIn(_:)`.
///
/// A stand-in sees every hub on which a main-actor observer registers, in the task of its scope,
/// while the hub has no stand-in, and the hubs that the test hands to HeraldTesting inside its
/// ``withMainActorStandIn(name:fileID:filePath:line:column:_:)`` scope (recorders, registration
/// checks, `expectUnregistersOnDeinit`). When the test runs the stand-in, checks such a hub, or
/// ends the scope, a hub that has no stand-in and has main-queue deliveries waiting is reported
/// once, with a message that names `useMainActorStandIn`. Only deliveries actually waiting on the
/// real main queue count, so a hub given the stand-in late (but before its first post), or one
/// whose observers use other targets, is never reported.
final class StrayHubWatch: Sendable {
    private struct Seen: Sendable {
        weak var hub: NotificationHub?
        var isReported = false
    }

    private let seen = Locked<[ObjectIdentifier: Seen]>([:])

    /// Remembers `hub`, weakly, to check it later.
    func note(_ hub: NotificationHub) {
        seen.withLock { seen in
            let id = ObjectIdentifier(hub)
            if seen[id]?.hub !== hub { seen[id] = Seen(hub: hub) }
        }
    }

    /// Reports the registrations each remembered hub refused, and, once, each remembered hub that
    /// delivers main-actor work to the real main queue.
    func check(_ main: TestMainActor, at site: FailureSite) {
        for hub in seen.withLock({ seen in seen.values.compactMap(\.hub) }) {
            hub.reportRegistrationMisuses(at: site)
            guard let message = Self.strayFailure(hub, main: main) else { continue }
            // `hub` is alive, so its entry is its own: `note` replaces only the entries of dead hubs.
            let first = seen.withLock { seen in
                defer { seen[ObjectIdentifier(hub)]?.isReported = true }
                return seen[ObjectIdentifier(hub)]?.isReported == false
            }
            if first { reportFailure(message, at: site) }
        }
    }

    /// The failure message for `hub`'s main-queue deliveries, or `nil` if it has the stand-in or
    /// nothing waits on the main queue.
    static func strayFailure(_ hub: NotificationHub, main: TestMainActor) -> String? {
        guard hub._mainQueueExecutor == nil else { return nil }
        let stray = hub.pendingDeliveries.filter { $0.target == .mainQueue }
        guard !stray.isEmpty else { return nil }
        let listed = stray.prefix(3).map { "\($0.notificationType) (observed at \($0.fileID):\($0.line))" }
            .joined(separator: ", ")
        return "a hub that was not given \(main) delivers to the real main queue, which \(main) does not run: "
            + "main-actor observers of \(listed)\(stray.count > 3 ? ", …" : "") have deliveries waiting there. "
            + "Call hub.useMainActorStandIn(main) before the first post"
    }
}

extension NotificationHub {
    /// Fails the test once for each registration this hub refused (see `FamilyMismatch`).
    func reportRegistrationMisuses(at site: FailureSite) {
        for misuse in _takeRegistrationMisuses() {
            reportFailure(misuse.message, at: site)
        }
    }

    /// With `site`, reports the registrations this hub refused. Inside a stand-in's scope, hands this hub to the stand-in's ``StrayHubWatch``; with `site`,
    /// also checks it now.
    func noteInStandInScope(checkingAt site: FailureSite? = nil) {
        if let site { reportRegistrationMisuses(at: site) }
        // The stand-in of the calling task's `withMainActorStandIn` scope, if any.
        guard let main = (MainQueueExecutorScope.current as? StandIn)?.main else { return }
        main.strayHubs.note(self)
        if let site { main.strayHubs.check(main, at: site) }
    }
}
