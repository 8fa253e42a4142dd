/* object.c - the header every C object behind a handle starts with (kind, references,
 * destroy, id, fork generation), and the table of handle ids the API hands out instead
 * of object pointers, with the errors of a handle that fails its check at an entry
 * point. */
#include <stdlib.h>
#include <string.h>

#include "layer_object.h"

/* Monotonic and never reused, unlike an address: a cache keyed by it (the bind-group
 * cache keys buffers by it) cannot hand out what a freed object's successor owns. */
static atomic_ullong next_identity = 1;

uint64_t vn_next_identity(void) { return atomic_fetch_add(&next_identity, 1); }

/* ---- the call guard: exit() and fork() against calls in flight (layer_object.h) ---- */

atomic_uint vn_fork_generation;

/* Calls in flight (each thread's outermost bracketed call counts once); the process is
 * exiting; a fork() is being prepared. */
static atomic_int calls_in_flight, exiting, forking;
/* Per thread: how deep in bracketed calls (only the outermost counts, so a nested call,
 * a signal handler's included, never waits on its own thread's count) and whether this
 * thread runs the exit (its calls go on: Python's finalizers release objects there). */
static VN_THREAD_LOCAL unsigned guard_depth;
static VN_THREAD_LOCAL bool exit_thread;

void vn_call_guard_enter(void) {
    if (guard_depth++ > 0) return;
    for (;;) {
        atomic_fetch_add(&calls_in_flight, 1); /* seq_cst: this sees a flag or its setter sees the count */
        if (atomic_load(&exiting) && !exit_thread) {
            atomic_fetch_sub(&calls_in_flight, 1);
            for (;;) vn_sleep_ns(1000000000ull);
        }
        if (!atomic_load(&forking)) return;
        atomic_fetch_sub(&calls_in_flight, 1); /* the fork goes first */
        while (atomic_load(&forking)) vn_sleep_ns(100000);
    }
}

void vn_call_guard_leave(void) {
    if (--guard_depth == 0) atomic_fetch_sub(&calls_in_flight, 1);
}

/* Wait (up to 10 s) until the calls in flight are `own` (the caller's own, when it is
 * inside one: a fork from a signal handler) or fewer. */
static void wait_for_calls(int own) {
    for (int waited = 0; atomic_load(&calls_in_flight) > own && waited < 100000; waited++) vn_sleep_ns(100000);
}

void vn_process_exiting(void) {
    exit_thread = true;
    atomic_store(&exiting, 1);
    wait_for_calls(guard_depth > 0);
}

/* The last fork's wait ended with calls still in flight; in the child, that its fork did. */
static atomic_bool fork_left_calls, forked_during_a_call;

static void on_fork_prepare(void) {
    atomic_store(&forking, 1);
    wait_for_calls(guard_depth > 0);
    atomic_store(&fork_left_calls, atomic_load(&calls_in_flight) > (int)(guard_depth > 0));
}

bool vn_forked_during_a_call(void) { return atomic_load(&forked_during_a_call); }

static void on_fork_parent(void) { atomic_store(&forking, 0); }

static void on_fork_child(void) {
    atomic_fetch_add(&vn_fork_generation, 1);
    if (atomic_load(&fork_left_calls)) atomic_store(&forked_during_a_call, true); /* sticky: its children too */
    /* The calls in flight, none by the fork's wait, were the parent's threads' anyway. */
    atomic_store(&calls_in_flight, guard_depth > 0);
    atomic_store(&forking, 0);
    /* With a device inherited, the GPU driver's own exit handlers (registered in the
     * parent) tear down state whose threads stayed in the parent: lavapipe crashes in
     * them, NVIDIA's wait. The child's exit ends before them; Python's own finalization
     * (and so every finalizer) has run by then. */
    if (vn_live_count(VN_LIVE_DEVICE) > 0) vn_exit_before_earlier_handlers();
}

static vn_once exit_once = VN_ONCE_INIT;
static void exit_init(void) { vn_at_exit(vn_process_exiting); }

void vn_exit_guard_arm(void) { vn_once_run(&exit_once, exit_init); }

static vn_once fork_once = VN_ONCE_INIT;
static void fork_init(void) { vn_at_fork(on_fork_prepare, on_fork_parent, on_fork_child); }

void vn_fork_guard_arm(void) { vn_once_run(&fork_once, fork_init); }

