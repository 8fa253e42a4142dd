/* internal.h - what the C layer's files share: the wgpu-native function table, the
 * object layouts behind the public handles, and the error and refcount helpers. */
#ifndef VN_INTERNAL_H
#define VN_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform.h"
#include "vyre_native.h"
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

/* ---- errors (error.c) ------------------------------------------------------ */

/* Record `code` and a printf-formatted message as this thread's last error and
 * return `code`, so call sites read `return vn_fail(...)`. */
vn_status vn_fail(vn_status code, const char *fmt, ...) VN_PRINTF_LIKE(2, 3);
void vn_clear_error(void);
/* wgpu's WGPUStringView as a C string into buf (always terminated). */
void vn_string_view_copy(WGPUStringView view, char *buf, size_t cap);

/* ---- live-object counters (debug.c) ---------------------------------------- */

enum vn_live_kind {
    VN_LIVE_DEVICE, VN_LIVE_BUFFER, VN_LIVE_SHADER, VN_LIVE_PIPELINE, VN_LIVE_DISPATCH,
    VN_LIVE_BIND_GROUP, VN_LIVE_STAGING, VN_LIVE_RECORDING, VN_LIVE_SEQUENCE, VN_LIVE_SUBMISSION,
    VN_LIVE_PENDING_READ, VN_LIVE_KIND_COUNT
};
void vn_live_add(enum vn_live_kind kind, int64_t delta);
int64_t vn_live_count(enum vn_live_kind kind);

/* ---- device (device.c) ------------------------------------------------------ */

typedef struct vn_staging vn_staging;
typedef struct vn_fence vn_fence;

/* Bumped in the child process after every fork() (device.c registers the handler when
 * the first device is made). A device records the value when it is made; a device
 * whose record differs was inherited across fork(), and nothing may call wgpu-native
 * on it or lock its mutexes in this process. A plain load, no system call. */
extern atomic_uint vn_fork_generation;

struct vn_device {
    atomic_long refs;
    atomic_int closed; /* vn_device_close called: calls fail with VN_ERROR_RELEASED */
    atomic_int lost;   /* destroyed or lost: calls fail with VN_ERROR_DEVICE_LOST */
    unsigned generation; /* vn_fork_generation when made */
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    WGPULimits limits;
    vn_device_info info;
    char lost_reason[512];
    bool timestamps;          /* TimestampQuery enabled */
    /* The queue runs one submission at a time: on a CPU adapter (lavapipe) a submit
     * blocks inside the driver until the earlier work has finished, where no signal can
     * interrupt it, so vn_submit_ready drains the queue first, in time slices. */
    bool serial_submits;
    double timestamp_period;  /* nanoseconds per timestamp tick */

    /* Error scopes are a stack per device: one thread at a time pushes, works and
     * pops, so another thread's error never lands in this thread's scope. */
    vn_mutex scope_lock;

    /* The device's life lock. Submitting to a destroyed device, or reading the
     * mapped range of a buffer it destroyed, aborts the process inside wgpu-native,
     * so every submit and every mapped-range access holds this for reading (after
     * checking the flags) and vn_device_destroy holds it for writing. */
    vn_rwlock submit_lock;

    /* Readback staging buffers kept for reuse (readback.c), and reads released while
     * their copy was in flight: their map callback still points at them, so the device
     * keeps them until it fires and then returns their staging buffers (vn_reads_reap). */
    vn_mutex staging_lock;
    vn_staging *staging_free;
    size_t staging_free_count;
    struct vn_pending_read *abandoned;
    atomic_int abandoned_count;

    /* The process-wide list of devices released with work still running, and the
     * fence that says when that work has finished (device.c). */
    struct vn_device *parked_next;
    struct vn_fence *idle_fence;

    /* Live pipelines, so a buffer's release can purge bind groups naming it. */
    vn_mutex pipelines_lock;
    struct vn_pipeline *pipelines;
};

void vn_device_retain(vn_device *device);
/* A fresh record's refcount (1), locks and live count. */
void vn_device_init_locks(vn_device *device);
void vn_describe_adapter(WGPUAdapter adapter, vn_device_info *out);
/* features.c: the name of a WGPUFeatureName / WGPUNativeFeature, NULL if unknown; and an
 * adapter's features as space-separated names (unknown ones as hex) into out. */
