import Foundation
import Testing

/// Runs `herald-demo`, the README's `swift run herald-demo`, and checks the lines that carry its
/// claims: where each piece of code ran, and in which order the waiting calls returned.
@Suite("herald-demo")
struct DemoTests {
    /// The event lines of the demo's output, with runs of spaces collapsed so the checks do not
    /// depend on column widths.
    private func lines(_ output: String) -> [String] {
        output.split(separator: "\n").map { line in
            line.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
    }

    /// Splits an event line into where it ran, who acted, and the rest.
    private func event(_ line: String) -> (place: String, actor: String, text: String)? {
        let places = ["main queue (worker)", "main queue", "background queue", "network thread", "other thread"]
        guard let place = places.first(where: { line.hasPrefix($0 + " ") }) else { return nil }
        let rest = line.dropFirst(place.count + 1)
        guard let space = rest.firstIndex(of: " ") else { return nil }
        return (place, String(rest[..<space]), String(rest[rest.index(after: space)...]))
    }

    @Test("every scene runs, on the right queue or thread, and the demo exits 0 by itself")
    func fullRun() async throws {
        let result = try await runProduct("herald-demo")
        #expect(result.status == 0, "\(result.output)")
        let lines = lines(result.output)
        for expected in [
            "background queue API POST /users {\"name\": \"Ada\"} → 201",
            "main queue UI UserCreated → title “Welcome, Ada” (user #7, HTTP 201)",
            "main queue UI PoolJoined → “World Cup final”, 12 members, stake $25.00",
            "main queue UI screen title is now “World Cup final”",
            "background queue API … postAndWait returned; the UI had handled 2 of 2 (report: 1 ran, 0 failed)",
            "network thread NET flush: 6 frames, 90 bytes",
            "main queue UI view.frame = (0, 560, 390×284), view.isHidden = false",
            "background queue API … returned frame (0, 560, 390×284), visible: true",
            "background queue LEGACY observer got BettingPoolUserCreated, userInfo userID 7, name Ada",
            "main queue UI typed observer got UserCreated(userID: 7, name: Ada)",
            "background queue LEGACY observer got BettingPoolUserCreated, userInfo userID 8, name Grace",
            "main queue UI typed observer got UserCreated(userID: 8, name: Grace)",
            "main queue UI 2 events: the legacy observer got 2, the typed one 2; no echoes",
            "background queue LEDGER recorded bet of $150 by user #7",
            "main queue UI bet slip shows $150, pending review",
            "background queue API … returned: 3 observers ran, 1 failed",
            "Done: 6 of 6 scenes.",
        ] {
            #expect(lines.contains(expected), "missing: \(expected)\n\(result.output)")
        }
        // Every UI line ran on the main queue, every socket line on the network thread.
        let events = lines.compactMap(event)
        let ui = events.filter { $0.actor == "UI" }
        #expect(ui.count == 15, "\(result.output)")
        #expect(ui.allSatisfy { $0.place == "main queue" }, "\(result.output)")
        #expect(events.filter { $0.actor == "API" }.allSatisfy { $0.place == "background queue" })
        #expect(events.filter { $0.actor == "NET" }.allSatisfy { $0.place == "network thread" })
        let writes = lines.filter { $0.contains(" NET write #") }
        #expect(writes.count == 6, "\(result.output)")
        #expect(writes.allSatisfy { $0.hasPrefix("network thread NET write #") }, "\(result.output)")
        #expect(writes.map { $0.split(separator: " ")[4] } == ["#1", "#2", "#3", "#4", "#5", "#6"])
        // The error handler reported the throwing observer, with its location.
        #expect(
            lines.contains {
                $0.contains(
                    "ERR error handler: BetLimitExceeded($150 > $100) from the BetPlaced observer at herald_demo/Scenes.swift:"
                )
            })
        // post returned without waiting (whether the UI had already run is a race, so only the line
        // is checked); postAndWait returned only after both deliveries to the UI.
        #expect(lines.contains { $0.hasPrefix("background queue API … post returned; the UI had handled ") })
        let waitStart = try #require(lines.firstIndex(of: "background queue API postAndWait(OddsChanged 3.10) …"))
        let secondDelivery = try #require(lines.firstIndex(of: "main queue UI odds for pool 42 are now 3.10"))
        let waitReturn = try #require(lines.firstIndex { $0.hasPrefix("background queue API … postAndWait returned") })
        #expect(waitStart < secondDelivery && secondDelivery < waitReturn)
        #expect(!lines.contains { $0.contains("other thread") || $0.contains("(worker)") }, "\(result.output)")
    }

    @Test("--help lists every scene")
    func help() async throws {
        let result = try await runProduct("herald-demo", arguments: ["--help"])
        #expect(result.status == 0)
        for scene in ["api", "wait", "network", "frame", "forward", "errors"] {
            #expect(result.output.contains("\n  \(scene) "), "missing scene \(scene)\n\(result.output)")
        }
    }

    @Test("a scene name runs only that scene")
    func oneScene() async throws {
        let result = try await runProduct("herald-demo", arguments: ["frame"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("4. frame:"))
        #expect(!result.output.contains("1. api:"))
        #expect(result.output.contains("Done: 1 of 6 scenes."))
    }

    @Test("an unknown scene name fails with status 64")
    func unknownScene() async throws {
        let result = try await runProduct("herald-demo", arguments: ["nope"])
        #expect(result.status == 64)
        #expect(result.output.contains("no scene named 'nope'"))
    }
}
