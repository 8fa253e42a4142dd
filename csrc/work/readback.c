/* readback.c - GPU buffer contents into host memory through reusable staging buffers.
 *
 * One primitive serves every read. read_begin queues a copy of the source into a
 * staging buffer from the device's ring, and that buffer's map; read_outcome waits for
 * the map and takes its outcome once, whoever asks first: the staging buffer becomes a
 * vn_mapping the read keeps, which pins it (out of the ring, mapped, and counted in
 * device->staging_pinned, so that vn_device_destroy defers the GPU device's destruction,
 * which would free the mapped memory, until the last unpin). Then, for every waiter, one
 * of two endings:
 * - read_copy: the bytes go into caller memory inside C, holding the device's life
 *   lock (read side) for the memcpy only;
 * - read_pin: a reference on the kept mapping goes out, and with it the mapped pointer.
 *   No lock is held while the caller reads it.
 * Blocking reads, pending reads, typed and zero-copy reads and GPU timestamps all
 * end in one of these two. The staging buffer goes back to the ring with the last
 * reference on its mapping: the read's own (released with the read) or a zero-copy view's.
 *
 * No call waits longer than one time slice: read_outcome returns VN_PENDING and the read
 * stays in flight for the next call. A read released in flight is never waited for: its
 * device keeps it (abandoned) until its map callback has fired (readback_reap).
 *
 * The staging ring is staging.c's; the reads of buffers, views and outputs built on this
 * primitive are buffer_read.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

/* The device's readback hooks (vn_device_hooks, VN_PART_READBACK; registered with the
 * readback state): return the staging buffers of abandoned reads whose map has
 * completed (all of them when final, leaking any whose callback has not fired: it still
 * points at them); and free the staging ring and the state. */
static void readback_reap(vn_device *dev, bool final);
static void readback_release(vn_device *dev);
static const vn_device_hooks readback_hooks = {readback_reap, readback_release};

/* The device's readback state, made on first use (a race of two first uses keeps one);
 * NULL when out of host memory. Every read has its state: its staging buffer came from
 * staging_acquire, which made it. */
static struct vn_readback *readback_of(vn_device *dev) {
    struct vn_readback *rb = atomic_load_explicit(&dev->readback, memory_order_acquire);
    if (rb != NULL) return rb;
    struct vn_readback *made = calloc(1, sizeof *made);
    if (made == NULL) return NULL;
    vn_mutex_init(&made->lock);
    vn_lock_rank_set(&made->lock, VN_LOCK_READBACK, "vn_readback.lock");
    if (atomic_compare_exchange_strong_explicit(&dev->readback, &rb, made, memory_order_acq_rel,
                                                memory_order_acquire)) {
        /* The device now holds readback state: it lets it go through these hooks. */
        vn_device_attach(dev, VN_PART_READBACK, &readback_hooks);
        return made;
    }
    vn_mutex_destroy(&made->lock); /* another thread's came first: rb is it */
    free(made);
    return rb;
}

/* vn_staging_acquire in the device's readback state, made first if need be. */
static vn_status staging_acquire(vn_device *dev, uint64_t size, vn_staging **out) {
    struct vn_readback *rb = readback_of(dev);
    if (rb == NULL) return vn_fail_no_memory("the readback state", sizeof *rb);
    return vn_staging_acquire(rb, dev, size, out);
}

static void readback_release(vn_device *dev) {
    struct vn_readback *rb = atomic_exchange_explicit(&dev->readback, NULL, memory_order_acq_rel);
    if (rb == NULL) return;
    vn_staging *s = rb->free; /* the device is being freed: nothing else runs on it */
    while (s != NULL) {
        vn_staging *next = s->next;
        vn_staging_destroy(s);
        s = next;
    }
    vn_mutex_destroy(&rb->lock);
    free(rb);
}

