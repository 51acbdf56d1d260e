/*
 * The console recorder's hot paths in C (tracker/capture/console.py holds the same in Python, used when
 * this module was not built: no C compiler, or TRACKER_PURE_PYTHON=1).
 *
 * Tee is the wrapped write of sys.stdout / sys.stderr: it calls the stream's own write with exactly the
 * arguments given, returns its result, then copies the text's UTF-8 into a Spool (what a stream writes in
 * a row is one stretch of bytes; anything else is kept as the object it is), so a print() pays one C call
 * and a copy, and the recorder's thread never touches the program's objects (their reference counts stay
 * on the printing thread's core); each time `every` more bytes wait it wakes the flusher, so that what
 * waits stays small. Its `on` turns it into a pass-through.
 *
 * lines() and feed() put console lines between the constant parts of a `console` record's line (made by
 * the recorder from the writer's record template), escape the text as orjson escapes JSON strings (the
 * encoder of every other line), number the records after the writer's last sequence number and append each
 * record's CRC-32 (zlib's), so that one write(2) puts a whole batch into the segment. Consecutive lines of
 * one stream share a record, joined by \n inside its JSON string, up to MAX_TEXT_BYTES of text in all
 * (lines.py's lines_py makes the same bytes); a partial line is the last of its record. feed() also cuts the
 * written text into lines itself (the common case: the spool's leading stdout text), collapsing \r
 * rewrites and splitting lines over 64 KiB exactly as console.py's _Line and checked() do, without making
 * a str per line (a run of plain lines goes into its record in one piece), and writes the records to the
 * writer's segment; it declines (returns None, having taken nothing) for anything else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The most text one record holds, in bytes of UTF-8 (console.py's MAX_TEXT_BYTES). */
#define MAX_TEXT_BYTES (64 * 1024)

#include "../core/_crc32.h"
#include "../core/_decimal.h"
#include "../core/_gcfields.h"

/* ---- JSON string escaping, as orjson writes it ------------------------------------------------- */

/* 0: the byte as it is; 'u': \u00XX; else the letter after a backslash. */
static char escape_of[256];
static const char hexdigits[] = "0123456789abcdef";

static void
escape_init(void)
{
    memset(escape_of, 0, sizeof escape_of);
    for (int c = 0; c < 0x20; c++)
        escape_of[c] = 'u';
    escape_of['\b'] = 'b';
    escape_of['\t'] = 't';
    escape_of['\n'] = 'n';
    escape_of['\f'] = 'f';
    escape_of['\r'] = 'r';
    escape_of['"'] = '"';
    escape_of['\\'] = '\\';
}

/* The bytes of x that a JSON string escapes, as a bit mask (bit i: byte i). */
#if defined(__SSE2__)
static inline unsigned
specials16(__m128i x)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), top = _mm_set1_epi8(0x1f);
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                                 _mm_cmpeq_epi8(x, bslash)),
                                                    _mm_cmpeq_epi8(_mm_min_epu8(x, top), x)));
}
#endif

/* The first byte of s[0:n] that a JSON string escapes (below 0x20, '"', '\\'; \n and \r among them), or n:
 * 16 bytes at a time where the CPU has SSE2 (every x86-64), the last block overlapping the one before. */
static inline size_t
find_special(const unsigned char *s, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    if (n >= 16) {
        for (;;) {
            size_t at = i + 16 <= n ? i : n - 16;
            unsigned mask = specials16(_mm_loadu_si128((const __m128i *)(s + at))) & (~0u << (i - at));
            if (mask)
                return at + (size_t)__builtin_ctz(mask);
            if (at + 16 >= n)
                return n;
            i = at + 16;
        }
    }
#endif
    for (; i < n; i++) {
        if (escape_of[s[i]])
            return i;
    }
    return n;
}

/* The last b in s[0:n], or NULL (memrchr, which not every C library has). */
static const unsigned char *
last_byte(const unsigned char *s, size_t n, unsigned char b)
{
#if defined(__SSE2__)
    const __m128i v = _mm_set1_epi8((char)b);
    for (; n >= 16; n -= 16) {
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + n - 16)), v));
        if (mask)
            return s + n - 16 + (31 - __builtin_clz(mask));
    }
#endif
    while (n > 0) {
        if (s[--n] == b)
            return s + n;
    }
    return NULL;
}

/* Writes the escaped form of s[0:n] at out (room for 6 * n bytes); returns the bytes written and counts the
 * \n among s in *newlines. 32 bytes at a time are stored as they are and the output moves on to the first
 * that needs escaping (the stores never pass out + 6 * n). */
static size_t
escape_counting(char *out, const unsigned char *s, size_t n, size_t *newlines)
{
    char *o = out;
    size_t i = 0, nl = 0;
    for (;;) {
        size_t run;
#if defined(__SSE2__)
        if (i + 32 <= n) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(s + i)), x1 = _mm_loadu_si128((const __m128i *)(s + i + 16));
            _mm_storeu_si128((__m128i *)o, x0);
            _mm_storeu_si128((__m128i *)(o + 16), x1);
            unsigned mask = specials16(x0) | specials16(x1) << 16;
            if (mask == 0) {
                i += 32;
                o += 32;
                continue;
            }
            unsigned k = (unsigned)__builtin_ctz(mask);
            i += k;
            o += k;
            run = i;
        } else if (i + 16 <= n) {
            __m128i x = _mm_loadu_si128((const __m128i *)(s + i));
            _mm_storeu_si128((__m128i *)o, x);
            unsigned mask = specials16(x);
            if (mask == 0) {
                i += 16;
                o += 16;
                continue;
            }
            unsigned k = (unsigned)__builtin_ctz(mask);
            i += k;
            o += k;
            run = i;
        } else
