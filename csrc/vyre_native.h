/* vyre_native.h - the public C API of vyre_native.
 *
 * This is the only place C signatures are written for Python: the build reads the
 * text between the VN_CDEF markers into cffi's cdef (csrc/ffi_build.py), as-is but
 * for the X-macro tables it includes, which ffi_build.py writes out as the preprocessor
 * would (`#define M(...) ...`, `#include "table.h"`, `#undef M`: one table, written
 * once, for C and for cffi). So that section holds nothing else cffi cannot parse: no
 * other preprocessor lines or includes, only fixed-width integer types.
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

/* Stable status codes: their one table is csrc/status_codes.h. */
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

/* ---- library (csrc/loader.c) ---------------------------------------------- */

/* Load wgpu-native from `path` once per process and check its version against
 * the headers compiled in. Later calls with any path return the first result. */
vn_status vn_library_load(const char *path);
/* The process is exiting (Python's atexit calls it, before any C exit handler runs):
 * from now on a call that would start the GPU driver (device creation, adapter listing)
 * never returns, and this waits up to 10 s for those in flight, so that the driver's own
 * exit handlers never run under one (csrc/object.c). */
void vn_process_exiting(void);
/* wgpuGetVersion() of the loaded library, 0 when none is loaded. */
uint32_t vn_library_version(void);
/* The version the headers were compiled for, encoded as wgpuGetVersion encodes. */
uint32_t vn_expected_version(void);
/* The pip requirement of the wgpu package those headers came from, as pyproject.toml
 * pins it ("wgpu==X.Y.Z"): what every message that says what to install names. */
const char *vn_wgpu_requirement(void);

/* ---- log (csrc/log.c) ------------------------------------------------------ */

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

/* ---- device (csrc/device.c) ----------------------------------------------- */

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
    /* What wgpu-native does not say, from the Vulkan loader (csrc/adapter_identity.c);
     * "" where unknown: the deviceUUID as 8-4-4-4-12 hex (NVIDIA's is the GPU's UUID,
     * "GPU-<uuid>" in nvidia-smi), and the PCI address "dddd:bb:dd.f". */
    char uuid[40];
    char pci_bus[16];
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
    uint32_t max_immediate_size;    /* bytes of var<immediate> data; 0 without the feature */
} vn_limits;

/* backend: NULL for the platform's primary backends (Vulkan, Metal, DX12; never wgpu's
 * OpenGL fallback unless named), or one of "vulkan", "metal", "dx12" ("d3d12"), "gl"
 * ("opengl"), any case; anything else is VN_ERROR_INVALID_ARGUMENT naming the choices.
 * adapter_index < 0: the default adapter of those backends for power_preference;
 * otherwise the adapter at that index of vn_enumerate_adapters(backend) (power_preference
 * ignored). */
vn_status vn_device_create(vn_power_preference power_preference, int32_t adapter_index, const char *backend,
                           const char *required_features, vn_device **out);
/* The device's features as space-separated names (see vn_device_info.features). Every
 * device requests the compute features its adapter offers (shader-f16, subgroups,
 * subgroup, subgroup-barrier, shader-f64, shader-int64, shader-float32-atomic, the int64
 * atomics, timestamp-query, immediates, pipeline-cache) plus required_features (the same
 * names, space-separated; NULL for none): an unknown name is VN_ERROR_INVALID_ARGUMENT, one
 * the adapter lacks VN_ERROR_UNSUPPORTED naming every missing one. */
vn_status vn_device_get_features(const vn_device *device, char *out, size_t capacity);
/* Describe up to `capacity` adapters of `backend` (as for vn_device_create) into out;
 * *count gets how many exist. */
vn_status vn_enumerate_adapters(const char *backend, vn_device_info *out, size_t capacity, size_t *count);
vn_status vn_device_get_info(const vn_device *device, vn_device_info *out);
/* The adapter to use among `adapters` (count of them, as vn_enumerate_adapters lists
 * them) into *index; -1 for the default adapter. `wanted` (not NULL): the one whose uuid
 * (with or without "GPU-", or a unique prefix) or PCI address ("0000:3b:00.0" or
 * "3b:00.0") it is. NULL: the first GPU that CUDA_VISIBLE_DEVICES (NVIDIA: indices in
 * PCI order, or GPU-<uuid>), ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (AMD, indices;
 * HIP's within ROCR's) or ZE_AFFINITY_MASK (Intel, indices) names; where those that are
 * set name none, but hide some of their vendor's adapters, the first adapter not
 * hidden; -1 where nothing is named or hidden. An entry that matches no adapter, and
 * variables that leave none, are VN_ERROR_INVALID_ARGUMENT naming the variable, its
 * value and the adapters seen. */
vn_status vn_adapter_choose(const vn_device_info *adapters, size_t count, const char *wanted, int32_t *index);
/* 1 when any variable vn_adapter_choose reads is set, else 0. */
int vn_assigned_by_environment(void);
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
 * VN_INTROSPECT_LIVE_COUNTS) frees it once that work is done. */
