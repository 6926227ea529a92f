import Foundation
import HashTreeCollections
import HearthCore

/// Conversion between FirebaseDatabase's Foundation-style values (`String`, `NSNumber`, `Bool`,
/// `[String: Any]`, `[Any]`, `NSNull`) and the SDK's JSON and nodes.
///
/// For example:
/// ```swift
/// let json = try FoundationValue.json(from: ["name": "Ada", "age": 36])
/// let value = FoundationValue.value(of: try Node(json: json)) as? [String: Any]
/// ```
enum FoundationValue {
    /// The JSON for a value passed to `setValue`; `nil` and `NSNull` are `null`.
    static func json(from value: Any?) throws(DatabaseError) -> JSONValue {
        guard let value else { return .null }
        // Types, not casts: on Linux, `value is NSNull` bridged a whole dictionary to an `NSDictionary`
        // to ask (a tenth of the client's time writing 100,000 children).
        if type(of: value) is NSNull.Type { return .null }
        if type(of: value) == Bool.self, let bool = value as? Bool { return .bool(bool) }
        // Before the Swift number casts, which would also accept an NSNumber holding a boolean.
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber { return try json(from: number) }
        switch value {
        case let string as String: return .string(string)
        case let int as Int: return .number(Double(int))
        case let double as Double: return try number(double)
        case let float as Float: return try number(Double(float))
        case let int as Int64: return .number(Double(int))
        case let int as Int32: return .number(Double(int))
        case let int as UInt: return .number(Double(int))
        case let int as UInt64: return .number(Double(int))
        // Containers before the `NSNumber` catch-all, which would bridge them to ask. Members go in the
        // dictionary's order; the node sorts them.
        case let dictionary as [String: Any]:
            var members: [(key: String, value: JSONValue)] = []
            members.reserveCapacity(dictionary.count)
            for (key, member) in dictionary { members.append((key, try json(from: member))) }
            return .object(members)
        case let dictionary as [AnyHashable: Any]:
            var members: [(key: String, value: JSONValue)] = []
            for (key, member) in dictionary {
                guard let name = key.base as? String else { throw DatabaseError(.invalidData, "Keys must be strings") }
                members.append((name, try json(from: member)))
            }
            return .object(members)
        case let array as [Any]:
            var elements: [JSONValue] = []
            for element in array { elements.append(try json(from: element)) }
            return .array(elements)
        case let array as [Any?]:
            var elements: [JSONValue] = []
            for element in array { elements.append(try json(from: element)) }
            return .array(elements)
        case let number as NSNumber: return try json(from: number)
        default:
            throw DatabaseError(.invalidData, "Cannot store a value of type \(type(of: value))")
        }
    }

    private static func json(from number: NSNumber) throws(DatabaseError) -> JSONValue {
        #if canImport(Darwin)
        if CFGetTypeID(number) == CFBooleanGetTypeID() { return .bool(number.boolValue) }
        #else
        if String(cString: number.objCType) == "c" { return .bool(number.boolValue) }
        #endif
        return try self.number(number.doubleValue)
    }

    private static func number(_ value: Double) throws(DatabaseError) -> JSONValue {
        guard value.isFinite else { throw DatabaseError(.invalidData, "Numbers must be finite") }
        return .number(value)
    }

    /// JSON as Foundation values: `NSNull` for null, numbers as `Int` when whole, else `Double`.
    static func value(of json: JSONValue) -> Any {
        switch json {
        case .null: return NSNull()
        case .bool(let bool): return bool
        case .number(let number):
            if number.rounded() == number, abs(number) < 9_007_199_254_740_992 { return Int(number) }
            return number
        case .string(let string): return string
        case .array(let elements): return elements.map { value(of: $0) }
        case .object(let members):
            var dictionary: [String: Any] = [:]
            for (key, member) in members { dictionary[key] = value(of: member) }
            return dictionary
        }
    }

    /// A node as FirebaseDatabase's `value`: `nil` for no data, `String`, `NSNumber` (numbers and
    /// booleans), `[String: Any]`, or `[Any]` when the keys are dense integers.
    static func value(of node: Node) -> Any? {
        switch node {
        case .leaf(let primitive, _):
            switch primitive {
            case .bool(let b): return NSNumber(value: b)
            case .number(let n):
                if n == n.rounded(), abs(n) < 9.0e15 { return NSNumber(value: Int(n)) }
                return NSNumber(value: n)
            case .string(let s): return s
            }
        case .children(let children):
            if children.entries.isEmpty { return nil }
            if let length = arrayLength(children) {
                var array: [Any] = Array(repeating: NSNull(), count: length)
                for (key, child) in children.entries { array[Int(key.integerValue!)] = value(of: child) ?? NSNull() }
                return array
            }
            var dictionary: [String: Any] = [:]
            for (key, child) in children.entries { dictionary[key.string] = value(of: child) }
            return dictionary
        }
    }

    /// The value with priorities as `.priority` / `.value` (Firebase's export format).
    static func exportValue(of node: Node) -> Any? {
        switch node {
        case .leaf(_, let priority):
            guard let priority else { return value(of: node) }
            return [".value": value(of: node.withPriority(nil)) as Any, ".priority": priorityValue(priority)]
        case .children(let children):
            if children.entries.isEmpty { return nil }
            var dictionary: [String: Any] = [:]
            for (key, child) in children.entries { dictionary[key.string] = exportValue(of: child) }
            if let priority = children.priority { dictionary[".priority"] = priorityValue(priority) }
            return dictionary
        }
    }

    static func priorityValue(_ priority: Priority) -> Any {
        switch priority {
        case .number(let n): n == n.rounded() && abs(n) < 9.0e15 ? NSNumber(value: Int(n)) : NSNumber(value: n)
        case .string(let s): s
        }
    }

    /// Keys 0…n-1 (at least half present) render as an array, as in the official SDKs.
    static func arrayLength(_ children: Node.Children) -> Int? {
        var maxIndex = -1
        for key in children.entries.keys {
            guard let n = key.integerValue, n >= 0, key.string == String(n) else { return nil }
            maxIndex = max(maxIndex, Int(n))
        }
        guard maxIndex < 2 * children.entries.count else { return nil }
        return maxIndex + 1
    }

    /// A priority passed to `setValue(_:andPriority:)` or `setPriority(_:)`.
    static func priorityJSON(_ priority: Any?) throws(DatabaseError) -> JSONValue {
        let json = try json(from: priority)
        switch json {
        case .null, .number, .string: return json
        default: throw DatabaseError(.invalidData, "Priorities must be strings or numbers")
        }
    }
}

extension Node {
    /// The node as JSON in export format: priorities kept as `.priority` / `.value`.
    var exportJSON: JSONValue {
        switch self {
        case .leaf(let value, let priority):
            let plain: JSONValue
            switch value {
            case .bool(let b): plain = .bool(b)
            case .number(let n): plain = .number(n)
            case .string(let s): plain = .string(s)
            }
            guard let priority else { return plain }
            return .object([(".value", plain), (".priority", priority.exportJSON)])
        case .children(let children):
            if children.entries.isEmpty { return .null }
            var members = sortedChildren.map { (key: $0.key.string, value: $0.node.exportJSON) }
            if let priority = children.priority { members.append((".priority", priority.exportJSON)) }
            return .object(members)
        }
    }
}

extension Priority {
    var exportJSON: JSONValue {
        switch self {
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        }
    }
}