const char *vn_feature_name(uint32_t id);
void vn_describe_features(WGPUAdapter adapter, char *out, size_t capacity);
void vn_device_unref(vn_device *device);
/* Free the devices released while busy whose work has finished, polling them up to
 * wait_s seconds; true when none is left waiting. */
bool vn_devices_reap(double wait_s);
/* True when the device was made before a fork() and this is the child. */
static inline bool vn_inherited(const vn_device *device) {
    return device->generation != atomic_load_explicit(&vn_fork_generation, memory_order_relaxed);
}
/* VN_OK, VN_ERROR_FORKED (inherited across fork), VN_ERROR_RELEASED (closed) or
 * VN_ERROR_DEVICE_LOST, with a message naming `what`. */
vn_status vn_device_check(const vn_device *device, const char *what);
/* The device is lost (wgpu said so in an error or a callback): later calls fail with
 * VN_ERROR_DEVICE_LOST. Takes no lock, so a callback may call it. */
void vn_device_note_lost(vn_device *device, const char *reason);
/* VN_ERROR_OUT_OF_MEMORY, VN_ERROR_DEVICE_LOST or VN_ERROR_INTERNAL when a wgpu error
 * message says so whatever its type, else the status of its WGPUErrorType (Validation:
 * validation_code). */
vn_status vn_error_status(WGPUErrorType type, const char *message, vn_status validation_code);
/* True when a wgpu message says the device is lost ("Parent device is lost"). */
bool vn_message_says_lost(const char *message);

/* Error scopes around a creating or encoding call. vn_scope_begin locks the
 * device's scope lock; vn_scope_end pops, unlocks, and turns a captured error into
 * `validation_code` (VN_ERROR_VALIDATION, or VN_ERROR_SHADER for shader creation),
 * VN_ERROR_OUT_OF_MEMORY or VN_ERROR_INTERNAL, with a message naming `what`, wgpu's
 * own message, and `fix`. */
void vn_scope_begin(vn_device *device);
vn_status vn_scope_end(vn_device *device, const char *what, vn_status validation_code, const char *fix);

/* Poll the device until *flag is set (flag NULL: until all work submitted before the
 * call has finished, through a work-done fence of its own), for at most
 * limit_s seconds (< 0: no limit of its own) and never past one VN_WAIT_SLICE_MS slice:
 * VN_OK once it is, VN_PENDING when the time ran out first, VN_ERROR_DEVICE_LOST when
 * the device is lost and the work did not finish. Adds the time spent to *waited_s (may
 * be NULL). Never blocks inside wgpu-native: the blocking poll has no timeout, so a
 * hung kernel would hold the thread, and a signal, for ever. */
vn_status vn_wait(vn_device *device, atomic_int *flag, double limit_s, double *waited_s);

/* Take the life lock for reading and check the device; on VN_OK the caller
 * submits or reads a mapped range, then calls vn_submit_end. On failure nothing is
 * held. */
vn_status vn_submit_begin(vn_device *device, const char *what);
void vn_submit_end(vn_device *device);
/* Before encoding or submitting anything: VN_OK, or on a device with serial_submits
 * VN_PENDING while earlier work still runs (the caller returns it, to be called again). */
static inline vn_status vn_submit_ready(vn_device *device) {
    return device->serial_submits ? vn_wait(device, NULL, -1.0, NULL) : VN_OK;
}

/* wgpu-native fires AllowProcessEvents callbacks from wgpuInstanceProcessEvents or a
 * device poll: drive both until *flag is set; false after limit_s seconds. */
bool vn_process_until(WGPUInstance instance, WGPUDevice device, atomic_int *flag, double limit_s);


/* ---- buffers (buffer.c) ----------------------------------------------------- */

struct vn_buffer {
    atomic_long refs;
    vn_device *device;
    WGPUBuffer buffer;
    uint64_t byte_len;
    uint64_t allocation_len;
    uint64_t usage;
    uint64_t identity;
    bool adopted;          /* made by another binding (vn_buffer_adopt) */
    atomic_int foreign;    /* vn_foreign_state, for adopted buffers */
};

