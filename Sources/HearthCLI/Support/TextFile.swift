import Foundation

/// The text of a file the user named (UTF-8), or a ``CLIError`` that names the file and says why it
/// cannot be read.
///
/// For example:
/// ```swift
/// let source = try readTextFile("database.rules.json")
/// ```
func readTextFile(_ path: String) throws -> String {
    do {
        return try String(contentsOfFile: path, encoding: .utf8)
    } catch {
        throw CLIError("cannot read \(path): \(error.localizedDescription)")
    }
}
