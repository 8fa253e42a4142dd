/* launch.c - the commonest launches as one call from Python each: the pre-record of whole
 * buffers with default arguments, vyre_native._owner.record_buffers(pipeline, inputs,
 * outputs, workgroups, clear_outputs), made for Pipeline.prerecord_persistent_dispatch;
 * and replay_once(handle, which), one untimed launch of a Recording (which 0) or a
 * Sequence (1), made for their replay() with the default arguments.
 *
 * Why in C: that launch's Python around its one C call (reading each buffer's pointer,
 * building the array, making the out-parameter's owner, checking the status) cost as much
 * as the C layer's own work over raw C on the H200 (benchmarks/call_path.py). Here it is
 * one pass over the arguments with the GIL held and no Python code run, then the C call
 * with the GIL released, as cffi makes it.
 *
 * It converts nothing and decides nothing: an argument of any other shape (not a list or
 * tuple of vn.Buffer, a released handle, workgroups not three ints that fit uint32_t, a
 * clear_outputs not exactly True or False, more than VN_LAUNCH_MAX_BUFFERS buffers) makes
 * it return None before any C call, and Python takes its own path, whose conversion and
 * messages are the rules' one owner. A C status other than VN_OK comes back as that int,
 * the message still in this thread's error slot, for Python's check(). VN_OK gives the
 * new Owner holding the dispatch (nothing between the C call's write and ownership).
 *
 * Each handle's C id is its `_id` (an int set once when the handle is made); its `_ptr`,
 * which keeps the handle's owner and so the C object alive, is held for the call (a
 * release() on another thread sets `_ptr` to None, never `_id`). Both are private: a
 * caller who rewrites `_id` gets what C says of that id (the id of another live object of
 * the right kind, or a typed error: ids are checked by slot and generation, never
 * dereferenced), as rewriting `_ptr` gets Python's path. An exception raised during the
 * lookups (a signal handler's) propagates; a missing attribute takes Python's path. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../include/vyre_native.h"
#include "python_module.h"

/* The pipeline and at most this many buffers; a launch with more takes Python's path. */
#define VN_LAUNCH_MAX_BUFFERS 16

/* The C functions called, handed over once by bind_launch (this module links none of the
 * C layer); typed by their declarations, so a signature that changes fails to compile. */
static __typeof__(vn_dispatch_record_buffers) *record_buffers;
static __typeof__(vn_recording_replay) *recording_replay;
static __typeof__(vn_sequence_replay) *sequence_replay;
static PyObject *buffer_type;             /* vn.Buffer: only that exact type is taken */
static PyObject *ptr_name, *id_name;      /* "_ptr", "_id" */

/* An attribute lookup failed: 0 (take Python's path) when it was only missing, -1 when
 * it raised anything else (a KeyboardInterrupt from a signal handler), which then goes on. */
static int lookup_failed(void) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return 0;
}

/* The C id of `handle` into *id and its `_ptr` into *held (a new reference): 1; 0 when it
 * has none now (released, or not a handle of ours: no error set); -1 with an exception
 * set. The lookups can run Python code (a __dict__ key's __eq__, a property): the caller
 * holds `handle` across them. */
static int handle_id(PyObject *handle, void **id, PyObject **held) {
    PyObject *ptr = PyObject_GetAttr(handle, ptr_name);
    if (ptr == NULL) return lookup_failed();
    if (ptr == Py_None) {
        Py_DECREF(ptr);
        return 0;
    }
    PyObject *value = PyObject_GetAttr(handle, id_name);
    if (value == NULL) {
        Py_DECREF(ptr);
        return lookup_failed();
    }
    void *got = PyLong_CheckExact(value) ? PyLong_AsVoidPtr(value) : NULL;
    Py_DECREF(value);
    if (got == NULL) {
        Py_DECREF(ptr);
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();  /* past a pointer's width: no id of ours */
        return 0;
    }
    *id = got;
    *held = ptr;
    return 1;
}

/* A uint32_t from an exact int, or 0 (no error set) for anything else. */
static int u32_of(PyObject *value, uint32_t *out) {
    if (!PyLong_CheckExact(value)) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || v < 0 || v > (long long)UINT32_MAX) {
        PyErr_Clear();
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

/* What a call into C that wrote into `owner` returns: the owner on VN_OK, else the status
 * (the owner, which then holds nothing, dropped). */
static PyObject *owner_or_status(PyObject *owner, vn_status st) {
    if (st == VN_OK) return owner;
    Py_DECREF(owner);
    return PyLong_FromLong((long)st);
}

static PyObject *record_buffers_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "record_buffers(pipeline, inputs, outputs, workgroups, clear_outputs): 5 "
                                         "arguments. Fix: call it as Pipeline.prerecord_persistent_dispatch does.");
        return NULL;
    }
    if (record_buffers == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "vyre_native._owner.record_buffers: not bound. Fix: import vyre_native.");
        return NULL;
    }
    PyObject *clear = args[4], *wg = args[3];
    uint32_t xyz[3];
    if (clear != Py_True && clear != Py_False) Py_RETURN_NONE;
    if (!PyTuple_CheckExact(wg) || PyTuple_Size(wg) != 3) Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < 3; i++)
        if (!u32_of(PyTuple_GetItem(wg, i), &xyz[i])) Py_RETURN_NONE;

    PyObject *held[1 + VN_LAUNCH_MAX_BUFFERS];
    vn_buffer *ids[VN_LAUNCH_MAX_BUFFERS];
    size_t counts[2] = {0, 0}, n = 0;
    Py_ssize_t n_held = 0;
    void *pipeline = NULL;
    PyObject *result = Py_None;
    int got = handle_id(args[0], &pipeline, &held[n_held]);
    if (got <= 0) {
        result = got < 0 ? NULL : Py_None;
        goto done;
    }
    n_held++;
    for (int side = 0; side < 2; side++) {
        PyObject *seq = args[1 + side];
        int is_list = PyList_CheckExact(seq);
        if (!is_list && !PyTuple_CheckExact(seq)) goto done;
        Py_ssize_t len = is_list ? PyList_Size(seq) : PyTuple_Size(seq);
        if (len < 0 || n + (size_t)len > VN_LAUNCH_MAX_BUFFERS) goto done;
        for (Py_ssize_t i = 0; i < len; i++) {
            /* The lookups below can run Python code that changes the list: the item is
             * held across them, and a list that shrank meanwhile takes Python's path. */
            PyObject *item = is_list ? PyList_GetItem(seq, i) : PyTuple_GetItem(seq, i);
            if (item == NULL) {
                PyErr_Clear();
                goto done;
            }
            if ((PyObject *)Py_TYPE(item) != buffer_type) goto done;
            void *id = NULL;
            Py_INCREF(item);
            got = handle_id(item, &id, &held[n_held]);
            Py_DECREF(item);
            if (got <= 0) {
                result = got < 0 ? NULL : Py_None;
                goto done;
            }
            n_held++;
            ids[n++] = id;
        }
        counts[side] = (size_t)len;
    }
    PyObject *owner = vn_py_owner_new();
    if (owner == NULL) {
        result = NULL;
        goto done;
    }
    vn_dispatch **out = (vn_dispatch **)vn_py_owner_slot(owner);
    uint32_t keep = clear == Py_False;
    vn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = record_buffers(pipeline, ids, counts[0], counts[1], xyz[0], xyz[1], xyz[2], keep, out);
    Py_END_ALLOW_THREADS
    result = owner_or_status(owner, st);
