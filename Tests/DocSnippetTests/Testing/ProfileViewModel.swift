import Herald
import Synchronization

struct ProfileLoaded: TypedNotification { let name: String }
struct ProfileRenamed: TypedNotification { let name: String }
struct SearchRequested: TypedNotification, Equatable { let text: String }

final class ProfileViewModel: Sendable {
    private struct State {
        var title = "Loading…"
        var searchGeneration = 0
    }

    private let hub: NotificationHub
    private let target: DeliveryTarget
    private let state = Mutex(State())
    private let observations = Mutex<Set<ObservationToken>>([])

    init(hub: NotificationHub, deliveringOn target: DeliveryTarget = .mainQueue) {
        self.hub = hub
        self.target = target
        let loaded = hub.observe(ProfileLoaded.self, on: target) { [weak self] note in
            self?.apply(title: note.name)
        }
        observations.withLock { loaded.store(in: &$0) }
        hub.observe(ProfileRenamed.self, owner: self, on: target) { model, note in
            model.apply(title: note.name)
        }
    }

    var title: String { state.withLock { $0.title } }

    func rename(to name: String) {
        hub.post(ProfileRenamed(name: name))
    }

    func searchTextChanged(_ text: String) {
        // Debounced: request a search once typing pauses for 300 ms.
        let generation = state.withLock { state in
            state.searchGeneration += 1
            return state.searchGeneration
        }
        target.perform(after: .milliseconds(300)) { [weak self, hub] in
            guard let self, self.state.withLock({ $0.searchGeneration == generation }) else { return }
            hub.post(SearchRequested(text: text))
        }
    }

    private func apply(title: String) {
        state.withLock { $0.title = title }
    }
}
