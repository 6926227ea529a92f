import CHearthFiles
import Crypto
import Foundation
import NIOCore
import NIOPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of stored files, as plain files under one directory:
///
/// - `blobs/<2 hex>/<id>`: a blob, written once under a new name and never changed;
/// - `uploads/<id>`: the bytes of a resumable upload received so far;
/// - `tmp/`: empty; earlier versions wrote blobs there and renamed them into place, and the sweep
///   still empties it.
///
/// A blob is written under its final, new name, then the file and its directory are fsynced. The
/// catalog names a blob only after that returns, and readers open only blobs the catalog names, so no
/// reader sees half an object without a rename (which cost a second directory's entry per upload).
/// What a crash leaves behind (a blob no row names, whole or not) is removed by
/// ``sweep(keeping:uploads:)`` at the next start.
///
/// All file I/O runs on a blocking thread pool (``ioPool``), never on an event loop, but for the open
/// and read of a blob whose path and bytes are all in the kernel's caches, which cannot wait for the
/// disk and run in the downloading task (``read(_:from:to:)``, decision 0023).
///
/// For example:
/// ```swift
/// let blobs = try BlobStore(root: dataDirectory.appendingPathComponent("files"))
/// let written = try await blobs.write(request.body)
/// ```
final class BlobStore: Sendable {
    let root: URL
    /// `root` as a path, made once: composing a `URL` for every download showed in its profile (2 %).
    let rootPath: String
    let pool: NIOThreadPool

    /// Bytes gathered before one write call: big enough that the thread hop is noise.
    static let writeBatch = 1 << 20
    /// Bytes per read when streaming a blob out.
    static let readChunk = 256 * 1024
    /// Largest body read whole in one job (``read(_:from:to:)``) and written to the socket in one
    /// piece rather than streamed in ``readChunk``s: a 1 MiB download then costs 0.88–0.96× the server
    /// CPU (one thread hop instead of five, one socket write instead of four), for at most 1 MiB held
    /// per download instead of two chunks (docs/benchmarks.md, issue 30).
    static let wholeReadLimit: Int64 = 1 << 20
    /// Smallest download sent as a file region (``cachedRegion(_:from:to:)``). From 1 MiB a region
    /// cuts the server's CPU a download by a third to a half (no buffer to fill); below it a region saved
    /// little or nothing, the checks and a second system call costing about what the copy did
    /// (`docs/decisions/0026-downloads-as-file-regions.md`).
    static let regionMinimum: Int64 = 1 << 20
    /// Past this offset an upload's batches start their writeback as they are written (see
    /// ``FileWriteback``); below it the closing fsync is short anyway.
    static let writebackAfter: Int64 = 8 << 20
    /// Past this offset a new blob's batches are written with direct I/O (see `append`); below it,
    /// through the page cache, where a download right after the upload finds them. A multiple of
    /// ``writeBatch``.
    let directAfter: Int64
    /// Batches written with direct I/O so far (the tests check that large uploads take that path).
    let directBatches = Atomic<Int>(0)
    /// Whole reads answered in place from the kernel's caches so far (decision 0023; the tests check it).
    let cachedReads = Atomic<Int>(0)
    /// Blobs kept open for reads in place (decision 0027).
    let openFiles = OpenBlobFiles(capacity: 128)
    /// Off once the system showed it has no cached open or read (another OS, an old kernel, a file
    /// system without `RWF_NOWAIT`): then every read goes to the pool at once.
    let readsInPlace = Atomic<Bool>(true)
    /// Off once the system showed it cannot tell whether a file's pages are cached (a file system that
    /// cannot map files): then no download is sent as a file region (``cachedRegion(_:from:to:)``).
    let regionsInPlace = Atomic<Bool>(true)

