import Foundation
@testable import Hearth
import HearthCore
import Testing

/// Foundation values in and out, as FirebaseDatabase users pass and read them.
@Suite struct FoundationValueTests {
    @Test func booleansStayBooleansAndNumbersStayNumbers() throws {
        #expect(try FoundationValue.json(from: true) == .bool(true))
        #expect(try FoundationValue.json(from: NSNumber(value: false)) == .bool(false))
        #expect(try FoundationValue.json(from: 1) == .number(1))
        #expect(try FoundationValue.json(from: NSNumber(value: 1)) == .number(1))
        #expect(try FoundationValue.json(from: 2.5) == .number(2.5))
        #expect(try FoundationValue.json(from: Int64(1) << 40) == .number(Double(Int64(1) << 40)))
        #expect(try FoundationValue.json(from: NSNull()) == .null)
        #expect(try FoundationValue.json(from: nil) == .null)
        #expect(throws: DatabaseError.self) { try FoundationValue.json(from: Double.nan) }
        #expect(throws: DatabaseError.self) { try FoundationValue.json(from: Date()) }
    }

    @Test func containersConvertBothWays() throws {
        let json = try FoundationValue.json(from: ["name": "Ada", "tags": ["x", "y"], "ok": true, "n": 3] as [String: Any])
        let node = try Node(json: json)
        let value = try #require(FoundationValue.value(of: node) as? [String: Any])
        #expect(value["name"] as? String == "Ada")
        #expect(value["tags"] as? [String] == ["x", "y"])
        #expect(value["ok"] as? Bool == true)
        #expect(value["n"] as? Int == 3)
        #expect(value["n"] as? Double == 3)
        // Sparse integer keys are a dictionary, dense ones an array with nulls.
        let sparse = try Node(json: try JSONValue(parsing: #"{"1": "a", "9": "b"}"#))
        #expect(FoundationValue.value(of: sparse) is [String: Any])
        let dense = try Node(json: try JSONValue(parsing: #"{"1": "a", "2": "b"}"#))
        let array = try #require(FoundationValue.value(of: dense) as? [Any])
        #expect(array.count == 3 && array[0] is NSNull && array[2] as? String == "b")
        #expect(FoundationValue.value(of: .empty) == nil)
    }

    @Test func nullsInsideContainersAndNumbersTheWayTheyCome() throws {
        // NSNull and NSNumber are recognized by type, not by a cast that bridges a container to ask.
        let json = try FoundationValue.json(from: [
            "gone": NSNull(), "list": [1, NSNull(), "b"] as [Any], "count": NSNumber(value: 7), "flag": NSNumber(value: true),
            "nested": ["deep": NSNull()] as [String: Any],
        ] as [String: Any])
        let node = try Node(json: json)
        #expect(node.child(Key("gone")).isEmpty && node.child(Key("nested")).isEmpty)
        #expect(node.child(Key("count")) == .leaf(.number(7)) && node.child(Key("flag")) == .leaf(.bool(true)))
        let third = try DatabasePath("list/2")
        #expect(node.child(Key("list")).childCount == 2 && node.child(at: third) == .leaf(.string("b")))
        let many = Dictionary(uniqueKeysWithValues: (0..<1000).map { ("k\($0)", $0 as Any) })
        let members = try Node(json: try FoundationValue.json(from: many))
        #expect(members.childCount == 1000 && members.child(Key("k999")) == .leaf(.number(999)))
        #expect(try Database.Decoder().decode(Int?.self, from: NSNull()) == nil)
    }

    @Test func prioritiesExportAsFirebaseDoes() throws {
        let node = try Node(json: try JSONValue(parsing: #"{"a": {".value": 1, ".priority": "p"}, ".priority": 2}"#))
        let exported = try #require(FoundationValue.exportValue(of: node) as? [String: Any])
        #expect(exported[".priority"] as? Int == 2)
        let child = try #require(exported["a"] as? [String: Any])
        #expect(child[".value"] as? Int == 1 && child[".priority"] as? String == "p")
        #expect(try FoundationValue.priorityJSON("x") == .string("x"))
        #expect(throws: DatabaseError.self) { try FoundationValue.priorityJSON(true) }
    }

    @Test func updateKeysAreValidatedAndMayNotOverlap() throws {
        let children = try DatabaseReference.updateChildren(["b/c": 1, "a": 2])
        #expect(children.map(\.path.description) == ["/a", "/b/c"])
        #expect(throws: DatabaseError.self) { try DatabaseReference.updateChildren(["a": 1, "a/b": 2]) }
        #expect(throws: DatabaseError.self) { try DatabaseReference.updateChildren(["a.b": 1]) }
    }

    @Test func databaseURLsParseAsTheOfficialSDKsDo() throws {
        let hosted = try RepoInfo(url: "https://demo-proj-default-rtdb.firebaseio.com")
        #expect(hosted.namespace == "demo-proj-default-rtdb" && hosted.secure && hosted.port == 443)
        let local = try RepoInfo(url: "http://127.0.0.1:9000?ns=demo")
        #expect(local.namespace == "demo" && !local.secure && local.port == 9000 && local.host == "127.0.0.1")
        #expect(local.namespaceQuery == "?ns=demo")
        #expect(throws: DatabaseError.self) { try RepoInfo(url: "not a url") }
    }
}
