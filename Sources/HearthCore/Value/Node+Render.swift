import HashTreeCollections
/// How a node is rendered as JSON.
public enum RenderFormat: Sendable {
    /// Plain values; array-like objects become arrays; priorities are left out.
    case normal
    /// `format=export`: priorities included as `.priority` / `.value`, never arrays.
    case export
    /// As ``normal`` below the top, where an object stays an object: a query's result and a `shallow`
    /// answer, which Firebase's REST API gives as objects even when their keys are 0, 1, 2….
    case objects

    /// The format of what the rendered value holds.
    public var forChildren: RenderFormat { self == .objects ? .normal : self }
}

extension Node {
    /// The node as JSON text bytes. The empty node is `null`.
    ///
    /// For example:
    /// ```swift
    /// let node = try Node(json: try JSONValue(parsing: #"["a","b"]"#))
    /// #expect(String(decoding: node.jsonBytes(), as: UTF8.self) == #"["a","b"]"#)
    /// ```
    public func jsonBytes(format: RenderFormat = .normal, pretty: Bool = false) -> [UInt8] {
        var writer = JSONWriter(pretty: pretty)
        write(to: &writer, format: format)
        return writer.bytes
    }

    public func jsonString(format: RenderFormat = .normal, pretty: Bool = false) -> String {
        String(decoding: jsonBytes(format: format, pretty: pretty), as: UTF8.self)
    }

    public func write(to writer: inout JSONWriter, format: RenderFormat = .normal) {
        switch self {
        case .leaf(let value, let priority):
            if format == .export, let priority {
                writer.beginObject()
                writer.newline()
                writer.writeKey(".value")
                writer.write(primitive: value)
                writer.comma()
                writer.newline()
                writer.writeKey(".priority")
                writer.write(primitive: priority.primitive)
                writer.endObject(empty: false)
            } else {
                writer.write(primitive: value)
            }
        case .children(let children):
            if children.entries.isEmpty {
                writer.writeRaw("null")
                return
            }
            let sorted = children.entries.sortedByKey
            if format == .normal, let count = Node.arrayLength(sorted) {
                writer.beginArray()
                var next = 0
                for (index, (key, child)) in sorted.enumerated() {
                    let position = Int(key.integerValue!)
                    while next < position {
                        if next > 0 { writer.comma() }
                        writer.newline()
                        writer.writeRaw("null")
                        next += 1
                    }
                    if next > 0 || index > 0 { writer.comma() }
                    writer.newline()
                    child.write(to: &writer, format: format.forChildren)
                    next += 1
                }
                _ = count
                writer.endArray(empty: false)
                return
            }
            writer.beginObject()
            for (index, (key, child)) in sorted.enumerated() {
                if index > 0 { writer.comma() }
                writer.newline()
                writer.writeKey(key.string)
                child.write(to: &writer, format: format.forChildren)
            }
            if format == .export, let priority = children.priority {
                writer.comma()
                writer.newline()
                writer.writeKey(".priority")
                writer.write(primitive: priority.primitive)
            }
            writer.endObject(empty: false)
        }
    }

    /// The array length when sorted children render as an array: every key a canonical non-negative
    /// integer and the largest key less than twice the count (the JS SDK's rule).
    static func arrayLength(_ sorted: [(key: Key, value: Node)]) -> Int? {
        var maxIndex = -1
        for (key, _) in sorted {
            guard let n = key.integerValue, n >= 0, key.string == String(n) else { return nil }
            maxIndex = max(maxIndex, Int(n))
        }
        guard maxIndex < 2 * sorted.count else { return nil }
        return maxIndex + 1
    }

    /// `shallow=true`: a primitive as is, an object with every child replaced by `true`.
    public func shallow() -> Node {
        switch self {
        case .leaf(let v, _): return .leaf(v)
        case .children(let c):
            return .children(Children(entries: ChildMap(entries: c.entries.map { (key: $0.key, value: .leaf(.bool(true))) })))
        }
    }

    /// The node as a ``JSONValue`` (normal format, objects in key order, no array conversion).
    public var jsonValue: JSONValue {
        switch self {
        case .leaf(let v, _):
            switch v {
            case .bool(let b): return .bool(b)
            case .number(let n): return .number(n)
            case .string(let s): return .string(s)
            }
        case .children(let c):
            if c.entries.isEmpty { return .null }
            return .object(sortedChildren.map { (key: $0.key.string, value: $0.node.jsonValue) })
        }
    }
}

extension JSONWriter {
    public mutating func write(primitive: Primitive) {
        switch primitive {
        case .bool(let b): writeRaw(b ? "true" : "false")
        case .number(let n): writeNumber(n)
        case .string(let s): writeString(s)
        }
    }
}
