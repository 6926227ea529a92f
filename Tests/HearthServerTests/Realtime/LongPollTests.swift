import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HearthCore
import HearthEngine
import HearthProtocol
import HearthRealtimeClient
@testable import HearthServer
import HTTPTypes
import HummingbirdTesting
import Testing

/// Long polling (`/.lp`), as the web SDK's BrowserPollConnection speaks it: start, polls carrying the
/// client's messages in base64 segments (reassembled whatever order the polls arrive in), numbered
/// answers, held polls released by time or by the next poll, the disconnect frame, and refusals.
@Suite struct LongPollTests {
    /// A long-poll client: it encodes messages as the SDK does and decodes answers. Each poll is its own
    /// HTTP request (URLSession), so two can be outstanding at once, as in a browser.
    struct Poller {
        let base: String
        let id: String
        let password: String
        var segment = 0

        static let callback = "42"

        static func start(port: Int, namespace: String = "demo") async throws -> (Poller, [JSONValue]) {
            let base = "http://127.0.0.1:\(port)"
            let reply = try await get(base + "/.lp?start=t&ser=1&cb=\(callback)&v=5&ns=\(namespace)")
            #expect(reply.status == .ok)
            #expect(reply.contentType == "application/javascript; charset=utf-8")
            let command = try #require(reply.body.firstMatch(of: /^parent\.pLPCommand42\("start","(\w+)","(\w+)"\);/))
            let poller = Poller(base: base, id: String(command.1), password: String(command.2))
            let answers = Self.answers(reply.body)
            #expect(answers.map(\.number) == [0])
            return (poller, answers.flatMap(\.messages))
        }

        /// `pRTLPCB42(n, [...])` calls of an answer.
        static func answers(_ script: String) -> [(number: Int, messages: [JSONValue])] {
            script.matches(of: /parent\.pRTLPCB42\((\d+),(\[.*?\])\);(?=parent\.|$)/.dotMatchesNewlines()).map { match in
                guard case .array(let messages)? = try? JSONValue(parsing: String(match.2)) else { return (Int(match.1)!, []) }
                return (Int(match.1)!, messages)
            }
        }

        /// The query segments of messages, as the SDK makes them (web-safe base64, `.` for padding,
        /// split into pieces of `size` characters).
        mutating func segments(_ messages: [String], size: Int = 1840) -> [String] {
            var parameters: [String] = []
            for message in messages {
                let encoded = Data(message.utf8).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ".")
                let pieces = stride(from: 0, to: encoded.count, by: size).map { start in
                    let from = encoded.index(encoded.startIndex, offsetBy: start)
                    return String(encoded[from..<(encoded.index(from, offsetBy: size, limitedBy: encoded.endIndex) ?? encoded.endIndex)])
                }
                for piece in pieces {
                    parameters.append("seg\(parameters.count)=\(segment)&ts\(parameters.count)=\(pieces.count)&d\(parameters.count)=\(piece)")
                    segment += 1
                }
            }
            return parameters
        }

        func poll(_ segments: [String] = [], password: String? = nil) async throws -> Answer {
            let query = (["id=\(id)", "pw=\(password ?? self.password)", "ser=2"] + segments).joined(separator: "&")
            return try await Self.get(base + "/.lp?\(query)")
        }

        struct Answer: Sendable {
            var status: HTTPResponse.Status
            var contentType: String?
            var body: String
        }

        /// Its own sessions' pool: the shared one allows a few connections per host, which the other
        /// suites' long-held requests (event streams, polls) to 127.0.0.1 can take while a test here
        /// keeps hundreds of polls outstanding.
        static let session: URLSession = {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 512
            return URLSession(configuration: configuration)
        }()

        static func get(_ url: String) async throws -> Answer {
            var request = URLRequest(url: try #require(URL(string: url)))
            request.timeoutInterval = 60
            let (data, response) = try await session.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            return Answer(
                status: HTTPResponse.Status(code: http.statusCode), contentType: http.value(forHTTPHeaderField: "Content-Type"),
                body: String(decoding: data, as: UTF8.self)
            )
        }
    }

    /// Segment parameters numbered from 0 within one poll, as the SDK numbers them.
    static func renumbered(_ list: ArraySlice<String>) -> [String] {
        list.enumerated().map { index, parameter in
            parameter.replacing(/^seg\d+=/, with: "seg\(index)=").replacing(/&ts\d+=/, with: "&ts\(index)=")
                .replacing(/&d\d+=/, with: "&d\(index)=")
        }
    }

    static func request(_ number: Int, _ action: String, _ body: String) -> String {
        #"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#
    }

