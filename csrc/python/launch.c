/* launch.c - the commonest pre-record (whole buffers, default arguments) as one call from
 * Python: vyre_native._owner.record_buffers(pipeline, inputs, outputs, workgroups,
 * clear_outputs), made for Pipeline.prerecord_persistent_dispatch.
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
 * which keeps the handle's owner and so the C object alive, is held for the call, read
 * in the same GIL-held pass (a release() on another thread sets `_ptr` to None, never
 * `_id`). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../include/vyre_native.h"
#include "python_module.h"

/* The pipeline and at most this many buffers; a launch with more takes Python's path. */
#define VN_LAUNCH_MAX_BUFFERS 16

typedef vn_status (*record_buffers_fn)(vn_pipeline *, vn_buffer *const *, size_t, size_t, uint32_t, uint32_t,
                                       uint32_t, uint32_t, vn_dispatch **);

static record_buffers_fn record_buffers;  /* vn_dispatch_record_buffers, set once (bind_launch) */
static PyObject *buffer_type;             /* vn.Buffer: only that exact type is taken */
static PyObject *ptr_name, *id_name;      /* "_ptr", "_id" */

/* The C id of `handle` into *id, its `_ptr` into *held (a new reference); 0 when it has
 * none now (released, or not a handle of ours), with no error set. */
static int handle_id(PyObject *handle, void **id, PyObject **held) {
    PyObject *ptr = PyObject_GetAttr(handle, ptr_name);
    if (ptr == NULL || ptr == Py_None) {
        PyErr_Clear();
        Py_XDECREF(ptr);
        return 0;
    }
    PyObject *value = PyObject_GetAttr(handle, id_name);
    void *got = value != NULL && PyLong_Check(value) ? PyLong_AsVoidPtr(value) : NULL;
    Py_XDECREF(value);
    if (got == NULL) {
        PyErr_Clear();
        Py_DECREF(ptr);
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
    if (!handle_id(args[0], &pipeline, &held[n_held])) goto done;
    n_held++;
    for (int side = 0; side < 2; side++) {
        PyObject *seq = args[1 + side];
        int is_list = PyList_CheckExact(seq);
        if (!is_list && !PyTuple_CheckExact(seq)) goto done;
        Py_ssize_t len = is_list ? PyList_Size(seq) : PyTuple_Size(seq);
        if (len < 0 || n + (size_t)len > VN_LAUNCH_MAX_BUFFERS) goto done;
        for (Py_ssize_t i = 0; i < len; i++) {
            /* Borrowed; nothing below runs Python code, so the list cannot change under it. */
            PyObject *item = is_list ? PyList_GetItem(seq, i) : PyTuple_GetItem(seq, i);
            void *id = NULL;
            if (item == NULL || (PyObject *)Py_TYPE(item) != buffer_type || !handle_id(item, &id, &held[n_held]))
                goto done;
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
    if (st != VN_OK) {
        Py_DECREF(owner);  /* holds nothing: a failed call writes no object */
        result = PyLong_FromLong((long)st);
    } else {
        result = owner;
    }
done:
    for (Py_ssize_t i = 0; i < n_held; i++) Py_DECREF(held[i]);
    if (result == Py_None) Py_INCREF(result);
    return result;
}

/* bind_launch(record_buffers_address, buffer_type) - once, at import. */
static PyObject *bind_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "bind_launch(address, buffer_type). Fix: pass vn_dispatch_record_buffers' "
                                         "address and vn.Buffer.");
        return NULL;
    }
    if (record_buffers != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "vyre_native._owner.bind_launch: already bound. Fix: nothing to do.");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]);
    if (fn == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "vyre_native._owner.bind_launch: NULL. Fix: pass the function's address.");
        return NULL;
    }
    ptr_name = PyUnicode_InternFromString("_ptr");
    id_name = PyUnicode_InternFromString("_id");
    if (ptr_name == NULL || id_name == NULL) return NULL;
    Py_INCREF(args[1]);
    buffer_type = args[1];
    record_buffers = (record_buffers_fn)fn;
    Py_RETURN_NONE;
}

PyMethodDef vn_py_launch_methods[] = {
    {"record_buffers", (PyCFunction)(void (*)(void))record_buffers_call, METH_FASTCALL,
     "record_buffers(pipeline, inputs, outputs, workgroups, clear_outputs) - the commonest pre-record in one call: "
     "an Owner of the new dispatch, a C status (int), or None for Python's own path."},
    {"bind_launch", (PyCFunction)(void (*)(void))bind_launch, METH_FASTCALL,
     "bind_launch(address, buffer_type) - vn_dispatch_record_buffers and vn.Buffer, once."},
    {NULL, NULL, 0, NULL},
};