void vn_device_release(vn_device *device);

/* ---- buffers (csrc/buffer.c; their reads: csrc/readback.c) ---------------- */

/* WGPUBufferUsage bits, their one table csrc/usage_bits.h; mirrored by
 * vyre_native.BufferUsage. */
typedef enum vn_buffer_usage {
#define VN_USAGE(name, bit) VN_USAGE_##name = bit,
#include "usage_bits.h"
#undef VN_USAGE
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
/* A byte range of a buffer: what binds, copies, clears and reads take wherever they
 * take a buffer. Either size bytes from offset (to_end 0: size is a count like any
 * other, checked as given, at least 1), or, with to_end set, everything from offset to
 * the end of the buffer (size must then be 0): a whole buffer is {buffer, 0, 0, 1}. "To
 * the end" is the flag alone; no value of size means it, so a caller's size is never
 * taken for another. Every function that takes one checks it (vn_view_check's rules) and
 * holds a reference on the buffer for the call; what it records keeps one. */
typedef struct vn_view {
    vn_buffer *buffer;
    uint64_t offset;
    uint64_t size;
    uint32_t to_end;
} vn_view;

/* The rules of a view, checked wherever one is taken: a live buffer; offset within
 * byte_len, and offset + size too (else VN_ERROR_INVALID_ARGUMENT naming both); a size of
 * at least 1 unless to_end (a to_end view of an empty rest is empty), and of 0 with it.
 * Any byte offset and size: writes, reads and copies are byte-exact. *resolved gets the
 * offset and the size in bytes, to_end 0 (the rest resolved to its size); resolved may
 * be NULL. Binding a view also
 * needs the device's min_storage_buffer_offset_alignment /
 * min_uniform_buffer_offset_alignment, and a storage binding a size in whole 4-byte words
 * unless the view ends the buffer (see vn_dispatch_args). */
vn_status vn_view_check(const vn_view *view, vn_view *resolved);
/* Queue a write of nbytes at offset into the view, at any byte offset and size; the
 * write must lie inside the view. It lands before any later submit and after every
 * earlier one; no other byte changes. Whole words go in with wgpuQueueWriteBuffer; a
 * partial head or tail word is merged on the queue by a tiny dispatch (one submit; the
 * buffer then needs COPY_SRC, except for a tail that ends the buffer), and on a CPU
 * adapter whose queue is busy that returns VN_PENDING before anything is queued: call
 * again. */
vn_status vn_view_write(const vn_view *view, uint64_t offset, const void *data, uint64_t nbytes);
/* Copy the view's bytes into dst (capacity >= its size), after all work submitted
 * before the call. Only the view's range is copied off the GPU. When the work is not
 * done within one time slice, returns VN_PENDING with *pending set to the read in
 * flight: finish it with vn_pending_read_finish(*pending, dst, capacity) (VN_PENDING
 * again means call again) and release it with vn_pending_read_release. VN_PENDING with
 * *pending NULL: the read has not started (a CPU adapter's queue runs one submission at
 * a time, and earlier work is still running): call vn_view_read again. pending may be
 * NULL only when the caller takes VN_PENDING as a failure (the read in flight is then
 * dropped, without waiting). */
vn_status vn_view_read(const vn_view *view, void *dst, uint64_t capacity, vn_pending_read **pending);
/* The whole-buffer forms of vn_view_write and vn_view_read. */
vn_status vn_buffer_write(vn_buffer *buffer, uint64_t offset, const void *data, uint64_t nbytes);
vn_status vn_buffer_read(vn_buffer *buffer, void *dst, uint64_t capacity, vn_pending_read **pending);
void vn_buffer_release(vn_buffer *buffer);
/* Queue a copy of *nbytes (nbytes NULL: as much as fits from the offsets; any count, 0
 * and UINT64_MAX included, is checked as the count it is) from src_offset into the src
 * view to dst_offset into the dst view, both buffers of `device`, at any byte range,
 * ordered on the queue as a submit is; no other byte of dst changes. Where both
 * sit at the same offset within their words the whole words are one GPU copy and a
 * partial head or tail word is merged by a tiny dispatch; otherwise (or within one
 * buffer, where overlapping ranges copy as memmove does) every word goes through a
 * temporary buffer and that dispatch, 4 MiB at a time. A merged word needs COPY_SRC on
 * dst. VN_PENDING as vn_view_write. */
vn_status vn_device_copy(vn_device *device, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                         uint64_t src_offset, uint64_t dst_offset);
/* vn_device_copy's checks alone, for a copy between two devices through the host (src
 * or dst belongs to `device`): *resolved gets the byte count. */
vn_status vn_device_copy_check(vn_device *device, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                               uint64_t src_offset, uint64_t dst_offset, uint64_t *resolved);

/* ---- shaders and pipelines (csrc/pipeline.c) ------------------------------ */

/* The runtime checks naga compiles into a shader (wgpu's ShaderRuntimeChecks), as bits.
 * VN_CHECK_BOUNDS: an index, pointer or array length out of range reads zero or an
 * element in range and a write out of range lands nowhere outside the binding; without
 * it such an access is undefined behaviour (memory-unsafe: it may read or write other
 * memory of the GPU, or lose the device). VN_CHECK_LOOPS: every loop gets a counter the
 * driver's compiler cannot see through, so a loop that never ends cannot be assumed to
 * end and miscompiled (or hang the GPU); without it the caller promises every loop
 * terminates, and loops run faster (tinygrad's matmul: about 2x on the H200). Both are
 * on by default (VN_CHECKS_ALL, wgpu's default); ray-query, task and mesh checks stay on. */
typedef enum vn_runtime_checks {
    VN_CHECK_BOUNDS = 1,
    VN_CHECK_LOOPS = 2,
    VN_CHECKS_ALL = 3,
} vn_runtime_checks;

/* Compile WGSL with the runtime checks `checks` (vn_runtime_checks bits; other bits are
 * VN_ERROR_INVALID_ARGUMENT). */
vn_status vn_shader_create(vn_device *device, const char *wgsl, size_t wgsl_len, uint32_t checks, vn_shader **out);
void vn_shader_release(vn_shader *shader);

/* ---- WGSL nesting depth (csrc/wgsl_depth.c) ------------------------------- */

/* How deep WGSL may nest before vn_shader_create refuses it (VN_ERROR_SHADER), unseen
 * by wgpu-native: naga, its compiler, recurses once per level and overflows its stack,
 * killing the process, at about 2,960 nested parentheses (2,680 nested `[`, 2,770
 * nested template lists), 6,200 `else if`s in one chain or 14,500 chained operators
 * (`-` `!` or `+`) on an 8 MiB stack: some 2.9 KiB of stack a bracket, 1.3 KiB an
 * `else if` and 0.6 KiB an operator, measured against wgpu-native 29.0.1.1. 255 levels
 * keep naga under about 0.75 MiB of stack, an eighth of a Linux main or Python
 * thread's 8 MiB. A level is each enclosing bracket (`(`, `[`, `{`, a template list as
 * WGSL's template-list discovery finds it), every VN_WGSL_OPERATORS_PER_LEVEL operators
 * of the enclosing expressions (the ratio of their stack costs; `[` counts as one too,
 * and a compound operator per character) and every VN_WGSL_ELSE_IFS_PER_LEVEL `else if`s
 * of an enclosing if-chain (naga nests each in the one before). */
enum {
    VN_WGSL_MAX_NESTING_DEPTH = 255,
    VN_WGSL_OPERATORS_PER_LEVEL = 6,
    VN_WGSL_ELSE_IFS_PER_LEVEL = 2
};
/* How long a source vn_shader_create compiles, and the stack it compiles it on. naga also
 * recurses once per link of a chain of declarations each naming the next (const,
 * override, alias, struct members, fn calls): 296 bytes of stack a link, every kind
 * alike (its dependency walk), against about 3 KiB a nesting level; on an 8 MiB stack
 * some 28,000 links killed the process, nesting or not. So vn_shader_create has
 * wgpu-native make the module on a thread of its own whose stack reserves
 * VN_WGSL_STACK_BASE_KIB (the 8 MiB a main thread has, which holds nesting at
 * VN_WGSL_MAX_NESTING_DEPTH, under 0.9 MiB, many times over) plus
 * VN_WGSL_STACK_BYTES_PER_BYTE for each byte of the source: a link is at least 10 bytes
 * (`alias a=b;`), so a chain needs at most 29.6 bytes of stack a byte (21 at the 14 bytes
 * a link takes past 3,400 names), and 64 leaves a margin of 2 (for other targets'
 * frames, and shapes not measured whose recursion costs as much a byte). A chain whose
 * last link nests deep needs the larger of the two, not their sum. The reservation is
 * address space, committed only as naga touches it; at the largest source,
 * VN_WGSL_MAX_SOURCE_BYTES (longer is VN_ERROR_SHADER at the first byte past it), it is
 * 264 MiB. Measured by bisection of the stack size in child processes against
 * wgpu-native 29.0.1.1 on x86-64 (lavapipe). */
enum {
    VN_WGSL_MAX_SOURCE_BYTES = 4 << 20,
    VN_WGSL_STACK_BASE_KIB = 8192,
    VN_WGSL_STACK_BYTES_PER_BYTE = 64
};
/* VN_OK when the `len` bytes of UTF-8 WGSL at `wgsl` nest at most `max_depth` levels;
 * else VN_ERROR_SHADER naming the line and column where the count passes it
 * (vn_last_error_position has them too). Linear in len, no recursion; the check
 * vn_shader_create makes with VN_WGSL_MAX_NESTING_DEPTH, here for any limit. */
vn_status vn_wgsl_check_nesting(const char *wgsl, size_t len, uint32_t max_depth);
/* VN_ERROR_SHADER, at the line and column of the first byte past the limit
 * (vn_last_error_position), for a source longer than VN_WGSL_MAX_SOURCE_BYTES; else
 * VN_OK. The other check vn_shader_create makes before compiling. */
vn_status vn_wgsl_check_size(const char *wgsl, size_t len);

typedef enum vn_binding_kind {
    VN_BINDING_STORAGE_READ = 0,
    VN_BINDING_STORAGE_READ_WRITE = 1,
    VN_BINDING_UNIFORM = 2,
    VN_BINDING_KIND_COUNT = 3 /* the kinds are 0 .. VN_BINDING_KIND_COUNT - 1 */
} vn_binding_kind;
/* A binding kind's name as the Python API spells it ("storage_read",
 * "storage_read_write", "uniform") and its WGSL declaration ("var<storage, read>",
 * "var<storage, read_write>", "var<uniform>"); NULL for a value that is no kind. From
 * the C layer's one table of binding-kind facts (binding_kinds.c), so no caller keeps a
 * copy. */
const char *vn_binding_kind_name(vn_binding_kind kind);
const char *vn_binding_kind_wgsl(vn_binding_kind kind);

/* One buffer binding, as reflected from the WGSL (vyre_native/reflect/). */
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
    const char *name;    /* WebGPU's key: an @id(n) override's is "n", any other's its name */
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
    /* The entry point's @workgroup_size and bytes of var<workgroup> memory (WebGPU's
     * sum: each variable rounded up to 16), with the override values applied, checked
     * against the device's limits here: wgpu-native checks neither once overrides
     * decide them, and a GPU runs past its limits or loses the device. All three
     * sizes 0: not checked. */
    uint64_t workgroup_size[3];
    uint64_t workgroup_storage_size;
    /* Bytes of the entry point's var<immediate> data (its type's size rounded up to 4),
     * 0: none. Declared in the pipeline layout; needs the device's "immediates" feature
     * (else VN_ERROR_UNSUPPORTED) and at most its maxImmediateSize. Every dispatch of
     * the pipeline then takes exactly this many bytes of immediates. */
    uint32_t immediate_size;
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

/* Which of the two ways of naming a dispatch's buffers a call used (bits). */
typedef enum vn_bind_form {
    VN_BIND_POSITIONAL = 1, /* inputs / outputs / params were given */
    VN_BIND_NAMED = 2       /* bind={name: buffer} was given */
} vn_bind_form;

/* One dispatch's buffers and size: what record, recording_create and sequence_add take.
 * The binding rule lives in C alone (csrc/bind.c), one of two forms, never both
 * (VN_ERROR_BINDING when `forms` has both bits):
 * - positional: bindings in (group, binding) order; a read_write binding takes the next
 *   output, the first uniform takes params when not NULL, every other the next input;
 *   too few or too many handles is VN_ERROR_BINDING naming the bindings;
 * - named: names[i] binds named[i]; every binding the entry point uses must be named
 *   exactly once: an unknown, repeated or missing name is VN_ERROR_BINDING listing the
 *   pipeline's bindings.
 * Either way each view is checked against its binding: device, usage bits, size (at
 * least the declared type's, at most the device's largest binding; for storage a
 * multiple of 4, a view ending its buffer padded into the allocation) and offset (a
 * multiple of min_storage_buffer_offset_alignment, or min_uniform_buffer_offset_alignment
 * for a uniform). Outputs (read_output's indices) are the read_write bindings in
 * (group, binding) order, whichever the form.
 * indirect: NULL, or the buffer (a view) whose bytes at indirect_offset hold the three
 * u32 workgroup counts: INDIRECT usage, the pipeline's device, the counts at a multiple
 * of 4 bytes into the buffer and + 12 within the view, and no pipeline compiled with an indirect binding.
 * x, y, z are ignored by an indirect dispatch.
 * immediates: the var<immediate> data of the dispatch, exactly the pipeline's
 * immediate_size bytes (NULL and 0 for a pipeline without); copied, so the caller's
 * memory is free once the call returns.
 * keep_outputs: 0 (the default) clears the non-preserved outputs, each view's own range,
 * right before the dispatch; nonzero clears nothing, so every output keeps what it holds
 * (Python's clear_outputs=False).
 * Buffers shared between bindings follow WebGPU's rule for one dispatch, exactly: a
 * buffer bound writable (read_write) has no read-only use in it (read-only storage,
 * uniform, the indirect counts), whatever the ranges (its usage scope); two writable
 * bindings of one buffer have disjoint byte ranges as bound (touching ends are
 * disjoint); read-only uses share anything. Else VN_ERROR_BINDING naming both bindings
 * and their ranges. */
typedef struct vn_dispatch_args {
    uint32_t forms;                  /* vn_bind_form bits */
    uint32_t x, y, z;
    const vn_view *inputs;
    size_t input_count;
    const vn_view *outputs;
    size_t output_count;
    const vn_view *params;           /* NULL: none */
    /* What most dispatches leave zero comes last (a short initializer suffices). */
    const void *immediates;
    size_t immediates_len;
    const char *const *names;        /* the named form: names[i] binds named[i] */
    const vn_view *named;
    size_t named_count;
    const vn_view *indirect;         /* NULL: direct, or the pipeline's compiled indirect binding */
    uint64_t indirect_offset;
    uint32_t keep_outputs;           /* nonzero: no output is cleared before the dispatch */
} vn_dispatch_args;

/* Resolve args against the pipeline's bindings, validate each, take bind groups from
 * the pipeline's cache, and encode: clears of non-preserved outputs (each view's own
 * range), one compute pass, a direct or indirect dispatch. */
vn_status vn_dispatch_record(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_dispatch **out);
/* vn_dispatch_record of the commonest launch, with no argument struct to build: the
 * positional form, whole buffers, no params, immediates or indirect counts;
 * buffers[0 .. input_count) are the inputs and the next output_count the outputs;
 * keep_outputs as in vn_dispatch_args. Same checks and messages. */
vn_status vn_dispatch_record_buffers(vn_pipeline *pipeline, vn_buffer *const *buffers, size_t input_count,
                                     size_t output_count, uint32_t x, uint32_t y, uint32_t z, uint32_t keep_outputs,
                                     vn_dispatch **out);
/* Submit the recorded command buffer; exactly one call ever succeeds. VN_PENDING: a
 * CPU adapter's queue still runs earlier work (nothing was submitted); call again. */
vn_status vn_dispatch_replay(vn_dispatch *dispatch, uint64_t *submission_index);
size_t vn_dispatch_output_count(const vn_dispatch *dispatch);
/* The output's size in bytes (a view's own), or VN_ERROR_OUTPUT_INDEX. */
vn_status vn_dispatch_output_len(const vn_dispatch *dispatch, int64_t index, uint64_t *out);
/* Start reading output `index` (after the same checks as vn_dispatch_read_output). */
vn_status vn_dispatch_read_output_async(vn_dispatch *dispatch, int64_t index, vn_pending_read **out);
/* Copy output `index` (its bytes: a view's range only) into dst once this recording's
 * own submission has completed; *written gets the byte count. VN_PENDING and *pending
 * as for vn_view_read. */
vn_status vn_dispatch_read_output(vn_dispatch *dispatch, int64_t index, void *dst,
                                  uint64_t capacity, uint64_t *written, vn_pending_read **pending);
/* The borrowed form: make the buffers from host memory by the binding rule, then
 * record as vn_dispatch_record does. Each read_write binding that is not preserved gets
 * a new zeroed output of output_sizes[k] bytes (k counting those bindings), or of its
 * declared min_size when output_sizes is NULL; every other binding takes a host buffer
 * (host[i], host_lens[i] bytes, copied): with names NULL the next one in (group,
 * binding) order, a preserved one among them; else the one named for it (names[i] for
 * host[i]), each such binding named exactly once (VN_ERROR_BINDING for an unknown,
 * repeated, missing or allocated output's name, listing the bindings). `forms` as in
 * vn_dispatch_args. Nothing is cleared: the outputs are new buffers, zero by WebGPU's
 * rule already, and the preserved bindings hold the host data. The dispatch holds the
 * buffers; the caller holds none. */
vn_status vn_dispatch_record_borrowed(vn_pipeline *pipeline, uint32_t forms,
                                      const void *const *host, const uint64_t *host_lens,
                                      const char *const *names, size_t host_count,
                                      const uint64_t *output_sizes, size_t output_size_count,
                                      uint32_t x, uint32_t y, uint32_t z,
                                      vn_dispatch **out);
void vn_dispatch_release(vn_dispatch *dispatch);

/* ---- interop with wgpu-py in the same process (csrc/interop.c) ---------------- */

/* Wrap objects another binding of the same wgpu-native library made (wgpu-py):
 * each takes a reference of its own (AddRef), released with the vn object. The
 * handles are the WGPU* pointers as integers. */
vn_status vn_device_adopt(uintptr_t instance, uintptr_t adapter, uintptr_t device, uintptr_t queue, vn_device **out);
/* `mapped`: nonzero when wgpu-py reports the buffer mapped or map-pending (it starts
 * refused, as vn_buffer_set_foreign_state's MAPPED); otherwise adoption finds out whether
 * it was destroyed already, and refuses it then with VN_ERROR_BINDING. */
vn_status vn_buffer_adopt(vn_device *device, uintptr_t buffer, int mapped, vn_buffer **out);
/* The buffer's WGPUBuffer with one new reference, which the caller must release. */
vn_status vn_buffer_export(vn_buffer *buffer, uintptr_t *out);
/* What wgpu-py does to a buffer it shares with this layer (adopted, or handed over by
 * vn_buffer_export). wgpu-native aborts the process on submitting work that uses a
 * buffer that is mapped, map-pending or destroyed, and cannot be asked which it is, so
 * the Python side reports wgpu-py's map, unmap and destroy calls here (from hooks on
 * the one object through which wgpu-py calls wgpu-native: vyre_native/interop.py), and
 * every submit re-checks its buffers under the device's life lock: one that uses such
 * a buffer fails with VN_ERROR_BINDING instead. */
typedef enum vn_foreign_state {
    VN_FOREIGN_USABLE = 0,
    VN_FOREIGN_MAPPED = 1,   /* mapped or map-pending */
    VN_FOREIGN_DESTROYED = 2 /* final */
} vn_foreign_state;
/* Set the state, and return the one before. Takes the device's life lock for writing,
 * so it waits for any submit between its check and its queue call; every submit after
 * it sees the new state. Report MAPPED before wgpu-py's map call and DESTROYED before
 * its destroy; USABLE after its unmap. */
vn_foreign_state vn_buffer_set_foreign_state(vn_buffer *buffer, vn_foreign_state state);
/* One more reference, for a watcher or a second handle on the same object, written
 * into `slot` (an out-parameter as a creating call's; NULL there when the object is not live). */
void vn_buffer_retain_for_watch(vn_buffer *buffer, vn_buffer **slot);
void vn_device_retain_for_watch(vn_device *device, vn_device **slot);
/* wgpu-py destroys a device it shares with this layer: this destroys it instead, as
 * vn_device_destroy does (waiting for any submit and encoding of ours in flight), even
 * when the vn device was closed; later calls fail with VN_ERROR_DEVICE_LOST (`reason`). */
void vn_device_destroy_shared(vn_device *device, const char *reason);

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
 * -VN_ERROR_FORKED for a submission inherited across fork(), or a handle error. */
int vn_submission_done(vn_submission *submission);
/* Wait (GIL released) until the work completes, for at most one time slice: VN_OK,
 * or VN_PENDING (call again). timeout_s < 0 waits without limit; otherwise *waited_s
 * (0 before the first call) accumulates the time waited across calls, and the call
 * that takes it to timeout_s fails with VN_ERROR_TIMEOUT (the work keeps running). */
vn_status vn_submission_wait(vn_submission *submission, double timeout_s, double *waited_s);
void vn_submission_release(vn_submission *submission);

/* ---- replayable recordings and sequences (csrc/recording.c, sequence.c, batch.c) */

typedef struct vn_recording vn_recording;
typedef struct vn_sequence vn_sequence;

/* Same binding rules, checks, clears and immediates as vn_dispatch_record, but
 * nothing is encoded yet: each replay re-encodes from the held pipeline, bind groups
 * and immediates (copied here), inside error scopes, and submits only a cleanly
 * encoded command buffer. */
vn_status vn_recording_create(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_recording **out);
/* Encode n launches (1..VN_MAX_LAUNCHES_PER_SUBMIT) into one command buffer and submit
 * it once. Without outputs to clear outside a pass the n dispatches share one compute
 * pass (each launch's fills, then its dispatch); otherwise each launch is its clears
 * then its pass. VN_PENDING (*out NULL): a CPU adapter's queue still runs earlier
 * work, and submitting now would block inside the driver; call again. The same holds
 * for every replay, submit and read on such a device. */
vn_status vn_recording_replay(vn_recording *recording, uint32_t n, vn_timing_mode timing, vn_submission **out);
/* The rule for splitting replay(n) of work of `steps` steps a launch into submits (the
 * parts rule a long sequence replay and vn_device_submit in parts follow too): returns
 * the launches per part (n itself when one submit holds them all, or when timed: the
 * timestamp queries must span one command buffer, and vn_*_replay refuses a timed n past
 * the bound), the last part what is left; at most VN_MAX_SUBMITS_IN_FLIGHT parts
 * running, so the caller waits for the oldest before the next part
 * (each holds encoder memory until the GPU has run it). The caller makes one
 * vn_recording_replay or vn_sequence_replay call per part and waits between parts
 * itself, in time slices, so that a long replay returns to it between parts (Python's
 * replay(n): Ctrl-C interrupts it there). A value returned, not written through
 * pointers: every replay asks, and out-parameters would cost the caller an allocation. */
uint32_t vn_replay_split(uint32_t n, size_t steps, vn_timing_mode timing);
size_t vn_recording_output_count(const vn_recording *recording);
/* The output as bound: its buffer (a new reference for the caller), offset and size in
 * bytes; or VN_ERROR_OUTPUT_INDEX. */
vn_status vn_recording_output(const vn_recording *recording, int64_t index, vn_view *out);
/* Output reads, as the vn_dispatch_* ones (same arguments, same outcomes) but after all
 * work submitted so far (every replay of the recording included): a recording can be
 * read before its first replay (its outputs then hold what they held). */
vn_status vn_recording_output_len(const vn_recording *recording, int64_t index, uint64_t *out);
vn_status vn_recording_read_output_async(vn_recording *recording, int64_t index, vn_pending_read **out);
vn_status vn_recording_read_output(vn_recording *recording, int64_t index, void *dst, uint64_t capacity,
                                   uint64_t *written, vn_pending_read **pending);
void vn_recording_release(vn_recording *recording);

vn_status vn_sequence_create(vn_device *device, vn_sequence **out);
/* Append a dispatch (args as for vn_dispatch_record): its non-preserved outputs are
 * cleared right before it (as a recording does), or, with args->keep_outputs, left as
 * the previous steps left them. Each step keeps its own copy of its immediates (as for
 * vn_dispatch_record), set right before its dispatch: per-step values with no buffer
 * and no bind-group change. */
vn_status vn_sequence_add(vn_sequence *sequence, vn_pipeline *pipeline, const vn_dispatch_args *args);
/* Append a GPU copy of *nbytes (nbytes NULL: as much as fits from the offsets) from
 * src_offset into the src view to dst_offset into the dst view: whole words (both
 * offsets, counted in their buffers, and nbytes multiples of 4); any other byte range is
 * vn_device_copy's. */
vn_status vn_sequence_copy(vn_sequence *sequence, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                           uint64_t src_offset, uint64_t dst_offset);
/* Append a clear of the view's bytes to zero. */
vn_status vn_sequence_clear(vn_sequence *sequence, const vn_view *buffer);
size_t vn_sequence_length(const vn_sequence *sequence);
/* Encode every step n times into one command buffer (consecutive dispatches share
 * a compute pass) and submit it once; n > 1 needs n * steps <= VN_MAX_LAUNCHES_PER_SUBMIT.
 * Once these steps have been replayed whole, an untimed replay of VN_SPLIT_MIN_STEPS
 * steps or more on an adapter whose submits do not wait for earlier work (a GPU, not a
 * CPU adapter) goes in several submits instead, in order (see VN_SPLIT_FIRST_STEPS), and
 * the submission returned is the last. The replay holds the device's life lock for
 * writing across its parts, so no other submit, queued write, readback, wgpu-py map or
 * destroy comes between them. Should a later part fail (the device lost meanwhile), the
 * error says how many steps were submitted before it. */
vn_status vn_sequence_replay(vn_sequence *sequence, uint32_t n, vn_timing_mode timing, vn_submission **out);
void vn_sequence_release(vn_sequence *sequence);

/* One item of a batch submit: exactly one of the two is set. */
typedef struct vn_work {
    vn_recording *recording;
    vn_sequence *sequence;
} vn_work;

/* Encode every item once, in order, into one command buffer; one queue submit. More
 * than one item of more than VN_MAX_LAUNCHES_PER_SUBMIT steps in all (a recording is one
 * step, a sequence its length): submits of at most that many steps each, in order, at
 * most VN_MAX_SUBMITS_IN_FLIGHT in flight (the call waits, inside C and not in time
 * slices, for the GPU to run all but the last two: see "Waits" above), run as one unit:
 * no other submit, write or readback of the device lands between them.
 * Timed, such a batch is VN_ERROR_INVALID_ARGUMENT (its queries span one command buffer). */
vn_status vn_device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                           vn_submission **out);

