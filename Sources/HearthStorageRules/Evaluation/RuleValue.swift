import Foundation
import HearthCore

/// A value while rules run: CEL's types as Firebase's rules language has them.
///
/// `int` and `float` are distinct (`7 / 2 == 3`, `7.0 / 2 == 3.5`) but compare with each other
/// (`1 == 1.0`). Values of different types are unequal, never an error.
///
/// For example:
/// ```swift
/// let size = RuleValue.int(1024)
/// RuleValue.equal(size, .float(1024.0))  // true
/// ```
enum RuleValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    case list([RuleValue])
    case map(RuleMap)
    /// Distinct elements, in insertion order.
    case set([RuleValue])
    case path(RulePath)
    case timestamp(RuleTimestamp)
    case duration(RuleDuration)
    case latlng(latitude: Double, longitude: Double)
    /// `a.diff(b)`: the map that called `diff` and the map it was compared with.
    case mapDiff(RuleMap, RuleMap)

    /// The name `is` and messages use.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .bytes: "bytes"
        case .list: "list"
        case .map: "map"
        case .set: "set"
        case .path: "path"
        case .timestamp: "timestamp"
        case .duration: "duration"
        case .latlng: "latlng"
        case .mapDiff: "map_diff"
        }
    }

    func isOf(_ type: RuleExpression.TypeName) -> Bool {
        switch (type, self) {
        case (.number, .int), (.number, .float): true
        case (.number, _): false
        default: typeName == type.rawValue
        }
    }

    // MARK: Equality and order

    /// `==`: deep, numeric across int and float, maps and sets regardless of order; a path equals a string
    /// naming the same segments (`file == 'a/b.png'`, a Hearth convenience).
    static func equal(_ a: RuleValue, _ b: RuleValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.float(x), .float(y)): return x == y
        case let (.int(x), .float(y)), let (.float(y), .int(x)): return Double(x) == y && Int64(exactly: y) == x
        case let (.string(x), .string(y)): return x.utf8.elementsEqual(y.utf8)
        case let (.bytes(x), .bytes(y)): return x == y
        case let (.list(x), .list(y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case let (.map(x), .map(y)): return x.isEqual(to: y)
        case let (.set(x), .set(y)): return x.count == y.count && x.allSatisfy { element in y.contains { equal($0, element) } }
        case let (.path(x), .path(y)): return x.segments == y.segments
        case let (.path(x), .string(y)), let (.string(y), .path(x)): return x.segments == RulePath(parsing: y).segments
        case let (.timestamp(x), .timestamp(y)): return x == y
        case let (.duration(x), .duration(y)): return x == y
        case let (.latlng(a1, b1), .latlng(a2, b2)): return a1 == a2 && b1 == b2
        case let (.mapDiff(a1, b1), .mapDiff(a2, b2)): return a1.isEqual(to: a2) && b1.isEqual(to: b2)
        default: return false
        }
    }

    /// `<` and friends: numbers (int and float mixed), strings (by UTF-8 bytes), bools, bytes,
    /// timestamps, durations and lists (element by element). Anything else is an error.
    static func compare(_ a: RuleValue, _ b: RuleValue) throws(EvaluationError) -> Int {
        func order<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : (x == y ? 0 : 1) }
        switch (a, b) {
        case let (.int(x), .int(y)): return order(x, y)
        case let (.float(x), .float(y)):
            guard !x.isNaN, !y.isNaN else { throw EvaluationError("NaN cannot be ordered") }
            return order(x, y)
        case let (.int(x), .float(y)):
            guard !y.isNaN else { throw EvaluationError("NaN cannot be ordered") }
            return compareIntAndDouble(x, y)
        case let (.float(x), .int(y)):
            guard !x.isNaN else { throw EvaluationError("NaN cannot be ordered") }
            return -compareIntAndDouble(y, x)
        case let (.string(x), .string(y)):
            if x.utf8.elementsEqual(y.utf8) { return 0 }
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
        case let (.bool(x), .bool(y)): return order(x ? 1 : 0, y ? 1 : 0)
        case let (.bytes(x), .bytes(y)): return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case let (.timestamp(x), .timestamp(y)): return order(x, y)
        case let (.duration(x), .duration(y)): return order(x, y)
        case let (.list(x), .list(y)):
            for (left, right) in zip(x, y) {
                let result = try compare(left, right)
                if result != 0 { return result }
            }
            return order(x.count, y.count)
        default: throw EvaluationError("cannot compare \(a.typeName) with \(b.typeName)")
        }
    }

    /// Exact order of an int and a double (no rounding of large ints).
    static func compareIntAndDouble(_ x: Int64, _ y: Double) -> Int {
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = y.rounded(.down)
        let truncated = Int64(whole)
        if x < truncated { return -1 }
        if x > truncated { return 1 }
        return whole < y ? -1 : 0
    }

    // MARK: Conversions

    /// A JSON value as rules see it: whole numbers become ints (token claims such as `exp`), others floats.
    init(json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n):
            if let exact = Int64(exactly: n) { self = .int(exact) } else { self = .float(n) }
        case .string(let s): self = .string(s)
        case .array(let items): self = .list(items.map(RuleValue.init(json:)))
        case .object(let members):
            var map = RuleMap()
            for (key, value) in members { map[key] = RuleValue(json: value) }
            self = .map(map)
        }
    }

    /// What `string(x)` gives, and how values appear in messages.
    var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .float(let d): return RuleValue.format(d)
        case .string(let s): return s
        case .bytes(let b): return "b'" + b.map { String(format: "\\x%02x", $0) }.joined() + "'"
        case .list(let items): return "[" + items.map(\.literal).joined(separator: ", ") + "]"
        case .map(let map): return "{" + map.keys.map { "'\($0)': \(map[$0]!.literal)" }.joined(separator: ", ") + "}"
        case .set(let items): return "set([" + items.map(\.literal).joined(separator: ", ") + "])"
        case .path(let path): return path.text
        case .timestamp(let t): return t.text
        case .duration(let d): return d.text
        case .latlng(let latitude, let longitude): return "latlng(\(RuleValue.format(latitude)), \(RuleValue.format(longitude)))"
        case .mapDiff(let a, let b): return "map_diff(\(RuleValue.map(a).text), \(RuleValue.map(b).text))"
        }
    }

    /// Like ``text`` but strings quoted, as inside lists and maps.
    var literal: String {
        if case .string(let s) = self { return "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'" }
        return text
    }

    /// Floats print with a fraction or exponent, so `string(2.0)` is "2.0", not "2".
    static func format(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return "\(d)"
    }
}