    @Test func aConnectionStartsWithItsHandshakeAndCarriesRequestsAndPushes() async throws {
        try await TestServer(emulator: true).runLive { client, port, _ in
            var (poller, first) = try await Poller.start(port: port)
            #expect(first.first?["t"] == .string("c"))
            #expect(first.first?["d"]?["t"] == .string("h"))
            #expect(first.first?["d"]?["d"]?["s"] == .string(poller.id))
            #expect(first.first?["d"]?["d"]?["v"] == .string("5"))
            // A listen and a write in one poll: the answers come in order, numbered from 1.
            let reply = try await poller.poll(poller.segments([
                Self.request(1, "q", #"{"p":"/a","h":""}"#), Self.request(2, "p", #"{"p":"/a","d":42}"#),
            ]))
            var messages = Poller.answers(reply.body).flatMap(\.messages)
            while messages.count < 3 {
                let more = try await poller.poll()
                messages += Poller.answers(more.body).flatMap(\.messages)
            }
            #expect(messages.map { $0.jsonText } == [
                #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":{}}}}"#,
                #"{"t":"d","d":{"a":"d","b":{"p":"a","d":42}}}"#,
                #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#,
            ])
            // A ping is answered with a pong.
            let pong = try await poller.poll(poller.segments([#"{"t":"c","d":{"t":"p","d":{}}}"#]))
            #expect(Poller.answers(pong.body).flatMap(\.messages).map(\.jsonText) == [#"{"t":"c","d":{"t":"o","d":null}}"#])
        }
    }

    /// The server side of a long-polling connection, to wait on instead of sleeping.
    static func transport(_ server: TestServer, _ poller: Poller) throws -> LongPollTransport {
        try #require(try server.realtime.sessions.session(poller.id)?.transport as? LongPollTransport)
    }

    @Test func segmentsOfOneMessageArriveInAnyOrderAndAcrossPolls() async throws {
        let server = TestServer(emulator: true)
        try await server.runLive { client, port, registry in
            var (poller, _) = try await Poller.start(port: port)
            let transport = try Self.transport(server, poller)
            // A value of 4,800 bytes: 6,400 characters of base64 in four segments (the SDK sends at most ~1,840 per poll).
            let text = String(repeating: "é日x", count: 800)
            let segments = poller.segments([Self.request(1, "p", #"{"p":"/big","d":"\#(text)"}"#)], size: 1700)
            #expect(segments.count == 4)
            // Each in its own poll, out of order; each new poll releases the one held before it, empty.
            let sender = poller
            let order = [2, 0, 3, 1]
            let answers = try await withThrowingTaskGroup(of: (Int, Poller.Answer).self) { group in
                for (position, index) in order.enumerated() {
                    let parameter = Self.renumbered(segments[index...index])
                    group.addTask { (index, try await sender.poll(parameter)) }
                    // The next goes once this one has arrived, so they arrive in this order.
                    try await eventually { transport.receivedPolls == position + 1 }
                }
                var answers: [Int: Poller.Answer] = [:]
                for try await (index, answer) in group { answers[index] = answer }
                return answers
            }
            #expect([2, 0, 3].map { answers[$0]?.body } == ["", "", ""])
            // The poll that completed the message waited for its reply.
            #expect(Poller.answers(answers[1]?.body ?? "").flatMap(\.messages).map(\.jsonText) == [#"{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}"#])
            #expect(try await registry.database("demo").snapshot().child(at: try DatabasePath("/big")) == .leaf(.string(text)))
            _ = client
        }
    }

    @Test func aHeldPollIsAnsweredEmptyAfterItsTimeOrByTheNextPoll() async throws {
        let server = TestServer(emulator: true)
        try await server.runLive { client, port, _ in
            let (poller, _) = try await Poller.start(port: port)
            let transport = try Self.transport(server, poller)
            async let held = poller.poll()
            // Nothing to send: the poll waits until the server's clock passes the hold time.
            try await eventually { transport.heldPolls == 1 }
            await server.advance(by: LongPollTransport.holdDuration)
            #expect(try await held.status == .ok)
            #expect(try await held.body == "")
            // A second poll releases the first at once, empty, and waits itself; then a write elsewhere
            // answers it with the next number.
            async let first = poller.poll()
            try await eventually { transport.heldPolls == 1 && transport.receivedPolls == 2 }
            async let second = poller.poll()
            #expect(try await first.body == "")
            var listener = poller
            let listen = try await listener.poll(listener.segments([Self.request(1, "q", #"{"p":"/x","h":""}"#)]))
            #expect(try await second.body == "")
            #expect(Poller.answers(listen.body).map(\.number) == [1])
        }
    }

    @Test func aPollCarryingARequestReleasesTheHeldOneEmptyAndTheReplyComesOnIt() async throws {
        let server = TestServer(emulator: true)
        try await server.runLive { client, port, _ in
            var (poller, _) = try await Poller.start(port: port)
            let transport = try Self.transport(server, poller)
            // Many times over: the reply is written while the poll that carried the request is taken in.
            for number in 1...40 {
                let before = transport.receivedPolls
                let waiting = poller
                async let held = waiting.poll()
                try await eventually { transport.receivedPolls == before + 1 && transport.heldPolls == 1 }
                let answer = try await poller.poll(poller.segments([Self.request(number, "p", #"{"p":"/n/\#(number)","d":\#(number)}"#)]))
                #expect(try await held.body == "")
                #expect(Poller.answers(answer.body).flatMap(\.messages).map(\.jsonText) == [#"{"t":"d","d":{"r":\#(number),"b":{"s":"ok","d":""}}}"#])
            }
        }
    }

    @Test func wrongPasswordsUnknownIdsAndBadCallbacksAreRefused() async throws {
        try await TestServer(emulator: true).runLive { client, port, _ in
            let (poller, _) = try await Poller.start(port: port)
            #expect(try await poller.poll(password: "guess").status == .notFound)
            #expect(try await Poller.get(poller.base + "/.lp?id=nobody&pw=x&ser=1").status == .notFound)
            // The callback is written into scripts: only digits.
            #expect(try await Poller.get(poller.base + "/.lp?start=t&ser=1&cb=alert(1)&v=5").status == .badRequest)
            #expect(try await Poller.get(poller.base + "/.lp?start=t&ser=1&cb=1&v=4").status == .badRequest)
            // A segment numbered far ahead of the next one expected is not a client's: the connection closes.
            let (far, _) = try await Poller.start(port: port)
            #expect(try await far.poll(["seg0=\(LongPollTransport.segmentLookahead + 5)&ts0=1&d0=e30."]).status == .badRequest)
            #expect(try await far.poll().status == .notFound)
            // Nor is a message of more segments than may wait at once: its total used to overflow (a crash).
            let (long, _) = try await Poller.start(port: port)
            #expect(try await long.poll(["seg0=0&ts0=1&d0=e30.&seg1=1&ts1=\(Int.max)&d1=x"]).status == .badRequest)
            #expect(try await long.poll().status == .notFound)
            // Data that is not base64 of the protocol closes the connection.
            #expect(try await poller.poll(["seg0=0&ts0=1&d0=%%%%"]).status == .badRequest)
            #expect(try await poller.poll().status == .notFound)
        }
    }

    @Test func rulesApplyAndOnDisconnectFiresWhenTheConnectionCloses() async throws {
        let server = TestServer()
        try await server.runLive { client, port, registry in
            #expect(try await client.call(.put, "/.settings/rules.json?ns=demo", #"{"rules": {"open": {".read": true, ".write": true}}}"#).status == .ok)
            var (poller, _) = try await Poller.start(port: port)
            let reply = try await poller.poll(poller.segments([
                Self.request(1, "p", #"{"p":"/closed","d":1}"#), Self.request(2, "o", #"{"p":"/open/gone","d":"bye"}"#),
            ]))
            var messages = Poller.answers(reply.body).flatMap(\.messages)
            while messages.count < 2 { messages += Poller.answers(try await poller.poll().body).flatMap(\.messages) }
            #expect(messages.first?["d"]?["b"]?["s"] == .string("permission_denied"))
            #expect(messages.last?["d"]?["b"]?["s"] == .string("ok"))
            // Silent past the idle timeout: the session ends and its onDisconnect write is applied.
            await server.advance(by: server.configuration.realtimeIdleTimeout * 2)
            let database = try await registry.database("demo")
            try await eventually { database.snapshot().child(at: try! DatabasePath("/open/gone")) == .leaf(.string("bye")) }
            #expect(try await poller.poll().status == .notFound)
        }
    }

    @Test func aWebSocketUpgradeOfALongPollIsDeclined() async throws {
        try await TestServer(emulator: true).runLive { client, port, _ in
            let (poller, _) = try await Poller.start(port: port)
            await #expect(throws: (any Error).self) {
                _ = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo&s=\(poller.id)")
            }
            // The long-polling connection goes on.
            #expect(try await Poller.get(poller.base + "/.lp?id=\(poller.id)&pw=\(poller.password)&ser=3&seg0=0&ts0=1&d0=eyJ0IjoiYyIsImQiOnsidCI6InAiLCJkIjp7fX19").status == .ok)
        }
    }
}
