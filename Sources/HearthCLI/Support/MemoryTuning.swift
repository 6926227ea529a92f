/// Tunes glibc's allocator for a process that builds a large in-memory tree.
///
/// Loading a database allocates millions of small nodes and some large, growing arrays. With glibc's
/// defaults those arrays come from `mmap` and go back with `munmap`, and the kernel zeroes fresh pages
/// every time: in a profile of a 20 MB restart, `clear_page_erms` was 21% of all samples. Keeping large
/// blocks on the heap and not trimming it cut that restart from 1.28 s to 0.71 s (docs/benchmarks.md).
enum MemoryTuning {
    static func apply() {
        #if os(Linux)
        // From <malloc.h>, which the Glibc module does not import.
        let trimThreshold: Int32 = -1, topPad: Int32 = -2, mmapThreshold: Int32 = -3
        _ = glibcMallopt(mmapThreshold, 32 * 1024 * 1024)
        _ = glibcMallopt(trimThreshold, 512 * 1024 * 1024)
        _ = glibcMallopt(topPad, 64 * 1024 * 1024)
        #endif
    }

    /// Back to glibc's defaults, which return freed memory to the system soon: under a memory limit,
    /// memory held for speed would count against it.
    static func returnFreedMemory() {
        #if os(Linux)
        let trimThreshold: Int32 = -1, topPad: Int32 = -2, mmapThreshold: Int32 = -3
        _ = glibcMallopt(mmapThreshold, 128 * 1024)
        _ = glibcMallopt(trimThreshold, 128 * 1024)
        _ = glibcMallopt(topPad, 0)
        #endif
    }
}

#if os(Linux)
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif
