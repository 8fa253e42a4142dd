/* internal.h - what the C layer's files share: the wgpu-native function table, the
 * object layouts behind the public handles, and the error and refcount helpers. */
#ifndef VN_INTERNAL_H
#define VN_INTERNAL_H

#include <stdarg.h>
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
/* Put `prefix` before this thread's last message (keeping its position) and return
 * `code`: "pipeline `main`: " before what a shared helper reported. */
vn_status vn_fail_prefixed(vn_status code, const char *prefix);
/* wgpu's WGPUStringView as a C string into buf (always terminated). */
void vn_string_view_copy(WGPUStringView view, char *buf, size_t cap);

/* ---- the object header and handle ids (object.c) ------------------------------
 *
 * Every object behind a public handle starts with a vn_object: a kind tag, a
 * reference count, its destroy function and a monotonic id. The C layer's own holders
 * (a recording holding its buffers, a bound dispatch, caches) hold object pointers and
 * references (vn_retain / vn_release).
 *
 * A caller never gets an object pointer: every handle the API hands out is an id, a
 * slot of a process-wide table and that slot's generation (sokol_gfx's handles), and
 * the slot holds one reference on the object. Releasing the id (vn_<kind>_release,
 * vn_handle_release) bumps the slot's generation, so every copy of the id is stale from
 * then on, and drops that reference; the slot goes back to a free list. An entry point
 * translates each id it is given (vn_acquire): a live slot of the right kind gives its
 * object, retained for the call; a stale id is VN_ERROR_RELEASED, another kind
 * VN_ERROR_WRONG_TYPE, anything else (NULL, a number no slot ever had) a typed error
 * too. The table's memory is never freed or moved, so reading a slot is always safe,
 * whatever the id: a stale or made-up handle can never reach an object's memory.
 * Translation takes no lock: a slot pins itself (a count in its state word, taken by
 * compare-and-swap when the generation matches) while the object is retained, and a
 * release bumps the generation first, then waits for pins to drain before it drops the
 * slot's reference. So a release racing a call on the same id happens either before
 * it (the call fails with VN_ERROR_RELEASED) or after (the call completes).
 *
 * fork(): each object records the process generation it was made in
 * (vn_fork_generation, bumped in the child after every fork). In a child, an object
 * of an earlier generation is no live object of any kind: an entry point refuses it
 * with VN_ERROR_FORKED, and a release never touches it (its device's driver threads
 * stayed in the parent, and its destroy would call wgpu-native there or wait for
 * ever). The table has no lock a parent's thread could have held at the fork: a pin a
 * parent's thread held is on a slot issued before it, which a release in the child
 * only marks stale (never waiting for the pin, never reusing the slot). */

typedef enum vn_kind {
    VN_KIND_DEAD = 0x766e0000,      /* "vn" + 0: destroyed */
    VN_KIND_DEVICE = 0x766e0001,
    VN_KIND_BUFFER = 0x766e0002,
    VN_KIND_SHADER = 0x766e0003,
    VN_KIND_PIPELINE = 0x766e0004,
    VN_KIND_DISPATCH = 0x766e0005,
    VN_KIND_RECORDING = 0x766e0006,
    VN_KIND_SEQUENCE = 0x766e0007,
    VN_KIND_SUBMISSION = 0x766e0008,
    VN_KIND_PENDING_READ = 0x766e0009,
    VN_KIND_MAPPING = 0x766e000a
} vn_kind;

typedef struct vn_object {
    atomic_uint kind;                         /* a vn_kind; VN_KIND_DEAD once destroyed */
    atomic_long refs;
    void (*destroy)(struct vn_object *self);  /* frees the object: runs once, at the last release */
    uint64_t id;                              /* monotonic per process, never reused */
    unsigned generation;                      /* vn_fork_generation when made */
} vn_object;

/* Bumped in the child process after every fork() (the handler is registered when the
 * first object is made). A plain load, no system call. */
extern atomic_uint vn_fork_generation;
/* True when the object was made before a fork() and this process is the child. */
static inline bool vn_inherited(const vn_object *object) {
    return object->generation != atomic_load_explicit(&vn_fork_generation, memory_order_relaxed);
}

