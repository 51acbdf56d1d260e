/*
 * CRC-32 as zlib computes it (reflected, polynomial 0xEDB88320), for the C extensions that write
 * segment lines (tracker/write/_fastline.c, tracker/capture/_console.c): slicing by 8, and carry-less
 * multiplication where the CPU has it. Included by each, so every function here is static; crc_setup()
 * runs once in each module's init. Included after <Python.h>, it also gives both modules their crc32()
 * function (crc32_py).
 */
#ifndef TRACKER_CRC32_H
#define TRACKER_CRC32_H

#include <stdint.h>
#include <string.h>

static uint32_t crc_table[8][256];

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc_table[0][c & 0xff] ^ (c >> 8);
            crc_table[t][i] = c;
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CLMUL 1
#include <immintrin.h>

/*
 * CRC-32 by carry-less multiplication (Intel, "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ"; the constants of Linux's crc32-pclmul for zlib's reflected polynomial): folds 64 bytes
 * at a time, then 16, then reduces to 32 bits (Barrett). Takes and returns the running state (the CRC
 * before its final inversion); n >= 64; handles n rounded down to 16 bytes, the rest is the caller's.
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc32_clmul(const unsigned char *p, size_t n, uint32_t state)
{
    const __m128i k2k1 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i k4k3 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);
    const __m128i poly = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1 = _mm_loadu_si128((const __m128i *)p), x2 = _mm_loadu_si128((const __m128i *)(p + 16)),
            x3 = _mm_loadu_si128((const __m128i *)(p + 32)), x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)state));
    p += 64;
    n -= 64;
#define FOLD(x, k, next) _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), \
                                                     _mm_clmulepi64_si128(x, k, 0x11)), next)
    while (n >= 64) {
        x1 = FOLD(x1, k2k1, _mm_loadu_si128((const __m128i *)p));
        x2 = FOLD(x2, k2k1, _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = FOLD(x3, k2k1, _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = FOLD(x4, k2k1, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x1 = FOLD(x1, k4k3, x2);
    x1 = FOLD(x1, k4k3, x3);
    x1 = FOLD(x1, k4k3, x4);
    while (n >= 16) {
        x1 = FOLD(x1, k4k3, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
#undef FOLD
    /* 128 to 64 bits, then to 32 (both adding zeros to the message), then the Barrett reduction. */
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(k4k3, x1, 0x01));
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 4), _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00));
    __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10), mask32);
    x1 = _mm_xor_si128(x1, _mm_clmulepi64_si128(t, poly, 0x00));
    return (uint32_t)_mm_extract_epi32(x1, 1);
}

static int has_clmul;
#endif

static uint32_t
crc32_of(const unsigned char *p, size_t n, uint32_t crc)
{
    uint32_t c = crc ^ 0xFFFFFFFFu;
#ifdef HAVE_CLMUL
    if (n >= 64 && has_clmul) {
        size_t whole = n & ~(size_t)15;
        c = crc32_clmul(p, whole, c);
        p += whole;
        n -= whole;
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n >= 8) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + 4, 4);
        a ^= c;
        c = crc_table[7][a & 0xff] ^ crc_table[6][(a >> 8) & 0xff] ^ crc_table[5][(a >> 16) & 0xff]
            ^ crc_table[4][a >> 24] ^ crc_table[3][b & 0xff] ^ crc_table[2][(b >> 8) & 0xff]
            ^ crc_table[1][(b >> 16) & 0xff] ^ crc_table[0][b >> 24];
        p += 8;
        n -= 8;
    }
#endif
    while (n--)
        c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* The table, and whether the CPU multiplies carry-less: once, in the module's init. */
static void
crc_setup(void)
{
    crc_init();
#ifdef HAVE_CLMUL
    __builtin_cpu_init();
    has_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

#ifdef Py_PYTHON_H
/* crc32(data, start=0) -> zlib.crc32(data, start): the function each extension's module offers (tests hold it
 * to zlib's). */
static PyObject *
crc32_py(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer view;
    unsigned int start = 0;
    if (!PyArg_ParseTuple(args, "y*|I:crc32", &view, &start))
        return NULL;
    uint32_t crc = crc32_of((const unsigned char *)view.buf, (size_t)view.len, start);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}
#endif

#endif
