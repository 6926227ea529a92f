import Foundation
import HearthEngine
import HearthFiles
import HearthRules
import HearthStorageRules
import Logging
import ServiceLifecycle
import Synchronization

/// Loads the rules files firebase.json names and applies each again when it changes, as the
/// Suite's emulators do: a broken edit keeps the rules in force and logs the error with the file,
/// line and column.
///
/// It polls (every quarter second, comparing contents), which works the same on every platform and
/// filesystem, including editors that replace a file instead of writing it, and bind mounts.
///
/// For example:
/// ```swift
/// let watcher = RulesFileWatcher(files: setup.rulesFiles, registry: registry, files: fileService, logger: logger)
/// try await watcher.loadAll()   // at start: a file that does not load stops the start
/// ```
struct RulesFileWatcher: Service {
    let files: [WatchedRulesFile]
    let registry: DatabaseRegistry
    let fileService: FileService?
    var interval: Duration = .milliseconds(250)
    let logger: Logger
    /// Each file's contents when last read: an edit made between the load and the watch is an edit.
    private let lastRead = LastRead()

    final class LastRead: Sendable {
        let contents = Mutex<[URL: String]>([:])
    }

    init(files: [WatchedRulesFile], registry: DatabaseRegistry, fileService: FileService?, interval: Duration = .milliseconds(250), logger: Logger) {
        self.files = files
        self.registry = registry
        self.fileService = fileService
        self.interval = interval
        self.logger = logger
    }

    /// Loads every file once; the first that is missing or does not compile stops the start.
    func loadAll() async throws(EmulatorSetupError) {
        for file in Set(files.map(\.file)) {
            guard let source = Self.read(file) else { throw EmulatorSetupError("cannot read the rules file \(file.path)") }
            lastRead.contents.withLock { $0[file] = source }
            if let problems = await apply(source, from: file) {
                throw EmulatorSetupError("the rules in \(file.path) do not compile:\n" + problems.joined(separator: "\n"))
            }
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var seen = lastRead.contents.withLock { $0 }
            for file in Set(files.map(\.file)) where seen[file] == nil { seen[file] = Self.read(file) ?? "" }
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                for (file, last) in Array(seen) {
                    // A file missing for a moment (an editor's save) is not an edit.
                    guard let source = Self.read(file), source != last else { continue }
                    seen[file] = source
                    lastRead.contents.withLock { $0[file] = source }
                    if let problems = await apply(source, from: file) {
                        for problem in problems { logger.error("\(problem)") }
                        logger.error("The rules in \(file.path) were not applied; the rules in force stay")
                    } else {
                        logger.notice("Applied the rules in \(file.path)")
                    }
                }
            }
        }
    }

    /// Compiles and applies `source` to every target of `file`; returns the problems (`file:line:column: …`)
    /// if it does not compile, leaving the rules in force.
    func apply(_ source: String, from file: URL) async -> [String]? {
        let targets = files.filter { $0.file == file }.map(\.target)
        do {
            if targets.contains(where: { if case .database = $0 { true } else { false } }) {
                let rules: RulesDocument
                do {
                    rules = try RulesDocument(source: source)
                } catch {
                    return error.diagnostics.map { Self.describe($0, file: file) }
                }
                for case .database(let namespace) in targets { try await registry.database(namespace).replaceRules(rules) }
            }
            if let fileService, targets.contains(where: { if case .storage = $0 { true } else { false } }) {
                let rules: StorageRules
                do {
                    rules = try StorageRules(source: source)
                } catch {
                    return error.diagnostics.map { "\(file.path):\($0.line):\($0.column): \($0.message)" }
                }
                for case .storage(let bucket) in targets {
                    if let bucket {
                        fileService.setRules(rules, forBucket: bucket)
                    } else {
                        do {
                            _ = try await fileService.setRules(source)
                        } catch {
                            return error.diagnostics.map { "\(file.path):\($0.line):\($0.column): \($0.message)" }
                        }
                    }
                }
            }
        } catch {
            return ["\(file.path): cannot apply the rules: \(error)"]
        }
        return nil
    }

    static func read(_ file: URL) -> String? {
        (try? Data(contentsOf: file)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A database rules problem as `file:line:column: message (rule)`: the place is the file's.
    static func describe(_ diagnostic: Diagnostic, file: URL) -> String {
        let rule = diagnostic.location.isEmpty ? "" : " (\(diagnostic.location))"
        return "\(file.path):\(diagnostic.line):\(diagnostic.column): \(diagnostic.message)\(rule)"
    }
}
