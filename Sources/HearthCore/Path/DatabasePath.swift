/// A location in a database, such as `/users/ada/name`.
///
/// Empty segments are ignored, as the Firebase SDKs do, so `//a///b` is `/a/b`. The root is `/`.
///
/// For example:
/// ```swift
/// let path = try DatabasePath("/users/ada")
/// #expect(path.child(Key("name")).description == "/users/ada/name")
/// ```
public struct DatabasePath: Sendable, Hashable, CustomStringConvertible {
    /// The keys from the root down.
    public var keys: [Key]

    /// The deepest path Firebase accepts, in segments.
    public static let maximumDepth = 32

    /// The root location.
    public static let root = DatabasePath(keys: [])

    public init(keys: [Key]) {
        self.keys = keys
    }

    /// Parses and validates a slash-separated path. Segments are taken literally (no percent-decoding).
    public init(_ string: String) throws(PathError) {
        let segments = Self.segments(of: string)
        var keys: [Key] = []
        keys.reserveCapacity(segments.count)
        for segment in segments {
            keys.append(try Key(validating: String(segment)))
        }
        if keys.count > DatabasePath.maximumDepth {
            throw PathError(.tooDeep, "Invalid path: paths must be at most \(DatabasePath.maximumDepth) levels deep")
        }
        self.keys = keys
    }

    /// Parses a key of a multi-location update (a PATCH body's, the `m` and `om` requests'): a path as
    /// ``init(_:)`` parses it, which may end in `.priority` to set the priority of the node above it, as
    /// Firebase's SDKs allow (`update(ref, {"a/.priority": 5})`). That last key is ``Key/priority``.
    ///
    /// ```swift
    /// #expect(try DatabasePath(updateKey: "a/.priority").keys == [Key("a"), .priority])
    /// ```
    public init(updateKey string: String) throws(PathError) {
        var segments = Self.segments(of: string)
        let priority = segments.last == ".priority"
        if priority { segments.removeLast() }
        var keys: [Key] = []
        keys.reserveCapacity(segments.count + 1)
        for segment in segments {
            keys.append(try Key(validating: String(segment)))
        }
        if keys.count > DatabasePath.maximumDepth {
            throw PathError(.tooDeep, "Invalid path: paths must be at most \(DatabasePath.maximumDepth) levels deep")
        }
        if priority { keys.append(.priority) }
        self.keys = keys
    }

    /// Whether the path names a priority (its last key is ``Key/priority``): only an update's may.
    public var isPriority: Bool { keys.last?.isPriority == true }

    /// The node the path is about: the path itself, or for a priority the node above it (where its rules
    /// are checked and its row is written).
    public var node: DatabasePath { isPriority ? DatabasePath(keys: Array(keys.dropLast())) : self }

    /// The non-empty segments of a slash-separated path, in order: `"//a///b/"` gives `["a", "b"]`.
    ///
    /// Split on the UTF-8 bytes, as Firebase's SDKs split on code units: a slash followed by a combining
    /// mark still separates two segments. (`split` on a `String` walks grapheme clusters, which kept
    /// such a slash inside a segment and was 40 % of parsing a server frame in a streaming SDK client.)
    ///
    /// ```swift
    /// #expect(DatabasePath.segments(of: "/users//ada/") == ["users", "ada"])
    /// ```
    public static func segments(of string: String) -> [Substring] {
        // The common case, a native string: the slashes are found in its contiguous bytes, and each
        // segment made from offsets (constant time on UTF-8 storage).
        if let found = string.utf8.withContiguousStorageIfAvailable({ bytes -> [Substring] in
            var segments: [Substring] = []
            let utf8 = string.utf8
            var start = 0
            for offset in 0...bytes.count where offset == bytes.count || bytes[offset] == UInt8(ascii: "/") {
                if offset != start {
                    let from = utf8.index(utf8.startIndex, offsetBy: start)
                    segments.append(string[from..<utf8.index(from, offsetBy: offset - start)])
                }
                start = offset + 1
            }
            return segments
        }) {
            return found
        }
        var segments: [Substring] = []
        let bytes = string.utf8
        var start = bytes.startIndex
        var index = start
        while index != bytes.endIndex {
            if bytes[index] == UInt8(ascii: "/") {
                if index != start { segments.append(string[start..<index]) }
                start = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        if start != bytes.endIndex { segments.append(string[start...]) }
        return segments
    }

    public var isRoot: Bool { keys.isEmpty }
    public var count: Int { keys.count }
    public var last: Key? { keys.last }

    public var parent: DatabasePath? {
        isRoot ? nil : DatabasePath(keys: Array(keys.dropLast()))
    }

    public func child(_ key: Key) -> DatabasePath {
        DatabasePath(keys: keys + [key])
    }

    public func appending(_ path: DatabasePath) -> DatabasePath {
        DatabasePath(keys: keys + path.keys)
    }

    /// True when `self` is `other` or one of its ancestors.
    public func contains(_ other: DatabasePath) -> Bool {
        guard keys.count <= other.keys.count else { return false }
        for i in keys.indices where keys[i] != other.keys[i] { return false }
        return true
    }

    /// `other` relative to `self`, when `self` contains it.
    public func relativePath(to other: DatabasePath) -> DatabasePath? {
        contains(other) ? DatabasePath(keys: Array(other.keys[keys.count...])) : nil
    }

    public var description: String {
        keys.isEmpty ? "/" : "/" + keys.map(\.string).joined(separator: "/")
    }
}
