import Testing

@testable import Herald

@Suite("ObserverList")
struct ObserverListTests {
    let registry = Registry()

    func makeObservers(_ count: Int) -> [AnyObserver] {
        (0..<count).map { _ in
            AnyObserver(registry: registry, site: SourceLocation(fileID: #fileID, line: 1).siteIndex, flags: 0)
        }
    }

    @Test("Random appends and removals keep registration order, the count and each observer's slot, as an array would")
    func matchesAnArray() {
        let observers = makeObservers(400)
        var list = ObserverList()
        var model: [AnyObserver] = []
        var generator = SystemRandomNumberGenerator()
        var unused = observers
        for _ in 0..<20_000 {
            if !unused.isEmpty && (model.isEmpty || Bool.random(using: &generator)) {
                let observer = unused.remove(at: Int.random(in: 0..<unused.count, using: &generator))
                list.append(.passRetained(observer), sequence: 0)
                model.append(observer)
            } else {
                let index = Int.random(in: 0..<model.count, using: &generator)
                let observer = model.remove(at: index)
                #expect(list.remove(observer) === observer)
                #expect(observer.registrySlot == -1)
                unused.append(observer)
            }
            #expect(list.count == model.count)
        }
        #expect(list.observers.map(ObjectIdentifier.init) == model.map(ObjectIdentifier.init))
        // Every observer still in the list can be removed through its slot, in any order.
        for observer in model.reversed() {
            #expect(observer.registrySlot >= 0)
            #expect(list.remove(observer) === observer)
        }
        #expect(list.count == 0)
        #expect(list.observers.isEmpty)
    }

    @Test("Removing an observer that is not in the list, or removing one twice, changes nothing")
    func removeIsIdempotent() {
        let observers = makeObservers(3)
        let stranger = makeObservers(1)[0]
        var list = ObserverList()
        for observer in observers { list.append(.passRetained(observer), sequence: 0) }
        #expect(list.remove(stranger) == nil)
        #expect(list.remove(observers[1]) === observers[1])
        #expect(list.remove(observers[1]) == nil)
        #expect(list.count == 2)
        #expect(list.observers.map(ObjectIdentifier.init) == [observers[0], observers[2]].map(ObjectIdentifier.init))
    }

    @Test("An observer that another list holds is not removed from this one, even at the same slot")
    func slotOfAnotherList() {
        let observers = makeObservers(2)
        var first = ObserverList()
        var second = ObserverList()
        first.append(.passRetained(observers[0]), sequence: 0)
        second.append(.passRetained(observers[1]), sequence: 0)
        // Both are at slot 0 of their own list.
        #expect(first.remove(observers[1]) == nil)
        #expect(first.count == 1)
        #expect(second.remove(observers[1]) === observers[1])
    }

    @Test(
        "Registration numbers: 0 for the observers appended before the first numbered one, then as given, through compaction"
    )
    func sequences() {
        let observers = makeObservers(40)
        var list = ObserverList()
        for observer in observers[0..<10] { list.append(.passRetained(observer), sequence: 0) }
        #expect(list.entries.allSatisfy { $0.1 == 0 })
        for (offset, observer) in observers[10...].enumerated() {
            list.append(.passRetained(observer), sequence: UInt64(100 + offset))
        }
        // Remove most of the middle ones (not the last): once the holes outnumber the observers,
        // they are squeezed out.
        for observer in observers[1..<35] { _ = list.remove(observer) }
        let expected: [(AnyObserver, UInt64)] =
            [(observers[0], 0)] + observers[35...].enumerated().map { ($1, UInt64(125 + $0)) }
        #expect(list.entries.map { ObjectIdentifier($0.0) } == expected.map { ObjectIdentifier($0.0) })
        #expect(list.entries.map(\.1) == expected.map(\.1))
        // Each observer's slot still finds it after the compaction.
        for (observer, _) in expected { #expect(list.remove(observer) === observer) }
        #expect(list.count == 0)
    }
}
