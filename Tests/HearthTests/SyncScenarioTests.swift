import Foundation
@testable import Hearth
import HearthCore
import HearthProtocol
import Testing

/// Sync-tree behaviour as data: each file in `Fixtures/sync` is a list of steps, each an operation and
/// the exact events it must raise (in the spirit of the official SDKs' spec tests).
///
/// Operations (one key per step, plus `events` and optionally `listens`):
/// - `register`: `{"id", "type", "path", "query"?}` — an observer (`query` in wire format: `i`, `sp`,
///   `ep`, `l`, `vf`, …); the listens the tree then wants are started;
/// - `unregister`: an observer id; listens no longer wanted are stopped;
/// - `listenComplete`: `{"path", "query"?}` — the server acknowledged that listen;
/// - `serverOverwrite` / `serverMerge`: `{"path", "data", "listen"?: {"path", "query"}}` — data
///   pushed by the server, tagged for `listen` when given;
/// - `userSet` / `userUpdate`: `{"id", "path", "data"}` — a local write (write id `id`);
/// - `ack`: `{"id", "revert"?}` — the server's answer to a write.
/// `events` are `"<observer> <type> <key> prev=<key|-> <json>"`; `listens` the wanted listens,
/// as `"<path>"` or `"<path> <query json>"`, sorted.
@Suite struct SyncScenarioTests {
    static let directory = Bundle.module.url(forResource: "Fixtures/sync", withExtension: nil)!

    static var names: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    struct ScenarioError: Error, CustomStringConvertible {
        var description: String
    }

    @Test(arguments: names)
    func scenario(_ name: String) throws {
        let text = try String(contentsOf: Self.directory.appendingPathComponent(name), encoding: .utf8)
        let fixture = try JSONValue(parsing: text)
        guard case .array(let scenarios)? = fixture["scenarios"] else { throw ScenarioError(description: "\(name): no scenarios") }
        for scenario in scenarios {
            var title = name
            if case .string(let t)? = scenario["name"] { title += ": " + t }
            try run(scenario, title: title)
        }
    }

    func run(_ scenario: JSONValue, title: String) throws {
        guard case .array(let steps)? = scenario["steps"] else { throw ScenarioError(description: "\(title): no steps") }
        var tree = SyncTree()
        var started: Set<ServerListen> = []
        func syncListens() -> [RaisedEvent] {
            let desired = tree.desiredListens
            var events: [RaisedEvent] = []
            for listen in desired.subtracting(started) { tree.listenStarted(listen) }
            for listen in started.subtracting(desired) { events += tree.listenStopped(listen) }
            started = desired
            return events
        }
        for (index, step) in steps.enumerated() {
            let location = "\(title), step \(index)"
            var events: [RaisedEvent] = []
            if let register = step["register"] {
                let spec = QuerySpec(path: try Self.path(register["path"]), query: try Self.query(register["query"]))
                guard case .number(let id)? = register["id"], case .string(let type)? = register["type"] else {
                    throw ScenarioError(description: "\(location): register needs id and type")
                }
                events += tree.addRegistration(id: UInt(id), type: try Self.eventType(type), spec: spec)
                events += syncListens()
            } else if case .number(let id)? = step["unregister"] {
                tree.removeRegistration(id: UInt(id))
                events += syncListens()
            } else if let complete = step["listenComplete"] {
                events += tree.listenCompleted(try Self.listen(complete))
            } else if let push = step["serverOverwrite"] ?? step["serverMerge"] {
                let path = try Self.path(push["path"])
                let tag = try push["listen"].map { json throws in tree.tag(for: try Self.listen(json)) } ?? nil
                if step["serverOverwrite"] != nil {
                    events += tree.applyServerOverwrite(path: path, node: try Node(json: push["data"] ?? .null), tag: tag)
                } else {
                    events += tree.applyServerMerge(path: path, items: try Self.items(push["data"]), tag: tag)
                }
            } else if let write = step["userSet"] ?? step["userUpdate"] {
                guard case .number(let id)? = write["id"] else { throw ScenarioError(description: "\(location): writes need an id") }
                let path = try Self.path(write["path"])
                if step["userSet"] != nil {
                    events += tree.applyUserOverwrite(writeID: Int(id), path: path, node: try Node(json: write["data"] ?? .null))
                } else {
                    events += tree.applyUserMerge(writeID: Int(id), path: path, children: try Self.items(write["data"]))
                }
            } else if let ack = step["ack"] {
                guard case .number(let id)? = ack["id"] else { throw ScenarioError(description: "\(location): ack needs an id") }
                events += tree.ackWrite(writeID: Int(id), revert: ack["revert"] == .bool(true))
            } else {
                throw ScenarioError(description: "\(location): unknown step \(step.jsonText)")
            }
            guard case .array(let expected)? = step["events"] else { throw ScenarioError(description: "\(location): no events") }
            let actual = events.map { "\($0.registration) \(Recorder.name($0.type)) \($0.path.last?.string ?? "/") prev=\($0.previousKey ?? "-") \($0.node.jsonString())" }
            #expect(actual == expected.map { if case .string(let s) = $0 { s } else { $0.jsonText } }, "\(location)")
            if case .array(let listens)? = step["listens"] {
                let wanted = tree.desiredListens.map { listen in
                    listen.query.flatMap(ClientWire.queryObject).map { "\(listen.path) \($0.jsonText)" } ?? listen.path.description
                }.sorted()
                #expect(wanted == listens.map { if case .string(let s) = $0 { s } else { "" } }, "\(location)")
            }
        }
    }

    static func path(_ json: JSONValue?) throws -> DatabasePath {
        guard case .string(let text)? = json else { throw ScenarioError(description: "a path is needed") }
        return try DatabasePath(text)
    }

    static func query(_ json: JSONValue?) throws -> Query {
        guard let json else { return .all }
        var query = try WireQuery(json: json).query
        // A query object without `i` orders by priority, as on the wire; `{}` means the default.
        if case .object(let members) = json, members.isEmpty { query = .all }
        return query
    }

    static func listen(_ json: JSONValue) throws -> ServerListen {
        let query = try query(json["query"])
        return ServerListen(path: try path(json["path"]), query: json["query"] == nil ? nil : query)
    }

    static func items(_ json: JSONValue?) throws -> [(path: DatabasePath, node: Node)] {
        guard case .object(let members)? = json else { throw ScenarioError(description: "merge data must be an object") }
        return try members.map { (try DatabasePath($0.key), try Node(json: $0.value)) }
    }

    static func eventType(_ name: String) throws -> DataEventType {
        switch name {
        case "value": .value
        case "child_added": .childAdded
        case "child_removed": .childRemoved
        case "child_changed": .childChanged
        case "child_moved": .childMoved
        default: throw ScenarioError(description: "unknown event type \(name)")
        }
    }
}
