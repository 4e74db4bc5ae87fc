import Foundation
import Herald
import Observation
import Synchronization

// snippet: begin
/// A view model, main-actor isolated by the module's default. It reads the newest progress as
/// Observation state, and collects imported files with a main-actor observer.
@Observable
final class ImportViewModel {
    let progress: LatestNotification<ImportProgress>
    private(set) var importedFiles: [String] = []
    @ObservationIgnored private var tokens = Set<ObservationToken>()

    init(hub: NotificationHub) {
        progress = LatestNotification(ImportProgress.self, in: hub)
        // `on: MainActor.shared` gives a `@MainActor` closure: it may touch the view model. With
        // the default `.posting` target the closure is `@Sendable` and nonisolated, and the
        // compiler says "main actor-isolated property 'importedFiles' can not be mutated from a
        // Sendable closure".
        hub.observe(FileImported.self, on: MainActor.shared) { [weak self] note in
            self?.importedFiles.append(note.name)
        }
        .store(in: &tokens)
    }

    var percent: Int { Int((progress.value?.fraction ?? 0) * 100) }
    // snippet: pause

    /// Saves and tells the rest of the app, waiting until every observer has run.
    func save(userID: Int, hub: NotificationHub) async -> Bool {
        let report = await hub.postAndWait(
            ProfileSaved(
                userID: userID, homePage: URL(string: "https://example.org/\(userID)"),
                requestID: UUID(), savedAt: Date(timeIntervalSince1970: 1_700_000_000)))
        return report.isSuccess && report.deliveredCount > 0
    }
    // snippet: resume
}
// snippet: end

// snippet: begin
/// The background importer: its work runs off the main actor.
nonisolated struct Importer {
    let hub: NotificationHub

    @concurrent
    func importFiles(_ names: [String]) async {
        for (index, name) in names.enumerated() {
            hub.post(FileImported(name: name))
            hub.post(ImportProgress(fileIndex: index + 1, fileCount: names.count))
        }
    }

    /// Imports one file and returns once every observer has it: the view model's too.
    @concurrent
    func importAndConfirm(_ name: String) async -> DeliveryReport {
        await hub.postAndWait(FileImported(name: name))
    }
}
// snippet: end

/// An actor that keeps what was imported, observing on itself.
actor ImportStore {
    private(set) var names: [String] = []
    private var token: ObservationToken?

    func start(hub: NotificationHub) {
        token = hub.observe(FileImported.self, on: self) { store, note in
            store.names.append(note.name)
        }
    }
}

/// Counts analytics events of every type on a background queue.
nonisolated final class Analytics: Sendable {
    private let queue = DispatchQueue(label: "analytics")
    private let names = Recorded<String>()
    private let token: ObservationToken

    init(hub: NotificationHub) {
        let names = self.names
        token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(queue)) { event in
            names.append(event.name)
        }
    }

    var recorded: [String] { names.all }
}

/// Legacy code that still listens on NotificationCenter and reads `userInfo` with casts.
nonisolated final class LegacyAudit: Sendable {
    private typealias Reading = (userID: Int?, homePage: URL?, requestID: UUID?, savedAt: Date?)
    private let seen = Recorded<Reading>()
    private let token: ObservationToken

    init(center: NotificationCenter) {
        let seen = self.seen
        let observer = center.addObserver(forName: ProfileSaved.notificationName, object: nil, queue: nil) { note in
            let info = note.userInfo ?? [:]
            seen.append(
                (
                    info["userID"] as? Int, info["homePage"] as? URL, info["requestID"] as? UUID,
                    info["savedAt"] as? Date
                ))
        }
        let box = ObserverBox(observer)
        token = ObservationToken { center.removeObserver(box.observer) }
    }

    var userIDs: [Int?] { seen.all.map(\.userID) }
    var homePages: [URL?] { seen.all.map(\.homePage) }
    var allHaveFoundationObjects: Bool {
        seen.all.allSatisfy { $0.homePage != nil && $0.requestID != nil && $0.savedAt != nil }
    }
}

/// `NotificationCenter`'s observer token, which is not `Sendable` but only handed back to
/// `removeObserver`.
private nonisolated final class ObserverBox: @unchecked Sendable {
    let observer: any NSObjectProtocol

    init(_ observer: any NSObjectProtocol) {
        self.observer = observer
    }
}

/// What handlers on other threads record, read from the tests.
nonisolated final class Recorded<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])

    func append(_ item: Element) {
        items.withLock { $0.append(item) }
    }

    var all: [Element] { items.withLock { $0 } }
}