#endif
        {
            run = i + find_special(s + i, n - i);
            memcpy(o, s + i, run - i);
            o += run - i;
            if (run == n)
                break;
        }
        unsigned char c = s[run];
        char e = escape_of[c];
        if (e == 'u') {
            o[0] = '\\'; o[1] = 'u'; o[2] = '0'; o[3] = '0';
            o[4] = hexdigits[c >> 4]; o[5] = hexdigits[c & 15];
            o += 6;
        } else {
            o[0] = '\\'; o[1] = e;
            o += 2;
            nl += c == '\n';
        }
        i = run + 1;
    }
    *newlines += nl;
    return (size_t)(o - out);
}


/* A sequence number as decimal text, counted up in place (lines are numbered one after another). */
typedef struct {
    char d[24];
    size_t n;
} Seq;

static void
seq_set(Seq *q, long long v)
{
    q->n = decimal_digits(q->d, v < 0 ? 0 : (unsigned long long)v);
}

static void
seq_next(Seq *q)
{
    size_t i = q->n;
    while (i > 0) {
        if (q->d[i - 1] != '9') {
            q->d[i - 1]++;
            return;
        }
        q->d[--i] = '0';
    }
    memmove(q->d + 1, q->d, q->n);  /* 999 -> 1000 */
    q->d[0] = '1';
    q->n++;
}

/* ---- a growable byte buffer -------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int
reserve(Buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL)
        return -1;  /* the caller, holding the interpreter, raises MemoryError */
    b->p = p;
    b->cap = cap;
    return 0;
}

static int
put(Buf *b, const void *data, size_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

/* ---- one record's line ------------------------------------------------------------------------- */

typedef struct {
    const char *pre;
    size_t pren;
    uint32_t crc_pre;
    long long seq;
    Seq text;
    const char *mid[2], *tail[2];
    size_t midn[2], tailn[2];
} Parts;

/* A record being put together: several lines of one stream, joined by \n inside its JSON string (at most
 * MAX_TEXT_BYTES bytes of text in all). open is 0 when none is. */
typedef struct {
    int open, stream;
    size_t body;   /* where the record's line continues after pre (its CRC covers from there) */
    size_t text;   /* its text so far, in bytes of UTF-8 (the \n between lines counted) */
} Rec;

/* Closes the open record: its tail, its CRC-32, the end of the store line. */
static int
rec_close(Buf *out, Parts *parts, Rec *r, int partial)
{
    if (!r->open)
        return 0;
    if (reserve(out, parts->tailn[partial] + 20) < 0)
        return -1;
    char *o = out->p + out->len;
    memcpy(o, parts->tail[partial], parts->tailn[partial]);
    o += parts->tailn[partial];
    uint32_t crc = crc32_of((const unsigned char *)out->p + r->body, (size_t)(o - (out->p + r->body)),
                            parts->crc_pre);
    memcpy(o, ",\"crc\":\"", 8);
    o += 8;
    for (int shift = 28; shift >= 0; shift -= 4)
        *o++ = hexdigits[(crc >> shift) & 15];
    memcpy(o, "\"}\n", 3);
    o += 3;
    out->len = (size_t)(o - out->p);
    r->open = 0;
    return 0;
}

/* Adds one line (text: UTF-8, already valid, at most MAX_TEXT_BYTES) of `stream` to the open record, or
 * closes it and opens the next one (another stream, or no room left); *opened counts the records opened.
 * The text may be several lines joined by \n (cut_block()): *newlines (if not NULL) counts them. */
static int
rec_add(Buf *out, Parts *parts, Rec *r, const unsigned char *text, size_t n, int stream, long long *opened,
        size_t *newlines)
{
    if (r->open && (r->stream != stream || r->text + 1 + n > MAX_TEXT_BYTES)) {
        if (rec_close(out, parts, r, 0) < 0)
            return -1;
    }
    if (reserve(out, parts->pren + 21 + parts->midn[stream] + 2 + 6 * n) < 0)
        return -1;
    char *o = out->p + out->len;
    if (!r->open) {
        memcpy(o, parts->pre, parts->pren);
        o += parts->pren;
        r->body = (size_t)(o - out->p);
        parts->seq++;
        seq_next(&parts->text);
        memcpy(o, parts->text.d, parts->text.n);
        o += parts->text.n;
        memcpy(o, parts->mid[stream], parts->midn[stream]);
        o += parts->midn[stream];
        r->open = 1;
        r->stream = stream;
        r->text = n;
        (*opened)++;
    } else {
        o[0] = '\\'; o[1] = 'n';
        o += 2;
        r->text += 1 + n;
    }
    size_t nl = 0;
    o += escape_counting(o, text, n, newlines ? newlines : &nl);
    out->len = (size_t)(o - out->p);
    return 0;
}

/* The length of the first piece of s[0:n] of at most MAX_TEXT_BYTES bytes, cut between characters. */
static size_t
piece(const unsigned char *s, size_t n)
{
    if (n <= MAX_TEXT_BYTES)
        return n;
    size_t end = MAX_TEXT_BYTES;
    while (end > 0 && (s[end] & 0xC0) == 0x80)
        end--;
    return end;
}

static int
parse_parts(Parts *parts, Py_buffer *pre, unsigned int crc_pre, long long seq, PyObject *mids, PyObject *tails)
{
    if (!PyTuple_Check(mids) || !PyTuple_Check(tails) || PyTuple_GET_SIZE(mids) != 2 || PyTuple_GET_SIZE(tails) != 2) {
        PyErr_SetString(PyExc_ValueError, "expected two mids and two tails");
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        PyObject *m = PyTuple_GET_ITEM(mids, i), *t = PyTuple_GET_ITEM(tails, i);
        if (!PyBytes_Check(m) || !PyBytes_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "mids and tails must be bytes");
            return -1;
        }
        parts->mid[i] = PyBytes_AS_STRING(m);
        parts->midn[i] = (size_t)PyBytes_GET_SIZE(m);
        parts->tail[i] = PyBytes_AS_STRING(t);
        parts->tailn[i] = (size_t)PyBytes_GET_SIZE(t);
    }
    parts->pre = pre->buf;
    parts->pren = (size_t)pre->len;
    parts->crc_pre = crc_pre;
    parts->seq = seq;
    seq_set(&parts->text, seq);
    return 0;
}

