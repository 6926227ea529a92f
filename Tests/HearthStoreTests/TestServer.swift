import HearthTestSupport

/// The shared loopback server, on namespace `demo` with open rules until a test sets some (and no
/// `.indexOn` required, so tests can query freely).
typealias TestServer = LoopbackServer

extension LoopbackServer {
    static func run(isolation: isolated (any Actor)? = #isolation, _ test: (LoopbackServer) async throws -> Void) async throws {
        try await run(namespace: "demo", enforceIndexes: false, isolation: isolation, test)
    }
}
