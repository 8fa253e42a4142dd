/* vyre_native.h - the public C API of vyre_native.
 *
 * This is the only place C signatures are written for Python: the build reads the
 * text between the VN_CDEF markers into cffi's cdef as-is (csrc/ffi_build.py).
 * So that section holds nothing cffi cannot parse: no preprocessor lines, no
 * includes, only fixed-width integer types.
 *
 * Conventions (as SQLite's): every function that can fail returns a vn_status;
 * the message of the last failure on the calling thread is vn_last_error(), of the
 * form "<what happened, with values>. Fix: <remedy>". Handles are opaque,
 * reference-counted objects; *_release drops the caller's reference, and an object
 * stays alive while anything recorded on it still needs it. No function aborts
 * the process on bad input.
 */
#ifndef VYRE_NATIVE_H
#define VYRE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* VN_CDEF_BEGIN */

/* Stable status codes: a code never changes meaning (vyre_native/errors.py maps them). */
typedef enum vn_status {
    VN_OK = 0,
    VN_ERROR_INVALID_ARGUMENT = 1,  /* a value out of range or malformed */
    VN_ERROR_ALREADY_SUBMITTED = 2, /* a single-submit recording replayed twice */
    VN_ERROR_BINDING = 3,           /* handles do not match the pipeline's bindings */
    VN_ERROR_VALIDATION = 4,        /* wgpu-native reported a validation error */
    VN_ERROR_SHADER = 5,            /* WGSL that does not compile */
    VN_ERROR_OUT_OF_MEMORY = 6,     /* a GPU or host allocation failed */
    VN_ERROR_OUTPUT_INDEX = 7,      /* an output index out of range */
    VN_ERROR_RELEASED = 8,          /* a handle used after release or close */
    VN_ERROR_DEVICE_LOST = 9,       /* the device was lost or destroyed */
    VN_ERROR_LIBRARY = 10,          /* wgpu-native missing or of another version */
    VN_ERROR_NOT_SUBMITTED = 11,    /* output read before the recording was replayed */
    VN_ERROR_TIMEOUT = 12,          /* a wait ran past its timeout */
    VN_ERROR_INTERNAL = 13,         /* an unexpected failure */
    VN_ERROR_WRONG_TYPE = 14,       /* an argument of the wrong type */
    VN_ERROR_FORKED = 15,           /* an object inherited across fork(): unusable in the child */
    /* Not a failure: a blocking call waited one time slice (VN_WAIT_SLICE_MS) and the
     * work is not done yet. Call it again (with the same arguments) to keep waiting;
     * returning in between lets the caller notice a signal (Python: KeyboardInterrupt). */
    VN_PENDING = 16
} vn_status;

/* Bounds of one call. */
typedef enum vn_bounds {
    /* Steps one call encodes into one command buffer (launches of a recording; n * steps
     * for a sequence replayed n > 1 times; the items' steps for a batch of more than one
     * item): each holds encoder memory until the GPU has run it, so a larger count is
     * VN_ERROR_INVALID_ARGUMENT. */
    VN_MAX_LAUNCHES_PER_SUBMIT = 256,
    /* The longest a blocking call waits before it returns VN_PENDING. */
    VN_WAIT_SLICE_MS = 20
} vn_bounds;

typedef struct vn_device vn_device;
typedef struct vn_buffer vn_buffer;
typedef struct vn_shader vn_shader;
typedef struct vn_pipeline vn_pipeline;
typedef struct vn_dispatch vn_dispatch;
typedef struct vn_pending_read vn_pending_read;

/* The message of the last failure on this thread ("" when none). */
const char *vn_last_error(void);

/* ---- library (csrc/loader.c) ---------------------------------------------- */

/* Load wgpu-native from `path` once per process and check its version against
 * the headers compiled in. Later calls with any path return the first result. */
vn_status vn_library_load(const char *path);
/* wgpuGetVersion() of the loaded library, 0 when none is loaded. */
uint32_t vn_library_version(void);
/* The version the headers were compiled for, encoded as wgpuGetVersion encodes. */
uint32_t vn_expected_version(void);

