// MD5 of many bodies at once: the 16 lanes of AVX-512 each run one body's compression, about seven
// times the throughput of one MD5 (a serial chain) on one core, which 1 MiB uploads spent a third of
// the server's CPU on (docs/decisions/0022-md5-in-lanes.md). One body alone takes the plain C function.
#include "CHearthFiles.h"
#include <string.h>

static const uint32_t md5_k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

// The rotation amounts of MD5's 64 steps, four per round.
static const int md5_shift[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

static inline uint32_t md5_rotate(uint32_t x, int s) {
    return (x << s) | (x >> (32 - s));
}

#define MD5_STEP(f, a, b, c, d, word, step) \
    a = b + md5_rotate(a + (f) + words[word] + md5_k[step], md5_shift[(step) >> 4][(step) & 3])

void hearth_md5_compress(uint32_t state[4], const uint8_t *blocks, size_t count) {
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    for (size_t block = 0; block < count; block++, blocks += 64) {
        uint32_t words[16];
        for (int word = 0; word < 16; word++) {
            // MD5's words are little-endian: a plain load where the CPU is too.
            const uint8_t *bytes = blocks + 4 * word;
            words[word] = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
        }
        const uint32_t a0 = a, b0 = b, c0 = c, d0 = d;
        for (int step = 0; step < 16; step += 4) {
            MD5_STEP((b & c) | (~b & d), a, b, c, d, step, step);
            MD5_STEP((a & b) | (~a & c), d, a, b, c, step + 1, step + 1);
            MD5_STEP((d & a) | (~d & b), c, d, a, b, step + 2, step + 2);
            MD5_STEP((c & d) | (~c & a), b, c, d, a, step + 3, step + 3);
        }
        for (int step = 16; step < 32; step += 4) {
            MD5_STEP((b & d) | (c & ~d), a, b, c, d, (5 * step + 1) & 15, step);
            MD5_STEP((a & c) | (b & ~c), d, a, b, c, (5 * step + 6) & 15, step + 1);
            MD5_STEP((d & b) | (a & ~b), c, d, a, b, (5 * step + 11) & 15, step + 2);
            MD5_STEP((c & a) | (d & ~a), b, c, d, a, (5 * step + 16) & 15, step + 3);
        }
        for (int step = 32; step < 48; step += 4) {
            MD5_STEP(b ^ c ^ d, a, b, c, d, (3 * step + 5) & 15, step);
            MD5_STEP(a ^ b ^ c, d, a, b, c, (3 * step + 8) & 15, step + 1);
            MD5_STEP(d ^ a ^ b, c, d, a, b, (3 * step + 11) & 15, step + 2);
            MD5_STEP(c ^ d ^ a, b, c, d, a, (3 * step + 14) & 15, step + 3);
        }
        for (int step = 48; step < 64; step += 4) {
            MD5_STEP(c ^ (b | ~d), a, b, c, d, (7 * step) & 15, step);
            MD5_STEP(b ^ (a | ~c), d, a, b, c, (7 * step + 7) & 15, step + 1);
            MD5_STEP(a ^ (d | ~b), c, d, a, b, (7 * step + 14) & 15, step + 2);
            MD5_STEP(d ^ (c | ~a), b, c, d, a, (7 * step + 21) & 15, step + 3);
        }
        a += a0;
        b += b0;
        c += c0;
        d += d0;
    }
    state[0] = a;
    state[1] = b;
    state[2] = c;
    state[3] = d;
}

#if defined(__x86_64__)
#include <immintrin.h>

int hearth_md5_lanes_available(void) {
    // A read of what the runtime found at start; it covers the OS saving AVX-512's registers (XCR0).
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
}

// Turns 16 rows (row l: lane l's block of 16 words) into 16 columns (column w: word w of each lane).
__attribute__((target("avx512f")))
static inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

// What an idle lane reads.
static const uint8_t md5_zero_block[64];

// One step on all lanes: b + rotate(a + f(b, c, d) + word + k), f being a `vpternlogd` truth table
// (0xCA: b ? c : d; 0x96: b ^ c ^ d; 0x39: c ^ (b | ~d); round 2's (d ? b : c) as LANES_G). a + word + k
// does not wait for the step before, so only f, one add, the rotation and the last add are on the chain.
#define LANES_STEP(logic, a, b, c, d, word, step, shift)                                                    \
    a = _mm512_add_epi32(a, _mm512_add_epi32(m[word], _mm512_set1_epi32((int)md5_k[step])));              \
    a = _mm512_add_epi32(b, _mm512_rol_epi32(_mm512_add_epi32(a, _mm512_ternarylogic_epi32(b, c, d, logic)), shift))
#define LANES_G(a, b, c, d, word, step, shift)                                                              \
    a = _mm512_add_epi32(a, _mm512_add_epi32(m[word], _mm512_set1_epi32((int)md5_k[step])));              \
    a = _mm512_add_epi32(b, _mm512_rol_epi32(_mm512_add_epi32(a, _mm512_ternarylogic_epi32(d, b, c, 0xCA)), shift))
#define LANES_ROUND1(step) \
    LANES_STEP(0xCA, a, b, c, d, step, step, 7); LANES_STEP(0xCA, d, a, b, c, step + 1, step + 1, 12); \
    LANES_STEP(0xCA, c, d, a, b, step + 2, step + 2, 17); LANES_STEP(0xCA, b, c, d, a, step + 3, step + 3, 22)
#define LANES_ROUND2(step) \
    LANES_G(a, b, c, d, (5 * step + 1) & 15, step, 5); LANES_G(d, a, b, c, (5 * step + 6) & 15, step + 1, 9); \
    LANES_G(c, d, a, b, (5 * step + 11) & 15, step + 2, 14); LANES_G(b, c, d, a, (5 * step + 16) & 15, step + 3, 20)
#define LANES_ROUND3(step) \
    LANES_STEP(0x96, a, b, c, d, (3 * step + 5) & 15, step, 4); LANES_STEP(0x96, d, a, b, c, (3 * step + 8) & 15, step + 1, 11); \
    LANES_STEP(0x96, c, d, a, b, (3 * step + 11) & 15, step + 2, 16); LANES_STEP(0x96, b, c, d, a, (3 * step + 14) & 15, step + 3, 23)
#define LANES_ROUND4(step) \
    LANES_STEP(0x39, a, b, c, d, (7 * step) & 15, step, 6); LANES_STEP(0x39, d, a, b, c, (7 * step + 7) & 15, step + 1, 10); \
    LANES_STEP(0x39, c, d, a, b, (7 * step + 14) & 15, step + 2, 15); LANES_STEP(0x39, b, c, d, a, (7 * step + 21) & 15, step + 3, 21)

__attribute__((target("avx512f")))
static void md5_lanes_avx512(uint32_t state[64], const uint8_t *const lanes[16], size_t count) {
    __m512i a = _mm512_loadu_si512(state);
    __m512i b = _mm512_loadu_si512(state + 16);
    __m512i c = _mm512_loadu_si512(state + 32);
    __m512i d = _mm512_loadu_si512(state + 48);
    const uint8_t *next[16];
    size_t stride[16];
    for (int lane = 0; lane < 16; lane++) {
        next[lane] = lanes[lane] ? lanes[lane] : md5_zero_block;
        stride[lane] = lanes[lane] ? 64 : 0;
    }
    for (size_t block = 0; block < count; block++) {
        __m512i m[16];
        for (int lane = 0; lane < 16; lane++) {
            m[lane] = _mm512_loadu_si512(next[lane]);
            next[lane] += stride[lane];
        }
        transpose16(m);
        const __m512i a0 = a, b0 = b, c0 = c, d0 = d;
        LANES_ROUND1(0); LANES_ROUND1(4); LANES_ROUND1(8); LANES_ROUND1(12);
        LANES_ROUND2(16); LANES_ROUND2(20); LANES_ROUND2(24); LANES_ROUND2(28);
        LANES_ROUND3(32); LANES_ROUND3(36); LANES_ROUND3(40); LANES_ROUND3(44);
        LANES_ROUND4(48); LANES_ROUND4(52); LANES_ROUND4(56); LANES_ROUND4(60);
        a = _mm512_add_epi32(a, a0);
        b = _mm512_add_epi32(b, b0);
        c = _mm512_add_epi32(c, c0);
        d = _mm512_add_epi32(d, d0);
    }
    __mmask16 active = 0;
    for (int lane = 0; lane < 16; lane++) {
        if (lanes[lane]) active |= (__mmask16)(1u << lane);
    }
    _mm512_mask_storeu_epi32(state, active, a);
    _mm512_mask_storeu_epi32(state + 16, active, b);
    _mm512_mask_storeu_epi32(state + 32, active, c);
    _mm512_mask_storeu_epi32(state + 48, active, d);
}

#else

int hearth_md5_lanes_available(void) {
    return 0;
}

#endif

// One lane after another: where the CPU has no AVX-512.
static void md5_lanes_one_by_one(uint32_t state[64], const uint8_t *const lanes[16], size_t count) {
    for (int lane = 0; lane < 16; lane++) {
        if (!lanes[lane]) continue;
        uint32_t one[4] = {state[lane], state[16 + lane], state[32 + lane], state[48 + lane]};
        hearth_md5_compress(one, lanes[lane], count);
        for (int word = 0; word < 4; word++) state[16 * word + lane] = one[word];
    }
}

void hearth_md5_lanes(uint32_t state[64], const uint8_t *const lanes[16], size_t count) {
#if defined(__x86_64__)
    if (hearth_md5_lanes_available()) {
        md5_lanes_avx512(state, lanes, count);
        return;
    }
#endif
    md5_lanes_one_by_one(state, lanes, count);
}
