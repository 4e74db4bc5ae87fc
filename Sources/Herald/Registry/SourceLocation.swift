/// Where a handler was registered, kept as the literal `#fileID` and `#line`.
struct SourceLocation: Sendable, Hashable {
    let fileID: StaticString
    let line: UInt32

    var fileString: String { fileID.description }

    static func == (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        lhs.line == rhs.line && lhs.fileID.utf8Start == rhs.fileID.utf8Start
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(line)
        hasher.combine(UInt(bitPattern: fileID.utf8Start))
    }

    /// Every registration site seen so far, so that an observer stores a 4-byte index instead of
    /// a 24-byte location. The table grows with the number of distinct `observe` call sites in
    /// the program, not with the number of observers.
    private static let sites = Lock<(indices: [SourceLocation: UInt32], locations: [SourceLocation])>(([:], []))

    /// The index of `self` in the table of registration sites.
    var siteIndex: UInt32 {
        Self.sites.withLock { sites in
            if let index = sites.indices[self] { return index }
            let index = UInt32(sites.locations.count)
            sites.locations.append(self)
            sites.indices[self] = index
            return index
        }
    }

    /// The registration site with index `index`.
    static func site(_ index: UInt32) -> SourceLocation {
        sites.withLock { $0.locations[Int(index)] }
    }
}
