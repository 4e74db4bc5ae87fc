/// The items of a lane: notifications of one type, each with its subject and wait group, stored
/// in one raw buffer, first in, first out.
///
/// The buffer is not generic, so the code that appends and drains it asks the runtime for no
/// generic metadata when it runs unspecialised (as library code called from an app does). The
/// caller supplies the notification type's layout and moves payloads with the type's own value
/// witnesses (see ``Lane``).
///
/// Each item is a 16-byte header followed by the payload:
/// `[subject identity or 0][retained WaitGroup or 0][payload, aligned]`. The live items are
/// `head..<count`; taking items from the front advances `head`, and the buffer is compacted when
/// it grows.
struct ItemQueue: @unchecked Sendable {  // Owned by one lane, under its lock, or by one drain.
    /// Moves `count` items from the first address to the second (raw memory, not overlapping).
    typealias Move = (UnsafeMutableRawPointer, UnsafeMutableRawPointer, Int) -> Void

    private(set) var storage: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    private(set) var head = 0
    private(set) var end = 0

    /// The number of items.
    var count: Int { end - head }
    var isEmpty: Bool { end == head }

    /// The layout of one item for a payload type.
    struct Layout: Sendable {
        let payloadOffset: Int
        let stride: Int
        let alignment: Int

        init<N>(of type: N.Type) {
            let alignment = max(MemoryLayout<N>.alignment, MemoryLayout<UInt>.alignment)
            payloadOffset = (16 + alignment - 1) & ~(alignment - 1)
            stride = (payloadOffset + MemoryLayout<N>.size + alignment - 1) & ~(alignment - 1)
            self.alignment = alignment
        }
    }

    /// The address of the item at `index`, counted from the front.
    @inline(__always)
    func item(_ index: Int, _ layout: Layout) -> UnsafeMutableRawPointer {
        storage.unsafelyUnwrapped + (head + index) * layout.stride
    }

    /// Makes room for one more item at the back and returns its address; the caller initialises it.
    @inline(__always)
    mutating func appendSlot(_ layout: Layout, move: Move) -> UnsafeMutableRawPointer {
        if end == capacity { grow(layout, move: move) }
        end += 1
        return storage.unsafelyUnwrapped + (end - 1) * layout.stride
    }

    private mutating func grow(_ layout: Layout, move: Move) {
        let live = count
        // Compact in place into a new buffer; double only when more than half is live.
        let newCapacity = max(16, live * 2 > capacity ? capacity * 2 : capacity)
        let newStorage = UnsafeMutableRawPointer.allocate(
            byteCount: newCapacity * layout.stride, alignment: layout.alignment)
        if let storage {
            if live > 0 { move(storage + head * layout.stride, newStorage, live) }
            storage.deallocate()
        }
        storage = newStorage
        capacity = newCapacity
        head = 0
        end = live
    }

    /// Moves the first `n` items into `batch`, which must be empty.
    ///
    /// When `n` is every item, the two buffers are swapped, so a drain that keeps its batch buffer
    /// alternates between two buffers instead of allocating.
    mutating func moveFront(_ n: Int, into batch: inout ItemQueue, _ layout: Layout, move: Move) {
        precondition(batch.isEmpty && n <= count, "Herald: bad lane batch")
        guard n > 0 else { return }
        if n == count {
            swap(&self, &batch)
            head = 0
            end = 0
            return
        }
        if batch.capacity < n {
            batch.deallocate()
            batch.storage = .allocate(byteCount: max(16, n) * layout.stride, alignment: layout.alignment)
            batch.capacity = max(16, n)
        }
        move(item(0, layout), batch.storage.unsafelyUnwrapped, n)
        batch.head = 0
        batch.end = n
        head += n
    }

    /// Forgets the items without touching them: their new owner has moved or destroyed them.
    mutating func removeAllMoved(keepingCapacity: Bool) {
        head = 0
        end = 0
        if !keepingCapacity, let storage {
            storage.deallocate()
            self.storage = nil
            capacity = 0
        }
    }

    /// Frees the buffer; every item must have been moved out or destroyed.
    mutating func deallocate() {
        storage?.deallocate()
        self = ItemQueue()
    }
}
