#ifndef CHEARTH_FILES_H
#define CHEARTH_FILES_H

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has a CRC-32C instruction (SSE 4.2 on x86-64, the CRC extension on 64-bit ARM).
int hearth_crc32c_hardware_available(void);

/// Runs CRC-32C's register `crc` (the running value, already inverted) over `count` bytes with the
/// CPU's instruction, and returns it. Only call it when `hearth_crc32c_hardware_available()` says so.
uint32_t hearth_crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t count);

/// Turns direct I/O (`O_DIRECT`: writes go from the caller's memory to the device, not through the
/// page cache) on or off for an open file. Returns 0, or -1 with errno set (EINVAL where the file
/// system has no direct I/O; always -1 where the platform has none).
int hearth_set_direct_io(int fd, int on);

/// 1 if the file descriptor has direct I/O on, 0 if not (always 0 where the platform has none).
int hearth_has_direct_io(int fd);

/// Runs MD5's compression over `count` consecutive 64-byte blocks, `state` being MD5's four words
/// (A, B, C, D) before and after. Plain C: for one body on its own.
void hearth_md5_compress(uint32_t state[4], const uint8_t *blocks, size_t count);

/// 1 if ``hearth_md5_lanes`` runs 16 lanes at once here (x86-64 with AVX-512, the OS saving its
/// registers), 0 if it runs them one after another.
int hearth_md5_lanes_available(void);

/// Runs MD5's compression over `count` 64-byte blocks in each of 16 lanes at once: lane `i` has the
/// state `state[i]`, `state[16 + i]`, `state[32 + i]`, `state[48 + i]` (A, B, C, D) and its blocks at
/// `lanes[i]`, one after another; a NULL lane is idle (its state is left as it was).
void hearth_md5_lanes(uint32_t state[64], const uint8_t *const lanes[16], size_t count);

/// Opens `path` for reading, without updating its access time, only if every part of it is in the
/// kernel's caches (Linux's `openat2` with `RESOLVE_CACHED`, 5.12 and later), so the open never waits
/// for the disk: the file descriptor, or -1 with errno set (EAGAIN when something is not cached; EPERM
/// for a file this process does not own; ENOSYS or ENOTSUP where there is no such open).
int hearth_open_cached(const char *path);

/// Reads up to `count` bytes at `offset` only from the page cache (Linux's `preadv2` with `RWF_NOWAIT`):
/// the bytes read, fewer than asked where the rest is not cached, or -1 with errno set (EAGAIN when
/// nothing asked for is cached; ENOTSUP where the platform has no such read, EOPNOTSUPP where the
/// kernel or file system has none).
long hearth_read_cached(int fd, void *buffer, size_t count, int64_t offset);

/// Whether every page of `[offset, offset + length)` of the open file `fd` is in the page cache with
/// its bytes read (`mincore` on a mapping of the range nothing touches): 1 if so, 0 if not, -1 with
/// errno set. A page whose read from the disk is still under way counts as not there (the kernel
/// reports a page only once it is up to date), so a `sendfile` of the range does not wait for the disk.
int hearth_range_is_resident(int fd, int64_t offset, int64_t length);

#endif