/* ---- device (csrc/device.c) ----------------------------------------------- */

/* Devices belong to the process that made them. In a child after fork(), every call
 * on an inherited device or anything made from it fails with VN_ERROR_FORKED, and
 * releasing one only forgets it: wgpu-native's device cannot be used, or destroyed,
 * across fork() (its driver threads stay in the parent). */

typedef enum vn_power_preference {
    VN_POWER_DEFAULT = 0,
    VN_POWER_LOW = 1,
    VN_POWER_HIGH = 2
} vn_power_preference;

typedef struct vn_device_info {
    char name[256];
    char vendor[256];
    char backend[32];
    char adapter_type[32];
    char driver[256];
    uint32_t vendor_id;
    uint32_t device_id;
    /* The adapter's features, space-separated, in WebGPU's spelling ("shader-f16",
     * "timestamp-query") and wgpu-py's for wgpu-native's own ("subgroup", "shader-f64"). */
    char features[2048];
} vn_device_info;

/* The device's limits that matter for compute (the adapter's own limits). */
typedef struct vn_limits {
    uint64_t max_buffer_size;
    uint64_t max_storage_buffer_binding_size;
    uint64_t max_uniform_buffer_binding_size;
    uint32_t max_bind_groups;
    uint32_t max_bindings_per_bind_group;
    uint32_t max_storage_buffers_per_shader_stage;
    uint32_t max_uniform_buffers_per_shader_stage;
    uint32_t min_storage_buffer_offset_alignment;
    uint32_t min_uniform_buffer_offset_alignment;
    uint32_t max_compute_workgroup_storage_size;
    uint32_t max_compute_invocations_per_workgroup;
    uint32_t max_compute_workgroup_size_x;
    uint32_t max_compute_workgroup_size_y;
    uint32_t max_compute_workgroup_size_z;
    uint32_t max_compute_workgroups_per_dimension;
} vn_limits;

/* backend: NULL for the platform's primary backends (Vulkan, Metal, DX12; never wgpu's
 * OpenGL fallback unless named), or one of "vulkan", "metal", "dx12" ("d3d12"), "gl"
 * ("opengl"), any case; anything else is VN_ERROR_INVALID_ARGUMENT naming the choices.
 * adapter_index < 0: the default adapter of those backends for power_preference;
 * otherwise the adapter at that index of vn_enumerate_adapters(backend) (power_preference
 * ignored). */
vn_status vn_device_create(vn_power_preference power_preference, int32_t adapter_index, const char *backend,
                           vn_device **out);
/* Describe up to `capacity` adapters of `backend` (as for vn_device_create) into out;
 * *count gets how many exist. */
vn_status vn_enumerate_adapters(const char *backend, vn_device_info *out, size_t capacity, size_t *count);
vn_status vn_device_get_info(const vn_device *device, vn_device_info *out);
vn_status vn_device_get_limits(const vn_device *device, vn_limits *out);
/* 1 when the device can time GPU work (timestamp queries), else 0. */
int vn_device_has_timestamps(const vn_device *device);
/* Wait (GIL released by cffi) until all submitted work has finished: VN_OK, or
 * VN_PENDING after one time slice (call again). */
vn_status vn_device_wait_idle(vn_device *device);
/* Destroy the GPU device now (as a lost device): every later call on it, or on
 * anything made from it, fails with VN_ERROR_DEVICE_LOST. */
vn_status vn_device_destroy(vn_device *device);
/* Mark closed: later calls on it and on everything made from it fail with
 * VN_ERROR_RELEASED. Does not drop the caller's reference (vn_device_release does),
 * so a thread still inside a call on the device never sees it freed. */
void vn_device_close(vn_device *device);
/* Drop the caller's reference. Never waits: the last reference to a device whose
 * submitted work is still running parks it, and the next vn_device_create (or
 * vn_debug_live_counts) frees it once that work is done. */
void vn_device_release(vn_device *device);

