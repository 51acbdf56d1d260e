/*
 * The logging fast paths in C: Run.log and Run.log_record's common cases, and Route.append's.
 *
 * append does what the Python body of tracker.write.route.Route.append does for a record whose data
 * encodes, and writes the same bytes: under the writer's lock it takes the step and sequence number,
 * encodes the time and the data with one orjson.dumps (the same encoder and options), puts them between
 * the route's constant parts of the line (made by route.line_parts from the same event template the
 * Python body encodes), appends the line's CRC-32, writes the line with one write(2) and updates the
 * writer's counts, its latest metrics and the run's automatic step. With CHECK_METRICS it first checks
 * run.log's values (a plain dict of floats, ints and bools under str names that are not reserved).
 *
 * Run.log and Run.log_record are method descriptors of this module (method()): run.log(values[, step])
 * goes straight to append; run.log_record(schema, **fields) (or a dict) of a flat schema is checked
 * here as CompiledSchema._flat_validate checks it (exact types, int range, UTF-8, the field validators,
 * tracker.validators' bounds compared without a call) and then appended.
 *
 * Each declines (returns None, having changed nothing) whenever the Python code has something to do
 * that this does not: values it does not vouch for, data orjson refuses, a writer that is not direct
 * (fsync, closed, a torn fragment to end), a record a validator refuses; the Python method then runs
 * and names the problem. A write that fails or comes up short is handed to SegmentWriter.commit, which
 * settles it exactly as the Python body does. Building without a C compiler leaves tracker on its
 * Python code alone.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE 1 /* memmem */
#include <Python.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* What tracker/write/fast.py expects: a module built from other sources is not used. */
#define INTERFACE 2

#define CHECK_METRICS 1
#define STRICT 2

#include "../core/_crc32.h"
#include "../core/_decimal.h"
#include "../core/_gcfields.h"

/* ---- Lock: threading.Lock's behaviour, with a C-level acquire for append ------------------------- */

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    int held;
} LockObject;

static PyTypeObject LockType;

/* 1: taken; 0: not within the timeout (or not blocking); -1: a signal handler raised. */
static int
take(LockObject *self, int blocking, PY_TIMEOUT_T timeout_us)
{
    if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        self->held = 1;
        return 1;
    }
    if (!blocking)
        return 0;
    for (;;) {
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->lock, timeout_us, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED) {
            self->held = 1;
            return 1;
        }
        if (r == PY_LOCK_FAILURE)
            return 0;
        /* Interrupted by a signal: run its handlers, which may raise; then wait again. */
        if (Py_MakePendingCalls() < 0)
            return -1;
    }
}

static void
give(LockObject *self)
{
    self->held = 0;
    PyThread_release_lock(self->lock);
}

