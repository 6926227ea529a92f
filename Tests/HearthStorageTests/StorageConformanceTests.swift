import Foundation
import HearthCore
import HearthPostgres
import HearthSQLite
import HearthStorage
import Testing

/// One suite, every backend: what a backend stores must load back exactly, after a restart too.
@Suite struct StorageConformanceTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite
        /// Needs `HEARTH_TEST_POSTGRES_URL` (see ``PostgresTestServer``); each test gets its own database.
        case postgres
        var testDescription: String { rawValue }

        /// The backends the tests run on: PostgreSQL only where a server is given, or in CI (where a
        /// missing server fails). Elsewhere ``postgresBackendIsReachable()`` reports the skip.
        static let tested: [Backend] = allCases.filter { $0 != .postgres || PostgresTestServer.shouldRun }
    }

    /// A backend under test. `reopen()` simulates a restart (a new process for SQLite, a new node on the
    /// same database for PostgreSQL).
    final class Harness {
        let backend: Backend
        let directory: URL
        /// PostgreSQL: the test's own database.
        let postgres: (url: String, name: String)?
        var storage: (any DatabaseStorage)?

        init(_ backend: Backend) async throws {
            self.backend = backend
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-conformance-\(UUID().uuidString)")
            postgres = backend == .postgres ? try await PostgresTestServer.freshDatabase() : nil
            storage = try await Harness.make(backend, directory, postgres?.url)
        }

        static func make(_ backend: Backend, _ directory: URL, _ url: String?) async throws -> any DatabaseStorage {
            switch backend {
            case .memory: InMemoryStorage()
            case .sqlite: try SQLiteStorage(directory: directory)
            case .postgres: try await PostgresStorage.connect(url: url!, nodeName: "conformance", connectionWait: PostgresTestServer.connectionWait)
            }
        }

        func namespace(_ name: String = "test") async throws -> any NamespaceStorage {
            try await storage!.open(namespace: name)
        }

        func reopen() async throws {
            switch backend {
            case .memory: break
            case .sqlite:
                (storage as? SQLiteStorage)?.releaseLock()
                storage = nil
                storage = try await Harness.make(backend, directory, nil)
            case .postgres:
                await (storage as? PostgresStorage)?.shutdown()
                storage = nil
                storage = try await Harness.make(backend, directory, postgres?.url)
            }
        }

        deinit {
            try? FileManager.default.removeItem(at: directory)
            if let storage = storage as? PostgresStorage, let name = postgres?.name {
                Task {
                    await storage.shutdown()
                    await PostgresTestServer.drop(name)
                }
            }
        }
    }

    func node(_ json: String) throws -> Node {
        try Node(json: try JSONValue(parsing: json))
    }

    func path(_ string: String) throws -> DatabasePath {
        try DatabasePath(string)
    }

    /// Shows as skipped, with how to run them, where the PostgreSQL cases are left out.
    @Test(.enabled(if: PostgresTestServer.shouldRun, Comment(rawValue: PostgresTestServer.missingMessage)))
    func postgresBackendIsReachable() async throws {
        let harness = try await Harness(.postgres)
        #expect(try await harness.storage!.namespaces().isEmpty)
    }

    @Test(arguments: Backend.tested)
    func emptyDatabaseLoadsEmpty(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        let loaded = try await harness.namespace().load()
        #expect(loaded.root.isEmpty)
        #expect(loaded.rulesSource == nil)
    }

    @Test(arguments: Backend.tested)
    func treesWithPrioritiesSurviveARestart(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        let tree = try node(
            #"""
            {"users": {"ada": {"name": "Ada", "born": 1815, ".priority": 3},
                       "é": {".value": true, ".priority": "p"}},
             "a b": {"x": 1}, "a-b": {"x": 2}, "a!": [1, 2, 3], "ab": "prefix sibling",
             "deep": {"l1": {"l2": {"l3": {"l4": "bottom"}}}}, "s": "\u0000\u001f😀", "n": -0.5}
            """#
        )
        try await harness.namespace().commit([.replace(.root, tree)])
        try await harness.reopen()
        let loaded = try await harness.namespace().load().root
        #expect(loaded == tree)
        #expect(loaded.jsonString(format: .export) == tree.jsonString(format: .export))
    }

    @Test(arguments: Backend.tested)
    func aLeafAtTheRootRoundTrips(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.namespace().commit([.replace(.root, .leaf(.string("just a string"), priority: .number(1)))])
        try await harness.reopen()
        #expect(try await harness.namespace().load().root == .leaf(.string("just a string"), priority: .number(1)))
    }

    @Test(arguments: Backend.tested)
    func theRootTurnsFromALeafToAnObjectAndBack(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.namespace().commit([.replace(.root, .leaf(.number(1)))])
        try await harness.namespace().commit([.replace(.root, try node(#"{"a": 1}"#))])
        try await harness.reopen()
        #expect(try await harness.namespace().load().root == (try node(#"{"a": 1}"#)))
        try await harness.namespace().commit([.replace(.root, .leaf(.string("")))])
        try await harness.reopen()
        #expect(try await harness.namespace().load().root == .leaf(.string("")))
        try await harness.namespace().commit([.replace(.root, .empty)])
        try await harness.reopen()
        #expect(try await harness.namespace().load().root == .empty)
    }

    @Test(arguments: Backend.tested)
    func subtreeReplaceLeavesSiblingsWithPrefixNamesAlone(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        let db = try await harness.namespace()
        try await db.commit([.replace(.root, try node(#"{"a": {"x": 1, "y": {"z": 2}}, "a b": 1, "ab": 2, "a!": 3}"#))])
        try await db.commit([.replace(try path("/a"), try node(#"{"new": true}"#))])
        try await db.commit([.replace(try path("/ab"), .empty)])
        try await harness.reopen()
        let loaded = try await harness.namespace().load().root
        #expect(loaded.jsonString() == #"{"a":{"new":true},"a b":1,"a!":3}"#)
    }

    @Test(arguments: Backend.tested)
    func aLeafThatGainsChildrenKeepsItsPriority(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        let db = try await harness.namespace()
        try await db.commit([.replace(try path("/a"), .leaf(.number(1), priority: .string("keep")))])
        try await db.commit([.removeLeafValue(try path("/a")), .replace(try path("/a/b"), .leaf(.bool(true)))])
        try await harness.reopen()
        let loaded = try await harness.namespace().load().root
        #expect(loaded.jsonString(format: .export) == #"{"a":{"b":true,".priority":"keep"}}"#)
    }

    @Test(arguments: Backend.tested)
    func prioritiesCanBeSetAndCleared(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        let db = try await harness.namespace()
        try await db.commit([.replace(try path("/a"), try node(#"{"b": 1}"#)), .setPriority(try path("/a"), .number(7))])
        try await harness.reopen()
        #expect(try await harness.namespace().load().root.child(at: try path("/a")).priority == .number(7))
        try await harness.namespace().commit([.setPriority(try path("/a"), nil)])
        try await harness.reopen()
        #expect(try await harness.namespace().load().root.child(at: try path("/a")).priority == nil)
    }

    @Test(arguments: Backend.tested)
    func rulesAreStored(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.namespace().saveRules("{ /* comment */ \"rules\": {} }", time: 5)
        try await harness.reopen()
        #expect(try await harness.namespace().load().rulesSource == "{ /* comment */ \"rules\": {} }")
    }

    @Test(arguments: Backend.tested)
    func everySavedRulesVersionIsKeptNewestFirstUpToTheLimit(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        #expect(try await harness.namespace().rulesHistory(limit: 10).isEmpty)
        for number in 1...(RulesVersion.kept + 3) {
            try await harness.namespace().saveRules("{\"rules\": {\".read\": \(number % 2 == 0)}} // \(number)", time: Int64(number))
        }
        try await harness.reopen()
        let history = try await harness.namespace().rulesHistory(limit: 1000)
        #expect(history.count == RulesVersion.kept)
        #expect(history.first?.time == Int64(RulesVersion.kept + 3))
        #expect(history.first?.source.hasSuffix("// \(RulesVersion.kept + 3)") == true)
        #expect(history.last?.time == 4)
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.version > $1.version })
        #expect(try await harness.namespace().rulesHistory(limit: 2).map(\.time) == [Int64(RulesVersion.kept + 3), Int64(RulesVersion.kept + 2)])
        #expect(try await harness.namespace().load().rulesSource == history.first?.source)
    }

    @Test(arguments: Backend.tested)
    func containsTellsWithoutCreating(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        #expect(try await harness.storage!.contains(namespace: "later") == false)
        #expect(try await harness.storage!.namespaces().isEmpty)
        try await harness.namespace("later").commit([.replace(.root, .leaf(.number(1)))])
        try await harness.reopen()
        #expect(try await harness.storage!.contains(namespace: "later"))
        #expect(try await harness.storage!.contains(namespace: "not valid!") == false)
    }

    @Test(arguments: Backend.tested)
    func namespacesAreIndependent(_ backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.namespace("one").commit([.replace(.root, .leaf(.number(1)))])
        try await harness.namespace("two").commit([.replace(.root, .leaf(.number(2)))])
        try await harness.reopen()
        #expect(try await harness.namespace("one").load().root == .leaf(.number(1)))
        #expect(try await harness.namespace("two").load().root == .leaf(.number(2)))
        #expect(try await harness.storage!.namespaces() == ["one", "two"])
        await #expect(throws: DatabaseStorageError.self) { try await harness.storage!.open(namespace: "../escape") }
    }

    @Test(arguments: Backend.tested)
    func manySequentialCommitsMatchTheEngineTree(_ backend: Backend) async throws {
        // Random writes applied to a tree and, as planned mutations, to storage must agree.
        let harness = try await Harness(backend)
        let db = try await harness.namespace()
        var expected = Node.empty
        var random = SplitMix(seed: 42)
        let keys = ["a", "b", "c", "1", "10", "a b"]
        for _ in 0..<300 {
            let depth = Int(random.next() % 3) + 1
            let target = DatabasePath(keys: (0..<depth).map { _ in Key(keys[Int(random.next() % UInt64(keys.count))]) })
            let value: Node
            switch random.next() % 4 {
            case 0: value = .empty
            case 1: value = .leaf(.number(Double(random.next() % 100)))
            case 2: value = try node(#"{"x": {"y": 1}, "z": "s"}"#)
            default: value = .leaf(.string("v"), priority: .number(1))
            }
            let after = expected.setting(value, at: target)
            let mutations = StorageMutation.plan(before: expected, after: after, path: target, node: value)
            expected = after
            try await db.commit(mutations)
        }
        try await harness.reopen()
        let loaded = try await harness.namespace().load().root
        #expect(loaded.jsonString(format: .export) == expected.jsonString(format: .export))
    }
}

/// A small deterministic generator for reproducible random tests.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