/* ---- asynchronous readback (csrc/readback.c) -------------------------------- */

/* Queue a copy of the view's bytes into a staging buffer from the device's ring
 * and return at once; many may be in flight. VN_PENDING (*out NULL): a CPU adapter's
 * queue still runs earlier work; call again. */
vn_status vn_view_read_async(const vn_view *view, vn_pending_read **out);
/* The whole-buffer form. */
vn_status vn_buffer_read_async(vn_buffer *buffer, vn_pending_read **out);
uint64_t vn_pending_read_len(const vn_pending_read *read);
/* 1 once the read's data is in its staging buffer (finishing it will not wait), else 0.
 * Never blocks: it only polls the device. Minus a status (vn_last_error says why) when it
 * never will here, as vn_submission_done: -VN_ERROR_DEVICE_LOST, -VN_ERROR_RELEASED (the
 * device closed), -VN_ERROR_FORKED, or a handle error. */
int vn_pending_read_done(vn_pending_read *read);
/* Wait for the copy, then copy byte_len bytes into dst (capacity >= byte_len).
 * VN_PENDING: one time slice passed first, nothing was copied; call again. Any number of
 * callers, on any threads, may finish one read, each as often as it likes: the first to
 * find the data back takes the staging buffer (pinned, kept by the read until its
 * release), and every call copies from it; a failure is kept and given to every caller. */