/* ---- lines(pre, crc_pre, seq, texts, mids, tails, kinds) -> bytes ------------------------------ */

static PyObject *
lines(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer pre, kinds;
    unsigned int crc_pre;
    long long seq;
    PyObject *texts, *mids, *tails;
    if (!PyArg_ParseTuple(args, "y*ILO!OOy*:lines", &pre, &crc_pre, &seq, &PyList_Type, &texts, &mids, &tails,
                          &kinds))
        return NULL;
    PyObject *result = NULL;
    Buf out = {NULL, 0, 0};
    Parts parts;
    Py_ssize_t n = PyList_GET_SIZE(texts);
    if (parse_parts(&parts, &pre, crc_pre, seq, mids, tails) < 0)
        goto done;
    if (kinds.len != n) {
        PyErr_SetString(PyExc_ValueError, "lines: expected one kind per text");
        goto done;
    }
    const unsigned char *k = (const unsigned char *)kinds.buf;
    Rec r = {0, 0, 0, 0};
    long long opened = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(texts, i);
        Py_ssize_t len;
        const char *u = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &len) : NULL;
        if (u == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "lines: texts must be str");
            goto done;
        }
        /* a partial line is the last of its record (the next record of its stream is its later state) */
        if (rec_add(&out, &parts, &r, (const unsigned char *)u, (size_t)len, k[i] & 1, &opened, NULL) < 0 ||
            ((k[i] >> 1) & 1 && rec_close(&out, &parts, &r, 1) < 0)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (rec_close(&out, &parts, &r, 0) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(out.p ? out.p : "", (Py_ssize_t)out.len);
done:
    free(out.p);
    PyBuffer_Release(&pre);
    PyBuffer_Release(&kinds);
    return result;
}

/* ---- Spool: what the tees keep, as UTF-8 ------------------------------------------------------- */

/* A stretch of what was written to one stream: text (its UTF-8 in the spool's data, after the stretches
 * before it), or one object that is not a str UTF-8 can hold (a str with lone surrogates or of a subclass,
 * bytes given to a permissive stream), kept as it is for the Python path. */
typedef struct {
    PyObject *obj;   /* NULL: text */
    size_t len;      /* text: its bytes still waiting */
    int stream;      /* 0 stdout, 1 stderr */
} Seg;

/* What an object counts for in the spool's size (its text is not known here). */
#define OBJ_COST 64
/* The most text feed() takes from a spool at a time, in bytes (one write(2) to the segment): more than the
 * tees let wait (console.py's BACKLOG_BYTES), so that feed() takes the spool's buffer itself, not a copy. */
#define FEED_MOST ((size_t)4 << 20)

typedef struct {
    PyObject_HEAD
    Buf data;          /* the text waiting: data.p[head:data.len] */
    size_t head;
    Seg *segs;         /* the stretches waiting: segs[seghead:nsegs] */
    size_t seghead, nsegs, segcap;
    size_t size;       /* what waits, in bytes (an object: OBJ_COST) */
    unsigned long long taken;  /* what was taken since the spool was made, likewise */
    Buf spare;         /* an empty buffer, swapped in when feed() takes all the text at once */
} SpoolObject;

static PyTypeObject SpoolType;

static void
spool_reset(SpoolObject *sp)
{
    sp->seghead = sp->nsegs = 0;
    sp->head = sp->data.len = 0;
    sp->size = 0;
}

static Seg *
spool_seg(SpoolObject *sp, int stream, PyObject *obj)
{
    if (sp->nsegs == sp->segcap) {
        if (sp->seghead > 0) {  /* stretches taken: move the rest down */
            memmove(sp->segs, sp->segs + sp->seghead, (sp->nsegs - sp->seghead) * sizeof(Seg));
            sp->nsegs -= sp->seghead;
            sp->seghead = 0;
        }
        if (sp->nsegs == sp->segcap) {
            size_t cap = sp->segcap ? sp->segcap * 2 : 64;
            Seg *segs = realloc(sp->segs, cap * sizeof(Seg));
            if (segs == NULL)
                return NULL;
            sp->segs = segs;
            sp->segcap = cap;
        }
    }
    Seg *g = &sp->segs[sp->nsegs++];
    g->obj = obj;
    g->len = 0;
    g->stream = stream;
    return g;
}

/* Keeps what was written (s) to `stream`: its UTF-8, or the object itself. -1: no memory (nothing kept). */
static int
spool_put(SpoolObject *sp, int stream, PyObject *s)
{
    const char *p = NULL;
    Py_ssize_t n = 0;
    if (PyUnicode_CheckExact(s)) {
        if (PyUnicode_IS_COMPACT_ASCII(s)) {
            p = (const char *)PyUnicode_DATA(s);
            n = PyUnicode_GET_LENGTH(s);
        } else if ((p = PyUnicode_AsUTF8AndSize(s, &n)) == NULL) {
            PyErr_Clear();  /* lone surrogates: the Python path replaces them */
        }
    }
    if (p == NULL) {
        if (spool_seg(sp, stream, s) == NULL)
            return -1;
        Py_INCREF(s);
        sp->size += OBJ_COST;
        return 0;
    }
    if (n == 0)
        return 0;
    if (sp->data.len + (size_t)n > sp->data.cap && sp->head > 0) {  /* text taken: move the rest down */
        memmove(sp->data.p, sp->data.p + sp->head, sp->data.len - sp->head);
        sp->data.len -= sp->head;
        sp->head = 0;
    }
    if (reserve(&sp->data, (size_t)n) < 0)
        return -1;
    Seg *g = sp->nsegs > sp->seghead ? &sp->segs[sp->nsegs - 1] : NULL;
    if (g == NULL || g->obj != NULL || g->stream != stream) {
        if ((g = spool_seg(sp, stream, NULL)) == NULL)
            return -1;
    }
    memcpy(sp->data.p + sp->data.len, p, (size_t)n);
    sp->data.len += (size_t)n;
    g->len += (size_t)n;
    sp->size += (size_t)n;
    return 0;
}

/* The first stretch is done with: the next one is first (all taken: the spool starts over). */
static void
spool_pop(SpoolObject *sp)
{
    if (++sp->seghead == sp->nsegs)
        spool_reset(sp);
}

/* The spool's leading stdout text, at most FEED_MOST bytes cut between characters, for feed(): when that is
 * all that waits, the spool's buffer itself (into *swapped, to give back; the spool goes on with its
 * spare), else a copy in *in. Sets *u to it; returns its length, 0 when the spool does not start with
 * stdout text, -1 when out of memory. With the interpreter held. */
static Py_ssize_t
spool_take_text(SpoolObject *sp, Buf *in, Buf *swapped, const unsigned char **u)
{
    if (sp->seghead == sp->nsegs)
        return 0;
    Seg *g = &sp->segs[sp->seghead];
    if (g->obj != NULL || g->stream != 0)
        return 0;
    const unsigned char *t = (const unsigned char *)sp->data.p + sp->head;
    size_t k = g->len;
    if (k > FEED_MOST) {
        k = FEED_MOST;
        while (k > 0 && (t[k] & 0xC0) == 0x80)
            k--;
    }
    if (k == g->len && sp->seghead + 1 == sp->nsegs) {
        *swapped = sp->data;
        *u = t;
        sp->data = sp->spare;
        sp->spare = (Buf){NULL, 0, 0};
        sp->taken += k;
        spool_reset(sp);
        return (Py_ssize_t)k;
    }
    in->len = 0;
    if (put(in, t, k) < 0)
        return -1;
    *u = (const unsigned char *)in->p;
    g->len -= k;
    sp->head += k;
    sp->size -= k;
    sp->taken += k;
    if (g->len == 0)
        spool_pop(sp);
    return (Py_ssize_t)k;
}

/* A buffer spool_take_text() swapped out, back as the spool's spare (unless it has one, or it is large). */
static void
spool_give_back(SpoolObject *sp, Buf *b)
{
    if (sp->spare.p == NULL && b->cap <= ((size_t)8 << 20)) {
        b->len = 0;
        sp->spare = *b;
    } else {
        free(b->p);
    }
    *b = (Buf){NULL, 0, 0};
}

static PyObject *
spool_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (!PyArg_ParseTuple(args, ":Spool") || (kwds != NULL && PyDict_GET_SIZE(kwds) > 0)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Spool() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);  /* zeroed: empty */
}

