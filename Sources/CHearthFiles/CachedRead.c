// preadv2 with RWF_NOWAIT: a read that never waits for the disk, which Swift's Glibc module does not
// export (a GNU extension). Downloads read cached blobs in their own task with it, without a hop to
// the blocking pool (docs/decisions/0023-cached-reads-in-place.md).
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include "CHearthFiles.h"
#include <errno.h>
#include <sys/types.h>
#include <sys/uio.h>

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
