import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Latency samples in microseconds and their percentiles.
struct LatencyStatistics {
    var samples: [Int64] = []

    mutating func add(_ microseconds: Int64) {
        samples.append(microseconds)
    }

    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)
        return Double(sorted[max(index, 0)]) / 1000
    }

    /// `p50 1.2 ms, p90 …, p99 …, max …`
    var summary: String {
        let max = samples.max().map { Double($0) / 1000 } ?? .nan
        return "p50 \(Self.ms(percentile(50))), p90 \(Self.ms(percentile(90))), p99 \(Self.ms(percentile(99))), max \(Self.ms(max))"
    }

    static func ms(_ value: Double) -> String {
        value.isNaN ? "n/a" : String(format: "%.2f ms", value)
    }
}

/// Wall-clock microseconds, comparable across the bench's own tasks.
func wallMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec / 1000)
}