static PyObject *
Lock_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    LockObject *self = (LockObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void
Lock_dealloc(LockObject *self)
{
    if (self->lock != NULL) {
        if (self->held)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Lock_acquire(LockObject *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd:acquire", names, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    PY_TIMEOUT_T us = timeout == -1 ? -1 : (PY_TIMEOUT_T)(timeout * 1e6);
    int r = take(self, blocking, us);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

static PyObject *
Lock_release(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->held) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    give(self);
    Py_RETURN_NONE;
}

static PyObject *
Lock_exit(LockObject *self, PyObject *Py_UNUSED(args))
{
    return Lock_release(self, NULL);
}

static PyObject *
Lock_enter(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    if (take(self, 1, -1) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
Lock_locked(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->held);
}

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool, as threading.Lock's."},
    {"release", (PyCFunction)Lock_release, METH_NOARGS, "Release the lock (RuntimeError when not held)."},
    {"locked", (PyCFunction)Lock_locked, METH_NOARGS, "Whether the lock is held."},
    {"__enter__", (PyCFunction)Lock_enter, METH_NOARGS, "Acquire the lock."},
    {"__exit__", (PyCFunction)Lock_exit, METH_VARARGS, "Release the lock."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracker.write._fastline.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_dealloc = (destructor)Lock_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A lock that behaves as threading.Lock and that append takes without a method call.",
    .tp_methods = Lock_methods,
    .tp_new = Lock_new,
};

/* ---- what route.py hands over once (configure) --------------------------------------------------- */

static PyObject *g_dumps;            /* orjson.dumps */
static PyObject *g_option_strict;    /* tracker.core.format.STRICT */
static PyObject *g_option_plain;     /* 0 */
static PyObject *g_reserved;         /* names run.log's fast path leaves to the full check */
static PyObject *g_encode_nonfinite; /* tracker.core.format.encode_nonfinite */
static PyObject *g_time;             /* time.time */
static PyObject *g_validators_disabled; /* attrs.validators.get_disabled */
static PyObject *g_no_instance;      /* schema._NO_INSTANCE: what a validator gets for the instance */
static PyObject *g_needs_instance;   /* schema._NeedsInstance: raised when a validator reads it */
static PyObject *g_kwnames;          /* ("option",) */
static PyObject *g_one;              /* 1 */

static PyObject *s_metrics, *s_wb, *s_has_pending, *s_routes, *s_steps, *s_fast, *s_last, *s_lock, *s_direct, *s_fd, *s_counts, *s_acquire, *s_release,
    *s_recover, *s_commit;

static int
intern_all(void)
{
#define INTERN(var, text) if (!(var = PyUnicode_InternFromString(text))) return -1
    INTERN(s_metrics, "metrics");
    INTERN(s_wb, "_wb");
    INTERN(s_has_pending, "has_pending");
    INTERN(s_routes, "_routes");
    INTERN(s_steps, "_steps");
    INTERN(s_fast, "fast");
    INTERN(s_last, "last");
    INTERN(s_lock, "lock");
    INTERN(s_direct, "direct");
    INTERN(s_fd, "fd");
    INTERN(s_counts, "counts");
    INTERN(s_acquire, "acquire");
    INTERN(s_release, "release");
    INTERN(s_recover, "recover");
    INTERN(s_commit, "commit");
#undef INTERN
    /* Interned: orjson matches its keyword names by identity. */
    PyObject *option = PyUnicode_InternFromString("option");
    g_kwnames = option ? PyTuple_Pack(1, option) : NULL;
    Py_XDECREF(option);
    return g_kwnames ? 0 : -1;
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *dumps, *strict, *reserved, *encode, *clock, *disabled, *no_instance, *needs_instance;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:configure", &dumps, &strict, &reserved, &encode, &clock, &disabled,
                          &no_instance, &needs_instance))
        return NULL;
    if (!PyAnySet_Check(reserved)) {
        PyErr_SetString(PyExc_TypeError, "configure: the reserved names must be a set");
        return NULL;
    }
    Py_XSETREF(g_dumps, Py_NewRef(dumps));
    Py_XSETREF(g_option_strict, Py_NewRef(strict));
    Py_XSETREF(g_reserved, Py_NewRef(reserved));
    Py_XSETREF(g_encode_nonfinite, Py_NewRef(encode));
    Py_XSETREF(g_time, Py_NewRef(clock));
    Py_XSETREF(g_validators_disabled, Py_NewRef(disabled));
    Py_XSETREF(g_no_instance, Py_NewRef(no_instance));
    Py_XSETREF(g_needs_instance, Py_NewRef(needs_instance));
    Py_RETURN_NONE;
}

/* ---- the fast path ------------------------------------------------------------------------------- */

/* 1: a plain dict of floats, ints and bools under str names none of which is reserved; 0: not; -1: error. */
static int
plain_metrics(PyObject *data)
{
    if (!PyDict_CheckExact(data))
        return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(data, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))
            return 0;
        if (!(PyFloat_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value)))
            return 0;
        int hit = PySet_Contains(g_reserved, key);
        if (hit != 0)
            return hit < 0 ? -1 : 0;
    }
    return 1;
}

static PyObject *
encode(PyObject *obj, PyObject *option)
{
    PyObject *argv[2] = {obj, option};
    return PyObject_Vectorcall(g_dumps, argv, 1, g_kwnames);
}

static PyObject *
now(void)
{
    /* The clock route.py uses (time.time as imported): one clock for every line of a writer. */
    return PyObject_CallNoArgs(g_time);
}

/* Decimal digits of v into out (at least 21 bytes); returns their count. */
static int
digits(char *out, long long v)
{
    int neg = v < 0;
    if (neg)
        out[0] = '-';
    return neg + (int)decimal_digits(out + neg, neg ? 0ULL - (unsigned long long)v : (unsigned long long)v);
}

/*
 * The line: prefix, step, ,"time":, time, ,"w":"<writer>","seq":, seq, ,"data":, data, then
 * ,"crc":"xxxxxxxx"}\n with the CRC-32 of all before it (continued from the prefix's).
 * parts: (prefix, time mark, writer and seq mark, data mark), as route.line_parts made them.
 */
