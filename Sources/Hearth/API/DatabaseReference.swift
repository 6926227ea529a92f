import Foundation
import HearthCore
import Synchronization

/// A location in the database, to read and write (FirebaseDatabase's `DatabaseReference`).
///
/// Write completions run when the server confirms; local observers see the change at once. While
/// offline the write queues and the completion (or `await`) waits for the server.
///
/// For example:
/// ```swift
/// let ada = database.reference(withPath: "users/ada")
/// try await ada.setValue(["name": "Ada", "born": 1815])
/// try await ada.updateChildValues(["born": 1816, "/stats/count": ServerValue.increment(1)])
/// ```
public final class DatabaseReference: DatabaseQuery, @unchecked Sendable, CustomDebugStringConvertible {
    init(database: Database, path: DatabasePath) {
        super.init(database: database, path: path, query: .all)
    }

    /// The last segment of the path; nil at the root.
    public var key: String? { path.last?.string }

    /// The parent location; nil at the root.
    public var parent: DatabaseReference? { path.parent.map { DatabaseReference(database: database, path: $0) } }

    /// The reference to the root of the database.
    public var root: DatabaseReference { DatabaseReference(database: database, path: .root) }

    /// The full URL of this location.
    public var url: String {
        let info = repo.state.withLock { $0.info }
        // Each key as a path segment: the sub-delimiters, `:` and `@` stay (`CharacterSet.urlPathAllowed`
        // on Apple platforms, which this replaced); a space, `%`, `?`, `#` and non-ASCII are escaped.
        let encoded = path.keys.map { PercentEncoding.component($0.string, keeping: Self.pathCharacters) }
        return info.baseURL + (path.isRoot ? "" : "/" + encoded.joined(separator: "/")) + info.namespaceQuery
    }

    /// The full URL, which is also what `"\(ref)"` prints.
    public var debugDescription: String { url }

    /// The full URL of this location, as FirebaseDatabase's `description()` method.
    ///
    /// ```swift
    /// print(ref.description())   // https://demo.example.com/users/ada
    /// ```
    public func description() -> String { url }

    /// What ``url`` leaves unescaped besides RFC 3986's unreserved characters.
    static let pathCharacters = "!$&'()*+,:=@"

    /// A reference to a path below this one (`"a/b"` works).
    public func child(_ pathString: String) -> DatabaseReference {
        DatabaseReference(database: database, path: path.appending(Database.parsePath(pathString)))
    }

    /// A new child with a chronologically ordered, unique key (a push id).
    public func childByAutoId() -> DatabaseReference {
        DatabaseReference(database: database, path: path.child(Key(repo.pushIDs.next())))
    }

    // MARK: Writing

    /// Replaces the data here (`nil` removes it). Accepts `String`, numbers, `Bool`, `[String: Any]`,
    /// `[Any]`, `NSNull` and `ServerValue` placeholders.
    public func setValue(_ value: Any?) {
        setValue(value, withCompletionBlock: nil)
    }

    /// As ``setValue(_:)``, with `block` called when the server confirms or refuses the write.
    public func setValue(_ value: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        write(value, priority: nil, hasPriority: false, block)
    }

    /// Replaces the data here and returns when the server has it.
    @discardableResult
    public func setValue(_ value: Any?) async throws -> DatabaseReference {
        let json = try FoundationValue.json(from: value)
        return try await completion { self.repo.set(path: self.path, json: json, completion: $0) }
    }

    /// Replaces the data here and gives it a priority (a string or a number).
    public func setValue(_ value: Any?, andPriority priority: Any?) {
        setValue(value, andPriority: priority, withCompletionBlock: nil)
    }

    /// As ``setValue(_:andPriority:)``, with a completion block.
    public func setValue(
        _ value: Any?, andPriority priority: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
    ) {
        write(value, priority: priority, hasPriority: true, block)
    }

    @discardableResult
    public func setValue(_ value: Any?, andPriority priority: Any?) async throws -> DatabaseReference {
        let json = try Self.withPriority(try FoundationValue.json(from: value), try FoundationValue.priorityJSON(priority))
        return try await completion { self.repo.set(path: self.path, json: json, completion: $0) }
    }

    private func write(_ value: Any?, priority: Any?, hasPriority: Bool, _ block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        let completion = wrap(block)
        do {
            var json = try FoundationValue.json(from: value)
            if hasPriority { json = try Self.withPriority(json, try FoundationValue.priorityJSON(priority)) }
            repo.set(path: path, json: json, completion: completion)
        } catch {
            repo.fail(completion, error)
        }
    }

    static func withPriority(_ json: JSONValue, _ priority: JSONValue) throws(DatabaseError) -> JSONValue {
        switch json {
        case .null: return .null
        case .object(var members):
            members.removeAll { $0.key == ".priority" }
            members.append((".priority", priority))
            return .object(members)
        case .array(let elements):
            var members = elements.enumerated().map { (key: String($0.offset), value: $0.element) }
            members.append((".priority", priority))
            return .object(members)
        default:
            return .object([(".value", json), (".priority", priority)])
        }
    }

