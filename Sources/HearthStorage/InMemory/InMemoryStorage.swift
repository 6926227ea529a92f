import HearthCore
import Synchronization

/// Storage that keeps everything in memory: for tests and for `hearth serve --in-memory`.
///
/// For example:
/// ```swift
/// let storage = InMemoryStorage()
/// let db = try await storage.open(namespace: "test")
/// ```
public final class InMemoryStorage: DatabaseStorage {
    private let databases = Mutex<[String: InMemoryNamespaceStorage]>([:])

    public init() {}

    public func namespaces() async throws -> [String] {
        databases.withLock { Array($0.keys).sorted() }
    }

    public func contains(namespace: String) async throws -> Bool {
        databases.withLock { $0[namespace] != nil }
    }

    public func open(namespace: String) async throws -> any NamespaceStorage {
        guard NamespaceName.isValid(namespace) else {
            throw DatabaseStorageError(.invalidNamespace, "Invalid namespace name")
        }
        return databases.withLock { databases in
            if let existing = databases[namespace] { return existing }
            let storage = InMemoryNamespaceStorage()
            databases[namespace] = storage
            return storage
        }
    }
}

/// One namespace kept in memory.
public final class InMemoryNamespaceStorage: NamespaceStorage {
    private let state = Mutex(StoredDatabase(root: .empty, rulesSource: nil))
    private let history = Mutex<[RulesVersion]>([])

    public func load() async throws -> StoredDatabase {
        state.withLock { $0 }
    }

    public func commit(_ mutations: [StorageMutation]) async throws {
        state.withLock { state in state.root = InMemoryNamespaceStorage.apply(mutations, to: state.root) }
    }

    /// The tree after `mutations`: what a table of rows would hold after them.
    static func apply(_ mutations: [StorageMutation], to root: Node) -> Node {
        var root = root
        for mutation in mutations {
            switch mutation {
            case .replace(let path, let node):
                root = root.setting(node, at: path)
            case .removeLeafValue:
                // The engine emits this only before a `.replace` below the same path, and replacing a
                // child of a leaf already turns it into an inner node that keeps its priority.
                break
            case .setPriority(let path, let priority):
                root = root.setting(root.child(at: path).withPriority(priority), at: path)
            }
        }
        return root
    }

    public func saveRules(_ source: String, time: Int64) async throws {
        state.withLock { $0.rulesSource = source }
        history.withLock { history in
            history.append(RulesVersion(version: (history.last?.version ?? 0) + 1, source: source, time: time))
            if history.count > RulesVersion.kept { history.removeFirst(history.count - RulesVersion.kept) }
        }
    }

    public func rulesHistory(limit: Int) async throws -> [RulesVersion] {
        history.withLock { Array($0.suffix(limit).reversed()) }
    }

    public func storedBytes() async throws -> Int64? { nil }

    public func close() async throws {}
}