    /// The blocking pool blob I/O runs on, shared by every store. Its threads mostly wait for the disk
    /// (a small upload's time is its fsyncs), and fsyncs in flight together share the disk's cache
    /// flushes, so it has more threads than cores: on two cores NIO's shared pool of two held 64 KiB
    /// uploads to two fsyncs at a time (decision 0025).
    static let ioPool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: ioThreads)
        pool.start()
        return pool
    }()
    static let ioThreads = 32

    init(root: URL, pool: NIOThreadPool = BlobStore.ioPool, directAfter: Int64 = 8 << 20) throws {
        precondition(directAfter % Int64(Self.writeBatch) == 0)
        self.root = root
        rootPath = root.path
        self.pool = pool
        self.directAfter = directAfter
        for folder in ["blobs", "uploads", "tmp"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try Self.makeShards(in: "\(rootPath)/blobs")
    }

    /// Makes every shard a new blob's name can fall in (two hex digits), with one fsync of `blobs/`. A
    /// shard made by an upload could take another upload's blob before the shard's own entry was
    /// durable, and a crash then could lose an acknowledged blob with it (``makeShard(of:)`` stays for
    /// names of another shape and shards removed by hand).
    private static func makeShards(in blobs: String) throws {
        var made = false
        for value in 0..<256 {
            let folder = "\(blobs)/\(value < 16 ? "0" : "")\(String(value, radix: 16))"
            guard access(folder, F_OK) != 0 else { continue }
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            made = true
        }
        if made { try syncDirectory(blobs) }
    }

    struct Written: Sendable {
        var blob: String
        var size: Int64
        var md5Hash: String
        var crc32c: UInt32
    }

    enum Failure: Error {
        case io(String, Int32)
        /// The body was larger than the caller allowed.
        case tooLarge
        /// A resumable upload's file is missing, or shorter than the bytes it had received (the server
        /// stopped while making it an object): the upload cannot go on.
        case uploadBytesGone
    }

    func blobPath(_ blob: String) -> String {
        "\(rootPath)/blobs/\(blob.prefix(2))/\(blob)"
    }

    func uploadPath(_ id: String) -> String { root.appendingPathComponent("uploads/\(id)").path }

    /// Streams `body` into a new blob and makes it durable.
    func write<Body: AsyncSequence>(_ body: Body, limit: Int64? = nil) async throws -> Written where Body.Element == ByteBuffer {
        // A body of up to one batch (most uploads) is received whole, then written in one job on the
        // blocking pool and synced in two more at once (`writeFile`): each further thread hop costs
        // about as much as writing 64 KiB (docs/benchmarks.md, issue 30), a cache flush of the disk more.
        var rest = body.makeAsyncIterator()
        var first = UploadChunks()
        while first.byteCount <= Self.writeBatch {
            guard let chunk = try await rest.next() else { return try await writeWhole(first.buffers) }
            first.append(chunk)
            if let limit, first.byteCount > limit { throw Failure.tooLarge }
        }
        let blob = Self.newIdentifier()
        let path = blobPath(blob)
        let file = try await pool.runIfActive { try self.create(blob) }
        var digest = BlobDigest()
        do {
            try await append(first.buffers, then: &rest, to: file, at: 0, digest: &digest, limit: limit, direct: true)
        } catch {
            await cleanUp {
                close(file)
                unlink(path)
            }
            throw error
        }
        do {
            try await syncNewBlob(file, blob)
        } catch {
            await cleanUp { unlink(path) }
            throw error
        }
        let (md5, crc, size) = digest.finish()
        return Written(blob: blob, size: size, md5Hash: md5, crc32c: crc)
    }

    /// Writes `chunks` as a new durable blob: the file and checksums in one pool job, then the fsyncs of
    /// the file and of its directory. Where the CPU runs MD5 in lanes, the MD5 is made there meanwhile,
    /// with other uploads' (``MD5Lanes``, decision 0022).
    private func writeWhole(_ chunks: [ByteBuffer]) async throws -> Written {
        let blob = Self.newIdentifier()
        guard MD5Lanes.isAccelerated else {
            let (md5, crc, size) = try await writeFile(blob, chunks, hashingMD5: true)
            return Written(blob: blob, size: size, md5Hash: Data(md5!).base64EncodedString(), crc32c: crc)
        }
        async let md5 = MD5Lanes.shared.digest(of: chunks)
        let (_, crc, size) = try await writeFile(blob, chunks, hashingMD5: false)
        return Written(blob: blob, size: size, md5Hash: Data(await md5).base64EncodedString(), crc32c: crc)
    }

    /// The pool jobs of ``writeWhole(_:)``: returns the MD5 if asked to make it, the CRC-32C and the size.
    /// The file is written in one job, then made durable by ``syncNewBlob(_:_:)``.
    private func writeFile(_ blob: String, _ chunks: [ByteBuffer], hashingMD5: Bool) async throws -> ([UInt8]?, UInt32, Int64) {
        let path = blobPath(blob)
        let (file, md5, crc, size) = try await pool.runIfActive {
            let file = try self.create(blob)
            var md5 = hashingMD5 ? Insecure.MD5() : nil
            var crc = CRC32C()
            var position: Int64 = 0
            do {
                for chunk in chunks {
                    try chunk.withUnsafeReadableBytes { raw in
                        md5?.update(bufferPointer: raw)
                        crc.update(raw)
                        try Self.write(raw, to: file, at: position)
                        position += Int64(raw.count)
                    }
                }
            } catch {
                close(file)
                unlink(path)
                throw error
            }
            return (file, md5.map { Array($0.finalize()) }, crc.value, position)
        }
        do {
            try await syncNewBlob(file, blob)
        } catch {
            await cleanUp { unlink(path) }
            throw error
        }
        return (md5, crc, size)
    }

    /// Makes a new blob durable: the fsync of `file`, which is closed after it whatever happens, and the
    /// fsync of its shard directory run at once, so the upload waits for one of the disk's cache flushes
    /// rather than two in a row (decision 0025). Their order does not matter: until the catalog names
    /// the blob, a crash leaves at most a file the start-up sweep removes. Throws the first failure.
    private func syncNewBlob(_ file: Int32, _ blob: String) async throws {
        let path = blobPath(blob)
        async let directorySynced: Void = pool.runIfActive { try self.syncDirectory(of: blob) }
        var failure: (any Error)?
        do {
            try await pool.runIfActive {
                let synced = fsync(file)
                close(file)
                try Self.check(synced, "fsync", path)
            }
        } catch {
            // A job skipped (the task was cancelled, or the pool stopped) never closed the file.
            if error is CancellationError || error is NIOThreadPoolError.ThreadPoolInactive { close(file) }
            failure = error
        }
        do { try await directorySynced } catch { failure = failure ?? error }
        if let failure { throw failure }
    }

    /// Runs `cleanup` on the pool, or here where the pool skips it (the task was cancelled, or the pool
    /// stopped): a failed or cancelled write must not leave its file open or its bytes behind.
    private func cleanUp(_ cleanup: @escaping @Sendable () -> Void) async {
        do { try await pool.runIfActive(cleanup) } catch { cleanup() }
    }

    /// Appends `body` to a resumable upload's file at `offset` (bytes already durable), making the new
    /// bytes durable; returns the new size. Bytes past `offset` left by a crash are dropped first.
    func append<Body: AsyncSequence>(upload id: String, _ body: Body, at offset: Int64, limit: Int64?) async throws -> Int64
    where Body.Element == ByteBuffer {
        let path = uploadPath(id)
        let file = try await pool.runIfActive {
            // Only the first chunk makes the file: a later one whose file is gone must not start over
            // from zeros in place of the bytes received.
            let file = try Self.openUpload(path, flags: offset == 0 ? O_WRONLY | O_CREAT : O_WRONLY)
            do {
                try Self.checkHolds(file, offset, path)
                try Self.check(ftruncate(file, off_t(offset)), "ftruncate", path)
            } catch {
                close(file)
                throw error
            }
            return file
        }
        var digest = BlobDigest()
        do {
            var chunks = body.makeAsyncIterator()
            try await append([], then: &chunks, to: file, at: offset, digest: &digest, limit: limit.map { $0 - offset })
            try await pool.runIfActive {
                try Self.check(fsync(file), "fsync", path)
                // The first chunk made the file: its name must be durable too, or a power cut can take
                // the acknowledged bytes with it.
                if offset == 0 { try Self.syncDirectory("\(self.rootPath)/uploads") }
            }
        } catch {
            // Keep only what was durable before: a refused chunk (too large, cut off) leaves no bytes.
            await cleanUp {
                _ = ftruncate(file, off_t(offset))
                close(file)
            }
            throw error
        }
        await cleanUp { close(file) }
        return offset + digest.size
    }

    /// Turns a complete resumable upload's file into a blob: checksums it and moves it into `blobs/`.
    func finishUpload(_ id: String, size: Int64) async throws -> Written {
        let path = uploadPath(id)
        let (md5, crc, total) = try await pool.runIfActive {
            let file = try Self.openUpload(path, flags: O_RDWR)
            defer { close(file) }
            try Self.checkHolds(file, size, path)
            try Self.check(ftruncate(file, off_t(size)), "ftruncate", path)
            var digest = BlobDigest()
            var buffer = [UInt8](repeating: 0, count: Self.writeBatch)
            var offset: Int64 = 0
            while offset < size {
                let count = buffer.withUnsafeMutableBytes { pread(file, $0.baseAddress, min($0.count, Int(size - offset)), off_t(offset)) }
                guard count > 0 else { throw Failure.io("read \(path)", errno) }
                buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                offset += Int64(count)
            }
            try Self.check(fsync(file), "fsync", path)
            return digest.finish()
        }
        let blob = Self.newIdentifier()
        try await promote(path, to: blob)
        return Written(blob: blob, size: total, md5Hash: md5, crc32c: crc)
    }

    /// A new blob with the same bytes as `blob` (copies are independent: deleting one keeps the other).
    func copy(_ blob: String) async throws -> String {
        let source = blobPath(blob)
        let copy = Self.newIdentifier()
        let destination = blobPath(copy)
        try await pool.runIfActive {
            let input = try Self.open(source, flags: O_RDONLY)
            defer { close(input) }
            let output = try self.create(copy)
            defer { close(output) }
            do {
                var buffer = [UInt8](repeating: 0, count: Self.writeBatch)
                var offset: off_t = 0
                while true {
                    let count = buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress, $0.count, offset) }
                    guard count >= 0 else { throw Failure.io("read \(source)", errno) }
                    if count == 0 { break }
                    try buffer.withUnsafeBytes { try Self.write(UnsafeRawBufferPointer(rebasing: $0[0..<count]), to: output, at: Int64(offset)) }
                    offset += off_t(count)
                }
                try Self.check(fsync(output), "fsync", destination)
                try self.syncDirectory(of: copy)
            } catch {
                unlink(destination)
                throw error
            }
        }
        return copy
    }

    func removeUpload(_ id: String) async {
        let path = uploadPath(id)
        _ = try? await pool.runIfActive { unlink(path) }
    }

    func remove(_ blob: String) async {
        let path = blobPath(blob)
        // Before and after: a read that opened the blob just before the unlink may keep it between the two.
        openFiles.forget(blob)
        _ = try? await pool.runIfActive { unlink(path) }
        openFiles.forget(blob)
    }

    /// Reads `[start, end)` of a blob in one job on the blocking pool (open, read, close): for a body
    /// of at most ``wholeReadLimit`` bytes, where each further thread hop would cost about as much as
    /// the read itself (the 64 KiB downloads of docs/benchmarks.md, issue 30).
    ///
    /// A blob whose path and bytes are all in the kernel's caches is read right here, in the caller's
    /// task, without the hop to the pool and back (decision 0023): `RESOLVE_CACHED` and `RWF_NOWAIT`
    /// make the open and the read give up rather than wait for the disk, and then the pool reads it.
    func read(_ blob: String, from start: Int64, to end: Int64) async throws -> ByteBuffer {
        let path = blobPath(blob)
        let count = Int(end - start)
        if let cached = readIfCached(blob, from: start, count: count) {
            cachedReads.add(1, ordering: .relaxed)
            return cached
        }
        return try await pool.runIfActive {
            let file = try Self.open(path, flags: O_RDONLY)
            defer { BlobReader.close(file) }
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            while buffer.readableBytes < count {
                let offset = start + Int64(buffer.readableBytes), wanted = count - buffer.readableBytes
                var failure: Int32 = EIO  // a file shorter than its catalog entry says
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { raw in
                    let read = pread(file, raw.baseAddress, wanted, off_t(offset))
                    if read < 0 { failure = errno }
                    return max(0, read)
                }
                guard read > 0 else { throw Failure.io("read", failure) }
            }
            return buffer
        }
    }

    /// `[start, start + count)` of a blob if its path and every byte of it are in the kernel's caches;
    /// nil if not, or if anything fails (the pool's read then answers, with the error if there is one).
    /// Where the system has no such open or read, the first try turns it off. The blob stays open for
    /// the next read (``openFiles``).
    func readIfCached(_ blob: String, from start: Int64, count: Int) -> ByteBuffer? {
        #if os(Linux)
        guard readsInPlace.load(ordering: .relaxed) else { return nil }
        let open: OpenBlobFiles.File
        if let kept = openFiles.file(blob) {
            open = kept
        } else {
            guard let descriptor = openIfCached(blobPath(blob)) else { return nil }
            open = openFiles.keep(OpenBlobFiles.File(descriptor), for: blob)
            // Opened just before `remove` unlinked it and kept after `remove` forgot it: let it go, so
            // the cache never holds a removed blob (a removal after this check forgets it itself).
            var status = stat()
            if fstat(open.descriptor, &status) != 0 || status.st_nlink == 0 { openFiles.forget(blob) }
        }
        return withExtendedLifetime(open) { readCached(open.descriptor, from: start, count: count) }
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// `[start, start + count)` of an open file if every byte is in the page cache (`RWF_NOWAIT`).
    private func readCached(_ file: Int32, from start: Int64, count: Int) -> ByteBuffer? {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var failure: Int32 = 0
        while buffer.readableBytes < count {
            let offset = start + Int64(buffer.readableBytes), wanted = count - buffer.readableBytes
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { raw in
                let read = hearth_read_cached(file, raw.baseAddress, wanted, offset)
                if read < 0 { failure = errno }
                return max(0, read)
            }
            // Not cached, not supported here, or a file shorter than its catalog entry: the pool.
            guard read > 0 else {
                turnOffReadsInPlaceIfUnsupported(failure)
                return nil
            }
        }
        return buffer
    }
    #endif

    /// `[start, end)` of a blob as a file region for the event loop's `sendfile`
    /// (``FileRegionDownloads``), if its path and every page of those bytes are in the kernel's caches,
    /// read (`mincore`: a page whose read from the disk is under way does not count): an event loop
    /// must not wait for the disk. Nil otherwise; the download then reads the bytes itself.
    ///
    /// A page evicted between the check and the send would make that one `sendfile` wait for the disk:
    /// the window is a few microseconds for a blob that was just read or written.
    func cachedRegion(_ blob: String, from start: Int64, to end: Int64) -> FileRegion? {
        #if os(Linux)
        guard end > start, regionsInPlace.load(ordering: .relaxed), let file = openIfCached(blobPath(blob)) else { return nil }
        var status = stat()
        // A file shorter than its catalog entry would end the send early: the read path reports it.
        guard fstat(file, &status) == 0, Int64(status.st_size) >= end else {
            BlobReader.close(file)
            return nil
        }
        let cached = hearth_range_is_resident(file, start, end - start)
        guard cached == 1 else {
            // A file system that cannot map files, or a system without mincore: never again.
            if cached < 0, [ENODEV, ENOSYS, EACCES, EPERM, EINVAL].contains(errno) { regionsInPlace.store(false, ordering: .relaxed) }
            BlobReader.close(file)
            return nil
        }
        return FileRegion(fileHandle: NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: file), readerIndex: Int(start), endIndex: Int(end))
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// The file at `path`, opened without waiting for the disk (`RESOLVE_CACHED`); nil if any part of its
    /// path is not cached, or the system has no such open (the first such failure turns it off).
    private func openIfCached(_ path: String) -> Int32? {
        guard readsInPlace.load(ordering: .relaxed) else { return nil }
        let file = hearth_open_cached(path)
        guard file >= 0 else {
            turnOffReadsInPlaceIfUnsupported(errno)
            return nil
        }
        return file
    }
    #endif

    private func turnOffReadsInPlaceIfUnsupported(_ error: Int32) {
        // EPERM: blobs this process does not own (copied in by another user), which O_NOATIME refuses.
        if error == ENOSYS || error == ENOTSUP || error == EOPNOTSUPP || error == EINVAL || error == EPERM {
            readsInPlace.store(false, ordering: .relaxed)
            openFiles.forgetAll()
        }
    }

    /// Opens a blob for reading; the file stays readable while open even if the blob is replaced.
    func open(_ blob: String) async throws -> BlobReader {
        let path = blobPath(blob)
        let file = try await pool.runIfActive { try Self.open(path, flags: O_RDONLY) }
        return BlobReader(file: file, pool: pool)
    }

    /// Removes what a crash can leave: temporary files, blobs no object names, upload files no session
    /// names. Run before serving.
    func sweep(keeping blobs: Set<String>, uploads: Set<String>) throws -> Int {
        let manager = FileManager.default
        var removed = 0
        let temporary = root.appendingPathComponent("tmp")
        for name in (try? manager.contentsOfDirectory(atPath: temporary.path)) ?? [] {
            try manager.removeItem(at: temporary.appendingPathComponent(name))
            removed += 1
        }
        let uploadFolder = root.appendingPathComponent("uploads")
        for name in (try? manager.contentsOfDirectory(atPath: uploadFolder.path)) ?? [] where !uploads.contains(name) {
            try manager.removeItem(at: uploadFolder.appendingPathComponent(name))
            removed += 1
        }
        let blobFolder = root.appendingPathComponent("blobs")
        for shard in (try? manager.contentsOfDirectory(atPath: blobFolder.path)) ?? [] {
            let folder = blobFolder.appendingPathComponent(shard)
            for name in (try? manager.contentsOfDirectory(atPath: folder.path)) ?? [] where !blobs.contains(name) {
                try manager.removeItem(at: folder.appendingPathComponent(name))
                removed += 1
            }
        }
        return removed
    }

    // MARK: - Internals

    /// Writes `body` at `start`, hashing it. Receiving overlaps with hashing and writing: while one
    /// batch is hashed and written on the blocking pool (on another core), the next one arrives. At most
    /// two batches are held, so memory stays flat.
    ///
    /// A batch is at first the chunks as they arrived (small ones copied together: ``UploadChunks``),
    /// hashed and written where they lie (copying them into one regrowing buffer was 5 % of a 1 GiB
    /// upload's CPU). Past ``directAfter`` bytes of a new blob (`direct`), batches go to the disk with
    /// direct I/O from two aligned buffers the chunks are copied into: through the page cache, the
    /// kernel's copy of each byte into a newly allocated page cost more than MD5
    /// (`docs/decisions/0021-direct-io-for-large-uploads.md`). Batches are cut at exact multiples of
    /// ``writeBatch``, so the switch happens at an aligned offset; the last, partial batch goes through
    /// the page cache again.
    private func append<Chunks: AsyncIteratorProtocol>(
        _ first: [ByteBuffer], then rest: inout Chunks, to file: Int32, at start: Int64, digest: inout BlobDigest, limit: Int64?,
        direct directAllowed: Bool = false
    ) async throws where Chunks.Element == ByteBuffer {
        let hasher = DigestBox(digest)
        var pending = UploadChunks()
        var offset = start
        var received = Int64(first.reduce(0) { $0 + $1.readableBytes })
        var inFlight: Task<Void, any Error>?
        let pool = self.pool
        // Direct I/O, once on: the buffer being filled (the other may be in flight) and its fill.
        var aligned: [AlignedBuffer] = []
        var triedDirect = false
        var current = 0
        var filled = 0
        func submit(_ batch: UploadBatch, at offset: Int64) async throws {
            try await inFlight?.value
            inFlight = Task {
                // MD5 (the slowest part) on one pool thread, CRC-32C and the write on another.
                async let md5: Void = pool.runIfActive { batch.forEachPiece { hasher.md5.update(bufferPointer: $0) } }
                try await pool.runIfActive {
                    var position = offset
                    // Off if an earlier batch's write was refused (`write(_:to:at:direct:)`).
                    var wentDirect = batch.isDirect && hearth_has_direct_io(file) == 1
                    try batch.forEachPiece { raw in
                        hasher.crc32c.update(raw)
                        hasher.size += Int64(raw.count)
                        wentDirect = try Self.write(raw, to: file, at: position, direct: wentDirect)
                        position += Int64(raw.count)
                    }
                    if wentDirect {
                        self.directBatches.add(1, ordering: .relaxed)
                    } else if offset >= Self.writebackAfter {
                        FileWriteback.start(file, offset: offset, count: Int(position - offset))
                    }
                }
                try await md5
            }
        }
        func take(_ chunk: ByteBuffer) async throws {
            var chunk = chunk
            while chunk.readableBytes > 0 {
                if aligned.isEmpty {
                    let slice = chunk.readSlice(length: min(chunk.readableBytes, Self.writeBatch - pending.byteCount))!
                    pending.append(slice)
                    guard pending.byteCount == Self.writeBatch else { continue }
                    try await submit(.chunks(pending.buffers), at: offset)
                    offset += Int64(pending.byteCount)
                    pending = UploadChunks()
                    if directAllowed, !triedDirect, offset >= directAfter {
                        // The flag is the file's: no write through the page cache may still be running.
                        triedDirect = true
                        try await inFlight?.value
                        if hearth_set_direct_io(file, 1) == 0 {
                            aligned = [AlignedBuffer(capacity: Self.writeBatch), AlignedBuffer(capacity: Self.writeBatch)]
                        }
                    }
                } else {
                    let count = min(chunk.readableBytes, Self.writeBatch - filled)
                    chunk.readWithUnsafeReadableBytes { raw in
                        (aligned[current].pointer + filled).copyMemory(from: raw.baseAddress!, byteCount: count)
                        return count
                    }
                    filled += count
                    guard filled == Self.writeBatch else { continue }
                    // The buffer filled next was in the flight before this one, which `submit` waits for.
                    try await submit(.aligned(aligned[current], count: filled), at: offset)
                    offset += Int64(filled)
                    current ^= 1
                    filled = 0
                }
            }
        }
        do {
            for chunk in first { try await take(chunk) }
            while let chunk = try await rest.next() {
                received += Int64(chunk.readableBytes)
                if let limit, received > limit { throw Failure.tooLarge }
                try await take(chunk)
            }
            if !aligned.isEmpty {
                // The last batch is rarely a whole number of blocks: through the page cache.
                try await inFlight?.value
                guard hearth_set_direct_io(file, 0) == 0 else { throw Failure.io("fcntl", errno) }
                if filled > 0 { try await submit(.aligned(aligned[current], count: filled, direct: false), at: offset) }
            } else if pending.byteCount > 0 {
                try await submit(.chunks(pending.buffers), at: offset)
            }
            try await inFlight?.value
        } catch {
            // Never leave a write running against a file the caller is about to close.
            _ = try? await inFlight?.value
            throw error
        }
        digest = hasher.digest
    }

    /// Renames a durable file into `blobs/` and fsyncs the directory, so the rename survives a crash.
    private func promote(_ path: String, to blob: String) async throws {
        try await pool.runIfActive {
            try self.makeShard(of: blob)
            try Self.check(rename(path, self.blobPath(blob)), "rename", path)
            try self.syncDirectory(of: blob)
        }
    }

    /// Creates the file of a new blob, for writing (its shard directory too, the first time).
    private func create(_ blob: String) throws -> Int32 {
        let path = blobPath(blob)
        do {
            return try Self.open(path, flags: O_WRONLY | O_CREAT | O_EXCL)
        } catch Failure.io(_, let code) where code == ENOENT {
            try makeShard(of: blob)
            return try Self.open(path, flags: O_WRONLY | O_CREAT | O_EXCL)
        }
    }

    /// Makes sure the shard directory of `blob` exists, and that its own entry is durable when new: a
    /// crash must not take a whole shard, blobs the catalog names included.
    private func makeShard(of blob: String) throws {
        let folder = "\(rootPath)/blobs/\(blob.prefix(2))"
        guard access(folder, F_OK) != 0 else { return }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Self.syncDirectory("\(rootPath)/blobs")
    }

    /// Fsyncs the shard directory of `blob`, so its new entry survives a crash.
    private func syncDirectory(of blob: String) throws {
        try Self.syncDirectory("\(rootPath)/blobs/\(blob.prefix(2))")
    }

    private static func syncDirectory(_ path: String) throws {
        let directory = try open(path, flags: O_RDONLY)
        defer { close(directory) }
        try check(fsync(directory), "fsync", path)
    }

    /// Writes all of `raw` at `offset` (pwrite may write less than asked). Returns whether it all went
    /// with direct I/O: with `direct`, a write the file system refuses as misaligned (`EINVAL`; some
    /// take `O_DIRECT` at `fcntl` and need a larger alignment than the buffers') turns direct I/O off
    /// for the file and goes through the page cache instead of failing the upload.
    @discardableResult
    static func write(_ raw: UnsafeRawBufferPointer, to file: Int32, at offset: Int64, direct: Bool = false) throws -> Bool {
        var written = 0
        var direct = direct
        while written < raw.count {
            let count = pwrite(file, raw.baseAddress! + written, raw.count - written, off_t(offset) + off_t(written))
            if count < 0, errno == EINVAL, direct {
                guard hearth_set_direct_io(file, 0) == 0 else { throw Failure.io("fcntl", errno) }
                direct = false
                continue
            }
            guard count > 0 else { throw Failure.io("write", errno) }
            written += count
        }
        return direct
    }

    static func newIdentifier() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    private static func open(_ path: String, flags: Int32) throws -> Int32 {
        #if canImport(Glibc)
        let file = Glibc.open(path, flags | O_CLOEXEC, 0o600)
        #else
        let file = Darwin.open(path, flags | O_CLOEXEC, 0o600)
        #endif
        guard file >= 0 else { throw Failure.io("open \(path)", errno) }
        return file
    }

    /// Opens a resumable upload's file; one that is gone is ``Failure/uploadBytesGone``.
    private static func openUpload(_ path: String, flags: Int32) throws -> Int32 {
        do {
            return try open(path, flags: flags)
        } catch Failure.io(_, ENOENT) {
            throw Failure.uploadBytesGone
        }
    }

    /// Throws ``Failure/uploadBytesGone`` unless the file holds at least `size` bytes.
    private static func checkHolds(_ file: Int32, _ size: Int64, _ path: String) throws {
        var status = stat()
        try check(fstat(file, &status), "fstat", path)
        guard Int64(status.st_size) >= size else { throw Failure.uploadBytesGone }
    }

    private static func check(_ result: Int32, _ operation: String, _ path: String) throws {
        guard result == 0 else { throw Failure.io("\(operation) \(path)", errno) }
    }
}

