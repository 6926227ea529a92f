public import HearthCore
import HearthStorage

/// One applied write, as the subscription fan-out sees it: where, what, and the tree before and after.
public struct Change: Sendable {
    public var path: DatabasePath
    public var written: WrittenData
    public var before: Node
    public var after: Node
}

/// Turns an applied write into storage mutations that touch O(size of the write) rows.
enum MutationPlanner {
    /// The mutations that take `before` to `after` for a write of `node` at `path`.
    static func mutations(before: Node, after: Node, path: DatabasePath, node: Node) -> [StorageMutation] {
        if node.isEmpty {
            // A delete may empty its ancestors, which then vanish: delete from the highest one.
            var highest = path
            while let parent = highest.parent, after.child(at: parent).isEmpty, !before.child(at: parent).isEmpty {
                highest = parent
            }
            return [.replace(highest, .empty)]
        }
        var mutations: [StorageMutation] = []
        var ancestor = DatabasePath.root
        for key in path.keys {
            if before.child(at: ancestor).isLeaf { mutations.append(.removeLeafValue(ancestor)) }
            ancestor = ancestor.child(key)
        }
        mutations.append(.replace(path, node))
        return mutations
    }
}