static PyObject *
build_line(PyObject *parts, uint32_t prefix_crc, long long step, const char *t, Py_ssize_t tn, long long seq,
           const char *d, Py_ssize_t dn)
{
    static const char hex[] = "0123456789abcdef";
    char sd[24], qd[24];
    int sn = digits(sd, step), qn = digits(qd, seq);
    PyObject *p0 = PyTuple_GET_ITEM(parts, 0), *p1 = PyTuple_GET_ITEM(parts, 1), *p2 = PyTuple_GET_ITEM(parts, 2),
             *p3 = PyTuple_GET_ITEM(parts, 3);
    Py_ssize_t head = PyBytes_GET_SIZE(p0) + sn + PyBytes_GET_SIZE(p1) + tn + PyBytes_GET_SIZE(p2) + qn
        + PyBytes_GET_SIZE(p3) + dn;
    PyObject *line = PyBytes_FromStringAndSize(NULL, head + 19);
    if (line == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(line), *at = out;
#define PUT(src, len) do { memcpy(at, (src), (size_t)(len)); at += (len); } while (0)
    PUT(PyBytes_AS_STRING(p0), PyBytes_GET_SIZE(p0));
    PUT(sd, sn);
    PUT(PyBytes_AS_STRING(p1), PyBytes_GET_SIZE(p1));
    PUT(t, tn);
    PUT(PyBytes_AS_STRING(p2), PyBytes_GET_SIZE(p2));
    PUT(qd, qn);
    PUT(PyBytes_AS_STRING(p3), PyBytes_GET_SIZE(p3));
    PUT(d, dn);
#undef PUT
    Py_ssize_t skip = PyBytes_GET_SIZE(p0);
    uint32_t crc = crc32_of((const unsigned char *)out + skip, (size_t)(head - skip), prefix_crc);
    memcpy(at, ",\"crc\":\"", 8);
    for (int i = 0; i < 8; i++)
        at[8 + i] = hex[(crc >> (28 - 4 * i)) & 0xf];
    memcpy(at + 16, "\"}\n", 3);
    return line;
}

static void
release(PyObject *lock)
{
    if (Py_IS_TYPE(lock, &LockType)) {
        give((LockObject *)lock);
        return;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *r = PyObject_CallMethodNoArgs(lock, s_release);
    if (r == NULL)
        PyErr_WriteUnraisable(lock);
    Py_XDECREF(r);
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/*
 * One record by a route, its fast tuple given: fast is the route's ``fast`` (writer, last, the constant
 * parts of its lines, the first part's CRC, and the schema's flat checks, which only log_record reads);
 * steps: the run's [next automatic step]; step: an int or None (the next automatic one, taken under the
 * lock); time: seconds since the epoch, or None for now; flags: CHECK_METRICS (check run.log's values
 * first), STRICT (encode with STRICT). The record's step, or None (declined, nothing changed), or NULL.
 */
static PyObject *
write_record(PyObject *fast, PyObject *steps, PyObject *step, PyObject *time, PyObject *data, long flags)
{
    if (g_dumps == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tracker.write._fastline: configure() was not called");
        return NULL;
    }
    if (!PyList_CheckExact(steps) || PyList_GET_SIZE(steps) < 1)
        Py_RETURN_NONE;
    if (flags & CHECK_METRICS) {
        int ok = plain_metrics(data);
        if (ok <= 0)
            return ok < 0 ? NULL : Py_NewRef(Py_None);
    }
    PyObject *writer = NULL, *is_last = NULL, *lock = NULL, *counts = NULL, *fd_obj = NULL,
             *direct = NULL, *encoded = NULL, *line = NULL, *new_counts = NULL, *result = NULL, *t = NULL,
             *seq = NULL, *records = NULL, *top = NULL, *r = NULL, *parts = NULL;
    int locked = 0;

    if (time == Py_None) {
        if (!(t = now()))
            goto done;
        time = t;
    }
    if (!PyTuple_CheckExact(fast) || PyTuple_GET_SIZE(fast) != 5 || !PyTuple_CheckExact(PyTuple_GET_ITEM(fast, 2))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(fast, 2)) != 4 || !PyLong_CheckExact(PyTuple_GET_ITEM(fast, 3))) {
        result = Py_NewRef(Py_None);  /* no parts: the Python body */
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(PyTuple_GET_ITEM(fast, 2), i))) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    writer = Py_NewRef(PyTuple_GET_ITEM(fast, 0));
    is_last = Py_NewRef(PyTuple_GET_ITEM(fast, 1));
    parts = Py_NewRef(PyTuple_GET_ITEM(fast, 2));
    uint32_t prefix_crc = (uint32_t)PyLong_AsUnsignedLongMask(PyTuple_GET_ITEM(fast, 3));
    if (!(lock = PyObject_GetAttr(writer, s_lock)))
        goto done;
    if (Py_IS_TYPE(lock, &LockType)) {
        if (take((LockObject *)lock, 1, -1) < 0)
            goto done;
    } else {
        if (!(r = PyObject_CallMethodNoArgs(lock, s_acquire)))
            goto done;
        Py_CLEAR(r);
    }
    locked = 1;
    if (!(direct = PyObject_GetAttr(writer, s_direct)))
        goto done;
    if (direct != Py_True) {
        result = Py_NewRef(Py_None);  /* fsync, closed or torn: the Python body's put() */
        goto done;
    }
    if (!(counts = PyObject_GetAttr(writer, s_counts)) || !(fd_obj = PyObject_GetAttr(writer, s_fd)))
        goto done;
    if (!PyTuple_CheckExact(counts) || PyTuple_GET_SIZE(counts) != 3) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    int fd = (int)PyLong_AsLong(fd_obj);
    if (fd == -1 && PyErr_Occurred())
        goto done;
    if (step == Py_None)
        step = PyList_GET_ITEM(steps, 0);
    if (!PyLong_CheckExact(step)) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(step);
    seq = PyNumber_Add(PyTuple_GET_ITEM(counts, 0), g_one);
    if (seq == NULL)
        goto done_step;
    long long step_value = PyLong_AsLongLong(step), seq_value = PyLong_AsLongLong(seq);
    if ((step_value == -1 || seq_value == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
        goto done_step;
    }
    /* The time and the data in one orjson call: [time,{...}] */
    PyObject *option = (flags & STRICT) ? g_option_strict : g_option_plain;
    const char *tb, *d;
    Py_ssize_t tn, dn;
    for (int attempt = 0;; attempt++) {
        PyObject *pair = attempt == 0 ? PyTuple_Pack(2, time, data) : NULL;
        if (attempt == 1) {
            /* orjson writes NaN and infinities as null, and a record holds no other null where a
             * float goes: only such records are encoded again, as the Python body does. */
            PyObject *safe = PyObject_CallOneArg(g_encode_nonfinite, data);
            if (safe != NULL)
                pair = PyTuple_Pack(2, time, safe);
            Py_XDECREF(safe);
        }
        Py_CLEAR(encoded);
        if (pair != NULL)
            encoded = encode(pair, option);
        Py_XDECREF(pair);
        if (encoded == NULL) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();  /* the Python path names the problem */
                result = Py_NewRef(Py_None);
            }
            goto done_step;
        }
        const char *e = PyBytes_AS_STRING(encoded);
        Py_ssize_t en = PyBytes_GET_SIZE(encoded);
        const char *comma = en > 2 ? memchr(e, ',', (size_t)en) : NULL;
        if (comma == NULL || e[0] != '[' || e[en - 1] != ']') {
            result = Py_NewRef(Py_None);
            goto done_step;
        }
        tb = e + 1;
        tn = comma - tb;
        d = comma + 1;
        dn = e + en - 1 - d;
        if (attempt == 1 || memmem(d, (size_t)dn, "null", 4) == NULL)
            break;
    }
    if (!(line = build_line(parts, prefix_crc, step_value, tb, tn, seq_value, d, dn)))
        goto done_step;
    records = PyNumber_Add(PyTuple_GET_ITEM(counts, 1), g_one);
    if (records == NULL)
        goto done_step;
    int above = PyObject_RichCompareBool(step, PyTuple_GET_ITEM(counts, 2), Py_GT);
    if (above < 0)
        goto done_step;
    top = above ? Py_NewRef(step) : Py_NewRef(PyTuple_GET_ITEM(counts, 2));
    if (!(new_counts = PyTuple_Pack(3, seq, records, top)))
        goto done_step;
    int last = PyObject_IsTrue(is_last);
    if (last < 0)
        goto done_step;

    const char *buf = PyBytes_AS_STRING(line);
    Py_ssize_t size = PyBytes_GET_SIZE(line), written;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        written = write(fd, buf, (size_t)size);
        Py_END_ALLOW_THREADS
        if (written >= 0 || errno != EINTR)
            break;
        if (PyErr_CheckSignals() < 0)
            goto done_step;  /* a signal handler raised before anything was written */
    }
    if (written != size) {
        /* An error or a short write: writer.commit(line, counts, last, steps, step, written, error) writes
         * the rest or settles the error as for any line (put_rest, recover). */
        PyObject *err = PyLong_FromLong(written < 0 ? errno : 0);
        PyObject *got = PyLong_FromSsize_t(written < 0 ? 0 : written);
        if (err && got) {
            PyObject *cargs[8] = {writer, line, new_counts, last ? data : Py_None, steps, step, got, err};
            PyObject *rv = PyObject_VectorcallMethod(s_commit, cargs, 8, NULL);
            if (rv != NULL) {
                Py_DECREF(rv);
                result = Py_NewRef(step);
            }
        }
        Py_XDECREF(err);
        Py_XDECREF(got);
        goto done_step;
    }
    /* The line is in the file: the counts, the latest metrics, the automatic step. */
    if (PyObject_SetAttr(writer, s_counts, new_counts) < 0)
        goto recover;
    if (last) {
        PyObject *latest = PyObject_GetAttr(writer, s_last);
        int bad = latest == NULL || PyDict_Update(latest, data) < 0;
        Py_XDECREF(latest);
        if (bad)
            goto recover;
    }
    int ahead = PyObject_RichCompareBool(step, PyList_GET_ITEM(steps, 0), Py_GE);
    if (ahead < 0)
        goto recover;
    if (ahead) {
        PyObject *next = PyNumber_Add(step, g_one);
        if (next == NULL)
            goto recover;
        PyList_SetItem(steps, 0, next);  /* steals next */
    }
    result = Py_NewRef(step);
    goto done_step;

