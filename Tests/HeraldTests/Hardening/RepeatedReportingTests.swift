import Dispatch
import Foundation
import Herald
import Testing

/// A hub lives as long as the app: its error handler, its unobserved-post handler and a closure
/// observation must cost the same on the millionth call as on the first.
///
/// Each test measures how deep the stack is between the code that reports and the handler that
/// receives the report, once at the start and once after thousands of reports. If anything wraps
/// the stored closure again on each use, the depth (and the memory behind it) grows with every
/// report until the thread's stack overflows.
@Suite("Repeated reports", .enabled(if: stackDepthIsMeasurable, "stack addresses are fake-stack addresses under ASan"))
struct RepeatedReportingTests {
    static let reports = 5_000
    /// Far less than `reports` re-wrappings would add (at least 16 bytes each).
    static let allowedGrowth = 4_096

    /// The bytes of stack between an outer frame and an inner one on the same thread.
    static func distance(from outer: UInt, to inner: UInt) -> Int {
        Int(bitPattern: outer &- inner)
    }

    @Test("The error handler is reached at the same stack depth after 5,000 errors as after the first")
    func errorHandlerDepthIsFlat() {
        let hub = NotificationHub()
        let depths = Log<Int>()
        let posterDepth = Locked<UInt>(0)
        hub.errorHandler = { _ in
            depths.append(Self.distance(from: posterDepth.withLock { $0 }, to: stackAddress()))
        }
        let token = hub.observe(Ping.self) { note in throw Boom(code: note.value) }
        for value in 0..<Self.reports {
            posterDepth.withLock { $0 = stackAddress() }
            hub.post(Ping(value: value))
        }
        let values = depths.values
        #expect(values.count == Self.reports)
        if let first = values.first, let last = values.last {
            #expect(last <= first + Self.allowedGrowth, "first report \(first) bytes deep, last \(last)")
        }
        withExtendedLifetime(token) {}
    }

    @Test("The unobserved-post handler is reached at the same stack depth after 5,000 posts as after the first")
    func unobservedHandlerDepthIsFlat() {
        let hub = NotificationHub()
        let depths = Log<Int>()
        let posterDepth = Locked<UInt>(0)
        hub.unobservedPostHandler = { _ in
            depths.append(Self.distance(from: posterDepth.withLock { $0 }, to: stackAddress()))
        }
        for value in 0..<Self.reports {
            posterDepth.withLock { $0 = stackAddress() }
            hub.post(Ping(value: value))
        }
        let values = depths.values
        #expect(values.count == Self.reports)
        #expect(hub.unobservedPostCount == Self.reports)
        if let first = values.first, let last = values.last {
            #expect(last <= first + Self.allowedGrowth, "first report \(first) bytes deep, last \(last)")
        }
    }

    @Test("A closure observation polled 5,000 times cancels at the same stack depth as a fresh one")
    func closureObservationDepthIsFlat() {
        func cancelDepth(polls: Int) -> Int {
            let depth = Locked<Int>(0)
            let outer = Locked<UInt>(0)
            let observation = ObservationToken {
                depth.withLock { $0 = Self.distance(from: outer.withLock { $0 }, to: stackAddress()) }
            }
            for _ in 0..<polls {
                #expect(!observation.isCancelled)
            }
            outer.withLock { $0 = stackAddress() }
            observation.cancel()
            #expect(observation.isCancelled)
            return depth.withLock { $0 }
        }
        let fresh = cancelDepth(polls: 0)
        let polled = cancelDepth(polls: Self.reports)
        #expect(polled <= fresh + Self.allowedGrowth, "fresh \(fresh) bytes deep, after polling \(polled)")
    }
}
