import Foundation

/// One line of the chart: cost per post at each observer count.
struct ChartSeries {
    var name: String
    var color: String
    var points: [(observers: Int, nanoseconds: Double)]
}

/// Draws cost per post against observer count on log–log axes, as a standalone SVG document.
///
/// Written by hand so that the benchmark package needs no charting dependency.
func svgChart(title: String, subtitle: String, series: [ChartSeries]) -> String {
    let width = 720.0
    let height = 440.0
    let left = 80.0
    let right = 40.0
    let top = 56.0
    let bottom = 56.0
    let plotWidth = width - left - right
    let plotHeight = height - top - bottom

    let allPoints = series.flatMap(\.points).filter { $0.nanoseconds > 0 && $0.nanoseconds.isFinite }
    let xs = allPoints.map { Double($0.observers) }
    let ys = allPoints.map(\.nanoseconds)
    let xMin = floor(log10(xs.min() ?? 1))
    let xMax = max(ceil(log10(xs.max() ?? 10)), xMin + 1)
    let yMin = floor(log10(ys.min() ?? 1))
    let yMax = max(ceil(log10(ys.max() ?? 10)), yMin + 1)

    func x(_ value: Double) -> Double { left + (log10(value) - xMin) / (xMax - xMin) * plotWidth }
    func y(_ value: Double) -> Double { top + plotHeight - (log10(value) - yMin) / (yMax - yMin) * plotHeight }
    func f(_ value: Double) -> String { String(format: "%.1f", value) }
    func label(_ exponent: Double) -> String {
        let value = pow(10, exponent)
        if value >= 1_000_000 { return String(format: "%.0f ms", value / 1_000_000) }
        if value >= 1_000 { return String(format: "%.0f µs", value / 1_000) }
        return String(format: "%.0f ns", value)
    }

    var svg: [String] = []
    svg.append(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">"
    )
    svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>")
    svg.append("<text x=\"\(f(left))\" y=\"24\" font-size=\"16\" font-weight=\"bold\">\(escape(title))</text>")
    svg.append("<text x=\"\(f(left))\" y=\"42\" fill=\"#555\">\(escape(subtitle))</text>")

    // Grid and axis labels: one line per decade.
    for exponent in stride(from: yMin, through: yMax, by: 1) {
        let yy = y(pow(10, exponent))
        svg.append(
            "<line x1=\"\(f(left))\" y1=\"\(f(yy))\" x2=\"\(f(left + plotWidth))\" y2=\"\(f(yy))\" stroke=\"#ddd\"/>")
        svg.append("<text x=\"\(f(left - 8))\" y=\"\(f(yy + 4))\" text-anchor=\"end\">\(label(exponent))</text>")
    }
    for exponent in stride(from: xMin, through: xMax, by: 1) {
        let xx = x(pow(10, exponent))
        svg.append(
            "<line x1=\"\(f(xx))\" y1=\"\(f(top))\" x2=\"\(f(xx))\" y2=\"\(f(top + plotHeight))\" stroke=\"#ddd\"/>")
        svg.append(
            "<text x=\"\(f(xx))\" y=\"\(f(top + plotHeight + 18))\" text-anchor=\"middle\">"
                + "\(Int(pow(10, exponent)).formatted)</text>")
    }
    svg.append(
        "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotWidth))\" height=\"\(f(plotHeight))\" "
            + "fill=\"none\" stroke=\"#888\"/>")
    svg.append(
        "<text x=\"\(f(left + plotWidth / 2))\" y=\"\(f(height - 14))\" text-anchor=\"middle\">"
            + "observers of the posted notification (log scale)</text>")
    svg.append(
        "<text transform=\"translate(18 \(f(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">"
            + "cost per post (log scale)</text>")

    // Series.
    for (index, line) in series.enumerated() {
        let points = line.points.filter { $0.nanoseconds > 0 && $0.nanoseconds.isFinite }
        let path = points.map { "\(f(x(Double($0.observers)))),\(f(y($0.nanoseconds)))" }.joined(separator: " ")
        svg.append("<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2.5\"/>")
        for (pointIndex, point) in points.enumerated() {
            let px = x(Double(point.observers))
            let py = y(point.nanoseconds)
            let isLast = pointIndex == points.count - 1
            svg.append("<circle cx=\"\(f(px))\" cy=\"\(f(py))\" r=\"4\" fill=\"\(line.color)\"/>")
            svg.append(
                "<text x=\"\(f(isLast ? px - 8 : px + 6))\" y=\"\(f(py - 7))\" fill=\"\(line.color)\" "
                    + "font-size=\"10\" text-anchor=\"\(isLast ? "end" : "start")\">"
                    + "\(escape(formatNanoseconds(point.nanoseconds)))</text>")
        }
        // The legend sits in the plot's top-left corner, which the rising lines leave empty.
        let legendY = top + 18 + Double(index) * 20
        let legendX = left + 14
        svg.append(
            "<line x1=\"\(f(legendX))\" y1=\"\(f(legendY - 4))\" x2=\"\(f(legendX + 22))\" y2=\"\(f(legendY - 4))\" "
                + "stroke=\"\(line.color)\" stroke-width=\"2.5\"/>")
        svg.append("<text x=\"\(f(legendX + 28))\" y=\"\(f(legendY))\">\(escape(line.name))</text>")
    }
    svg.append("</svg>")
    return svg.joined(separator: "\n") + "\n"
}

func formatNanoseconds(_ value: Double) -> String {
    if value >= 1_000_000 { return String(format: "%.1f ms", value / 1_000_000) }
    if value >= 1_000 { return String(format: "%.1f µs", value / 1_000) }
    return String(format: "%.0f ns", value)
}

private func escape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;")
}