/* A fresh object of `kind`: one reference (the creator's), the next id. */
void vn_object_init(vn_object *object, vn_kind kind, void (*destroy)(vn_object *));
static inline void vn_retain(vn_object *object) {
    atomic_fetch_add_explicit(&object->refs, 1, memory_order_relaxed);
}
/* Drop one reference; the last poisons the tag and destroys. Call it with no lock
 * held: a destroy takes the locks its object's owner takes (see "Lock order"). */
void vn_release(vn_object *object);
/* The next id of the process-wide sequence (objects and buffer identities). */
uint64_t vn_next_identity(void);
/* Whether a test switch (vn_test_control, test_control.c) is set; off in production. */
bool vn_test_switch_on(vn_test_switch which);

/* At an entry point: translate the id `handle` (a vn_<kind> * a caller passed) into its
 * object, checked to be of `kind` and made in this process, and retain it for the call
 * (*object; the entry point releases it, vn_unacquire, before returning). Otherwise the
 * typed error naming the entry point `fn`, *object NULL. */
vn_status vn_acquire(const void *handle, vn_kind kind, const char *fn, vn_object **object);
static inline void vn_unacquire(const void *object) { vn_release((vn_object *)object); }
/* The public release of an id: when `handle` is a live id of an object of `kind` (or of
 * any kind, with VN_KIND_DEAD), it goes stale and its reference is dropped; anything
 * else (NULL, stale, another kind, made up) is ignored, since a release has no status to
 * report it with. Inherited across fork(): the id goes stale, the object is left alone. */
void vn_release_handle(const void *handle, vn_kind kind);
/* Hand an object to a caller: `slot` (a vn_<kind> **, or &view->buffer) holds an object
 * pointer that owns one reference; with st VN_OK or VN_PENDING and *slot not NULL, *slot
 * becomes a new id that owns that reference. Returns st, or, when no id can be had (the
 * table is full), VN_ERROR_OUT_OF_MEMORY with the object released and *slot NULL. A NULL
 * slot, or a failed st, is left alone. */
vn_status vn_publish(vn_status st, void *slot);
/* A new id for `object`, taking a reference of its own (vn_*_retain_for_watch). */
vn_status vn_publish_retained(vn_object *object, void *slot);

/* Several handles at once: acquire handles[0..n) as kinds[0..n) into objects[0..n); on
 * failure none stays held. */
vn_status vn_acquire_all(const void *const *handles, const vn_kind *kinds, size_t n, const char *fn,
                         vn_object **objects);
void vn_unacquire_all(vn_object *const *objects, size_t n);

/* Inside an entry point's wrapper: the parameter `h` (a handle id) becomes the object
 * it names, so the body the wrapper calls uses its arguments as objects. */
#define VN_REBIND_(h, object) ((h) = (__typeof__(h))(void *)(object))

/* The body of an entry point that takes handles: acquire each (handle, kind) pair,
 * run `call` with them held (each handle parameter rebound to its object), release
 * them, return call's status. So every entry point is its public wrapper, one line,
 * over a static body that may then use its handles freely. The _OUT forms then hand the
 * object the body wrote into `slot` (a vn_<kind> **) to the caller as an id
 * (vn_publish). */
#define VN_CALL1_OUT(call, slot, h1, k1)                                                 \
    do {                                                                                 \
        vn_object *vn_call_o_;                                                           \
        vn_status vn_call_st_ = vn_acquire((h1), (k1), __func__, &vn_call_o_);            \
        if (vn_call_st_ != VN_OK) return vn_call_st_;                                     \
        VN_REBIND_(h1, vn_call_o_);                                                      \
        vn_call_st_ = (call);                                                            \
        vn_release(vn_call_o_);                                                          \
        return vn_publish(vn_call_st_, (slot));                                          \
    } while (0)
#define VN_CALL1(call, h1, k1)                                                           \
    do {                                                                                 \
        vn_object *vn_call_o_;                                                           \
        vn_status vn_call_st_ = vn_acquire((h1), (k1), __func__, &vn_call_o_);            \
        if (vn_call_st_ != VN_OK) return vn_call_st_;                                     \
        VN_REBIND_(h1, vn_call_o_);                                                      \
        vn_call_st_ = (call);                                                            \
        vn_release(vn_call_o_);                                                          \
        return vn_call_st_;                                                              \
    } while (0)