    /// Removes the data here.
    public func removeValue() { setValue(nil) }

    /// As ``removeValue()``, with a completion block.
    public func removeValue(completionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        setValue(nil, withCompletionBlock: block)
    }

    @discardableResult
    public func removeValue() async throws -> DatabaseReference { try await setValue(nil) }

    /// Sets the priority of the data here.
    public func setPriority(_ priority: Any?) { setPriority(priority, withCompletionBlock: nil) }

    /// As ``setPriority(_:)``, with a completion block.
    public func setPriority(_ priority: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        let completion = wrap(block)
        do {
            repo.setPriority(path: path, priority: try FoundationValue.priorityJSON(priority), completion: completion)
        } catch {
            repo.fail(completion, error)
        }
    }

    @discardableResult
    public func setPriority(_ priority: Any?) async throws -> DatabaseReference {
        let json = try FoundationValue.priorityJSON(priority)
        return try await completion { self.repo.setPriority(path: self.path, priority: json, completion: $0) }
    }

    /// Writes several paths (relative to here, `/` allowed inside keys) atomically; other children
    /// stay as they are. A key ending in `.priority` sets the priority of the node above it.
    ///
    /// ```swift
    /// ref.updateChildValues(["ada/name": "Ada", "ada/.priority": 1])
    /// ```
    public func updateChildValues(_ values: [AnyHashable: Any]) {
        updateChildValues(values, withCompletionBlock: nil)
    }

    /// As ``updateChildValues(_:)``, with a completion block.
    public func updateChildValues(_ values: [AnyHashable: Any], withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        let completion = wrap(block)
        do {
            repo.update(path: path, children: try Self.updateChildren(values), completion: completion)
        } catch {
            repo.fail(completion, error)
        }
    }

