/*
 * The console recorder's hot paths in C (tracker/capture/console.py holds the same in Python, used when
 * this module was not built: no C compiler, or TRACKER_PURE_PYTHON=1).
 *
 * Tee is the wrapped write of sys.stdout / sys.stderr: it calls the stream's own write with exactly the
 * arguments given, returns its result, then appends the text to a list (stderr's as a 1-tuple), so a
 * print() pays one C call more and nothing else; when the list has grown by `every` items it wakes the
 * flusher, so that what waits stays small. Its `on` turns it into a pass-through.
 *
 * lines() and feed() put console lines between the constant parts of a `console` record's line (made by
 * the recorder from the writer's record template), escape the text as orjson escapes JSON strings (the
 * encoder of every other line), number the records after the writer's last sequence number and append each
 * record's CRC-32 (zlib's), so that one write(2) puts a whole batch into the segment. Consecutive lines of
 * one stream share a record, joined by \n inside its JSON string, up to MAX_TEXT_BYTES of text in all
 * (lines.py's lines_py makes the same bytes); a partial line is the last of its record. feed() also cuts the
 * written texts into lines itself (the common case: stdout only, text UTF-8 can hold), collapsing \r
 * rewrites and splitting lines over 64 KiB exactly as console.py's _Line and checked() do, without making
 * a str per line; it declines (returns None, having changed nothing) for anything else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Whether any of the 8 bytes of x needs escaping: below 0x20, '"' or '\\' (bit tricks, no branch per byte). */
static inline int
word_needs_escape(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t below = (x - ones * 0x20) & ~x & highs;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t quote = (q - ones) & ~q & highs, backslash = (b - ones) & ~b & highs;
    return (below | quote | backslash) != 0;
}

/* Writes the escaped form of s[0:n] at out (room for 6 * n bytes); returns the bytes written. */
static size_t
escape(char *out, const unsigned char *s, size_t n)
{
    char *o = out;
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run + 8 <= n) {
            uint64_t x;
            memcpy(&x, s + run, 8);
            if (word_needs_escape(x))
                break;
            run += 8;
        }
        while (run < n && escape_of[s[run]] == 0)
            run++;
        memcpy(o, s + i, run - i);
        o += run - i;
        if (run == n)
            break;
        unsigned char c = s[run];
        char e = escape_of[c];
        if (e == 'u') {
            o[0] = '\\'; o[1] = 'u'; o[2] = '0'; o[3] = '0';
            o[4] = hexdigits[c >> 4]; o[5] = hexdigits[c & 15];
            o += 6;
        } else {
            o[0] = '\\'; o[1] = e;
            o += 2;
        }
        i = run + 1;
    }
    return (size_t)(o - out);
}