/* A readback in flight: a copy into a staging buffer, then its map. A handle (every
 * read, a blocking one too, is one); a read released before its map callback fired is
 * handed to its device (abandoned), because the callback still points at it.
 *
 * Any number of waiters (threads, asyncio tasks through worker threads, any mix of
 * result / result_into / zero-copy) may finish one read, in any order: its outcome is
 * taken exactly once, under `lock`, by whichever waiter first finds the map done — the
 * staging buffer becomes a pin the read keeps (`kept`), or the failure is stored — and
 * every waiter, then and later, is served from that: a copy out of the pinned memory, or
 * a reference on the pin itself. */
enum { READ_IN_FLIGHT = 0, READ_READY = 1, READ_FAILED = 2 };

struct vn_pending_read {
    vn_object obj;       /* VN_KIND_PENDING_READ */
    vn_device *device;   /* a reference */
    vn_staging *staging; /* until the outcome is taken (under lock) */
    uint64_t nbytes;
    uint64_t skip;       /* bytes of the first copied word before the read's first byte */
    atomic_int done;     /* the map callback fired */
    WGPUMapAsyncStatus status;
    bool map_pending;    /* a map was requested and its outcome not taken yet */
    vn_mutex lock;       /* taking the outcome, against the read's other waiters */
    atomic_int state;    /* READ_*: set under lock, once; read without it */
    vn_mapping *kept;    /* READ_READY: the pin every waiter is served from (the read's reference) */
    vn_status fail_status; /* READ_FAILED: what every waiter gets, */
    char *fail_message;    /* with this message (NULL: out of memory for it) */
    vn_pending_read *next; /* the device's abandoned reads */
    char message[512];
};

/* A pinned staging buffer: the bytes a zero-copy read hands out, valid until its last
 * release. */
struct vn_mapping {
    vn_object obj;       /* VN_KIND_MAPPING */
    vn_device *device;   /* a reference: the record outlives every other owner if need be */
    vn_staging *staging; /* pinned and mapped */
    const void *data;
    uint64_t nbytes;
};

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)userdata2;
    vn_pending_read *r = userdata1;
    r->status = status;
    vn_string_view_copy(message, r->message, sizeof r->message);
    atomic_store(&r->done, 1);
}

/* Queue the copy of nbytes from offset into a staging buffer, and its map; return at once. */
static vn_status read_begin(vn_device *dev, WGPUBuffer src, uint64_t offset, uint64_t nbytes,
                            const vn_submit_guard *guard, vn_pending_read *r) {
    memset(r, 0, sizeof *r); /* the header too: vn_read_start sets it after */
    atomic_init(&r->state, READ_IN_FLIGHT);
    r->device = dev;
    r->nbytes = nbytes;
    /* Copies move whole words: copy the words enclosing [offset, offset + nbytes) (inside
     * the allocation, which is padded to a word) and skip the bytes before the first. */
    r->skip = offset % 4;
    offset -= r->skip;
    uint64_t padded = vn_pad4(r->skip + nbytes);
    vn_status st = vn_submit_guard_check(guard); /* refused now: nothing encoded */
    if (st == VN_OK) st = staging_acquire(dev, padded, &r->staging);
    if (st != VN_OK) return st;

    /* Encode inside error scopes and submit only a command buffer that encoded
     * cleanly: wgpu-native aborts the process on submitting an invalid one. */
    WGPUCommandEncoder enc = vn_encode_begin(dev, NULL);
    wgpu.CommandEncoderCopyBufferToBuffer(enc, src, offset, r->staging->buffer, 0, padded);
    WGPUCommandBuffer cb;
    st = vn_encode_finish(dev, enc, "encoding a readback copy",
                          "read only buffers with COPY_SRC usage, on the device that made them.", &cb);
    if (st == VN_OK) st = vn_submit_guarded(dev, cb, "reading back", guard);
    if (st != VN_OK) {
        vn_staging_return(dev, r->staging);
        r->staging = NULL;
        return st;
    }

    WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_mapped;
    info.userdata1 = r;
    /* An explicit size: wgpu-native 29 rejects WGPU_WHOLE_MAP_SIZE here. */
    wgpu.BufferMapAsync(r->staging->buffer, WGPUMapMode_Read, 0, (size_t)padded, info);
    r->map_pending = true;
    return VN_OK;
}

