import Herald
import Observation
import Testing

// This file imports Herald and the Observation framework together, as every SwiftUI or
// Observation-based view model does. It compiles only if no Herald name hides the Observation
// module or its `Observable` macro.

private struct ScoreChanged: TypedNotification {
    let score: Int
}

@MainActor
@Observable
private final class ScoreViewModel {
    private(set) var title = "No score yet"
    @ObservationIgnored private var tokens = Set<ObservationToken>()

    init(hub: NotificationHub) {
        hub.observe(ScoreChanged.self, on: MainActor.shared) { [weak self] note in
            self?.title = "Score: \(note.score)"
        }
        .store(in: &tokens)
    }
}

@Suite("Herald next to the Observation framework")
struct ObservableInteropTests {
    @Test("A @MainActor @Observable view model is updated by a main-actor observer")
    @MainActor
    func observableViewModelIsUpdated() async {
        let hub = NotificationHub()
        let model = ScoreViewModel(hub: hub)
        let changes = Counter()
        withObservationTracking {
            _ = model.title
        } onChange: {
            changes.increment()
        }

        let report = await Task.detached { await hub.postAndWait(ScoreChanged(score: 42)) }.value

        #expect(report.deliveredCount == 1)
        #expect(model.title == "Score: 42")
        #expect(changes.count == 1)
    }
}