/// The digest of a blob being written, handed from one pool job to the next. A batch's MD5 job and
/// its CRC-and-write job run at once but touch different properties, and each batch's jobs finish
/// before the next batch's start, which is why unchecked sendability is sound here.
final class DigestBox: @unchecked Sendable {
    var md5: Insecure.MD5
    var crc32c: CRC32C
    var size: Int64

    init(_ digest: BlobDigest) {
        md5 = digest.md5
        crc32c = digest.crc32c
        size = digest.size
    }

    var digest: BlobDigest { BlobDigest(md5: md5, crc32c: crc32c, size: size) }
}

/// An open blob, read in chunks on the blocking pool; its file closes when the last copy is let go.
struct BlobReader: Sendable {
    let opened: OpenFile
    let pool: NIOThreadPool

    /// The blob's descriptor, closed when the last reader lets it go: a download whose answer is never
    /// written (its client left before the head went out, so its body never runs) still closes it.
    final class OpenFile: Sendable {
        let descriptor: Int32

        init(_ descriptor: Int32) { self.descriptor = descriptor }

        deinit { BlobReader.close(descriptor) }
    }

    init(file: Int32, pool: NIOThreadPool) {
        opened = OpenFile(file)
        self.pool = pool
    }

    var file: Int32 { opened.descriptor }

