// herald-soak: see Soak.swift. The main queue is drained by `dispatchMain()` on the main thread,
// as in a server; the soak itself runs on its own thread and exits with its verdict.
import Dispatch
import Foundation

let options = Options.parse(CommandLine.arguments)
Thread {
    exit(runSoak(options))
}.start()
dispatchMain()
