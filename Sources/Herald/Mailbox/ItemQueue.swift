/// The items of a ``Mailbox``: notifications of one type, each with its subject and wait group,
/// stored in one raw buffer, first in, first out.
///
/// The buffer is not generic, so the code that appends and drains it asks the runtime for no
/// generic metadata when it runs unspecialised (as library code called from an app does). The
/// caller supplies the notification type's ``Layout``, which moves payloads with the type's own
/// value witnesses.
///
/// Each item is a 16-byte header followed by the payload (see ``Layout``, the only code that
/// reads or writes an item's parts):
/// `[subject identity or 0][retained WaitGroup or 0][payload, aligned]`.
///
/// Items live in fixed-size blocks of at most 1 KiB, so an append never copies the items already
/// queued: a mailbox that a flood fills with millions of items grows by one block at a time, and
/// the mailbox's lock, which a drain on the main queue needs for its next batch, is never held for
/// a copy of the whole mailbox. The live items are positions `head..<end`, counted from the start
/// of the first block; blocks the drains have emptied are freed as the head leaves them.
struct ItemQueue: @unchecked Sendable {  // Owned by one mailbox, under its lock, or by one drain.
    /// Moves `count` items from the first address to the second (raw memory, not overlapping).
    typealias Move = (UnsafeMutableRawPointer, UnsafeMutableRawPointer, Int) -> Void

    private var blocks: ContiguousArray<UnsafeMutableRawPointer> = []
    /// Blocks before this index have been freed (they are compacted away now and then).
    private var firstBlock = 0
    private(set) var head = 0
    private(set) var end = 0

    /// The number of items.
    var count: Int { end - head }
    var isEmpty: Bool { end == head }
    /// The number of blocks allocated.
    var blockCount: Int { blocks.count - firstBlock }

    /// The layout of one item for a payload type, and every access to an item's parts.
    ///
    /// An item is `[subject][group][payload]`:
    /// - at ``subjectOffset``, the bits of the post's subject's `ObjectIdentifier`, or 0 for none;
    /// - at ``groupOffset``, the address of the post's ``WaitGroup``, retained by the item, or 0;
    /// - at ``payloadOffset``, the notification, initialised, aligned for its type.
    ///
    /// Whoever takes an item out of the queue owns it: it must take the header
    /// (``takeHeader(_:)``, which passes the group's reference on) and move or destroy the payload
    /// exactly once.
    struct Layout: Sendable {
        /// Where the subject's identity bits lie.
        static let subjectOffset = 0
        /// Where the retained wait group's address lies.
        static let groupOffset = MemoryLayout<UInt>.size
        /// The bytes before the payload's aligned start.
        static let headerSize = 2 * MemoryLayout<UInt>.size

        let payloadOffset: Int
        let stride: Int
        let alignment: Int
        /// log2 of the items in one block.
        let blockShift: Int

        init<N>(of type: N.Type) {
            let alignment = max(MemoryLayout<N>.alignment, MemoryLayout<UInt>.alignment)
            payloadOffset = (Self.headerSize + alignment - 1) & ~(alignment - 1)
            stride = (payloadOffset + MemoryLayout<N>.size + alignment - 1) & ~(alignment - 1)
            self.alignment = alignment
            // The largest power of two of items that fits in 1 KiB, between 1 and 64: small enough
            // for the allocator's per-thread caches, so that a mailbox that holds one item at a time
            // (a round trip) allocates and frees its block cheaply.
            let fitting = max(1, 1024 / stride)
            blockShift = min(6, Int.bitWidth - 1 - fitting.leadingZeroBitCount)
        }

        var blockItems: Int { 1 << blockShift }
        var blockBytes: Int { stride << blockShift }

        // MARK: Items

        /// The bits an item stores for `subjectID`.
        @inline(__always)
        static func bits(of subjectID: ObjectIdentifier?) -> UInt {
            subjectID.map { UInt(bitPattern: $0) } ?? 0
        }

        /// Initialises the item at `item` with a copy of `notification`; the item retains `group`.
        @inline(__always)
        func initialize<N>(
            _ item: UnsafeMutableRawPointer, with notification: UnsafePointer<N>, subjectID: ObjectIdentifier?,
            group: WaitGroup?
        ) {
            item.storeBytes(of: Self.bits(of: subjectID), toByteOffset: Self.subjectOffset, as: UInt.self)
            let groupBits = group.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
            item.storeBytes(of: groupBits, toByteOffset: Self.groupOffset, as: UInt.self)
            payload(item, as: N.self).initialize(to: notification.pointee)
        }

        /// The payload of the item at `item`.
        @inline(__always)
        func payload<N>(_ item: UnsafeMutableRawPointer, as type: N.Type) -> UnsafeMutablePointer<N> {
            (item + payloadOffset).assumingMemoryBound(to: N.self)
        }

        /// The subject identity bits of the item at `item` (0 for none).
        @inline(__always)
        func subjectBits(_ item: UnsafeRawPointer) -> UInt {
            item.load(fromByteOffset: Self.subjectOffset, as: UInt.self)
        }

        /// The subject identity and wait group of the item at `item`; the group's reference passes
        /// to the caller, and the item must not be read for it again.
        @inline(__always)
        func takeHeader(_ item: UnsafeMutableRawPointer) -> (ObjectIdentifier?, WaitGroup?) {
            let subjectBits = subjectBits(item)
            let subjectID = subjectBits == 0 ? nil : unsafeBitCast(subjectBits, to: ObjectIdentifier.self)
            return (subjectID, loadGroup(item))
        }

