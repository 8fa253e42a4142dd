/* layer_object.h - layer 2: the object header every handle's object starts with, the table
 * of handle ids (object.c), the VN_CALL wrappers every entry point is written in, and
 * the lock order of the whole C layer. */
#ifndef VN_LAYER_OBJECT_H
#define VN_LAYER_OBJECT_H

#include "../base/layer_base.h"

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

/* "vn" + 0 when destroyed, then VN_KIND_<name> for each handle kind of object_kinds.h,
 * "vn" + 1, + 2, ... in its order. */
typedef enum vn_kind {
    VN_KIND_DEAD = 0x766e0000,
#define VN_HANDLE_KIND(name, field, what) VN_KIND_##name,
#define VN_INNER_KIND(name, field)
#include "../include/object_kinds.h"
#undef VN_HANDLE_KIND
#undef VN_INNER_KIND
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

/* The call guard: exit() and fork() against calls in flight in other threads.
 * - exit() runs the GPU driver's exit handlers while daemon threads may still be inside
 *   a call (Python has finalized; their C code runs on), and the driver crashes under
 *   them: on the H200 free(): invalid pointer, a double free in vkDestroyDevice (a
 *   daemon thread's Device.close()), SIGSEGV or a hang, in most exits while 4 threads
 *   made, closed and listed devices.
 * - fork() copies the locks other threads hold inside the driver and the Vulkan loader
 *   into the child, held for ever: the child's first vn.Device() then never returns (the
 *   H200: inside vkCreateDevice while another thread copied between devices; lavapipe:
 *   the loader's global mutex, while another thread made a device or listed adapters).
 * So every entry point that may reach the driver (VN_CALL*, VN_PROBE, every release, device
 * creation and adoption, adapter listing, views' reads and writes, the live counts; the
 * others are listed in tests/test_structure.py) is
 * bracketed by vn_call_guard_enter / vn_call_guard_leave, and both wait first for the
 * calls in flight (up to 10 s; only the outermost call on a thread counts):
 * - the exit, in vn_process_exiting, which Python's atexit calls (before any C exit
 *   handler: the driver registers its own as it loads, during the process's first
 *   device) and a C exit handler armed after the first call that loaded the driver
 *   (vn_exit_guard_arm) calls again. From then on a call on any other thread never
 *   returns (it has no Python left to return to, and going on would race the driver's
 *   teardown); the exiting thread's own calls go on, as Python's finalizers release
 *   objects there.
 * - a fork, in its pthread_atfork prepare handler (vn_fork_guard_arm, before the first
 *   call that starts the driver): a call that would start during it waits until fork()
 *   has returned in the parent. A call longer than the wait (a compile of seconds) is
 *   not waited for. */
void vn_call_guard_enter(void);
void vn_call_guard_leave(void);
void vn_exit_guard_arm(void);
void vn_fork_guard_arm(void);
/* True in a fork() child whose fork did not wait out every call in flight (one ran past
 * the 10 s): a parent thread was inside the GPU driver, whose locks the child holds
 * copies of, taken. Such a child starts no driver (adapters.c). */
bool vn_forked_during_a_call(void);
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
void vn_id_release(const void *handle, vn_kind kind);
/* Hand an object to a caller: `slot` (a vn_<kind> **, or &view->buffer) holds an object
 * pointer that owns one reference; with st VN_OK or VN_PENDING and *slot not NULL, *slot
 * becomes a new id that owns that reference. Returns st, or, when no id can be had (the
 * table is full), VN_ERROR_OUT_OF_MEMORY with the object released and *slot NULL. A NULL
 * slot, or a failed st, is left alone. */
vn_status vn_publish(vn_status st, void *slot);

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
#define VN_CALL1_(call, h1, k1, result)                                                  \
    do {                                                                                 \
        vn_object *vn_call_o_;                                                           \
        vn_call_guard_enter();                                                           \
        vn_status vn_call_st_ = vn_acquire((h1), (k1), __func__, &vn_call_o_);            \
        if (vn_call_st_ == VN_OK) {                                                      \
            VN_REBIND_(h1, vn_call_o_);                                                  \
            vn_call_st_ = (call);                                                        \
            vn_release(vn_call_o_);                                                      \
            vn_call_st_ = (result);                                                      \
        }                                                                                \
        vn_call_guard_leave();                                                           \
        return vn_call_st_;                                                              \
    } while (0)
#define VN_CALL1_OUT(call, slot, h1, k1) VN_CALL1_(call, h1, k1, vn_publish(vn_call_st_, (slot)))
/* Without a slot: call's status as it is, with no vn_publish call. */
#define VN_CALL1(call, h1, k1) VN_CALL1_(call, h1, k1, vn_call_st_)
#define VN_CALL2_OUT(call, slot, h1, k1, h2, k2)                                         \
    do {                                                                                 \
        vn_object *vn_call_o_[2];                                                        \
        vn_call_guard_enter();                                                           \
        vn_status vn_call_st_ = vn_acquire_all((const void *const[]){(h1), (h2)},         \
                                               (const vn_kind[]){(k1), (k2)}, 2, __func__, vn_call_o_); \
        if (vn_call_st_ == VN_OK) {                                                      \
            VN_REBIND_(h1, vn_call_o_[0]);                                               \
            VN_REBIND_(h2, vn_call_o_[1]);                                               \
            vn_call_st_ = (call);                                                        \
            vn_unacquire_all(vn_call_o_, 2);                                             \
            vn_call_st_ = vn_publish(vn_call_st_, (slot));                               \
        }                                                                                \
        vn_call_guard_leave();                                                           \
        return vn_call_st_;                                                              \
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
        vn_call_guard_enter();                                                           \
        vn_status vn_probe_st_ = vn_acquire((h1), (k1), __func__, &vn_probe_o_);          \
        int vn_probe_value_ = -(int)vn_probe_st_;                                        \
        if (vn_probe_st_ == VN_OK) {                                                     \
            VN_REBIND_(h1, vn_probe_o_);                                                 \
            vn_probe_value_ = (expr);                                                    \
            vn_release(vn_probe_o_);                                                     \
        }                                                                                \
        vn_call_guard_leave();                                                           \
        return vn_probe_value_;                                                          \
    } while (0)

/* ---- lock order --------------------------------------------------------------
 *
 * The one statement of the C layer's lock order (docs/LOCKING.md says what each lock is
 * held for, and points here). Every lock by rank, outermost first: a thread holding one
 * may take only locks of a higher rank; two locks of one rank are never held together,
 * except object locks, which an operation over several objects takes in ascending
 * object id with each object once (batch.c). No lock is held when a call returns to
 * Python, and none across vn_release (a destroy takes its owner's locks). wgpu
 * callbacks take none of ranks 1-6, so none can wait on a lock its own thread holds;
 * the log callback takes only the leaf, 7.
 *
 * Built with VN_LOCK_RANK_CHECK (scripts/asan.sh's build is), each lock is given its
 * rank where it is initialised (vn_lock_rank_set) and taking a lock of a rank lower
 * than or equal to one the thread holds (object locks apart) aborts, naming both. */
typedef enum vn_lock_rank {
    VN_LOCK_OBJECT = 1,     /* object locks: vn_sequence.lock, vn_submission.lock, vn_pending_read.lock */
    VN_LOCK_LIFE = 2,       /* vn_device.life_lock (the life lock; read by submits, which check
                             * their shared buffers under it, mapped-range reads, and pins and
                             * unpins of staging buffers; written by destroy, vn_device_destroy_shared,
                             * a destroy deferred to the last unpin, vn_buffer_set_foreign_state,
                             * and work submitted in parts, vn_submit_parts) */
    VN_LOCK_SCOPE = 3,      /* vn_device.scope_lock (error scopes: push, work, pop) */
    VN_LOCK_PIPELINES = 4,  /* vn_device.pipelines_lock (the device's pipeline list) */
    VN_LOCK_BIND_CACHE = 5, /* vn_bind_cache.lock (one pipeline's bind groups, or the device's
                             * zero-fill ones) */
    VN_LOCK_READBACK = 6,   /* vn_readback.lock (readback.c: the staging ring and abandoned reads) */
    VN_LOCK_LOG = 7,        /* the log ring's lock (log.c, below this layer, so unranked by the
                             * check): taken by wgpu's log callback on any thread, inside any of
                             * the above; nothing is taken or called under it */
    VN_LOCK_HOST_BLOCKS = 8 /* the host block pool's lock (host_blocks.c, below this layer, so
                             * unranked): taken by vn_host_block_take and _give alone, called
                             * from Python with no other lock held; nothing is taken under it */
} vn_lock_rank;

/* Handle ids live now (VN_INTROSPECT_LIVE_IDS, introspect.c). */
int64_t vn_debug_live_ids(void);

#endif /* VN_LAYER_OBJECT_H */