#define VN_CALL2_OUT(call, slot, h1, k1, h2, k2)                                         \
    do {                                                                                 \
        vn_object *vn_call_o_[2];                                                        \
        vn_status vn_call_st_ = vn_acquire_all((const void *const[]){(h1), (h2)},         \
                                               (const vn_kind[]){(k1), (k2)}, 2, __func__, vn_call_o_); \
        if (vn_call_st_ != VN_OK) return vn_call_st_;                                     \
        VN_REBIND_(h1, vn_call_o_[0]);                                                   \
        VN_REBIND_(h2, vn_call_o_[1]);                                                   \
        vn_call_st_ = (call);                                                            \
        vn_unacquire_all(vn_call_o_, 2);                                                 \
        return vn_publish(vn_call_st_, (slot));                                          \
    } while (0)
#define VN_CALL2(call, h1, k1, h2, k2) VN_CALL2_OUT(call, NULL, h1, k1, h2, k2)

/* The body of a getter that reads `expr` of one handle: `fallback` (the error then in
 * vn_last_error) when the handle is no live object of the kind. */
#define VN_GET(type, expr, fallback, h1, k1)                                             \
    do {                                                                                 \
        vn_object *vn_get_o_;                                                            \
        if (vn_acquire((h1), (k1), __func__, &vn_get_o_) != VN_OK) return (fallback);     \
        VN_REBIND_(h1, vn_get_o_);                                                       \
        type vn_get_value_ = (expr);                                                     \
        vn_release(vn_get_o_);                                                           \
        return vn_get_value_;                                                            \
    } while (0)

/* The body of a probe that answers an int of one handle (1 done, 0 not yet): `expr`, or
 * minus the handle's error status (vn_last_error says why) when it is no live object of
 * the kind, a fork() child's inherited one included. */
#define VN_PROBE(expr, h1, k1)                                                           \
    do {                                                                                 \
        vn_object *vn_probe_o_;                                                          \
        vn_status vn_probe_st_ = vn_acquire((h1), (k1), __func__, &vn_probe_o_);          \
        if (vn_probe_st_ != VN_OK) return -(int)vn_probe_st_;                             \
        VN_REBIND_(h1, vn_probe_o_);                                                     \
        int vn_probe_value_ = (expr);                                                    \
        vn_release(vn_probe_o_);                                                         \
        return vn_probe_value_;                                                          \
    } while (0)

/* ---- lock order --------------------------------------------------------------
 *
 * Every lock of the C layer, outermost first. A thread holding one may take only
 * locks further down the list; two locks of one rank are never held together,
 * except object locks, which an operation over several objects takes in ascending
 * object id with each object once (vn_device_submit). No lock is held when a call
 * returns to Python, and none across vn_release (a destroy takes its owner's locks).
 * wgpu callbacks take none of ranks 1-6, so none can wait on a lock its own thread
 * holds; the log callback takes only the leaf 7.
 *
 *   1. object locks: vn_sequence.lock, vn_submission.lock
 *   2. vn_device.submit_lock (the life lock; read by submits, which check their
 *      shared buffers under it, mapped-range reads, and pins and unpins of staging
 *      buffers; written by destroy, vn_device_destroy_shared, a destroy deferred to
 *      the last unpin, and vn_buffer_set_foreign_state)
 *   3. vn_device.scope_lock (error scopes: push, work, pop)
 *   4. vn_device.pipelines_lock (the device's pipeline list)
 *   5. vn_bind_cache.lock (one pipeline's bind groups, or the device's zero-fill ones)
 *   6. vn_device.staging_lock (the readback staging ring, the device's abandoned reads)
 *   7. the log ring's lock (log.c): taken by wgpu's log callback on any thread,
 *      inside any of the above; nothing is taken or called under it
 */

/* ---- diagnostics (diagnostics.c) ------------------------------------------------ */

/* After shader creation failed with `code`: rewrite the last error as "<what, at line
 * L, column C>\n<source line>\n<caret>\nFix: ..." with its position set
 * (vn_last_error_position); var<immediate> on a device without the feature becomes
 * VN_ERROR_UNSUPPORTED. Returns the resulting code. */
vn_status vn_shader_diagnose(vn_device *device, const char *wgsl, size_t wgsl_len, vn_status code);
/* After a check of entry point `entry` failed with `code` (this thread's message "<what>.
 * Fix: <fix>"): the same pointing at the source, "<what> at line L, column C (wgsl:L:C)\n
 * <source line>\n<caret>\nFix: <fix>" with the position set: at the first `var<space>`
 * (space not NULL), else the entry point's `@<attribute>`, else its name. Returns code;
 * the message is unchanged where no place is found. */
