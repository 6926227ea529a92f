import Foundation
import NIOCore

/// A file read in 1 MiB chunks, as a request body, reporting each chunk sent.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let handle: FileHandle
    let size: Int64
    let progress: @Sendable (Int64, Int64) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle
        let size: Int64
        let progress: @Sendable (Int64, Int64) -> Void
        var sent: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let data = try handle.read(upToCount: 1 << 20), !data.isEmpty else {
                try? handle.close()
                return nil
            }
            sent += Int64(data.count)
            progress(sent, size)
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle, size: size, progress: progress) }
}
