import Herald
import Observation

struct ProfileLoaded: TypedNotification { let name: String }
struct ProfileRenamed: TypedNotification { let name: String }
struct AvatarChanged: TypedNotification { let url: String }
struct SearchRequested: TypedNotification, Equatable { let text: String }

protocol ImageLoading: Sendable {
    func image(at url: String) async throws -> String
}

@MainActor
@Observable
final class ProfileViewModel {
    private(set) var title = "Loading…"
    private(set) var avatar: String?

    @ObservationIgnored private let hub: NotificationHub
    @ObservationIgnored private var searchGeneration = 0
    @ObservationIgnored private var observations: Set<ObservationToken> = []

    init(hub: NotificationHub, images: some ImageLoading) {
        self.hub = hub
        hub.observe(ProfileLoaded.self, on: MainActor.shared) { [weak self] note in
            self?.title = note.name
        }.store(in: &observations)
        hub.observe(ProfileRenamed.self, on: MainActor.shared) { [weak self] note in
            self?.title = note.name
        }.store(in: &observations)
        // An async handler: one reload at a time, in post order, without a Task { } of its own.
        hub.observe(AvatarChanged.self, on: MainActor.shared) { [weak self] note async in
            let image = try? await images.image(at: note.url)
            self?.avatar = image
        }.store(in: &observations)
    }

    func rename(to name: String) {
        hub.post(ProfileRenamed(name: name))
    }

    func searchTextChanged(_ text: String) {
        // Debounced: request a search once typing pauses for 300 ms.
        searchGeneration += 1
        let generation = searchGeneration
        MainActor.perform(after: .milliseconds(300)) { [weak self, hub] in
            guard let self, self.searchGeneration == generation else { return }
            hub.post(SearchRequested(text: text))
        }
    }
}
