/* vyre_native.h - the public C API of vyre_native.
 *
 * This is the only place C signatures are written for Python, with the parts of the API
 * it includes (csrc/vn_*.h, by area, each declaration in one): the build reads the text
 * between the VN_CDEF markers into cffi's cdef (scripts/ffi_build.py), as-is but for those
 * parts, read in where they are included, and the X-macro tables, which ffi_build.py
 * writes out as the preprocessor would (`#define M(...) ...`, `#include "table.h"`,
 * `#undef M`: one table, written once, for C and for cffi). So that section, the parts
 * included, holds nothing else cffi cannot parse: no other preprocessor lines or
 * includes, only fixed-width integer types.
 *
 * Conventions (as SQLite's): every function that can fail returns a vn_status;
 * the message of the last failure on the calling thread is vn_last_error(), of the
 * form "<what happened, with values>. Fix: <remedy>". Handles are opaque ids (a
 * slot and its generation, never an address: nothing may dereference one), each
 * owning one reference on a reference-counted object; *_release makes the id stale and
 * drops its reference, and an object stays alive while anything recorded on it still
 * needs it. Every function checks that each handle it is given is a live id of an
 * object of its kind (VN_ERROR_WRONG_TYPE for another kind, VN_ERROR_RELEASED for a
 * released one, however many objects were made since; VN_ERROR_INVALID_ARGUMENT for
 * NULL or a value that never was a handle) and holds a reference on the object until
 * it returns, so a release on another thread never frees it mid-call
 * (docs/LOCKING.md). No function aborts the process on bad input.
 *
 * Waits: a call that waits for the GPU waits one time slice (VN_WAIT_SLICE_MS) at most.
 * A call whose work is not done by then returns VN_PENDING and is called again, so the
 * caller can run its signal handlers in between (Python's Ctrl-C). One call waits
 * inside C instead: vn_device_submit of a batch that goes in parts waits, between
 * parts, for the GPU to run the part before last (at most VN_MAX_LAUNCHES_PER_SUBMIT
 * steps each time), holding the device's life lock for writing, so it returns, and a
 * signal is seen, once its last part is submitted or the device is lost; meanwhile
 * every call that takes that lock (a submit, write or read of the device, on any
 * thread) waits for it too. A replay(n) past one submit is the caller's loop of calls
 * (vn_replay_split), each of which returns, and so stays interruptible.
 *
 * fork(): objects belong to the process that made them. In a child after fork(), every
 * call on an inherited object fails with VN_ERROR_FORKED, and releasing one only
 * forgets it: wgpu-native's device cannot be used, or destroyed, across fork() (its
 * driver threads stay in the parent).
 */
#ifndef VYRE_NATIVE_H
#define VYRE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* VN_CDEF_BEGIN */

/* Stable status codes: their one table is csrc/include/status_codes.h. */
typedef enum vn_status {
#define VN_STATUS(name, value) name = value,
#include "status_codes.h"
#undef VN_STATUS
} vn_status;

/* Bounds of one call. */
typedef enum vn_bounds {
    /* Steps one call encodes into one command buffer (launches of a recording; n * steps
     * for a sequence replayed n > 1 times; the items' steps for a batch of more than one
     * item): each holds encoder memory until the GPU has run it, so a larger count is
     * VN_ERROR_INVALID_ARGUMENT. */
    VN_MAX_LAUNCHES_PER_SUBMIT = 256,
    /* Submits a replay or a submit split into parts keeps running at most: the oldest
     * is waited for before the next part (see vn_replay_split). */
    VN_MAX_SUBMITS_IN_FLIGHT = 2,
    /* The longest a blocking call waits before it returns VN_PENDING. */
    VN_WAIT_SLICE_MS = 20,
    /* An untimed sequence replay of at least VN_SPLIT_MIN_STEPS steps on a GPU goes in
     * several submits: the first VN_SPLIT_FIRST_STEPS steps, then twice as many each
     * time (the last takes what is left once less than twice its size remains), so the
     * GPU runs the first steps while the rest are encoded. */
    VN_SPLIT_MIN_STEPS = 32,
    VN_SPLIT_FIRST_STEPS = 8
} vn_bounds;

typedef struct vn_device vn_device;
typedef struct vn_buffer vn_buffer;
typedef struct vn_shader vn_shader;
typedef struct vn_pipeline vn_pipeline;
typedef struct vn_dispatch vn_dispatch;
typedef struct vn_pending_read vn_pending_read;

/* The message of the last failure on this thread ("" when none). */
const char *vn_last_error(void);
/* 1 when the last failure on this thread points into WGSL source (a ShaderError from
 * the compiler): *line and *column get its 1-based line and column (in characters),
 * as the message shows them; else 0. */
int vn_last_error_position(uint32_t *line, uint32_t *column);

/* ---- library (csrc/base/loader.c) ---------------------------------------------- */

/* Load wgpu-native from `path` once per process and check its version against
 * the headers compiled in. Later calls with any path return the first result. */
vn_status vn_library_load(const char *path);
/* The process is exiting (Python's atexit calls it, before any C exit handler runs):
 * from now on a call that would start the GPU driver (device creation, adapter listing)
 * never returns, and this waits up to 10 s for those in flight, so that the driver's own
 * exit handlers never run under one (csrc/object/object.c). */
void vn_process_exiting(void);
/* wgpuGetVersion() of the loaded library, 0 when none is loaded. */
uint32_t vn_library_version(void);
/* The version the headers were compiled for, encoded as wgpuGetVersion encodes. */
uint32_t vn_expected_version(void);
/* The pip requirement of the wgpu package those headers came from, as pyproject.toml
 * pins it ("wgpu==X.Y.Z"): what every message that says what to install names. */
const char *vn_wgpu_requirement(void);

/* ---- log (csrc/base/log.c) ------------------------------------------------------ */

/* The ring's size (messages) and the longest message it keeps (bytes, NUL included). */
enum { VN_LOG_RING_SLOTS = 256, VN_LOG_MESSAGE_BYTES = 1024 };
/* Route wgpu-native's log into a bounded ring (VN_LOG_RING_SLOTS messages; the oldest is
 * dropped when full) at `level`: 0 off, 1 error, 2 warn, 3 info, 4 debug, 5 trace. */
vn_status vn_log_start(int level);
vn_status vn_log_set_level(int level);
/* Take the oldest message: 1 with its level and text, or 0 when none came within
 * timeout_s. *dropped gets how many were dropped since the last call. Blocks (call it
 * with the GIL released, as cffi does). */
int vn_log_next(double timeout_s, int *level, char *out, size_t capacity, uint64_t *dropped);

#include "vn_device.h"
#include "vn_buffer.h"
#include "vn_pipeline.h"
#include "vn_dispatch.h"
#include "vn_interop.h"
#include "vn_work.h"
#include "vn_introspect.h"

/* VN_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* VYRE_NATIVE_H */