static void pending_read_destroy(vn_object *object);

vn_status vn_read_start(vn_device *dev, WGPUBuffer src, uint64_t offset, uint64_t nbytes,
                        const vn_submit_guard *guard, vn_pending_read **out) {
    *out = NULL;
    vn_status st = vn_submit_ready(dev); /* VN_PENDING here: nothing started yet */
    if (st != VN_OK) return st;
    vn_pending_read *r = malloc(sizeof *r);
    if (r == NULL) return vn_fail_no_memory("a pending read", sizeof *r);
    st = read_begin(dev, src, offset, nbytes, guard, r);
    if (st != VN_OK) {
        free(r);
        return st;
    }
    vn_mutex_init(&r->lock);
    vn_lock_rank_set(&r->lock, VN_LOCK_OBJECT, "vn_pending_read.lock");
    vn_object_init(&r->obj, VN_KIND_PENDING_READ, pending_read_destroy);
    vn_device_retain(dev);
    vn_live_add(VN_LIVE_PENDING_READ, 1);
    *out = r;
    return VN_OK;
}

/* The record itself, once nothing can reach it (its map callback has fired or never will). */
static void read_free(vn_pending_read *r) {
    vn_mutex_destroy(&r->lock);
    free(r->fail_message);
    free(r);
}

/* The map's outcome is in (its callback fired) and nobody will read it: unmap the
 * staging buffer and give it back to the ring, or release it when the device is lost
 * (its buffers are destroyed with it). Sets no error message: it runs in releases,
 * which may come between a failed call and the caller's reading of its message. */
static void settle(vn_pending_read *r) {
    vn_device *dev = r->device;
    vn_staging *s = r->staging;
    r->staging = NULL;
    r->map_pending = false;
    if (s == NULL) return;
    bool reuse = false;
    if (r->status == WGPUMapAsyncStatus_Success) {
        vn_rwlock_read_lock(&dev->life_lock); /* destroy() cannot run between check and unmap */
        if (!atomic_load(&dev->lost)) {
            wgpu.BufferUnmap(s->buffer);
            reuse = true;
        }
        vn_rwlock_read_unlock(&dev->life_lock);
    }
    if (reuse) vn_staging_return(dev, s);
    else vn_staging_destroy(s);
}

static void readback_reap(vn_device *dev, bool final) {
    if (atomic_load(&dev->abandoned_count) == 0) return;
    struct vn_readback *rb = atomic_load_explicit(&dev->readback, memory_order_acquire);
    vn_pending_read *ready = NULL;
    vn_mutex_lock(&rb->lock);
    for (vn_pending_read **p = &rb->abandoned; *p != NULL;) {
        vn_pending_read *r = *p;
        if (atomic_load(&r->done)) {
            *p = r->next;
            r->next = ready;
            ready = r;
            atomic_fetch_sub(&dev->abandoned_count, 1);
        } else {
            p = &r->next;
        }
    }
    if (final) {
        /* Maps that never completed (a device lost to a GPU fault): their callbacks may
         * still fire, so the records stay allocated, leaked with their staging buffers. */
        rb->abandoned = NULL;
        atomic_store(&dev->abandoned_count, 0);
    }
    vn_mutex_unlock(&rb->lock);
    while (ready != NULL) {
        vn_pending_read *r = ready;
        ready = r->next;
        settle(r);
        read_free(r);
    }
}

static vn_status no_range(void) {
    return vn_fail(VN_ERROR_INTERNAL, "the mapped staging buffer has no readable range. Fix: retry the readback.");
}