    /// Reads up to `count` bytes at `offset` (fewer only at the end of the file).
    func read(at offset: Int64, count: Int) async throws -> ByteBuffer {
        try await pool.runIfActive {
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                max(0, pread(file, raw.baseAddress, count, off_t(offset)))
            }
            guard read > 0 || count == 0 else { throw BlobStore.Failure.io("read", errno) }
            return buffer
        }
    }

    /// Reads the whole range [start, end) in order, handing each chunk to `body`. The next chunk is
    /// read while `body` sends the current one, so the disk and the socket both stay busy (at most
    /// two chunks held per download).
    func stream(from start: Int64, to end: Int64, _ body: (ByteBuffer) async throws -> Void) async throws {
        guard start < end else { return }
        var next = try await read(at: start, count: Int(min(Int64(BlobStore.readChunk), end - start)))
        var offset = start + Int64(next.readableBytes)
        while true {
            let chunk = next
            guard offset < end else { return try await body(chunk) }
            let at = offset, count = Int(min(Int64(BlobStore.readChunk), end - offset))
            async let following = read(at: at, count: count)
            try await body(chunk)
            next = try await following
            offset += Int64(next.readableBytes)
        }
    }

    static func close(_ file: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(file)
        #else
        _ = Darwin.close(file)
        #endif
    }
}

