import HearthProtocol
import NIOCore
import NIOWebSocket

/// Where a realtime session's messages travel: a WebSocket, or a series of long-polling HTTP requests
/// (`/.lp`). The session decides what to send and in which order; the transport only carries whole
/// protocol messages.
protocol RealtimeTransport: Sendable {
    /// Runs `body` serially with the transport's writes (a WebSocket's event loop).
    func execute(_ body: @escaping @Sendable () -> Void)
    /// Whether the transport takes more now (false while a WebSocket's socket is backed up).
    var isWritable: Bool { get }
    /// Sends whole protocol messages, in order.
    func write(_ messages: [ByteBuffer])
    /// Ends the connection the polite way (a WebSocket close frame; a long poll's `close` command).
    func close(code: WebSocketErrorCode)
    /// Ends the connection at once (the client does not keep up).
    func abort()
    /// Asks the client to show it is there (a WebSocket ping, answered by a pong); a long poll shows it
    /// by polling, so it sends nothing.
    func ping()
    /// Reads from the client, or stops (backpressure), as `isPaused` says when the transport gets to it.
    func refreshReading(isPaused: @escaping @Sendable () -> Bool)
}

/// A WebSocket channel: each message is a text frame, split into the protocol's fragments past
/// 16,384 characters.
struct WebSocketRealtimeTransport: RealtimeTransport {
    let channel: any Channel

    func execute(_ body: @escaping @Sendable () -> Void) {
        channel.eventLoop.execute(body)
    }

    var isWritable: Bool { channel.isWritable }

    func write(_ messages: [ByteBuffer]) {
        for message in messages {
            if message.readableBytes <= WireFrameAssembler.maximumFrameLength {
                channel.write(WebSocketFrame(fin: true, opcode: .text, data: message), promise: nil)
            } else {
                for chunk in WireFrameAssembler.frames(for: Array(message.readableBytesView)) {
                    channel.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: chunk)), promise: nil)
                }
            }
        }
        channel.flush()
    }

    func ping() {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: channel.allocator.buffer(capacity: 0)), promise: nil)
        }
    }

    /// Sends a close frame and closes (within two seconds, even if the client does not read the frame).
    func close(code: WebSocketErrorCode) {
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let channel = self.channel
        let deadline = channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)).whenComplete { _ in
            deadline.cancel()
            channel.close(promise: nil)
        }
    }

    func abort() {
        channel.close(promise: nil)
    }

    /// Stops or restarts the socket's reads (TCP then holds the client back).
    func refreshReading(isPaused: @escaping @Sendable () -> Bool) {
        let channel = self.channel
        channel.eventLoop.execute {
            let paused = isPaused()
            try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: !paused)
            if !paused { channel.read() }
        }
    }
}
