import HearthCore
import HearthStorage
import Testing

/// The rows a write changes (`StorageMutation.plan`): the subtree replaced, a leaf ancestor's value row
/// removed, and a delete that empties its ancestors taken from the highest one.
struct StorageMutationPlanTests {
    func path(_ string: String) throws -> DatabasePath { try DatabasePath(string) }

    @Test func aLeafThatGainsAChildLosesItsValueRowAndOnlyIt() throws {
        let before = try Node(json: JSONValue(parsing: #"{"a": {"b": 5}, "c": 1}"#))
        let written = Node.leaf(.number(1))
        let target = try path("/a/b/x/y")
        let plan = StorageMutation.plan(before: before, after: before.setting(written, at: target), path: target, node: written)
        #expect(plan == [.removeLeafValue(try path("/a/b")), .replace(target, written)])
        // The root and inner ancestors keep their rows.
        let sibling = try path("/a/z")
        #expect(StorageMutation.plan(before: before, after: before.setting(written, at: sibling), path: sibling, node: written) == [.replace(sibling, written)])
    }

    @Test func aRootLeafThatGainsAChildLosesItsValueRow() throws {
        let before = Node.leaf(.string("root"))
        let written = Node.leaf(.bool(true))
        let target = try path("/k")
        #expect(StorageMutation.plan(before: before, after: before.setting(written, at: target), path: target, node: written)
            == [.removeLeafValue(.root), .replace(target, written)])
    }

    @Test func aDeleteThatEmptiesItsAncestorsStartsFromTheHighest() throws {
        let before = try Node(json: JSONValue(parsing: #"{"a": {"b": {"c": 1}}, "d": 2}"#))
        let target = try path("/a/b/c")
        #expect(StorageMutation.plan(before: before, after: before.setting(.empty, at: target), path: target, node: .empty)
            == [.replace(try path("/a"), .empty)])
    }
}
