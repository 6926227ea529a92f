public import HearthCore

/// Durable storage for all of a server's databases (namespaces).
///
/// Implementations: ``InMemoryStorage`` for tests, `SQLiteStorage` (the embedded default) and, later,
/// PostgreSQL. The engine only ever sees this protocol.
///
/// For example:
/// ```swift
/// let storage: any DatabaseStorage = InMemoryStorage()
/// let db = try await storage.open(namespace: "demo")
/// try await db.commit([.replace(try DatabasePath("/a"), .leaf(.number(1)))])
/// ```
public protocol DatabaseStorage: Sendable {
    /// The namespaces that hold stored data or rules.
    func namespaces() async throws -> [String]
    /// Whether the namespace has stored data or rules (without creating it).
    func contains(namespace: String) async throws -> Bool
    /// Opens (creating when needed) the storage of one namespace.
    func open(namespace: String) async throws -> any NamespaceStorage
}

/// The storage of one database namespace.
public protocol NamespaceStorage: Sendable {
    /// Loads everything: the data tree and the stored rules source, if any.
    func load() async throws -> StoredDatabase
    /// Applies the mutations in order, atomically and durably: when this returns, they survive a crash;
    /// when it throws, none of them is applied.
    func commit(_ mutations: [StorageMutation]) async throws
    /// Stores the rules source text durably, as a new version of the history, saved at `time` (Unix
    /// milliseconds).
    func saveRules(_ source: String, time: Int64) async throws
    /// The saved versions of the rules, newest first (at most `limit`).
    func rulesHistory(limit: Int) async throws -> [RulesVersion]
    /// How many bytes the namespace takes on disk; nil for storage that keeps nothing on disk.
    func storedBytes() async throws -> Int64?
    /// Releases resources. Further calls fail.
    func close() async throws
    /// A tree that reads its data from storage on demand, to answer reads while ``load()`` runs, when the
    /// stored data is at least `minimumBytes` (nil: load first). See ``StoredTreeSource``.
    func warmStart(minimumBytes: Int) async throws -> StoredDatabase?
}

extension NamespaceStorage {
    public func warmStart(minimumBytes: Int) async throws -> StoredDatabase? { nil }
}

/// What a namespace's storage holds.
public struct StoredDatabase: Sendable {
    public var root: Node
    public var rulesSource: String?

    public init(root: Node, rulesSource: String?) {
        self.root = root
        self.rulesSource = rulesSource
    }
}

/// One saved version of a rules document (database or storage rules).
public struct RulesVersion: Sendable, Equatable {
    /// Increases with every save.
    public var version: Int64
    public var source: String
    /// When it was saved, in Unix milliseconds.
    public var time: Int64

    public init(version: Int64, source: String, time: Int64) {
        self.version = version
        self.source = source
        self.time = time
    }

    /// How many versions the stores keep: older ones are dropped as new ones are saved.
    public static let kept = 100
}

/// One change to stored data, in tree terms. The engine turns each write into a few of these.
public enum StorageMutation: Sendable, Equatable {
    /// The whole subtree at the path (its value, children and priority) becomes the node.
    /// An empty node deletes the subtree: one range delete.
    case replace(DatabasePath, Node)
    /// Only the leaf value stored at the path goes away (its priority stays): used when a leaf gains
    /// children and becomes an inner node.
    case removeLeafValue(DatabasePath)
    /// The priority of the node at the path.
    case setPriority(DatabasePath, Priority?)
}

/// A storage failure. Its description never contains user data.
public typealias DatabaseStorageError = CodedError<DatabaseStorageErrorCode>

/// What went wrong, for matching in code.
public enum DatabaseStorageErrorCode: Sendable, Equatable {
    case unavailable, corrupt, invalidNamespace, locked
    /// A shared database's lease moved to another node: this node may no longer commit to it.
    case fenced
    /// A shared database's log has entries the committing owner has not applied (another node's rules
    /// change, an import): nothing was applied; the owner applies them, then commits again.
    case behind
}

/// Namespace names: letters, digits, `-` and `_`, starting with a letter or digit, at most 63 characters.
public enum NamespaceName {
    public static func isValid(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        guard !utf8.isEmpty, utf8.count <= 63 else { return false }
        for (i, c) in utf8.enumerated() {
            let alnum = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            if !(alnum || (i > 0 && (c == UInt8(ascii: "-") || c == UInt8(ascii: "_")))) { return false }
        }
        return true
    }
}

/// Planning: turning an applied write into mutations that touch O(size of the write) rows.
extension StorageMutation {
    /// The mutations that take `before` to `after` for a write of `node` at `path`.
    public static func plan(before: Node, after: Node, path: DatabasePath, node: Node) -> [StorageMutation] {
        if node.isEmpty {
            // A delete may empty its ancestors, which then vanish: delete from the highest one.
            var highest = path
            while let parent = highest.parent, after.child(at: parent).isEmpty, !before.child(at: parent).isEmpty {
                highest = parent
            }
            return [.replace(highest, .empty)]
        }
        // One walk down `before`: an ancestor that was a leaf loses its value row. (Looking each
        // ancestor up from the root, with its path built as it went, showed in a write's profile.)
        var mutations: [StorageMutation] = []
        var ancestor = before
        for (depth, key) in path.keys.enumerated() {
            if ancestor.isLeaf { mutations.append(.removeLeafValue(DatabasePath(keys: Array(path.keys.prefix(depth))))) }
            ancestor = ancestor.child(key)
        }
        mutations.append(.replace(path, node))
        return mutations
    }
}
