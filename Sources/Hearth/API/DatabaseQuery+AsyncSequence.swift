import HearthCore

extension DatabaseQuery {
    /// The query's value, each time it changes, as an `AsyncSequence`. Ending the loop or cancelling
    /// the task removes the observer.
    ///
    /// Buffering: the newest value only (`.bufferingNewest(1)`). A slow consumer skips intermediate
    /// states but always gets the latest one. A refused listen ends the sequence with the error.
    ///
    /// ```swift
    /// for try await snapshot in ref.values { print(snapshot.value ?? "nil") }
    /// ```
    public var values: AsyncThrowingStream<DataSnapshot, any Error> {
        stream(.value, buffering: .bufferingNewest(1)) { snapshot, _ in snapshot }
    }

    /// The events of one kind as an `AsyncSequence`. Ending the loop or cancelling the task removes
    /// the observer.
    ///
    /// Buffering: unbounded — child events describe changes, and dropping one would corrupt whatever
    /// the consumer builds from them.
    ///
    /// ```swift
    /// for try await added in messages.events(.childAdded) { print(added.key) }
    /// ```
    public func events(_ type: DataEventType) -> AsyncThrowingStream<DataSnapshot, any Error> {
        stream(type, buffering: .unbounded) { snapshot, _ in snapshot }
    }

    /// As ``events(_:)``, with the key of the previous sibling in the query's order.
    public func eventsWithPreviousSiblingKey(_ type: DataEventType) -> AsyncThrowingStream<(DataSnapshot, String?), any Error> {
        stream(type, buffering: .unbounded) { ($0, $1) }
    }

    private func stream<Element>(
        _ type: DataEventType,
        buffering: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy,
        _ transform: @escaping @Sendable (DataSnapshot, String?) -> Element
    ) -> AsyncThrowingStream<Element, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Element, any Error>.makeStream(bufferingPolicy: buffering)
        let handle = repo.addObserver(
            spec: spec, type: type,
            callback: { snapshot, previous in continuation.yield(transform(snapshot, previous)) },
            cancel: { error in continuation.finish(throwing: error) }
        )
        let repo = self.repo
        continuation.onTermination = { _ in repo.removeObserver(handle) }
        return stream
    }
}