/* VN_OK, or VN_ERROR_BINDING when one of the buffers is mapped or destroyed by the
 * binding it was adopted from (submitting it would abort the process). */
vn_status vn_buffers_submittable(vn_buffer *const *buffers, size_t count, const char *what);

void vn_buffer_retain(vn_buffer *buffer);
uint64_t vn_next_identity(void);
/* VN_OK or why the buffer cannot be used (device closed or lost). */
vn_status vn_buffer_check(const vn_buffer *buffer, const char *what);

/* ---- readback (readback.c) ---------------------------------------------------- */

/* Copy `nbytes` of `src` (which has COPY_SRC usage and an allocation of at least
 * round_up(nbytes, 4) bytes) into dst, after all work submitted before the call, waiting
 * one time slice at most: VN_OK, or VN_PENDING with *pending the read in flight (finish
 * it with vn_pending_read_finish; NULL pending: it is abandoned). */
vn_status vn_readback(vn_device *device, WGPUBuffer src, uint64_t nbytes, void *dst, vn_pending_read **pending);
/* Queue the copy of `nbytes` of `src` into a staging buffer and its map: a pending read
 * the caller owns (vn_pending_read_release). */
vn_status vn_read_start(vn_device *device, WGPUBuffer src, uint64_t nbytes, vn_pending_read **out);
void vn_staging_free_all(vn_device *device);
/* Return the staging buffers of abandoned reads whose map has completed (all of them
 * when final, leaking any whose callback has not fired: it still points at them). */
void vn_reads_reap(vn_device *device, bool final);

/* GPU timing of one encode: a query set, the passes it times, and where the
 * resolved ticks go. Passes open through vn_begin_pass, which assigns writes. */
typedef struct vn_timing {
    vn_timing_mode mode;
    uint32_t passes;      /* passes the encode will open (counted before encoding) */
    uint32_t next_pass;   /* while encoding */
    uint32_t queries;
    WGPUQuerySet query_set;
    WGPUBuffer resolve;   /* QUERY_RESOLVE | COPY_SRC: read back through vn_readback */
} vn_timing;

/* Begin a compute pass, with timestamp writes when timing (may be NULL) asks. */
WGPUComputePassEncoder vn_begin_pass(WGPUCommandEncoder encoder, vn_timing *timing);
/* Inside a scope: the query set and buffers for `passes` passes (nothing for NONE). */
vn_status vn_timing_prepare(vn_device *device, vn_timing_mode mode, uint32_t passes, vn_timing *timing);
/* After the passes: resolve the queries into the resolve buffer. */
void vn_timing_resolve(vn_timing *timing, WGPUCommandEncoder encoder);
void vn_timing_release(vn_timing *timing);
/* Start reading the resolved timestamps (the copy is queued after the timed submission):
 * a pending read of timing->queries ticks. */
vn_status vn_timing_read_start(vn_device *device, vn_timing *timing, vn_pending_read **out);
/* The ticks read into ns (ns[0] total, ns[1..] per pass in per-dispatch mode; ns holds
 * 1 + passes values); *count gets how many. */
void vn_timing_convert(const vn_device *device, const vn_timing *timing, const uint64_t *ticks, uint64_t *ns,
                       size_t *count);

/* Submit one finished command buffer (holding the submit lock) and track its
 * completion; *out gets a submission the caller owns, which takes over the timing
 * resources (timing may be NULL). Releases cb. */
vn_status vn_submit_tracked(vn_device *device, WGPUCommandBuffer cb, const char *what, vn_timing *timing,
                            vn_submission **out);

/* ---- pipelines and the bind-group cache (pipeline.c, bind_cache.c) ---------- */

struct vn_shader {
    atomic_long refs;
    vn_device *device;
    WGPUShaderModule module;
};

typedef struct vn_binding {
    uint32_t group;
    uint32_t binding;
    vn_binding_kind kind;
    bool preserve;
    uint64_t min_size;
    uint64_t binding_size; /* the layout's minBindingSize: >= min_size */
    char *name;
} vn_binding;

