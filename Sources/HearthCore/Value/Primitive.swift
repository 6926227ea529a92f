/// A leaf value: a boolean, a number (an IEEE-754 double, as in JavaScript) or a string.
public enum Primitive: Sendable, Hashable {
    case bool(Bool)
    case number(Double)
    case string(String)

    public static func == (lhs: Primitive, rhs: Primitive) -> Bool {
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a.utf8.elementsEqual(b.utf8)
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .bool(let b): hasher.combine(0); hasher.combine(b)
        case .number(let n): hasher.combine(1); hasher.combine(n)
        case .string(let s): hasher.combine(2); hasher.combine(Array(s.utf8))
        }
    }

    /// Firebase's order among leaves: booleans (false before true), then numbers, then strings by UTF-16.
    public static func compare(_ a: Primitive, _ b: Primitive) -> Int {
        switch (a, b) {
        case let (.bool(x), .bool(y)): return x == y ? 0 : (x ? 1 : -1)
        case let (.number(x), .number(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.string(x), .string(y)): return UTF16Order.compare(x, y)
        default: return a.typeRank < b.typeRank ? -1 : 1
        }
    }

    var typeRank: Int {
        switch self {
        case .bool: 0
        case .number: 1
        case .string: 2
        }
    }
}

/// A node's priority: a number or a string. A node without one has `nil`.
public enum Priority: Sendable, Hashable {
    case number(Double)
    case string(String)

    public static func == (lhs: Priority, rhs: Priority) -> Bool {
        switch (lhs, rhs) {
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a.utf8.elementsEqual(b.utf8)
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .number(let n): hasher.combine(0); hasher.combine(n)
        case .string(let s): hasher.combine(1); hasher.combine(Array(s.utf8))
        }
    }

    /// The priority as a leaf value, for comparisons.
    public var primitive: Primitive {
        switch self {
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        }
    }

    /// Priority order: no priority first, then numbers ascending, then strings by UTF-16.
    public static func compare(_ a: Priority?, _ b: Priority?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (x?, y?): return Primitive.compare(x.primitive, y.primitive)
        }
    }
}
