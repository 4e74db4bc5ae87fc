/// The items of a lane: notifications of one type, each with its subject and wait group, stored
/// in one raw buffer.
///
/// The buffer is not generic, so the code that appends and drains it asks the runtime for no
/// generic metadata when it runs unspecialised (as library code called from an app does). The
/// caller supplies the notification type's layout and copies payloads with the type's own value
/// witnesses (see ``Observer``).
///
/// Each item is a 16-byte header followed by the payload:
/// `[subject identity or 0][retained WaitGroup or 0][payload, aligned]`.
struct ItemQueue: @unchecked Sendable {  // Owned by one lane state, under its lock, or by a drain.
    private(set) var storage: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The layout of one item for a payload type.
    struct Layout {
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

    /// The address of item `index`.
    @inline(__always)
    func item(_ index: Int, _ layout: Layout) -> UnsafeMutableRawPointer {
        storage.unsafelyUnwrapped + index * layout.stride
    }

    /// Makes room for one more item and returns its address; the caller initialises it.
    ///
    /// - Parameter move: Moves `count` payloads from the first address to the second (the old and
    ///   new buffers), when the buffer grows.
    @inline(__always)
    mutating func appendSlot(
        _ layout: Layout,
        move: (UnsafeMutableRawPointer, UnsafeMutableRawPointer, Int) -> Void
    ) -> UnsafeMutableRawPointer {
        if count == capacity { grow(layout, move: move) }
        count += 1
        return item(count - 1, layout)
    }

    private mutating func grow(_ layout: Layout, move: (UnsafeMutableRawPointer, UnsafeMutableRawPointer, Int) -> Void)
    {
        let newCapacity = max(16, capacity * 2)
        let newStorage = UnsafeMutableRawPointer.allocate(
            byteCount: newCapacity * layout.stride, alignment: layout.alignment)
        if let storage {
            move(storage, newStorage, count)
            storage.deallocate()
        }
        storage = newStorage
        capacity = newCapacity
    }

    /// Forgets the items without touching them: their new owner has moved or destroyed them.
    mutating func removeAllMoved(keepingCapacity: Bool) {
        count = 0
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

/// The state of a lane, under its lock.
struct LaneState: Sendable {
    var items = ItemQueue()
    /// A drain job has been handed to the target and has not finished.
    var isScheduled = false
    /// The thread draining right now, or 0.
    var drainer: UInt = 0
    /// The observation ended: no more items are accepted.
    var isClosed = false
}
