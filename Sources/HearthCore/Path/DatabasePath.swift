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
        var keys: [Key] = []
        for segment in string.split(separator: "/", omittingEmptySubsequences: true) {
            keys.append(try Key(validating: String(segment)))
        }
        if keys.count > DatabasePath.maximumDepth {
            throw PathError(.tooDeep, "Invalid path: paths must be at most \(DatabasePath.maximumDepth) levels deep")
        }
        self.keys = keys
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
