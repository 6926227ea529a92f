public import HearthCore

/// Everything an expression can see: `auth`, `now`, `root`, `data`, `newData`, `$` variables, `query`.
public struct RuleContext: Sendable {
    /// `auth`: null when unauthenticated, otherwise the token's claims as Firebase shapes them.
    public var auth: JSONValue
    public var now: Double
    /// The whole database before the operation.
    public var root: Node
    /// The whole database as it will be if the write succeeds (writes only).
    public var newRoot: Node?
    /// The rule's location.
    public var path: DatabasePath
    public var variables: [String: String]
    public var query: RuleQuery
    /// `data` and `newData`, when the caller already has them (it walks the trees level by level);
    /// otherwise looked up from the roots.
    var dataNode: Node?
    var newDataNode: Node?

    public init(
        auth: JSONValue,
        now: Double,
        root: Node,
        newRoot: Node? = nil,
        path: DatabasePath,
        variables: [String: String] = [:],
        query: RuleQuery = RuleQuery()
    ) {
        self.auth = auth
        self.now = now
        self.root = root
        self.newRoot = newRoot
        self.path = path
        self.variables = variables
        self.query = query
    }

    init(auth: JSONValue, now: Double, root: Node, newRoot: Node?, path: DatabasePath, variables: [String: String], data: Node, newData: Node?) {
        self.init(auth: auth, now: now, root: root, newRoot: newRoot, path: path, variables: variables)
        self.dataNode = data
        self.newDataNode = newData
    }
}

/// The `query` variable of read rules: the request's ordering, bounds and limits.
public struct RuleQuery: Sendable {
    public var orderByKey = true
    public var orderByPriority = false
    public var orderByValue = false
    public var orderByChild: String?
    public var startAt: JSONValue = .null
    public var endAt: JSONValue = .null
    public var equalTo: JSONValue = .null
    public var limitToFirst: Double?
    public var limitToLast: Double?

    public init() {}

    /// The `query` of a REST or WebSocket read.
    public init(_ query: Query?) {
        guard let query else { return }
        switch query.index {
        case .key: break
        case .value: (orderByKey, orderByValue) = (false, true)
        case .priority: (orderByKey, orderByPriority) = (false, true)
        case .child(let path):
            orderByKey = false
            orderByChild = path.keys.map(\.string).joined(separator: "/")
        }
        func value(_ bound: Query.Bound?) -> JSONValue { bound?.value.jsonValue ?? .null }
        if let start = query.start, let end = query.end, start == end {
            equalTo = value(start)
        } else {
            startAt = value(query.start)
            endAt = value(query.end)
        }
        switch query.limit {
        case .first(let n)?: limitToFirst = Double(n)
        case .last(let n)?: limitToLast = Double(n)
        case nil: break
        }
    }
}
