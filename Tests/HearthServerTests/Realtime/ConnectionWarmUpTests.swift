import HearthEngine
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Logging
import Testing

/// The connection path run once before the server listens (`RealtimeServerChannel.warmUp`), so that no two
/// event loops instantiate its generic types for the first time at once (docs/decisions/0013-runtime-warm-up.md).
@Suite struct ConnectionWarmUpTests {
    @Test func theWarmUpTakesThePlainHTTPPathAndLeavesNothingBehind() async throws {
        let server = TestServer(emulator: true)
        try await server.runLive { client, port, _ in
            let realtime = try server.realtime
            #expect(RealtimeServerChannel.warmUp(services: realtime, logger: Logger(label: "test")))
            #expect(realtime.sessions.all.isEmpty)
            // The server it ran beside is unaffected.
            let response = try await client.execute(uri: "/.json", method: .get)
            #expect(response.status == .ok)
        }
    }
}
