import Synchronization

/// Blobs kept open for the downloads that read them in place (decision 0027): opening and closing a
/// blob cost a 64 KiB download about 2.5 µs of its 50, and a blob that is downloaded once is usually
/// downloaded again.
///
/// Safe because a blob never changes once written: a new object, or a new version of one, is a new
/// blob, and ``BlobStore/remove(_:)`` forgets a blob's file before and after unlinking it, so a removed
/// blob's space is not held. A reader holds its ``File`` while it reads; the descriptor closes when the
/// last holder lets go, so a file forgotten or evicted mid-read is never closed under the read.
/// At most ``capacity`` files are open; past that, one is let go for each new one.
///
/// For example:
/// ```swift
/// let files = OpenBlobFiles(capacity: 128)
/// let file = files.file(blob) ?? files.keep(OpenBlobFiles.File(descriptor), for: blob)
/// pread(file.descriptor, …)
/// ```
final class OpenBlobFiles: Sendable {
    /// One open blob; closed when the last holder lets it go.
    final class File: Sendable {
        let descriptor: Int32

        init(_ descriptor: Int32) {
            self.descriptor = descriptor
        }

        deinit {
            BlobReader.close(descriptor)
        }
    }

    let capacity: Int
    private let files = Mutex<[String: File]>([:])

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The open file of `blob`, if it is kept.
    func file(_ blob: String) -> File? {
        files.withLock { $0[blob] }
    }

    /// Keeps `file` as `blob`'s, unless another reader kept one first: the one kept is returned.
    func keep(_ file: File, for blob: String) -> File {
        // The file let go is released after the lock: its close need not hold up other readers.
        let (kept, evicted) = files.withLock { files -> (File, File?) in
            if let kept = files[blob] { return (kept, nil) }
            let evicted = files.count >= capacity ? files.remove(at: files.startIndex).value : nil
            files[blob] = file
            return (file, evicted)
        }
        withExtendedLifetime(evicted) {}
        return kept
    }

    /// Lets go of `blob`'s file, if one is kept.
    func forget(_ blob: String) {
        let forgotten = files.withLock { $0.removeValue(forKey: blob) }
        withExtendedLifetime(forgotten) {}
    }

    /// Lets go of every file.
    func forgetAll() {
        let forgotten = files.withLock { files in
            defer { files = [:] }
            return files
        }
        withExtendedLifetime(forgotten) {}
    }

    /// How many files are kept (for the tests).
    var count: Int {
        files.withLock { $0.count }
    }
}
