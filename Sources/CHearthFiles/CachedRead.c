// Opening and reading a file only from the kernel's caches, which Swift's Glibc module does not export
// (GNU and Linux extensions): downloads read cached blobs in their own task with these, without a hop
// to the blocking pool, and never wait for the disk there (docs/decisions/0023-cached-reads-in-place.md),
// or hand them to the event loop's sendfile only when every page is cached and read (decision 0026).
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "CHearthFiles.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>
#if defined(__linux__)
#include <sys/syscall.h>
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

int hearth_range_is_resident(int fd, int64_t offset, int64_t length) {
    if (offset < 0 || length <= 0) {
        errno = EINVAL;
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    int64_t start = offset / page * page;
    size_t span = (size_t)(offset + length - start);
    size_t pages = (span + (size_t)page - 1) / (size_t)page;
    // A mapping nothing touches: no page is faulted in, and unmapping it flushes nothing.
    void *mapping = mmap(NULL, span, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (mapping == MAP_FAILED) return -1;
    unsigned char small[256];
    unsigned char *vector = pages <= sizeof small ? small : malloc(pages);
    int result = -1;
    if (vector != NULL && mincore(mapping, span, vector) == 0) {
        result = 1;
        for (size_t index = 0; index < pages; index++) {
            if ((vector[index] & 1) == 0) {
                result = 0;
                break;
            }
        }
    }
    int saved = errno;
    if (vector != small) free(vector);
    munmap(mapping, span);
    errno = saved;
    return result;
}
