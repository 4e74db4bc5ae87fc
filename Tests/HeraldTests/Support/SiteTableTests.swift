import Testing

@testable import Herald

@Suite("SiteTable")
struct SiteTableTests {
    @Test("Sites are numbered in the order first seen, and a site seen again keeps its number, through growth")
    func numbersInFirstSeenOrder() {
        var table = SiteTable()
        let sites = (1...500).map { SourceLocation(fileID: #fileID, line: UInt32($0)) }
        for (expected, site) in sites.enumerated() {
            #expect(table.index(of: site) == UInt32(expected))
        }
        for (expected, site) in sites.enumerated().reversed() {
            #expect(table.index(of: site) == UInt32(expected))
        }
        #expect(table.locations == sites)
    }

    @Test("Two files with the same line are two sites")
    func fileAndLineBothCount() {
        let fileA: StaticString = "Module/A.swift"
        let fileB: StaticString = "Module/B.swift"
        var table = SiteTable()
        let first = table.index(of: SourceLocation(fileID: fileA, line: 10))
        let second = table.index(of: SourceLocation(fileID: fileB, line: 10))
        #expect(first != second)
        #expect(table.index(of: SourceLocation(fileID: fileA, line: 10)) == first)
    }

    @Test("Threads that register the same sites at once all get the same number for each, which names it")
    func concurrentRegistrationsAgree() async {
        let lines = (100_001...100_400).map(UInt32.init)
        let results = Log<[UInt32: UInt32]>()
        await onThreads(4) { thread in
            var seen: [UInt32: UInt32] = [:]
            let order = thread.isMultiple(of: 2) ? lines : lines.reversed()
            for line in order {
                seen[line] = SourceLocation(fileID: #fileID, line: line).siteIndex
            }
            results.append(seen)
        }
        let maps = results.values
        #expect(maps.count == 4)
        for line in lines {
            let numbers = Set(maps.compactMap { $0[line] })
            #expect(numbers.count == 1, "line \(line) got numbers \(numbers)")
            if let number = numbers.first {
                #expect(SourceLocation.site(number) == SourceLocation(fileID: #fileID, line: line))
            }
        }
    }
}
