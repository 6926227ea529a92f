import HearthCore

extension DataSnapshot {
    /// The data decoded as `T`, with a ``SnapshotDecodingError`` naming this location when there is
    /// no data (unless `T` is an Optional) or when it does not decode. A ``DatabaseModel`` gets this
    /// snapshot's key as its ``DatabaseModel/identifier`` and, by default, its own decoder.
    ///
    /// For example:
    /// ```swift
    /// let post = try await database.reference(withPath: "posts/\(id)").getData().decoded(as: Post.self)
    /// ```
    public func decoded<T: Decodable>(as type: T.Type, decoder: Database.Decoder? = nil) throws(SnapshotDecodingError) -> T {
        let path = ref.path.description
        if node.isEmpty, !(T.self is any ExpressibleByNilLiteral.Type) {
            throw SnapshotDecodingError(.noData, path: path, reason: "nothing is stored here")
        }
        let decoder = decoder ?? (T.self as? any DatabaseModel.Type)?.databaseDecoder ?? Database.Decoder()
        let value: T
        do {
            value = try decoder.decode(T.self, from: node)
        } catch {
            throw SnapshotDecodingError(decoding: error, at: path)
        }
        // The key is the model's identity; the stored data does not repeat it.
        if let model = value as? any DatabaseModel, let identified = model.identified(by: key) as? T {
            return identified
        }
        return value
    }

    /// Every child decoded as `T`, in the query's order; children that do not decode are listed in
    /// ``DecodedChildren/failures``.
    ///
    /// For example:
    /// ```swift
    /// let result = snapshot.decodedChildren(as: Post.self)
    /// print(result.values.map(\.title), result.failures.map(\.path))
    /// ```
    public func decodedChildren<T: Decodable>(as type: T.Type, decoder: Database.Decoder? = nil) -> DecodedChildren<T> {
        var children: [DecodedChildren<T>.Child] = []
        var failures: [SnapshotDecodingError] = []
        for child in self.children {
            do {
                children.append(.init(key: child.key, value: try child.decoded(as: T.self, decoder: decoder)))
            } catch {
                failures.append(error)
            }
        }
        return DecodedChildren(children: children, failures: failures)
    }
}
