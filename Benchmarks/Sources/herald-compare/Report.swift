import Foundation

/// One contender's figure in a scenario.
struct Row {
    var contender: String
    /// The figure: nanoseconds (or bytes) per unit of the section's metric; `nil` when not measured.
    var value: Double?
    /// Why the contender has no figure ("n/a on this toolchain").
    var unavailable: String?
    /// Extra facts: heap allocations per post, inversions found, lost deliveries.
    var notes: [String] = []
    var isHerald = false
}

/// One scenario: a metric and its contenders, Herald among them.
struct Section {
    var title: String
    /// What `Row.value` counts, such as "ns/post".
    var metric: String
    var rows: [Row]

    var herald: Row? { rows.first(where: \.isHerald) }

    /// The contender's figure divided by Herald's.
    func ratio(_ row: Row) -> Double? {
        guard let value = row.value, let heraldValue = herald?.value, heraldValue > 0 else { return nil }
        return value / heraldValue
    }
}

/// A design target and whether this run met it.
struct TargetCheck {
    var target: String
    var measured: String
    /// `nil` when the target cannot be measured where this runs: it prints "n/a", never PASS.
    var passed: Bool?
    /// Printed under a MISS: what limits the figure, from the profile.
    var limit: String? = nil

    var verdict: String {
        switch passed {
        case true?: "PASS"
        case false?: "MISS"
        case nil: "n/a "
        }
    }

    var missed: Bool { passed == false }
}

// MARK: - Formatting

func formatNumber(_ value: Double) -> String {
    if value.isNaN { return "-" }
    let magnitude = abs(value)
    if magnitude >= 100_000 { return String(format: "%.0f", value).groupedThousands }
    if magnitude >= 100 { return String(format: "%.0f", value) }
    if magnitude >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
}

func formatRatio(_ ratio: Double) -> String {
    if ratio >= 100 { return String(format: "%.0f×", ratio) }
    if ratio >= 10 { return String(format: "%.1f×", ratio) }
    if ratio >= 0.1 { return String(format: "%.2f×", ratio) }
    return String(format: "%.2g×", ratio)  // 0.0038×, not 0.00×
}

extension String {
    /// "1234567" as "1,234,567".
    var groupedThousands: String {
        let negative = hasPrefix("-")
        let digits = negative ? String(dropFirst()) : self
        var result = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return (negative ? "-" : "") + String(result.reversed())
    }

    func padded(to width: Int, right: Bool = false) -> String {
        let count = self.count
        guard count < width else { return self }
        let padding = String(repeating: " ", count: width - count)
        return right ? padding + self : self + padding
    }
}

// MARK: - Tables

/// The table as plain text, one block per scenario.
func plainTable(_ sections: [Section]) -> String {
    var lines: [String] = []
    let nameWidth = max(44, sections.flatMap(\.rows).map { $0.contender.count + 2 }.max() ?? 0)
    for section in sections {
        lines.append("")
        lines.append("== \(section.title)")
        lines.append(
            "   " + "contender".padded(to: nameWidth) + section.metric.padded(to: 14, right: true)
                + "× Herald".padded(to: 11, right: true) + "   notes")
        for row in section.rows {
            let value = row.value.map(formatNumber) ?? (row.unavailable ?? "-")
            let ratio = section.ratio(row).map(formatRatio) ?? ""
            let notes = row.notes.joined(separator: ", ")
            let marker = row.isHerald ? " * " : "   "
            lines.append(
                marker + row.contender.padded(to: nameWidth) + value.padded(to: 14, right: true)
                    + ratio.padded(to: 11, right: true) + (notes.isEmpty ? "" : "   " + notes))
        }
    }
    return lines.joined(separator: "\n")
}

/// The table as markdown, for the README.
func markdownTable(_ sections: [Section]) -> String {
    var lines = [
        "| Scenario | Contender | Cost | × Herald | Notes |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for section in sections {
        for (index, row) in section.rows.enumerated() {
            let scenario = index == 0 ? section.title : ""
            let value = row.value.map { "\(formatNumber($0)) \(section.metric)" } ?? (row.unavailable ?? "-")
            let ratio = section.ratio(row).map(formatRatio) ?? ""
            let name = row.isHerald ? "**\(row.contender)**" : row.contender
            lines.append("| \(scenario) | \(name) | \(value) | \(ratio) | \(row.notes.joined(separator: ", ")) |")
        }
    }
    return lines.joined(separator: "\n")
}

func targetLines(_ checks: [TargetCheck]) -> String {
    checks.map { check in
        var line = "\(check.verdict)  \(check.target): \(check.measured)"
        if check.missed, let limit = check.limit {
            line += "\n      limit: " + limit
        }
        return line
    }.joined(separator: "\n")
}
