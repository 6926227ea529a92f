#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HashTreeCollections
public import HearthCore

/// The row layout shared by the table-based backends: one row per leaf value and one per priority.
///
/// A row's key is its path with each segment preceded by the byte `0x01`, which sorts below every byte a
/// key may contain. So a node's subtree is exactly the key range `[P + 0x01, P + 0x02)`, and sorting
/// rows by key is a pre-order walk of the tree: loading needs no lookups. A priority row is the node's
/// key plus `0x01 0x01`, which sorts right after the node and before its children. Values are the JSON
/// text of the primitive.
public enum NodeRows {
    static let separator: UInt8 = 0x01

    /// The row key of a node's value.
    public static func key(_ path: DatabasePath) -> String {
        var bytes: [UInt8] = []
        for key in path.keys {
            bytes.append(separator)
            bytes.append(contentsOf: key.string.utf8)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The row key of a node's priority.
    public static func priorityKey(_ path: DatabasePath) -> String {
        key(path) + "\u{1}\u{1}"
    }

    /// The half-open key range holding every descendant row of `path` (not the node's own value row).
    public static func descendantRange(_ path: DatabasePath) -> (lower: String, upper: String) {
        let base = key(path)
        return (base + "\u{1}", base + "\u{2}")
    }

    /// Calls `body` with (key, JSON value text) for every row of `node` placed at `path`.
    public static func forEachRow(of node: Node, at path: DatabasePath, _ body: (String, String) throws -> Void) rethrows {
        var prefix: [UInt8] = []
        for key in path.keys {
            prefix.append(separator)
            prefix.append(contentsOf: key.string.utf8)
        }
        try walk(node, prefix: &prefix, body)
    }

    private static func walk(_ node: Node, prefix: inout [UInt8], _ body: (String, String) throws -> Void) rethrows {
        switch node {
        case .leaf(let value, let priority):
            try body(String(decoding: prefix, as: UTF8.self), encode(value))
            if let priority { try body(String(decoding: prefix + [1, 1], as: UTF8.self), encode(priority.primitive)) }
        case .children(let children):
            if children.entries.isEmpty { return }
            if let priority = children.priority {
                try body(String(decoding: prefix + [1, 1], as: UTF8.self), encode(priority.primitive))
            }
            for (key, child) in children.entries {
                let length = prefix.count
                prefix.append(separator)
                prefix.append(contentsOf: key.string.utf8)
                try walk(child, prefix: &prefix, body)
                prefix.removeSubrange(length...)
            }
        }
    }

    public static func encode(_ value: Primitive) -> String {
        var writer = JSONWriter()
        writer.write(primitive: value)
        return writer.string
    }

    public static func decode(_ text: String) throws -> Primitive {
        switch try JSONValue(parsing: text) {
        case .bool(let b): return .bool(b)
        case .number(let n): return .number(n)
        case .string(let s): return .string(s)
        default: throw DatabaseStorageError(.corrupt, "A stored value is not a JSON primitive")
        }
    }
}

/// Rebuilds a tree from rows delivered in key order (a pre-order walk), with a stack and no lookups.
///
/// For example:
/// ```swift
/// var builder = TreeBuilder()
/// try builder.add(key: NodeRows.key(try DatabasePath("/a")), value: "1")
/// let root = builder.finish()
/// ```
public struct TreeBuilder {
    struct Level {
        var key: Key
        var keys: [Key] = []
        var nodes: [Node] = []
        var value: Primitive?
        var priority: Priority?
    }

    /// Level 0 is the root (its key unused).
    var stack: [Level] = [Level(key: Key(""))]
    /// A partial build (one key range of several) keeps nodes it saw only a priority for, as stubs that
    /// ``merge(_:_:)`` attaches to the node from the other range.
    let keepsPriorityStubs: Bool

    public init(partial: Bool = false) {
        keepsPriorityStubs = partial
    }

    /// Adds one row. Rows must arrive in ascending key order.
    public mutating func add(key: String, value: String) throws {
        var key = key
        var value = value
        try key.withUTF8 { keyBytes in
            try value.withUTF8 { valueBytes in try add(key: keyBytes, value: valueBytes) }
        }
    }

    /// Adds one row from raw bytes (as SQLite hands them out), allocating only for new tree levels.
    public mutating func add(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) throws {
        var end = key.count
        var isPriority = false
        if end >= 2, key[end - 1] == 1, key[end - 2] == 1 {
            isPriority = true
            end -= 2
        }
        guard end == 0 || key[0] == 1 else { throw DatabaseStorageError(.corrupt, "A stored row key is malformed") }
        // Walk the segments, keeping the levels whose keys match and closing the rest.
        var level = 0
        var start = 1
        var matching = true
        while start <= end {
            var stop = start
            while stop < end, key[stop] != 1 { stop += 1 }
            let segment = UnsafeBufferPointer(rebasing: key[start..<stop])
            level += 1
            if matching, level < stack.count, TreeBuilder.equal(stack[level].key, segment) {
                start = stop + 1
                continue
            }
            if matching {
                matching = false
                while stack.count > level { closeTop() }
            }
            stack.append(Level(key: Key(String(decoding: segment, as: UTF8.self))))
            start = stop + 1
        }
        if matching { while stack.count > level + 1 { closeTop() } }
        var parser = JSONParser(UnsafeRawBufferPointer(value))
        let primitive: Primitive
        switch try parser.parseDocument() {
        case .bool(let b): primitive = .bool(b)
        case .number(let n): primitive = .number(n)
        case .string(let s): primitive = .string(s)
        default: throw DatabaseStorageError(.corrupt, "A stored value is not a JSON primitive")
        }
        if isPriority {
            switch primitive {
            case .number(let n): stack[stack.count - 1].priority = .number(n)
            case .string(let s): stack[stack.count - 1].priority = .string(s)
            case .bool: throw DatabaseStorageError(.corrupt, "A stored priority is a boolean")
            }
        } else {
            stack[stack.count - 1].value = primitive
        }
    }

    /// Compares a key with raw bytes without going through generic collection code.
    @inline(__always)
    static func equal(_ key: Key, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var string = key.string
        return string.withUTF8 { own in
            own.count == bytes.count && (own.count == 0 || memcmp(own.baseAddress!, bytes.baseAddress!, own.count) == 0)
        }
    }

    mutating func closeTop() {
        let level = stack.removeLast()
        let node = TreeBuilder.node(of: level, keepingStub: keepsPriorityStubs)
        if !node.isEmpty || TreeBuilder.stubPriority(node) != nil {
            stack[stack.count - 1].keys.append(level.key)
            stack[stack.count - 1].nodes.append(node)
        }
    }

    static func node(of level: Level, keepingStub: Bool) -> Node {
        if let value = level.value, level.keys.isEmpty { return .leaf(value, priority: level.priority) }
        if level.keys.isEmpty {
            return keepingStub && level.priority != nil ? .children(Node.Children(priority: level.priority)) : .empty
        }
        let entries = ChildMap(entries: level.keys.indices.map { (key: level.keys[$0], value: level.nodes[$0]) })
        return .children(Node.Children(entries: entries, priority: level.priority))
    }

    /// Merges two trees built from disjoint, adjacent key ranges (`a` before `b`): they overlap only along
    /// the path to the boundary, so only that path is merged child by child.
    public static func merge(_ a: Node, _ b: Node) -> Node {
        if let priority = stubPriority(a) { return b.isEmpty ? a : b.withPriority(b.priority ?? priority) }
        if let priority = stubPriority(b) { return a.isEmpty ? b : a.withPriority(a.priority ?? priority) }
        guard case .children(let left) = a, case .children(let right) = b else { return a.isEmpty ? b : a }
        if left.entries.isEmpty { return b }
        if right.entries.isEmpty { return a }
        // Insert the smaller side into the larger; keep `a` before `b` when recursing.
        let leftIsLarger = left.entries.count >= right.entries.count
        var large = leftIsLarger ? left : right
        let small = leftIsLarger ? right : left
        for (key, node) in small.entries {
            if let existing = large.entries[key] {
                large.entries[key] = leftIsLarger ? merge(existing, node) : merge(node, existing)
            } else {
                large.entries[key] = node
            }
        }
        large.priority = left.priority ?? right.priority
        return .children(large)
    }

    /// The priority of a stub: a node seen only through its priority row.
    static func stubPriority(_ node: Node) -> Priority? {
        if case .children(let children) = node, children.entries.isEmpty { return children.priority }
        return nil
    }

    /// The tree of all rows added.
    public mutating func finish() -> Node {
        while stack.count > 1 { closeTop() }
        return TreeBuilder.node(of: stack[0], keepingStub: keepsPriorityStubs)
    }

    /// Drops a stub left at the top of a merged tree (a priority row whose node had no data).
    public static func finalize(_ node: Node) -> Node {
        stubPriority(node) != nil ? .empty : node
    }
}