vn_status vn_shader_point(const char *wgsl, size_t wgsl_len, const char *entry, const char *attribute,
                          const char *space, vn_status code);
/* VN_ERROR_UNSUPPORTED: "<what>, but this device lacks ... immediates", then `shown` (a
 * source excerpt, or NULL) and the Fix that fits (the adapter offers it or not). */
vn_status vn_immediates_unsupported(const vn_device *device, const char *what, const char *shown);

/* ---- live-object counters (debug.c) ---------------------------------------- */

enum vn_live_kind {
    VN_LIVE_DEVICE, VN_LIVE_BUFFER, VN_LIVE_SHADER, VN_LIVE_PIPELINE, VN_LIVE_DISPATCH,
    VN_LIVE_BIND_GROUP, VN_LIVE_STAGING, VN_LIVE_RECORDING, VN_LIVE_SEQUENCE, VN_LIVE_SUBMISSION,
    VN_LIVE_PENDING_READ, VN_LIVE_MAPPING, VN_LIVE_KIND_COUNT
};
void vn_live_add(enum vn_live_kind kind, int64_t delta);
int64_t vn_live_count(enum vn_live_kind kind);

/* ---- device (device.c) ------------------------------------------------------ */

typedef struct vn_staging vn_staging;
typedef struct vn_fence vn_fence;

/* State a file above the device attaches to it (readback.c's staging buffers and
 * abandoned reads, fill.c's pipelines), and how the device lets it go: that file
 * registers its hooks (vn_device_attach) when it first attaches some, and device.c
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
    /* The two pops' reports, reused under scope_lock (device.c). */
    struct vn_scope_result *scope_results[2];

    /* The device's life lock. Submitting to a destroyed device, or reading the
     * mapped range of a buffer it destroyed, aborts the process inside wgpu-native,
     * so every submit and every mapped-range access holds this for reading (after
     * checking the flags) and vn_device_destroy holds it for writing. */
    vn_rwlock submit_lock;

    /* Readback staging buffers kept for reuse (readback.c). */
    vn_mutex staging_lock;
    vn_staging *staging_free;
    size_t staging_free_count;
    /* Staging buffers pinned mapped by a vn_mapping (a zero-copy read): destroying the
     * device would free the memory a caller still reads, so while any is pinned
     * vn_device_destroy only marks the device lost and sets destroy_deferred, and the
     * last unpin destroys it (vn_device_destroy_deferred). Both change under the life
     * lock: pinned for reading, destroy_deferred for writing. */
    atomic_long staging_pinned;
    bool destroy_deferred;
    /* Reads released while their copy was in flight: their map callback still points
     * at them, so the device keeps them (under staging_lock) until it fires and then
     * returns their staging buffers (vn_reads_reap). */
    struct vn_pending_read *abandoned;
    atomic_int abandoned_count;

    /* The process-wide list of devices released with work still running, and the
     * fence that says when that work has finished (device.c). */
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

void vn_device_retain(vn_device *device);
/* Past this many bytes queued by writes with no submit, a write flushes them (an empty
 * submit), so host memory for write staging stays bounded without a wait. */
#define VN_WRITE_FLUSH_BYTES (64ull << 20)
/* Send the writes queued since the last submit (an empty submit); *index, when not
 * NULL, receives its submission index. */
vn_status vn_device_flush_writes(vn_device *device, const char *what, uint64_t *index);
/* A fresh record's refcount (1), locks and live count. */
void vn_device_init_locks(vn_device *device);
void vn_describe_adapter(WGPUAdapter adapter, vn_device_info *out);
/* adapter_identity.c: fill uuid and pci_bus of `count` adapters in wgpu's order (the
 * whole list, or one alone: then only a (vendor, device) pair Vulkan shows once). */
void vn_identify_adapters(vn_device_info *adapters, size_t count);
/* features.c: the name of a WGPUFeatureName / WGPUNativeFeature, NULL if unknown; and an
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
void vn_device_unref(vn_device *device);
/* Free the devices released while busy whose work has finished, polling them up to
 * wait_s seconds; true when none is left waiting. */
bool vn_devices_reap(double wait_s);
/* VN_OK, VN_ERROR_RELEASED (closed) or VN_ERROR_DEVICE_LOST, with a message naming `what`. */
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

