// Opening and reading a file only from the kernel's caches, which Swift's Glibc module does not export
// (GNU and Linux extensions): downloads read cached blobs in their own task with these, without a hop
// to the blocking pool, and never wait for the disk there (docs/decisions/0023-cached-reads-in-place.md),
// or hand them to the event loop's sendfile only when every page is cached (decision 0026).
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "CHearthFiles.h"
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif
#endif

int hearth_open_cached(const char *path) {
#if defined(__linux__) && defined(SYS_openat2) && defined(RESOLVE_CACHED)
    struct open_how how = {0};
    // O_NOATIME: a read that updates the access time dirties the inode, which on a journalled file
    // system can wait for the journal (the server owns its blobs; EPERM where it does not).
    how.flags = O_RDONLY | O_CLOEXEC | O_NOATIME;
    how.resolve = RESOLVE_CACHED;
    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
#else
    (void)path;
    errno = ENOTSUP;
    return -1;
#endif
}

long hearth_read_cached(int fd, void *buffer, size_t count, int64_t offset) {
#if defined(__linux__) && defined(RWF_NOWAIT)
    struct iovec piece = {buffer, count};
    return (long)preadv2(fd, &piece, 1, (off_t)offset, RWF_NOWAIT);
#else
    (void)fd;
    (void)buffer;
    (void)count;
    (void)offset;
    errno = ENOTSUP;
    return -1;
#endif
}

#if defined(__linux__) && !defined(__NR_cachestat) && (defined(__x86_64__) || defined(__aarch64__))
#define __NR_cachestat 451  // Linux 6.5; older C headers do not name it
#endif

int hearth_range_is_cached(int fd, int64_t offset, int64_t length) {
#if defined(__linux__) && defined(__NR_cachestat)
    if (offset < 0 || length <= 0) {
        errno = EINVAL;
        return -1;
    }
    // The kernel's own structs (linux/mman.h of 6.5), spelled out for older headers.
    struct { uint64_t off, len; } range = {(uint64_t)offset, (uint64_t)length};
    struct { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; } stat = {0};
    if (syscall(__NR_cachestat, fd, &range, &stat, 0) != 0) return -1;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    uint64_t first = (uint64_t)offset / (uint64_t)page, last = (uint64_t)(offset + length - 1) / (uint64_t)page;
    return stat.nr_cache >= last - first + 1 ? 1 : 0;
#else
    (void)fd;
    (void)offset;
    (void)length;
    errno = ENOSYS;
    return -1;
#endif
}
