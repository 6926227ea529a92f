import HearthCore

/// A value that knows where it lives in the database and saves or deletes itself: the model
/// protocol of apps that keep "one place for database calls" (an identifier, an endpoint, JSON
/// conversion through `Codable`, and default ``save(in:)`` and ``delete(in:)``).
///
/// A model is stored at `<endpoint>/<identifier>`. The identifier is the key, not a field: a
/// top-level `identifier` member is never written, and decoding a snapshot sets it from the key.
/// ``secondaryEndpoints`` name other collections that keep a copy under the same key (the Posts
/// app's `user-posts/<uid>`); every write covers all of them in one atomic multi-path update, so
/// either all copies change or none does.
///
/// For example:
/// ```swift
/// struct Post: DatabaseModel, Equatable {
///     var identifier: String?
///     var uid: String
///     var title: String
///     var endpoint: String { "posts" }
///     var secondaryEndpoints: [String] { ["user-posts/\(uid)"] }
/// }
///
/// var post = Post(uid: user.uid, title: "Hello")
/// try await post.save(in: database)      // a new push ID, in posts/ and user-posts/<uid>/
/// post.title = "Hello, world"
/// try await post.save(in: database)      // merges the fields; others stay
/// try await post.delete(in: database)    // removes both copies
/// ```
public protocol DatabaseModel: Codable, Sendable {
    /// The model's key under ``endpoint``; nil until the first save.
    var identifier: String? { get set }
    /// The collection the model is saved in, such as `posts`.
    var endpoint: String { get }
    /// Other collections that keep a copy under the same key, such as `user-posts/<uid>`. None by
    /// default.
    var secondaryEndpoints: [String] { get }
    /// The encoder for writes (Firebase's defaults unless a model needs other strategies).
    static var databaseEncoder: Database.Encoder { get }
    /// The decoder for reads, used by ``DataSnapshot/decoded(as:decoder:)`` for this type.
    static var databaseDecoder: Database.Decoder { get }
}

extension DatabaseModel {
    public var secondaryEndpoints: [String] { [] }
    public static var databaseEncoder: Database.Encoder { Database.Encoder() }
    public static var databaseDecoder: Database.Decoder { Database.Decoder() }

    /// Decodes a model from a snapshot; its identifier is the snapshot's key.
    ///
    /// ```swift
    /// let post = try Post(snapshot: try await ref.getData())
    /// ```
    public init(snapshot: DataSnapshot) throws(SnapshotDecodingError) {
        self = try snapshot.decoded(as: Self.self)
    }

    /// The model's location (`<endpoint>/<identifier>`), or nil before the first save.
    public func reference(in database: Database) -> DatabaseReference? {
        identifier.map { database.reference(withPath: endpoint).child($0) }
    }

    /// Writes the model. A new one (no identifier) gets a push ID and is written whole at every
    /// endpoint; an existing one has its encoded fields merged, so fields it does not know (or that
    /// it leaves out, such as nil optionals) stay as they are. All endpoints change in one atomic
    /// update; the identifier is set once the server has accepted it.
    ///
    /// - Throws: ``DatabaseError`` when the server refuses the write (for example
    ///   ``DatabaseError/Code/permissionDenied`` on any one of the endpoints), or when the model
    ///   does not encode as an object.
    public mutating func save(in database: Database) async throws {
        let fields = try databaseFields()
        let isNew = identifier == nil
        let key = identifier ?? database.repo.pushIDs.next()
        var children: [(path: DatabasePath, json: JSONValue)] = []
        for location in try locations(of: key) {
            if isNew {
                children.append((location, .object(fields.map { (key: $0.key.string, value: $0.value) })))
            } else {
                for field in fields { children.append((location.child(field.key), field.value)) }
            }
        }
        try await database.repo.update(atomically: children)
        identifier = key
    }

    /// Writes the model with the database of ``Database/database()``.
    public mutating func save() async throws {
        try await save(in: Database.database())
    }

    /// Removes the model from every endpoint in one atomic update.
    ///
    /// - Throws: ``DatabaseError`` with ``DatabaseError/Code/invalidData`` when the model was never
    ///   saved, or the server's refusal.
    public func delete(in database: Database) async throws {
        guard let identifier else { throw DatabaseError(.invalidData, "\(Self.self) has no identifier: it was never saved") }
        try await database.repo.update(atomically: try locations(of: identifier).map { ($0, JSONValue.null) })
    }

    /// Removes the model with the database of ``Database/database()``.
    public func delete() async throws {
        try await delete(in: Database.database())
    }

    /// A copy with `key` as its identifier.
    func identified(by key: String) -> Self {
        var copy = self
        copy.identifier = key
        return copy
    }

    /// The encoded members, without the identifier (the key already says it).
    private func databaseFields() throws -> [(key: Key, value: JSONValue)] {
        try Self.databaseEncoder.encodeFields(of: self).filter { $0.key.string != "identifier" }
    }

    private func locations(of key: String) throws(DatabaseError) -> [DatabasePath] {
        let locations: [DatabasePath]
        do {
            locations = try ([endpoint] + secondaryEndpoints).map { try DatabasePath($0).child(try Key(validating: key)) }
        } catch {
            throw DatabaseError(.invalidData, "\(Self.self): \(error)")
        }
        for (index, location) in locations.enumerated() {
            for other in locations[(index + 1)...] where location.contains(other) || other.contains(location) {
                throw DatabaseError(.invalidData, "\(Self.self): endpoints \(location) and \(other) overlap")
            }
        }
        return locations
    }
}

extension Database.Encoder {
    /// The top-level members of `value`'s encoding, which must be an object, with valid keys.
    func encodeFields<T: Encodable>(of value: T) throws -> [(key: Key, value: JSONValue)] {
        guard case .object(let members) = try encodeJSON(value) else {
            throw DatabaseError(.invalidData, "\(T.self) must encode as an object (a keyed container)")
        }
        return try members.map { member in
            do {
                return (try Key(validating: member.key), member.value)
            } catch {
                throw DatabaseError(.invalidData, "\(T.self): \(error)")
            }
        }
    }
}

extension Repo {
    /// Applies `children` (absolute paths) as one multi-path update and returns when the server
    /// has accepted it.
    func update(atomically children: [(path: DatabasePath, json: JSONValue)]) async throws {
        let sorted = children.sorted { $0.path.description < $1.path.description }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            update(path: .root, children: sorted) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }
}
