import Foundation
import HearthAccess
import HearthCore
import HearthEngine
import HearthRealtimeClient
import HearthRules
@testable import HearthServer
import Testing

/// Replays the protocol transcripts in `Fixtures/wire` against a live server: frames sent by one or
/// more clients, and the exact frames each must receive next, in order.
///
/// A transcript is a JSON object: `emulator` (bool), optional `rules` and `data` set up before the
/// clients connect, and `steps`. Each step acts for a `client` (default `"a"`):
/// - `connect`: the request path (`/.ws?v=5&ns=…`, `${session:NAME}` for a captured session id);
///   the handshake is checked and its session id kept under `capture`, if given;
/// - `send`: a message (JSON) or a raw frame (a string, such as `"0"`);
/// - `receive`: the JSON the next message must equal (key order is free; `"<any>"`, `"<string>"` and
///   `"<number>"` match any value of that kind);
/// - `barrier`: a ping whose pong must be the next message — nothing else was queued before it;
/// - `close`: the client goes away;
/// - `rules`: new rules uploaded (as the admin would);
/// - `expectData`: `{"path": …, "value": …}` the stored data must equal (after writes settle).
/// Strings `${token:UID}` in sent messages become ID tokens signed by the server for that user
/// (`${expired:UID}`: one that expired an hour ago); `${secret:}` is the admin secret.
@Suite struct WireTranscriptTests {
    static let directory = Bundle.module.url(forResource: "Fixtures/wire", withExtension: nil)!

    static var names: [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.sorted()
    }

    @Test(arguments: names)
    func transcript(_ name: String) async throws {
        let text = try String(contentsOf: WireTranscriptTests.directory.appendingPathComponent(name), encoding: .utf8)
        let transcript = try JSONValue(parsing: text)
        let server = TestServer(emulator: transcript["emulator"] == .bool(true))
        try await server.runLive { client, port, registry in
            let database = try await registry.database("demo")
            if case .string(let rules)? = transcript["rules"] {
                try await database.replaceRules(try RulesDocument(source: rules))
            } else if let rules = transcript["rules"] {
                try await database.replaceRules(try RulesDocument(source: rules.jsonText))
            }
            if let data = transcript["data"] {
                _ = try await database.write(WriteRequest(.set(.root, data), identity: .admin))
            }
            var replay = Replay(port: port, server: server, database: database, file: name)
            guard case .array(let steps)? = transcript["steps"] else { throw TranscriptError("\(name): no steps") }
            for (index, step) in steps.enumerated() {
                try await replay.run(step, index: index)
            }
            for connection in replay.connections.values { await connection.close() }
        }
    }

    struct TranscriptError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    struct Replay {
        let port: Int
        let server: TestServer
        let database: DatabaseInstance
        let file: String
        var connections: [String: WireConnection] = [:]
        var sessions: [String: String] = [:]

        init(port: Int, server: TestServer, database: DatabaseInstance, file: String) {
            self.port = port
            self.server = server
            self.database = database
            self.file = file
        }

        mutating func run(_ step: JSONValue, index: Int) async throws {
            let where_ = "\(file) step \(index)"
            var name = "a"
            if case .string(let client)? = step["client"] { name = client }
            if case .string(let path)? = step["connect"] {
                let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: substitute(path))
                connections[name] = connection
                let handshake = try JSONValue(parsing: try #require(try await connection.nextMessage(), "\(where_): no handshake"))
                let expected = try JSONValue(parsing: #"{"t":"c","d":{"t":"h","d":{"ts":"<number>","v":"5","h":"<string>","s":"<string>"}}}"#)
                #expect(WireTranscriptTests.matches(handshake, expected), "\(where_): handshake \(handshake.jsonText)")
                if case .string(let capture)? = step["capture"], case .string(let id)? = handshake["d"]?["d"]?["s"] {
                    sessions[capture] = id
                }
                return
            }
            if let rules = step["rules"] {
                try await database.replaceRules(try RulesDocument(source: rules.jsonText))
                return
            }
            if let expectation = step["expectData"] {
                guard case .string(let path)? = expectation["path"], let value = expectation["value"] else {
                    throw TranscriptError("\(where_): expectData needs path and value")
                }
                let location = try DatabasePath(path)
                let wanted = try Node(json: value)
                try await eventually { database.snapshot().child(at: location) == wanted }
                #expect(database.snapshot().child(at: location) == wanted, "\(where_): data at \(path)")
                return
            }
            let connection = try #require(connections[name], "\(where_): client \(name) is not connected")
            if let message = step["send"] {
                if case .string(let raw) = message {
                    try await connection.sendFrame(raw)
                } else {
                    try await connection.send(substitute(message.jsonText))
                }
            } else if let expected = step["receive"] {
                let text = try await receive(connection, where_)
                let actual = try JSONValue(parsing: text)
                // The first difference ends the transcript: later steps would only repeat it.
                guard WireTranscriptTests.matches(actual, expected) else {
                    throw TranscriptError("\(where_): expected \(expected.jsonText), got \(text)")
                }
            } else if step["barrier"] != nil {
                try await connection.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
                let text = try await receive(connection, where_)
                guard text == #"{"t":"c","d":{"t":"o","d":null}}"# else {
                    throw TranscriptError("\(where_): expected nothing before the pong, got \(text)")
                }
            } else if step["close"] != nil {
                await connection.close()
                connections.removeValue(forKey: name)
            } else {
                throw TranscriptError("\(where_): unknown step \(step.jsonText)")
            }
        }

        func receive(_ connection: WireConnection, _ where_: String) async throws -> String {
            let text: String?
            do {
                text = try await connection.nextMessage()
            } catch let timeout as WireConnection.ReceiveTimeout {
                throw TranscriptError("\(where_): \(timeout)")
            }
            guard let text else { throw TranscriptError("\(where_): the server closed the connection") }
            return text
        }

        func substitute(_ text: String) throws -> String {
            var out = text
            while let range = out.range(of: "${") {
                guard let end = out[range.upperBound...].firstIndex(of: "}") else { break }
                let spec = out[range.upperBound..<end]
                let parts = spec.split(separator: ":", maxSplits: 1).map(String.init)
                let replacement: String
                switch parts.first {
                case "token": replacement = try server.tokens.mint(uid: parts[1], claims: [], expiresIn: 3600, now: server.wallDate)
                case "expired": replacement = try server.tokens.mint(uid: parts[1], claims: [], expiresIn: 60, now: server.wallDate - 7200)
                case "secret": replacement = TestServer.secret
                case "session": replacement = sessions[parts[1]] ?? ""
                default: throw TranscriptError("unknown placeholder \(spec)")
                }
                out.replaceSubrange(range.lowerBound...end, with: replacement)
            }
            return out
        }
    }

    /// JSON equality with object keys in any order and wildcard strings.
    static func matches(_ actual: JSONValue, _ expected: JSONValue) -> Bool {
        switch expected {
        case .string("<any>"): return true
        case .string("<string>"): if case .string = actual { return true } else { return false }
        case .string("<number>"): if case .number = actual { return true } else { return false }
        case .object(let wanted):
            guard case .object(let got) = actual, got.count == wanted.count else { return false }
            return wanted.allSatisfy { member in got.contains { $0.key == member.key && matches($0.value, member.value) } }
        case .array(let wanted):
            guard case .array(let got) = actual, got.count == wanted.count else { return false }
            return zip(got, wanted).allSatisfy { matches($0, $1) }
        default:
            return actual == expected
        }
    }
}
