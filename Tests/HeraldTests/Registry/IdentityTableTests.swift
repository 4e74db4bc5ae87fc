import Testing

@testable import Herald

@Suite("IdentityTable")
struct IdentityTableTests {
    /// Objects whose identities serve as keys; kept alive so that no two share an address.
    final class Key: Sendable {}

    @Test("An absent key reads the table's empty value and is not contained")
    func absentKey() {
        let key = Key()
        let table = IdentityTable(capacity: 4, empty: -1)
        #expect(table[ObjectIdentifier(key)] == -1)
        // Absent: inserting it, into a copy, makes a new slot.
        var probe = table
        #expect(probe.insert(ObjectIdentifier(key)).inserted)
    }

    @Test("Inserting twice returns the same slot, and only the first insertion says it inserted")
    func insertIsIdempotent() {
        let key = ObjectIdentifier(Key.self)
        var table = IdentityTable(capacity: 4, empty: 0)
        let first = table.insert(key)
        table[slot: first.slot] = 7
        let second = table.insert(key)
        #expect(first.inserted)
        #expect(!second.inserted)
        #expect(second.slot == first.slot)
        #expect(table[key] == 7)
    }

    @Test("Through every growth from 2 slots, each key keeps its value, as a Dictionary does")
    func matchesADictionaryThroughGrowth() {
        let keys = (0..<5_000).map { _ in Key() }
        var table = IdentityTable(capacity: 2, empty: 0)
        var model: [ObjectIdentifier: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20_000 {
            let key = ObjectIdentifier(keys[Int.random(in: 0..<keys.count, using: &generator)])
            let added = table.update(key) { value -> Int in
                value += round
                return value
            }
            model[key, default: 0] += round
            #expect(added == model[key])
        }
        var present: [ObjectIdentifier] = []
        for key in keys.map(ObjectIdentifier.init) {
            #expect(table[key] == model[key, default: 0])
            // Whether the key has a slot: inserting it into a copy makes none if it has.
            var probe = table
            let hasSlot = !probe.insert(key).inserted
            #expect(hasSlot == (model[key] != nil))
            if hasSlot { present.append(key) }
        }
        // Only `keys` were ever put in: the values of those with a slot are the table's values.
        #expect(present.map { table[$0] }.sorted() == model.values.sorted())
    }
}
