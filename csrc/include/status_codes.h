/* status_codes.h - the status codes, one table (an X-macro list, as wgpu_functions.h):
 * VN_STATUS(name, value) a row, one a line. vyre_native.h makes the vn_status enum of it,
 * and scripts/ffi_build.py writes that enum out for cffi's cdef, which runs no preprocessor;
 * Python reads the codes and their names from the compiled module (vyre_native/errors.py
 * maps each error code to its one class; tests/test_errors.py holds them and the guide's
 * table, docs/guide/errors.md, to this one). A code never changes meaning. No include
 * guard: it is included once per use. */
VN_STATUS(VN_OK, 0)
VN_STATUS(VN_ERROR_INVALID_ARGUMENT, 1)  /* a value out of range or malformed */
VN_STATUS(VN_ERROR_ALREADY_SUBMITTED, 2) /* a single-submit recording replayed twice */
VN_STATUS(VN_ERROR_BINDING, 3)           /* handles do not match the pipeline's bindings */
VN_STATUS(VN_ERROR_VALIDATION, 4)        /* wgpu-native reported a validation error */
VN_STATUS(VN_ERROR_SHADER, 5)            /* WGSL that does not compile */
VN_STATUS(VN_ERROR_OUT_OF_MEMORY, 6)     /* a GPU or host allocation failed */
VN_STATUS(VN_ERROR_OUTPUT_INDEX, 7)      /* an output index out of range */
VN_STATUS(VN_ERROR_RELEASED, 8)          /* a handle used after release or close */
VN_STATUS(VN_ERROR_DEVICE_LOST, 9)       /* the device was lost or destroyed */
VN_STATUS(VN_ERROR_LIBRARY, 10)          /* wgpu-native missing or of another version */
VN_STATUS(VN_ERROR_NOT_SUBMITTED, 11)    /* output read before the recording was replayed */
VN_STATUS(VN_ERROR_TIMEOUT, 12)          /* a wait ran past its timeout */
VN_STATUS(VN_ERROR_INTERNAL, 13)         /* an unexpected failure */
VN_STATUS(VN_ERROR_WRONG_TYPE, 14)       /* an argument of the wrong type */
VN_STATUS(VN_ERROR_UNSUPPORTED, 15)      /* the adapter lacks a feature the call needs */
VN_STATUS(VN_ERROR_FORKED, 16)           /* an object inherited across fork(): unusable in the child */
/* Not a failure: a blocking call waited one time slice (VN_WAIT_SLICE_MS) and the work is
 * not done yet. Call it again (with the same arguments) to keep waiting; returning in
 * between lets the caller notice a signal (Python: KeyboardInterrupt). */
VN_STATUS(VN_PENDING, 17)
VN_STATUS(VN_ERROR_REENTERED, 18)        /* a call made, from a signal handler or a finalizer, inside a
                                          * call on the same thread that holds a lock it needs */
VN_STATUS(VN_ERROR_NOT_PICKLABLE, 19)    /* a handle pickled (sent to another process) */
