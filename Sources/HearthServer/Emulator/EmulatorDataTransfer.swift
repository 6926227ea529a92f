import Foundation
import HearthAccess
import HearthCore
import HearthEngine
import HearthFiles
import HearthIdentity
import HearthStorage
import Logging

/// Reads and writes an emulators:export directory (docs/specs/emulator-suite.md §2): the databases,
/// the project's users and config, and the files, in firebase-tools' layout, so a team's seed data
/// and `--export-on-exit` directories work with Hearth, and Hearth's exports import into the Suite.
///
/// For example:
/// ```swift
/// let summary = try await transfer.export(to: URL(fileURLWithPath: "seed"))
/// ```
struct EmulatorDataTransfer: Sendable {
    let registry: DatabaseRegistry
    let storage: any DatabaseStorage
    let identity: IdentityService?
    let files: FileService?
    let project: String
    let logger: Logger

    /// What an export or import moved, for the log and the command line.
    struct Summary: Sendable, CustomStringConvertible {
        var databases = 0
        var users = 0
        var objects = 0
        var problems: [String] = []

        var description: String {
            "\(databases) database\(databases == 1 ? "" : "s"), \(users) user\(users == 1 ? "" : "s"), \(objects) file\(objects == 1 ? "" : "s")"
        }
    }

    static let metadataFile = "firebase-export-metadata.json"

    // MARK: - Export

    /// Writes everything into a new directory beside `target`, then puts it in `target`'s place: a
    /// failed export leaves the previous one whole (as firebase-tools does). `target` must be absent,
    /// empty or an earlier export, unless `replacingAnything`: an export never deletes other files by
    /// mistake (a typo'd path, a project directory).
    func export(to target: URL, replacingAnything: Bool = false) async throws -> Summary {
        let fileManager = FileManager.default
        let target = target.standardizedFileURL
        if !replacingAnything, let refusal = EmulatorExportError.refusing(toReplace: target) { throw refusal }
        let parent = target.deletingLastPathComponent()
        try fileManager.createDirectory(at: parent, withIntermediateDirectories: true)
        let staging = parent.appendingPathComponent(".\(target.lastPathComponent).hearth-export-\(UUID().uuidString.prefix(8))")
        try fileManager.createDirectory(at: staging, withIntermediateDirectories: true)
        do {
            var summary = Summary()
            var sections: [(key: String, value: JSONValue)] = [("version", .string("hearth"))]

            let databaseDirectory = staging.appendingPathComponent("database_export")
            try fileManager.createDirectory(at: databaseDirectory, withIntermediateDirectories: true)
            for namespace in try await storage.namespaces().sorted() {
                let snapshot = try await registry.database(namespace).snapshot()
                if snapshot.isEmpty { continue }
                try Data(snapshot.jsonString(format: .export).utf8).write(to: databaseDirectory.appendingPathComponent("\(namespace).json"))
                summary.databases += 1
            }
            sections.append(("database", .object([("version", .string("hearth")), ("path", .string("database_export"))])))

            if let identity {
                let authDirectory = staging.appendingPathComponent("auth_export")
                try fileManager.createDirectory(at: authDirectory, withIntermediateDirectories: true)
                let accounts = try await identity.exportEmulatorAccounts(project: project)
                summary.users = accounts["users"]?.arrayValue?.count ?? 0
                try Data(accounts.jsonText.utf8).write(to: authDirectory.appendingPathComponent("accounts.json"))
                try Data(identity.emulatorConfig.jsonText.utf8).write(to: authDirectory.appendingPathComponent("config.json"))
                sections.append(("auth", .object([("version", .string("hearth")), ("path", .string("auth_export"))])))
            }
            if let files {
                summary.objects = try await files.exportEmulatorData(to: staging.appendingPathComponent("storage_export"))
                sections.append(("storage", .object([("version", .string("hearth")), ("path", .string("storage_export"))])))
            }
            // Last, as firebase-tools writes it: a directory with this file is a whole export.
            try Data(JSONValue.object(sections).jsonText.utf8).write(to: staging.appendingPathComponent(Self.metadataFile))
            if fileManager.fileExists(atPath: target.path) { try fileManager.removeItem(at: target) }
            try fileManager.moveItem(at: staging, to: target)
            return summary
        } catch {
            try? fileManager.removeItem(at: staging)
            throw error
        }
    }

    // MARK: - Import

