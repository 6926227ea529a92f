import AsyncHTTPClient

extension HTTPClient {
    /// Runs `body` with a client of its own and shuts the client down afterwards, whether `body`
    /// returns or throws (AsyncHTTPClient requires a shutdown before the client is released).
    ///
    /// For example:
    /// ```swift
    /// try await HTTPClient.withClient(configuration: .init()) { client in try await measure(client) }
    /// ```
    static func withClient(configuration: Configuration, _ body: (HTTPClient) async throws -> Void) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await body(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