recover: {
        /* Something failed after the line was written: the writer settles the counts, as in Python. */
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyErr_NormalizeException(&exc_type, &exc_value, &exc_tb);
        PyObject *rv = PyObject_CallMethodObjArgs(writer, s_recover, exc_value ? exc_value : Py_None, line,
                                                  new_counts, last ? data : Py_None, steps, step, NULL);
        if (rv == NULL) {
            Py_XDECREF(exc_type);
            Py_XDECREF(exc_value);
            Py_XDECREF(exc_tb);
        } else {
            Py_DECREF(rv);
            PyErr_Restore(exc_type, exc_value, exc_tb);
        }
    }
done_step:
    Py_DECREF(step);
done:
    if (locked)
        release(lock);
    Py_XDECREF(t);
    Py_XDECREF(writer);
    Py_XDECREF(is_last);
    Py_XDECREF(parts);
    Py_XDECREF(lock);
    Py_XDECREF(direct);
    Py_XDECREF(counts);
    Py_XDECREF(fd_obj);
    Py_XDECREF(encoded);
    Py_XDECREF(line);
    Py_XDECREF(new_counts);
    Py_XDECREF(seq);
    Py_XDECREF(records);
    Py_XDECREF(top);
    Py_XDECREF(r);
    return result;
}

