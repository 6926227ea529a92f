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

    public func open(namespace: String) async throws -> any NamespaceStorage {
        guard NamespaceName.isValid(namespace) else {
            throw StorageError(.invalidNamespace, "Invalid namespace name")
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

    public func load() async throws -> StoredDatabase {
        state.withLock { $0 }
    }

    public func commit(_ mutations: [StorageMutation]) async throws {
        state.withLock { state in
            for mutation in mutations {
                switch mutation {
                case .replace(let path, let node):
                    state.root = state.root.setting(node, at: path)
                case .removeLeafValue:
                    // The engine emits this only before a `.replace` below the same path, and replacing a
                    // child of a leaf already turns it into an inner node that keeps its priority.
                    break
                case .setPriority(let path, let priority):
                    state.root = state.root.setting(state.root.child(at: path).withPriority(priority), at: path)
                }
            }
        }
    }

    public func saveRules(_ source: String) async throws {
        state.withLock { $0.rulesSource = source }
    }

    public func close() async throws {}
}
