/* layer_device.h - layer 3: the device, in files named for their concerns, lowest first:
 * waiting for callbacks (callbacks.c), what a wgpu error means (wgpu_errors.c), features
 * (features.c), instances and the reserve (instances.c), adapters (adapters.c), loss and
 * the check every call makes (loss.c), the life lock every submit holds (life_lock.c),
 * error scopes (scopes.c), waits and fences (waits.c), devices released while busy and
 * the free (parking.c), and the device's creation and getters (device.c). Also the hooks
 * through which the files above attach state to a device. */
#ifndef VN_LAYER_DEVICE_H
#define VN_LAYER_DEVICE_H

#include "../object/layer_object.h"

/* ---- the device's record --------------------------------------------------------- */

/* NVIDIA's PCI vendor id (vn_device_info.vendor_id): its drivers' own rules (adapter_identity.c's
 * CUDA_VISIBLE_DEVICES and GPU-<uuid>, device.c's fork child). */
enum { VN_VENDOR_NVIDIA = 0x10DE };

typedef struct vn_fence vn_fence;

/* State a file above the device attaches to it (readback.c's staging buffers and
 * abandoned reads, fill.c's pipelines), and how the device lets it go: that file
 * registers its hooks (vn_device_attach) when it first attaches some, and the device
 * calls them without naming the file, so the device stays below it. Called only where
 * the device tidies up (vn_wait, while abandoned reads exist) or is freed: a replay or
 * a read goes through none. */
typedef struct vn_device_hooks {
    /* Settle what has finished (final: all of it, at the free), or NULL: from the idle
     * check of a device released while busy, at its free, and from vn_wait while
     * abandoned_count is not 0. */
    void (*reap)(vn_device *device, bool final);
    /* Free all of it: the device is being freed (after every reap, final). */
    void (*release)(vn_device *device);
} vn_device_hooks;

/* One slot per file that attaches state, in the order the device's free releases them. */
typedef enum vn_device_part { VN_PART_FILL, VN_PART_READBACK, VN_PART_TRANSFER, VN_PART_COUNT } vn_device_part;

struct vn_device {
    vn_object obj; /* first, as in every handle's object: VN_KIND_DEVICE */
    atomic_int closed; /* vn_device_close called: calls fail with VN_ERROR_RELEASED */
    atomic_int lost;   /* destroyed or lost: calls fail with VN_ERROR_DEVICE_LOST */
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
    /* The two pops' reports, reused under scope_lock (scopes.c). */
    struct vn_scope_result *scope_results[2];

    /* The device's life lock. Submitting to a destroyed device, or reading the
     * mapped range of a buffer it destroyed, aborts the process inside wgpu-native,
     * so every submit and every mapped-range access holds this for reading (after
     * checking the flags) and vn_device_destroy holds it for writing. */
    vn_rwlock life_lock;

    /* Staging buffers pinned mapped by a vn_mapping (a zero-copy read): destroying the
     * device would free the memory a caller still reads, so while any is pinned
     * vn_device_destroy only marks the device lost and sets destroy_deferred, and the
     * last unpin destroys it (vn_device_destroy_deferred). Both change under the life
     * lock: pinned for reading, destroy_deferred for writing. */
    atomic_long staging_pinned;
    bool destroy_deferred;
    /* How many reads were released while their copy was in flight (readback.c keeps
     * them until their map callback fires): while not 0, vn_wait reaps the parts. */
    atomic_int abandoned_count;

    /* The process-wide list of devices released with work still running, and the
     * fence that says when that work has finished (parking.c, waits.c). */
    struct vn_device *parked_next;
    vn_fence *idle_fence;

    /* Bytes queued by buffer.write since the last flush (vn_device_flush_writes):
     * wgpu keeps each write's staging copy until a submit sends it. */
    atomic_ullong pending_write_bytes;

    /* Live pipelines, so a buffer's release can purge bind groups naming it. */
    vn_mutex pipelines_lock;
    struct vn_pipeline *pipelines;

    /* The built-in zero fill (fill.c): made on first use under scope_lock, then
     * fixed until the device is freed. */
    _Atomic(struct vn_fill *) fill;
    /* The readback state (readback.c: the staging ring, the abandoned reads, their
     * lock): made by the first read, then fixed until the device is freed. */
    _Atomic(struct vn_readback *) readback;
    /* The byte-merge kernel of writes and copies that end mid-word (transfer.c): made
     * on first use under scope_lock, then fixed until the device is freed. */
    _Atomic(struct vn_transfer *) transfer;

