import HTTPTypes
import Testing

@testable import HearthServer

/// A request that asks for an upgrade the server does not make is served as plain HTTP: before, NIO's
/// upgrade handler dropped it and closed the connection without an answer (`curl --http2 http://…`).
@Suite struct DeclinedUpgradeTests {
    static let webSocketHeaders = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"

    @Test func anUpgradeToAnotherProtocolIsAnsweredAsPlainHTTP() async throws {
        try await TestServer(emulator: true).runLive { client, port, _ async throws in
            try await client.call(.put, "/greeting.json", #""hello""#)
            let request = "GET /greeting.json HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings, close\r\n"
                + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nAuthorization: Bearer \(TestServer.secret)\r\n\r\n"
            let answer = try #require(try await RequestLimitTests.exchange(port: port, sending: [request]))
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            #expect(answer.hasSuffix(#""hello""#))
        }
    }

    @Test func aWebSocketUpgradeOffTheRealtimePathIsAnsweredAsPlainHTTP() async throws {
        try await TestServer(emulator: true).runLive { _, port, _ async throws in
            let request = "GET /missing.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\(Self.webSocketHeaders)"
                + "Authorization: Bearer \(TestServer.secret)\r\n\r\n"
            let answer = try #require(try await RequestLimitTests.exchange(port: port, sending: [request]))
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(80))")
            #expect(answer.hasSuffix("null"))
        }
    }

    @Test func aLongPollsUpgradeIsDeclinedWithAnAnswerAndARealOneIsTaken() async throws {
        try await TestServer(emulator: true).runLive { _, port, _ async throws in
            let declined = "GET /.ws?v=5&s=abc&ns=demo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\(Self.webSocketHeaders)\r\n"
            let answer = try #require(try await RequestLimitTests.exchange(port: port, sending: [declined]))
            #expect(answer.hasPrefix("HTTP/1.1 404"))
            let taken = "GET /.ws?v=5&ns=demo HTTP/1.1\r\nHost: x\r\n\(Self.webSocketHeaders)\r\n"
            let upgraded = try await RequestLimitTests.exchange(port: port, sending: [taken], patience: .seconds(2))
            // The WebSocket stays open (nil: still open when the patience ran out) after its 101.
            #expect(upgraded == nil)
        }
    }
}