/* ---- buffers (csrc/buffer.c) ---------------------------------------------- */

/* WGPUBufferUsage bits, mirrored by vyre_native.BufferUsage. */
typedef enum vn_buffer_usage {
    VN_USAGE_MAP_READ = 0x1,
    VN_USAGE_MAP_WRITE = 0x2,
    VN_USAGE_COPY_SRC = 0x4,
    VN_USAGE_COPY_DST = 0x8,
    VN_USAGE_INDEX = 0x10,
    VN_USAGE_VERTEX = 0x20,
    VN_USAGE_UNIFORM = 0x40,
    VN_USAGE_STORAGE = 0x80,
    VN_USAGE_INDIRECT = 0x100,
    VN_USAGE_QUERY_RESOLVE = 0x200,
    /* STORAGE|UNIFORM|INDIRECT|COPY_SRC|COPY_DST: serves as any binding, copies both ways */
    VN_USAGE_DEFAULT = 0x1cc
} vn_buffer_usage;

typedef struct vn_buffer_desc {
    uint64_t byte_len;           /* bytes the caller asked for */
    uint64_t allocation_len;     /* byte_len padded to 4, at least 4 */
    uint64_t usage;              /* WGPUBufferUsage bits */
    uint64_t allocation_identity;/* monotonic per process, never reused */
} vn_buffer_desc;

/* A buffer of byte_len bytes; when data is not NULL its first byte_len bytes are
 * the initial contents (copied through a mapping at creation), else zeros. */
vn_status vn_buffer_create(vn_device *device, uint64_t byte_len, uint64_t usage,
                           const void *data, vn_buffer **out);
vn_status vn_buffer_describe(const vn_buffer *buffer, vn_buffer_desc *out);
/* Queue a write of nbytes at offset (both 4-aligned, or the write ends the buffer). */
vn_status vn_buffer_write(vn_buffer *buffer, uint64_t offset, const void *data, uint64_t nbytes);
/* Copy the buffer's byte_len bytes into dst (capacity >= byte_len), after all
 * work submitted before the call. When the work is not done within one time slice,
 * returns VN_PENDING with *pending set to the read in flight: finish it with
 * vn_pending_read_finish(*pending, dst, capacity) (VN_PENDING again means call again)
 * and release it with vn_pending_read_release. VN_PENDING with *pending NULL: the read
 * has not started (a CPU adapter's queue runs one submission at a time, and earlier
 * work is still running): call vn_buffer_read again. pending may be NULL only when the
 * caller accepts VN_PENDING as a failure (a read in flight is then abandoned). */
vn_status vn_buffer_read(vn_buffer *buffer, void *dst, uint64_t capacity, vn_pending_read **pending);
void vn_buffer_release(vn_buffer *buffer);

/* ---- shaders and pipelines (csrc/pipeline.c) ------------------------------ */

vn_status vn_shader_create(vn_device *device, const char *wgsl, size_t wgsl_len, vn_shader **out);
void vn_shader_release(vn_shader *shader);

typedef enum vn_binding_kind {
    VN_BINDING_STORAGE_READ = 0,
    VN_BINDING_STORAGE_READ_WRITE = 1,
    VN_BINDING_UNIFORM = 2
} vn_binding_kind;

/* One buffer binding, as reflected from the WGSL (vyre_native/reflect.py). */
typedef struct vn_binding_desc {
    uint32_t group;
    uint32_t binding;
    vn_binding_kind kind;
    uint32_t preserve;   /* read_write binding kept as in/out state: never cleared */
    uint64_t min_size;   /* bytes the declared type needs */
    uint64_t binding_size; /* bytes wgpu requires (a runtime array counts one element) */
    const char *name;
} vn_binding_desc;

typedef struct vn_constant {
    const char *name;    /* a WGSL `override` name */
    double value;
} vn_constant;

