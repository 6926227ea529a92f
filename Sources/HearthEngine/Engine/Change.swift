public import HearthCore

/// One applied write, as the subscription fan-out sees it: where, what, and the tree before and after.
public struct Change: Sendable {
    public var path: DatabasePath
    public var written: WrittenData
    public var before: Node
    public var after: Node
}