/* The first \n or \r in s[0:n], or n. */
static inline size_t
next_break(const unsigned char *s, size_t n)
{
    const unsigned char *nl = memchr(s, '\n', n);
    size_t end = nl ? (size_t)(nl - s) : n;
    const unsigned char *cr = end ? memchr(s, '\r', end) : NULL;
    return cr ? (size_t)(cr - s) : end;
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
 * closes it and opens the next one (another stream, or no room left); *opened counts the records opened. */
static int
rec_add(Buf *out, Parts *parts, Rec *r, const unsigned char *text, size_t n, int stream, long long *opened)
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
    o += escape(o, text, n);
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
        if (rec_add(&out, &parts, &r, (const unsigned char *)u, (size_t)len, k[i] & 1, &opened) < 0 ||
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

/* feed()'s buffers, kept from one call to the next so that their pages stay mapped (a fresh megabyte a
 * call costs page faults and zeroed pages as much as the work itself); taken and given back with the
 * interpreter held, so a second caller meanwhile (a forked child's writing thread) gets buffers of its own.
 * Past SCRATCH_KEEP (a batch of very long lines) they are freed rather than kept. */
static Buf scratch_out = {NULL, 0, 0}, scratch_cur = {NULL, 0, 0};
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

/* ---- feed(items, pending, cr, pre, crc_pre, seq, mids, tails, limit) ----------------------------
 *
 * items: what was written to stdout (str each). pending, cr: the unfinished line and whether a \r asks
 * the next text to replace it (console.py's _Line.text and .cr). Returns None (nothing changed) when an
 * item is not a str or holds text UTF-8 cannot (lone surrogates); else (blob, records, text_bytes,
 * pending, cr, lines_ended, full): the records (the lines share them) of the lines the items complete,
 * as _Line.feed, checked() and lines() would make them, and the new unfinished line. limit: text bytes
 * the run may still take; the first line past it is not written and full is true. */

static PyObject *
feed(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *items, *pending, *mids, *tails;
    int cr;
    Py_buffer pre;
    unsigned int crc_pre;
    long long seq, limit;
    if (!PyArg_ParseTuple(args, "O!Upy*ILOOL:feed", &PyList_Type, &items, &pending, &cr, &pre, &crc_pre, &seq,
                          &mids, &tails, &limit))
        return NULL;
    PyObject *result = NULL;
    Buf out = {NULL, 0, 0}, cur = {NULL, 0, 0};
    int own = !scratch_busy;
    if (own) {
        scratch_busy = 1;
        out = scratch_out;
        cur = scratch_cur;
        out.len = cur.len = 0;
    }
    struct { const unsigned char *p; size_t n; } *texts = NULL;
    Parts parts;
    if (parse_parts(&parts, &pre, crc_pre, seq, mids, tails) < 0)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(items);
    /* Every item a str that UTF-8 can hold, or decline before anything changes. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(items, i);
        if (!PyUnicode_CheckExact(s)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (!PyUnicode_IS_ASCII(s) && PyUnicode_AsUTF8AndSize(s, NULL) == NULL) {
            PyErr_Clear();
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    Py_ssize_t plen;
    const char *p = PyUnicode_AsUTF8AndSize(pending, &plen);
    if (p == NULL) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (put(&cur, p, (size_t)plen) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    /* Each item's UTF-8 (str objects are immutable and the list holds them): the work below needs no
     * interpreter, so it lets go of it and the program goes on printing meanwhile. */
    texts = malloc(sizeof(*texts) * (size_t)(n ? n : 1));
    if (texts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len;
        texts[i].p = (const unsigned char *)PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(items, i), &len);
        texts[i].n = (size_t)len;
    }
    long long records = 0, text_bytes = 0, ended = 0;
    int full = 0, oom = 0;
    Rec r = {0, 0, 0, 0};
    size_t off = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !oom; i++) {
        const unsigned char *u = texts[i].p;
        size_t len = texts[i].n;
        size_t start = 0;
        for (;;) {
            size_t j = start + next_break(u + start, len - start);
            if (j >= len)
                break;
            unsigned char c = u[j];
            /* the text before the break goes to the line: appended, or replacing it after a \r */
            if (j > start) {
                if (cr) {
                    cur.len = 0;
                    cr = 0;
                }
                if (put(&cur, u + start, j - start) < 0) {
                    oom = 1;
                    break;
                }
            }
            start = j + 1;
            if (c == '\r') {
                cr = 1;
                continue;
            }
            /* a line ends: its records (a line over 64 KiB in pieces) */
            ended++;
            size_t at = 0;
            do {
                size_t k = piece((const unsigned char *)cur.p + at, cur.len - at);
                if (!full) {
                    if (text_bytes + (long long)k > limit) {
                        full = 1;
                    } else {
                        if (rec_add(&out, &parts, &r, (const unsigned char *)cur.p + at, k, 0, &records) < 0) {
                            oom = 1;
                            break;
                        }
                        text_bytes += (long long)k;
                    }
                }
                at += k;
            } while (at < cur.len);
            cur.len = 0;
            cr = 0;
            if (oom)
                break;
        }
        if (!oom && len > start) {
            if (cr) {
                cur.len = 0;
                cr = 0;
            }
            if (put(&cur, u + start, len - start) < 0)
                oom = 1;
        }
    }
    /* An unfinished line over 64 KiB: its first pieces are records of their own (as _Line.feed). */
    while (!oom && cur.len - off > MAX_TEXT_BYTES) {
        size_t k = piece((const unsigned char *)cur.p + off, cur.len - off);
        if (!full) {
            if (text_bytes + (long long)k > limit) {
                full = 1;
            } else {
                if (rec_add(&out, &parts, &r, (const unsigned char *)cur.p + off, k, 0, &records) < 0) {
                    oom = 1;
                    break;
                }
                text_bytes += (long long)k;
            }
        }
        off += k;
    }
    if (!oom && rec_close(&out, &parts, &r, 0) < 0)
        oom = 1;
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *blob = PyBytes_FromStringAndSize(out.p ? out.p : "", (Py_ssize_t)out.len);
    PyObject *rest = PyUnicode_DecodeUTF8(cur.p ? cur.p + off : "", (Py_ssize_t)(cur.len - off), "strict");
    if (blob != NULL && rest != NULL)
        result = Py_BuildValue("(OLLOiLi)", blob, records, text_bytes, rest, cr, ended, full);
    Py_XDECREF(blob);
    Py_XDECREF(rest);
done:
    free(texts);
    if (own) {
        scratch_return(&scratch_out, &out);
        scratch_return(&scratch_cur, &cur);
        scratch_busy = 0;
    } else {
        free(out.p);
        free(cur.p);
    }
    PyBuffer_Release(&pre);
    return result;
}

/* ---- Tee: the wrapped write -------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *write;   /* the stream's own write */
    PyObject *list;    /* where the text goes */
    PyObject *kick;    /* called (no arguments) each time the list holds a multiple of `every` items, or NULL */
    Py_ssize_t every;  /* a power of two */
    int wrap;          /* 1: append a 1-tuple (stderr) */
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
    PyObject *s = args[0];
    if (t->wrap) {
        PyObject *tup = PyTuple_Pack(1, s);
        if (tup == NULL || PyList_Append(t->list, tup) < 0)
            PyErr_Clear();
        Py_XDECREF(tup);
    } else if (PyList_Append(t->list, s) < 0) {
        PyErr_Clear();
    }
    if (t->kick != NULL && (PyList_GET_SIZE(t->list) & (t->every - 1)) == 0) {
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
    PyObject *write, *list, *kick = Py_None;
    int wrap = 0;
    Py_ssize_t every = 4096;
    static char *names[] = {"write", "list", "wrap", "kick", "every", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!|pOn:Tee", names, &write, &PyList_Type, &list, &wrap, &kick,
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
    t->list = Py_NewRef(list);
    t->kick = kick == Py_None ? NULL : Py_NewRef(kick);
    t->every = every;
    t->wrap = wrap;
    t->on = 1;
    t->vectorcall = tee_vectorcall;
    return (PyObject *)t;
}

static const Py_ssize_t tee_fields[] = {offsetof(TeeObject, write), offsetof(TeeObject, list),
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
    .tp_doc = "Tee(write, list, wrap=False, kick=None, every=4096): calls write, returns its result, then appends "
              "the text to list (a 1-tuple with wrap); calls kick() whenever the list holds a multiple of every.",
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
     "feed(items, pending, cr, pre, crc_of_pre, last_seq, mids, tails, limit) -> (blob, records, text_bytes, "
     "pending, cr, lines_ended, full), or None when declined."},
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
    if (PyType_Ready(&TeeType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Tee", (PyObject *)&TeeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