vn_status vn_pending_read_finish(vn_pending_read *read, void *dst, uint64_t capacity);
/* A read's bytes handed out in place: the staging buffer they sit in stays mapped and
 * pinned (out of the device's staging ring) until vn_mapping_release, and nothing
 * unmaps, reuses or frees it before then: vn_device_destroy on its device defers the
 * GPU device's destruction until the last pin goes, and closing or releasing the
 * device keeps its record alive for the mapping (vn_device_destroy_shared, wgpu-py's
 * destroy of a shared device, defers as vn_device_destroy does). Holds no lock between
 * calls. */
typedef struct vn_mapping vn_mapping;
/* Wait for the read, then pin its staging buffer: *out gets a reference of its own on
 * the read's one mapping and *data its byte_len (vn_pending_read_len) bytes, readable
 * until that reference's vn_mapping_release. Every caller gets the same memory (read
 * only). VN_PENDING and many callers as for vn_pending_read_finish. */
vn_status vn_pending_read_pin(vn_pending_read *read, vn_mapping **out, const void **data);
/* Unpin: unmap the staging buffer and give it back to the ring. Never waits for the
 * GPU; safe after the device was closed, released or destroyed (the last unpin of a
 * destroyed device destroys it). In a fork() child an inherited mapping is only
 * forgotten (nothing is unmapped). */
