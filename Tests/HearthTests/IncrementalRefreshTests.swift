@testable import Hearth
import HearthCore
import Testing

/// Views of a whole location are updated child by child when a change lies below them. The reference
/// is the same tree recomputing every view whole: after every random operation (server overwrites
/// and merges at every depth; user writes at, below and above the children, merges and hidden writes;
/// acks and reverts; listens completing and stopping), both raise the same events and show the same
/// data.
@Suite struct IncrementalRefreshTests {
    typealias SeededGenerator = OrderedChildrenTests.SeededGenerator

    static func path(_ text: String) -> DatabasePath { SyncTreeTests.path(text) }
    static func json(_ text: String) -> Node { SyncTreeTests.json(text) }

    static func describe(_ events: [RaisedEvent]) -> [String] {
        events.map { "\($0.registration) \($0.type) \($0.path) prev=\($0.previousKey ?? "-") \($0.node.jsonString())" }
    }

    /// A random child value: a number, a string, an object ordered by `n`, with or without a priority, or null.
    static func value(_ random: inout SeededGenerator) -> String {
        let n = Int.random(in: 0..<6, using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return "null"
        case 1: return "\"s\(n)\""
        case 2: return #"{"n":\#(n),"m":\#(n % 2)}"#
        case 3: return #"{".value":\#(n),".priority":\#(Int.random(in: 0..<3, using: &random))}"#
        case 4: return #"{"n":\#(n),".priority":"p\#(n % 3)"}"#
        default: return "\(n)"
        }
    }

    static func key(_ random: inout SeededGenerator) -> String {
        ["a", "b", "c", "d", "e", "f", "g", "h", "1", "2", "10", "x"][Int.random(in: 0..<12, using: &random)]
    }

    // Seed 53 meets a server write hidden under a pending one that turns a leaf above both into an object.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 53])
    func childByChildUpdatesMatchWholeRecomputation(seed: UInt64) async {
        var random = SeededGenerator(state: seed)
        var incremental = SyncTree()
        var reference = SyncTree()
        reference.refreshesIncrementally = false
        var step = 0

        func both(_ what: String, _ operation: (inout SyncTree) -> [RaisedEvent]) {
            step += 1
            let got = Self.describe(operation(&incremental))
            let expected = Self.describe(operation(&reference))
            #expect(got == expected, "seed \(seed) step \(step): \(what)")
            for (spec, view) in reference.views {
                let shown = incremental.views[spec]?.shown
                #expect(shown?.node == view.shown.node, "seed \(seed) step \(step): \(what): \(spec) data")
                #expect(shown?.children.map(\.key) == view.shown.children.map(\.key), "seed \(seed) step \(step): \(what): \(spec) order")
            }
        }

        let indexes: [QueryIndex] = [.key, .value, .priority, .child(Self.path("/n"))]
        var id: UInt = 0
        for index in indexes {
            for type in DataEventType.allCases {
                id += 1
                let spec = QuerySpec(path: Self.path("/l"), query: Query(index: index))
                both("observe \(index) \(type)") { $0.addRegistration(id: id, type: type, spec: spec) }
            }
        }
        // A view above (the root) and below (one child), and a filtered window beside them.
        id += 1
        both("observe root") { $0.addRegistration(id: id, type: .value, spec: QuerySpec(path: .root)) }
        id += 1
        both("observe /l/a") { $0.addRegistration(id: id, type: .childAdded, spec: QuerySpec(path: Self.path("/l/a"))) }
        id += 1
        let window = QuerySpec(path: Self.path("/l"), query: Query(index: .value, limit: .last(3)))
        both("observe window") { $0.addRegistration(id: id, type: .childAdded, spec: window) }

        let list = ServerListen(path: Self.path("/l"), query: nil)
        var listening = false
        var pending: [Int] = []
        var nextWrite = 1
        for round in 0..<400 {
            // Long CPU-bound loops yield, so tests that wait on the same thread pool are not starved.
            if round % 20 == 0 { await Task.yield() }
            let choice = Int.random(in: 0..<100, using: &random)
            let child = Self.key(&random)
            let text = Self.value(&random)
            switch choice {
            case 0..<30:
                both("server set /l/\(child) = \(text)") { $0.applyServerOverwrite(path: Self.path("/l/\(child)"), node: Self.json(text), tag: nil) }
            case 30..<40:
                both("server set /l/\(child)/n = \(text)") { $0.applyServerOverwrite(path: Self.path("/l/\(child)/n"), node: Self.json(text), tag: nil) }
            case 40..<48:
                let other = Self.key(&random)
                let otherText = Self.value(&random)
                both("server merge /l \(child) \(other)") {
                    $0.applyServerMerge(path: Self.path("/l"), items: [(Self.path("/\(child)"), Self.json(text)), (Self.path("/\(other)"), Self.json(otherText))], tag: nil)
                }
            case 48..<52:
                let whole = #"{"\#(child)":\#(text),"z":\#(Int.random(in: 0..<4, using: &random))}"#
                both("server set /l = \(whole)") { $0.applyServerOverwrite(path: Self.path("/l"), node: Self.json(whole), tag: nil) }
            case 52..<54:
                both("server set /l = 7") { $0.applyServerOverwrite(path: Self.path("/l"), node: .leaf(.number(7)), tag: nil) }
            case 54..<64:
                let write = nextWrite
                nextWrite += 1
                pending.append(write)
                both("user set /l/\(child) = \(text)") { $0.applyUserOverwrite(writeID: write, path: Self.path("/l/\(child)"), node: Self.json(text)) }
            case 64..<68:
                let write = nextWrite
                nextWrite += 1
                pending.append(write)
                both("user set /l/\(child)/n = \(text)") { $0.applyUserOverwrite(writeID: write, path: Self.path("/l/\(child)/n"), node: Self.json(text)) }
            case 68..<69:
                let write = nextWrite
                nextWrite += 1
                pending.append(write)
                let whole = #"{"\#(child)":\#(text)}"#
                both("user set /l = \(whole)") { $0.applyUserOverwrite(writeID: write, path: Self.path("/l"), node: Self.json(whole)) }
            case 69..<70:
                // A transaction's write without local events: it shows only once the server confirms it.
                let write = nextWrite
                nextWrite += 1
                pending.append(write)
                both("hidden user set /l/\(child) = \(text)") {
                    $0.applyUserOverwrite(writeID: write, path: Self.path("/l/\(child)"), node: Self.json(text), visible: false)
                }
            case 70..<76:
                let write = nextWrite
                nextWrite += 1
                pending.append(write)
                let other = Self.key(&random)
                both("user merge /l/\(child), /l/\(other)/n") {
                    $0.applyUserMerge(writeID: write, path: Self.path("/l"), children: [(Self.path("/\(child)"), Self.json(text)), (Self.path("/\(other)/n"), .leaf(.number(3)))])
                }
            case 76..<90 where !pending.isEmpty:
                let write = pending.remove(at: Int.random(in: 0..<pending.count, using: &random))
                let revert = Bool.random(using: &random)
                both("ack \(write) revert \(revert)") { $0.ackWrite(writeID: write, revert: revert) }
            case 90..<95 where !listening:
                listening = true
                both("listen /l") { tree in
                    tree.listenStarted(list)
                    return tree.listenCompleted(list)
                }
            case 95..<97 where listening:
                listening = false
                both("stop /l") { $0.listenStopped(list) }
            default:
                both("server set /l/\(child) = 1") { $0.applyServerOverwrite(path: Self.path("/l/\(child)"), node: .leaf(.number(1)), tag: nil) }
            }
        }
    }