/* The read's failure, kept (under lock) for every waiter: this one's status and message. */
static void keep_failure(vn_pending_read *r, vn_status st) {
    r->fail_status = st;
    size_t n = strlen(vn_last_error()) + 1;
    r->fail_message = malloc(n);
    if (r->fail_message != NULL) memcpy(r->fail_message, vn_last_error(), n);
    atomic_store(&r->state, READ_FAILED);
}

static void mapping_destroy(vn_object *object);

/* Take the map's outcome, once (under r->lock, the callback fired): pin the staging
 * buffer as the read's `kept` mapping, which keeps it mapped and out of the ring until
 * its last reference goes. The pin is counted under the life lock, so destroy() either
 * ran before (and the range is never read) or sees it (and defers); no lock is held once
 * this returns. Any failure is kept for every waiter; the staging buffer is gone then. */
static void take_outcome(vn_pending_read *r) {
    vn_device *dev = r->device;
    vn_staging *s = r->staging;
    r->staging = NULL;
    r->map_pending = false;
    vn_status st = VN_OK;
    if (r->status != WGPUMapAsyncStatus_Success) {
        vn_staging_destroy(s);
        if (vn_message_says_lost(r->message)) vn_device_note_lost(dev, r->message);
        st = vn_device_check(dev, "reading back");
        if (st == VN_OK)
            st = vn_fail(VN_ERROR_INTERNAL, "mapping the readback staging buffer failed (status %d): %s. Fix: retry; if "
                         "it persists, the device may be lost.", (int)r->status, r->message);
        keep_failure(r, st);
        return;
    }
    vn_mapping *m = calloc(1, sizeof *m);
    st = m == NULL ? vn_fail_no_memory("a mapping record", sizeof *m) : vn_life_lock_read(dev, "reading back");
    if (st != VN_OK) {
        vn_staging_destroy(s); /* released mapped: wgpu unmaps it */
        free(m);
        keep_failure(r, st);
        return;
    }
    const void *p = wgpu.BufferGetConstMappedRange(s->buffer, 0, (size_t)vn_pad4(r->skip + r->nbytes));
    if (p == NULL) {
        wgpu.BufferUnmap(s->buffer);
        vn_life_unlock_read(dev);
        vn_staging_return(dev, s);
        free(m);
        keep_failure(r, no_range());
        return;
    }
    atomic_fetch_add(&dev->staging_pinned, 1);
    vn_life_unlock_read(dev);
    vn_object_init(&m->obj, VN_KIND_MAPPING, mapping_destroy);
    m->staging = s;
    m->data = (const char *)p + r->skip;
    m->nbytes = r->nbytes;
    vn_device_retain(dev);
    m->device = dev;
    vn_live_add(VN_LIVE_MAPPING, 1);
    r->kept = m;
    atomic_store(&r->state, READ_READY);
}

/* Every waiter's way to the outcome: wait (one time slice at most) for the copy and the
 * map unless the outcome was taken already, then take it if no other waiter has. VN_OK:
 * r->kept holds the bytes. VN_PENDING, or a device lost under the wait: the read stays in
 * flight. A kept failure is this waiter's too. */
static vn_status read_outcome(vn_pending_read *r) {
    if (atomic_load(&r->state) == READ_IN_FLIGHT && !atomic_load(&r->done)) {
        vn_status st = vn_wait(r->device, &r->done, -1.0, NULL);
        if (st != VN_OK) return st;
    }
    vn_mutex_lock(&r->lock);
    if (atomic_load(&r->state) == READ_IN_FLIGHT) take_outcome(r);
    vn_mutex_unlock(&r->lock);
    if (atomic_load(&r->state) == READ_FAILED) /* fail_* never change once it is set */
        return vn_fail(r->fail_status, "%s", r->fail_message != NULL ? r->fail_message : "the read failed");
    return VN_OK;
}

/* The kept bytes may be read unless the device was lost to the driver, which releases
 * its buffers itself (destroy() defers its destruction while any pin lives, so after it
 * they stay valid). Call under the life lock (read side). */
