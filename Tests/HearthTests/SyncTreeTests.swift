@testable import Hearth
import HearthCore
import Testing

/// The sync tree and event generation, without a network.
@Suite struct SyncTreeTests {
    static func describe(_ events: [RaisedEvent]) -> [String] {
        events.map { "\($0.registration) \(Recorder.name($0.type)) \($0.path.last?.string ?? "/") prev=\($0.previousKey ?? "-") \($0.node.jsonString())" }
    }

    static func path(_ text: String) -> DatabasePath { try! DatabasePath(text) }

    static func json(_ text: String) -> Node { try! Node(json: try! JSONValue(parsing: text)) }

    @Test func eventsComeOutRemovedAddedMovedChangedThenValue() {
        var tree = SyncTree()
        let spec = QuerySpec(path: Self.path("/s"), query: Query(index: .value))
        for (id, type) in [(1, DataEventType.childRemoved), (2, .childAdded), (3, .childMoved), (4, .childChanged), (5, .value)] {
            _ = tree.addRegistration(id: UInt(id), type: type, spec: spec)
        }
        let listen = ServerListen(path: Self.path("/s"), query: nil)
        tree.listenStarted(listen)
        _ = tree.applyServerOverwrite(path: Self.path("/s"), node: Self.json(#"{"a":1,"b":2,"c":3}"#), tag: nil)
        _ = tree.listenCompleted(listen)
        let events = tree.applyServerOverwrite(path: Self.path("/s"), node: Self.json(#"{"a":5,"c":3,"d":0}"#), tag: nil)
        #expect(Self.describe(events) == [
            "1 removed b prev=- 2",
            "2 added d prev=- 0",
            "3 moved a prev=c 5",
            "4 changed a prev=c 5",
            #"5 value s prev=- {"a":5,"c":3,"d":0}"#,
        ])
    }

    @Test func valueWaitsForTheListenThenFiresOnceEvenWhenEmpty() {
        var tree = SyncTree()
        let spec = QuerySpec(path: Self.path("/empty"))
        #expect(tree.addRegistration(id: 1, type: .value, spec: spec).isEmpty)
        #expect(tree.desiredListens == [ServerListen(path: Self.path("/empty"), query: nil)])
        tree.listenStarted(spec.serverListen)
        #expect(Self.describe(tree.listenCompleted(spec.serverListen)) == ["1 value empty prev=- null"])
        // An unchanged push raises nothing.
        #expect(tree.applyServerOverwrite(path: Self.path("/empty"), node: .empty, tag: nil).isEmpty)
    }

    @Test func aRevertedWriteRestoresServerDataAndAnAcceptedOneRaisesNothing() {
        var tree = SyncTree()
        let spec = QuerySpec(path: Self.path("/a"))
        _ = tree.addRegistration(id: 1, type: .value, spec: spec)
        tree.listenStarted(spec.serverListen)
        _ = tree.applyServerOverwrite(path: Self.path("/a"), node: .leaf(.number(1)), tag: nil)
        _ = tree.listenCompleted(spec.serverListen)
        #expect(Self.describe(tree.applyUserOverwrite(writeID: 1, path: Self.path("/a"), node: .leaf(.number(2)))) == ["1 value a prev=- 2"])
        #expect(Self.describe(tree.ackWrite(writeID: 1, revert: true)) == ["1 value a prev=- 1"])
        _ = tree.applyUserOverwrite(writeID: 2, path: Self.path("/a"), node: .leaf(.number(3)))
        // The server's echo, then the ack: no flicker.
        #expect(tree.applyServerOverwrite(path: Self.path("/a"), node: .leaf(.number(3)), tag: nil).isEmpty)
        #expect(tree.ackWrite(writeID: 2, revert: false).isEmpty)
        // A revert shadowed by a later write raises nothing.
        _ = tree.applyUserOverwrite(writeID: 3, path: Self.path("/a"), node: .leaf(.number(4)))
        _ = tree.applyUserOverwrite(writeID: 4, path: Self.path("/a"), node: .leaf(.number(5)))
        #expect(tree.ackWrite(writeID: 3, revert: true).isEmpty)
    }

    @Test func serverDataUnderAPendingWriteShowsOnlyOnceTheWriteIsAnswered() {
        var tree = SyncTree()
        let list = QuerySpec(path: Self.path("/l"))
        _ = tree.addRegistration(id: 1, type: .childChanged, spec: list)
        _ = tree.addRegistration(id: 2, type: .value, spec: QuerySpec(path: Self.path("/l/a/n")))
        tree.listenStarted(list.serverListen)
        _ = tree.applyServerOverwrite(path: Self.path("/l"), node: Self.json(#"{"a":{"n":1},"b":{"n":2}}"#), tag: nil)
        _ = tree.listenCompleted(list.serverListen)
        #expect(Self.describe(tree.applyUserOverwrite(writeID: 1, path: Self.path("/l/a"), node: Self.json(#"{"n":5}"#)))
            == ["2 value n prev=- 5", "1 changed a prev=- {\"n\":5}"])
        // The server's data at and below the written location differs (a server value, another
        // client's write in between): hidden while the write is pending, in the views above and below.
        #expect(tree.applyServerOverwrite(path: Self.path("/l/a"), node: Self.json(#"{"n":6}"#), tag: nil).isEmpty)
        #expect(tree.applyServerOverwrite(path: Self.path("/l/a/n"), node: .leaf(.number(7)), tag: nil).isEmpty)
        #expect(tree.views[list]?.shown.node.child(at: Self.path("/a/n")) == .leaf(.number(5)))
        // Beside the write, the server's data shows at once.
        #expect(Self.describe(tree.applyServerOverwrite(path: Self.path("/l/b/n"), node: .leaf(.number(8)), tag: nil))
            == ["1 changed b prev=a {\"n\":8}"])
        // Answered: the server's data shows, with its events.
        #expect(Self.describe(tree.ackWrite(writeID: 1, revert: false)) == ["2 value n prev=- 7", "1 changed a prev=- {\"n\":7}"])
        #expect(tree.localValue(at: Self.path("/l")) == Self.json(#"{"a":{"n":7},"b":{"n":8}}"#))
    }

    @Test func aParentListenShadowsChildListensAndTheyReturnWhenItGoes() {
        var tree = SyncTree()
        _ = tree.addRegistration(id: 1, type: .value, spec: QuerySpec(path: Self.path("/a/b")))
        var limited = Query(index: .key)
        limited.limit = .first(1)
        _ = tree.addRegistration(id: 2, type: .value, spec: QuerySpec(path: Self.path("/a/c"), query: limited))
        #expect(tree.desiredListens == [
            ServerListen(path: Self.path("/a/b"), query: nil), ServerListen(path: Self.path("/a/c"), query: limited),
        ])
        _ = tree.addRegistration(id: 3, type: .childAdded, spec: QuerySpec(path: Self.path("/a")))
        _ = tree.addRegistration(id: 4, type: .value, spec: QuerySpec(path: Self.path("/a/b")))
        #expect(tree.desiredListens == [ServerListen(path: Self.path("/a"), query: nil)])
        tree.removeRegistration(id: 3)
        #expect(tree.desiredListens.count == 2)
        #expect(tree.tag(for: ServerListen(path: Self.path("/a/c"), query: limited)) == 1)
    }

