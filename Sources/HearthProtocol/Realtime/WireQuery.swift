public import HearthCore

/// The query object (`q`) of a listen or get: `sp`/`sn`/`sin`, `ep`/`en`/`ein`, `l`, `vf`, `i`.
///
/// For example:
/// ```swift
/// let wire = try WireQuery(json: try JSONValue(parsing: #"{"l":2,"vf":"r","i":"starCount"}"#))
/// #expect(wire.query.limit == .last(2))
/// ```
public struct WireQuery: Sendable {
    /// The object as the client sent it (echoed in `c` pushes).
    public var json: JSONValue
    public var query: Query

    public init(json: JSONValue) throws(WireError) {
        guard case .object = json else { throw WireError("Query parameters must be an object") }
        self.json = json
        var query = Query(index: .priority)
        switch json["i"] {
        case nil, .string(".priority")?: query.index = .priority
        case .string(".key")?: query.index = .key
        case .string(".value")?: query.index = .value
        case .string(let path)?:
            do {
                let parsed = try DatabasePath(path)
                guard !parsed.isRoot else { throw WireError("Invalid index") }
                query.index = .child(parsed)
            } catch {
                throw WireError("Invalid index \(path)")
            }
        default: throw WireError("Invalid index")
        }
        if let value = json["sp"] {
            query.start = try WireQuery.bound(value, name: json["sn"], inclusive: json["sin"])
        }
        if let value = json["ep"] {
            query.end = try WireQuery.bound(value, name: json["en"], inclusive: json["ein"])
        }
        if let limit = json["l"] {
            guard case .number(let n) = limit, n >= 1, n == n.rounded(), n < 1e15 else { throw WireError("Invalid limit") }
            let viewFrom: String
            switch json["vf"] {
            case .string(let side)?: viewFrom = side
            case nil: viewFrom = query.start != nil ? "l" : "r"
            default: throw WireError("Invalid vf")
            }
            query.limit = viewFrom == "l" ? .first(Int(n)) : .last(Int(n))
        }
        self.query = query
    }

    static func bound(_ value: JSONValue, name: JSONValue?, inclusive: JSONValue?) throws(WireError) -> Query.Bound {
        guard let node = Node(primitive: value) else { throw WireError("Query bounds must be primitive values") }
        var bound = Query.Bound(value: node)
        switch name {
        case nil: break
        case .string(let s)?: bound.name = Query.BoundName(s)
        default: throw WireError("Query bound names must be strings")
        }
        switch inclusive {
        case nil, .bool(true)?: bound.inclusive = true
        case .bool(false)?: bound.inclusive = false
        default: throw WireError("sin and ein must be booleans")
        }
        return bound
    }
}