    /* Each part's hooks once it has attached state (NULL before): see vn_device_hooks. */
    _Atomic(const vn_device_hooks *) hooks[VN_PART_COUNT];
};

/* Register `part`'s hooks on the device: the same static hooks every time, so a
 * repeat, or a race of two first uses, stores the same pointer. */
static inline void vn_device_attach(vn_device *device, vn_device_part part, const vn_device_hooks *hooks) {
    atomic_store_explicit(&device->hooks[part], hooks, memory_order_release);
}

/* ---- callbacks (callbacks.c) ------------------------------------------------------ */

/* wgpu-native fires AllowProcessEvents callbacks from wgpuInstanceProcessEvents or a
 * device poll: drive both until *flag is set; false after limit_s seconds. */
bool vn_process_until(WGPUInstance instance, WGPUDevice device, atomic_int *flag, double limit_s);
/* A request record (its first field an atomic_int state, zeroed: pending) that a
 * callback fills while a waiter waits for it. In the callback, after filling it:
 * vn_request_complete, true when the waiter had given up (the callback frees it). In the
 * waiter: vn_request_wait, false (the record then belongs to the callback, which frees
 * it) when the callback did not come within limit_s. */
bool vn_request_complete(atomic_int *state);
bool vn_request_wait(WGPUInstance instance, WGPUDevice device, atomic_int *state, double limit_s);

/* ---- what a wgpu error means (wgpu_errors.c) ---------------------------------------- */

/* VN_ERROR_OUT_OF_MEMORY, VN_ERROR_DEVICE_LOST or VN_ERROR_INTERNAL when a wgpu error
 * message says so whatever its type, else the status of its WGPUErrorType (Validation:
 * validation_code). */
vn_status vn_error_status(WGPUErrorType type, const char *message, vn_status validation_code);
/* True when a wgpu message says the device is lost ("Parent device is lost"). */
bool vn_message_says_lost(const char *message);
/* The rule above as VN_INTROSPECT_ERROR_STATUS shows it (introspect.c), for tests. */
vn_status vn_debug_error_status(uint32_t wgpu_error_type, const char *message);

/* ---- features (features.c) ----------------------------------------------------- */

/* The name of a WGPUFeatureName / WGPUNativeFeature, NULL if unknown; and an
 * adapter's features as space-separated names (unknown ones as hex) into out. */
const char *vn_feature_name(uint32_t id);
void vn_describe_features(WGPUAdapter adapter, char *out, size_t capacity);
void vn_describe_device_features(WGPUDevice device, char *out, size_t capacity);
/* The features a new device requests: `required` (space-separated names; unknown ->
 * VN_ERROR_INVALID_ARGUMENT, not on the adapter -> VN_ERROR_UNSUPPORTED naming them all)
 * and every compute feature the adapter offers. At most `capacity` into out. */
#define VN_MAX_DEVICE_FEATURES 96
vn_status vn_features_choose(WGPUAdapter adapter, const char *adapter_name, const char *required,
                             WGPUFeatureName *out, size_t capacity, size_t *count);

/* ---- instances (instances.c) -------------------------------------------------------- */

/* The wgpu backends a user-facing name selects (NULL: the primary ones), or
 * VN_ERROR_INVALID_ARGUMENT naming the choices. */
vn_status vn_parse_backend(const char *name, WGPUInstanceBackend *out);
/* A new instance of `backends` into *out; VN_ERROR_INTERNAL when wgpu makes none (*out
 * NULL). */
vn_status vn_new_instance(WGPUInstanceBackend backends, WGPUInstance *out);
/* After *instance (new, of `backends`) looked for adapters: where it found one, make the
 * process's reserve instance of `backends`, once; where it found none and there is a
 * reserve, put the reserve (with a reference) in its place and return true: look again
 * there. */
bool vn_switch_to_reserve(WGPUInstance *instance, WGPUInstanceBackend backends, bool found);

/* ---- adapters (adapters.c) ------------------------------------------------------------ */

void vn_describe_adapter(WGPUAdapter adapter, vn_device_info *out);
/* A ForkedError: `refusal` (what was refused, e.g. "adapter 'X' refused to create a
 * device") in this fork() child, and why. */
vn_status vn_refused_in_fork_child(const char *refusal, const char *why);
/* VN_OK, or in a fork() child of a process that had started a driver which cannot start
 * again there (NVIDIA's), the ForkedError to return before any instance is made. */
vn_status vn_fork_child_may_start_drivers(void);
/* adapter_identity.c: fill uuid and pci_bus of `count` adapters in wgpu's order (the
 * whole list, or one alone: then only a (vendor, device) pair Vulkan shows once). */