static int
spool_traverse(SpoolObject *sp, visitproc visit, void *arg)
{
    for (size_t i = sp->seghead; i < sp->nsegs; i++)
        Py_VISIT(sp->segs[i].obj);
    return 0;
}

static int
spool_clear(SpoolObject *sp)
{
    size_t from = sp->seghead, to = sp->nsegs;
    spool_reset(sp);
    for (size_t i = from; i < to; i++)
        Py_CLEAR(sp->segs[i].obj);
    return 0;
}

static void
spool_dealloc(SpoolObject *sp)
{
    PyObject_GC_UnTrack(sp);
    spool_clear(sp);
    free(sp->data.p);
    free(sp->spare.p);
    free(sp->segs);
    Py_TYPE(sp)->tp_free((PyObject *)sp);
}

static Py_ssize_t
spool_len(SpoolObject *sp)
{
    return (Py_ssize_t)sp->size;
}

static PyObject *
spool_get_taken(SpoolObject *sp, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(sp->taken);
}

static PyGetSetDef spool_getset[] = {
    {"taken", (getter)spool_get_taken, NULL, "the bytes taken so far (feed() and take(); an object: 64)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* take(most) -> list: what waits, as the writes were (str for stdout, a 1-tuple for stderr, text of a stream
 * written one after another as one str), up to about `most` bytes, for the Python path. */
static PyObject *
spool_take(SpoolObject *sp, PyObject *arg)
{
    Py_ssize_t most = PyLong_AsSsize_t(arg);
    if (most == -1 && PyErr_Occurred())
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    size_t got = 0;
    while (sp->seghead < sp->nsegs && (most <= 0 || got < (size_t)most)) {
        Seg *g = &sp->segs[sp->seghead];
        int stream = g->stream;
        PyObject *item;
        if (g->obj != NULL) {
            item = g->obj;  /* the spool's reference, handed on */
            g->obj = NULL;
            sp->size -= OBJ_COST;
            sp->taken += OBJ_COST;
            got += OBJ_COST;
            spool_pop(sp);
        } else {
            const char *t = sp->data.p + sp->head;
            size_t k = g->len;
            if (most > 0 && k > (size_t)most - got) {
                k = (size_t)most - got;
                while (k > 0 && ((unsigned char)t[k] & 0xC0) == 0x80)
                    k--;
                if (k == 0)
                    break;
            }
            item = PyUnicode_DecodeUTF8(t, (Py_ssize_t)k, "strict");
            if (item == NULL)
                goto error;
            g->len -= k;
            sp->head += k;
            sp->size -= k;
            sp->taken += k;
            got += k;
            if (g->len == 0)
                spool_pop(sp);
        }
        if (stream) {
            PyObject *tup = PyTuple_Pack(1, item);
            Py_DECREF(item);
            if ((item = tup) == NULL)
                goto error;
        }
        int bad = PyList_Append(out, item);
        Py_DECREF(item);
        if (bad < 0)
            goto error;
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

static PyObject *
spool_drop(SpoolObject *sp, PyObject *Py_UNUSED(ignored))
{
    spool_clear(sp);
    Py_RETURN_NONE;
}

static PyMethodDef spool_methods[] = {
    {"take", (PyCFunction)spool_take, METH_O,
     "take(most) -> list: what waits, as writes (str: stdout, (str,): stderr), about `most` bytes (<= 0: all)."},
    {"clear", (PyCFunction)spool_drop, METH_NOARGS, "clear(): drop what waits."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods spool_as_sequence = {
    .sq_length = (lenfunc)spool_len,
};

static PyTypeObject SpoolType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracker.capture._console.Spool",
    .tp_basicsize = sizeof(SpoolObject),
    .tp_dealloc = (destructor)spool_dealloc,
    .tp_as_sequence = &spool_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Spool(): what the tees keep of stdout and stderr, as UTF-8 text in order (objects that are not "
              "such text as they are); len() is its size in bytes. feed() takes its stdout text, take() the rest.",
    .tp_traverse = (traverseproc)spool_traverse,
    .tp_clear = (inquiry)spool_clear,
    .tp_methods = spool_methods,
    .tp_getset = spool_getset,
    .tp_new = spool_new,
};

/* feed()'s buffers, kept from one call to the next so that their pages stay mapped (a fresh megabyte a
 * call costs page faults and zeroed pages as much as the work itself); taken and given back with the
 * interpreter held, so a second caller meanwhile (a forked child's writing thread) gets buffers of its own.
 * Past SCRATCH_KEEP (a batch of very long lines) they are freed rather than kept. */
static Buf scratch_out = {NULL, 0, 0}, scratch_cur = {NULL, 0, 0}, scratch_in = {NULL, 0, 0};
static int scratch_busy = 0;
#define SCRATCH_KEEP ((size_t)8 << 20)

static void
scratch_return(Buf *keep, Buf *b)
{
    if (b->cap > SCRATCH_KEEP) {
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
    b->len = 0;
    *keep = *b;
}

/* ---- cutting text into lines and records ------------------------------------------------------- */

typedef struct {
    Buf out;            /* the records */
    Buf cur;            /* the unfinished line */
    int cr;             /* a \r asks the next text to replace it */
    int full, oom;
    Rec r;
    Parts *parts;
    long long records, text_bytes, ended, limit;
} Cut;

/* A line ends: its records (a line over 64 KiB in pieces), while the run takes text. */
static void
cut_line(Cut *c, const unsigned char *s, size_t n)
{
    c->ended++;
    size_t at = 0;
    do {
        size_t k = piece(s + at, n - at);
        if (!c->full) {
            if (c->text_bytes + (long long)k > c->limit) {
                c->full = 1;
            } else {
                if (rec_add(&c->out, c->parts, &c->r, s + at, k, 0, &c->records, NULL) < 0) {
                    c->oom = 1;
                    return;
                }
                c->text_bytes += (long long)k;
            }
        }
        at += k;
    } while (at < n);
}

/* The common case, at a line's start with nothing unfinished before it: the complete lines of s[0:n] that
 * the open record (or a new one) and the run's limit still take, up to the first \r, go to the record in
 * one piece, escaped in one pass (their \n become the \n that joins a record's lines), as cut_line() would
 * put them there one by one. Returns the bytes taken (the last line's \n among them); 0: the next line is
 * for cut_line() (it holds a \r, does not fit the open record, is past the limit, or is unfinished). */
static size_t
cut_block(Cut *c, const unsigned char *s, size_t n)
{
    Rec *r = &c->r;
    if (c->full || n == 0)
        return 0;
    /* the most text the record takes (the \n joining it to the text before counted), plus one: where the
     * last line's \n may be; within the run's limit too (the block's text bytes are at most its length) */
    size_t win = !(r->open && r->stream == 0) ? MAX_TEXT_BYTES + 1
                 : r->text + 1 <= MAX_TEXT_BYTES ? MAX_TEXT_BYTES - r->text : 0;
    long long left = c->limit - c->text_bytes;
    if (left < 0)
        left = 0;
    if ((unsigned long long)left + 1 < win)
        win = (size_t)left + 1;
    if (win > n)
        win = n;
    const unsigned char *nl = last_byte(s, win, '\n');
    if (nl == NULL)
        return 0;
    const unsigned char *cr = memchr(s, '\r', (size_t)(nl - s));
    if (cr != NULL && (cr == s || (nl = last_byte(s, (size_t)(cr - s), '\n')) == NULL))
        return 0;
    size_t len = (size_t)(nl - s), lines = 1;  /* the last line's \n is not in the text */
    if (rec_add(&c->out, c->parts, r, s, len, 0, &c->records, &lines) < 0) {
        c->oom = 1;
        return 0;
    }
    c->ended += (long long)lines;
    c->text_bytes += (long long)(len + 1 - lines);
    return len + 1;
}

/* Cuts u[0:len] (UTF-8, whole characters) into lines after the unfinished one, as _Line.feed does: \r
 * rewrites collapse, each \n ends a line. Runs of plain lines go to the record in one piece (cut_block());
 * the rest, a line at a time, through the unfinished line's buffer. */
static void
cut_text(Cut *c, const unsigned char *u, size_t len)
{
    size_t start = 0;
    while (start < len) {
        if (c->cur.len == 0 && !c->cr) {
            size_t k = cut_block(c, u + start, len - start);
            if (c->oom)
                return;
            if (k > 0) {
                start += k;
                continue;
            }
        }
        size_t j = start;
        for (;;) {
            j += find_special(u + j, len - j);
            if (j >= len || u[j] == '\n' || u[j] == '\r')
                break;
            j++;
        }
        if (j >= len)
            break;
        unsigned char ch = u[j];
        /* the text before the break goes to the line: appended, or replacing it after a \r */
        if (j > start) {
            if (c->cr) {
                c->cur.len = 0;
                c->cr = 0;
            }
            if (put(&c->cur, u + start, j - start) < 0) {
                c->oom = 1;
                return;
            }
        }
        start = j + 1;
        if (ch == '\r') {
            c->cr = 1;
            continue;
        }
        cut_line(c, c->cur.p ? (const unsigned char *)c->cur.p : (const unsigned char *)"", c->cur.len);
        if (c->oom)
            return;
        c->cur.len = 0;
        c->cr = 0;
    }
    if (start < len) {
        if (c->cr) {
            c->cur.len = 0;
            c->cr = 0;
        }
        if (put(&c->cur, u + start, len - start) < 0)
            c->oom = 1;
    }
}

/* writer.counts = (seq, counts[1] + records, counts[2]): the counts after `records` more records that
 * end at sequence number `seq`. */
static int
counts_after(PyObject *writer, long long seq, long long records)
{
    PyObject *counts = PyObject_GetAttrString(writer, "counts");
    if (counts == NULL)
        return -1;
    int rc = -1;
    PyObject *n = NULL, *more = NULL, *total = NULL, *next = NULL;
    if (!PyTuple_Check(counts) || PyTuple_GET_SIZE(counts) != 3) {
        PyErr_SetString(PyExc_TypeError, "feed: writer.counts must be a 3-tuple");
        goto out;
    }
    if ((n = PyLong_FromLongLong(seq)) == NULL || (more = PyLong_FromLongLong(records)) == NULL ||
        (total = PyNumber_Add(PyTuple_GET_ITEM(counts, 1), more)) == NULL ||
        (next = PyTuple_Pack(3, n, total, PyTuple_GET_ITEM(counts, 2))) == NULL)
        goto out;
    rc = PyObject_SetAttrString(writer, "counts", next);
out:
    Py_XDECREF(n);
    Py_XDECREF(more);
    Py_XDECREF(total);
    Py_XDECREF(next);
    Py_DECREF(counts);
    return rc;
}

/* ---- feed(source, pending, cr, pre, crc_pre, seq, mids, tails, limit, writer=None) -------------
 *
 * source: a Spool (its leading stdout text is taken, at most FEED_MOST bytes), or a list of what was
 * written to stdout (str each). pending, cr: the unfinished line and whether a \r asks the next text to
 * replace it (console.py's _Line.text and .cr). Returns None (nothing taken, nothing changed) when the
 * spool does not start with stdout text, an item of the list is not a str UTF-8 can hold, or pending holds
 * lone surrogates; else (blob, records, text_bytes, pending, cr, lines_ended, full): the records (the lines
 * share them) of the lines the text completes, as _Line.feed, checked() and lines() would make them, and
 * the new unfinished line. limit: text bytes the run may still take; the first line past it is not written
 * and full is true. With a writer (its fd, its counts), the records are written to writer.fd here: then
 * blob is None and writer.counts are the counts after them when all was written; else blob is what to give
 * writer.commit, with (written, error): the bytes of it written and the errno of a failed write(2).
 * Returns (blob, records, text_bytes, pending, cr, lines_ended, full, written, error). */

static PyObject *
feed(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *source, *pending, *mids, *tails;
    int cr;
    Py_buffer pre;
    unsigned int crc_pre;
    long long seq, limit;
    PyObject *writer = Py_None;
    if (!PyArg_ParseTuple(args, "OUpy*ILOOL|O:feed", &source, &pending, &cr, &pre, &crc_pre, &seq, &mids, &tails,
                          &limit, &writer))
        return NULL;
    PyObject *result = NULL;
    int fd = -1;
    ssize_t written = -1;
    int error = 0;
    Cut c;
    memset(&c, 0, sizeof c);
    Buf in = {NULL, 0, 0}, taken = {NULL, 0, 0};
    SpoolObject *sp = NULL;
    int own = !scratch_busy;
    if (own) {
        scratch_busy = 1;
        c.out = scratch_out;
        c.cur = scratch_cur;
        in = scratch_in;
        c.out.len = c.cur.len = in.len = 0;
    }
    Parts parts;
    if (parse_parts(&parts, &pre, crc_pre, seq, mids, tails) < 0)
        goto done;
    if (writer != Py_None) {
        PyObject *f = PyObject_GetAttrString(writer, "fd");
        if (f == NULL)
            goto done;
        long v = PyLong_AsLong(f);
        Py_DECREF(f);
        if (v == -1 && PyErr_Occurred())
            goto done;
        if (v < 0 || v > INT_MAX) {
            PyErr_SetString(PyExc_ValueError, "feed: writer.fd is not a descriptor");
            goto done;
        }
        fd = (int)v;
    }
    int is_list = PyList_Check(source);
    if (!is_list && !Py_IS_TYPE(source, &SpoolType)) {
        PyErr_SetString(PyExc_TypeError, "feed: the source must be a Spool or a list");
        goto done;
    }
    Py_ssize_t plen;
    const char *p = PyUnicode_AsUTF8AndSize(pending, &plen);
    if (p == NULL) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *u = NULL;
    size_t len = 0;
    if (is_list) {
        /* Every item a str that UTF-8 can hold, or decline before anything changes; their text one after
         * another. */
        Py_ssize_t n = PyList_GET_SIZE(source);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *s = PyList_GET_ITEM(source, i);
            Py_ssize_t slen;
            const char *t = PyUnicode_CheckExact(s) ? PyUnicode_AsUTF8AndSize(s, &slen) : NULL;
            if (t == NULL) {
                PyErr_Clear();
                result = Py_NewRef(Py_None);
                goto done;
            }
            if (put(&in, t, (size_t)slen) < 0) {
                PyErr_NoMemory();
                goto done;
            }
        }
        u = (const unsigned char *)(in.p ? in.p : "");
        len = in.len;
    } else {
        sp = (SpoolObject *)Py_NewRef(source);
        Py_ssize_t k = spool_take_text(sp, &in, &taken, &u);
        if (k < 0) {
            PyErr_NoMemory();
            goto done;
        }
        if (k == 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        len = (size_t)k;
    }
    if (put(&c.cur, p, (size_t)plen) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    c.cr = cr;
    c.parts = &parts;
    c.limit = limit;
    size_t off = 0;
    /* The work below needs no interpreter: it lets go of it, and the program goes on printing meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    cut_text(&c, u, len);
    /* An unfinished line over 64 KiB: its first pieces are records of their own (as _Line.feed). */
    while (!c.oom && c.cur.len - off > MAX_TEXT_BYTES) {
        size_t k = piece((const unsigned char *)c.cur.p + off, c.cur.len - off);
        if (!c.full) {
            if (c.text_bytes + (long long)k > c.limit) {
                c.full = 1;
            } else {
                if (rec_add(&c.out, &parts, &c.r, (const unsigned char *)c.cur.p + off, k, 0, &c.records, NULL) < 0) {
                    c.oom = 1;
                    break;
                }
                c.text_bytes += (long long)k;
            }
        }
        off += k;
    }
    if (!c.oom && rec_close(&c.out, &parts, &c.r, 0) < 0)
        c.oom = 1;
    /* The records into the segment from here (no copy into a bytes object): one write(2). */
    if (!c.oom && fd >= 0 && c.out.len > 0) {
        written = write(fd, c.out.p, c.out.len);
        error = written < 0 && errno != EINTR ? errno : 0;
    }
    Py_END_ALLOW_THREADS
    if (c.oom) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *blob = NULL;
    if (fd >= 0 && (c.out.len == 0 || (written >= 0 && (size_t)written == c.out.len))) {
        /* All written (or nothing to write): the writer's counts (seq, records, top step) now, with nothing
         * between the write and them that could raise (as tracker/write/_fastline.c). */
        if (c.records > 0 && counts_after(writer, seq + c.records, c.records) < 0)
            goto done;
        blob = Py_NewRef(Py_None);
        written = 0;
    } else {
        /* Not written (no writer given), or not all of it: writer.commit(blob, counts, None, written=...,
         * error=...) writes the rest or settles the error, as for any line. */
        blob = PyBytes_FromStringAndSize(c.out.p ? c.out.p : "", (Py_ssize_t)c.out.len);
        if (written < 0)
            written = 0;
    }
    PyObject *rest = PyUnicode_DecodeUTF8(c.cur.p ? c.cur.p + off : "", (Py_ssize_t)(c.cur.len - off), "strict");
    if (blob != NULL && rest != NULL)
        result = Py_BuildValue("(OLLOiLinn)", blob, c.records, c.text_bytes, rest, c.cr, c.ended, c.full,
                               (Py_ssize_t)written, (Py_ssize_t)error);
    Py_XDECREF(blob);
    Py_XDECREF(rest);
done:
    if (sp != NULL) {
        if (taken.p != NULL)
            spool_give_back(sp, &taken);
        Py_DECREF(sp);
    }
    if (own) {
        scratch_return(&scratch_out, &c.out);
        scratch_return(&scratch_cur, &c.cur);
        scratch_return(&scratch_in, &in);
        scratch_busy = 0;
    } else {
        free(c.out.p);
        free(c.cur.p);
        free(in.p);
    }
    PyBuffer_Release(&pre);
    return result;
}

/* ---- Tee: the wrapped write -------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *write;   /* the stream's own write */
    PyObject *spool;   /* where the text goes (a Spool) */
    PyObject *kick;    /* called (no arguments) each time the spool's size passes a multiple of `every`, or NULL */
    size_t every;      /* a power of two, in bytes */
    int stream;        /* 0 stdout, 1 stderr */
    int on;            /* 0: a pass-through */
    vectorcallfunc vectorcall;
} TeeObject;

static PyObject *
tee_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    TeeObject *t = (TeeObject *)self;
    PyObject *r = PyObject_Vectorcall(t->write, args, nargsf, kwnames);
    if (r == NULL || !t->on || PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL)
        return r;
    SpoolObject *sp = (SpoolObject *)t->spool;
    size_t before = sp->size;
    if (spool_put(sp, t->stream, args[0]) < 0)
        return r;  /* no memory: this text is not kept; the program goes on */
    if (t->kick != NULL && ((before ^ sp->size) & ~(t->every - 1)) != 0) {
        /* much is waiting: the flusher takes it now, so that what waits stays small */
        PyObject *k = PyObject_CallNoArgs(t->kick);
        if (k == NULL)
            PyErr_Clear();
        Py_XDECREF(k);
    }
    return r;
}

static PyObject *
tee_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *write, *spool, *kick = Py_None;
    int stderr_ = 0;
    Py_ssize_t every = (Py_ssize_t)1 << 20;
    static char *names[] = {"write", "spool", "stderr", "kick", "every", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!|pOn:Tee", names, &write, &SpoolType, &spool, &stderr_, &kick,
                                     &every))
        return NULL;
    if (every < 1 || (every & (every - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError, "Tee: every must be a power of two");
        return NULL;
    }
    TeeObject *t = (TeeObject *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->write = Py_NewRef(write);
    t->spool = Py_NewRef(spool);
    t->kick = kick == Py_None ? NULL : Py_NewRef(kick);
    t->every = (size_t)every;
    t->stream = stderr_ ? 1 : 0;
    t->on = 1;
    t->vectorcall = tee_vectorcall;
    return (PyObject *)t;
}

static const Py_ssize_t tee_fields[] = {offsetof(TeeObject, write), offsetof(TeeObject, spool),
                                       offsetof(TeeObject, kick), -1};

GC_FIELD_FUNCTIONS(tee, tee_fields)

static PyObject *
tee_get_write(TeeObject *t, void *Py_UNUSED(closure))
{
    return Py_NewRef(t->write ? t->write : Py_None);
}

static PyObject *
tee_get_on(TeeObject *t, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(t->on);
}

static int
tee_set_on(TeeObject *t, PyObject *value, void *Py_UNUSED(closure))
{
    int v = value == NULL ? 0 : PyObject_IsTrue(value);
    if (v < 0)
        return -1;
    t->on = v;
    return 0;
}

static PyGetSetDef tee_getset[] = {
    {"write", (getter)tee_get_write, NULL, "the stream's own write", NULL},
    {"on", (getter)tee_get_on, (setter)tee_set_on, "whether the text is kept (else a pass-through)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TeeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracker.capture._console.Tee",
    .tp_basicsize = sizeof(TeeObject),
    .tp_dealloc = gc_dealloc,
    .tp_vectorcall_offset = offsetof(TeeObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Tee(write, spool, stderr=False, kick=None, every=1 MiB): calls write, returns its result, then keeps "
              "the text in spool; calls kick() whenever the spool's size passes a multiple of every bytes.",
    .tp_traverse = tee_traverse,
    .tp_clear = tee_clear,
    .tp_getset = tee_getset,
    .tp_new = tee_new,
};

static PyMethodDef methods[] = {
    {"lines", lines, METH_VARARGS,
     "lines(pre, crc_of_pre, last_seq, texts, mids, tails, kinds) -> bytes: store lines of the texts, consecutive "
     "texts of a stream joined by \\n in one record up to 64 KiB, a partial text last in its record "
     "(kinds: one byte per text, bit 0 stderr, bit 1 partial)."},
    {"feed", feed, METH_VARARGS,
     "feed(source, pending, cr, pre, crc_of_pre, last_seq, mids, tails, limit, writer=None) -> (blob, records, "
     "text_bytes, pending, cr, lines_ended, full, written, error), or None when declined (source: a Spool or a "
     "list of str; with a writer the records are written to its fd and blob is None when all was)."},
    {"crc32", crc32_py, METH_VARARGS, "crc32(data, start=0) -> zlib.crc32(data, start)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tracker.capture._console",
    "The console recorder's hot paths in C (the tee, lines as store lines); tracker works without it.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__console(void)
{
    crc_setup();
    escape_init();
    if (PyType_Ready(&TeeType) < 0 || PyType_Ready(&SpoolType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Tee", (PyObject *)&TeeType) < 0 ||
        PyModule_AddObjectRef(m, "Spool", (PyObject *)&SpoolType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