/* Mark the device destroyed (every later call: VN_ERROR_DEVICE_LOST with `reason`) and
 * destroy the GPU device, under the life lock (for writing) and the scope lock; while a
 * staging buffer is pinned, the destruction waits for the last unpin. Both destroy()
 * and wgpu-py's destroy of a shared device (vn_device_destroy_shared) come here. */
void vn_device_mark_destroyed(vn_device *device, const char *reason);
/* The last pinned staging buffer of a device whose destroy was deferred is gone:
 * destroy it now. Called by the unpin, never while holding the life lock. */
void vn_device_destroy_deferred(vn_device *device);

/* Take the life lock for reading and check the device; on VN_OK the caller
 * submits or reads a mapped range, then calls vn_submit_end. On failure nothing is
 * held. */
vn_status vn_submit_begin(vn_device *device, const char *what);
void vn_submit_end(vn_device *device);

/* A check a submit makes while it holds the device's life lock for reading, right
 * before its queue call: that wgpu-py has not mapped or destroyed a buffer the work
 * uses (vn_buffers_submittable). wgpu-py's map and destroy change that state under the
 * write side, so the check and the submit are one step for them
 * (vn_buffer_set_foreign_state, interop.c). */
typedef struct vn_submit_guard {
    vn_status (*check)(const void *arg);
    const void *arg;
} vn_submit_guard;

/* vn_submit_begin, then guard->check (guard may be NULL) with the lock held; on
 * failure nothing is held. */
vn_status vn_submit_begin_guarded(vn_device *device, const char *what, const vn_submit_guard *guard);
/* The same with the write side: no other submit, queued write, readback, destroy, or
 * wgpu-py map of a shared buffer can come until vn_submit_end_exclusive. A replay in
 * several parts holds it across all of them, so it runs as one unit, as one command
 * buffer would (replay_in_submits). */
vn_status vn_submit_begin_exclusive(vn_device *device, const char *what, const vn_submit_guard *guard);
void vn_submit_end_exclusive(vn_device *device);
/* The guard's check now (VN_OK for NULL). Work that encodes before it submits calls it
 * first too: refused at once, it encodes nothing (a command buffer finished and never
 * submitted is memory wgpu-native 29 does not reclaim); the check under the lock decides. */
vn_status vn_submit_guard_check(const vn_submit_guard *guard);

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
static inline vn_status vn_submit_ready(vn_device *device) {
    return device->serial_submits ? vn_wait(device, NULL, -1.0, NULL) : VN_OK;
}

/* wgpu-native fires AllowProcessEvents callbacks from wgpuInstanceProcessEvents or a
 * device poll: drive both until *flag is set; false after limit_s seconds. */
bool vn_process_until(WGPUInstance instance, WGPUDevice device, atomic_int *flag, double limit_s);

/* ---- buffers (buffer.c) ----------------------------------------------------- */

struct vn_buffer {
    vn_object obj; /* VN_KIND_BUFFER */
    vn_device *device;
    WGPUBuffer buffer;
    uint64_t byte_len;
    uint64_t allocation_len;
    uint64_t usage;
    uint64_t identity;     /* the allocation identity: obj.id */
    /* vn_foreign_state: what wgpu-py did to it, when it shares it (interop.c). Written
     * under the device's life lock for writing, read by submits under it for reading. */
    atomic_int foreign;
};

/* VN_OK, or VN_ERROR_BINDING naming `what` when one of the buffers is mapped or
 * destroyed by wgpu-py (submitting it would abort the process). Call under the life lock
 * (a submit's vn_submit_guard). */
vn_status vn_buffers_submittable(vn_buffer *const *buffers, size_t count, const char *what);
/* A guard check over one vn_buffer (arg), for readbacks. */
vn_status vn_buffer_submittable(const void *buffer);

void vn_buffer_retain(vn_buffer *buffer);
/* vn_buffer_create on a device object the caller holds; *out gets the buffer object. */
vn_status vn_buffer_create_held(vn_device *device, uint64_t byte_len, uint64_t usage, const void *data,
                                vn_buffer **out);
/* The header, identity, device reference and live count of a new buffer record. */
void vn_buffer_init(vn_buffer *buffer, vn_device *device);
/* VN_OK or why the buffer cannot be used (device closed or lost). */
vn_status vn_buffer_check(const vn_buffer *buffer, const char *what);
/* vn_view_check's rules, with `what` (the argument, e.g. "input 0") in the message:
 * *out gets the view with its size resolved. The view's buffer must be held (acquired). */