typedef struct vn_pipeline_desc {
    const char *entry_point;
    const vn_binding_desc *bindings;  /* sorted by (group, binding) */
    size_t binding_count;
    const vn_constant *constants;
    size_t constant_count;
    int32_t indirect_binding;         /* index into bindings of the indirect-args buffer, -1: none */
    uint64_t indirect_offset;         /* byte offset of the three u32 counts */
    uint32_t cache_capacity;          /* bind-group LRU entries, 0: 256 */
    /* @workgroup_size after overrides (reflected), 0 0 0 when unknown: checked against the
     * device's limits, which wgpu-native 29 does not do for sizes set by an override (on
     * NVIDIA such a pipeline faults the GPU and loses the device). */
    uint32_t workgroup_size[3];
} vn_pipeline_desc;

vn_status vn_pipeline_create(vn_device *device, vn_shader *shader, const vn_pipeline_desc *desc,
                             vn_pipeline **out);

typedef struct vn_cache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions;
    uint64_t entries;
    uint64_t capacity;
} vn_cache_stats;

vn_status vn_pipeline_cache_stats(const vn_pipeline *pipeline, vn_cache_stats *out);
void vn_pipeline_release(vn_pipeline *pipeline);

/* ---- pre-recorded dispatches (csrc/record.c, csrc/readback.c) ------------- */

/* Resolve handles against the pipeline's bindings (outputs take the next output,
 * the first uniform takes params when not NULL, everything else the next input),
 * validate each, take bind groups from the pipeline's cache, and encode: clears
 * of non-preserved outputs, one compute pass, a direct or indirect dispatch. */
vn_status vn_dispatch_record(vn_pipeline *pipeline,
                             vn_buffer *const *inputs, size_t input_count,
                             vn_buffer *const *outputs, size_t output_count,
                             vn_buffer *params,
                             uint32_t x, uint32_t y, uint32_t z,
                             vn_dispatch **out);
/* Submit the recorded command buffer; exactly one call ever succeeds. */
vn_status vn_dispatch_replay(vn_dispatch *dispatch, uint64_t *submission_index);
size_t vn_dispatch_output_count(const vn_dispatch *dispatch);
/* The output's byte_len, or VN_ERROR_OUTPUT_INDEX. */
vn_status vn_dispatch_output_len(const vn_dispatch *dispatch, int64_t index, uint64_t *out);
/* Start reading output `index` (after the same checks as vn_dispatch_read_output). */
vn_status vn_dispatch_read_output_async(vn_dispatch *dispatch, int64_t index, vn_pending_read **out);
/* Copy output `index` (its byte_len bytes) into dst once this recording's own
 * submission has completed; *written gets the byte count. VN_PENDING and *pending
 * as for vn_buffer_read. */
vn_status vn_dispatch_read_output(vn_dispatch *dispatch, int64_t index, void *dst,
                                  uint64_t capacity, uint64_t *written, vn_pending_read **pending);
void vn_dispatch_release(vn_dispatch *dispatch);

/* ---- interop with wgpu-py in the same process (csrc/interop.c) ---------------- */

/* Wrap objects another binding of the same wgpu-native library made (wgpu-py):
 * each takes a reference of its own (AddRef), released with the vn object. The
 * handles are the WGPU* pointers as integers. */
vn_status vn_device_adopt(uintptr_t instance, uintptr_t adapter, uintptr_t device, uintptr_t queue, vn_device **out);
vn_status vn_buffer_adopt(vn_device *device, uintptr_t buffer, vn_buffer **out);
/* The buffer's WGPUBuffer with one new reference, which the caller must release. */
vn_status vn_buffer_export(vn_buffer *buffer, uintptr_t *out);
/* What the other binding did to an adopted buffer: wgpu-native aborts the process
 * on submitting work that uses a mapped or destroyed buffer, so the Python side
 * reports its owner's map, unmap and destroy here, and every submit that would use
 * such a buffer fails with VN_ERROR_BINDING instead. */
