import HearthCore
import HearthProtocol
import Testing

/// The protocol's framing and message decoding as pure state machines, without sockets.
@Suite struct WireFramingTests {
    @Test func keepAlivesCountsAndMessagesAreToldApart() throws {
        var assembler = WireFrameAssembler()
        #expect(try assembler.receive("0") == .keepAlive)
        #expect(try assembler.receive("00") == .keepAlive)
        #expect(try assembler.receive(#"{"t":"c"}"#) == .message(#"{"t":"c"}"#))
        #expect(try assembler.receive("2") == .incomplete)
        // Inside a fragmented message every frame is content, even one that looks like a count.
        #expect(try assembler.receive("7") == .incomplete)
        #expect(try assembler.receive("0") == .message("70"))
        // Seven digits is not a count (at most six), so it is a message.
        #expect(try assembler.receive("1234567") == .message("1234567"))
    }

    @Test func reassembledMessagesAreBounded() throws {
        var assembler = WireFrameAssembler(maximumMessageBytes: 10)
        #expect(try assembler.receive("3") == .incomplete)
        #expect(try assembler.receive("123456") == .incomplete)
        #expect(throws: WireError.self) { try assembler.receive("123456") }
    }

    @Test func longMessagesSplitBetweenScalarsIntoCountedChunks() {
        // 16,383 ASCII characters then an astral scalar (two UTF-16 units) that must not be cut.
        let text = String(repeating: "a", count: 16_383) + "😀" + String(repeating: "b", count: 20_000)
        let frames = WireFrameAssembler.frames(for: Array(text.utf8))
        let chunks = frames.dropFirst().map { String(decoding: $0, as: UTF8.self) }
        #expect(String(decoding: frames[0], as: UTF8.self) == String(chunks.count))
        #expect(chunks.joined() == text)
        #expect(chunks.allSatisfy { $0.utf16.count <= 16_384 })
        #expect(chunks[0].utf16.count == 16_383)  // the emoji moved to the next chunk whole
        #expect(WireFrameAssembler.frames(for: Array("short".utf8)).count == 1)
    }

    @Test func requestsDecodeIntoActions() throws {
        guard case .request(let listen) = try ClientMessage(parsing: #"{"t":"d","d":{"r":3,"a":"q","b":{"p":"posts","q":{"l":2,"vf":"r","i":"starCount"},"t":1,"h":""}}}"#),
            case .listen(let path, let query?, let tag, let hash) = listen.action
        else {
            Issue.record("not a tagged listen")
            return
        }
        let posts = try DatabasePath("/posts")
        let starCount = QueryIndex.child(try DatabasePath("starCount"))
        #expect(listen.number == 3 && path == posts && tag == 1 && hash == "")
        #expect(query.query.limit == .last(2) && query.query.index == starCount)
        // Android's paths have no leading slash; a `.priority` put addresses the priority.
        guard case .request(let put) = try ClientMessage(parsing: #"{"t":"d","d":{"r":0,"a":"p","b":{"p":"a/b/.priority","d":5}}}"#),
            case .put(let target, true, .number(5), nil) = put.action
        else {
            Issue.record("not a priority put")
            return
        }
        let priorityTarget = try DatabasePath("/a/b")
        #expect(target == priorityTarget)
        guard case .ping = try ClientMessage(parsing: #"{"t":"c","d":{"t":"p","d":{}}}"#) else {
            Issue.record("not a ping")
            return
        }
    }

    @Test func malformedRequestsBecomeReplies() throws {
        for (body, status) in [
            (#"{"r":1,"a":"q","b":{"p":"bad.key","h":""}}"#, "invalid_data"),
            (#"{"r":1,"a":"q","b":{"p":"/x","q":{"l":-1}}}"#, "invalid_data"),
            (#"{"r":1,"a":"m","b":{"p":"/x","d":[1]}}"#, "invalid_data"),
            (#"{"r":1,"a":"zap","b":{}}"#, "failure"),
        ] {
            guard case .request(let request) = try ClientMessage(parsing: #"{"t":"d","d":\#(body)}"#),
                case .invalid(let got, _) = request.action
            else {
                Issue.record("\(body) was accepted")
                continue
            }
            #expect(got == status, "\(body)")
        }
        // Without a request number there is nothing to reply to: a protocol error.
        #expect(throws: WireError.self) { try ClientMessage(parsing: #"{"t":"d","d":{"a":"q","b":{}}}"#) }
        #expect(throws: WireError.self) { try ClientMessage(parsing: "not json") }
    }

    @Test func pushesAreEncodedOnceAndTaggedPerListener() throws {
        let push = ServerMessage.Push.merge(path: try DatabasePath("/posts"), items: [("p3", .empty), ("p4", .leaf(.number(8)))])
        #expect(String(decoding: push.encoded(tag: nil), as: UTF8.self) == #"{"t":"d","d":{"a":"m","b":{"p":"posts","d":{"p3":null,"p4":8}}}}"#)
        #expect(String(decoding: push.encoded(tag: 7), as: UTF8.self) == #"{"t":"d","d":{"a":"m","b":{"p":"posts","d":{"p3":null,"p4":8},"t":7}}}"#)
        #expect(String(decoding: ServerMessage.listenRevoked(path: .root, query: nil), as: UTF8.self) == #"{"t":"d","d":{"a":"c","b":{"p":""}}}"#)
    }
}