void vn_object_init(vn_object *object, vn_kind kind, void (*destroy)(vn_object *)) {
    vn_fork_guard_arm();
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

/* ---- handle ids ----------------------------------------------------------------
 *
 * An id is (generation << 32) | slot index. A slot's generation is odd while an id of it
 * is live and even while the slot is free, so an id's generation is odd: never 0, and no
 * NULL or small integer is ever one. Slots live in pages that are allocated on demand
 * and never freed or moved, so any id, stale or made up, reads only table memory; the
 * object behind a slot is read only while the slot is pinned with its generation
 * matching, and then the slot's reference keeps it alive. */

_Static_assert(sizeof(void *) == 8, "handle ids are 64-bit values carried in pointers");

enum { ID_PAGE_BITS = 12, ID_PAGE = 1 << ID_PAGE_BITS, ID_MAX_PAGES = 1 << 14 };
#define ID_MAX_SLOTS ((uint64_t)ID_PAGE * ID_MAX_PAGES)
#define ID_PINS 0xffffffffull

typedef struct id_slot {
    _Atomic uint64_t state;    /* generation << 32 | pins (entry points translating it now) */
    vn_object *object;         /* while live: the object, one reference of it the slot's */
    unsigned fork_generation;  /* vn_fork_generation when the id was issued */
    _Atomic uint32_t next;     /* on the free list: the next slot's index + 1 (0 ends it) */
} id_slot;

static _Atomic(id_slot *) id_pages[ID_MAX_PAGES];
static atomic_ullong id_fresh;  /* slots ever taken from the pages */
/* The free list, a Treiber stack: an ABA tag (bumped by every change) << 32 | top index + 1.
 * Lock-free, so a fork() child never waits on a parent's thread caught inside it. */
static atomic_ullong id_free;
static atomic_llong id_live;    /* ids live now (vn_debug_live_ids) */

static id_slot *slot_at(uint64_t index) {
    if (index >= ID_MAX_SLOTS) return NULL;
    id_slot *page = atomic_load_explicit(&id_pages[index >> ID_PAGE_BITS], memory_order_acquire);
    return page == NULL ? NULL : &page[index & (ID_PAGE - 1)];
}

static bool free_pop(uint32_t *index) {
    uint64_t head = atomic_load_explicit(&id_free, memory_order_acquire);
    for (;;) {
        uint32_t top = (uint32_t)head;
        if (top == 0) return false;
        /* Possibly popped and pushed again meanwhile: then the tag changed and the
         * exchange fails; the slot's memory is there either way. */
        uint32_t next = atomic_load_explicit(&slot_at(top - 1)->next, memory_order_relaxed);
        uint64_t popped = (((head >> 32) + 1) << 32) | next;
        if (atomic_compare_exchange_weak_explicit(&id_free, &head, popped, memory_order_acquire,
                                                  memory_order_acquire)) {
            *index = top - 1;
            return true;
        }
    }
}

static void free_push(uint32_t index) {
    id_slot *slot = slot_at(index);
    uint64_t head = atomic_load_explicit(&id_free, memory_order_relaxed), pushed;
    do {
        atomic_store_explicit(&slot->next, (uint32_t)head, memory_order_relaxed);
        pushed = (((head >> 32) + 1) << 32) | (index + 1);
    } while (!atomic_compare_exchange_weak_explicit(&id_free, &head, pushed, memory_order_release,
                                                    memory_order_relaxed));
}

/* A slot no id names: from the free list, else a fresh one (its page made if needed). */
static vn_status slot_take(uint32_t *index) {
    if (free_pop(index)) return VN_OK;
    uint64_t fresh = atomic_fetch_add_explicit(&id_fresh, 1, memory_order_relaxed);
    if (fresh >= ID_MAX_SLOTS)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY,
                       "%llu vyre_native handles are live at once, the most the handle table holds. Fix: release "
                       "handles that are no longer needed.", (unsigned long long)ID_MAX_SLOTS);
    _Atomic(id_slot *) *at = &id_pages[fresh >> ID_PAGE_BITS];
    if (atomic_load_explicit(at, memory_order_acquire) == NULL) {
        id_slot *page = calloc(ID_PAGE, sizeof *page);
        if (page == NULL)
            return vn_fail_no_memory("a page of the handle table", ID_PAGE * sizeof *page);
        id_slot *none = NULL;
        if (!atomic_compare_exchange_strong_explicit(at, &none, page, memory_order_acq_rel, memory_order_acquire))
            free(page); /* another thread made it first */
    }
    *index = (uint32_t)fresh;
    return VN_OK;
}