vn_status vn_view_resolve(const vn_view *view, const char *what, vn_view *out);
/* At an entry point: translate the caller's view (its buffer an id) into a view of the
 * buffer object, retained for the call (as vn_acquire does; `what` names it in the
 * message), resolved into *out. On failure nothing is held and out->buffer is NULL; on
 * success the caller releases out->buffer (vn_unacquire) when done, or keeps the
 * reference. */
vn_status vn_view_acquire(const vn_view *view, const char *what, vn_view *out);

/* ---- readback (readback.c) ---------------------------------------------------- */

/* Copy `nbytes` of `src` from `offset` (any byte; src has COPY_SRC usage and an
 * allocation of at least round_up(offset + nbytes, 4) bytes) into dst, after all work
 * submitted before the call: the readback primitive's copying form (the pinning form is
 * vn_pending_read_pin). The copy's submit checks `guard` under the life lock (NULL for
 * the layer's own buffers). Waits one time slice at most: VN_OK, or VN_PENDING with
 * *pending the read in flight (finish it with vn_pending_read_finish; NULL pending: it
 * is dropped), or with *pending NULL when it has not started (vn_submit_ready). */
vn_status vn_readback(vn_device *device, WGPUBuffer src, uint64_t offset, uint64_t nbytes, void *dst,
                      const vn_submit_guard *guard, vn_pending_read **pending);
/* Queue the copy and its map: a pending read (a handle) the caller owns. VN_PENDING
 * (*out NULL): not started, as vn_submit_ready says. */
vn_status vn_read_start(vn_device *device, WGPUBuffer src, uint64_t offset, uint64_t nbytes,
                        const vn_submit_guard *guard, vn_pending_read **out);
/* The view can be read back: COPY_SRC usage (the readback's submit checks the rest). */
vn_status vn_view_readable(const vn_view *view, const char *what);
/* vn_pending_read_finish of a read the C layer holds itself (a submission's ticks). */
vn_status vn_pending_read_finish_held(vn_pending_read *r, void *dst, uint64_t capacity);
/* vn_view_read_async of a resolved view whose buffer the caller holds. */
vn_status vn_view_read_async_held(const vn_view *view, vn_pending_read **out);
/* A recording's or dispatch's output `index`, bound as `v` (its buffer held by the
 * recording), copied into dst after all work submitted so far: the one output read both
 * kinds use (each checks its index and state first). *written and *pending as for
 * vn_dispatch_read_output. */
vn_status vn_output_read(const vn_view *v, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                         vn_pending_read **pending);
/* The device's readback hooks (vn_device_hooks, VN_PART_READBACK; registered with the
 * first staging buffer): free the staging ring; and return the staging buffers of
 * abandoned reads whose map has completed (all of them when final, leaking any whose
 * callback has not fired: it still points at them). */
void vn_staging_free_all(vn_device *device);
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

/* Submit one finished command buffer (holding the submit lock, after `guard`'s check
 * under it; guard may be NULL) and track its completion; *out gets a submission the
 * caller owns, which takes over the timing resources (timing may be NULL). Releases cb. */
vn_status vn_submit_tracked(vn_device *device, WGPUCommandBuffer cb, const char *what, vn_timing *timing,
                            const vn_submit_guard *guard, vn_submission **out);
/* The same with the submit lock already held by the caller (either side) and checked. */
vn_status vn_submit_tracked_locked(vn_device *device, WGPUCommandBuffer cb, vn_timing *timing, vn_submission **out);

/* ---- pipelines and the bind-group cache (pipeline.c, bind_cache.c) ---------- */

struct vn_shader {
    vn_object obj; /* VN_KIND_SHADER */
    vn_device *device;
    WGPUShaderModule module;
    char *wgsl;          /* the source (terminated): where pipeline errors point */
    size_t wgsl_len;
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
    uint32_t key_len;   /* number of bound views */
    uint64_t *key;      /* (identity, offset, padded size) per view: 3 * key_len words */
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
    vn_object obj; /* VN_KIND_PIPELINE */
    vn_device *device;
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout *layouts;
    uint32_t group_count;       /* highest group + 1; empty groups have layouts too */
    vn_binding *bindings;       /* sorted by (group, binding) */
    size_t binding_count;
    int32_t indirect_binding;
    uint64_t indirect_offset;
    uint32_t immediate_size;    /* bytes of var<immediate> data each dispatch takes, 0: none */
    char *label;                /* the entry point: wgpu's label, and what messages call it */
    vn_bind_cache cache;
    struct vn_pipeline *next, *prev; /* device->pipelines, under pipelines_lock */
};

