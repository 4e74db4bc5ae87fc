/// A first-in, first-out buffer with amortised O(1) append and removal.
struct FIFOBuffer<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }

    var isEmpty: Bool { head == storage.count }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 1024)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
