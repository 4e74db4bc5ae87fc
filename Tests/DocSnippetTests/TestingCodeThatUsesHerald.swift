import Foundation
import Herald
import HeraldTesting
import Testing

// The Swift blocks of TestingCodeThatUsesHerald.md, in order, compiled and run as tests.

// snippet: begin
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
// snippet: end

// snippet: begin
import Herald
import HeraldTesting
import Testing

@Test func renamingUpdatesTheTitle() {
    let hub = NotificationHub()
    let main = TestDeliveryTarget(name: "main")
    let model = ProfileViewModel(hub: hub, deliveringOn: main.target)

    hub.post(ProfileLoaded(name: "Ada"))
    #expect(model.title == "Loading…")        // queued, not delivered yet
    main.runUntilIdle()
    #expect(model.title == "Ada")

    model.rename(to: "Grace")
    main.runUntilIdle()
    #expect(model.title == "Grace")
    main.expectNoPendingWork()
}
// snippet: end

// snippet: begin
@Test func searchIsDebounced() {
    let hub = NotificationHub()
    let main = TestDeliveryTarget(name: "main")
    let model = ProfileViewModel(hub: hub, deliveringOn: main.target)
    let searches = hub.record(SearchRequested.self)

    model.searchTextChanged("a")
    main.advance(by: .milliseconds(100))
    model.searchTextChanged("ad")
    main.advance(by: .milliseconds(299))
    #expect(searches.values.isEmpty)

    main.advance(by: .milliseconds(1))
    #expect(searches.takeAll() == [SearchRequested(text: "ad")])
    main.expectNoPendingWork()
}
// snippet: end

// snippet: begin
@Test func importerAnnouncesEachFile() async throws {
    let hub = NotificationHub()
    let imports = DispatchQueue(label: "imports")
    let importer = Importer(hub: hub, files: ["a.csv", "b.csv"])
    let recorder = hub.record(FileImported.self, from: importer, on: .queue(imports))
    importer.start()
    #expect(try await recorder.next().name == "a.csv")
    #expect(try await recorder.next().name == "b.csv")
}
// snippet: end

// snippet: begin
@Test func modelObservesOnMainAndStopsOnDeinit() {
    let hub = NotificationHub()
    let main = TestDeliveryTarget(name: "main")

    var model: ProfileViewModel? = ProfileViewModel(hub: hub, deliveringOn: main.target)
    hub.expectRegistered(ProfileLoaded.self, on: main.target)
    #expect(model?.title == "Loading…")
    model = nil
    hub.expectNotRegistered(ProfileLoaded.self)

    // Or all in one: registers while alive, is deallocated, leaves nothing behind.
    expectUnregistersOnDeinit(ProfileRenamed.self, in: hub, on: main.target) {
        ProfileViewModel(hub: hub, deliveringOn: main.target)
    }
}
// snippet: end

// snippet: begin
@Test func dropsAreCounted() {
    let hub = NotificationHub()
    let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(3))
    for value in 1...10 { hub.post(Tick(value: value)) }
    #expect(ticks.droppedCount == 7)  // drops are counted, never silent
}
// snippet: end

// Context for the examples above.

struct FileImported: TypedNotification { let name: String }

struct Tick: TypedNotification { let value: Int }

final class Importer: Sendable {
    private let hub: NotificationHub
    private let files: [String]

    init(hub: NotificationHub, files: [String]) {
        self.hub = hub
        self.files = files
    }

    func start() {
        let (hub, files) = (self.hub, self.files)
        DispatchQueue.global().async { [self] in
            for file in files { hub.post(FileImported(name: file), from: self) }
        }
    }
}
