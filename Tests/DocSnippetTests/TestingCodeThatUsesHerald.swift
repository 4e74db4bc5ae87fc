import Foundation
import Herald
import HeraldTesting
import Testing

// The Swift blocks of TestingCodeThatUsesHerald.md after the first two (which are the whole files
// Testing/ProfileViewModel.swift and Testing/RenamingTest.swift), in order, compiled and run.

// snippet: begin
@Test @MainActor func searchIsDebounced() async {
    await withMainActorStandIn { main in
        let hub = NotificationHub()
        hub.useMainActorStandIn(main)
        let model = ProfileViewModel(hub: hub, images: NoImages())
        let searches = hub.record(SearchRequested.self)

        model.searchTextChanged("a")
        await main.advance(by: .milliseconds(100))
        model.searchTextChanged("ad")
        await main.advance(by: .milliseconds(299))
        #expect(searches.values.isEmpty)

        await main.advance(by: .milliseconds(1))
        #expect(searches.takeAll() == [SearchRequested(text: "ad")])
        main.expectNoPendingWork()
    }
}
// snippet: end

// snippet: begin
actor SlowImages: ImageLoading {
    private(set) var calls: [String] = []

    func image(at url: String) async throws -> String {
        calls.append("start \(url)")
        await Task.yield()  // suspends, as a download would
        calls.append("end \(url)")
        return "image of \(url)"
    }
}

@Test @MainActor func avatarsReloadOneAtATime() async {
    await withMainActorStandIn { main in
        let hub = NotificationHub()
        hub.useMainActorStandIn(main)
        let images = SlowImages()
        let model = ProfileViewModel(hub: hub, images: images)

        hub.post(AvatarChanged(url: "a.png"))
        hub.post(AvatarChanged(url: "b.png"))
        await main.runUntilIdle()  // also waits for the async handlers it starts
        #expect(await images.calls == ["start a.png", "end a.png", "start b.png", "end b.png"])
        #expect(model.avatar == "image of b.png")
    }
}
// snippet: end

// snippet: begin
struct FileUploaded: TypedNotification { let name: String }

struct FileIndexed: TypedNotification, Equatable { let name: String }

/// Uploads files on a background queue and announces each one, as its subject.
final class FileUploader: Sendable {
    private let hub: NotificationHub
    private let files: [String]

    init(hub: NotificationHub, files: [String]) {
        self.hub = hub
        self.files = files
    }

    func start() {
        let (hub, files) = (self.hub, self.files)
        DispatchQueue.global().async { [self] in
            for file in files { hub.post(FileUploaded(name: file), from: self) }
        }
    }
}
// snippet: end

// snippet: begin
@Test func uploaderAnnouncesEachFile() async throws {
    let hub = NotificationHub()
    let uploads = DispatchQueue(label: "uploads")
    let uploader = FileUploader(hub: hub, files: ["a.csv", "b.csv"])
    let recorder = hub.record(FileUploaded.self, from: uploader, on: .queue(uploads))
    uploader.start()
    #expect(try await recorder.next().name == "a.csv")
    #expect(try await recorder.next().name == "b.csv")
}
// snippet: end

// snippet: begin
@Test func everyUploadIsIndexed() async throws {
    let hub = NotificationHub()
    let indexing = DispatchQueue(label: "indexing")
    let indexer = hub.observe(FileUploaded.self, on: .queue(indexing)) { note in
        hub.post(FileIndexed(name: note.name))  // work that a handler sets off
    }
    let indexed = hub.record(FileIndexed.self, on: .queue(indexing))
    for name in ["a.csv", "b.csv"] { hub.post(FileUploaded(name: name)) }

    try await hub.waitUntilIdle(timeout: .seconds(5))  // what handlers post counts too
    #expect(indexed.takeAll().map(\.name) == ["a.csv", "b.csv"])
    indexer.cancel()
}
// snippet: end

// snippet: begin
@Test @MainActor func modelObservesOnMainAndStopsOnDeinit() {
    let hub = NotificationHub()

    var model: ProfileViewModel? = ProfileViewModel(hub: hub, images: NoImages())
    hub.expectRegistered(ProfileLoaded.self, on: .mainQueue)
    #expect(model?.title == "Loading…")
    model = nil
    hub.expectNotRegistered(ProfileLoaded.self)

    // Or all in one: registers while alive, is deallocated, leaves nothing behind.
    expectUnregistersOnDeinit(ProfileRenamed.self, in: hub, on: .mainQueue) {
        ProfileViewModel(hub: hub, images: NoImages())
    }
}
// snippet: end

// snippet: begin
struct Tick: TypedNotification { let value: Int }

@Test func dropsAreCounted() {
    let hub = NotificationHub()
    let ticks = hub.notifications(of: Tick.self, bufferingPolicy: .bufferingNewest(3))
    for value in 1...10 { hub.post(Tick(value: value)) }
    #expect(ticks.droppedCount == 7)  // drops are counted, never silent
}
// snippet: end
