// herald-demo: the scenario Herald was made for, on the real main thread driven by RunLoop.main.
//
//     swift run herald-demo            # every scene
//     swift run herald-demo network    # one scene
//     swift run herald-demo --help
import Foundation

Place.markMainQueue()

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(
        """
        USAGE: herald-demo [SCENE ...]

        Plays Herald's scenes on the real main thread, driven by RunLoop.main. Each line shows
        where its code ran: the main queue, the background queue or the network thread.

        SCENES:
        """)
    for scene in Demo.scenes {
        print("  " + scene.name.padding(toLength: 10, withPad: " ", startingAt: 0) + scene.summary)
    }
    exit(0)
}

var selected: [Scene] = []
for name in arguments {
    guard let scene = Demo.scenes.first(where: { $0.name == name }) else {
        let names = Demo.scenes.map(\.name).joined(separator: ", ")
        FileHandle.standardError.write(
            Data("herald-demo: no scene named '\(name)'; try one of \(names), or --help\n".utf8))
        exit(64)
    }
    selected.append(scene)
}
if selected.isEmpty {
    selected = Demo.scenes
}

// A scene that never finishes must not hang the demo (or the test that runs it).
DispatchQueue.global().asyncAfter(deadline: .now() + 15) {
    FileHandle.standardError.write(Data("herald-demo: timed out after 15 s\n".utf8))
    exit(2)
}

Task { @MainActor in
    for scene in selected {
        let number = (Demo.scenes.firstIndex { $0.name == scene.name } ?? 0) + 1
        print("\n\(number). \(scene.name): \(scene.summary)")
        do {
            try await scene.run()
        } catch {
            FileHandle.standardError.write(Data("herald-demo: scene '\(scene.name)' failed: \(error)\n".utf8))
            exit(1)
        }
    }
    print("\nDone: \(selected.count) of \(Demo.scenes.count) scenes.")
    exit(0)
}

// The main thread drains the main queue, as in an app: every "main queue" line runs right here.
RunLoop.main.run()
