import CHearthFiles
import Crypto
import Foundation
@testable import HearthFiles
import NIOCore
import Synchronization
import Testing

/// Blobs written whole (a body under one batch) and streamed (larger) come out the same: the bytes,
/// their checksums, one file each and nothing else left, and the size limit on both paths.
struct BlobStoreTests {
    struct Chunks: AsyncSequence {
        typealias Element = ByteBuffer
        let bytes: [UInt8]
        let chunk: Int
        struct AsyncIterator: AsyncIteratorProtocol {
            var rest: ArraySlice<UInt8>
            let chunk: Int
            mutating func next() async -> ByteBuffer? {
                guard !rest.isEmpty else { return nil }
                let piece = rest.prefix(chunk)
                rest = rest.dropFirst(chunk)
                return ByteBuffer(bytes: piece)
            }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(rest: bytes[...], chunk: chunk) }
    }

    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }

    /// The files under `blobs/` (in their shard directories) and `tmp/`.
    static func files(_ root: URL) throws -> [String] {
        try ["blobs", "tmp"].flatMap { folder in
            let base = root.appendingPathComponent(folder)
            return try FileManager.default.subpathsOfDirectory(atPath: base.path).filter { path in
                var isDirectory: ObjCBool = false
                FileManager.default.fileExists(atPath: base.appendingPathComponent(path).path, isDirectory: &isDirectory)
                return !isDirectory.boolValue
            }.map { "\(folder)/\($0)" }
        }
    }

    static func temporaryStore() throws -> (BlobStore, URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
        return (try BlobStore(root: root), root)
    }

    /// The blob is `body` with its size and both checksums, and the only file under `root`.
    static func expectBlob(_ written: BlobStore.Written, holds body: [UInt8], in blobs: BlobStore, root: URL) throws {
        #expect(written.size == Int64(body.count))
        #expect(written.md5Hash == Data(Insecure.MD5.hash(data: body)).base64EncodedString())
        var crc = CRC32C()
        body.withUnsafeBytes { crc.update($0) }
        #expect(written.crc32c == crc.value)
        #expect(try Data(contentsOf: URL(fileURLWithPath: blobs.blobPath(written.blob))) == Data(body))
        #expect(try files(root) == ["blobs/\(written.blob.prefix(2))/\(written.blob)"])
    }

    /// Chunks of 40,000 bytes are held as they arrived, of 1,000 copied together, of 20,000 copied and
    /// split across buffers (`UploadChunks`).
    @Test(arguments: [0, 1, 65_536, BlobStore.writeBatch - 1, BlobStore.writeBatch, BlobStore.writeBatch + 17, 3 * BlobStore.writeBatch + 5], [40_000, 1_000, 20_000])
    func aBlobHoldsTheBodyAndItsChecksums(size: Int, chunk: Int) async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let body = Self.bytes(size)
        let written = try await blobs.write(Chunks(bytes: body, chunk: chunk))
        try Self.expectBlob(written, holds: body, in: blobs, root: root)
        if size > 10 {
            let middle = try await blobs.read(written.blob, from: 3, to: Int64(min(size, BlobStore.readChunk)))
            #expect(Array(middle.readableBytesView) == Array(body[3..<min(size, BlobStore.readChunk)]))
        }
    }

    /// Every shard a new blob can fall in exists once the store opens (so no upload makes one while
    /// another writes into it), and opening again changes nothing.
    @Test func everyShardIsMadeWhenTheStoreOpens() throws {
        let (_, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let blobs = root.appendingPathComponent("blobs").path
        let expected = Set((0..<256).map { String(format: "%02x", $0) })
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: blobs)) == expected)
        _ = try BlobStore(root: root)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: blobs)) == expected)
        #expect(expected.contains(String(BlobStore.newIdentifier().prefix(2))))
    }

    /// An upload whose task is cancelled while it streams: the pool skips the cancelled task's jobs, so
    /// the file is closed and removed in the task itself. (Descriptors are counted by the path they
    /// name, so other tests running meanwhile do not count.)
    @Test func aCancelledUploadLeavesNoFileOpenOrBehind() async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let openUnderRoot = {
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return descriptors.filter { ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) ?? "").hasPrefix(root.path) }.count
        }
        let (body, feed) = AsyncStream.makeStream(of: ByteBuffer.self)
        feed.yield(ByteBuffer(repeating: 7, count: 3 * BlobStore.writeBatch))
        let upload = Task { try await blobs.write(body) }
        // Past the first batch, the upload waits for more of the body, its file open.
        for _ in 0..<200 where openUnderRoot() == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(openUnderRoot() == 1)
        upload.cancel()
        await #expect(throws: (any Error).self) { try await upload.value }
        #expect(openUnderRoot() == 0)
        #expect(try Self.files(root).isEmpty)
    }

    @Test func uploadChunksKeepLargeChunksAndCopySmallOnesTogether() {
        var chunks = UploadChunks()
        let large = ByteBuffer(bytes: Self.bytes(UploadChunks.keptMinimum))
        chunks.append(ByteBuffer(bytes: [1, 2, 3]))
        chunks.append(ByteBuffer(bytes: [4]))
        chunks.append(large)
        chunks.append(ByteBuffer(bytes: [5]))
        chunks.append(ByteBuffer())
        #expect(chunks.byteCount == 5 + UploadChunks.keptMinimum)
        #expect(chunks.buffers.count == 3)
        #expect(chunks.buffers.map { Array($0.readableBytesView) } == [[1, 2, 3, 4], Self.bytes(UploadChunks.keptMinimum), [5]])
        // The large chunk is the same memory, not a copy.
        let addresses = [large, chunks.buffers[1]].map { $0.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } }
        #expect(addresses[0] == addresses[1])
    }

    /// A body trickled a byte at a time holds about its own size, not a read buffer per byte.
    @Test func aTrickledBodyIsHeldInFullBuffers() {
        var chunks = UploadChunks()
        let body = Self.bytes(3 * UploadChunks.copyCapacity + 10)
        for byte in body { chunks.append(ByteBuffer(bytes: [byte])) }
        #expect(chunks.buffers.count == 4)
        #expect(chunks.buffers.dropLast().allSatisfy { $0.readableBytes == UploadChunks.copyCapacity })
        #expect(chunks.buffers.flatMap { Array($0.readableBytesView) } == body)
        // A small chunk that does not fit fills the last buffer, and the rest starts the next.
        var split = UploadChunks()
        split.append(ByteBuffer(bytes: Self.bytes(30_000)))
        split.append(ByteBuffer(bytes: Self.bytes(30_000)))
        split.append(ByteBuffer(bytes: Self.bytes(10_000)))
        #expect(split.buffers.map(\.readableBytes) == [UploadChunks.copyCapacity, 70_000 - UploadChunks.copyCapacity])
        #expect(split.buffers.flatMap { Array($0.readableBytesView) } == Self.bytes(30_000) + Self.bytes(30_000) + Self.bytes(10_000))
    }

    @Test func aCopyIsItsOwnFileWithTheSameBytes() async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let body = Self.bytes(BlobStore.writeBatch + 3)
        let written = try await blobs.write(Chunks(bytes: body, chunk: 65_536))
        let copy = try await blobs.copy(written.blob)
        #expect(copy != written.blob)
        await blobs.remove(written.blob)
        #expect(try Data(contentsOf: URL(fileURLWithPath: blobs.blobPath(copy))) == Data(body))
        #expect(try Self.files(root) == ["blobs/\(copy.prefix(2))/\(copy)"])
    }

    /// The type of the file system `path` is on, from the longest mount point above it (Linux).
    static func fileSystemType(of path: String) -> String? {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return nil }
        var best: (point: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2 else { continue }
            let point = String(fields[1])
            let within = path == point || path.hasPrefix(point == "/" ? "/" : point + "/")
            if within, point.count >= (best?.point.count ?? 0) { best = (point, String(fields[2])) }
        }
        return best?.type
    }

    /// A whole read takes the bytes from the kernel's caches in place when they are all there, and from
    /// the pool when they are not (dropped from the page cache here): the same bytes either way; a read
    /// past the end and a blob that is gone fail on both.
    @Test func aWholeReadComesFromTheCacheInPlaceOrFromThePool() async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let body = Self.bytes(200_000)
        let written = try await blobs.write(Chunks(bytes: body, chunk: 65_536))
        let path = blobs.blobPath(written.blob)
        #expect(Array(try await blobs.read(written.blob, from: 7, to: 100_007).readableBytesView) == Array(body[7..<100_007]))
        #if os(Linux)
        #expect(blobs.cachedReads.load(ordering: .relaxed) == 1)
        let onTmpfs = Self.fileSystemType(of: root.path) == "tmpfs"
        if !onTmpfs {
            // Written and fsynced, so clean pages, which the kernel drops when asked (tmpfs keeps them).
            let file = open(path, O_RDONLY)
            #expect(posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED) == 0)
            close(file)
            #expect(blobs.readIfCached(written.blob, from: 0, count: body.count) == nil)
            #expect(Array(try await blobs.read(written.blob, from: 0, to: Int64(body.count)).readableBytesView) == body)
            #expect(blobs.cachedReads.load(ordering: .relaxed) == 1)
        }
        // The pool's read brought the pages back.
        #expect(Array(try await blobs.read(written.blob, from: 0, to: Int64(body.count)).readableBytesView) == body)
        #expect(blobs.cachedReads.load(ordering: .relaxed) == (onTmpfs ? 3 : 2))
        let readsInPlace = blobs.readsInPlace.load(ordering: .relaxed)
        #expect(readsInPlace)
        #else
        #expect(blobs.readIfCached(written.blob, from: 0, count: 10) == nil)
        #endif
        await #expect(throws: BlobStore.Failure.self) { _ = try await blobs.read(written.blob, from: 0, to: Int64(body.count) + 1) }
        await blobs.remove(written.blob)
        await #expect(throws: BlobStore.Failure.self) { _ = try await blobs.read(written.blob, from: 0, to: 10) }
    }

    /// A blob read in place stays open for the next read, and removing it lets go of it: its space is
    /// freed and a read fails (decision 0027).
    @Test func aBlobReadInPlaceStaysOpenUntilItIsRemoved() async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let first = try await blobs.write(Chunks(bytes: Self.bytes(70_000), chunk: 65_536))
        let second = try await blobs.write(Chunks(bytes: Self.bytes(1_000), chunk: 65_536))
        #expect(Array(try await blobs.read(first.blob, from: 0, to: 70_000).readableBytesView) == Self.bytes(70_000))
        #if os(Linux)
        #expect(blobs.openFiles.count == 1)
        let kept = try #require(blobs.openFiles.file(first.blob))
        #expect(Array(try await blobs.read(first.blob, from: 5, to: 9).readableBytesView) == Array(Self.bytes(70_000)[5..<9]))
        #expect(blobs.openFiles.file(first.blob) === kept, "the second read used the kept file")
        _ = try await blobs.read(second.blob, from: 0, to: 1_000)
        #expect(blobs.openFiles.count == 2)
        #expect(blobs.cachedReads.load(ordering: .relaxed) == 3)
        #endif
        await blobs.remove(first.blob)
        #expect(blobs.openFiles.file(first.blob) == nil)
        await #expect(throws: BlobStore.Failure.self) { _ = try await blobs.read(first.blob, from: 0, to: 10) }
        #expect(Array(try await blobs.read(second.blob, from: 0, to: 1_000).readableBytesView) == Self.bytes(1_000))
    }

    /// A streamed download opens its blob before its answer's head is written; if the client has left by
    /// then, the body that would read and close it never runs. The file closes when the last reader
    /// lets it go, so such downloads leak no descriptor.
    @Test func aBlobOpenedForAStreamClosesWhenItsReadersLetGo() async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let written = try await blobs.write(Chunks(bytes: Self.bytes(3_000), chunk: 65_536))
        var blob = stat()
        #expect(stat(blobs.blobPath(written.blob), &blob) == 0)
        /// Whether `descriptor` still refers to the blob (a closed number may be reused, but not for it).
        func refersToTheBlob(_ descriptor: Int32) -> Bool {
            var opened = stat()
            return fstat(descriptor, &opened) == 0 && opened.st_ino == blob.st_ino && opened.st_dev == blob.st_dev
        }
        var reader: BlobReader? = try await blobs.open(written.blob)
        let descriptor = try #require(reader).file
        #expect(refersToTheBlob(descriptor))
        let copy = reader  // a body holding it, as the download's does
        reader = nil
        #expect(refersToTheBlob(descriptor), "still held")
        var streamed: [UInt8] = []
        try await copy!.stream(from: 0, to: 3_000) { streamed += Array($0.readableBytesView) }
        #expect(streamed == Self.bytes(3_000))
        _ = consume copy
        #expect(!refersToTheBlob(descriptor), "the last reader let go: closed")
    }

    /// Past its capacity the cache lets go of a file, which a reader holding it can still read; the
    /// file closes when the last holder lets go.
    @Test func anOpenBlobLetGoMidReadStaysReadableUntilReleased() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("open-blobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("a").path
        try Data("abc".utf8).write(to: URL(fileURLWithPath: path))
        let files = OpenBlobFiles(capacity: 1)
        var held: OpenBlobFiles.File? = files.keep(OpenBlobFiles.File(open(path, O_RDONLY)), for: "a")
        weak let released = held
        _ = files.keep(OpenBlobFiles.File(open(path, O_RDONLY)), for: "b")
        #expect(files.count == 1)
        #expect(files.file("a") == nil)
        var byte: UInt8 = 0
        #expect(pread(try #require(held).descriptor, &byte, 1, 1) == 1)
        #expect(byte == UInt8(ascii: "b"))
        #expect(released != nil)
        held = nil
        #expect(released == nil, "the last holder let go: the file is closed")
        // Another reader that kept the same blob first wins; the newcomer is let go.
        let winner = try #require(files.file("b"))
        #expect(files.keep(OpenBlobFiles.File(open(path, O_RDONLY)), for: "b") === winner)
    }

    @Test(arguments: [1_000, 2 * BlobStore.writeBatch])
    func aBodyOverTheLimitLeavesNothing(size: Int) async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        await #expect(throws: BlobStore.Failure.self) {
            _ = try await blobs.write(Chunks(bytes: Self.bytes(size), chunk: 65_536), limit: Int64(size - 1))
        }
        #expect(try Self.files(root) == [])
    }

    /// Whether the file system under `root` takes direct I/O (ext4 and XFS do; tmpfs only since Linux 6.6).
    static func takesDirectIO(_ root: URL) throws -> Bool {
        let probe = root.appendingPathComponent("probe").path
        let file = open(probe, O_WRONLY | O_CREAT, 0o600)
        defer {
            close(file)
            unlink(probe)
        }
        return hearth_set_direct_io(file, 1) == 0
    }

    /// Past `directAfter`, whole batches go to the disk with direct I/O from aligned buffers, and the last
    /// partial one through the page cache: the blob and its checksums are the same.
    @Test(arguments: [BlobStore.writeBatch, 2 * BlobStore.writeBatch, 2 * BlobStore.writeBatch + 1, 4 * BlobStore.writeBatch + 4_097])
    func aLargeBlobIsWrittenDirectlyPastItsFirstMegabyte(size: Int) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let blobs = try BlobStore(root: root, directAfter: Int64(BlobStore.writeBatch))
        let direct = try Self.takesDirectIO(root)
        let body = Self.bytes(size)
        let written = try await blobs.write(Chunks(bytes: body, chunk: 40_000))
        try Self.expectBlob(written, holds: body, in: blobs, root: root)
        // Every whole batch after the first megabyte; none where the file system has no direct I/O.
        #expect(blobs.directBatches.load(ordering: .relaxed) == (direct ? (size - BlobStore.writeBatch) / BlobStore.writeBatch : 0))
        #if os(Linux)
            // The test machines' file systems have it: without it, only the page-cache path was tested.
            #expect(direct)
        #endif
    }

    /// A file system may take `O_DIRECT` at `fcntl` and refuse a write as misaligned (a block size
    /// above the buffers' alignment): the write goes through the page cache instead, and direct I/O is
    /// off for the rest of the file. Shown with a write whose length is no whole block.
    @Test func aDirectWriteTheFileSystemRefusesGoesThroughThePageCache() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("file").path
        let file = open(path, O_RDWR | O_CREAT, 0o600)
        try #require(file >= 0)
        defer { close(file) }
        try #require(hearth_set_direct_io(file, 1) == 0, "the test machines' file systems take direct I/O")
        let body = Self.bytes(1_000)
        let wentDirect = try body.withUnsafeBytes { try BlobStore.write($0, to: file, at: 0, direct: true) }
        #expect(!wentDirect)
        #expect(hearth_has_direct_io(file) == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(body))
    }

    @Test func aBodyOverTheLimitLeavesNothingOnTheDirectPathToo() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let blobs = try BlobStore(root: root, directAfter: Int64(BlobStore.writeBatch))
        let size = 3 * BlobStore.writeBatch + 10
        await #expect(throws: BlobStore.Failure.self) {
            _ = try await blobs.write(Chunks(bytes: Self.bytes(size), chunk: 65_536), limit: Int64(size - 1))
        }
        #expect(blobs.directBatches.load(ordering: .relaxed) == (try Self.takesDirectIO(root) ? 2 : 0))
        #expect(try Self.files(root) == [])
    }

    @Test(arguments: [(0, 3 * BlobStore.writeBatch + 5), (7, 3 * BlobStore.writeBatch + 5), (100, 100 + BlobStore.readChunk), (5, 6), (9, 9)])
    func aStreamedRangeComesOutWholeAndInOrder(start: Int, end: Int) async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let body = Self.bytes(3 * BlobStore.writeBatch + 5)
        let written = try await blobs.write(Chunks(bytes: body, chunk: 300_000))
        let reader = try await blobs.open(written.blob)
        var streamed: [UInt8] = []
        try await reader.stream(from: Int64(start), to: Int64(end)) { chunk in
            #expect(chunk.readableBytes <= BlobStore.readChunk)
            streamed += chunk.readableBytesView
        }
        #expect(streamed == Array(body[start..<end]))
    }

    @Test func crc32cMatchesTheBitwiseDefinitionAtEveryAlignment() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        var known = CRC32C()
        known.update(Array("123456789".utf8))
        #expect(known.value == 0xE306_9283)
        let bytes = Self.bytes(300)
        for start in 0..<9 {
            for end in [start, start + 1, start + 7, start + 8, start + 15, start + 16, 300] {
                // The default (the CPU's instruction here) and the table, which other CPUs use.
                var crc = CRC32C()
                bytes[start..<end].withUnsafeBytes { crc.update($0) }
                #expect(crc.value == bitwise(bytes[start..<end]), "bytes \(start)..<\(end)")
                var table = CRC32C()
                bytes[start..<end].withUnsafeBytes { table.updateWithTable($0) }
                #expect(table.value == bitwise(bytes[start..<end]), "table, bytes \(start)..<\(end)")
            }
        }
        #if arch(x86_64)
            // Every x86-64 CPU since 2008 has SSE 4.2; without it the table above is all that was tested.
            #expect(CRC32C.usesHardware)
        #endif
        var pieces = CRC32C()
        bytes[0..<13].withUnsafeBytes { pieces.update($0) }
        bytes[13...].withUnsafeBytes { pieces.update($0) }
        #expect(pieces.value == bitwise(bytes[...]))
    }

    @Test func readingPastTheEndOfAShortFileFails() async throws {
        let (blobs, root) = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let written = try await blobs.write(Chunks(bytes: Self.bytes(100), chunk: 100))
        await #expect(throws: BlobStore.Failure.self) { _ = try await blobs.read(written.blob, from: 0, to: 200) }
    }
}