static vn_status kept_readable(const vn_pending_read *r) {
    vn_device *dev = r->device;
    if (atomic_load(&dev->lost) && !dev->destroy_deferred) return vn_device_check(dev, "reading back");
    return VN_OK;
}

/* The copying ending: the kept bytes into dst, under the life lock (read side) for the
 * memcpy only. */
static vn_status read_copy(vn_pending_read *r, void *dst) {
    vn_device *dev = r->device;
    vn_rwlock_read_lock(&dev->life_lock);
    vn_status st = kept_readable(r);
    if (st == VN_OK && dst != NULL) memcpy(dst, r->kept->data, (size_t)r->nbytes);
    vn_rwlock_read_unlock(&dev->life_lock);
    return st;
}

/* The pinning ending: a reference of the caller's own on the kept mapping. */
static vn_status read_pin(vn_pending_read *r, vn_mapping **out, const void **data) {
    vn_device *dev = r->device;
    vn_rwlock_read_lock(&dev->life_lock);
    vn_status st = kept_readable(r);
    vn_rwlock_read_unlock(&dev->life_lock);
    if (st != VN_OK) return st;
    vn_retain(&r->kept->obj);
    *out = r->kept;
    *data = r->kept->data;
    return VN_OK;
}

void vn_mapping_release(vn_mapping *m) { vn_id_release(m, VN_KIND_MAPPING); }

/* The unpin. Never waits for the GPU; the locks it takes are held only inside C. */
static void mapping_destroy(vn_object *object) {
    vn_mapping *m = (vn_mapping *)object;
    vn_device *dev = m->device;
    vn_staging *s = m->staging;
    bool reuse = false;
    vn_rwlock_read_lock(&dev->life_lock);
    /* A lost device (destroyed, its destruction deferred for this pin, or lost for
     * real) is letting its buffers go: release this one without an unmap. */
    if (!atomic_load(&dev->lost)) {
        wgpu.BufferUnmap(s->buffer);
        reuse = true;
    }
    bool destroy_now = atomic_fetch_sub(&dev->staging_pinned, 1) == 1 && dev->destroy_deferred;
    vn_rwlock_read_unlock(&dev->life_lock);
    if (reuse) vn_staging_return(dev, s);
    else vn_staging_destroy(s);
    if (destroy_now) vn_device_destroy_deferred(dev);
    vn_device_unref(dev);
    free(m);
    vn_live_add(VN_LIVE_MAPPING, -1);
}

/* Wait for the copy and the map, then copy out (when dst is not NULL). */
static vn_status read_finish(vn_pending_read *r, void *dst) {
    vn_status st = read_outcome(r);
    return st != VN_OK ? st : read_copy(r, dst);
}

vn_status vn_readback(vn_device *dev, WGPUBuffer src, uint64_t offset, uint64_t nbytes, void *dst,
                      const vn_submit_guard *guard, vn_pending_read **pending) {
    if (pending != NULL) *pending = NULL;
    vn_pending_read *r;
    vn_status st = vn_read_start(dev, src, offset, nbytes, guard, &r);
    if (st != VN_OK) return st; /* VN_PENDING here: not started, *pending NULL */
    st = read_finish(r, dst);
    if (st == VN_PENDING && pending != NULL) {
        *pending = r;
        return st;
    }
    vn_release(&r->obj); /* never waits: a read in flight goes to its device */
    return st;
}

vn_status vn_view_readable(const vn_view *v, const char *what) {
    if (!(v->buffer->usage & VN_USAGE_COPY_SRC))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s: buffer %llu has usage 0x%llx without COPY_SRC, so it cannot be copied out. Fix: "
                       "create it with vn.BufferUsage.COPY_SRC (the default usage has it).",
                       what, (unsigned long long)v->buffer->identity, (unsigned long long)v->buffer->usage);
    return VN_OK;
}