typedef enum vn_foreign_state {
    VN_FOREIGN_USABLE = 0,
    VN_FOREIGN_MAPPED = 1,
    VN_FOREIGN_DESTROYED = 2
} vn_foreign_state;
void vn_buffer_set_foreign_state(vn_buffer *buffer, vn_foreign_state state);
/* One more reference, for the watcher that reports the owner's calls. */
void vn_buffer_retain_for_watch(vn_buffer *buffer);
void vn_device_retain_for_watch(vn_device *device);
/* The adopted device's owner is about to destroy it: later calls fail with
 * VN_ERROR_DEVICE_LOST, and no submit of ours is in flight when this returns. */
void vn_device_mark_lost(vn_device *device, const char *reason);

/* ---- submissions (csrc/submission.c) ----------------------------------------- */

typedef struct vn_submission vn_submission;

/* Timing modes of a replay or submit, where the device has timestamp queries. */
typedef enum vn_timing_mode {
    VN_TIMING_NONE = 0,
    VN_TIMING_TOTAL = 1,        /* GPU time from the first pass's start to the last's end */
    VN_TIMING_PER_DISPATCH = 2  /* each dispatch in its own pass, timed on its own */
} vn_timing_mode;

/* The queue submission index. */
uint64_t vn_submission_index(const vn_submission *submission);
/* GPU times in nanoseconds, after waiting for the work: out[0] is the total, and in
 * VN_TIMING_PER_DISPATCH mode out[1..] each dispatch's time. *count gets how many
 * values exist (0 when the submission was not timed). VN_PENDING: call again. */
vn_status vn_submission_gpu_times(vn_submission *submission, uint64_t *out, size_t capacity, size_t *count);
/* 1 when the submission's work has completed, 0 when not yet (never blocks); minus a
 * status (vn_last_error says why) when it never will here: -VN_ERROR_DEVICE_LOST, or
 * -VN_ERROR_FORKED for a submission inherited across fork(). */
int vn_submission_done(vn_submission *submission);
/* Wait (GIL released) until the work completes, for at most one time slice: VN_OK,
 * or VN_PENDING (call again). timeout_s < 0 waits without limit; otherwise *waited_s
 * (0 before the first call) accumulates the time waited across calls, and the call
 * that takes it to timeout_s fails with VN_ERROR_TIMEOUT (the work keeps running). */
vn_status vn_submission_wait(vn_submission *submission, double timeout_s, double *waited_s);
void vn_submission_release(vn_submission *submission);

/* ---- replayable recordings and sequences (csrc/replay.c) --------------------- */

typedef struct vn_recording vn_recording;
typedef struct vn_sequence vn_sequence;

/* Same binding rules, checks and clears as vn_dispatch_record, but nothing is
 * encoded yet: each replay re-encodes from the held pipeline and bind groups,
 * inside error scopes, and submits only a cleanly encoded command buffer. */
vn_status vn_recording_create(vn_pipeline *pipeline,
                              vn_buffer *const *inputs, size_t input_count,
                              vn_buffer *const *outputs, size_t output_count,
                              vn_buffer *params,
                              uint32_t x, uint32_t y, uint32_t z,
                              vn_recording **out);
/* Encode n launches (1..VN_MAX_LAUNCHES_PER_SUBMIT) into one command buffer and submit
 * it once. Without outputs to clear the n dispatches share one compute pass; otherwise
 * each launch is its clears then its pass. */
vn_status vn_recording_replay(vn_recording *recording, uint32_t n, vn_timing_mode timing, vn_submission **out);
size_t vn_recording_output_count(const vn_recording *recording);
/* The output buffer (a new reference for the caller), or VN_ERROR_OUTPUT_INDEX. */
vn_status vn_recording_output(const vn_recording *recording, int64_t index, vn_buffer **out);
void vn_recording_release(vn_recording *recording);

vn_status vn_sequence_create(vn_device *device, vn_sequence **out);
/* Append a dispatch. clear_outputs: clear its non-preserved outputs right before
 * it (as a recording does); 0 leaves them as the previous steps left them. */
vn_status vn_sequence_add(vn_sequence *sequence, vn_pipeline *pipeline,
                          vn_buffer *const *inputs, size_t input_count,
                          vn_buffer *const *outputs, size_t output_count,
                          vn_buffer *params, uint32_t x, uint32_t y, uint32_t z,
                          int clear_outputs);