    /// The sections of an export directory, as firebase-tools' `--import` finds them (§2.6): from its
    /// metadata file, or a directory of database JSON files alone.
    static func sections(of directory: URL, logger: Logger) throws(EmulatorImportError) -> [String: URL] {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw EmulatorImportError("--import: directory \"\(directory.path)\" does not exist")
        }
        let metadataURL = directory.appendingPathComponent(metadataFile)
        var sections: [String: URL] = [:]
        if let data = fileManager.contents(atPath: metadataURL.path) {
            guard let metadata = try? JSONValue(parsing: data), case .object = metadata else {
                throw EmulatorImportError("\(metadataURL.path) is not valid JSON")
            }
            for section in ["database", "auth", "storage"] {
                if let path = metadata[section]?["path"]?.stringValue {
                    sections[section] = URL(fileURLWithPath: path, relativeTo: directory).standardizedFileURL
                }
            }
        } else if (try? fileManager.contentsOfDirectory(atPath: directory.path))?.contains(where: { $0.hasSuffix(".json") }) == true {
            logger.notice("No \(metadataFile): reading the directory as a database export (one JSON file per database)")
            sections["database"] = directory
        } else {
            throw EmulatorImportError("--import: \(directory.path) has no \(metadataFile) and no database JSON files; nothing to import")
        }
        return sections
    }

    /// The first part of an import, before the databases are opened (their writers run only once the
    /// server does): refuses to mix with data already there unless `replace`, which empties the
    /// databases and the project's users (the files are emptied by ``importFiles(from:replace:)``), then
    /// stores the databases.
    static func importDatabases(
        from directory: URL, replace: Bool, storage: any DatabaseStorage, users: any UserStore, catalog: (any ObjectCatalog)?,
        project: String, logger: Logger
    ) async throws -> Summary {
        let sections = try Self.sections(of: directory, logger: logger)
        var summary = Summary()
        var hasData = try await users.count(project: project) > 0
        if let catalog, !hasData {
            for bucket in try await catalog.buckets() where !(try await catalog.objects(bucket: bucket.name, prefix: "", after: nil, limit: 1).isEmpty) {
                hasData = true
            }
        }
        for namespace in try await storage.namespaces() where !hasData {
            hasData = !(try await storage.open(namespace: namespace).load().root.isEmpty)
        }
        if hasData {
            guard replace else {
                throw EmulatorImportError(
                    "the data directory already holds data, and --import \(directory.path) would mix with it. Add --import-replace to replace it, or use another --data directory (or --in-memory)"
                )
            }
            for namespace in try await storage.namespaces() {
                try await storage.open(namespace: namespace).commit([.replace(.root, .empty)])
            }
            try await users.deleteAll(project: project)
        }
        guard let databases = sections["database"] else { return summary }
        let fileManager = FileManager.default
        let names = try fileManager.contentsOfDirectory(atPath: databases.path).filter { $0.hasSuffix(".json") }.sorted()
        for name in names {
            let file = databases.appendingPathComponent(name)
            let namespace = String(name.dropLast(".json".count))
            let root: Node
            do {
                root = try Node(json: try JSONValue(parsing: try Data(contentsOf: file)))
            } catch {
                throw EmulatorImportError("\(file.path) is not a database export: \(error)")
            }
            do {
                try await storage.open(namespace: namespace).commit([.replace(.root, root)])
            } catch {
                throw EmulatorImportError("cannot import \(file.path) into the database \(namespace): \(error)")
            }
            summary.databases += 1
        }
        return summary
    }

    /// The rest of an import, once the identity and file services are open: the users, the Auth
    /// config and the files.
    func importUsersAndFiles(from directory: URL, replace: Bool) async throws -> Summary {
        let sections = try Self.sections(of: directory, logger: logger)
        var summary = Summary()
        let fileManager = FileManager.default
        if replace { try await files?.reset() }
        if let auth = sections["auth"] {
            guard let identity else { throw EmulatorImportError("the export has users, but this server has no Authentication API") }
            let config = auth.appendingPathComponent("config.json")
            if let data = fileManager.contents(atPath: config.path), let json = try? JSONValue(parsing: data) {
                identity.importEmulatorConfig(json)
            }
            let names = try fileManager.contentsOfDirectory(atPath: auth.path).filter { $0.hasPrefix("accounts") && $0.hasSuffix(".json") }.sorted()
            for name in names {
                guard name == "accounts.json" else {
                    summary.problems.append("auth_export/\(name): tenants are not supported; its users were not imported")
                    continue
                }
                let file = auth.appendingPathComponent(name)
                let json: JSONValue
                do {
                    json = try JSONValue(parsing: try Data(contentsOf: file))
                } catch {
                    throw EmulatorImportError("\(file.path) is not valid JSON: \(error)")
                }
                let report = try await identity.importEmulatorAccounts(json, project: project)
                summary.users += report.imported
                summary.problems += report.problems.map { "auth_export/\(name): \($0)" }
            }
        }
        if let storageDirectory = sections["storage"] {
            guard let files else { throw EmulatorImportError("the export has files, but this server has no Storage API") }
            do {
                let report = try await files.importEmulatorData(from: storageDirectory)
                summary.objects += report.objects
                summary.problems += report.problems.map { "storage_export/\($0)" }
            } catch let error as EmulatorFilesError {
                throw EmulatorImportError(error.description)
            }
        }
        return summary
    }
}

/// An export that must not go where it was asked to, with what to do.
public struct EmulatorExportError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }

    /// Why `target` must not be replaced by an export: it holds files and is not an earlier export.
    public static func refusing(toReplace target: URL) -> EmulatorExportError? {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: target.path, isDirectory: &isDirectory) else { return nil }
        guard isDirectory.boolValue else { return EmulatorExportError("\(target.path) is a file, not a directory") }
        let contents = (try? fileManager.contentsOfDirectory(atPath: target.path)) ?? []
        if contents.isEmpty || contents.contains(EmulatorDataTransfer.metadataFile) { return nil }
        return EmulatorExportError(
            "\(target.path) holds files and is not an earlier export (no \(EmulatorDataTransfer.metadataFile)); an export there would delete them. Pick another directory, or replace it on purpose (hearth emulators export --force)"
        )
    }
}

/// An export directory that cannot be imported, with what to do.
public struct EmulatorImportError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
