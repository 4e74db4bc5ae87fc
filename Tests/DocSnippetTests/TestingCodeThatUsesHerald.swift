import Foundation
import Herald
import HeraldTesting
import Testing

// The Swift blocks of TestingCodeThatUsesHerald.md after the first two (which are the whole files
// Testing/ProfileViewModel.swift and Testing/RenamingTest.swift), in order, compiled and run.

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
