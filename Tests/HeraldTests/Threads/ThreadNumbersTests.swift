import Foundation
import Synchronization
import Testing

@testable import Herald

@Suite("ThreadNumbers")
struct ThreadNumbersTests {
    @Test("Threads alive at the same time get different numbers, in turn, each its own for as long as it runs")
    func threadsAliveTogetherGetDifferentNumbers() async {
        // A fresh set of numbers, so that threads of other tests take none of them. Posts take
        // their shard from the shared one the same way: the number modulo the shard count.
        let numbers = ThreadNumbers()
        let count = 8
        let readings = Log<ThreadReading>()
        let firstReads = Atomic<Int>(0)
        let allRead = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finished = Atomic<Int>(0)
            for _ in 0..<count {
                Thread {
                    let first = numbers.current
                    // Every thread reads its number before any of them ends: none can reuse the
                    // stack (and so the identity) of one that already ended.
                    if firstReads.add(1, ordering: .acquiringAndReleasing).newValue == count {
                        for _ in 0..<count { allRead.signal() }
                    }
                    allRead.wait()
                    let second = numbers.current
                    readings.append(ThreadReading(first: first, second: second))
                    if finished.add(1, ordering: .acquiringAndReleasing).newValue == count { done.resume() }
                }.start()
            }
        }
        let all = readings.values
        #expect(all.count == count)
        #expect(all.allSatisfy { $0.first == $0.second })
        #expect(Set(all.map(\.first)) == Set(0..<UInt(count)))
    }
}

/// The number one thread read, first and again once every thread had read its own.
private struct ThreadReading: Sendable {
    let first: UInt
    let second: UInt
}