void vn_pipeline_retain(vn_pipeline *pipeline);

vn_status vn_bind_cache_init(vn_bind_cache *cache, uint32_t capacity);
void vn_bind_cache_destroy(vn_bind_cache *cache);
/* A bind group for `group` of `pipeline` binding `views` (resolved: one per entry of the
 * group, in binding order; each binds its offset and vn_view_extent), from the
 * cache or created; the caller gets its own reference. Must run inside
 * vn_scope_begin/end. */
vn_status vn_bind_cache_get(vn_pipeline *pipeline, uint32_t group, const vn_view *views,
                            uint32_t count, WGPUBindGroup *out);
/* The same for any cache: `group` keys the entry and selects, from `bindings`, the
 * binding numbers of its entries; the group is made with `layout` on `device` and
 * labelled "<owner> @group(<group>)". */
vn_status vn_bind_cache_fetch(vn_bind_cache *cache, WGPUDevice device, WGPUBindGroupLayout layout,
                              const vn_binding *bindings, size_t binding_count, const char *owner, uint32_t group,
                              const vn_view *views, uint32_t count, WGPUBindGroup *out);
/* Drop every cached bind group that binds the buffer of `identity` (on its release). */
void vn_bind_cache_forget(vn_bind_cache *cache, uint64_t identity);
void vn_device_forget_buffer(vn_device *device, uint64_t identity);

/* ---- bound dispatch state (bind.c) -------------------------------------------- */

/* How one buffer range is zeroed before a dispatch (fill.c): a fill dispatch inside the
 * compute pass, or, where pipeline is NULL, clear_buffer outside it. */
typedef struct vn_clear {
    vn_view view;                  /* what is zeroed: [offset, offset + pad4(size)) of the
                                    * buffer, borrowed (whoever holds the clear holds it) */
    WGPUComputePipeline pipeline;  /* the device's fill pipeline (borrowed), or NULL */
    WGPUBindGroup group;           /* the clear's own reference; NULL with pipeline NULL */
    uint32_t workgroups;           /* of the fill dispatch */
} vn_clear;

/* Handles resolved against a pipeline's bindings, validated, with bind groups: all
 * that encoding one dispatch needs. Holds a reference on everything it names. */
typedef struct vn_bound {
    vn_pipeline *pipeline;
    uint32_t group_count;
    WGPUBindGroup *groups;
    size_t buffer_count;
    vn_buffer **buffers;   /* one per binding, binding order */
    vn_view *views;        /* one per binding: its buffer (held by buffers), offset, size */
    size_t output_count;
    vn_view *outputs;      /* the read_write bindings' views, output order */
    uint32_t x, y, z;
    vn_buffer *indirect;   /* its own reference; NULL for a direct dispatch */
    uint64_t indirect_offset; /* from the start of the buffer */
    uint8_t *immediates;   /* the dispatch's own copy of its var<immediate> data, or NULL */
    uint32_t immediate_len;
    size_t clear_count;
    vn_clear *clears;      /* one per non-preserved output, output order */
} vn_bound;

/* The binding rule's one owner: args (vn_dispatch_args' rules) resolved against the
 * pipeline's bindings and checked, with bind groups; immediates copied. Failures name
 * the pipeline ("pipeline `main`: ..."). */
vn_status vn_bound_resolve(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_bound *out);
/* vn_buffers_submittable over every buffer the bound dispatch uses (its bindings' and
 * its indirect buffer). Call under the life lock. */
vn_status vn_bound_submittable(const vn_bound *bound, const char *what);
/* VN_ERROR_BINDING when `forms` (vn_bind_form bits) names both forms. */
vn_status vn_check_forms(uint32_t forms);
/* The named form's matching: index_of[j] (binding_count entries) gets the index into
 * names of the name of binding j, or SIZE_MAX for a binding `takes` refuses. A name that
 * is no binding, one `takes` refuses (the message says it `not_taken`), one repeated,
 * or a binding `takes` accepts left unnamed is VN_ERROR_BINDING listing the bindings. */
vn_status vn_match_names(const vn_pipeline *p, const char *const *names, size_t count,
                         bool (*takes)(const vn_binding *), const char *not_taken, size_t *index_of);