        /// Takes the wait group out of the item at `item`, leaving none there: its reference
        /// passes to the caller, and the item, destroyed later, releases no group.
        @inline(__always)
        func takeGroup(_ item: UnsafeMutableRawPointer) -> WaitGroup? {
            defer { item.storeBytes(of: 0, toByteOffset: Self.groupOffset, as: UInt.self) }
            return loadGroup(item)
        }

        /// The wait group of the item at `item`, with the reference the item held.
        @inline(__always)
        private func loadGroup(_ item: UnsafeMutableRawPointer) -> WaitGroup? {
            let groupBits = item.load(fromByteOffset: Self.groupOffset, as: UInt.self)
            return UnsafeRawPointer(bitPattern: groupBits).map {
                Unmanaged<WaitGroup>.fromOpaque($0).takeRetainedValue()
            }
        }

        /// Destroys the item at `item` without running it: its payload is deinitialised, and its
        /// waiting post, if any, told `outcome`. Call outside every lock: a payload's `deinit` is
        /// user code.
        @inline(__always)
        func destroy<N>(_ item: UnsafeMutableRawPointer, as type: N.Type, leaving outcome: DeliveryOutcome) {
            payload(item, as: N.self).deinitialize(count: 1)
            loadGroup(item)?.leave(outcome)
        }

        /// Moves `count` items of payload type `N` between two buffers that do not overlap.
        @inline(__always)
        func move<N>(
            _ type: N.Type, from source: UnsafeMutableRawPointer, to destination: UnsafeMutableRawPointer, count: Int
        ) {
            if _isBitwiseTakable(N.self) {
                destination.copyMemory(from: source, byteCount: count * stride)
                return
            }
            for index in 0..<count {
                let from = source + index * stride
                let to = destination + index * stride
                to.copyMemory(from: from, byteCount: Self.headerSize)
                payload(to, as: N.self).moveInitialize(from: payload(from, as: N.self), count: 1)
            }
        }
    }

    /// The address of the item at `index`, counted from the front.
    @inline(__always)
    func item(_ index: Int, _ layout: Layout) -> UnsafeMutableRawPointer {
        address(head + index, layout)
    }

    @inline(__always)
    private func address(_ position: Int, _ layout: Layout) -> UnsafeMutableRawPointer {
        blocks[position >> layout.blockShift] + (position & (layout.blockItems - 1)) * layout.stride
    }

    /// Makes room for one more item at the back and returns its address; the caller initialises it.
    @inline(__always)
    mutating func appendSlot(_ layout: Layout) -> UnsafeMutableRawPointer {
        if end == blocks.count << layout.blockShift { addBlock(layout) }
        end += 1
        return address(end - 1, layout)
    }

    private mutating func addBlock(_ layout: Layout) {
        if firstBlock > 0 && firstBlock * 2 >= blocks.count {
            // Drop the freed blocks' slots, so the table does not grow with the mailbox's history.
            blocks.removeFirst(firstBlock)
            head -= firstBlock << layout.blockShift
            end -= firstBlock << layout.blockShift
            firstBlock = 0
        }
        blocks.append(.allocate(byteCount: layout.blockBytes, alignment: layout.alignment))
    }

    /// Frees the blocks the head has left.
    private mutating func freeConsumedBlocks(_ layout: Layout) {
        while firstBlock < blocks.count && (firstBlock + 1) << layout.blockShift <= head {
            blocks[firstBlock].deallocate()
            firstBlock += 1
        }
        if isEmpty {
            // Start over in the block that is left, if any.
            removeAllMoved()
        }
    }

    /// Moves the first `n` items into `batch`, which must be empty.
    ///
    /// When `n` is every item, the two queues are swapped, so a drain that takes everything moves
    /// no item at all.
    mutating func moveFront(_ n: Int, into batch: inout ItemQueue, _ layout: Layout, move: Move) {
        precondition(batch.isEmpty && n <= count, "Herald: bad mailbox batch")
        guard n > 0 else { return }
        if n == count {
            swap(&self, &batch)
            removeAllMoved()
            return
        }
        var moved = 0
        while moved < n {
            // The longest run that is contiguous in both queues.
            let sourceRun = layout.blockItems - (head & (layout.blockItems - 1))
            if batch.end == batch.blocks.count << layout.blockShift { batch.addBlock(layout) }
            let destinationRun = layout.blockItems - (batch.end & (layout.blockItems - 1))
            let run = min(n - moved, sourceRun, destinationRun)
            move(address(head, layout), batch.address(batch.end, layout), run)
            head += run
            batch.end += run
            moved += run
        }
        freeConsumedBlocks(layout)
    }

    /// Forgets the item at `index`, whose contents the caller has moved out or destroyed, and
    /// moves the items behind it up by one.
    ///
    /// - Complexity: O(1) for the front item; O(*n*) in the items behind `index` otherwise.
    mutating func removeMoved(at index: Int, _ layout: Layout, move: Move) {
        precondition(index >= 0 && index < count, "Herald: bad mailbox index")
        if index == 0 {
            head += 1
            freeConsumedBlocks(layout)
            return
        }
        var position = head + index
        while position + 1 < end {
            move(address(position + 1, layout), address(position, layout), 1)
            position += 1
        }
        end -= 1
    }

    /// Forgets the items without touching them: their new owner has moved or destroyed them.
    /// Keeps one block for the next items, and frees the others.
    mutating func removeAllMoved() {
        head = 0
        end = 0
        guard blocks.count - firstBlock > 1 || firstBlock > 0 else { return }
        let kept = firstBlock < blocks.count ? blocks.popLast() : nil
        deallocate()
        if let kept { blocks.append(kept) }
    }

    /// Frees the blocks; every item must have been moved out or destroyed.
    mutating func deallocate() {
        for index in firstBlock..<blocks.count {
            blocks[index].deallocate()
        }
        self = ItemQueue()
    }
}
