import HashTreeCollections
@testable import HearthCore
import Testing

/// `ChildMap` packs small maps into bytes and keeps large ones as hash trees; whichever it holds, it
/// must behave exactly like a dictionary. A model test runs random operations on both.
@Suite struct ChildMapTests {
    /// Keys of every kind the ordering distinguishes: integer-like, padded, negative, ASCII, non-ASCII,
    /// and one longer than 255 bytes (a three-byte length in the packed form).
    static let keys: [Key] = [
        "0", "1", "2", "10", "-3", "007", "a", "b", "ab", "name", "é", "e\u{301}", "😀", "\u{E000}",
        String(repeating: "k", count: 300),
    ].map { Key($0) } + (0..<40).map { Key("k\($0)") }

    static func randomValue(_ generator: inout QueryWindowTests.SeededGenerator) -> Node {
        switch Int.random(in: 0..<11, using: &generator) {
        case 9:
            // A record inside a record inside a record, with nodes kept beside the bytes at each level.
            .children(Node.Children(entries: [
                Key("p"): .leaf(.string("with priority"), priority: .number(Double(Int.random(in: 0..<3, using: &generator)))),
                Key("inner"): .children(Node.Children(entries: [
                    Key("deep"): .leaf(.number(1), priority: .string("q")),
                    Key("plain"): .leaf(.bool(Bool.random(using: &generator))),
                ])),
            ]))
        case 10:
            .children(Node.Children(entries: [Key("n"): .children(Node.Children(entries: [Key("m"): .leaf(.string("x"))]))], priority: .number(1)))
        case 0: .leaf(.bool(Bool.random(using: &generator)))
        case 1: .leaf(.number(Double(Int.random(in: -5..<5, using: &generator)) / 4))
        case 2: .leaf(.number(-0.0))
        case 3: .leaf(.string(""))
        case 4: .leaf(.string(String(repeating: "é", count: Int.random(in: 1..<200, using: &generator))))
        case 5: .leaf(.string(String(repeating: "x", count: 300)))  // too long to inline
        case 6: .leaf(.number(1), priority: .string("p"))  // a priority: kept as a node
        case 7: .children(Node.Children(entries: [Key("x"): .leaf(.number(Double(Int.random(in: 0..<3, using: &generator))))]))
        default: .leaf(.string("s\(Int.random(in: 0..<5, using: &generator))"))
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func behavesLikeADictionary(seed: UInt64) {
        var generator = QueryWindowTests.SeededGenerator(seed: seed)
        var map = ChildMap()
        var model: [Key: Node] = [:]
        var snapshots: [(ChildMap, [Key: Node])] = []
        for step in 0..<3000 {
            let key = Self.keys.randomElement(using: &generator)!
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                let value = Self.randomValue(&generator)
                map[key] = value
                model[key] = value
            case 6..<9:
                #expect(map.removeValue(forKey: key) == model.removeValue(forKey: key))
            default:
                // Bulk construction from the model's entries plus a duplicate that must win.
                var entries = model.map { (key: $0.key, value: $0.value) }
                let value = Self.randomValue(&generator)
                entries.insert((key: key, value: .leaf(.string("loses"))), at: 0)
                entries.append((key: key, value: value))
                model[key] = value
                map = ChildMap(entries: entries)
            }
            #expect(map.count == model.count, "step \(step)")
            #expect(map[key] == model[key], "step \(step)")
            if step % 97 == 0 { snapshots.append((map, model)) }
        }
        // Every snapshot still holds what it held (values, not references, are shared).
        for (snapshot, expected) in snapshots {
            #expect(snapshot.count == expected.count)
            var seen: [Key: Node] = [:]
            for (key, value) in snapshot { seen[key] = value }
            #expect(seen == expected)
            #expect(snapshot.sortedByKey.map(\.key) == expected.keys.sorted { Key.compare($0, $1) < 0 })
            for key in Self.keys { #expect(snapshot[key] == expected[key]) }
            #expect(snapshot == ChildMap(entries: expected.map { (key: $0.key, value: $0.value) }))
            #expect(snapshot.keys == ChildMap(entries: expected.map { (key: $0.key, value: .empty) }).keys)
        }
    }

    /// One stored version of a map's children, in memory: what a snapshot reader gives for one node.
    struct FixedSource: StoredTreeSource {
        let children: [Key: Node]
        let path: DatabasePath
        var ordered: [Key] { children.keys.sorted { $0.string < $1.string } }

        func node(at path: DatabasePath) -> Node {
            guard path.parent == self.path, let key = path.last else { return .empty }
            return children[key] ?? .empty
        }

        func children(of path: DatabasePath, after: Key?, limit: Int) -> [(key: Key, value: Node)] {
            ordered.filter { after == nil || $0.string > after!.string }.prefix(limit).map { (key: $0, value: children[$0]!) }
        }

        func childCount(of path: DatabasePath, atMost limit: Int) -> Int { min(children.count, limit) }
    }

    /// Changes to children that stay in storage are kept beside them (decision 3 of
    /// docs/decisions/0012-compact-tree-and-warm-start.md): every version behaves like a dictionary,
    /// and versions over one stored map compare by their changes.
    @Test(arguments: [1, 2, 3, 4])
    func storedMapsWithChangesBehaveLikeADictionary(seed: UInt64) throws {
        var generator = QueryWindowTests.SeededGenerator(seed: seed)
        var base: [Key: Node] = [:]
        // More than a page of stored children, so iteration crosses pages.
        for index in 0..<300 { base[Key("s\(index)")] = Self.randomValue(&generator) }
        for key in Self.keys.prefix(20) { base[key] = Self.randomValue(&generator) }
        let path = try DatabasePath("/big")
        let stored = StoredChildren(source: FixedSource(children: base, path: path), path: path)
        let keys = Self.keys + base.keys.shuffled(using: &generator).prefix(30)
        var map = ChildMap(stored: stored)
        var model = base
        var snapshots: [(ChildMap, [Key: Node])] = [(map, model)]
        for step in 0..<1500 {
            let key = keys.randomElement(using: &generator)!
            if Int.random(in: 0..<10, using: &generator) < 6 {
                let value = Self.randomValue(&generator)
                map[key] = value
                model[key] = value
            } else {
                #expect(map.removeValue(forKey: key) == model.removeValue(forKey: key), "step \(step)")
            }
            #expect(map.isStored)
            #expect(map.isEmpty == model.isEmpty, "step \(step)")
            #expect(map.count == model.count, "step \(step)")
            #expect(map[key] == model[key], "step \(step)")
            if step % 101 == 0 { snapshots.append((map, model)) }
        }
        for (snapshot, expected) in snapshots {
            var seen: [Key: Node] = [:]
            var visits = 0
            for (key, value) in snapshot {
                seen[key] = value
                visits += 1
            }
            #expect(seen == expected)
            #expect(visits == expected.count)
            #expect(snapshot.sortedByKey.map(\.key) == expected.keys.sorted { Key.compare($0, $1) < 0 })
            #expect(snapshot == ChildMap(entries: expected.map { (key: $0.key, value: $0.value) }))
            #expect(snapshot.keys == ChildMap(entries: expected.map { (key: $0.key, value: .empty) }).keys)
        }
        // Versions over the same stored children compare by what changed.
        for (a, modelA) in snapshots {
            for (b, modelB) in snapshots {
                #expect((a == b) == (modelA == modelB))
                #expect((a.keys == b.keys) == (Set(modelA.keys) == Set(modelB.keys)))
            }
        }
        // Removing every child empties the map (the last removal is what empties it); adding one back
        // fills it.
        let remaining = Array(model.keys)
        for key in remaining.dropLast() { map.removeValue(forKey: key) }
        #expect(!map.isEmpty)
        map.removeValue(forKey: remaining.last!)
        #expect(map.isEmpty && map.count == 0 && Array(map).isEmpty)
        map[Key("back")] = .leaf(.number(1))
        #expect(!map.isEmpty && map.count == 1)
    }

    /// Large maps sort by fixed-size prefixes of their keys first; the order must be exactly the keys'
    /// own, across every kind of key and for prefixes that tie (push IDs made in one millisecond, keys
    /// longer than the prefix, integer keys with leading zeros).
    @Test(arguments: [1, 2, 3])
    func sortingByPrefixesGivesTheKeysOwnOrder(seed: UInt64) {
        var generator = QueryWindowTests.SeededGenerator(seed: seed)
        let alphabet = Array("-09AZ_az~ !\"%'()*+,:;<=>?@^`{|}\u{7E}éß\u{E000}\u{FFFD}😀𝄞\u{10FFFF}")
        var keys = Set(Self.keys)
        for _ in 0..<3000 {
            let text: String
            switch Int.random(in: 0..<5, using: &generator) {
            case 0: text = String(Int.random(in: -3_000_000_000...3_000_000_000, using: &generator))
            case 1: text = String(repeating: "0", count: Int.random(in: 0...2, using: &generator)) + String(Int.random(in: 0..<100, using: &generator))
            case 2: text = "-NpK3xQ7" + String((0..<12).map { _ in alphabet.randomElement(using: &generator)! })
            case 3: text = "sameprefix-sixteen" + String((0..<Int.random(in: 0..<3, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            default: text = String((0..<Int.random(in: 1..<20, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            }
            keys.insert(Key(text))
        }
        let entries = keys.shuffled(using: &generator).map { (key: $0, value: Node.leaf(.string($0.string))) }
        let expected = entries.sorted { Key.compare($0.key, $1.key) < 0 }.map(\.key)
        #expect(ChildMap.sortedByKey(entries).map(\.key) == expected)
        #expect(ChildMap(entries: entries).sortedByKey.map(\.key) == expected)
    }

    @Test func smallMapsArePackedAndLargeOnesAreTrees() {
        let small = ChildMap(entries: (0..<ChildMap.packedCapacity).map { (key: Key("k\($0)"), value: .leaf(.number(Double($0)))) })
        #expect(small.isPacked)
        var grown = small
        grown[Key("one more")] = .leaf(.bool(true))
        #expect(!grown.isPacked)
        #expect(grown.count == ChildMap.packedCapacity + 1)
        #expect(small.count == ChildMap.packedCapacity)
        // Equal content compares equal across representations.
        var shrunk = grown
        shrunk.removeValue(forKey: Key("one more"))
        #expect(!shrunk.isPacked)
        #expect(shrunk == small)
        #expect(shrunk.keys == small.keys)
        #expect(shrunk.keys != grown.keys)
    }

    @Test func numbersAndStringsRoundTripExactly() {
        let values: [Primitive] = [
            .number(0), .number(-0.0), .number(.greatestFiniteMagnitude), .number(.leastNonzeroMagnitude), .number(-1.5),
            .string(""), .string("\u{0}"), .string("e\u{301}"), .string(String(repeating: "🔥", count: 64)), .bool(false), .bool(true),
        ]
        let map = ChildMap(entries: values.enumerated().map { (key: Key(String($0.offset)), value: .leaf($0.element)) })
        #expect(map.isPacked)
        for (index, value) in values.enumerated() {
            guard case .leaf(let stored, nil)? = map[Key(String(index))] else {
                Issue.record("no leaf at \(index)")
                continue
            }
            #expect(stored == value)
            if case .number(let a) = stored, case .number(let b) = value { #expect(a.bitPattern == b.bitPattern) }
        }
    }

    @Test func nestedRecordsArePackedInlineAndCompareByContent() throws {
        let json = #"{"a":{"tags":{"x":true,"y":{"deep":[1,2]}},"p":{".value":1,".priority":2},"s":"one"},"b":{"tags":{"x":true,"y":{"deep":[1,2]}},"p":{".value":1,".priority":2},"s":"one"}}"#
        let node = try Node(json: try JSONValue(parsing: json))
        let a = node.child(Key("a")), b = node.child(Key("b"))
        #expect(a == b && a.hash == b.hash)
        #expect(a.childEntries.isPacked && a.child(Key("tags")).childEntries.isPacked)
        // One record holds its nested objects: they are views of its buffer, not allocations of their own.
        guard case .packed(let record) = a.childEntries.storage, case .packed(let tags) = a.child(Key("tags")).childEntries.storage else {
            Issue.record("not packed")
            return
        }
        #expect(record.buffer === tags.buffer)
        #expect(a.child(at: try DatabasePath("tags/y/deep/1")) == .leaf(.number(2)))
        #expect(a.child(Key("p")).priority == .number(2))
        // A change deep inside makes a new record; the old one is unchanged.
        let changed = a.setting(.leaf(.number(3)), at: try DatabasePath("tags/y/deep/1"))
        #expect(changed.child(at: try DatabasePath("tags/y/deep/1")) == .leaf(.number(3)))
        #expect(a.child(at: try DatabasePath("tags/y/deep/1")) == .leaf(.number(2)))
        #expect(changed != a && changed.child(Key("p")) == a.child(Key("p")))
        #expect(changed.jsonString() == #"{"p":1,"s":"one","tags":{"x":true,"y":{"deep":[1,3]}}}"#)
    }

    @Test func nodesBuiltFromJSONHashAndRenderAsBefore() throws {
        let json = #"{"b":{"x":1,"y":{".value":2,".priority":1}},"a":[1,"two",false],"c":{"d":"e"},"c2":null}"#
        let node = try Node(json: try JSONValue(parsing: json))
        #expect(node.jsonString() == #"{"a":[1,"two",false],"b":{"x":1,"y":2},"c":{"d":"e"}}"#)
        #expect(node.child(at: try DatabasePath("/b/y")).priority == .number(1))
        #expect(node.childCount == 3)
        // The same tree built child by child (hash trees on the way) hashes the same.
        var rebuilt = Node.empty
        for (key, child) in node.childEntries { rebuilt = rebuilt.replacingChild(key, with: child) }
        #expect(rebuilt == node && rebuilt.hash == node.hash)
    }
}

extension ChildMap {
    var isPacked: Bool {
        if case .packed = storage { return true }
        return false
    }
}
