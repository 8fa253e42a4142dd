/* layer_base.h - layer 1 of the C layer, the one every file stands on: the wgpu-native
 * function table (loader.c, library_file.c), the thread's error slot and message
 * formatting (error.c), the log ring (log.c), the live-object counters (debug.c), the
 * test switches (switches.c) and the host blocks typed reads fill (host_blocks.c). Uses
 * nothing of the C layer but platform.h.
 *
 * The layers, lowest first, each header including the one below:
 *   platform.h         the operating system (platform_posix.c, platform_win32.c)
 *   layer_base.h       this file
 *   layer_object.h     the object header, handle ids, the VN_CALL wrappers, the lock order
 *   layer_device.h     instances, adapters, devices, error scopes, the life lock, waits
 *   layer_resources.h  buffers, shaders, pipelines, bind groups, bound dispatches, the
 *                      fill plan, WGSL diagnostics; interop.c (wgpu-py's objects) beside
 *   layer_work.h       encoding, submitting, replay, readback, transfer, timing
 * (named layer_*, so that no layer header passes for one .c file's own header)
 * A .c file includes its own layer's header only, and uses no name a file of a higher
 * layer defines (scripts/c_deps.py reads both; tests/test_structure.py holds them). */
#ifndef VN_LAYER_BASE_H
#define VN_LAYER_BASE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../platform/platform.h"
#include "../include/vyre_native.h"
#include "webgpu.h"
#include "wgpu.h"

/* ---- the function table (loader.c) --------------------------------------- */

/* Fields typed from the header's own declarations, so a signature change in a new
 * webgpu.h is a compile error here rather than a wrong call at run time. wgpu.h's
 * extensions have no WGPUProc typedefs to use instead, hence __typeof__ (GCC, Clang,
 * MSVC from VS 2022 17.9: see platform.h). */
struct vn_wgpu_table {
#define VN_WGPU_FN(name) __typeof__(wgpu##name) *name;
#include "wgpu_functions.h"
#undef VN_WGPU_FN
};
extern struct vn_wgpu_table wgpu;

/* VN_OK when the library is loaded, else the load's status with its message. */
vn_status vn_require_library(void);

/* library_file.c: true when `path` is a regular file holding a whole shared library of
 * this platform's format and architecture, every segment and header table its header
 * names inside the file (a truncated one would fault inside the system loader);
 * otherwise false with the reason in why. *size gets the file's size (UINT64_MAX when
 * it could not be opened). */
bool vn_library_file_check(const char *path, uint64_t *size, char *why, size_t cap);

/* ---- errors (error.c) ------------------------------------------------------ */

/* Record `code` and a printf-formatted message as this thread's last error and
 * return `code`, so call sites read `return vn_fail(...)`. */
vn_status vn_fail(vn_status code, const char *fmt, ...) VN_PRINTF_LIKE(2, 3);
void vn_clear_error(void);
/* After vn_fail: the failure points at WGSL line and column (vn_last_error_position). */
void vn_set_error_position(uint32_t line, uint32_t column);
/* snprintf for messages: into buf (cap bytes, always terminated), keeping the format's
 * own text (its start, the words around each value, its Fix) whole when the values do
 * not fit: the longest %s values are shortened to "<start>...<end>", each to one common
 * length, just enough. Every message is built by it (vn_fail included). Returns the
 * length written. */
size_t vn_format(char *buf, size_t cap, const char *fmt, ...) VN_PRINTF_LIKE(3, 4);
size_t vn_vformat(char *buf, size_t cap, const char *fmt, va_list args);
/* The decimal text of a + b, exact where the sum passes 2^64 (a message stating a
 * wrapped sum says a wrong value). */
enum { VN_SUM_TEXT = 24 };
const char *vn_sum_text(uint64_t a, uint64_t b, char buf[VN_SUM_TEXT]);
/* VN_ERROR_OUT_OF_MEMORY "could not allocate <what> (<bytes> bytes). Fix: free host
 * memory.": the one message for a host allocation that failed. */
vn_status vn_fail_no_memory(const char *what, size_t bytes);
/* VN_ERROR_INVALID_ARGUMENT "<fn>: <what> is NULL. Fix: pass a result pointer.": the one
 * message for an entry point's NULL out-parameter. */
vn_status vn_null_out(const char *fn, const char *what);
/* Put `prefix` before this thread's last message (keeping its position) and return
 * `code`: "pipeline `main`: " before what a shared helper reported. */
vn_status vn_fail_prefixed(vn_status code, const char *prefix);
/* wgpu's WGPUStringView as a C string into buf (always terminated), a NUL inside it
 * written as U+2400 (SYMBOL FOR NULL). */
void vn_string_view_copy(WGPUStringView view, char *buf, size_t cap);

/* Whether a test switch (vn_test_control, switches.c) is set, and its value; off
 * (0) in production. */
bool vn_test_switch_on(vn_test_switch which);
int vn_test_switch_value(vn_test_switch which);

/* ---- live-object counters (debug.c) ---------------------------------------- */

/* VN_LIVE_<name> for each kind of object_kinds.h. */
enum vn_live_kind {
#define VN_HANDLE_KIND(name, field, what) VN_LIVE_##name,
#define VN_INNER_KIND(name, field) VN_LIVE_##name,
#include "../include/object_kinds.h"
#undef VN_HANDLE_KIND
#undef VN_INNER_KIND
    VN_LIVE_KIND_COUNT
};
void vn_live_add(enum vn_live_kind kind, int64_t delta);
int64_t vn_live_count(enum vn_live_kind kind);

/* wgpu's string view of a terminated C string. */
static inline WGPUStringView vn_sv(const char *s) { WGPUStringView v = {s, WGPU_STRLEN}; return v; }

/* ---- host blocks for typed reads (host_blocks.c) ----------------------------- */

/* Bytes kept for later vn_host_block_take calls (VN_INTROSPECT_HOST_BLOCKS_KEPT_BYTES). */
uint64_t vn_debug_host_blocks_kept_bytes(void);

#endif /* VN_LAYER_BASE_H */
