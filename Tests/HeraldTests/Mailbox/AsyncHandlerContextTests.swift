import Dispatch
import Foundation
import Herald
import Testing

/// A task-local value such as a tracing library keeps: the poster's, which no handler may see.
private enum Trace {
    @TaskLocal static var id: String?
}

/// What an async handler's task saw when it was called.
private struct CallContext: Sendable, Equatable {
    let index: Int
    let traceID: String?
    let priority: TaskPriority
}

@Suite("Async handlers start from a clean context")
struct AsyncHandlerContextTests {
    enum Target: String, CaseIterable, Sendable {
        case posting, mainActor, serialQueue, operationQueue, thread, executor, actor
    }

    /// Registers an async handler on `target`; the returned thread, if any, is the test's to shut down.
    private static func observe(
        on target: Target, _ hub: NotificationHub, _ body: @escaping @Sendable (Numbered) async -> Void
    ) -> (ObservationToken, DeliveryThread?) {
        switch target {
        case .posting:
            return (hub.observe(Numbered.self, on: .posting) { note async in await body(note) }, nil)
        case .mainActor:
            return (hub.observe(Numbered.self, on: MainActor.shared) { note async in await body(note) }, nil)
        case .serialQueue:
            let queue = DispatchQueue(label: "context")
            return (hub.observe(Numbered.self, on: .queue(queue)) { note async in await body(note) }, nil)
        case .operationQueue:
            let queue = makeKeptOperationQueue()
            return (hub.observe(Numbered.self, on: .operationQueue(queue)) { note async in await body(note) }, nil)
        case .thread:
            let thread = DeliveryThread(name: "context")
            return (hub.observe(Numbered.self, on: .thread(thread)) { note async in await body(note) }, thread)
        case .executor:
            let executor = QueueExecutor(label: "context")
            return (hub.observe(Numbered.self, on: .executor(executor)) { note async in await body(note) }, nil)
        case .actor:
            return (hub.observe(Numbered.self, on: Store()) { _, note async in await body(note) }, nil)
        }
    }

    @Test(
        "A call started by a post and one started by a drain see neither poster's task-local values nor its priority",
        arguments: Target.allCases)
    func noInheritedContext(target: Target) async throws {
        let hub = NotificationHub()
        let seen = Log<CallContext>()
        let firstStarted = AsyncLatch()
        let release = AsyncLatch()
        let (token, thread) = Self.observe(on: target, hub) { note in
            seen.append(CallContext(index: note.index, traceID: Trace.id, priority: Task.currentPriority))
            if note.index == 0 {
                firstStarted.open()
                await release.wait()
            }
        }
        // The first call is started by its post, made with a trace ID on a high-priority task.
        await Task(priority: .high) {
            Trace.$id.withValue("poster 0") { hub.post(Numbered(poster: 0, index: 0)) }
        }.value
        await firstStarted.wait()
        // The second is queued behind the first; the first call's end starts it (a drain).
        hub.post(Numbered(poster: 0, index: 1))
        release.open()
        try await hub.waitUntilIdle(timeout: asyncPatience)

        #expect(seen.values.map(\.index) == [0, 1])
        #expect(seen.values.map(\.traceID) == [nil, nil], "a handler saw a poster's task-local value")
        for call in seen.values {
            #expect(call.priority < .high, "call \(call.index) ran at the poster's priority, \(call.priority)")
        }
        token.cancel()
        thread?.shutdown()
    }
}