    @Test func aWriteBelowABigListTouchesOnlyItsChild() {
        var tree = SyncTree()
        let spec = QuerySpec(path: Self.path("/big"), query: Query(index: .child(Self.path("/n"))))
        _ = tree.addRegistration(id: 1, type: .childAdded, spec: spec)
        _ = tree.addRegistration(id: 2, type: .childMoved, spec: spec)
        tree.listenStarted(spec.serverListen)
        var children: [String] = []
        for index in 0..<2000 { children.append(#""k\#(index)":{"n":\#(index * 2)}"#) }
        _ = tree.applyServerOverwrite(path: Self.path("/big"), node: Self.json("{\(children.joined(separator: ","))}"), tag: nil)
        _ = tree.listenCompleted(spec.serverListen)
        #expect(Self.describe(tree.applyServerOverwrite(path: Self.path("/big/new"), node: Self.json(#"{"n":5}"#), tag: nil))
            == [#"1 childAdded /big/new prev=k2 {"n":5}"#])
        #expect(Self.describe(tree.applyServerOverwrite(path: Self.path("/big/k0/n"), node: .leaf(.number(7)), tag: nil))
            == [#"2 childMoved /big/k0 prev=k3 {"n":7}"#])
        #expect(tree.views[spec]?.shown.children.prefix(5).map(\.key.string) == ["k1", "k2", "new", "k3", "k0"])
    }

    /// The listens kept up to date view by view equal the ones computed from scratch, and the changes
    /// handed to the owner, applied in turn, reproduce them.
    @Test(arguments: [11, 12, 13])
    func desiredListensFollowViewsAsTheyComeAndGo(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        var tree = SyncTree()
        var sent: Set<ServerListen> = []
        var registered: [UInt] = []
        var next: UInt = 1
        let paths = ["/", "/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f"]
        for step in 0..<600 {
            if registered.isEmpty || Int.random(in: 0..<10, using: &random) < 6 {
                let path = Self.path(paths[Int.random(in: 0..<paths.count, using: &random)])
                let query: Query = switch Int.random(in: 0..<4, using: &random) {
                case 0: .all
                case 1: Query(index: .value)
                case 2: Query(index: .key, limit: .first(2))
                default: Query(index: .value, limit: .last(Int.random(in: 1...2, using: &random)))
                }
                _ = tree.addRegistration(id: next, type: .value, spec: QuerySpec(path: path, query: query))
                registered.append(next)
                next += 1
            } else {
                tree.removeRegistration(id: registered.remove(at: Int.random(in: 0..<registered.count, using: &random)))
            }
            let defaults = Set(tree.views.keys.filter(\.loadsAllData).map(\.path))
            var expected: Set<ServerListen> = []
            for spec in tree.views.keys where !defaults.contains(where: { other in
                spec.loadsAllData ? (other != spec.path && other.contains(spec.path)) : other.contains(spec.path)
            }) {
                expected.insert(spec.serverListen)
            }
            #expect(tree.desiredListens == expected, "seed \(seed) step \(step)")
            let changes = tree.takeListenChanges()
            #expect(changes.added.isDisjoint(with: changes.removed))
            sent.subtract(changes.removed)
            sent.formUnion(changes.added)
            #expect(sent == expected, "seed \(seed) step \(step)")
        }
    }
}
