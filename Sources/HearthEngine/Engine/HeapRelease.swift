/// Hands memory the allocator holds but no longer uses back to the system.
///
/// Loading a large database leaves hundreds of megabytes of freed scaffolding in glibc's heaps, which
/// keeps them (the server tunes glibc to keep freed memory, for speed: `MemoryTuning`); one trim after
/// the load returns it (docs/decisions/0012-compact-tree-and-warm-start.md).
enum HeapRelease {
    static func releaseFreeMemory() {
        #if os(Linux) && canImport(Glibc)
        _ = glibcMallocTrim(0)
        #endif
    }
}

#if os(Linux) && canImport(Glibc)
// From <malloc.h>, which the Glibc module does not import.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
