/// The children of a snapshot decoded as `Value`, in the query's order, with every child that
/// failed to decode reported in ``failures`` rather than dropped without a trace.
///
/// For example:
/// ```swift
/// let recent = try await posts.queryLimited(toLast: 20).getDecodedChildren(as: Post.self)
/// show(recent.values)
/// if !recent.failures.isEmpty { log(recent.failures) }
/// ```
public struct DecodedChildren<Value> {
    /// A child that decoded: its key and its value.
    public struct Child {
        public let key: String
        public let value: Value

        public init(key: String, value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// The children that decoded, in the query's order.
    public let children: [Child]
    /// The children that did not decode, in the query's order.
    public let failures: [SnapshotDecodingError]

    public init(children: [Child], failures: [SnapshotDecodingError]) {
        self.children = children
        self.failures = failures
    }

    /// The decoded values, in the query's order.
    public var values: [Value] { children.map(\.value) }

    /// The keys of the decoded values, in the query's order.
    public var keys: [String] { children.map(\.key) }
}

extension DecodedChildren: Sendable where Value: Sendable {}
extension DecodedChildren.Child: Sendable where Value: Sendable {}
extension DecodedChildren: Equatable where Value: Equatable {}
extension DecodedChildren.Child: Equatable where Value: Equatable {}
