import Foundation
public import HearthCore
import HearthRules

/// What `hearth serve --emulator` takes from a Firebase project directory: `firebase.json` (rules
/// files, the `emulators` block) and `.firebaserc` (the project, deploy targets), read as
/// firebase-tools reads them (docs/specs/emulator-suite.md §1).
///
/// For example:
/// ```swift
/// let setup = try FirebaseProjectFile.load(URL(fileURLWithPath: "firebase.json"), project: nil)
/// print(setup.projectID, setup.listeners)
/// ```
public struct EmulatorSetup: Sendable, Equatable {
    /// An address an emulator of the Suite listens on; Hearth serves every API on each.
    public struct Listener: Sendable, Equatable {
        /// `database`, `auth` or `storage`.
        public var emulator: String
        public var host: String
        public var port: Int
    }

    public var configFile: URL
    public var projectID: String
    /// The emulators Hearth serves, in the order database, auth, storage, then the hub if named (its
    /// port serves `GET /emulators` for discovery, and every API as the others do).
    public var listeners: [Listener] = []
    public var rulesFiles: [WatchedRulesFile] = []
    /// Emulators named in the file that Hearth does not have (firestore, functions, …), sorted.
    public var notServed: [String] = []
    /// Things the file asks for that Hearth handles its own way, for the start-up log.
    public var notes: [String] = []
}

/// A rules file Hearth loads at start and applies again whenever it changes.
///
/// For example:
/// ```swift
/// let file = WatchedRulesFile(file: URL(fileURLWithPath: "database.rules.json"), target: .database(namespace: "demo-app-default-rtdb"))
/// ```
public struct WatchedRulesFile: Sendable, Equatable {
    public enum Target: Sendable, Equatable {
        case database(namespace: String)
        /// One bucket, or every bucket without rules of its own (`nil`).
        case storage(bucket: String?)
    }

    public var file: URL
    public var target: Target

    public init(file: URL, target: Target) {
        self.file = file
        self.target = target
    }
}

/// A `firebase.json` or `.firebaserc` Hearth cannot use, with what to do about it.
public struct EmulatorSetupError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

public enum FirebaseProjectFile {
    /// The project when nothing names one, as firebase-tools' emulators use.
    public static let placeholderProject = "demo-no-project"
    static let defaultPorts = ["database": 9000, "auth": 9099, "storage": 9199, "hub": 4400]
    static let served = ["database", "auth", "storage"]
    /// Emulators of the Suite Hearth does not have; named at start-up as not served.
    static let others = ["firestore", "functions", "hosting", "pubsub", "eventarc", "tasks", "dataconnect", "apphosting", "extensions"]
    /// Parts of the Suite's own tooling (its UI, hub and log server), which Hearth's console replaces.
    static let tooling = ["ui", "hub", "logging", "singleProjectMode"]

    /// Reads `file` and the `.firebaserc` beside it. `project` is `--project` (an alias of
    /// `.firebaserc` or a project id).
    public static func load(_ file: URL, project: String?) throws(EmulatorSetupError) -> EmulatorSetup {
        let directory = file.deletingLastPathComponent()
        let config = try readJSON(file, what: "firebase.json")
        guard case .object = config else { throw EmulatorSetupError("\(file.path) must hold a JSON object") }
        let rcFile = directory.appendingPathComponent(".firebaserc")
        let rc: JSONValue? = FileManager.default.fileExists(atPath: rcFile.path) ? try readJSON(rcFile, what: ".firebaserc") : nil
        let projectID = resolveProject(project, config: config, rc: rc)
        var setup = EmulatorSetup(configFile: file, projectID: projectID)

        let emulators: [(key: String, value: JSONValue)]
        switch config["emulators"] {
        case nil, .null?: emulators = []
        case .object(let members)?: emulators = members
        default: throw EmulatorSetupError("\(file.path): \"emulators\" must be an object")
        }
        let configured = Set(emulators.map(\.key))
        let topLevel: Set<String> = { if case .object(let members) = config { Set(members.map(\.key)) } else { [] } }()
        for name in served + ["hub"] where configured.contains(name) || (name != "hub" && topLevel.contains(name)) {
            let entry = emulators.first { $0.key == name }?.value
            let host = entry?["host"]?.stringValue ?? "127.0.0.1"
            let port: Int
            switch entry?["port"] {
            case nil, .null?: port = defaultPorts[name]!
            case .number(let number)? where number == number.rounded() && (0...65535).contains(number): port = Int(number)
            case .string(let text)? where Int(text).map { (0...65535).contains($0) } == true: port = Int(text)!
            default: throw EmulatorSetupError("\(file.path): emulators.\(name).port must be a port number (0–65535)")
            }
            setup.listeners.append(.init(emulator: name, host: host == "localhost" ? "127.0.0.1" : host, port: port))
        }
        setup.notServed = Set(emulators.map(\.key).filter { !served.contains($0) && !tooling.contains($0) } + others.filter(topLevel.contains)).sorted()

        let targets = rc?["targets"]?[projectID]
        func resolve(target: String, kind: String) throws(EmulatorSetupError) -> [String] {
            guard let names = targets?[kind]?[target]?.arrayValue?.compactMap(\.stringValue), !names.isEmpty else {
                throw EmulatorSetupError(
                    "\(file.path): deploy target \"\(target)\" is not configured for project \(projectID) in \(rcFile.path). Add it under targets.\(projectID).\(kind).\(target) (firebase target:apply \(kind) \(target) <names…>)"
                )
            }
            return names
        }
        func rulesPath(_ entry: JSONValue, _ where_: String) throws(EmulatorSetupError) -> URL {
            guard let path = entry["rules"]?.stringValue, !path.isEmpty else {
                throw EmulatorSetupError("\(file.path): \(where_) needs \"rules\", the path of its rules file")
            }
            let resolved = URL(fileURLWithPath: path, relativeTo: directory).standardizedFileURL
            let root = directory.standardizedFileURL.path
            guard path.hasPrefix("/") || resolved.path.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
                throw EmulatorSetupError("\(file.path): \(path) is outside of the project directory \(root)")
            }
            return resolved
        }

