import CHearthFiles
import Foundation
@testable import HearthFiles
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

/// The hand-off of a download's file region to its connection: a token is swapped for its region only
/// on the connection it was handed to, anything else passes as it came, and regions never sent are
/// closed with the connection.
struct FileRegionWriterTests {
    /// A blob store with one cached blob of `count` bytes.
    static func cachedBlob(_ count: Int) async throws -> (BlobStore, URL, String) {
        let (blobs, root) = try BlobStoreTests.temporaryStore()
        let written = try await blobs.write(BlobStoreTests.Chunks(bytes: BlobStoreTests.bytes(count), chunk: 65_536))
        // Read once, so every page is in the cache whatever the upload left.
        _ = try await blobs.read(written.blob, from: 0, to: Int64(count))
        return (blobs, root, written.blob)
    }

    static func isOpen(_ region: FileRegion) -> Bool {
        region.fileHandle.isOpen
    }

    /// `[start, end)` of the blob as a region; nil (and checked) only where the system cannot tell what
    /// is cached (a file system that cannot map files), where the callers have nothing to test.
    static func region(of blob: String, in blobs: BlobStore, from start: Int64, to end: Int64) -> FileRegion? {
        if let region = blobs.cachedRegion(blob, from: start, to: end) { return region }
        let regionsInPlace = blobs.regionsInPlace.load(ordering: .relaxed)
        #expect(!regionsInPlace)
        return nil
    }

    @Test func aTokenBecomesItsRegionOnItsConnectionOnly() async throws {
        let (blobs, root, blob) = try await Self.cachedBlob(300_000)
        defer { try? FileManager.default.removeItem(at: root) }
        guard let region = Self.region(of: blob, in: blobs, from: 10, to: 300_000) else { return }
        let downloads = FileRegionDownloads()
        let channel = EmbeddedChannel()
        let other = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FileRegionWriter(downloads: downloads))
        try other.pipeline.syncOperations.addHandler(FileRegionWriter(downloads: downloads))
        // Closed whatever happens: a region still handed is closed with its connection.
        defer {
            _ = try? channel.finish()
            _ = try? other.finish()
        }
        #expect(downloads.sendsRegions(ObjectIdentifier(channel)))
        #expect(!downloads.sendsRegions(ObjectIdentifier(EmbeddedChannel())))
        let token = try #require(downloads.hand(region, to: ObjectIdentifier(channel)))
        #expect(downloads.byteCount(ofToken: token) == 299_990)
        // On another connection the token is an ordinary body piece.
        try other.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(token)))
        guard case .body(.byteBuffer(let passed)) = try other.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("the token did not pass as it came")
            return
        }
        #expect(passed == token)
        // A piece of the token's length with another marker passes too.
        var forged = token
        forged.setInteger(UInt64(0), at: forged.readerIndex)
        try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(forged)))
        guard case .body(.byteBuffer(let forgedOut)) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("a forged token was not passed as it came")
            return
        }
        #expect(forgedOut == forged)
        // On its own connection it becomes the region, whose file is closed once written.
        try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(token)))
        guard case .body(.fileRegion(let sent)) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("the token was not swapped for its region")
            return
        }
        #expect(sent.readerIndex == 10 && sent.endIndex == 300_000)
        #expect(!Self.isOpen(sent))
        #expect(downloads.sent.load(ordering: .relaxed) == 1)
        // Taken once: the same token again is an ordinary piece.
        #expect(downloads.take(token, on: ObjectIdentifier(channel)) == nil)
    }

    @Test func regionsNeverSentAreClosedWithTheConnection() async throws {
        let (blobs, root, blob) = try await Self.cachedBlob(100_000)
        defer { try? FileManager.default.removeItem(at: root) }
        guard let region = Self.region(of: blob, in: blobs, from: 0, to: 100_000) else { return }
        let downloads = FileRegionDownloads()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FileRegionWriter(downloads: downloads))
        let connection = ObjectIdentifier(channel)
        _ = try #require(downloads.hand(region, to: connection))
        _ = try channel.finish()
        #expect(!Self.isOpen(region))
        #expect(!downloads.sendsRegions(connection))
        // After the close nothing more is handed to it.
        let another = try #require(blobs.cachedRegion(blob, from: 0, to: 100_000))
        #expect(downloads.hand(another, to: connection) == nil)
        try another.fileHandle.close()
    }

    /// Only bytes that are all cached, of a file at least as long as asked, become a region.
    @Test func onlyCachedBytesOfAWholeFileBecomeARegion() async throws {
        let (blobs, root, blob) = try await Self.cachedBlob(200_000)
        defer { try? FileManager.default.removeItem(at: root) }
        guard let whole = Self.region(of: blob, in: blobs, from: 0, to: 200_000) else { return }
        try whole.fileHandle.close()
        // Past the end of the file (a catalog entry longer than its blob), and a blob that is gone.
        #expect(blobs.cachedRegion(blob, from: 0, to: 200_001) == nil)
        #expect(blobs.cachedRegion("0000000000000000000000000000000000000000", from: 0, to: 10) == nil)
        #if os(Linux)
        if BlobStoreTests.fileSystemType(of: root.path) != "tmpfs" {
            // Clean pages dropped from the cache (tmpfs keeps them): no region, the download reads them.
            let file = open(blobs.blobPath(blob), O_RDONLY)
            #expect(posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED) == 0)
            close(file)
            #expect(blobs.cachedRegion(blob, from: 0, to: 200_000) == nil)
            let regionsInPlace = blobs.regionsInPlace.load(ordering: .relaxed)
            #expect(regionsInPlace)
        }
        #endif
    }
}
