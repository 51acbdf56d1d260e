/*
 * Whole numbers as decimal text, for the C extensions that write segment lines (tracker/write/_fastline.c:
 * steps and sequence numbers; tracker/capture/_console.c: the console lines' sequence numbers). Included by
 * each, so the function is static.
 */
#ifndef TRACKER_DECIMAL_H
#define TRACKER_DECIMAL_H

#include <stddef.h>

/* The decimal digits of u into out (at least 20 bytes), most significant first; returns their count. */
static size_t
decimal_digits(char *out, unsigned long long u)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

#endif
