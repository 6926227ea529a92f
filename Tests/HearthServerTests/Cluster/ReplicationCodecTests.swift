import HearthAccess
@testable import HearthCluster
import HearthCore
import HearthEngine
@testable import HearthServer
import Testing

/// The log entries and forwarded writes nodes exchange: what one node writes, another reads back exactly.
struct ReplicationCodecTests {
    func node(_ json: String) throws -> Node { try Node(json: try JSONValue(parsing: json)) }

    @Test func logEntriesRoundTripWithPrioritiesAndOddKeys() throws {
        let writes: [ReplicatedEntry.Write] = [
            .init(path: DatabasePath(keys: [Key("users"), Key("a b é")]), written: .node(try node(#"{"n": 1, ".priority": "p", "x": {".value": true, ".priority": 2}}"#))),
            .init(path: .root, written: .update([(DatabasePath(keys: [Key("a"), Key("b")]), .empty), (DatabasePath(keys: [Key("c")]), .leaf(.string("\u{0}\"")))])),
            .init(path: DatabasePath(keys: [Key("gone")]), written: .node(.empty)),
        ]
        let payload = ReplicatedEntry.changes(writes).payload
        guard case .changes(let decoded) = try ReplicatedEntry(payload: payload) else {
            Issue.record("not decoded as changes")
            return
        }
        #expect(decoded.count == 3)
        var viaOriginal = try node(#"{"gone": 1, "a": {"b": 1, "k": 2}}"#)
        var viaDecoded = viaOriginal
        for write in writes { viaOriginal = write.applied(to: viaOriginal) }
        for write in decoded { viaDecoded = write.applied(to: viaDecoded) }
        #expect(viaDecoded == viaOriginal)
        #expect(viaDecoded.jsonString(format: .export) == viaOriginal.jsonString(format: .export))
        #expect(try ReplicatedEntry(payload: ReplicatedEntry.rules.payload).isRules)
    }

    @Test func unknownOrDamagedEntriesAreRefused() {
        for payload in ["", "[]", #"{"x":1}"#, #"{"c":[{"p":"a","n":1}]}"#, #"{"c":[{"p":[1],"n":1}]}"#] {
            #expect(throws: ReplicationError.self) { try ReplicatedEntry(payload: payload) }
        }
    }

    @Test func forwardedRequestsKeepEveryField() throws {
        let path = DatabasePath(keys: [Key("rooms"), Key("r1")])
        var cas = WriteRequest(.set(path, .object([("n", .number(1))])), identity: .user(.object([("uid", .string("u1"))])))
        cas.ifMatch = "etag-1"
        cas.maximumLeaves = 1000
        var hashed = WriteRequest(.update(path, [(DatabasePath(keys: [Key("a")]), .null)]), identity: .anonymous)
        hashed.expectedHash = "hash="
        let priority = WriteRequest(.setPriority(path, .string("p")), identity: .admin)
        let decoded = try ForwardedWrites.decodeRequests(ForwardedWrites.encode([cas, hashed, priority]))
        #expect(decoded.count == 3)
        #expect(decoded[0].ifMatch == "etag-1" && decoded[0].maximumLeaves == 1000 && decoded[0].identity == cas.identity)
        #expect(decoded[0].path == path)
        #expect(decoded[1].expectedHash == "hash=" && decoded[1].identity == .anonymous)
        if case .update(_, let items) = decoded[1].operation { #expect(items.count == 1 && items[0].value == .null) } else { Issue.record("not an update") }
        if case .setPriority(_, let value) = decoded[2].operation { #expect(value == .string("p")) } else { Issue.record("not a priority") }
        #expect(decoded[2].identity == .admin)
    }

    @Test func outcomesComeBackAsTheOwnerDecided() throws {
        let value = try node(#"{"a": 1}"#)
        let text = ForwardedWrites.encode(
            [
                .success(.written(value: value, written: .node(value))),
                .success(.written(value: value, written: .update([(DatabasePath(keys: [Key("a")]), .leaf(.number(1)))]))),
                .success(.preconditionFailed(current: .leaf(.number(7)))),
                .failure(WriteError(.permissionDenied, "Permission denied")),
            ],
            sequence: 42
        )
        let (outcomes, sequence) = try ForwardedWrites.decodeOutcomes(text)
        #expect(sequence == 42)
        #expect(outcomes.count == 4)
        if case .success(.written(let v, .node(let n))) = outcomes[0] { #expect(v == value && n == value) } else { Issue.record("0") }
        if case .success(.written(_, .update(let items))) = outcomes[1] { #expect(items.count == 1) } else { Issue.record("1") }
        if case .success(.preconditionFailed(let current)) = outcomes[2] { #expect(current == .leaf(.number(7))) } else { Issue.record("2") }
        if case .failure(let error) = outcomes[3] { #expect(error.code == .permissionDenied) } else { Issue.record("3") }
    }

    @Test func rendezvousHashingIsStableAndSpreadsDatabases() {
        let nodes = ["node1", "node2", "node3"]
        var owned: [String: Int] = [:]
        for index in 0..<300 {
            let owner = RendezvousHash.preferred(for: "db\(index)", among: nodes)!
            #expect(RendezvousHash.preferred(for: "db\(index)", among: nodes.reversed()) == owner)
            owned[owner, default: 0] += 1
            // A node leaving moves only its own databases.
            let survivors = nodes.filter { $0 != "node3" }
            if owner != "node3" { #expect(RendezvousHash.preferred(for: "db\(index)", among: survivors) == owner) }
        }
        #expect(owned.count == 3)
        #expect(owned.values.allSatisfy { $0 > 60 })
    }
}

extension ReplicatedEntry {
    var isRules: Bool {
        if case .rules = self { return true }
        return false
    }
}