/// A rules map: string keys, insertion order kept for `keys()` and printing; equality ignores order.
struct RuleMap: Sendable {
    private(set) var keys: [String] = []
    private var storage: [String: RuleValue] = [:]

    init() {}

    var count: Int { keys.count }
    var values: [RuleValue] { keys.map { storage[$0]! } }

    subscript(key: String) -> RuleValue? {
        get { storage[key] }
        set {
            if let newValue {
                if storage.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if storage.removeValue(forKey: key) != nil {
                keys.removeAll { $0 == key }
            }
        }
    }

    func isEqual(to other: RuleMap) -> Bool {
        count == other.count && keys.allSatisfy { key in other[key].map { RuleValue.equal(storage[key]!, $0) } ?? false }
    }
}

/// A path such as `request.path` (`/b/demo/o/images/a.png`) or a recursive wildcard's value
/// (`images/a.png`). Only the segments count for equality; the leading slash is how it prints.
struct RulePath: Sendable {
    var segments: [String]
    var absolute: Bool

    init(segments: [String], absolute: Bool) {
        self.segments = segments
        self.absolute = absolute
    }

    /// `path('a/b')`, `'/a/b'`: empty segments are dropped.
    init(parsing text: String) {
        segments = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        absolute = text.hasPrefix("/")
    }

    var text: String { (absolute ? "/" : "") + segments.joined(separator: "/") }
}

/// Why an expression could not be evaluated; the condition that hit it is false.
struct EvaluationError: HearthError, Equatable {
    var message: String

    init(_ message: String) {
        self.message = message
    }
}