done:
    for (Py_ssize_t i = 0; i < n_held; i++) Py_DECREF(held[i]);
    if (result == Py_None) Py_INCREF(result);
    return result;
}

/* One untimed launch: an Owner of its Submission, a C status (VN_PENDING included: a CPU
 * adapter's busy queue, nothing submitted), or None when `handle` has no id now. */
static PyObject *replay_once_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    long which = nargs == 2 && PyLong_CheckExact(args[1]) ? PyLong_AsLong(args[1]) : -1;
    if (which != 0 && which != 1) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "replay_once(handle, which): which is 0 (a Recording) or 1 (a Sequence). "
                                         "Fix: call it as Recording.replay and Sequence.replay do.");
        return NULL;
    }
    if (recording_replay == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "vyre_native._owner.replay_once: not bound. Fix: import vyre_native.");
        return NULL;
    }
    void *id = NULL;
    PyObject *held = NULL;
    int got = handle_id(args[0], &id, &held);
    if (got < 0) return NULL;
    if (got == 0) Py_RETURN_NONE;
    PyObject *owner = vn_py_owner_new();
    if (owner == NULL) {
        Py_DECREF(held);
        return NULL;
    }
    vn_submission **out = (vn_submission **)vn_py_owner_slot(owner);
    vn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = which == 0 ? recording_replay((vn_recording *)id, 1, VN_TIMING_NONE, out)
                    : sequence_replay((vn_sequence *)id, 1, VN_TIMING_NONE, out);
    Py_END_ALLOW_THREADS
    Py_DECREF(held);
    return owner_or_status(owner, st);
}

/* An address (an int) handed over by bind_launch, into *out; 0 with an error set. */
static int address_of(PyObject *value, void **out) {
    *out = PyLong_AsVoidPtr(value);
    if (*out != NULL) return 1;
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "vyre_native._owner.bind_launch: NULL. Fix: pass the functions' addresses.");
    return 0;
}

/* bind_launch(record_buffers, recording_replay, sequence_replay, buffer_type): the three C
 * functions' addresses and vn.Buffer, once, at import. */
static PyObject *bind_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4 || !PyType_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "bind_launch(record_buffers, recording_replay, sequence_replay, buffer_type). "
                                         "Fix: pass the three functions' addresses and vn.Buffer.");
        return NULL;
    }
    if (record_buffers != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "vyre_native._owner.bind_launch: already bound. Fix: nothing to do.");
        return NULL;
    }
    void *fns[3];
    for (int i = 0; i < 3; i++)
        if (!address_of(args[i], &fns[i])) return NULL;
    ptr_name = PyUnicode_InternFromString("_ptr");
    id_name = PyUnicode_InternFromString("_id");
    if (ptr_name == NULL || id_name == NULL) return NULL;
    Py_INCREF(args[3]);
    buffer_type = args[3];
    recording_replay = (__typeof__(recording_replay))fns[1];
    sequence_replay = (__typeof__(sequence_replay))fns[2];
    record_buffers = (__typeof__(record_buffers))fns[0];
    Py_RETURN_NONE;
}

PyMethodDef vn_py_launch_methods[] = {
    {"record_buffers", (PyCFunction)(void (*)(void))record_buffers_call, METH_FASTCALL,
     "record_buffers(pipeline, inputs, outputs, workgroups, clear_outputs) - the commonest pre-record in one call: "
     "an Owner of the new dispatch, a C status (int), or None for Python's own path."},
    {"replay_once", (PyCFunction)(void (*)(void))replay_once_call, METH_FASTCALL,
     "replay_once(handle, which) - one untimed launch of a Recording (0) or Sequence (1): an Owner of its "
     "Submission, a C status (int), or None for Python's own path."},
    {"bind_launch", (PyCFunction)(void (*)(void))bind_launch, METH_FASTCALL,
     "bind_launch(record_buffers, recording_replay, sequence_replay, buffer_type) - the C functions and "
     "vn.Buffer, once."},
    {NULL, NULL, 0, NULL},
};
