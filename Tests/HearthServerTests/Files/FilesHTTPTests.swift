import Foundation
@testable import HearthFiles
import HearthStorage
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import Testing

/// Serving an object's bytes when its blob goes away under the download.
struct FilesHTTPTests {
    /// What a response body wrote.
    final class Collected: Sendable {
        let bytes = Mutex<[UInt8]>([])
    }

    /// Collects what a response body writes.
    struct CollectingWriter: ResponseBodyWriter {
        let collected: Collected
        mutating func write(_ buffer: ByteBuffer) async throws { collected.bytes.withLock { $0 += buffer.readableBytesView } }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    static func body(of response: Response) async throws -> [UInt8] {
        let collected = Collected()
        try await response.body.write(CollectingWriter(collected: collected))
        return collected.bytes.withLock { $0 }
    }

    static func object(_ written: BlobStore.Written, generation: Int64) -> StoredObject {
        StoredObject(
            bucket: "b", name: "x", blob: written.blob, size: written.size, md5Hash: written.md5Hash, crc32c: written.crc32c,
            generation: generation, time: 0
        )
    }

    /// A download names its file after the object's last segment that is not empty.
    @Test(arguments: [("photos/a b.jpg", "a%20b.jpg"), ("photos/", "photos"), ("a//b", "b"), ("photos//", "photos"), ("/", "%2F"), ("x", "x")])
    func aDownloadNamesItsFileAfterTheLastSegment(name: String, file: String) {
        let object = StoredObject(bucket: "b", name: name, blob: "blob", size: 1, md5Hash: "", crc32c: 0, generation: 1, time: 0)
        #expect(FilesHTTP.contentDisposition(object) == "inline; filename*=utf-8''\(file)")
    }

    /// An overwrite unlinks the old blob between a download's lookup and its open: the download looks
    /// the object up once more and serves the new bytes (read whole, and streamed above the limit).
    @Test(arguments: [1_000, Int(BlobStore.wholeReadLimit) + 1_000])
    func aDownloadWhoseBlobAnOverwriteRemovedServesTheNewObject(size: Int) async throws {
        let (blobs, root) = try BlobStoreTests.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let oldBytes = BlobStoreTests.bytes(size), newBytes = Array(oldBytes.reversed())
        let old = try await blobs.write(BlobStoreTests.Chunks(bytes: oldBytes, chunk: 40_000))
        let new = try await blobs.write(BlobStoreTests.Chunks(bytes: newBytes, chunk: 40_000))
        await blobs.remove(old.blob)
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/x?alt=media"),
            body: RequestBody(buffer: ByteBuffer())
        )
        let lookups = Atomic<Int>(0)
        let response = try await FilesHTTP.media(Self.object(old, generation: 1), request, blobs: blobs, regions: nil, connection: nil) {
            lookups.add(1, ordering: .relaxed)
            return Self.object(new, generation: 2)
        }
        #expect(response.status == .ok)
        #expect(lookups.load(ordering: .relaxed) == 1)
        #expect(response.headers[HTTPField.Name("x-goog-generation")!] == "2")
        #expect(try await Self.body(of: response) == newBytes)
    }

    /// A delete between the lookup and the open: the second lookup's 404 is the answer, not a 500.
    @Test func aDownloadWhoseObjectWasDeletedIsNotFound() async throws {
        let (blobs, root) = try BlobStoreTests.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let old = try await blobs.write(BlobStoreTests.Chunks(bytes: BlobStoreTests.bytes(100), chunk: 100))
        await blobs.remove(old.blob)
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/x?alt=media"),
            body: RequestBody(buffer: ByteBuffer())
        )
        await #expect(throws: FilesError.notFound) {
            _ = try await FilesHTTP.media(Self.object(old, generation: 1), request, blobs: blobs, regions: nil, connection: nil) { throw FilesError.notFound }
        }
    }
    /// A server-side copy (`copyTo`, `rewriteTo`) whose source an overwrite replaced between the lookup
    /// and the copy copies the new object; one whose source was deleted is not found.
    @Test func aCopyWhoseSourceBlobWasRemovedCopiesTheObjectAsItIsNow() async throws {
        let (blobs, root) = try BlobStoreTests.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let oldBytes = BlobStoreTests.bytes(1_000), newBytes = Array(oldBytes.reversed())
        let old = try await blobs.write(BlobStoreTests.Chunks(bytes: oldBytes, chunk: 1_000))
        let new = try await blobs.write(BlobStoreTests.Chunks(bytes: newBytes, chunk: 1_000))
        await blobs.remove(old.blob)
        let (copied, blob) = try await FileService.copyBlob(of: Self.object(old, generation: 1), blobs: blobs) {
            Self.object(new, generation: 2)
        }
        #expect(copied.generation == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: blobs.blobPath(blob))) == Data(newBytes))
        await #expect(throws: FilesError.notFound) {
            _ = try await FileService.copyBlob(of: Self.object(old, generation: 1), blobs: blobs) { nil }
        }
    }
}