/* "`x` (@group(0) @binding(0) var<storage, read>), ..." of the bindings `filter` accepts
 * (all when NULL), or "none". */
void vn_binding_list(const vn_pipeline *p, bool (*filter)(const vn_binding *), char *buf, size_t cap);
/* Per-dispatch timing gives every dispatch a pass of its own, and its clears go
 * outside the timed passes (clear_buffer), so each time is the dispatch's alone. */
static inline bool vn_timing_splits(const vn_timing *t) { return t != NULL && t->mode == VN_TIMING_PER_DISPATCH; }
/* One compute pass with the non-preserved outputs' clears and the dispatch; clears
 * that need clear_buffer (all of them when timing splits) go before the pass. */
void vn_bound_encode(const vn_bound *bound, WGPUCommandEncoder encoder, vn_timing *timing);
/* True when encoding the bound dispatch clears at least one output. */
static inline bool vn_bound_clears(const vn_bound *bound) { return bound->clear_count > 0; }
/* True when some clear of the bound dispatch is a clear_buffer, which ends the pass. */
bool vn_bound_clears_outside(const vn_bound *bound, const vn_timing *timing);
/* Inside an open compute pass: set pipeline and bind groups where they differ from
 * *state (updated), the dispatch's immediates (always: each step may carry its own),
 * then dispatch. */
typedef struct vn_pass_state {
    WGPUComputePipeline pipeline;
    WGPUBindGroup groups[8];
} vn_pass_state;
void vn_bound_dispatch_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state);
/* Outside a pass: the clears that go there (see vn_bound_clears_outside). */
void vn_bound_encode_clears(const vn_bound *bound, WGPUCommandEncoder encoder, const vn_timing *timing);
/* Inside an open pass: the fill dispatches of the clears that go there. */
void vn_bound_fill_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state,
                           const vn_timing *timing);
void vn_bound_release(vn_bound *bound);
/* Output `index` of a bound dispatch (`kind`: "dispatch", "recording", for the message),
 * or VN_ERROR_OUTPUT_INDEX naming the range. */
vn_status vn_bound_output(const vn_bound *bound, int64_t index, const char *kind, const vn_view **out);

/* ---- the built-in zero fill (fill.c) ------------------------------------------ */

/* Plan how the resolved `view` is zeroed: a fill dispatch where its range can be bound
 * as storage (STORAGE usage, the offset aligned for a storage binding, the size within
 * the binding limit) and is no larger than the device's fill limit, else clear_buffer.
 * Runs inside vn_scope_begin/end (it may make the fill pipelines and a bind group). */
vn_status vn_clear_plan(vn_device *device, const vn_view *view, vn_clear *out);
void vn_clear_release(vn_clear *clear);
/* Whether the clear is a clear_buffer outside the pass (always, when timing splits). */
static inline bool vn_clear_outside(const vn_clear *clear, const vn_timing *timing) {
    return clear->pipeline == NULL || vn_timing_splits(timing);
}
void vn_clear_encode_outside(const vn_clear *clear, WGPUCommandEncoder encoder);
void vn_clear_fill_in_pass(const vn_clear *clear, WGPUComputePassEncoder pass, vn_pass_state *state);
/* On a buffer's release: drop the fill bind group naming it. */
void vn_fill_forget(vn_device *device, uint64_t identity);
/* On the device's free: free its fill pipelines and bind groups (the device's hook,
 * VN_PART_FILL, registered when the fill is made). */
void vn_fill_release(vn_device *device);

/* ---- small helpers ------------------------------------------------------------ */

static inline uint64_t vn_pad4(uint64_t n) { return n == 0 ? 4 : (n + 3) & ~(uint64_t)3; }
/* The bytes a resolved view occupies on the GPU, as it binds and clears: its size,
 * padded to 4 only where it ends its buffer (the padding is the allocation's own; a
 * view ending mid-word inside the buffer would reach its neighbour's bytes). */
static inline uint64_t vn_view_extent(const vn_view *v) {
    return v->offset + v->size == v->buffer->byte_len ? vn_pad4(v->size) : v->size;
}
/* The device's transfer kernel state (transfer.c), freed with the device. */
void vn_transfer_release(vn_device *device);
static inline WGPUStringView vn_sv(const char *s) { WGPUStringView v = {s, WGPU_STRLEN}; return v; }

#endif /* VN_INTERNAL_H */