void vn_mapping_release(vn_mapping *mapping);
/* Release without waiting: a read still in flight is handed to its device, which
 * returns its staging buffer once the copy completes (at a later poll). */
void vn_pending_read_release(vn_pending_read *read);

/* The release of a handle of any kind (NULL and anything that is not a live handle are
 * ignored). A creating call's out-parameter (`vn_<kind> **`, or the vn_view that
 * vn_recording_output writes, whose buffer holds a reference the call took) owns what the
 * call writes into it: a caller that cannot be interrupted between the call and taking
 * the result (Python's owner, csrc/python/owner.c, *is* that out-parameter) releases it
 * with this. */
void vn_handle_release(void *handle);

/* ---- introspection (csrc/introspect.c): for tests, leak hunts, benchmarks ------- */

/* Live native objects of each kind of csrc/object_kinds.h, for leak tests. */
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
 * VN_INTROSPECT_LIVE_IDS (-> live_ids): handle ids live now (csrc/object.c): each
 *   creating call's result, each second handle of vn_*_retain_for_watch, until its
 *   release.
 * VN_INTROSPECT_QUEUED_WRITE_BYTES (device -> queued_write_bytes): bytes of buffer.write
 *   queued on the device and not yet sent by a submit (wgpu keeps a staging copy of each
 *   until that submit's work completes); 0 for a handle that is no live device. See
 *   csrc/buffer_write.c for the bound a write keeps it under.
 * VN_INTROSPECT_ERROR_STATUS (wgpu_error_type, message -> status): the status a wgpu
 *   error of this WGPUErrorType and message maps to (for tests of the mapping: "Not
 *   enough memory left" is VN_ERROR_OUT_OF_MEMORY whatever its type, "Parent device is
 *   lost" VN_ERROR_DEVICE_LOST; a NULL message is the empty one).
 * VN_INTROSPECT_FILL_WGSL (-> fill_wgsl): the WGSL of the built-in zero fill
 *   (csrc/fill.c) that clears outputs inside the compute pass: entry points fill_words
 *   (array<u32> at @binding(0)) and fill_quads (array<vec4<u32>> at @binding(1), for
 *   sizes that are multiples of 16), both @workgroup_size(256), one dispatch of
 *   min(ceil(elements / 256), 65535) workgroups. For the benchmarks' raw-C floor, which
 *   dispatches the same kernel. */
typedef enum vn_introspect_op {
    VN_INTROSPECT_LIVE_COUNTS = 1,
    VN_INTROSPECT_LIVE_IDS = 2,
    VN_INTROSPECT_QUEUED_WRITE_BYTES = 3,
    VN_INTROSPECT_ERROR_STATUS = 4,
    VN_INTROSPECT_FILL_WGSL = 5,
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
} vn_introspection;
/* Read what `op` names into *io: VN_OK, or VN_ERROR_INVALID_ARGUMENT for an op that
 * does not exist or a NULL io. The one door to what the C layer shows of its insides:
 * read-only, beside the API (vyre_native.debug hands out its functions). */
vn_status vn_introspect(vn_introspect_op op, vn_introspection *io);
/* ---- test switches (csrc/switches.c): for the project's tests, not the API ----- */

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
 * VN_ERROR_UNSUPPORTED, in a build without the check (VN_LOCK_RANK_CHECK). */
typedef enum vn_test_switch {
    VN_TEST_SPLIT_SUBMITS_EVERYWHERE = 1,
    VN_TEST_REFUSE_NEW_INSTANCES = 2,
    VN_TEST_COMPILE_STACK_KIB = 3,
    VN_TEST_BREAK_LOCK_ORDER = 4,
} vn_test_switch;
/* Set switch `which` to `value` (0 or 1; any value >= 0 for VN_TEST_COMPILE_STACK_KIB)
 * and return its value before; -1 for a switch or value that does not exist
 * (vn_last_error says why). */
int vn_test_control(vn_test_switch which, int value);

/* VN_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* VYRE_NATIVE_H */