    @discardableResult
    public func updateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        let children = try Self.updateChildren(values)
        return try await completion { self.repo.update(path: self.path, children: children, completion: $0) }
    }

    static func updateChildren(_ values: [AnyHashable: Any]) throws(DatabaseError) -> [(path: DatabasePath, json: JSONValue)] {
        var children: [(path: DatabasePath, json: JSONValue)] = []
        for (key, value) in values {
            guard let name = key.base as? String else { throw DatabaseError(.invalidData, "Update keys must be strings") }
            let relative: DatabasePath
            // A key may end in `.priority` to set the priority of the node above it, as Firebase's SDKs allow.
            do { relative = try DatabasePath(updateKey: name) } catch { throw DatabaseError(.invalidData, error.message) }
            guard !relative.isRoot else { throw DatabaseError(.invalidData, "Update keys must not be empty") }
            let json = try FoundationValue.json(from: value)
            if relative.isPriority {
                switch json {
                case .null, .number, .string: break
                case .object(let members) where members.count == 1 && members[0].key == ".sv": break
                default: throw DatabaseError(.invalidData, "Priorities must be strings, numbers or server values")
                }
            }
            children.append((relative, json))
        }
        // By keys, as the server compares them: by text, `a-b` would sort between `a` and `a/.priority`.
        children.sort { a, b in
            a.path.keys.lexicographicallyPrecedes(b.path.keys) { $0.string.utf8.lexicographicallyPrecedes($1.string.utf8) }
        }
        for (a, b) in zip(children, children.dropFirst()) where a.path.contains(b.path) {
            throw DatabaseError(.invalidData, "Path \(a.path) is an ancestor of \(b.path) in the same update")
        }
        // Priorities after values, as the server applies them: a priority given with its node's new value holds.
        return children.filter { !$0.path.isPriority } + children.filter(\.path.isPriority)
    }

    // MARK: onDisconnect

    /// When this client's connection ends, the server sets this value.
    public func onDisconnectSetValue(_ value: Any?) { onDisconnectSetValue(value, withCompletionBlock: nil) }

    /// As ``onDisconnectSetValue(_:)``, with `block` called when the server has registered it.
    public func onDisconnectSetValue(_ value: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        onDisconnect("o", { () throws(DatabaseError) in try FoundationValue.json(from: value) }, block)
    }

    @discardableResult
    public func onDisconnectSetValue(_ value: Any?) async throws -> DatabaseReference {
        let json = try FoundationValue.json(from: value)
        return try await completion { self.repo.onDisconnect(action: "o", path: self.path, data: json, completion: $0) }
    }

    /// When this client's connection ends, the server sets this value and priority.
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) {
        onDisconnectSetValue(value, andPriority: priority, withCompletionBlock: nil)
    }

    /// As ``onDisconnectSetValue(_:andPriority:)``, with a completion block.
    public func onDisconnectSetValue(
        _ value: Any?, andPriority priority: Any?, withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
    ) {
        onDisconnect("o", { () throws(DatabaseError) in
            try Self.withPriority(try FoundationValue.json(from: value), try FoundationValue.priorityJSON(priority))
        }, block)
    }

    @discardableResult
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) async throws -> DatabaseReference {
        let json = try Self.withPriority(try FoundationValue.json(from: value), try FoundationValue.priorityJSON(priority))
        return try await completion { self.repo.onDisconnect(action: "o", path: self.path, data: json, completion: $0) }
    }

    /// When this client's connection ends, the server removes the data here.
    public func onDisconnectRemoveValue() { onDisconnectSetValue(nil) }

    /// As ``onDisconnectRemoveValue()``, with a completion block.
    public func onDisconnectRemoveValue(completionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        onDisconnectSetValue(nil, withCompletionBlock: block)
    }

    @discardableResult
    public func onDisconnectRemoveValue() async throws -> DatabaseReference { try await onDisconnectSetValue(nil) }

    /// When this client's connection ends, the server applies this update.
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) {
        onDisconnectUpdateChildValues(values, withCompletionBlock: nil)
    }

    /// As ``onDisconnectUpdateChildValues(_:)``, with a completion block.
    public func onDisconnectUpdateChildValues(
        _ values: [AnyHashable: Any], withCompletionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
    ) {
        onDisconnect("om", { () throws(DatabaseError) in
            .object(try Self.updateChildren(values).map { (key: $0.path.keys.map(\.string).joined(separator: "/"), value: $0.json) })
        }, block)
    }

    @discardableResult
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        let data = JSONValue.object(try Self.updateChildren(values).map { (key: $0.path.keys.map(\.string).joined(separator: "/"), value: $0.json) })
        return try await completion { self.repo.onDisconnect(action: "om", path: self.path, data: data, completion: $0) }
    }

    /// Cancels the onDisconnect operations at and below this location.
    public func cancelDisconnectOperations() { cancelDisconnectOperations(completionBlock: nil) }

    /// As ``cancelDisconnectOperations()``, with a completion block.
    public func cancelDisconnectOperations(completionBlock block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) {
        onDisconnect("oc", { () throws(DatabaseError) in .null }, block)
    }

    @discardableResult
    public func cancelDisconnectOperations() async throws -> DatabaseReference {
        try await completion { self.repo.onDisconnect(action: "oc", path: self.path, data: nil, completion: $0) }
    }

    private func onDisconnect(
        _ action: String, _ data: () throws(DatabaseError) -> JSONValue, _ block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?
    ) {
        let completion = wrap(block)
        do {
            let json = try data()
            repo.onDisconnect(action: action, path: path, data: action == "oc" ? nil : json, completion: completion)
        } catch {
            repo.fail(completion, error)
        }
    }

    // MARK: Transactions

    /// Updates the data here atomically: `block` gets the current value and returns the new one (or
    /// aborts); it may run again, up to 25 times, when another client changed the data first.
    public func runTransactionBlock(_ block: @escaping @Sendable (MutableData) -> TransactionResult) {
        runTransactionBlock(block, andCompletionBlock: nil, withLocalEvents: true)
    }

    /// Runs a transaction; `completionBlock` gets the error, whether it committed, and the data.
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?
    ) {
        runTransactionBlock(block, andCompletionBlock: completionBlock, withLocalEvents: true)
    }

    /// With `localEvents` false, observers see only the committed result, not each attempt.
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?,
        withLocalEvents localEvents: Bool
    ) {
        repo.startTransaction(path: path, update: block, completion: completionBlock, applyLocally: localEvents)
    }

    /// Runs a transaction; returns whether it committed and the resulting snapshot.
    ///
    /// ```swift
    /// let (committed, snapshot) = try await counter.runTransactionBlock { data in
    ///     data.value = ((data.value as? Int) ?? 0) + 1
    ///     return .success(withValue: data)
    /// }
    /// ```
    public func runTransactionBlock(_ block: @escaping @Sendable (MutableData) -> TransactionResult) async throws -> (Bool, DataSnapshot) {
        try await withCheckedThrowingContinuation { continuation in
            runTransactionBlock(block, andCompletionBlock: { error, committed, snapshot in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: (committed, snapshot ?? DataSnapshot(reference: self, node: .empty, index: .key)))
                }
            })
        }
    }

    // MARK: Helpers

    private func wrap(_ block: (@Sendable ((any Error)?, DatabaseReference) -> Void)?) -> Repo.WriteCompletion? {
        guard let block else { return nil }
        let reference = self
        return { @Sendable error in block(error, reference) }
    }

    private func completion(_ start: (@escaping Repo.WriteCompletion) -> Void) async throws -> DatabaseReference {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            start { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
        return self
    }

    /// Turns all database connections of the default instance off and on (Firebase's class methods).
    public static func goOffline() { Database.database().goOffline() }
    public static func goOnline() { Database.database().goOnline() }
}
