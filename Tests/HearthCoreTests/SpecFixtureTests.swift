import Foundation
import HashTreeCollections
import HearthCore
import Testing

/// Replays the JSON spec fixtures in `Fixtures/`: named scenarios with their expected orders and results.
@Suite struct SpecFixtureTests {
    static func fixture(_ name: String) throws -> JSONValue {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return try JSONValue(parsing: Array(try Data(contentsOf: url)))
    }

    static func scenarios(_ file: String, _ group: String? = nil) -> [JSONValue] {
        guard let document = try? fixture(file) else { return [] }
        let list = group.flatMap { document[$0] } ?? document
        guard case .array(let items) = list else { return [] }
        return items
    }

    static func name(_ scenario: JSONValue) -> String {
        if case .string(let s)? = scenario["name"] { return s }
        return "?"
    }

    @Test func fixturesArePresent() throws {
        #expect(Self.scenarios("queries").count >= 60)
        #expect(Self.scenarios("ordering", "keyOrder").count > 5)
        #expect(Self.scenarios("ordering", "valueOrder").count > 3)
        #expect(Self.scenarios("ordering", "priorityOrder").count > 2)
    }

    @Test(arguments: scenarios("ordering", "keyOrder"))
    func keyOrder(_ scenario: JSONValue) throws {
        guard case .array(let items)? = scenario["sorted"] else { Issue.record("no sorted list"); return }
        let keys = items.compactMap { item -> Key? in
            if case .string(let s) = item { return Key(s) }
            return nil
        }
        for (a, b) in zip(keys, keys.dropFirst()) {
            #expect(Key.compare(a, b) < 0, "\(Self.name(scenario)): \(a) should sort before \(b)")
            #expect(Key.compare(b, a) > 0)
        }
        #expect(keys.shuffled().sorted() == keys, "\(Self.name(scenario))")
    }

    @Test(arguments: scenarios("ordering", "valueOrder"))
    func valueOrder(_ scenario: JSONValue) throws {
        guard case .array(let items)? = scenario["sorted"] else { Issue.record("no sorted list"); return }
        let nodes = try items.map { try Node(json: $0) }
        for (a, b) in zip(nodes, nodes.dropFirst()) {
            #expect(Node.compareValues(a, b) < 0, "\(Self.name(scenario)): \(a.jsonString()) before \(b.jsonString())")
            #expect(Node.compareValues(b, a) > 0)
        }
    }

    @Test(arguments: scenarios("ordering", "priorityOrder"))
    func priorityOrder(_ scenario: JSONValue) throws {
        guard case .array(let items)? = scenario["sorted"] else { Issue.record("no sorted list"); return }
        var data: [(key: String, value: JSONValue)] = []
        var expected: [String] = []
        for item in items {
            guard case .string(let key)? = item["key"] else { continue }
            expected.append(key)
            data.append((key, .object([(".value", .bool(true)), (".priority", item["priority"] ?? .null)])))
        }
        let node = try Node(json: .object(data))
        let window = Query(index: .priority).window(over: node).map(\.key.string)
        #expect(window == expected, "\(Self.name(scenario))")
    }

    @Test(arguments: scenarios("queries"))
    func query(_ scenario: JSONValue) throws {
        let data = try Node(json: try #require(scenario["data"]))
        let query = try Self.query(from: try #require(scenario["query"]))
        guard case .array(let expectedJSON)? = scenario["expectedKeys"] else { Issue.record("no expectedKeys"); return }
        let expected = expectedJSON.compactMap { value -> String? in
            if case .string(let s) = value { return s }
            return nil
        }
        let keys = query.window(over: data).map(\.key.string)
        #expect(keys == expected, "\(Self.name(scenario))")
        // The node form holds the same children.
        #expect(Set(query.evaluate(on: data).childEntries.keys.map(\.string)) == Set(expected))
    }

    static func query(from json: JSONValue) throws -> Query {
        var query = Query()
        switch json["orderBy"] {
        case .string("$key")?: query.index = .key
        case .string("$value")?: query.index = .value
        case .string("$priority")?: query.index = .priority
        case .string(let path)?: query.index = .child(try DatabasePath(path))
        default: break
        }
        func bound(_ name: String, inclusive: Bool) throws -> Query.Bound? {
            guard let spec = json[name] else { return nil }
            let value = try Node(json: spec["value"] ?? .null)
            var boundName: Query.BoundName?
            if case .string(let key)? = spec["key"] { boundName = Query.BoundName(key) }
            return Query.Bound(value: value, name: boundName, inclusive: inclusive)
        }
        query.start = try bound("startAt", inclusive: true) ?? bound("startAfter", inclusive: false)
        query.end = try bound("endAt", inclusive: true) ?? bound("endBefore", inclusive: false)
        if let equal = try bound("equalTo", inclusive: true) {
            query.start = equal
            query.end = equal
        }
        if case .number(let n)? = json["limitToFirst"] { query.limit = .first(Int(n)) }
        if case .number(let n)? = json["limitToLast"] { query.limit = .last(Int(n)) }
        return query
    }
}

extension JSONValue: CustomTestStringConvertible {
    public var testDescription: String {
        if case .string(let name)? = self["name"] { return name }
        return jsonText
    }
}
