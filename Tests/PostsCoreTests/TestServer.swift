import HearthTestSupport

/// The shared loopback server, on the Posts app's namespace: the server installs the app's rules
/// there, so these tests run against the real rules.
typealias TestServer = LoopbackServer

extension LoopbackServer {
    static func run(isolation: isolated (any Actor)? = #isolation, _ test: (LoopbackServer) async throws -> Void) async throws {
        try await run(namespace: "posts", isolation: isolation, test)
    }
}