/*
 * append(route, steps, step, time, data, flags) -> the record's step, or None (declined, nothing changed):
 * write_record with the route's ``fast`` (Route.append's common case).
 */
static PyObject *
append(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "append takes 6 arguments");
        return NULL;
    }
    long flags = PyLong_AsLong(args[5]);
    if (flags == -1 && PyErr_Occurred())
        return NULL;
    PyObject *fast = PyObject_GetAttr(args[0], s_fast);
    if (fast == NULL)
        return NULL;
    PyObject *result = write_record(fast, args[1], args[2], args[3], args[4], flags);
    Py_DECREF(fast);
    return result;
}

/* ---- log_record's fast path: a flat schema's checks, then append ---------------------------------- */

#define MAX_INT 9007199254740992LL /* 2**53: tracker.core.values.MAX_INT */

/*
 * A bound of tracker.validators (at_least, at_most, greater_than, in_range) without calling it: its
 * check.bounds, (low comparison, low, high comparison, high, nan_ok). 1: the value is within; 0: it is
 * not (or the comparison failed); -1: not such a bound (the validator is called).
 */
static int
bounds_hold(PyObject *bounds, PyObject *value)
{
    if (!PyTuple_CheckExact(bounds) || PyTuple_GET_SIZE(bounds) != 5)
        return -1;
    if (PyTuple_GET_ITEM(bounds, 4) == Py_True && PyFloat_CheckExact(value)
        && isnan(PyFloat_AS_DOUBLE(value)))
        return 1;
    for (int side = 0; side < 4; side += 2) {
        PyObject *op = PyTuple_GET_ITEM(bounds, side), *limit = PyTuple_GET_ITEM(bounds, side + 1);
        if (op == Py_None)
            continue;
        long code = PyLong_AsLong(op);
        if (code != Py_LE && code != Py_GT && code != Py_GE) {
            PyErr_Clear();
            return -1;
        }
        int ok = PyObject_RichCompareBool(value, limit, (int)code);
        if (ok <= 0) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* Whether kwnames[j] is "step" (given as log_record's step, not a field). */
static int
is_step_name(PyObject *name)
{
    return PyUnicode_CompareWithASCIIString(name, "step") == 0;
}

/*
 * The fields of a record of a flat schema, checked as CompiledSchema._flat_validate checks them, in the
 * class's field order: a new reference, or Py_None (declined: the Python path checks, converts or names
 * the problem), or NULL with an exception that must propagate (one that is not an Exception).
 * The fields come from a dict (values), or from keyword names and values (values NULL: kwnames and
 * kwvalues, a name "step" skipped), with the schema's defaults for those not given.
 */
static PyObject *
flat_fields(PyObject *flat, PyObject *values, PyObject *kwnames, PyObject *const *kwvalues)
{
    /* flat: (names, getter, types, defaults, ints, strs, validators), as schema._compile_flat made it. */
    if (!PyTuple_CheckExact(flat) || PyTuple_GET_SIZE(flat) != 7 || (values && !PyDict_CheckExact(values))
        || (!values && !kwnames))
        return Py_NewRef(Py_None);
    PyObject *names = PyTuple_GET_ITEM(flat, 0), *types = PyTuple_GET_ITEM(flat, 2),
             *defaults = PyTuple_GET_ITEM(flat, 3), *ints = PyTuple_GET_ITEM(flat, 4),
             *strs = PyTuple_GET_ITEM(flat, 5), *validators = PyTuple_GET_ITEM(flat, 6);
    if (!PyTuple_CheckExact(names) || !PyTuple_CheckExact(types) || !PyDict_CheckExact(defaults)
        || !PyTuple_CheckExact(ints) || !PyTuple_CheckExact(strs) || !PyTuple_CheckExact(validators)
        || PyTuple_GET_SIZE(types) != PyTuple_GET_SIZE(names))
        return Py_NewRef(Py_None);
    Py_ssize_t n = PyTuple_GET_SIZE(names), i, given = 0, found = 0;
    PyObject *vals[64], *out = NULL;
    if (n > 64)
        return Py_NewRef(Py_None);
    if (values) {
        given = PyDict_GET_SIZE(values);
    } else {
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(kwnames); j++)
            given += !is_step_name(PyTuple_GET_ITEM(kwnames, j));
    }
    if (given > n || (given < n && PyDict_GET_SIZE(defaults) == 0))
        return Py_NewRef(Py_None);
    /* Each field given (or its default), of its exact type. */
    for (i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i), *v = NULL;
        if (values) {
            v = PyDict_GetItemWithError(values, name);
            if (v == NULL && PyErr_Occurred())
                return NULL;
        } else {
            Py_ssize_t k = PyTuple_GET_SIZE(kwnames), j;
            for (j = 0; j < k && PyTuple_GET_ITEM(kwnames, j) != name; j++)
                ;
            if (j == k) {  /* names are interned as a rule; compared by value otherwise */
                for (j = 0; j < k; j++) {
                    int eq = PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, j), name);
                    if (eq == -1 && PyErr_Occurred())
                        return NULL;
                    if (eq == 0)
                        break;
                }
            }
            if (j < k)
                v = kwvalues[j];
        }
        if (v != NULL) {
            found++;
        } else {
            v = PyDict_GetItemWithError(defaults, name);
            if (v == NULL)
                return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        }
        if ((PyObject *)Py_TYPE(v) != PyTuple_GET_ITEM(types, i))
            return Py_NewRef(Py_None);
        vals[i] = v;
    }
    if (found != given)
        return Py_NewRef(Py_None);  /* a field the schema does not have */
    for (i = 0; i < PyTuple_GET_SIZE(ints); i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(ints, i));
        if (at < 0 || at >= n)
            goto decline;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(vals[at], &overflow);
        if (overflow || v > MAX_INT || v < -MAX_INT)
            goto decline;
    }
    for (i = 0; i < PyTuple_GET_SIZE(strs); i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(strs, i));
        if (at < 0 || at >= n)
            goto decline;
        if (!PyUnicode_IS_ASCII(vals[at]) && PyUnicode_AsUTF8AndSize(vals[at], NULL) == NULL)
            goto decline;  /* a lone surrogate: the Python path names it */
    }
    if (PyTuple_GET_SIZE(validators)) {
        PyObject *off = PyObject_CallNoArgs(g_validators_disabled);
        if (off == NULL)
            return NULL;
        int disabled = PyObject_IsTrue(off);
        Py_DECREF(off);
        if (disabled)
            goto decline;
        for (i = 0; i < PyTuple_GET_SIZE(validators); i++) {
            PyObject *entry = PyTuple_GET_ITEM(validators, i);
            if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 4)
                return Py_NewRef(Py_None);
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
            if (at < 0 || at >= n)
                goto decline;
            int within = bounds_hold(PyTuple_GET_ITEM(entry, 3), vals[at]);
            if (within == 1)
                continue;  /* one of tracker.validators' bounds, compared here */
            if (within == 0)
                goto decline;  /* outside: the validator names the problem on the Python path */
            /* Called as attrs calls a validator, without the instance (schema._NO_INSTANCE). */
            PyObject *argv[3] = {g_no_instance, PyTuple_GET_ITEM(entry, 1), vals[at]};
            PyObject *r = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 2), argv, 3, NULL);
            if (r == NULL) {
                /* A failure (or a validator that reads the instance) is the Python path's to report. */
                if (PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(g_needs_instance))
                    goto decline;
                return NULL;
            }
            Py_DECREF(r);
        }
    }
    /* A dict given whole and in the class's order is written as it is (as _flat_validate does). */
    if (values && given == n) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        int in_order = 1;
        for (i = 0; in_order && PyDict_Next(values, &pos, &key, &value); i++) {
            if (key != PyTuple_GET_ITEM(names, i)) {
                int eq = PyObject_RichCompareBool(key, PyTuple_GET_ITEM(names, i), Py_EQ);
                if (eq < 0)
                    return NULL;
                in_order = eq;
            }
        }
        if (in_order)
            return Py_NewRef(values);
    }
    if (!(out = _PyDict_NewPresized(n)))
        return NULL;
    for (i = 0; i < n; i++) {
        if (PyDict_SetItem(out, PyTuple_GET_ITEM(names, i), vals[i]) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
decline:
    PyErr_Clear();
    return Py_NewRef(Py_None);
}

/*
 * The run's _routes, _steps and _wb (new references) from its instance dict: Run defines __getattr__,
 * which sends every PyObject_GetAttr on it through a slower hook. 1: found; 0: not all there (the
 * Python method then); -1: an error.
 */
static int
run_state(PyObject *run, PyObject **routes, PyObject **steps, PyObject **wb)
{
    *routes = *steps = *wb = NULL;
    PyObject *dict = PyObject_GenericGetDict(run, NULL);
    if (dict == NULL)
        return -1;
    int found = 0;
    if (PyDict_CheckExact(dict)) {
        *routes = Py_XNewRef(PyDict_GetItemWithError(dict, s_routes));
        *steps = *routes ? Py_XNewRef(PyDict_GetItemWithError(dict, s_steps)) : NULL;
        *wb = *steps ? Py_XNewRef(PyDict_GetItemWithError(dict, s_wb)) : NULL;
        found = *wb != NULL && PyDict_CheckExact(*routes) && PyList_CheckExact(*steps);
    }
    Py_DECREF(dict);
    if (found)
        return 1;
    Py_CLEAR(*routes);
    Py_CLEAR(*steps);
    Py_CLEAR(*wb);
    return PyErr_Occurred() ? -1 : 0;
}

/* Whether a given step needs no conversion (None, or an int within ±2**53, as api.resolve_step passes it). */
static int
plain_step(PyObject *step)
{
    if (step == Py_None)
        return 1;
    if (!PyLong_CheckExact(step))
        return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(step, &overflow);
    return !overflow && v <= MAX_INT && v >= -MAX_INT;
}

/*
 * A record of a flat schema by the run's route for the schema (run._routes, run._steps; the route's
 * fast[4]: the schema's CompiledSchema._flat), its fields from data (a dict) or from keywords (data
 * NULL), at step (None: the next automatic one): checked as _flat_validate checks it, then written as
 * append writes it. The step, or None (declined, nothing changed), or NULL (raised).
 */
static PyObject *
record_fast(PyObject *run, PyObject *schema, PyObject *data, PyObject *kwnames, PyObject *const *kwvalues,
            PyObject *step)
{
    if (!PyUnicode_CheckExact(schema) || !plain_step(step))
        Py_RETURN_NONE;
    PyObject *routes, *steps, *wb, *route = NULL, *fast = NULL, *fields = NULL, *result = NULL;
    int state = run_state(run, &routes, &steps, &wb);
    if (state <= 0)
        return state < 0 ? NULL : Py_NewRef(Py_None);
    if (!(route = PyDict_GetItemWithError(routes, schema))) {
        result = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(route);
    if (!(fast = PyObject_GetAttr(route, s_fast)))
        goto done;
    if (!PyTuple_CheckExact(fast) || PyTuple_GET_SIZE(fast) != 5 || PyTuple_GET_ITEM(fast, 4) == Py_None) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    fields = flat_fields(PyTuple_GET_ITEM(fast, 4), data, kwnames, kwvalues);
    if (fields == NULL || fields == Py_None) {
        result = fields;
        fields = NULL;
        goto done;
    }
    result = write_record(fast, steps, step, Py_None, fields, 0);
done:
    Py_DECREF(routes);
    Py_DECREF(steps);
    Py_DECREF(wb);
    Py_XDECREF(route);
    Py_XDECREF(fast);
    Py_XDECREF(fields);
    return result;
}

/* ---- Run.log and Run.log_record as method descriptors: the fast paths without a Python frame ------- */

#define KIND_LOG 0
#define KIND_LOG_RECORD 1

/* run.log(values, step): the run's metrics route, when no W&B step is pending. */
static PyObject *
log_fast(PyObject *run, PyObject *values, PyObject *step)
{
    PyObject *routes, *steps, *wb, *result = NULL;
    int state = run_state(run, &routes, &steps, &wb);
    if (state <= 0)
        return state < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *route = PyDict_GetItemWithError(routes, s_metrics);
    if (route == NULL) {
        result = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    if (wb != Py_None) {
        PyObject *pending = PyObject_GetAttr(wb, s_has_pending);
        int yes = pending == NULL ? -1 : PyObject_IsTrue(pending);
        Py_XDECREF(pending);
        if (yes != 0) {
            result = yes < 0 ? NULL : Py_NewRef(Py_None);
            goto done;
        }
    }
    PyObject *fast = PyObject_GetAttr(route, s_fast);
    if (fast != NULL) {
        result = write_record(fast, steps, step, Py_None, values, CHECK_METRICS | STRICT);
        Py_DECREF(fast);
    }
done:
    Py_DECREF(routes);
    Py_DECREF(steps);
    Py_DECREF(wb);
    return result;
}

typedef struct {
    PyObject_HEAD
    PyObject *func;  /* the Python method: everything the fast path declines */
    int kind;
    PyObject *dict;  /* __name__, __qualname__, __doc__, __wrapped__ (functools.update_wrapper) */
    vectorcallfunc vectorcall;
} MethodObject;

static PyObject *
method_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    MethodObject *m = (MethodObject *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *r = NULL;  /* what a fast path answered: a step (done), None (declined) or NULL (raised) */
    int tried = 0;
    if (m->kind == KIND_LOG) {
        /* run.log(values), run.log(values, step), run.log(values, step=step) */
        PyObject *step = Py_None;
        int plain = 0;
        if (kwnames == NULL)
            plain = nargs == 2 || nargs == 3;
        else if (nargs == 2 && PyTuple_GET_SIZE(kwnames) == 1)
            plain = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "step") == 0;
        if (plain) {
            if (nargs == 3 || kwnames != NULL)
                step = args[2];
            if (step == Py_None || plain_step(step)) {
                r = log_fast(args[0], args[1], step);
                tried = 1;
            }
        }
    } else if (nargs >= 2) {
        /* run.log_record(schema, **fields) or run.log_record(schema, a_dict), step= too */
        if (nargs == 3 && PyDict_CheckExact(args[2])) {
            if (kwnames == NULL) {
                r = record_fast(args[0], args[1], args[2], NULL, NULL, Py_None);
                tried = 1;
            } else if (PyTuple_GET_SIZE(kwnames) == 1 && is_step_name(PyTuple_GET_ITEM(kwnames, 0))) {
                r = record_fast(args[0], args[1], args[2], NULL, NULL, args[3]);
                tried = 1;
            }
        } else if (nargs == 2 && kwnames != NULL) {
            PyObject *step = Py_None;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
                if (is_step_name(PyTuple_GET_ITEM(kwnames, i)))
                    step = args[nargs + i];
            }
            r = record_fast(args[0], args[1], NULL, kwnames, args + nargs, step);
            tried = 1;
        }
    }
    if (tried) {
        if (r == NULL)
            return NULL;
        if (r != Py_None) {
            Py_DECREF(r);
            Py_RETURN_NONE;
        }
        Py_DECREF(r);
    }
    return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
}

static PyObject *
method_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type))
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static const Py_ssize_t method_fields[] = {offsetof(MethodObject, func), offsetof(MethodObject, dict), -1};

