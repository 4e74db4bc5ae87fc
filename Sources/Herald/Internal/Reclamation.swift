internal import CHerald

/// Frees what lock-free readers may still be reading, once none of them can be.
///
/// Posts read the observer lists of a type without a lock and without any atomic
/// read-modify-write: each post announces a *read section* in its thread's own record with plain
/// stores (see `CHerald.h`). A registration or cancellation that replaces a list hands the old one
/// here. ``retire(_:scope:)`` makes every thread of the process pass a memory barrier (Linux
/// `membarrier`; a full fence elsewhere), then reads the records: the old list is freed at once
/// when no thread is in a section over the same bucket, and otherwise as soon as the last such
/// section ends (that thread frees it).
///
/// Sections nest (a handler that posts), to any depth: each open section holds back what is retired
/// from its own bucket only, and only until that section ends, even while the sections around it
/// go on.
enum Reclamation {
    /// What waits for read sections to end.
    private struct Pending: @unchecked Sendable {  // The records are never freed; see CHerald.h.
        /// What is freed once the sections end.
        let garbage: [ObserverList]
        /// The sections that may read it: each one's record, depth and number.
        let sections: [Section]
    }

    /// An open read section, as a writer saw it.
    private typealias Section = (reader: UnsafeMutablePointer<herald_reader>, depth: UInt, id: UInt64)

    private static let pending = Lock<[Pending]>([])

    /// Frees `garbage` (no longer published) once no read section that may have seen it is left.
    ///
    /// Call without holding any lock: freeing can run any `deinit`.
    ///
    /// - Parameter scope: The address readers of `garbage` announce (its bucket), or `nil` to wait
    ///   for every section.
    static func retire(_ garbage: [ObserverList], scope: UnsafeRawPointer?) {
        guard !garbage.isEmpty else { return }
        // No record yet means no thread has ever read, and none can see `garbage`: a thread that
        // registers later does so with a sequentially consistent compare-and-swap that the
        // sequentially consistent load here did not see, and then loads the lists sequentially
        // consistently too (`AnyBucket.withLists`), so it finds them already replaced.
        guard heraldReadersFirst() != nil else { return }
        let sections = openSections(reading: scope)
        guard !sections.isEmpty else {
            // `garbage` is released here. Also free what waited for threads that have exited
            // since (a thread that exits mid-section closes its sections but cannot poll).
            poll()
            return
        }
        pending.withLock { $0.append(Pending(garbage: garbage, sections: sections)) }
        for section in sections {
            heraldReaderWant(section.reader, section.depth)
        }
        // A section that ends after this barrier sees its record wanted, and polls.
        heraldReadersBarrier()
        poll()
    }

    /// Whether a thread is in a read section that may read `scope` right now. For tests.
    static func isRead(_ scope: UnsafeRawPointer) -> Bool {
        !openSections(reading: scope).isEmpty
    }

    /// After a barrier, the read sections that may read `scope` (`nil`: any), each with its record.
    private static func openSections(reading scope: UnsafeRawPointer?) -> [Section] {
        heraldReadersBarrier()
        var sections: [Section] = []
        var next = heraldReadersFirst()
        while let reader = next {
            var depth: UInt = 0
            var id: UInt64 = 0
            if heraldReaderHolds(reader, scope, &depth, &id) {
                sections.append((reader, depth, id))
            }
            next = heraldReaderNext(reader)
        }
        return sections
    }

    /// Frees everything whose read sections have all ended.
    static func poll() {
        let freed = pending.withLock { pending -> [Pending] in
            var freed: [Pending] = []
            pending.removeAll { item in
                let done = item.sections.allSatisfy { heraldReaderSectionEnded($0.reader, $0.depth, $0.id) }
                if done { freed.append(item) }
                return done
            }
            return freed
        }
        withExtendedLifetime(freed) {}  // released here, outside the lock
    }

    /// Runs `body` in a read section over `scope`.
    @inline(__always)
    static func reading<R>(_ scope: UnsafeRawPointer, _ body: () -> R) -> R {
        let reader = heraldReadBegin(scope)
        let result = body()
        if heraldReadEnd(reader) { poll() }
        return result
    }
}