/* Append a GPU copy of nbytes (UINT64_MAX: as much as fits from the offsets). */
vn_status vn_sequence_copy(vn_sequence *sequence, vn_buffer *src, vn_buffer *dst, uint64_t nbytes,
                           uint64_t src_offset, uint64_t dst_offset);
/* Append a clear of the whole buffer to zero. */
vn_status vn_sequence_clear(vn_sequence *sequence, vn_buffer *buffer);
size_t vn_sequence_length(const vn_sequence *sequence);
/* Encode every step n times into one command buffer (consecutive dispatches share
 * a compute pass) and submit it once; n > 1 needs n * steps <= VN_MAX_LAUNCHES_PER_SUBMIT. */
vn_status vn_sequence_replay(vn_sequence *sequence, uint32_t n, vn_timing_mode timing, vn_submission **out);
void vn_sequence_release(vn_sequence *sequence);

/* One item of a batch submit: exactly one of the two is set. */
typedef struct vn_work {
    vn_recording *recording;
    vn_sequence *sequence;
} vn_work;

/* Encode every item once, in order, into one command buffer; one queue submit. More
 * than one item: at most VN_MAX_LAUNCHES_PER_SUBMIT steps in all (a recording is one
 * step, a sequence its length). */
vn_status vn_device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                           vn_submission **out);

/* ---- asynchronous readback (csrc/readback.c) -------------------------------- */

/* Queue a copy of the buffer's bytes into a staging buffer from the device's ring
 * and return at once; many may be in flight. VN_PENDING (*out NULL): a CPU adapter's
 * queue still runs earlier work, and submitting now would block inside the driver;
 * call again. The same holds for every replay and submit on such a device. */
vn_status vn_buffer_read_async(vn_buffer *buffer, vn_pending_read **out);
uint64_t vn_pending_read_len(const vn_pending_read *read);
/* Wait for the copy, then copy byte_len bytes into dst (capacity >= byte_len).
 * VN_PENDING: one time slice passed first, nothing was copied; call again. A read can
 * be finished once; later calls fail with VN_ERROR_ALREADY_SUBMITTED. */
vn_status vn_pending_read_finish(vn_pending_read *read, void *dst, uint64_t capacity);
/* Wait for the read and map it: *data points at its byte_len bytes until
 * vn_pending_read_unmap, which must follow (the device's destruction waits for it).
 * Lets a caller copy once, straight into an object of its own. Completes the read.
 * VN_PENDING as for vn_pending_read_finish. */
vn_status vn_pending_read_map(vn_pending_read *read, const void **data);
void vn_pending_read_unmap(vn_pending_read *read);
/* Release without waiting: a read still in flight is handed to its device, which
 * returns its staging buffer once the copy completes (at a later poll). */
void vn_pending_read_release(vn_pending_read *read);

/* ---- introspection (csrc/debug.c) ------------------------------------------ */

/* Live native objects of each kind, for leak tests. */
typedef struct vn_live_counts {
    int64_t devices;
    int64_t buffers;
    int64_t shaders;
    int64_t pipelines;
    int64_t dispatches;
    int64_t bind_groups;
    int64_t staging_buffers;
    int64_t recordings;
    int64_t sequences;
    int64_t submissions;
    int64_t pending_reads;
} vn_live_counts;

/* Live objects by kind. Devices released while their work was still running are
 * finished first, waiting up to wait_s seconds for that work. */
void vn_debug_live_counts(vn_live_counts *out, double wait_s);
/* The status a wgpu error of this WGPUErrorType and message maps to (for tests of the
 * mapping: "Not enough memory left" is VN_ERROR_OUT_OF_MEMORY whatever its type,
 * "Parent device is lost" VN_ERROR_DEVICE_LOST). */
vn_status vn_debug_error_status(uint32_t wgpu_error_type, const char *message);

/* VN_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* VYRE_NATIVE_H */
