/* vyre_native._owner - the one object that owns a handle's reference to its C object.
 *
 * Why a type of its own, and not cffi's ffi.gc: ffi.gc runs its destructor from
 * tp_finalize, and CPython's cycle collector calls tp_finalize on every object of an
 * unreachable cycle before it looks for resurrection (PEP 442). A handle that a __del__
 * of its cycle stores somewhere (a tensor library's free list) survived, with its C
 * object already released. An Owner has no finalizer and is not tracked by the cycle
 * collector (it holds no Python object), so the collector never looks at it: it is
 * deallocated only when its last reference goes, and only then releases the object.
 *
 * It is also the out-parameter of the creating call: its storage is the slot the C call
 * writes the new object into (the writable buffer export), so it owns the object from
 * the moment C creates it, with no Python step between (no signal, trace or profile hook
 * can orphan it). Its read-only export is the handle itself (an id, csrc/object/object.c: a
 * value, never dereferenced) as the buffer's address, zero bytes long: what
 * ffi.from_buffer("vn_buffer *", owner) turns into a typed pointer whose value is the id
 * and which keeps the owner alive, for as long as any call or holder has that pointer.
 *
 * Built against the limited API (abi3); it includes no vyre_native internals: the
 * release function is vn_handle_release, handed over once at import (bind). launch.c,
 * in the same module, adds the commonest pre-record as one call (record_buffers). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

#include "../include/vyre_native.h"
#include "python_module.h"

typedef struct {
    PyObject_HEAD
    /* What the creating call writes: a handle id, or a vn_view whose first field is the
     * buffer's. The first pointer-sized value is what the owner holds. */
    union {
        void *object;
        vn_view view;
    } slot;
} Owner;

/* vn_handle_release (accepts any live kind, ignores anything else); set once. */
static void (*release_fn)(void *);
/* The Owner type, made once by module_exec (launch.c makes owners too). */
static PyObject *owner_type;

PyObject *vn_py_owner_new(void) { return PyObject_CallNoArgs(owner_type); }

void **vn_py_owner_slot(PyObject *owner) { return &((Owner *)owner)->slot.object; }

static void owner_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    void *object = ((Owner *)self)->slot.object;
    if (object != NULL && release_fn != NULL) {
        /* As cffi does for every call: a release may wait on a lock another thread holds
         * while it waits for the GIL. */
        Py_BEGIN_ALLOW_THREADS
        release_fn(object);
        Py_END_ALLOW_THREADS
    }
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(self);
    Py_DECREF(type);
}

static int owner_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Owner *owner = (Owner *)self;
    if (flags & PyBUF_WRITABLE)
        return PyBuffer_FillInfo(view, self, &owner->slot, (Py_ssize_t)sizeof owner->slot, 0, flags);
    if (owner->slot.object == NULL) {
        PyErr_SetString(PyExc_BufferError,
                        "this owner holds no vyre_native object (its creating call wrote none). Fix: check the "
                        "creating call's status before taking the handle.");
        return -1;
    }
    return PyBuffer_FillInfo(view, self, owner->slot.object, 0, 1, flags);
}

static PyObject *owner_held(PyObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(((Owner *)self)->slot.object != NULL);
}

static PyGetSetDef owner_getset[] = {
    {"held", owner_held, NULL, "whether the owner holds an object", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot owner_slots[] = {
    {Py_tp_dealloc, (void *)owner_dealloc},
    {Py_tp_getset, (void *)owner_getset},
    {Py_bf_getbuffer, (void *)owner_getbuffer},
    {Py_tp_doc, (void *)"Owner() - owns the vyre_native object a creating call writes into it; releases it when "
                        "deallocated (never from the cycle collector)."},
    {0, NULL},
};

static PyType_Spec owner_spec = {
    .name = "vyre_native._owner.Owner",
    .basicsize = (int)sizeof(Owner),
    .itemsize = 0,
    /* No Py_TPFLAGS_HAVE_GC: the point of the type. No BASETYPE: a subclass could add
     * a __dict__, and with it the collector. */
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = owner_slots,
};

static PyObject *bind(PyObject *module, PyObject *address) {
    (void)module;
    if (release_fn != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "vyre_native._owner.bind: already bound. Fix: nothing to do.");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(address);
    if (fn == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "vyre_native._owner.bind: NULL. Fix: pass vn_handle_release's address.");
        return NULL;
    }
    release_fn = (void (*)(void *))fn;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"bind", bind, METH_O, "bind(address) - the release function (vn_handle_release), once."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    /* The release function and launch.c's state are the process's, once: a second
     * interpreter (a subinterpreter's import) would replace the Owner type that the
     * first's launches make. */
    if (owner_type != NULL) {
        PyErr_SetString(PyExc_ImportError, "vyre_native._owner is loaded in another interpreter of this process "
                                           "already. Fix: use vyre_native from one interpreter (the main one).");
        return -1;
    }
    PyObject *type = PyType_FromSpec(&owner_spec);
    if (type == NULL) return -1;
    if (PyModule_AddObject(module, "Owner", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    Py_INCREF(type);
    owner_type = type;  /* kept for the process's life, as the module's own reference is */
    if (PyModule_AddFunctions(module, vn_py_launch_methods) < 0) return -1;
    return PyModule_AddIntConstant(module, "SLOT_SIZE", (long)sizeof(((Owner *)0)->slot));
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void *)module_exec},
    {0, NULL},
};

static struct PyModuleDef owner_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "vyre_native._owner",
    .m_doc = "The owner of each vyre_native handle's C object (see csrc/python/owner.c).",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = module_slots,
};

PyMODINIT_FUNC PyInit__owner(void) { return PyModuleDef_Init(&owner_module); }
