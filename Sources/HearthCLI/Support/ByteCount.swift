import ArgumentParser
import Foundation

/// A size given on the command line: a number of bytes with an optional unit (`512MB`, `1GB`,
/// `1.5GiB`, `800000000`). KB, MB and GB are powers of 1024, as memory sizes usually are.
///
/// For example:
/// ```swift
/// #expect(ByteCount(argument: "1GB")?.bytes == 1_073_741_824)
/// ```
struct ByteCount: ExpressibleByArgument, Sendable {
    let bytes: Int

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let kibi = 1024.0, mebi = kibi * 1024, gibi = mebi * 1024
        let units: [(suffix: String, scale: Double)] = [
            ("GIB", gibi), ("MIB", mebi), ("KIB", kibi), ("GB", gibi), ("MB", mebi), ("KB", kibi), ("G", gibi), ("M", mebi), ("K", kibi), ("B", 1),
        ]
        let unit = units.first { text.hasSuffix($0.suffix) }
        let number = unit.map { String(text.dropLast($0.suffix.count)) } ?? text
        guard let value = Double(number.trimmingCharacters(in: .whitespaces)), value.isFinite, value > 0 else { return nil }
        bytes = Int(value * (unit?.scale ?? 1))
    }

    static var defaultCompletionKind: CompletionKind { .default }
}
