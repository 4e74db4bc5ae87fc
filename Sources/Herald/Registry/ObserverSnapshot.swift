/// The observers of one notification type at one moment, in registration order: first those
/// with a mailbox or a stream, then the posting-thread observers.
///
/// Immutable. A registration or cancellation publishes a new snapshot instead of changing one,
/// and a post retains the snapshot it found for as long as it scans it, so observers added
/// meanwhile do not receive that post, and nothing the post calls is freed under it. The snapshot
/// owns one reference to each observer, so a scan touches no reference count but the snapshot's.
final class ObserverSnapshot: @unchecked Sendable {  // Immutable once made.
    private let elements: UnsafeMutablePointer<Unmanaged<AnyObserver>>
    /// The observers with a mailbox or a stream; they come first.
    private let queuedCount: Int
    /// All observers.
    let count: Int
    /// Each post shard has a snapshot of its own (see ``Bucket/snapshotForShard()``), whose
    /// reference count a post writes twice: the padding keeps those counts on cache lines of their
    /// own.
    private let padding = CacheLinePadding()

    /// A snapshot of `queued` observers followed by `posting` ones.
    init(queued: some Collection<AnyObserver>, posting: some Collection<AnyObserver>) {
        queuedCount = queued.count
        count = queued.count + posting.count
        elements = .allocate(capacity: count)
        for (index, observer) in queued.enumerated() {
            (elements + index).initialize(to: .passRetained(observer))
        }
        for (index, observer) in posting.enumerated() {
            (elements + queuedCount + index).initialize(to: .passRetained(observer))
        }
    }

    /// The observers with a mailbox or a stream. The buffer is the snapshot's: read it only while
    /// the snapshot is alive, as its own methods (a post's scan) or ``withObservers(_:)`` do.
    @inline(__always)
    var queued: UnsafeBufferPointer<Unmanaged<AnyObserver>> {
        UnsafeBufferPointer(start: elements, count: queuedCount)
    }

    /// The posting-thread observers; read it only while the snapshot is alive (see ``queued``).
    @inline(__always)
    var posting: UnsafeBufferPointer<Unmanaged<AnyObserver>> {
        UnsafeBufferPointer(start: elements + queuedCount, count: count - queuedCount)
    }

    /// Runs `body` with the observers with a mailbox or stream, then the posting-thread ones, while
    /// the snapshot is alive.
    @inline(__always)
    func withObservers<R>(
        _ body: (UnsafeBufferPointer<Unmanaged<AnyObserver>>, UnsafeBufferPointer<Unmanaged<AnyObserver>>) throws -> R
    ) rethrows -> R {
        try withExtendedLifetime(self) { try body(queued, posting) }
    }

    deinit {
        for index in 0..<count {
            elements[index].release()
        }
        elements.deallocate()
    }
}
