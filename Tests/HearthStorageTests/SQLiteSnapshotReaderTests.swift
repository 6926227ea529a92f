import Foundation
import HearthCore
@testable import HearthSQLite
import HearthStorage
import Testing

/// A database read from its file on demand (while it loads after a start) must answer exactly as the
/// loaded tree does, at every path and for every query, and must keep showing the version it opened
/// while writes go on.
@Suite struct SQLiteSnapshotReaderTests {
    /// A tree with big and small nodes, priorities on leaves and inner nodes, integer-like keys, keys
    /// that are prefixes of others (`a`, `ab`) and non-ASCII keys.
    static let document = #"""
        {
          "users": {
            "u1": {"name": "Ada", "age": 36, "tags": {"math": true, "poetry": true}, ".priority": 2},
            "u10": {"name": "Grace", "age": 85, "tags": {"navy": true}},
            "u2": {"name": "Alan", "age": 41, ".priority": "b"},
            "2": {"name": "Two", "age": 2},
            "10": {"name": "Ten", "age": 10},
            "é": {"name": "Accent", "age": 1},
            "ab": {"name": "AB", "age": 7, "nested": {"deeper": {"deepest": [1, 2, 3]}}},
            "a": {".value": "just a leaf", ".priority": 1}
          },
          "config": {"open": true, "motto": "hello"},
          "counter": 5,
          ".priority": 9
        }
        """#

    func makeStorage() async throws -> (SQLiteStorage, SQLiteNamespaceStorage, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-snapshot-\(UUID().uuidString)")
        let storage = try SQLiteStorage(directory: directory)
        let db = try storage.openNamespace("warm")
        let node = try Node(json: try JSONValue(parsing: Self.document))
        try await db.commit([.replace(.root, node)])
        return (storage, db, directory)
    }

    /// Every path of `node`, depth first.
    func paths(of node: Node, at path: DatabasePath = .root) -> [DatabasePath] {
        [path] + node.childEntries.flatMap { paths(of: $0.value, at: path.child($0.key)) }
    }

    @Test(arguments: [1, 2, 3, 5, 1000])
    func answersLikeTheLoadedTree(wholeNodeRows: Int) async throws {
        let (storage, db, directory) = try await makeStorage()
        defer { try? FileManager.default.removeItem(at: directory) }
        let loaded = try await db.load().root
        let reader = try SQLiteSnapshotReader(file: storage.file(of: "warm"), wholeNodeRows: wholeNodeRows)
        let lazy = reader.node(at: .root)
        #expect(lazy.childEntries.isStored == (wholeNodeRows < 1000))
        #expect(lazy == loaded)
        #expect(lazy.hash == loaded.hash)
        #expect(lazy.jsonString(format: .export) == loaded.jsonString(format: .export))
        for path in paths(of: loaded) {
            let expected = loaded.child(at: path)
            let actual = lazy.child(at: path)
            #expect(actual == expected, "\(path)")
            #expect(actual.childCount == expected.childCount, "\(path)")
            #expect(actual.priority == expected.priority, "\(path)")
            #expect(actual.sortedChildren.map(\.key) == expected.sortedChildren.map(\.key), "\(path)")
            #expect(actual.shallow() == expected.shallow(), "\(path)")
        }
        #expect(lazy.child(at: try DatabasePath("/users/nobody")) == .empty)
        #expect(lazy.child(at: try DatabasePath("/counter/below")) == .empty)
        let queries = [
            Query(index: .child(try DatabasePath("age")), limit: .first(3)),
            Query(index: .child(try DatabasePath("age")), limit: .last(2)),
            Query(index: .key, limit: .first(4)),
            Query(index: .priority),
            Query(index: .value),
        ]
        let users = try DatabasePath("/users")
        for query in queries {
            #expect(query.window(over: lazy.child(at: users)).map(\.key) == query.window(over: loaded.child(at: users)).map(\.key))
            #expect(query.evaluate(on: lazy.child(at: users)) == query.evaluate(on: loaded.child(at: users)))
        }
    }

    @Test func keepsShowingTheVersionItOpenedWhileWritesGoOn() async throws {
        let (storage, db, directory) = try await makeStorage()
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try await db.load().root
        let reader = try SQLiteSnapshotReader(file: storage.file(of: "warm"), wholeNodeRows: 2)
        let lazy = reader.node(at: .root)
        try await db.commit([
            .replace(try DatabasePath("/users/u1/name"), .leaf(.string("Changed"))),
            .replace(try DatabasePath("/users/new"), .leaf(.number(1))),
            .replace(try DatabasePath("/config"), .empty),
        ])
        #expect(try await db.load().root != before)
        #expect(lazy == before)
        #expect(lazy.child(at: try DatabasePath("/users/u1/name")) == .leaf(.string("Ada")))
        #expect(lazy.child(at: try DatabasePath("/users")).childCount == 8)
        // A reader opened now sees the writes.
        let later = try SQLiteSnapshotReader(file: storage.file(of: "warm"), wholeNodeRows: 2).node(at: .root)
        #expect(later == (try await db.load().root))
    }

    @Test func warmStartIsOfferedOnlyFromTheThreshold() async throws {
        let (_, db, directory) = try await makeStorage()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try await db.warmStart(minimumBytes: 1 << 40) == nil)
        let warm = try #require(try await db.warmStart(minimumBytes: 0))
        #expect(warm.root == (try await db.load().root))
    }
}
