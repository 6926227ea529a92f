public import NIOCore
public import NIOHTTP1
import Synchronization

/// Sends a download's file region where its token (``FileRegionDownloads``) comes down the pipeline,
/// and closes the file once it is sent. Sits between the HTTP/1 encoder, which writes file regions, and
/// the codec from Hummingbird's response parts. Every other write passes as it came.
///
/// For example:
/// ```swift
/// try pipeline.addHandler(FileRegionWriter(downloads: regions))
/// try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
/// ```
public final class FileRegionWriter: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = HTTPServerResponsePart

    private let downloads: FileRegionDownloads
    private var connection: ObjectIdentifier?

    public init(downloads: FileRegionDownloads) {
        self.downloads = downloads
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        let connection = ObjectIdentifier(context.channel)
        self.connection = connection
        downloads.opened(connection)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        guard let connection else { return }
        for region in downloads.closed(connection) { try? region.fileHandle.close() }
        self.connection = nil
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .body(.byteBuffer(let buffer)) = unwrapOutboundIn(data), buffer.readableBytes == FileRegionDownloads.tokenBytes,
              let connection, let region = downloads.take(buffer, on: connection)
        else {
            context.write(data, promise: promise)
            return
        }
        downloads.sent.add(1, ordering: .relaxed)
        let sent = context.eventLoop.makePromise(of: Void.self)
        sent.futureResult.whenComplete { result in
            try? region.fileHandle.close()
            promise?.completeWith(result)
        }
        context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: sent)
    }
}