void vn_identify_adapters(vn_device_info *adapters, size_t count);
/* out's uuid and pci_bus as adapters[index] has them among the whole list of `count`
 * (alone, a GPU whose model the host has twice has none): where out is that adapter's. */
void vn_identify_listed(WGPUAdapter *adapters, size_t count, size_t index, vn_device_info *out);
/* All adapters of an instance, in wgpu-native's order (*out NULL when none); the caller
 * releases them (vn_release_adapters: all but `keep`, and the array). */
vn_status vn_list_adapters(WGPUInstance instance, WGPUAdapter **out, size_t *count);
void vn_release_adapters(WGPUAdapter *adapters, size_t count, WGPUAdapter keep);
/* What an adapter request answered: the adapter (NULL when none was offered), and why. */
struct vn_adapter_request {
    atomic_int state; /* a request record's (vn_request_complete) */
    WGPURequestAdapterStatus status;
    WGPUAdapter adapter;
    char message[512];
};
/* Request an adapter of `instance` and wait for it (60 s at most): VN_OK with *out
 * filled (out->adapter NULL when none was offered, out->message saying why),
 * VN_ERROR_TIMEOUT, or VN_ERROR_OUT_OF_MEMORY with its message set. */
vn_status vn_request_adapter(WGPUInstance instance, const WGPURequestAdapterOptions *opts,
                             struct vn_adapter_request *out);

/* ---- loss (loss.c) --------------------------------------------------------------- */

/* VN_OK, VN_ERROR_RELEASED (closed) or VN_ERROR_DEVICE_LOST, with a message naming `what`. */
vn_status vn_device_check(const vn_device *device, const char *what);
/* The device is lost (wgpu said so in an error or a callback, or it was destroyed:
 * vn_device_mark_destroyed): later calls fail with VN_ERROR_DEVICE_LOST naming the first
 * reason given. The one place the mark is made. Takes no lock, so a callback may call it. */
void vn_device_note_lost(vn_device *device, const char *reason);

/* ---- the life lock (life_lock.c) ------------------------------------------------------ */

/* Mark the device destroyed (every later call: VN_ERROR_DEVICE_LOST with `reason`) and
 * destroy the GPU device, under the life lock (for writing) and the scope lock; while a
 * staging buffer is pinned, the destruction waits for the last unpin. Both destroy()
 * and wgpu-py's destroy of a shared device (vn_device_destroy_shared) come here. */
void vn_device_mark_destroyed(vn_device *device, const char *reason);
/* The last pinned staging buffer of a device whose destroy was deferred is gone:
 * destroy it now. Called by the unpin, never while holding the life lock. */
void vn_device_destroy_deferred(vn_device *device);

/* Take the life lock for reading and check the device; on VN_OK the caller
 * submits or reads a mapped range, then calls vn_life_unlock_read. On failure nothing is
 * held. */
vn_status vn_life_lock_read(vn_device *device, const char *what);
void vn_life_unlock_read(vn_device *device);

/* A check a submit makes while it holds the device's life lock for reading, right
 * before its queue call: that wgpu-py has not mapped or destroyed a buffer the work
 * uses (vn_buffers_submittable). wgpu-py's map and destroy change that state under the
 * write side, so the check and the submit are one step for them
 * (vn_buffer_set_foreign_state, interop.c). */
typedef struct vn_submit_guard {
    vn_status (*check)(const void *arg);
    const void *arg;
} vn_submit_guard;

/* vn_life_lock_read, then guard->check (guard may be NULL) with the lock held; on
 * failure nothing is held. */
vn_status vn_life_lock_read_guarded(vn_device *device, const char *what, const vn_submit_guard *guard);
/* The same with the write side: no other submit, queued write, readback, destroy, or
 * wgpu-py map of a shared buffer can come until vn_life_unlock_write. A replay in
 * several parts holds it across all of them, so it runs as one unit, as one command
 * buffer would (replay_in_submits). */
vn_status vn_life_lock_write(vn_device *device, const char *what, const vn_submit_guard *guard);
void vn_life_unlock_write(vn_device *device);
/* The guard's check now (VN_OK for NULL). Work that encodes before it submits calls it
 * first too: refused at once, it encodes nothing (a command buffer finished and never
 * submitted is memory wgpu-native 29 does not reclaim); the check under the lock decides. */
vn_status vn_submit_guard_check(const vn_submit_guard *guard);

/* ---- error scopes (scopes.c) ------------------------------------------------------ */

