// O_DIRECT is a GNU extension that Swift's Glibc module does not export (docs/decisions/0021-direct-io-for-large-uploads.md).
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include "CHearthFiles.h"
#include <errno.h>
#include <fcntl.h>

int hearth_set_direct_io(int fd, int on) {
#if defined(__linux__) && defined(O_DIRECT)
    int flags = fcntl(fd, F_GETFL);
    if (flags == -1) return -1;
    flags = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
    return fcntl(fd, F_SETFL, flags) == -1 ? -1 : 0;
#else
    (void)fd;
    (void)on;
    errno = ENOTSUP;
    return -1;
#endif
}

int hearth_has_direct_io(int fd) {
#if defined(__linux__) && defined(O_DIRECT)
    int flags = fcntl(fd, F_GETFL);
    return flags != -1 && (flags & O_DIRECT) != 0;
#else
    (void)fd;
    return 0;
#endif
}
