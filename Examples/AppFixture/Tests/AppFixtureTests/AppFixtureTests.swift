import Foundation
import Herald
import HeraldTesting
import Testing

@testable import AppFixture

// Tests in a module with default main-actor isolation: each test runs on the main actor.
@Suite("An app built with Xcode 26's defaults")
struct AppFixtureTests {
    @Test("the view model shows what a background import posts, through the main-actor stand-in")
    func viewModelFollowsABackgroundImport() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = ImportViewModel(hub: hub)
            await Importer(hub: hub).importFiles(["a.txt", "b.txt", "c.txt", "d.txt"])
            #expect(model.importedFiles.isEmpty, "held by the stand-in until the test runs it")
            await main.runUntilIdle()
            #expect(model.importedFiles == ["a.txt", "b.txt", "c.txt", "d.txt"])
            #expect(model.percent == 100)
            #expect(model.progress.updateCount == 1, "the .latest mailbox kept only the newest progress")
        }
    }

    @Test("the view model's awaited save reports what the app would see")
    func saveReportsDelivery() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = ImportViewModel(hub: hub)
            var saved: [Int] = []
            let token = hub.observe(ProfileSaved.self, on: MainActor.shared) { saved.append($0.userID) }
            #expect(await model.save(userID: 7, hub: hub))
            #expect(saved == [7])
            token.cancel()
        }
    }

    @Test("an actor store and a family observer on a queue receive a background poster's posts")
    func storeAndFamily() async throws {
        let hub = NotificationHub()
        let store = ImportStore()
        await store.start(hub: hub)
        let analytics = Analytics(hub: hub)
        await Importer(hub: hub).importFiles(["x"])
        hub.post(ScreenViewed(name: "home"))
        hub.post(ButtonTapped(name: "import"))
        try await hub.waitUntilIdle(timeout: .seconds(60))
        #expect(await store.names == ["x"])
        #expect(analytics.recorded == ["home", "import"])
    }

    @Test("legacy NotificationCenter code reads the Foundation objects it casts to")
    func legacyObserverReadsObjects() async {
        let hub = NotificationHub()
        let center = NotificationCenter()
        let audit = LegacyAudit(center: center)
        let bridge = hub.forward(ProfileSaved.self, toCenter: center)
        let model = ImportViewModel(hub: hub)
        #expect(await model.save(userID: 3, hub: hub), "the bridge to the center is an observer")
        #expect(audit.userIDs == [3])
        #expect(audit.homePages == [URL(string: "https://example.org/3")])
        #expect(audit.allHaveFoundationObjects)
        bridge.cancel()
    }

    @Test("user-info keys and the shared hub declared nonisolated work from background code")
    func nonisolatedDeclarations() async {
        let read = await Task.detached { () -> (Int?, URL?, Bool) in
            var info: [AnyHashable: Any] = [:]
            info[.userID] = 42
            info[.homePage] = URL(string: "https://example.org")
            return (info[.userID], info[.homePage], NotificationHub.app.observerCount(of: FileImported.self) == 0)
        }.value
        #expect(read.0 == 42)
        #expect(read.1 == URL(string: "https://example.org"))
        #expect(read.2)
    }

    // snippet: begin
    @Test func theViewModelShowsEachImportedFile() async throws {
        // The closure says `throws`: its only `try` is inside `#expect`.
        try await withMainActorStandIn { main throws in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = ImportViewModel(hub: hub)
            let imported = hub.record(FileImported.self)
            await Importer(hub: hub).importFiles(["a.txt", "b.txt"])
            #expect(try await imported.next().name == "a.txt")
            await main.runUntilIdle()
            #expect(model.importedFiles == ["a.txt", "b.txt"])
            main.expectNoPendingWork()
        }
    }
    // snippet: end

    // snippet: begin
    @Test func aBackgroundWaitingPostReachesTheViewModel() async {
        await withMainActorStandIn { main in
            let hub = NotificationHub()
            hub.useMainActorStandIn(main)
            let model = ImportViewModel(hub: hub)
            // The waiting post waits for the view model's delivery, which the stand-in holds until
            // the test runs it: `run` runs the stand-in while the importer works.
            let report = await main.run { await Importer(hub: hub).importAndConfirm("a.txt") }
            #expect(report.deliveredCount == 1)
            #expect(model.importedFiles == ["a.txt"])
        }
    }
    // snippet: end

    @Test("a notification whose conformance sits in an extension posts from the background to a queue observer")
    func conformanceInAnExtension() async throws {
        let hub = NotificationHub()
        let seen = Recorded<Int>()
        let token = hub.observe(ImportFinished.self, on: .queue(DispatchQueue(label: "finished"))) { note in
            seen.append(note.fileCount)
        }
        let report = await Task.detached { await hub.postAndWait(ImportFinished(fileCount: 3)) }.value
        #expect(report.deliveredCount == 1)
        #expect(seen.all == [3])
        token.cancel()
    }

    @Test("a retained value whose Equatable conformance is main-actor isolated is removed with a predicate")
    func removeRetainedValueWithAPredicate() {
        let hub = NotificationHub()
        hub.postAndRetain(FileImported(name: "last"))
        #expect(hub.removeRetainedValue(of: FileImported.self) { $0.name == "last" })
        #expect(hub.retainedValue(of: FileImported.self) == nil)
    }
}
