public import HearthCore

/// One applied write, as the subscription fan-out sees it: where, what, and the tree before and after.
///
/// `written` holds what is at `path` in `after` (for an update, what is at each item's path: items never
/// overlap), so the fan-out takes the written values from it rather than looking them up in `after`.
public struct Change: Sendable {
    public var path: DatabasePath
    public var written: WrittenData
    public var before: Node
    public var after: Node
}
