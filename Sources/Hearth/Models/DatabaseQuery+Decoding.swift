extension DatabaseQuery {
    /// Reads the query once and decodes every child as `T`, in the query's order, reporting the
    /// children that do not decode.
    ///
    /// For example:
    /// ```swift
    /// let top = try await posts.queryOrdered(byChild: "starCount").queryLimited(toLast: 10)
    ///     .getDecodedChildren(as: Post.self)
    /// ```
    public func getDecodedChildren<T: Decodable>(as type: T.Type, decoder: Database.Decoder? = nil) async throws -> DecodedChildren<T> {
        try await getData().decodedChildren(as: T.self, decoder: decoder)
    }

    /// The query's children decoded as `T`, each time the query's value changes, as an
    /// `AsyncSequence`. Ending the loop or cancelling the task removes the observer.
    ///
    /// Buffering: the newest value only, as ``values``: a slow consumer skips intermediate states
    /// but always gets the latest one. A refused listen ends the sequence with the error.
    ///
    /// For example:
    /// ```swift
    /// for try await posts in database.reference(withPath: "posts").decodedChildren(as: Post.self) {
    ///     render(posts.values)
    /// }
    /// ```
    public func decodedChildren<T: Decodable & Sendable>(
        as type: T.Type,
        decoder: Database.Decoder? = nil
    ) -> AsyncThrowingMapSequence<AsyncThrowingStream<DataSnapshot, any Error>, DecodedChildren<T>> {
        values.map { $0.decodedChildren(as: T.self, decoder: decoder) }
    }
}
