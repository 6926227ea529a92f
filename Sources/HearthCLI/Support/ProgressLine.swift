import Foundation

/// One line of progress on standard error, rewritten in place: name, percent, throughput.
final class ProgressLine: @unchecked Sendable {
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var begun = ContinuousClock.now

    func show(_ label: String, _ done: Int64, _ total: Int64?) {
        let now = ContinuousClock.now
        if done == 0 { begun = now }
        guard now - lastDraw > .milliseconds(200) || (total != nil && done == total) else { return }
        lastDraw = now
        let seconds = max(0.001, Double((now - begun).components.attoseconds) / 1e18 + Double((now - begun).components.seconds))
        let rate = Double(done) / seconds / 1_048_576
        let percent = total.map { $0 > 0 ? " \(Int(Double(done) * 100 / Double($0)))%" : " 100%" } ?? ""
        let line = "\r\(label)\(percent) \(String(format: "%.1f", Double(done) / 1_048_576)) MiB \(String(format: "%.1f", rate)) MiB/s"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        FileHandle.standardError.write(Data("\n".utf8))
        _ = start
    }
}
