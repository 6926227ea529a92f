import Foundation
@testable import HearthServer
import Testing

/// firebase.json and .firebaserc read as firebase-tools reads them (docs/specs/emulator-suite.md §1).
@Suite struct FirebaseProjectFileTests {
    /// A project directory in a fresh temporary folder, removed with the project.
    final class Project {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-project-\(UUID().uuidString)")

        deinit { try? FileManager.default.removeItem(at: directory) }

        func write(_ name: String, _ text: String) throws {
            let file = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
        }

        func load(project: String? = nil) throws -> EmulatorSetup {
            try FirebaseProjectFile.load(directory.appendingPathComponent("firebase.json"), project: project)
        }

        func path(_ name: String) -> URL { directory.appendingPathComponent(name).standardizedFileURL }
    }

    @Test func theFileFirebaseInitLeavesGivesPortsRulesAndTheProject() throws {
        let project = Project()
        try project.write("firebase.json", """
            {
              // As firebase-tools, comments are allowed.
              "database": { "rules": "database.rules.json" }, /* the default instance */
              "storage": { "rules": "storage.rules" },
              "emulators": {
                "auth": { "port": 9099 }, "database": { "port": "9000" }, "storage": { "port": 9199, "host": "0.0.0.0" },
                "firestore": { "port": 8080 }, "ui": { "enabled": true }, "singleProjectMode": true
              },
              "functions": { "source": "functions" }
            }
            """)
        try project.write(".firebaserc", #"{"projects": {"default": "demo-app"}}"#)
        let setup = try project.load()
        #expect(setup.projectID == "demo-app")
        // Database first (the main port), then auth, then storage, at their hosts ("localhost" is loopback).
        #expect(setup.listeners == [
            .init(emulator: "database", host: "127.0.0.1", port: 9000), .init(emulator: "auth", host: "127.0.0.1", port: 9099),
            .init(emulator: "storage", host: "0.0.0.0", port: 9199),
        ])
        #expect(setup.rulesFiles == [
            WatchedRulesFile(file: project.path("database.rules.json"), target: .database(namespace: "demo-app-default-rtdb")),
            WatchedRulesFile(file: project.path("storage.rules"), target: .storage(bucket: nil)),
        ])
        #expect(setup.notServed == ["firestore", "functions"])
    }

    @Test func aTopLevelKeyAloneStartsItsEmulatorOnTheDefaultPort() throws {
        let project = Project()
        try project.write("firebase.json", #"{"database": {"rules": "db.json"}, "emulators": {"auth": {}}}"#)
        var setup = try project.load()
        #expect(setup.listeners.map(\.emulator) == ["database", "auth"])
        #expect(setup.listeners.map(\.port) == [9000, 9099])
        #expect(setup.projectID == FirebaseProjectFile.placeholderProject)
        // The hub, when named, is listened on too (rules-unit-testing finds the others through it).
        try project.write("firebase.json", #"{"emulators": {"database": {}, "hub": {"port": 4401}}}"#)
        setup = try project.load()
        #expect(setup.listeners == [.init(emulator: "database", host: "127.0.0.1", port: 9000), .init(emulator: "hub", host: "127.0.0.1", port: 4401)])
        #expect(setup.notServed.isEmpty)
    }

    @Test func instancesAndTargetsOfSeveralDatabasesAndBuckets() throws {
        let project = Project()
        try project.write("firebase.json", """
            {
              "database": [{"instance": "main-db", "rules": "main.json"}, {"target": "logs", "rules": "logs.json"}],
              "storage": [{"bucket": "avatars.example", "rules": "avatars.rules"}, {"target": "media", "rules": "media.rules"}]
            }
            """)
        try project.write(".firebaserc", """
            {"projects": {"default": "demo-app", "staging": "demo-staging"},
             "targets": {"demo-staging": {"database": {"logs": ["logs-a", "logs-b"]}, "storage": {"media": ["media.example"]}}}}
            """)
        // --project takes an alias of .firebaserc; targets are the project's.
        let setup = try project.load(project: "staging")
        #expect(setup.projectID == "demo-staging")
        #expect(setup.rulesFiles.map(\.target) == [
            .database(namespace: "main-db"), .database(namespace: "logs-a"), .database(namespace: "logs-b"),
            .storage(bucket: "avatars.example"), .storage(bucket: "media.example"),
        ])
        // The default project has no such targets: the error says where to add them.
        let error = #expect(throws: EmulatorSetupError.self) { try project.load() }
        #expect(error?.description.contains("targets.demo-app.database.logs") == true)
    }

    @Test func mistakesAreNamed() throws {
        let project = Project()
        try project.write("firebase.json", #"{"database": [{"rules": "a.json"}]}"#)
        #expect(throws: EmulatorSetupError.self) { try project.load() }
        try project.write("firebase.json", #"{"storage": {"rules": "../outside.rules"}}"#)
        let outside = #expect(throws: EmulatorSetupError.self) { try project.load() }
        #expect(outside?.description.contains("outside of the project directory") == true)
        try project.write("firebase.json", #"{"emulators": {"auth": {"port": "many"}}}"#)
        let port = #expect(throws: EmulatorSetupError.self) { try project.load() }
        #expect(port?.description.contains("emulators.auth.port") == true)
        try project.write("firebase.json", #"{"emulators": "#)
        #expect(throws: EmulatorSetupError.self) { try project.load() }
    }
}