/* Error scopes around a creating or encoding call. vn_scope_begin locks the
 * device's scope lock; vn_scope_end pops, unlocks, and turns a captured error into
 * `validation_code` (VN_ERROR_VALIDATION, or VN_ERROR_SHADER for shader creation),
 * VN_ERROR_OUT_OF_MEMORY or VN_ERROR_INTERNAL, with a message naming `what`, wgpu's
 * own message, and `fix`. */
void vn_scope_begin(vn_device *device);
vn_status vn_scope_end(vn_device *device, const char *what, vn_status validation_code, const char *fix);
/* Free the device's two pop records (at its free). */
void vn_scope_results_free(vn_device *device);
/* Point the device descriptor's uncaptured-error callback at the backstop that keeps an
 * error which reached no scope for the calling thread's next vn_scope_end (without it,
 * wgpu-native treats such an error as fatal and aborts the process). */
void vn_scope_catch_uncaptured(WGPUDeviceDescriptor *desc, vn_device *device);

/* ---- waits (waits.c) ---------------------------------------------------------------- */

/* Poll the device until *flag is set (flag NULL: until all work submitted before the
 * call has finished, through a work-done fence of its own), for at most limit_s seconds
 * (< 0: no limit of its own) and never past one VN_WAIT_SLICE_MS slice: VN_OK once it
 * is, VN_PENDING when the time ran out first, VN_ERROR_DEVICE_LOST when the device is
 * lost and the work did not finish. Adds the time spent to *waited_s (may be NULL).
 * Never blocks inside wgpu-native: the blocking poll has no timeout, so a hung kernel
 * would hold the thread, and a signal, for ever. */
vn_status vn_wait(vn_device *device, atomic_int *flag, double limit_s, double *waited_s);
/* A fence that fires once everything submitted to the device so far has finished (NULL
 * when out of host memory: the caller then goes on as if it had fired). */
vn_fence *vn_fence_create(vn_device *device);
/* Poll until the fence fires (VN_OK) or the device is lost (its error). Takes no lock
 * and reaps nothing, so it may run under the life lock held for writing; it does not
 * return in time slices: only for work of the caller's own that is bounded (the part
 * before last of a submit in several parts). */
vn_status vn_fence_wait_held(vn_device *device, vn_fence *fence);
void vn_fence_release(vn_fence *fence);
/* Before encoding or submitting anything: VN_OK, or on a device with serial_submits
 * VN_PENDING while earlier work still runs (the caller returns it, to be called again). */
vn_status vn_submit_ready(vn_device *device);
/* True when nothing submitted to the device is still running (its callbacks have run).
 * Never blocks: the first call registers the device's idle fence, later ones poll it. */
bool vn_device_idle(vn_device *device);
/* Each attached part's reap (vn_device_hooks), in slot order. */
void vn_device_reap_parts(vn_device *device, bool final);
/* Past this many bytes queued by writes with no submit, a write flushes them (an empty
 * submit), so host memory for write staging stays bounded without a wait. */
#define VN_WRITE_FLUSH_BYTES (64ull << 20)
/* Send the writes queued since the last submit (an empty submit); *index, when not
 * NULL, receives its submission index. */
vn_status vn_device_flush_writes(vn_device *device, const char *what, uint64_t *index);

/* ---- devices released while busy (parking.c) --------------------------------------- */

/* The device's object destroy (its last reference went): free it now, or park it while
 * its work runs. */
void vn_device_free_or_park(vn_object *object);
/* Free the device now, with what the parts attached (its last reference went, and its
 * work has finished: vn_device_free_or_park). */
void vn_device_free(vn_device *device);
/* Free the devices released while busy whose work has finished, polling them up to
 * wait_s seconds; true when none is left waiting. */
bool vn_devices_reap(double wait_s);
/* The live-object counts (VN_INTROSPECT_LIVE_COUNTS, introspect.c), after reaping. */
void vn_debug_live_counts(vn_live_counts *out, double wait_s);

/* ---- the device itself (device.c) --------------------------------------------- */

void vn_device_retain(vn_device *device);
void vn_device_unref(vn_device *device);
/* A fresh record's refcount (1), locks and live count. */
void vn_device_init_locks(vn_device *device);
/* A shader module of WGSL `code` on the device, labelled `label` (NULL when wgpu made
 * none; an error lands in the caller's error scope): vn_shader_create's (pipeline.c), the
 * zero fill's (fill.c), the byte merge's (transfer.c). */
WGPUShaderModule vn_wgsl_module(vn_device *device, WGPUStringView code, const char *label, uint32_t checks);

#endif /* VN_LAYER_DEVICE_H */
