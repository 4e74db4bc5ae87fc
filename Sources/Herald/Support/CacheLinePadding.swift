/// Room that keeps fields that different threads write without a shared lock on separate cache
/// lines (of 64 bytes, fetched in pairs by some processors): between two such fields of one
/// object, or at the end of an object whose neighbour in memory another thread writes.
struct CacheLinePadding: Sendable {
    private let words:
        (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
            )
}