        switch config["database"] {
        case nil, .null?: break
        case .object?:
            let entry = config["database"]!
            if entry["rules"] != nil {
                let namespace = "\(projectID)-default-rtdb"
                setup.rulesFiles.append(.init(file: try rulesPath(entry, "database"), target: .database(namespace: namespace)))
            }
        case .array(let entries)?:
            for (index, entry) in entries.enumerated() {
                let place = "database[\(index)]"
                let rules = try rulesPath(entry, place)
                if let instance = entry["instance"]?.stringValue {
                    setup.rulesFiles.append(.init(file: rules, target: .database(namespace: instance)))
                } else if let target = entry["target"]?.stringValue {
                    for namespace in try resolve(target: target, kind: "database") {
                        setup.rulesFiles.append(.init(file: rules, target: .database(namespace: namespace)))
                    }
                } else {
                    throw EmulatorSetupError("\(file.path): \(place) must supply either \"target\" or \"instance\"")
                }
            }
        default:
            throw EmulatorSetupError("\(file.path): \"database\" must be an object or a list")
        }

        switch config["storage"] {
        case nil, .null?: break
        case .object?:
            setup.rulesFiles.append(.init(file: try rulesPath(config["storage"]!, "storage"), target: .storage(bucket: nil)))
        case .array(let entries)?:
            for (index, entry) in entries.enumerated() {
                let place = "storage[\(index)]"
                let rules = try rulesPath(entry, place)
                // firebase-tools reads only "target"; a "bucket" naming the bucket itself is taken too.
                if let bucket = entry["bucket"]?.stringValue, entry["target"] == nil {
                    setup.rulesFiles.append(.init(file: rules, target: .storage(bucket: bucket)))
                } else if let target = entry["target"]?.stringValue {
                    for bucket in try resolve(target: target, kind: "storage") {
                        setup.rulesFiles.append(.init(file: rules, target: .storage(bucket: bucket)))
                    }
                } else {
                    throw EmulatorSetupError("\(file.path): \(place) must supply \"bucket\" or \"target\"")
                }
            }
        default:
            throw EmulatorSetupError("\(file.path): \"storage\" must be an object or a list")
        }
        if emulators.contains(where: { $0.key == "singleProjectMode" && $0.value == .bool(false) }) {
            setup.notes.append("singleProjectMode false: every project is served, as always")
        }
        return setup
    }

    /// `--project` (resolved through `.firebaserc`'s aliases), else the deprecated `"firebase"` key of
    /// firebase.json, else the only alias, else `projects.default`, else ``placeholderProject``.
    static func resolveProject(_ given: String?, config: JSONValue, rc: JSONValue?) -> String {
        let aliases: [(key: String, value: JSONValue)] = if case .object(let members)? = rc?["projects"] { members } else { [] }
        if let given, !given.isEmpty {
            return aliases.first { $0.key == given }?.value.stringValue ?? given
        }
        if let legacy = config["firebase"]?.stringValue, !legacy.isEmpty { return legacy }
        if aliases.count == 1, let only = aliases[0].value.stringValue { return only }
        return aliases.first { $0.key == "default" }?.value.stringValue ?? placeholderProject
    }

    static func readJSON(_ file: URL, what: String) throws(EmulatorSetupError) -> JSONValue {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw EmulatorSetupError("cannot read \(file.path): \(error.localizedDescription)")
        }
        do {
            // firebase-tools reads both files as JSON with comments.
            return try JSONValue(parsing: RulesDocument.stripComments(String(decoding: data, as: UTF8.self)))
        } catch {
            throw EmulatorSetupError("\(file.path) is not valid JSON (\(what)): \(error)")
        }
    }
}