typedef struct vn_bind_cache_entry {
    uint64_t hash;
    uint32_t group;
    uint32_t key_len;   /* number of (identity, size) pairs */
    uint64_t *key;      /* 2 * key_len words */
    WGPUBindGroup bind_group;
    uint64_t last_used;
} vn_bind_cache_entry;

typedef struct vn_bind_cache {
    vn_mutex lock;
    vn_bind_cache_entry *entries;
    uint32_t count;
    uint32_t capacity;
    uint64_t tick;
    uint64_t hits, misses, evictions;
} vn_bind_cache;

struct vn_pipeline {
    atomic_long refs;
    vn_device *device;
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout *layouts;
    uint32_t group_count;       /* highest group + 1; empty groups have layouts too */
    vn_binding *bindings;       /* sorted by (group, binding) */
    size_t binding_count;
    int32_t indirect_binding;
    uint64_t indirect_offset;
    vn_bind_cache cache;
    struct vn_pipeline *next, *prev; /* device->pipelines, under pipelines_lock */
};

void vn_pipeline_retain(vn_pipeline *pipeline);

vn_status vn_bind_cache_init(vn_bind_cache *cache, uint32_t capacity);
void vn_bind_cache_destroy(vn_bind_cache *cache);
/* A bind group for `group` of `pipeline` binding `buffers` (one per entry of the
 * group, in binding order), from the cache or created; the caller gets its own
 * reference. Must run inside vn_scope_begin/end. */
vn_status vn_bind_cache_get(vn_pipeline *pipeline, uint32_t group, vn_buffer *const *buffers,
                            uint32_t count, WGPUBindGroup *out);
/* Drop every cached bind group that binds the buffer of `identity` (on its release). */
void vn_bind_cache_forget(vn_bind_cache *cache, uint64_t identity);
void vn_device_forget_buffer(vn_device *device, uint64_t identity);

/* ---- bound dispatch state (bind.c) -------------------------------------------- */

/* Handles resolved against a pipeline's bindings, validated, with bind groups: all
 * that encoding one dispatch needs. Holds a reference on everything it names. */
typedef struct vn_bound {
    vn_pipeline *pipeline;
    uint32_t group_count;
    WGPUBindGroup *groups;
    size_t buffer_count;
    vn_buffer **buffers;   /* one per binding, binding order */
    size_t output_count;
    vn_buffer **outputs;   /* output order (borrowed from buffers) */
    uint32_t x, y, z;
    vn_buffer *indirect;   /* borrowed from buffers, NULL for a direct dispatch */
    uint64_t indirect_offset;
    bool adopted;          /* some buffer is adopted: check vn_buffers_submittable */
} vn_bound;

vn_status vn_bound_resolve(vn_pipeline *pipeline, vn_buffer *const *inputs, size_t input_count,
                           vn_buffer *const *outputs, size_t output_count, vn_buffer *params,
                           uint32_t x, uint32_t y, uint32_t z, vn_bound *out);
/* Clears of the non-preserved outputs, then one compute pass with the dispatch. */
void vn_bound_encode(const vn_bound *bound, WGPUCommandEncoder encoder, vn_timing *timing);
/* True when encoding the bound dispatch clears at least one output. */
bool vn_bound_clears(const vn_bound *bound);
/* Inside an open compute pass: set pipeline and bind groups where they differ from
 * *state (updated), then dispatch. */
typedef struct vn_pass_state {
    WGPUComputePipeline pipeline;
    WGPUBindGroup groups[8];
} vn_pass_state;
void vn_bound_dispatch_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state);
void vn_bound_encode_clears(const vn_bound *bound, WGPUCommandEncoder encoder);
void vn_bound_release(vn_bound *bound);

/* ---- small helpers ------------------------------------------------------------ */

static inline uint64_t vn_pad4(uint64_t n) { return n == 0 ? 4 : (n + 3) & ~(uint64_t)3; }
static inline WGPUStringView vn_sv(const char *s) { WGPUStringView v = {s, WGPU_STRLEN}; return v; }

#endif /* VN_INTERNAL_H */