GC_FIELD_FUNCTIONS(method, method_fields)

static PyGetSetDef method_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracker.write._fastline.Method",
    .tp_basicsize = sizeof(MethodObject),
    .tp_dealloc = gc_dealloc,
    .tp_vectorcall_offset = offsetof(MethodObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A method of Run whose common case runs in C; anything else calls its Python method (__wrapped__).",
    .tp_traverse = method_traverse,
    .tp_clear = method_clear,
    .tp_getset = method_getset,
    .tp_descr_get = method_get,
    .tp_dictoffset = offsetof(MethodObject, dict),
};

static PyObject *
make_method(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *func;
    int kind;
    if (!PyArg_ParseTuple(args, "Oi:method", &func, &kind))
        return NULL;
    if (kind != KIND_LOG && kind != KIND_LOG_RECORD) {
        PyErr_Format(PyExc_ValueError, "method: kind must be LOG or LOG_RECORD, given %d", kind);
        return NULL;
    }
    MethodObject *m = PyObject_GC_New(MethodObject, &MethodType);
    if (m == NULL)
        return NULL;
    m->func = Py_NewRef(func);
    m->kind = kind;
    m->dict = NULL;
    m->vectorcall = method_vectorcall;
    PyObject_GC_Track(m);
    return (PyObject *)m;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(dumps, strict_option, reserved_names, encode_nonfinite, clock, validators_disabled, "
     "no_instance, needs_instance): what append and log_record use."},
    {"append", (PyCFunction)(void (*)(void))append, METH_FASTCALL,
     "append(route, steps, step, time, data, flags) -> step, or None when declined (nothing changed)."},
    {"method", make_method, METH_VARARGS,
     "method(func, kind) -> a method descriptor: Run.log (LOG) or Run.log_record (LOG_RECORD) in C, func otherwise."},
    {"crc32", crc32_py, METH_VARARGS, "crc32(data, start=0) -> zlib.crc32(data, start): the CRC append uses."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tracker.write._fastline",
    "The logging fast path in C (Route.append's common case); tracker works without it.", -1, methods,
};

PyMODINIT_FUNC
PyInit__fastline(void)
{
    crc_setup();
    if (intern_all() < 0)
        return NULL;
    g_option_plain = PyLong_FromLong(0);
    g_one = PyLong_FromLong(1);
    if (g_option_plain == NULL || g_one == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyType_Ready(&LockType) < 0 || PyModule_AddObjectRef(m, "Lock", (PyObject *)&LockType) < 0
        || PyType_Ready(&MethodType) < 0 || PyModule_AddIntConstant(m, "LOG", KIND_LOG) < 0
        || PyModule_AddIntConstant(m, "LOG_RECORD", KIND_LOG_RECORD) < 0
        || PyModule_AddIntConstant(m, "INTERFACE", INTERFACE) < 0
        || PyModule_AddIntConstant(m, "CHECK_METRICS", CHECK_METRICS) < 0
        || PyModule_AddIntConstant(m, "STRICT", STRICT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
