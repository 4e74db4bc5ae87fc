import Herald
import Observation

// A `@MainActor @Observable` view model written the way an app writes it: it observes with
// `on: MainActor.shared`, debounces with `MainActor.perform(after:)` and reloads an image in an
// async handler. Nothing in it exists for tests.

struct AvatarChanged: TypedNotification, Equatable {
    let url: String
}

/// Loads images; the app's goes to the network, the tests' is a fake.
protocol ImageLoading: Sendable {
    func image(at url: String) async throws -> String
}

@MainActor
@Observable
final class AccountViewModel {
    private(set) var title = "Loading…"
    private(set) var history: [String] = []
    private(set) var isSignedOut = false
    private(set) var avatar: String?
    private(set) var avatarFailures = 0

    /// How long typing must pause before a search is requested.
    static let searchDebounce = Duration.milliseconds(300)

    @ObservationIgnored private let hub: NotificationHub
    @ObservationIgnored private var searchGeneration = 0
    @ObservationIgnored private var tokens: Set<ObservationToken> = []

    init(hub: NotificationHub, images: some ImageLoading) {
        self.hub = hub
        hub.observe(ProfileLoaded.self, on: MainActor.shared) { [weak self] note in
            self?.apply(title: note.name)
        }.store(in: &tokens)
        hub.observe(ProfileRenamed.self, on: MainActor.shared) { [weak self] note in
            self?.apply(title: note.name)
        }.store(in: &tokens)
        hub.observe(SessionEnded.self, on: MainActor.shared) { [weak self] _ in
            self?.isSignedOut = true
        }.store(in: &tokens)
        // One reload at a time, in order: the next AvatarChanged waits for this one to finish.
        hub.observe(AvatarChanged.self, on: MainActor.shared) { [weak self] note async in
            do {
                let image = try await images.image(at: note.url)
                self?.avatar = image
            } catch {
                self?.avatarFailures += 1
            }
        }.store(in: &tokens)
    }

    /// The user renamed the profile: tell everyone, including this model.
    func rename(to name: String) {
        hub.post(ProfileRenamed(name: name))
    }

    /// The user typed in the search field: request a search once typing pauses.
    func searchTextChanged(_ text: String) {
        searchGeneration += 1
        let generation = searchGeneration
        MainActor.perform(after: Self.searchDebounce) { [weak self, hub] in
            guard let self, self.searchGeneration == generation else { return }
            hub.post(SearchRequested(text: text))
        }
    }

    private func apply(title: String) {
        self.title = title
        history.append(title)
    }
}