vn_status vn_check_destination(const char *what, const char *source, int64_t index, const void *dst,
                               uint64_t capacity, uint64_t nbytes) {
    if (capacity < nbytes) {
        char named[64];
        if (index == VN_NO_INDEX) vn_format(named, sizeof named, "%s", source);
        else vn_format(named, sizeof named, "%s %lld", source, (long long)index);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s into %llu bytes, but %s has %llu. Fix: pass a writable destination of at least %llu "
                       "bytes.", what, (unsigned long long)capacity, named, (unsigned long long)nbytes,
                       (unsigned long long)nbytes);
    }
    if (nbytes > 0 && dst == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: the destination is NULL. Fix: pass a writable buffer.", what);
    return VN_OK;
}

/* 1 done, 0 not yet, or minus the status that says it never will be here. */
static int pending_read_done(vn_pending_read *r) {
    if (atomic_load(&r->state) != READ_IN_FLIGHT || atomic_load(&r->done)) return 1;
    /* Closed or lost: the copy will not complete (finishing raises the same). */
    vn_status st = vn_device_check(r->device, "PendingRead.done");
    if (st != VN_OK) return -(int)st;
    wgpu.DevicePoll(r->device->device, 0, NULL);
    return atomic_load(&r->done);
}

int vn_pending_read_done(vn_pending_read *r) { VN_PROBE(pending_read_done(r), r, VN_KIND_PENDING_READ); }

uint64_t vn_pending_read_len(const vn_pending_read *r) { VN_GET(uint64_t, r->nbytes, 0, r, VN_KIND_PENDING_READ); }

static vn_status pending_read_pin(vn_pending_read *r, vn_mapping **out, const void **data) {
    if (out == NULL || data == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_pending_read_pin: a result pointer is NULL. Fix: pass both.");
    *out = NULL;
    *data = NULL;
    vn_status st = read_outcome(r);
    return st != VN_OK ? st : read_pin(r, out, data);
}

vn_status vn_pending_read_pin(vn_pending_read *r, vn_mapping **out, const void **data) {
    VN_CALL1_OUT(pending_read_pin(r, out, data), out, r, VN_KIND_PENDING_READ);
}

static vn_status pending_read_finish(vn_pending_read *r, void *dst, uint64_t capacity) {
    vn_status st =
        vn_check_destination("PendingRead.result_into", "the read", VN_NO_INDEX, dst, capacity, r->nbytes);
    return st != VN_OK ? st : read_finish(r, dst);
}

vn_status vn_pending_read_finish(vn_pending_read *r, void *dst, uint64_t capacity) {
    VN_CALL1(pending_read_finish(r, dst, capacity), r, VN_KIND_PENDING_READ);
}

vn_status vn_pending_read_finish_held(vn_pending_read *r, void *dst, uint64_t capacity) {
    return pending_read_finish(r, dst, capacity);
}

void vn_pending_read_release(vn_pending_read *r) { vn_id_release(r, VN_KIND_PENDING_READ); }

/* The last reference: no waiter is inside a call on it, so no lock is needed. */
static void pending_read_destroy(vn_object *object) {
    vn_pending_read *r = (vn_pending_read *)object;
    vn_device *dev = r->device;
    vn_live_add(VN_LIVE_PENDING_READ, -1);
    if (r->map_pending && !atomic_load(&r->done)) {
        /* Never wait here (this runs from finalizers): the device keeps the read and
         * returns its staging buffer once the map callback has fired. */
        struct vn_readback *rb = atomic_load_explicit(&dev->readback, memory_order_acquire);
        vn_mutex_lock(&rb->lock);
        r->next = rb->abandoned;
        rb->abandoned = r;
        atomic_fetch_add(&dev->abandoned_count, 1);
        vn_mutex_unlock(&rb->lock);
        vn_device_unref(dev);
        return;
    }
    if (r->map_pending) settle(r);
    if (r->kept != NULL) vn_release(&r->kept->obj); /* a zero-copy view may hold it longer */
    vn_device_unref(dev);
    read_free(r);
}