/// One batch of an upload on its way to the disk: the chunks as they arrived, or an aligned buffer they
/// were copied into (written with direct I/O unless `direct` is false: the last, partial batch).
enum UploadBatch: Sendable {
    case chunks([ByteBuffer])
    case aligned(AlignedBuffer, count: Int, direct: Bool = true)

    var isDirect: Bool {
        if case .aligned(_, _, let direct) = self { return direct }
        return false
    }

    func forEachPiece(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        switch self {
        case .chunks(let chunks):
            for chunk in chunks { try chunk.withUnsafeReadableBytes(body) }
        case .aligned(let buffer, let count, _):
            try body(UnsafeRawBufferPointer(start: buffer.pointer, count: count))
        }
    }
}

/// Memory aligned for direct I/O (4 KiB: the largest logical block size of common disks), reused for
/// every batch of an upload, so its pages are touched once.
///
/// Filled by the receiving task only while no write or hash of it is in flight, and read by the pool's
/// threads only while it is (`BlobStore.append` waits for one flight before it starts the next).
final class AlignedBuffer: @unchecked Sendable {
    static let alignment = 4096
    let pointer: UnsafeMutableRawPointer
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity % Self.alignment == 0)
        pointer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: Self.alignment)
        self.capacity = capacity
    }

    deinit { pointer.deallocate() }
}
