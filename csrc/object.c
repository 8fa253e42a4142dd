/* object.c - the header every C object behind a handle starts with: kind, references,
 * destroy, id, fork generation; and the errors of a handle that fails the check at an
 * entry point. */
#include "internal.h"

/* Monotonic and never reused, unlike an address: a cache keyed by it (the bind-group
 * cache keys buffers by it) cannot hand out what a freed object's successor owns. */
static atomic_ullong next_identity = 1;

uint64_t vn_next_identity(void) { return atomic_fetch_add(&next_identity, 1); }

/* ---- fork() -------------------------------------------------------------------- */

atomic_uint vn_fork_generation;

static void on_fork_child(void) {
    atomic_fetch_add(&vn_fork_generation, 1);
    /* With a device inherited, the GPU driver's own exit handlers (registered in the
     * parent) tear down state whose threads stayed in the parent: lavapipe crashes in
     * them, NVIDIA's wait. The child's exit ends before them; Python's own finalization
     * (and so every finalizer) has run by then. */
    if (vn_live_count(VN_LIVE_DEVICE) > 0) vn_exit_before_earlier_handlers();
}

static vn_once fork_once = VN_ONCE_INIT;
static void fork_init(void) { vn_at_fork_child(on_fork_child); }

void vn_object_init(vn_object *object, vn_kind kind, void (*destroy)(vn_object *)) {
    vn_once_run(&fork_once, fork_init);
    atomic_init(&object->refs, 1);
    object->destroy = destroy;
    object->id = vn_next_identity();
    object->generation = atomic_load_explicit(&vn_fork_generation, memory_order_relaxed);
    atomic_store_explicit(&object->kind, (unsigned)kind, memory_order_release);
}

void vn_release(vn_object *object) {
    /* In a fork() child an inherited object is only forgotten, whatever its kind: no
     * reference count, no destroy, no wgpu call (a mapping is not unmapped, a device not
     * released: its driver threads are in the parent, and destroying it blocks for ever). */
    if (vn_inherited(object)) return;
    if (atomic_fetch_sub_explicit(&object->refs, 1, memory_order_acq_rel) != 1) return;
    /* Poisoned before anything is freed: a stale pointer to it reads as released. */
    atomic_store_explicit(&object->kind, (unsigned)VN_KIND_DEAD, memory_order_relaxed);
    object->destroy(object);
}

vn_status vn_acquire_all(const void *const *handles, const vn_kind *kinds, size_t n, const char *fn) {
    for (size_t i = 0; i < n; i++) {
        vn_status st = vn_acquire(handles[i], kinds[i], fn);
        if (st != VN_OK) {
            vn_unacquire_all(handles, i);
            return st;
        }
    }
    return VN_OK;
}

void vn_unacquire_all(const void *const *handles, size_t n) {
    while (n > 0) vn_unacquire(handles[--n]);
}

/* The class a Python user knows the kind by. */
static const char *kind_name(unsigned kind) {
    switch (kind) {
    case VN_KIND_DEVICE: return "Device";
    case VN_KIND_BUFFER: return "Buffer";
    case VN_KIND_SHADER: return "shader module";
    case VN_KIND_PIPELINE: return "Pipeline";
    case VN_KIND_DISPATCH: return "PrerecordedDispatch";
    case VN_KIND_RECORDING: return "Recording";
    case VN_KIND_SEQUENCE: return "Sequence";
    case VN_KIND_SUBMISSION: return "Submission";
    case VN_KIND_PENDING_READ: return "PendingRead";
    case VN_KIND_MAPPING: return "MappedStaging";
    default: return NULL;
    }
}

void vn_handle_release(void *handle) {
    /* Any live kind: vn_release's generic path is each kind's release (every
     * vn_<kind>_release is vn_release_handle of its kind). */
    vn_object *object = handle;
    if (object != NULL && kind_name(atomic_load_explicit(&object->kind, memory_order_relaxed)) != NULL)
        vn_release(object);
}

vn_status vn_handle_error(const void *handle, vn_kind kind, const char *fn) {
    const char *want = kind_name((unsigned)kind);
    if (handle == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: the %s handle is NULL. Fix: pass a live vn.%s.", fn, want, want);
    unsigned have = atomic_load_explicit(&((const vn_object *)handle)->kind, memory_order_relaxed);
    if (have == VN_KIND_DEAD)
        return vn_fail(VN_ERROR_RELEASED,
                       "%s: this vn.%s was released: its native object is gone. Fix: create a new %s; a released "
                       "handle cannot be used.", fn, want, want);
    const char *got = kind_name(have);
    if (have == (unsigned)kind && vn_inherited((const vn_object *)handle))
        return vn_fail(VN_ERROR_FORKED,
                       "%s: this vn.%s was created before os.fork() and this process is the child, which inherited "
                       "it; wgpu-native cannot use a device, or anything made on it, across fork(). Fix: create a "
                       "new vn.Device in the child (and its buffers and pipelines there); objects inherited from the "
                       "parent can only be dropped.", fn, want);
    if (got != NULL)
        return vn_fail(VN_ERROR_WRONG_TYPE, "%s: got a vn.%s where a vn.%s is needed. Fix: pass a vn.%s.", fn, got,
                       want, want);
    /* Not a tag at all: freed memory already reused, or a pointer that never was a handle. */
    return vn_fail(VN_ERROR_RELEASED,
                   "%s: the pointer passed as a vn.%s is no live vyre_native object (its header reads 0x%08x): it "
                   "was released, or it never was a handle. Fix: pass a live vn.%s.", fn, want, have, want);
}