/* A new id owning one reference of `object`. */
static vn_status id_issue(vn_object *object, uint64_t *id) {
    uint32_t index = 0;
    vn_status st = slot_take(&index);
    if (st != VN_OK) return st;
    id_slot *slot = slot_at(index);
    slot->object = object;
    slot->fork_generation = atomic_load_explicit(&vn_fork_generation, memory_order_relaxed);
    /* A free slot has no pins (its even generation matches no id), so no one else
     * writes its state: a store publishes the object with the new generation. */
    uint32_t generation = (uint32_t)(atomic_load_explicit(&slot->state, memory_order_relaxed) >> 32) + 1;
    atomic_store_explicit(&slot->state, (uint64_t)generation << 32, memory_order_release);
    atomic_fetch_add_explicit(&id_live, 1, memory_order_relaxed);
    *id = ((uint64_t)generation << 32) | index;
    return VN_OK;
}

vn_status vn_publish(vn_status st, void *slot) {
    if (slot == NULL || (st != VN_OK && st != VN_PENDING)) return st;
    vn_object *object;
    memcpy(&object, slot, sizeof object);
    if (object == NULL) return st;
    uint64_t id = 0;
    vn_status issued = id_issue(object, &id);
    void *handle = (void *)(uintptr_t)id;
    memcpy(slot, &handle, sizeof handle);
    if (issued == VN_OK) return st;
    vn_release(object);
    return issued;
}

int64_t vn_debug_live_ids(void) { return atomic_load_explicit(&id_live, memory_order_relaxed); }

/* The slot an id names, or NULL when no id was ever made of its bits (NULL, an even
 * generation, an index past the table). */
static id_slot *slot_of(uint64_t id) {
    return (id >> 32) & 1 ? slot_at((uint32_t)id) : NULL;
}

/* Pin the slot if its generation is still `generation`: its object then stays the
 * slot's until the unpin. False (nothing pinned, *state the slot's state) when not. */
static bool slot_pin(id_slot *slot, uint32_t generation, uint64_t *state) {
    uint64_t s = atomic_load_explicit(&slot->state, memory_order_relaxed);
    do {
        if ((uint32_t)(s >> 32) != generation) {
            *state = s;
            return false;
        }
    } while (!atomic_compare_exchange_weak_explicit(&slot->state, &s, s + 1, memory_order_acquire,
                                                    memory_order_relaxed));
    return true;
}

static void slot_unpin(id_slot *slot) { atomic_fetch_sub_explicit(&slot->state, 1, memory_order_release); }

/* The class a Python user knows the kind by. */
static const char *kind_name(unsigned kind) {
    switch (kind) {
#define VN_HANDLE_KIND(name, field, what) case VN_KIND_##name: return what;
#define VN_INNER_KIND(name, field)
#include "../include/object_kinds.h"
#undef VN_HANDLE_KIND
#undef VN_INNER_KIND
    default: return "object";
    }
}

/* The cold path of vn_acquire: why `handle` is no live id of `kind`. `state` is the
 * slot's state when it has one (slot not NULL), `have` the kind of its live object
 * (0 when the generation did not match). */
static vn_status handle_error(const void *handle, vn_kind kind, const char *fn, const id_slot *slot, uint64_t state,
                              unsigned have, bool inherited) {
    const char *want = kind_name((unsigned)kind);
    uint64_t id = (uintptr_t)handle;
    if (handle == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: the %s handle is NULL. Fix: pass a live vn.%s.", fn, want, want);
    if (have != 0 && have != (unsigned)kind)
        return vn_fail(VN_ERROR_WRONG_TYPE, "%s: got a vn.%s where a vn.%s is needed. Fix: pass a vn.%s.", fn,
                       kind_name(have), want, want);
    if (have != 0 && inherited)
        return vn_fail(VN_ERROR_FORKED,
                       "%s: this vn.%s was created before os.fork() and this process is the child, which inherited "
                       "it; wgpu-native cannot use a device, or anything made on it, across fork(). Fix: create a "
                       "new vn.Device in the child (and its buffers and pipelines there); objects inherited from the "
                       "parent can only be dropped.", fn, want);
    /* The slot's generation moved past the id's: the id was released (every later id of
     * the slot has a higher generation). */
    if (slot != NULL && (uint32_t)(state >> 32) > (uint32_t)(id >> 32))
        return vn_fail(VN_ERROR_RELEASED,
                       "%s: this vn.%s was released: its native object is gone. Fix: create a new %s; a released "
                       "handle cannot be used.", fn, want, want);
    return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                   "%s: 0x%llx, passed as a vn.%s, is no vyre_native handle: no call ever returned it. Fix: pass a "
                   "handle that a vyre_native call returned.", fn, (unsigned long long)id, want);
}

