import ArgumentParser
import Foundation
import HearthCore
import HearthSQLite
import HearthStorage

/// Options shared by every command that works on a data directory.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The data directory.", valueName: "dir"))
    var data: String = "./hearth-data"

    var directory: URL { URL(fileURLWithPath: data, isDirectory: true).standardizedFileURL }

    /// Opens the SQLite storage, turning failures into a message and a non-zero exit.
    /// - Parameter whileServing: what to do instead when a running server holds the directory.
    func openStorage(whileServing alternative: String? = nil) throws -> SQLiteStorage {
        do {
            return try SQLiteStorage(directory: directory)
        } catch let error as DatabaseStorageError {
            if error.code == .locked, let alternative { throw CLIError("\(error.message). \(alternative)") }
            throw CLIError(error.message)
        }
    }
}

/// A failure already explained to the user: printed as `error: <message>`, exit code 1.
struct CLIError: HearthError {
    var message: String

    init(_ message: String) {
        self.message = message
    }
}

/// A one-line progress bar on standard error.
struct ProgressBar {
    let total: Int
    let label: String
    var lastPrinted = -1
    let start = ContinuousClock.now

    init(total: Int, label: String) {
        self.total = total
        self.label = label
    }

    /// On a terminal the bar redraws in place; in a log it prints a line every 10%.
    let interactive = isatty(STDERR_FILENO) == 1

    mutating func update(_ done: Int) {
        let percent = total > 0 ? min(100, done * 100 / total) : 100
        guard percent != lastPrinted, interactive || percent / 10 != lastPrinted / 10 || lastPrinted < 0 else { return }
        lastPrinted = percent
        if !interactive {
            FileHandle.standardError.write(Data("\(label): \(percent)% (\(done / 1_048_576) MB)\n".utf8))
            return
        }
        let width = 30
        let filled = percent * width / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let mb = Double(done) / 1_048_576
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(percent)% \(String(format: "%.1f", mb)) MB".utf8))
    }

    func finish(_ summary: String) {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        FileHandle.standardError.write(Data("\n\(summary) in \(String(format: "%.2f", seconds)) s\n".utf8))
    }
}
