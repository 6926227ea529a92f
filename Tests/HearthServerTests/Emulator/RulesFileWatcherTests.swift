import Foundation
import HearthEngine
import HearthRules
@testable import HearthServer
import HearthStorage
import Logging
import ServiceLifecycle
import Testing

/// Rules files named by firebase.json: loaded at start (a broken one stops it), applied again on
/// every edit, and a broken edit keeps the rules in force with the file, line and column logged.
@Suite final class RulesFileWatcherTests {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-rules-\(UUID().uuidString).json")
    let registry = DatabaseRegistry(storage: InMemoryStorage(), logger: Logger(label: "test"))

    deinit { try? FileManager.default.removeItem(at: file) }

    func write(_ text: String) throws { try Data(text.utf8).write(to: file) }

    func source() async throws -> String { try await registry.database("demo-app-default-rtdb").rules.source }

    @Test func anEditIsAppliedAndABrokenOneKeepsTheRules() async throws {
        let open = #"{"rules": {".read": true}}"#
        try write(open)
        let watcher = RulesFileWatcher(
            files: [WatchedRulesFile(file: file, target: .database(namespace: "demo-app-default-rtdb"))], registry: registry, fileService: nil,
            interval: .milliseconds(20), logger: Logger(label: "test")
        )
        try await watcher.loadAll()
        #expect(try await source() == open)
        let task = Task { try await watcher.run() }
        defer { task.cancel() }

        let closed = "{\n  // closed\n  \"rules\": {\".read\": false}\n}"
        try write(closed)
        try await eventually { (try? await source()) == closed }
        // Broken: the rules in force stay; the problem names the file, line and column.
        let broken = "{\n  \"rules\": {\".read\": \"auth.uid === $nobody\"}\n}"
        #expect(await watcher.apply(broken, from: file) == ["\(file.path):2:36: unknown variable '$nobody' (rules/.read)"])
        try write(broken)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await source() == closed)
        try write(open)
        try await eventually { (try? await source()) == open }
    }

    @Test func aFileThatDoesNotLoadStopsTheStart() async throws {
        let watcher = RulesFileWatcher(
            files: [WatchedRulesFile(file: file, target: .database(namespace: "x"))], registry: registry, fileService: nil, logger: Logger(label: "test")
        )
        let missing = await #expect(throws: EmulatorSetupError.self) { try await watcher.loadAll() }
        #expect(missing?.description.contains(file.path) == true)
        try write(#"{"rules": {".read": tru}}"#)
        let broken = await #expect(throws: EmulatorSetupError.self) { try await watcher.loadAll() }
        #expect(broken?.description.contains("\(file.lastPathComponent):1:") == true)
    }
}
