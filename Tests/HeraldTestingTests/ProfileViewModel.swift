import Herald
import Synchronization

// A sample view model, written the way an app would write it: its observers run on `.mainQueue` in
// production, and the target is injected so that tests can run them synchronously.

struct ProfileLoaded: TypedNotification, Equatable {
    let name: String
}

struct ProfileRenamed: TypedNotification, Equatable {
    let name: String
}

struct SearchRequested: TypedNotification, Equatable {
    let text: String
}

struct SessionEnded: TypedNotification {}

final class ProfileViewModel: Sendable {
    private struct State {
        var title = "Loading…"
        var history: [String] = []
        var isSignedOut = false
        var searchGeneration = 0
    }

    /// How long typing must pause before a search is requested.
    static let searchDebounce = Duration.milliseconds(300)

    private let hub: NotificationHub
    private let target: DeliveryTarget
    private let state = Mutex(State())
    private let observations = Mutex<Set<ObservationToken>>([])

    init(hub: NotificationHub, deliveringOn target: DeliveryTarget = .mainQueue) {
        self.hub = hub
        self.target = target
        // A token kept by the model: the observation ends when the model is deallocated.
        let loaded = hub.observe(ProfileLoaded.self, on: target) { [weak self] note in
            self?.apply(title: note.name)
        }
        observations.withLock { loaded.store(in: &$0) }
        // Owner-bound observations: they end when the model is deallocated, no token needed.
        hub.observe(ProfileRenamed.self, owner: self, on: target) { model, note in
            model.apply(title: note.name)
        }
        hub.observe(SessionEnded.self, owner: self, on: target) { model, _ in
            model.state.withLock { $0.isSignedOut = true }
        }
    }

    var title: String { state.withLock { $0.title } }
    var history: [String] { state.withLock { $0.history } }
    var isSignedOut: Bool { state.withLock { $0.isSignedOut } }

    /// The user renamed the profile: tell everyone, including this model.
    func rename(to name: String) {
        hub.post(ProfileRenamed(name: name))
    }

    /// The user typed in the search field: request a search once typing pauses.
    func searchTextChanged(_ text: String) {
        let generation = state.withLock { state -> Int in
            state.searchGeneration += 1
            return state.searchGeneration
        }
        target.perform(after: Self.searchDebounce) { [weak self, hub] in
            guard let self, self.state.withLock({ $0.searchGeneration == generation }) else { return }
            hub.post(SearchRequested(text: text))
        }
    }

    private func apply(title: String) {
        state.withLock { state in
            state.title = title
            state.history.append(title)
        }
    }
}
