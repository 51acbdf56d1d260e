/*
 * The garbage collector's three functions (traverse, clear, dealloc) for an object type of the C extensions
 * (tracker/write/_fastline.c's Method, tracker/capture/_console.c's Tee), from the list of its object fields:
 * a type names its fields once, as offsets ending in -1, and every type is visited, cleared and freed the
 * same way. Include after <Python.h>; every function here is static.
 */
#ifndef TRACKER_GCFIELDS_H
#define TRACKER_GCFIELDS_H

#include <stddef.h>

/* The object field at `offset` bytes into `o`. */
#define GC_FIELD(o, offset) (*(PyObject **)((char *)(o) + (offset)))

/* Visits each field of `fields` (offsets, -1 last) that holds an object. */
static int
gc_traverse_fields(PyObject *o, const Py_ssize_t *fields, visitproc visit, void *arg)
{
    for (; *fields >= 0; fields++)
        Py_VISIT(GC_FIELD(o, *fields));
    return 0;
}

/* Drops the reference each field of `fields` holds, leaving NULL. */
static int
gc_clear_fields(PyObject *o, const Py_ssize_t *fields)
{
    for (; *fields >= 0; fields++)
        Py_CLEAR(GC_FIELD(o, *fields));
    return 0;
}

/* Defines <prefix>_traverse and <prefix>_clear (tp_traverse, tp_clear) over the offsets `fields`. */
#define GC_FIELD_FUNCTIONS(prefix, fields)                                       \
    static int prefix##_traverse(PyObject *o, visitproc visit, void *arg)        \
    {                                                                            \
        return gc_traverse_fields(o, fields, visit, arg);                        \
    }                                                                            \
    static int prefix##_clear(PyObject *o) { return gc_clear_fields(o, fields); }

/* tp_dealloc of a type whose tp_clear drops every reference it holds. */
static void
gc_dealloc(PyObject *o)
{
    PyObject_GC_UnTrack(o);
    Py_TYPE(o)->tp_clear(o);
    Py_TYPE(o)->tp_free(o);
}

#endif
