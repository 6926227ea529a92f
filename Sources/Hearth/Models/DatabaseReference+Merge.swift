import HearthCore

extension DatabaseReference {
    /// Encodes `value` and merges its top-level members into the data here, as
    /// ``updateChildValues(_:)`` with one entry per member: members it does not encode stay as they
    /// are. Returns when the server has the change.
    ///
    /// For example:
    /// ```swift
    /// struct TitleChange: Encodable { var title: String }
    /// try await database.reference(withPath: "posts/\(id)").updateChildValues(from: TitleChange(title: "New"))
    /// ```
    ///
    /// - Throws: ``DatabaseError`` with ``DatabaseError/Code/invalidData`` when `value` does not
    ///   encode as an object, or the server's refusal.
    @discardableResult
    public func updateChildValues<T: Encodable>(from value: T, encoder: Database.Encoder = Database.Encoder()) async throws -> DatabaseReference {
        let children = try encoder.encodeFields(of: value).map { (path: DatabasePath(keys: [$0.key]), json: $0.value) }
        let repo = self.repo
        let path = self.path
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            repo.update(path: path, children: children.sorted { $0.path.description < $1.path.description }) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
        return self
    }
}
