/// Where a handler was registered, kept as the literal `#fileID` and `#line`.
struct SourceLocation: Sendable, Equatable {
    let fileID: StaticString
    let line: UInt32

    var fileString: String { fileID.description }

    static func == (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        lhs.line == rhs.line && lhs.fileID.utf8Start == rhs.fileID.utf8Start
    }

    /// Every registration site seen so far, so that an observer stores a 4-byte index instead of
    /// a 24-byte location. The table grows with the number of distinct `observe` call sites in
    /// the program, not with the number of observers.
    private static let sites = Lock(SiteTable(), rank: .siteTable)

    /// The index of `self` in the table of registration sites.
    var siteIndex: UInt32 {
        Self.sites.withLock { $0.index(of: self) }
    }

    /// The registration site with index `index`.
    static func site(_ index: UInt32) -> SourceLocation {
        sites.withLock { $0.locations[Int(index)] }
    }
}

/// The registration sites, numbered in the order they were first seen, with an open-addressing
/// index over the literal's address and line: cheaper than a `Dictionary`, whose hashing was a
/// tenth of a registration's cost.
struct SiteTable: @unchecked Sendable {  // Lives behind a lock; `StaticString` literals are immortal.
    private(set) var locations: [SourceLocation] = []
    /// Index + 1 into `locations`, or 0 for an empty slot.
    private var slots = [UInt32](repeating: 0, count: 64)

    /// The slot that holds `location`, or the empty slot where it belongs: the first of the two
    /// on the probe sequence that starts at the hash of the literal's address and line.
    private func probe(_ location: SourceLocation) -> Int {
        let key = UInt(bitPattern: location.fileID.utf8Start) &+ UInt(location.line) &* 0x1_0000_0001
        let shift = UInt(UInt.bitWidth - slots.count.trailingZeroBitCount)
        var slot = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
        while slots[slot] != 0 && locations[Int(slots[slot] - 1)] != location {
            slot = (slot + 1) & (slots.count - 1)
        }
        return slot
    }

    /// The index of `location`, numbered now if it is new.
    mutating func index(of location: SourceLocation) -> UInt32 {
        let slot = probe(location)
        if slots[slot] != 0 { return slots[slot] - 1 }
        let index = UInt32(locations.count)
        locations.append(location)
        slots[slot] = index + 1
        if locations.count * 2 > slots.count { rehash() }
        return index
    }

    /// Doubles the slots and places every location again.
    private mutating func rehash() {
        slots = [UInt32](repeating: 0, count: slots.count * 2)
        for (index, location) in locations.enumerated() {
            slots[probe(location)] = UInt32(index) + 1
        }
    }
}
