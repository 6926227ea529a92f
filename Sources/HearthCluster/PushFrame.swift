import HearthCore
import HearthStorage
import NIOCore

/// One frame of the commit push stream (`GET /.cluster/v1/push`): an owner node sends every log entry it
/// commits to the nodes subscribed to it, so they need not fetch the entry from the shared storage.
///
/// Binary, length-prefixed (entry payloads are JSON of any size and may hold any byte sequence):
/// `kind: UInt8, length: UInt32 (big-endian), body`. Bodies:
/// - `hello` (1): the sending node's name, UTF-8: the first frame of every stream.
/// - `heartbeat` (2): empty; sent when the stream has been quiet, so the subscriber knows it is alive.
/// - `entry` (3): `namespace length: UInt16, namespace, sequence: Int64, payload` — exactly the log
///   entry the owner committed.
///
/// For example:
/// ```swift
/// var buffer = ByteBuffer()
/// PushFrame.entry(namespace: "demo", LogEntry(sequence: 7, payload: "{…}")).write(to: &buffer)
/// var decoder = PushFrameDecoder()
/// let frames = try decoder.feed(buffer)
/// ```
enum PushFrame: Sendable, Equatable {
    case hello(node: String)
    case heartbeat
    case entry(namespace: String, LogEntry)

    enum Kind: UInt8 {
        case hello = 1
        case heartbeat = 2
        case entry = 3
    }

    static let headerSize = 5

    func write(to buffer: inout ByteBuffer) {
        switch self {
        case .hello(let node):
            buffer.writeInteger(Kind.hello.rawValue)
            buffer.writeInteger(UInt32(node.utf8.count))
            buffer.writeString(node)
        case .heartbeat:
            buffer.writeInteger(Kind.heartbeat.rawValue)
            buffer.writeInteger(UInt32(0))
        case .entry(let namespace, let entry):
            buffer.writeInteger(Kind.entry.rawValue)
            let namespaceBytes = namespace.utf8.count
            buffer.writeInteger(UInt32(2 + namespaceBytes + 8 + entry.payload.utf8.count))
            buffer.writeInteger(UInt16(namespaceBytes))
            buffer.writeString(namespace)
            buffer.writeInteger(entry.sequence)
            buffer.writeString(entry.payload)
        }
    }

    /// The frame's encoding on its own.
    var bytes: ByteBuffer {
        var buffer = ByteBuffer()
        write(to: &buffer)
        return buffer
    }
}

/// A frame the push stream cannot carry or read: the stream is closed and the subscriber falls back to
/// the log. Never carries user data.
struct PushFrameError: HearthError, Equatable {
    var message: String
}

/// Cuts a push stream, arriving in chunks of any size, into frames.
struct PushFrameDecoder {
    /// Larger frames are refused (a damaged stream, or not a push stream at all); owners push no entry
    /// above ``CommitFeed/largestPushedEntry``.
    static let largestFrame = 64 * 1024 * 1024

    private var buffer = ByteBuffer()

    /// Bytes received that do not make a whole frame yet.
    var bufferedBytes: Int { buffer.readableBytes }

    /// Adds a chunk and returns the frames it completes, in order.
    /// - Throws: ``PushFrameError`` on an unknown kind, an oversized frame or a malformed body.
    mutating func feed(_ chunk: ByteBuffer) throws -> [PushFrame] {
        var chunk = chunk
        buffer.writeBuffer(&chunk)
        var frames: [PushFrame] = []
        while buffer.readableBytes >= PushFrame.headerSize {
            let start = buffer.readerIndex
            guard let kindByte = buffer.getInteger(at: start, as: UInt8.self),
                let length = buffer.getInteger(at: start + 1, as: UInt32.self)
            else { break }
            guard let kind = PushFrame.Kind(rawValue: kindByte) else {
                throw PushFrameError(message: "A push frame of unknown kind \(kindByte)")
            }
            guard length <= PushFrameDecoder.largestFrame else {
                throw PushFrameError(message: "A push frame of \(length) bytes is too large")
            }
            guard buffer.readableBytes >= PushFrame.headerSize + Int(length) else { break }
            buffer.moveReaderIndex(forwardBy: PushFrame.headerSize)
            guard var body = buffer.readSlice(length: Int(length)) else { break }
            frames.append(try PushFrameDecoder.frame(kind, body: &body))
        }
        // Keeps the buffer from growing with every chunk: what was read is dropped.
        buffer.discardReadBytes()
        return frames
    }

    private static func frame(_ kind: PushFrame.Kind, body: inout ByteBuffer) throws -> PushFrame {
        switch kind {
        case .hello:
            return .hello(node: body.readString(length: body.readableBytes) ?? "")
        case .heartbeat:
            guard body.readableBytes == 0 else { throw PushFrameError(message: "A push heartbeat has a body") }
            return .heartbeat
        case .entry:
            guard let namespaceLength = body.readInteger(as: UInt16.self),
                let namespace = body.readString(length: Int(namespaceLength)),
                let sequence = body.readInteger(as: Int64.self)
            else { throw PushFrameError(message: "A pushed entry is malformed") }
            let payload = body.readString(length: body.readableBytes) ?? ""
            return .entry(namespace: namespace, LogEntry(sequence: sequence, payload: payload))
        }
    }
}
