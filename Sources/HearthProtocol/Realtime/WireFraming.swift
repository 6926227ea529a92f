public import HearthCore

/// The framing layer of the Realtime Database WebSocket protocol (v5): fragment counts, keep-alives, and
/// splitting long messages.
///
/// A message longer than 16,384 UTF-16 code units travels as a frame holding only the decimal number of
/// chunks, then the chunks. A frame `"0"` is a client keep-alive. Frames that are neither are whole JSON
/// messages.
///
/// For example:
/// ```swift
/// var assembler = WireFrameAssembler()
/// #expect(try assembler.receive("2") == .incomplete)
/// #expect(try assembler.receive(#"{"t":"d","#) == .incomplete)
/// #expect(try assembler.receive(#""d":{}}"#) == .message(#"{"t":"d","d":{}}"#))
/// ```
public struct WireFrameAssembler: Sendable {
    public enum Output: Sendable, Equatable {
        /// A whole message (JSON text).
        case message(String)
        /// A client keep-alive (`"0"`): nothing to do.
        case keepAlive
        /// More frames are needed.
        case incomplete
    }

    /// The most UTF-16 code units in one frame.
    public static let maximumFrameLength = 16_384
    /// The largest fragment count a client can announce (iOS reads at most 4 digits).
    public static let maximumFragmentCount = 9_999

    private var remaining = 0
    private var parts: [String] = []
    private var bufferedBytes = 0
    /// The most bytes one reassembled message may have.
    public let maximumMessageBytes: Int

    public init(maximumMessageBytes: Int = 256 * 1024 * 1024) {
        self.maximumMessageBytes = maximumMessageBytes
    }

    public mutating func receive(_ frame: String) throws(WireError) -> Output {
        if remaining > 0 {
            bufferedBytes += frame.utf8.count
            guard bufferedBytes <= maximumMessageBytes else { throw WireError("Message too large") }
            parts.append(frame)
            remaining -= 1
            if remaining > 0 { return .incomplete }
            let message = parts.joined()
            parts = []
            bufferedBytes = 0
            return .message(message)
        }
        if frame == "0" { return .keepAlive }
        let utf8 = frame.utf8
        if utf8.count <= 6, !utf8.isEmpty, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // A count of zero ("00") announces nothing: ignored like a keep-alive.
            remaining = Int(frame)!
            return remaining == 0 ? .keepAlive : .incomplete
        }
        return .message(frame)
    }

    /// Splits a message into the frames to send: itself when short enough, else a count frame and chunks
    /// of at most 16,384 UTF-16 code units, cut only between Unicode scalars (every frame must be valid
    /// UTF-8).
    public static func frames(for message: [UInt8], maximumLength: Int = maximumFrameLength) -> [ArraySlice<UInt8>] {
        // UTF-16 length never exceeds the UTF-8 length: short messages need no counting.
        if message.count <= maximumLength { return [message[...]] }
        var chunks: [ArraySlice<UInt8>] = []
        var start = 0
        var units = 0
        var index = 0
        while index < message.count {
            let lead = message[index]
            let width = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
            let scalarUnits = width == 4 ? 2 : 1
            if units + scalarUnits > maximumLength {
                chunks.append(message[start..<index])
                start = index
                units = 0
            }
            units += scalarUnits
            index += width
        }
        if start < message.count { chunks.append(message[start..<message.count]) }
        if chunks.count == 1 { return chunks }
        return [Array(String(chunks.count).utf8)[...]] + chunks
    }
}

/// A protocol-level problem with what a client sent.
public struct WireError: HearthError, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
}
