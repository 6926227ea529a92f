import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts writing a file's newly written bytes to the disk without waiting for it, so the fsync at
/// the end of a large upload finds little left to do: receiving and the disk's work overlap instead
/// of taking turns (a 1 GiB upload: 39–47 % → 59–71 % of dd; docs/benchmarks.md, issue 30). Linux's
/// `sync_file_range` with `SYNC_FILE_RANGE_WRITE`; it is not a durability step (the fsync still is),
/// so where it is missing this does nothing. Only past ``BlobStore/writebackAfter``: below it the
/// closing fsync is short anyway.
///
/// For example:
/// ```swift
/// try write(batch, to: file, at: offset)
/// FileWriteback.start(file, offset: offset, count: batch.count)
/// ```
enum FileWriteback {
    #if os(Linux)
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    /// Looked up at run time: Swift's Glibc module does not export it (it needs `_GNU_SOURCE`).
    private static let syncFileRange: SyncFileRange? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sync_file_range")
        .map { unsafeBitCast($0, to: SyncFileRange.self) }
    private static let write: UInt32 = 2  // SYNC_FILE_RANGE_WRITE
    #endif

    static func start(_ file: Int32, offset: Int64, count: Int) {
        #if os(Linux)
        _ = syncFileRange?(file, offset, Int64(count), write)
        #endif
    }
}
