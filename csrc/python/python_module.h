/* python_module.h - what the _owner module's files share (owner.c makes the module and
 * its Owner type; launch.c adds the launch call). Python C API code only: the C layer
 * never includes this. */
#ifndef VN_PYTHON_MODULE_H
#define VN_PYTHON_MODULE_H

#include <Python.h>

/* A new, empty Owner (NULL with an exception set). */
PyObject *vn_py_owner_new(void);
/* The storage a creating call writes its object into: the owner then holds it. */
void **vn_py_owner_slot(PyObject *owner);
/* launch.c's functions, added to the module by owner.c. */
extern PyMethodDef vn_py_launch_methods[];

#endif /* VN_PYTHON_MODULE_H */
