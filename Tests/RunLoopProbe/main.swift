// A helper executable for HeraldTests: checks main-queue delivery on the real main thread,
// with the main queue drained by `RunLoop.main.run()` (the drain mode of a Cocoa-style app).
// It prints one PASS/FAIL line per check and exits 0 only if every check passed.
import Dispatch
import Foundation
import Herald
import Synchronization

struct Tick: TypedNotification {
    let value: Int
}

let failures = Atomic<Int>(0)
func check(_ condition: Bool, _ what: String) {
    print("\(condition ? "PASS" : "FAIL") \(what)")
    if !condition { failures.add(1, ordering: .relaxed) }
}

DispatchQueue.global().asyncAfter(deadline: .now() + 20) {
    print("FAIL timed out: the main thread never finished the checks")
    exit(2)
}

let hub = NotificationHub()
let seen = NSLock()
nonisolated(unsafe) var deliveries: [(value: Int, onMainThread: Bool)] = []
let onMain = hub.observe(Tick.self, on: MainActor.shared) { note in
    seen.withLock { deliveries.append((note.value, Thread.isMainThread)) }
}
func delivered(_ value: Int) -> Bool? {
    seen.withLock { deliveries.first { $0.value == value }?.onMainThread }
}

// 1. Top-level code on the main thread, outside any main-queue block: postAndWait runs inline.
hub.postAndWait(Tick(value: 1))
check(delivered(1) == true, "postAndWait from top-level main-thread code ran the main observer inline")

// 2. From a background thread, post then postAndWait; the run loop drains the main queue.
Thread {
    hub.post(Tick(value: 2))
    hub.postAndWait(Tick(value: 3))
    let afterWait = delivered(3)
    let frame = MainActor.performAndWait { Thread.isMainThread ? "main thread" : "other thread" }
    DispatchQueue.main.async {
        check(delivered(2) == true, "post from a background thread delivered on the real main thread")
        check(afterWait == true, "postAndWait from a background thread returned after the main observer ran")
        check(frame == "main thread", "MainActor.performAndWait from a background thread ran on the main thread")

        // 3. Inside a main-queue block: postAndWait and performAndWait run inline.
        hub.postAndWait(Tick(value: 4))
        check(delivered(4) == true, "postAndWait from a main-queue block ran inline")
        let inline = DeliveryTarget.mainQueue.performAndWait { 42 }
        check(inline == 42, "DeliveryTarget.mainQueue.performAndWait from the main queue ran inline")

        // 4. From a run-loop timer on the main thread.
        let timer = Timer(timeInterval: 0.001, repeats: false) { _ in
            hub.postAndWait(Tick(value: 5))
            check(delivered(5) == true, "postAndWait from a RunLoop timer on the main thread ran inline")
            withExtendedLifetime(onMain) {}
            let failed = failures.load(ordering: .relaxed)
            print(failed == 0 ? "ALL PASSED" : "\(failed) FAILED")
            exit(failed == 0 ? 0 : 1)
        }
        RunLoop.main.add(timer, forMode: .default)
    }
}.start()

RunLoop.main.run()