    @Test func aLimitedWindowEvictsAndAdmitsChildren() {
        var tree = SyncTree()
        var query = Query(index: .value)
        query.limit = .last(2)
        let spec = QuerySpec(path: Self.path("/scores"), query: query)
        _ = tree.addRegistration(id: 1, type: .childAdded, spec: spec)
        _ = tree.addRegistration(id: 2, type: .childRemoved, spec: spec)
        tree.listenStarted(spec.serverListen)
        let tag = tree.tag(for: spec.serverListen)
        #expect(tag == 1)
        #expect(Self.describe(tree.applyServerOverwrite(path: Self.path("/scores"), node: Self.json(#"{"b":5,"c":7}"#), tag: tag)) == [
            "1 added b prev=- 5", "1 added c prev=b 7",
        ])
        _ = tree.listenCompleted(spec.serverListen)
        // A local write that sorts into the window evicts the lowest child at once.
        #expect(Self.describe(tree.applyUserOverwrite(writeID: 1, path: Self.path("/scores/d"), node: .leaf(.number(9)))) == [
            "2 removed b prev=- 5", "1 added d prev=c 9",
        ])
        // The server's tagged merge agrees: no more events.
        #expect(tree.applyServerMerge(path: Self.path("/scores"), items: [(Self.path("b"), .empty), (Self.path("d"), .leaf(.number(9)))], tag: tag).isEmpty)
        #expect(tree.ackWrite(writeID: 1, revert: false).isEmpty)
        // Untagged data does not touch the filtered view's window.
        #expect(tree.applyServerOverwrite(path: Self.path("/scores/z"), node: .leaf(.number(100)), tag: nil).isEmpty)
    }

    @Test func aPersistedWindowServesItsOwnQueryUntilTheServerAnswersAndNoOther() {
        var tree = SyncTree()
        let top = QuerySpec(path: Self.path("/s"), query: Query(index: .value, limit: .last(2)))
        let top3 = QuerySpec(path: Self.path("/s"), query: Query(index: .value, limit: .last(3)))
        tree.restoreWindows([(top, Self.json(#"{"b":30,"c":20}"#))])
        #expect(Self.describe(tree.addRegistration(id: 1, type: .value, spec: top)) == [#"1 value s prev=- {"b":30,"c":20}"#])
        #expect(tree.addRegistration(id: 2, type: .value, spec: top3).isEmpty)
        #expect(tree.addRegistration(id: 3, type: .value, spec: QuerySpec(path: Self.path("/s"))).isEmpty)
        #expect(tree.completeWindowShown(for: top) == Self.json(#"{"b":30,"c":20}"#))
        #expect(tree.completeWindowShown(for: top3) == nil)

        // The listen starts from the window (its hash lets the server skip resending it); the
        // server's answer replaces it.
        tree.removeRegistration(id: 3)
        tree.listenStarted(top.serverListen)
        #expect(tree.hash(for: top.serverListen) == Self.json(#"{"b":30,"c":20}"#).hash)
        let tag = tree.tag(for: top.serverListen)
        #expect(tree.applyServerOverwrite(path: Self.path("/s"), node: Self.json(#"{"b":30,"e":40}"#), tag: tag).isEmpty)
        #expect(Self.describe(tree.listenCompleted(top.serverListen)) == [#"1 value s prev=- {"b":30,"e":40}"#])
    }
}
