import HashTreeCollections
import HearthCore
import Testing

/// A limited window is chosen while scanning (a bounded heap), not by sorting every child: it must
/// still be exactly the first or last `n` children of the full, sorted window, in every index order.
@Suite struct QueryWindowTests {
    /// Children with integer-like and string keys, numbers, strings, booleans, objects and priorities.
    static func mixedNode(count: Int, seed: UInt64) -> Node {
        var generator = SeededGenerator(seed: seed)
        var entries = TreeDictionary<Key, Node>()
        for i in 0..<count {
            let key = Int.random(in: 0..<4, using: &generator) == 0 ? String(Int.random(in: -50..<500, using: &generator)) : "k\(i % 37)-\(Int.random(in: 0..<90, using: &generator))"
            let score: Node = switch Int.random(in: 0..<5, using: &generator) {
            case 0: .leaf(.string("s\(Int.random(in: 0..<9, using: &generator))"))
            case 1: .leaf(.bool(Bool.random(using: &generator)))
            case 2: .empty
            default: .leaf(.number(Double(Int.random(in: 0..<20, using: &generator))))
            }
            var child = Node.Children()
            if !score.isEmpty { child.entries[Key("score")] = score }
            child.entries[Key("n")] = .leaf(.number(Double(i)))
            if Bool.random(using: &generator) { child.priority = .number(Double(Int.random(in: 0..<5, using: &generator))) }
            entries[Key(key)] = .children(child)
        }
        return .children(Node.Children(entries: ChildMap(entries)))
    }

    /// The full window sorts positions by prefixes of the keys; it must be the order a plain sort by
    /// (sort value, key) gives, with sort values (`.value`) and without any (`.priority` with none set).
    @Test(arguments: [QueryIndex.value, .priority])
    func theFullWindowIsThePlainSortsOrder(_ index: QueryIndex) {
        var generator = SeededGenerator(seed: 11)
        var entries = TreeDictionary<Key, Node>()
        for i in 0..<500 {
            let key = Int.random(in: 0..<3, using: &generator) == 0 ? String(Int.random(in: -50..<500, using: &generator)) : "item-\(Int.random(in: 0..<10_000, using: &generator))-\(i)"
            entries[Key(key)] = .leaf(.number(Double(Int.random(in: 0..<7, using: &generator))))
        }
        let node = Node.children(Node.Children(entries: ChildMap(entries)))
        let expected = entries.map { (key: $0.key, sort: index.sortValue(of: $0.value)) }.sorted { a, b in
            let c = Node.compareValues(a.sort, b.sort)
            return c != 0 ? c < 0 : Key.compare(a.key, b.key) < 0
        }.map(\.key)
        #expect(Query(index: index).window(over: node).map(\.key) == expected)
        if index == .priority {
            #expect(expected == entries.keys.sorted { Key.compare($0, $1) < 0 })
        }
    }

    @Test(arguments: [QueryIndex.key, .value, .priority, .child(try! DatabasePath("score"))])
    func aLimitedWindowIsTheEndOfTheSortedWindow(_ index: QueryIndex) {
        for seed in UInt64(1)...6 {
            let node = Self.mixedNode(count: 300, seed: seed)
            var ranged = Query(index: index)
            if seed % 2 == 0 {
                // A range too, so the heap only sees children inside it.
                ranged.start = index == .key ? .init(value: .leaf(.string("200"))) : .init(value: .leaf(.number(3)))
            }
            let all = ranged.window(over: node).map(\.key)
            #expect(all.count > 20)
            for n in [0, 1, 7, 100, 1000] {
                var first = ranged
                first.limit = .first(n)
                #expect(first.window(over: node).map(\.key) == Array(all.prefix(n)), "first \(n), seed \(seed)")
                var last = ranged
                last.limit = .last(n)
                #expect(last.window(over: node).map(\.key) == Array(all.suffix(n)), "last \(n), seed \(seed)")
            }
        }
    }

    /// A small deterministic generator (SplitMix64), so a failure repeats.
    struct SeededGenerator: RandomNumberGenerator {
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
}
