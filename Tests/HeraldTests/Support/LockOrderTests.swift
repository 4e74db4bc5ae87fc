import Testing

@testable import Herald

#if DEBUG
@Suite("Lock order (debug builds)")
struct LockOrderTests {
    @Test("Locks taken in rank order nest, and a released lock no longer counts as held")
    func inOrderNests() {
        let registry = Lock(1, rank: .registry)
        let mailbox = Lock(2, rank: .mailbox)
        let identities = Lock(3, rank: .subjectIdentities)
        let sum = registry.withLock { outer in
            mailbox.withLock { middle in identities.withLock { inner in outer + middle + inner } }
        }
        // The later rank first, released, then the earlier one: one after the other, not nested.
        let later = identities.withLock { $0 }
        let earlier = registry.withLock { $0 }
        #expect(sum == 6)
        #expect([later, earlier] == [3, 1])
    }

    @Test("Taking a lock of an earlier rank while holding a later one traps")
    func outOfOrderTraps() async {
        await #expect(processExitsWith: .failure) {
            let registry = Lock(0, rank: .registry)
            let mailbox = Lock(0, rank: .mailbox)
            mailbox.withLock { _ in registry.withLock { _ in } }
        }
    }

    @Test("Taking a second lock of the same rank while holding one traps")
    func sameRankTraps() async {
        await #expect(processExitsWith: .failure) {
            let first = Lock(0, rank: .mailbox)
            let second = Lock(0, rank: .mailbox)
            first.withLock { _ in second.withLock { _ in } }
        }
    }
}
#endif