vn_status vn_acquire(const void *handle, vn_kind kind, const char *fn, vn_object **object) {
    *object = NULL;
    uint64_t id = (uintptr_t)handle, state = 0;
    id_slot *slot = slot_of(id);
    if (slot == NULL || !slot_pin(slot, (uint32_t)(id >> 32), &state))
        return handle_error(handle, kind, fn, slot, state, 0, false);
    vn_object *o = slot->object;
    unsigned have = atomic_load_explicit(&o->kind, memory_order_relaxed);
    bool inherited = vn_inherited(o), ok = have == (unsigned)kind && !inherited;
    if (ok) vn_retain(o); /* under the pin: the slot's reference keeps it alive until then */
    slot_unpin(slot);
    if (!ok) return handle_error(handle, kind, fn, slot, state, have, inherited);
    *object = o;
    return VN_OK;
}

static void release_handle(const void *handle, vn_kind kind) {
    uint64_t id = (uintptr_t)handle, state;
    uint32_t generation = (uint32_t)(id >> 32);
    id_slot *slot = slot_of(id);
    if (slot == NULL || !slot_pin(slot, generation, &state)) return;
    vn_object *o = slot->object;
    if (kind != VN_KIND_DEAD && atomic_load_explicit(&o->kind, memory_order_relaxed) != (unsigned)kind) {
        slot_unpin(slot);
        return;
    }
    /* Stale from here on: of releases racing on one id exactly one bumps the generation;
     * every translation after it fails, those before it have retained the object. */
    uint64_t s = atomic_load_explicit(&slot->state, memory_order_relaxed);
    do {
        if ((uint32_t)(s >> 32) != generation) {
            slot_unpin(slot);
            return;
        }
    } while (!atomic_compare_exchange_weak_explicit(&slot->state, &s, s + (1ull << 32), memory_order_acq_rel,
                                                    memory_order_relaxed));
    slot_unpin(slot);
    atomic_fetch_sub_explicit(&id_live, 1, memory_order_relaxed);
    /* Issued before a fork() and this is the child: a pin a parent's thread held may never
     * drain, and the object is only forgotten here. The slot is not reused. */
    if (slot->fork_generation != atomic_load_explicit(&vn_fork_generation, memory_order_relaxed)) return;
    /* Translations that pinned before the bump finish retaining (a few instructions). */
    while ((atomic_load_explicit(&slot->state, memory_order_acquire) & ID_PINS) != 0) vn_yield();
    slot->object = NULL;
    /* A slot whose generation would wrap to a live one again is retired, never reused. */
    if (generation != UINT32_MAX) free_push((uint32_t)id);
    vn_release(o);
}

/* Every release is a call into the driver (the last reference destroys the object): the
 * exit guard brackets it as it does every entry point (layer_object.h). */
void vn_id_release(const void *handle, vn_kind kind) {
    vn_call_guard_enter();
    release_handle(handle, kind);
    vn_call_guard_leave();
}

void vn_handle_release(void *handle) { vn_id_release(handle, VN_KIND_DEAD); }

vn_status vn_acquire_all(const void *const *handles, const vn_kind *kinds, size_t n, const char *fn,
                         vn_object **objects) {
    for (size_t i = 0; i < n; i++) {
        vn_status st = vn_acquire(handles[i], kinds[i], fn, &objects[i]);
        if (st != VN_OK) {
            vn_unacquire_all(objects, i);
            return st;
        }
    }
    return VN_OK;
}

void vn_unacquire_all(vn_object *const *objects, size_t n) {
    while (n > 0) vn_release(objects[--n]);
}
