import HearthAccess
import HearthCore
import HearthEngine

/// The body of `POST /.cluster/v1/write`: writes a node forwards to a database's owner, in order, and
/// the owner's answer (each write's outcome, and the log sequence number that includes them all).
///
/// JSON throughout, so the format is readable in a packet capture and needs no schema:
/// a request is `{"o":"set","p":["a"],"v":1,"i":"admin"}` (operation, path, value, identity, and
/// optionally `"m"` if-match, `"h"` expected hash, `"l"` leaf limit).
///
/// For example:
/// ```swift
/// let body = ForwardedWrites.encode([request])
/// let requests = try ForwardedWrites.decodeRequests(body)
/// ```
package enum ForwardedWrites {
    package static func encode(_ requests: [WriteRequest]) -> String {
        JSONValue.array(requests.map(json(of:))).jsonText
    }

    static func decodeRequests(_ text: String) throws -> [WriteRequest] {
        guard case .array(let items) = try parse(text) else { throw ReplicationError("Forwarded writes must be a list") }
        return try items.map(request(from:))
    }

    static func encode(_ outcomes: [Result<WriteOutcome, any Error>], sequence: Int64) -> String {
        var writer = JSONWriter()
        writer.writeRaw(#"{"seq":"#)
        writer.writeRaw(String(sequence))
        writer.writeRaw(#","outcomes":["#)
        for (index, outcome) in outcomes.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            switch outcome {
            case .success(.written(let value, let written)):
                writer.writeRaw(#"{"v":"#)
                value.write(to: &writer, format: .export)
                written.writeMembers(to: &writer)
                writer.writeRaw("}")
            case .success(.preconditionFailed(let current)):
                writer.writeRaw(#"{"current":"#)
                current.write(to: &writer, format: .export)
                writer.writeRaw("}")
            case .failure(let error):
                let writeError = error as? WriteError ?? WriteError(.unavailable, "The write failed on the database's owner; try again")
                writer.write(.object([("error", .string(code(writeError.code))), ("message", .string(writeError.message))]))
            }
        }
        writer.writeRaw("]}")
        return writer.string
    }

    static func decodeOutcomes(_ text: String) throws -> (outcomes: [Result<WriteOutcome, WriteError>], sequence: Int64) {
        guard case .object(let members) = try parse(text),
            let sequence = members.first(where: { $0.key == "seq" })?.value, case .number(let seq) = sequence,
            let list = members.first(where: { $0.key == "outcomes" })?.value, case .array(let items) = list
        else { throw ReplicationError("The owner's answer is malformed") }
        let outcomes = try items.map { item -> Result<WriteOutcome, WriteError> in
            guard case .object(let fields) = item, let first = fields.first else { throw ReplicationError("An outcome is malformed") }
            switch first.key {
            case "v":
                let value = try node(first.value)
                guard fields.count == 2 else { throw ReplicationError("An outcome is malformed") }
                switch (fields[1].key, fields[1].value) {
                case ("n", let written):
                    return .success(.written(value: value, written: .node(try node(written))))
                case ("u", .array(let pairs)), ("up", .array(let pairs)):
                    let items = try pairs.map { pair -> (path: DatabasePath, node: Node) in
                        guard case .array(let parts) = pair, parts.count == 2 else { throw ReplicationError("An outcome is malformed") }
                        return (try path(parts[0]), try node(parts[1]))
                    }
                    return .success(.written(value: value, written: .update(items)))
                default:
                    throw ReplicationError("An outcome is malformed")
                }
            case "current":
                return .success(.preconditionFailed(current: try node(first.value)))
            case "error":
                guard case .string(let name) = first.value, let code = code(named: name),
                    let messageField = fields.first(where: { $0.key == "message" }), case .string(let message) = messageField.value
                else { throw ReplicationError("An outcome is malformed") }
                return .failure(WriteError(code, message))
            default:
                throw ReplicationError("An outcome is malformed")
            }
        }
        return (outcomes, Int64(seq))
    }

    // MARK: Pieces

    private static func parse(_ text: String) throws -> JSONValue {
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw ReplicationError("A cluster message is not JSON")
        }
    }

    private static func json(of request: WriteRequest) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = []
        switch request.operation {
        case .set(let p, let value):
            fields += [("o", .string("set")), ("p", p.keyArray), ("v", value)]
        case .setPriority(let p, let value):
            fields += [("o", .string("priority")), ("p", p.keyArray), ("v", value)]
        case .update(let p, let items):
            fields += [("o", .string("update")), ("p", p.keyArray), ("u", .array(items.map { .array([$0.path.keyArray, $0.value]) }))]
        }
        switch request.identity {
        case .admin: fields.append(("i", .string("admin")))
        case .anonymous: fields.append(("i", .string("anonymous")))
        case .user(let auth): fields.append(("i", .object([("user", auth)])))
        }
        if let ifMatch = request.ifMatch { fields.append(("m", .string(ifMatch))) }
        if let hash = request.expectedHash { fields.append(("h", .string(hash))) }
        if let limit = request.maximumLeaves { fields.append(("l", .number(Double(limit)))) }
        return .object(fields)
    }

    private static func request(from json: JSONValue) throws -> WriteRequest {
        guard case .object(let fields) = json else { throw ReplicationError("A forwarded write is malformed") }
        func field(_ name: String) -> JSONValue? { fields.first { $0.key == name }?.value }
        guard case .string(let operation)? = field("o"), let pathJSON = field("p") else {
            throw ReplicationError("A forwarded write is malformed")
        }
        let target = try path(pathJSON)
        let op: WriteRequest.Operation
        switch operation {
        case "set": op = .set(target, field("v") ?? .null)
        case "priority": op = .setPriority(target, field("v") ?? .null)
        case "update":
            guard case .array(let pairs)? = field("u") else { throw ReplicationError("A forwarded update is malformed") }
            op = .update(target, try pairs.map { pair in
                guard case .array(let parts) = pair, parts.count == 2 else { throw ReplicationError("A forwarded update is malformed") }
                return (try path(parts[0]), parts[1])
            })
        default:
            throw ReplicationError("A forwarded write has an unknown operation")
        }
        let identity: Identity
        switch field("i") {
        case .string("admin")?: identity = .admin
        case .string("anonymous")?: identity = .anonymous
        case .object(let user)? where user.count == 1 && user[0].key == "user": identity = .user(user[0].value)
        default: throw ReplicationError("A forwarded write has no identity")
        }
        var request = WriteRequest(op, identity: identity)
        if case .string(let ifMatch)? = field("m") { request.ifMatch = ifMatch }
        if case .string(let hash)? = field("h") { request.expectedHash = hash }
        if case .number(let limit)? = field("l") { request.maximumLeaves = Int(limit) }
        return request
    }

    private static func path(_ json: JSONValue) throws -> DatabasePath {
        guard case .array(let keys) = json else { throw ReplicationError("A path is malformed") }
        return DatabasePath(keys: try keys.map { key in
            guard case .string(let string) = key else { throw ReplicationError("A path is malformed") }
            return Key(string)
        })
    }

    private static func node(_ json: JSONValue) throws -> Node {
        do {
            return try Node(json: json)
        } catch {
            throw ReplicationError("A value is malformed")
        }
    }

    private static func code(_ code: WriteErrorCode) -> String {
        switch code {
        case .invalidData: "invalidData"
        case .permissionDenied: "permissionDenied"
        case .tooLarge: "tooLarge"
        case .unavailable: "unavailable"
        }
    }

    private static func code(named name: String) -> WriteErrorCode? {
        switch name {
        case "invalidData": .invalidData
        case "permissionDenied": .permissionDenied
        case "tooLarge": .tooLarge
        case "unavailable": .unavailable
        default: nil
        }
    }
}
