/* vn_introspect.h - part of the public C API: introspection and the test switches.
 * vyre_native.h includes it inside its cdef section, after the parts before it, whose
 * types it uses: include vyre_native.h, never this alone. It holds only what that
 * section may (scripts/ffi_build.py reads it in where it is included): no include guard, no
 * preprocessor line but a table's use. */

/* ---- introspection (csrc/work/introspect.c): for tests, leak hunts, benchmarks ------- */

/* Live native objects of each kind of csrc/include/object_kinds.h, for leak tests. */
typedef struct vn_live_counts {
#define VN_HANDLE_KIND(name, field, what) int64_t field;
#define VN_INNER_KIND(name, field) int64_t field;
#include "object_kinds.h"
#undef VN_HANDLE_KIND
#undef VN_INNER_KIND
} vn_live_counts;

/* What vn_introspect reads: the fields of vn_introspection each one takes and fills.
 * VN_INTROSPECT_LIVE_COUNTS (wait_s -> live): live objects by kind. Devices released
 *   while their work was still running are finished first, waiting up to wait_s
 *   seconds for that work.
 * VN_INTROSPECT_LIVE_IDS (-> live_ids): handle ids live now (csrc/object/object.c): each
 *   creating call's result, each second handle of vn_*_retain_for_watch, until its
 *   release.
 * VN_INTROSPECT_QUEUED_WRITE_BYTES (device -> queued_write_bytes): bytes of buffer.write
 *   queued on the device and not yet sent by a submit (wgpu keeps a staging copy of each
 *   until that submit's work completes); 0 for a handle that is no live device. See
 *   csrc/work/buffer_write.c for the bound a write keeps it under.
 * VN_INTROSPECT_ERROR_STATUS (wgpu_error_type, message -> status): the status a wgpu
 *   error of this WGPUErrorType and message maps to (for tests of the mapping: "Not
 *   enough memory left" is VN_ERROR_OUT_OF_MEMORY whatever its type, "Parent device is
 *   lost" VN_ERROR_DEVICE_LOST; a NULL message is the empty one).
 * VN_INTROSPECT_FILL_WGSL (-> fill_wgsl): the WGSL of the built-in zero fill
 *   (csrc/resources/fill.c) that clears outputs inside the compute pass: entry points fill_words
 *   (array<u32> at @binding(0)) and fill_quads (array<vec4<u32>> at @binding(1), for
 *   sizes that are multiples of 16), both @workgroup_size(256), one dispatch of
 *   min(ceil(elements / 256), 65535) workgroups. For the benchmarks' raw-C floor, which
 *   dispatches the same kernel.
 * VN_INTROSPECT_STACK_THREADS (-> stack_threads): threads made so far in this process to
 *   run compiles on a stack sized for them (csrc/resources/pipeline.c), the kept one included:
 *   compiles one after another reuse one kept thread.
 * VN_INTROSPECT_HOST_BLOCKS_KEPT_BYTES (-> host_blocks_kept_bytes): bytes of host blocks
 *   given back and kept for later typed reads (vn_host_block_take), at most
 *   VN_HOST_BLOCKS_KEPT_BYTES. */
typedef enum vn_introspect_op {
    VN_INTROSPECT_LIVE_COUNTS = 1,
    VN_INTROSPECT_LIVE_IDS = 2,
    VN_INTROSPECT_QUEUED_WRITE_BYTES = 3,
    VN_INTROSPECT_ERROR_STATUS = 4,
    VN_INTROSPECT_FILL_WGSL = 5,
    VN_INTROSPECT_STACK_THREADS = 6,
    VN_INTROSPECT_HOST_BLOCKS_KEPT_BYTES = 7,
} vn_introspect_op;
typedef struct vn_introspection {
    /* what the op reads */
    double wait_s;
    const vn_device *device;
    uint32_t wgpu_error_type;
    const char *message;
    /* what the op fills (the others are left as they were) */
    vn_live_counts live;
    int64_t live_ids;
    uint64_t queued_write_bytes;
    vn_status status;
    const char *fill_wgsl;
    int64_t stack_threads;
    uint64_t host_blocks_kept_bytes;
} vn_introspection;
/* Read what `op` names into *io: VN_OK, or VN_ERROR_INVALID_ARGUMENT for an op that
 * does not exist or a NULL io. The one door to what the C layer shows of its insides:
 * read-only, beside the API (vyre_native.debug hands out its functions). */
vn_status vn_introspect(vn_introspect_op op, vn_introspection *io);
/* ---- test switches (csrc/base/switches.c): for the project's tests, not the API ----- */

/* Behaviour a test needs that no real adapter shows on demand, as SQLite's
 * sqlite3_test_control is: one door, switches off (0) unless a test sets them.
 * VN_TEST_SPLIT_SUBMITS_EVERYWHERE 1: split long untimed sequence replays into several
 * submits on every adapter, CPU adapters included (there each submit waits inside the
 * driver for the one before); 0: only where submits do not wait.
 * VN_TEST_REFUSE_NEW_INSTANCES 1: every new instance vn_device_create and
 * vn_enumerate_adapters make offers no adapter, as a driver does that refuses new
 * instances after a number of them (NVIDIA's on the H200 machine: 30 a process); the
 * reserve instance (instances.c) must take over.
 * VN_TEST_COMPILE_STACK_KIB n > 0: vn_shader_create compiles on a stack of n KiB, not
 * vn_wgsl_compile_stack's (to measure how much stack each shape of WGSL needs; too
 * small a stack crashes the process, so only a child process should set it); 0: the
 * computed size.
 * VN_TEST_BREAK_LOCK_ORDER 1: vn_sequence_length takes the sequence's lock (rank 1)
 * under its device's pipelines lock (rank 4), against the lock order, so the lock-order
 * check must abort the process (only a child process should set it); refused, -1 with
 * VN_ERROR_UNSUPPORTED, in a build without the check (VN_LOCK_RANK_CHECK).
 * VN_TEST_DRIVER_CANNOT_FORK 1: every adapter described from now on counts as one whose
 * driver never starts again in a fork() child (NVIDIA's), so the refusal of a later
 * fork child's vn.Device() and adapter listing runs on any adapter. */
typedef enum vn_test_switch {
    VN_TEST_SPLIT_SUBMITS_EVERYWHERE = 1,
    VN_TEST_REFUSE_NEW_INSTANCES = 2,
    VN_TEST_COMPILE_STACK_KIB = 3,
    VN_TEST_BREAK_LOCK_ORDER = 4,
    VN_TEST_DRIVER_CANNOT_FORK = 5,
} vn_test_switch;
/* Set switch `which` to `value` (0 or 1; any value >= 0 for VN_TEST_COMPILE_STACK_KIB)
 * and return its value before; -1 for a switch or value that does not exist
 * (vn_last_error says why). */
int vn_test_control(vn_test_switch which, int value);
