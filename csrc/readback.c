/* readback.c - GPU buffer contents into host memory through reusable staging buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A MAP_READ buffer kept on the device between readbacks: creating one per
 * readback costs an allocation and, for large ones, page faults on every use. */
struct vn_staging {
    WGPUBuffer buffer;
    uint64_t size;
    vn_staging *next;
};

/* Free staging buffers kept per device; more than this are released. */
enum { STAGING_KEEP = 4 };

static void staging_destroy(vn_staging *s) {
    wgpu.BufferRelease(s->buffer);
    free(s);
    vn_live_add(VN_LIVE_STAGING, -1);
}

static vn_status staging_acquire(vn_device *dev, uint64_t size, vn_staging **out) {
    vn_mutex_lock(&dev->staging_lock);
    vn_staging **best = NULL;
    for (vn_staging **p = &dev->staging_free; *p != NULL; p = &(*p)->next)
        if ((*p)->size >= size && (best == NULL || (*p)->size < (*best)->size)) best = p;
    if (best != NULL) {
        vn_staging *s = *best;
        *best = s->next;
        dev->staging_free_count--;
        vn_mutex_unlock(&dev->staging_lock);
        s->next = NULL;
        *out = s;
        return VN_OK;
    }
    vn_mutex_unlock(&dev->staging_lock);

    vn_staging *s = calloc(1, sizeof *s);
    if (s == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a staging record. Fix: free host memory.");
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.label = vn_sv("vyre_native staging");
    desc.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    desc.size = size;
    vn_scope_begin(dev);
    s->buffer = wgpu.DeviceCreateBuffer(dev->device, &desc);
    vn_status st = vn_scope_end(dev, "creating a readback staging buffer", VN_ERROR_VALIDATION,
                                "free GPU memory, or read back a smaller buffer.");
    if (st == VN_OK && s->buffer == NULL)
        st = vn_fail(VN_ERROR_OUT_OF_MEMORY, "wgpu-native returned no staging buffer of %llu bytes. Fix: free GPU memory.",
                     (unsigned long long)size);
    if (st != VN_OK) {
        if (s->buffer != NULL) wgpu.BufferRelease(s->buffer);
        free(s);
        return st;
    }
    s->size = size;
    vn_live_add(VN_LIVE_STAGING, 1);
    *out = s;
    return VN_OK;
}

static void staging_return(vn_device *dev, vn_staging *s) {
    vn_mutex_lock(&dev->staging_lock);
    if (dev->staging_free_count < STAGING_KEEP) {
        s->next = dev->staging_free;
        dev->staging_free = s;
        dev->staging_free_count++;
        s = NULL;
    }
    vn_mutex_unlock(&dev->staging_lock);
    if (s != NULL) staging_destroy(s);
}

void vn_staging_free_all(vn_device *dev) {
    vn_mutex_lock(&dev->staging_lock);
    vn_staging *s = dev->staging_free;
    dev->staging_free = NULL;
    dev->staging_free_count = 0;
    vn_mutex_unlock(&dev->staging_lock);
    while (s != NULL) {
        vn_staging *next = s->next;
        staging_destroy(s);
        s = next;
    }
}

/* A readback in flight: a copy into a staging buffer, then its map. Owned by the
 * caller until released; a read released before its map callback fired is handed to
 * its device (abandoned), because the callback still points at it. */
struct vn_pending_read {
    vn_device *device;   /* a reference while the caller owns the read */
    vn_staging *staging;
    uint64_t nbytes;
    atomic_int done;     /* the map callback fired */
    WGPUMapAsyncStatus status;
    bool map_pending;    /* a map was requested and its outcome not taken yet */
    bool finished;       /* completed (or failed for good): a second finish is refused */
    const void *mapped;  /* between read_map and read_unmap */
    vn_pending_read *next; /* the device's abandoned reads */
    char message[512];
};

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)userdata2;
    vn_pending_read *r = userdata1;
    r->status = status;
    vn_string_view_copy(message, r->message, sizeof r->message);
    atomic_store(&r->done, 1);
}

/* Queue the copy into a staging buffer and its map; return at once. */
static vn_status read_begin(vn_device *dev, WGPUBuffer src, uint64_t nbytes, vn_pending_read *r) {
    memset(r, 0, sizeof *r);
    r->device = dev;
    r->nbytes = nbytes;
    uint64_t padded = vn_pad4(nbytes);
    vn_status st = staging_acquire(dev, padded, &r->staging);
    if (st != VN_OK) return st;

    /* Encode inside error scopes and submit only a command buffer that encoded
     * cleanly: wgpu-native aborts the process on submitting an invalid one. */
    vn_scope_begin(dev);
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    wgpu.CommandEncoderCopyBufferToBuffer(enc, src, 0, r->staging->buffer, 0, padded);
    WGPUCommandBuffer cb = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    st = vn_scope_end(dev, "encoding a readback copy", VN_ERROR_VALIDATION,
                      "read only buffers with COPY_SRC usage, on the device that made them.");
    if (st == VN_OK) st = vn_submit_begin(dev, "reading back");
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        staging_return(dev, r->staging);
        r->staging = NULL;
        return st;
    }
    wgpu.QueueSubmitForIndex(dev->queue, 1, &cb);
    vn_submit_end(dev);
    wgpu.CommandBufferRelease(cb);

    WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_mapped;
    info.userdata1 = r;
    /* An explicit size: wgpu-native 29 rejects WGPU_WHOLE_MAP_SIZE here. */
    wgpu.BufferMapAsync(r->staging->buffer, WGPUMapMode_Read, 0, (size_t)padded, info);
    r->map_pending = true;
    return VN_OK;
}

vn_status vn_read_start(vn_device *dev, WGPUBuffer src, uint64_t nbytes, vn_pending_read **out) {
    vn_status st = vn_submit_ready(dev); /* VN_PENDING: nothing started yet */
    if (st != VN_OK) return st;
    vn_pending_read *r = malloc(sizeof *r);
    if (r == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a pending read. Fix: free host memory.");
    st = read_begin(dev, src, nbytes, r);
    if (st != VN_OK) {
        free(r);
        return st;
    }
    vn_device_retain(dev);
    vn_live_add(VN_LIVE_PENDING_READ, 1);
    *out = r;
    return VN_OK;
}

/* The map's outcome is in (its callback fired) and nobody will read it: unmap the
 * staging buffer and give it back to the ring, or release it when the device is lost
 * (its buffers are destroyed with it). Sets no error message: it runs in releases. */
static void settle(vn_pending_read *r) {
    vn_device *dev = r->device;
    vn_staging *s = r->staging;
    r->staging = NULL;
    r->map_pending = false;
    if (s == NULL) return;
    bool reuse = false;
    if (r->status == WGPUMapAsyncStatus_Success) {
        vn_rwlock_read_lock(&dev->submit_lock); /* destroy() cannot run between check and unmap */
        if (!atomic_load(&dev->lost)) {
            wgpu.BufferUnmap(s->buffer);
            reuse = true;
        }
        vn_rwlock_read_unlock(&dev->submit_lock);
    }
    if (reuse) staging_return(dev, s);
    else staging_destroy(s);
}

void vn_reads_reap(vn_device *dev, bool final) {
    if (atomic_load(&dev->abandoned_count) == 0) return;
    vn_pending_read *ready = NULL;
    vn_mutex_lock(&dev->staging_lock);
    for (vn_pending_read **p = &dev->abandoned; *p != NULL;) {
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
        dev->abandoned = NULL;
        atomic_store(&dev->abandoned_count, 0);
    }
    vn_mutex_unlock(&dev->staging_lock);
    while (ready != NULL) {
        vn_pending_read *r = ready;
        ready = r->next;
        settle(r);
        free(r);
    }
}

static void read_unmap(vn_pending_read *r);

/* Wait (one time slice at most) for the copy and the map; on VN_OK r->mapped points at
 * the bytes and the device's life lock is held until read_unmap. VN_PENDING, or a
 * device lost under the wait: the read stays in flight. */
static vn_status read_map(vn_pending_read *r) {
    vn_device *dev = r->device;
    if (!atomic_load(&r->done)) {
        vn_status st = vn_wait(dev, &r->done, -1.0, NULL);
        if (st != VN_OK) return st;
    }
    r->map_pending = false;
    r->finished = true;
    if (r->status != WGPUMapAsyncStatus_Success) {
        staging_destroy(r->staging);
        r->staging = NULL;
        if (vn_message_says_lost(r->message)) vn_device_note_lost(dev, r->message);
        vn_status st = vn_device_check(dev, "reading back");
        if (st != VN_OK) return st;
        return vn_fail(VN_ERROR_INTERNAL, "mapping the readback staging buffer failed (status %d): %s. Fix: retry; if it "
                       "persists, the device may be lost.", (int)r->status, r->message);
    }
    /* The device may have been destroyed since the map succeeded, which destroys the
     * staging buffer too, and reading a destroyed buffer's range aborts: hold the
     * device's life lock until the range is unmapped (read_unmap). */
    vn_status st = vn_submit_begin(dev, "reading back");
    if (st != VN_OK) {
        staging_destroy(r->staging);
        r->staging = NULL;
        return st;
    }
    r->mapped = wgpu.BufferGetConstMappedRange(r->staging->buffer, 0, (size_t)vn_pad4(r->nbytes));
    if (r->mapped == NULL) {
        read_unmap(r);
        return vn_fail(VN_ERROR_INTERNAL, "the mapped staging buffer has no readable range. Fix: retry the readback.");
    }
    return VN_OK;
}

/* Unmap, release the life lock, and give the staging buffer back to the ring. */
static void read_unmap(vn_pending_read *r) {
    wgpu.BufferUnmap(r->staging->buffer);
    vn_submit_end(r->device);
    staging_return(r->device, r->staging);
    r->staging = NULL;
    r->mapped = NULL;
}

/* Wait for the copy and the map, copy out, unmap, and give the staging buffer back. */
static vn_status read_finish(vn_pending_read *r, void *dst) {
    vn_status st = read_map(r);
    if (st != VN_OK) return st;
    if (dst != NULL) memcpy(dst, r->mapped, (size_t)r->nbytes);
    read_unmap(r);
    return VN_OK;
}

vn_status vn_readback(vn_device *dev, WGPUBuffer src, uint64_t nbytes, void *dst, vn_pending_read **pending) {
    if (pending != NULL) *pending = NULL;
    vn_pending_read *r;
    vn_status st = vn_read_start(dev, src, nbytes, &r);
    if (st != VN_OK) return st; /* VN_PENDING here: not started, *pending NULL */
    st = read_finish(r, dst);
    if (st == VN_PENDING && pending != NULL) {
        *pending = r;
        return st;
    }
    vn_pending_read_release(r);
    return st;
}

vn_status vn_buffer_read_async(vn_buffer *buffer, vn_pending_read **out) {
    vn_status st = vn_buffer_check(buffer, "buffer.read_async");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_buffer_read_async: out is NULL. Fix: pass a result pointer.");
    *out = NULL;
    st = vn_buffers_submittable(&buffer, 1, "read_async()");
    if (st != VN_OK) return st;
    if (!(buffer->usage & VN_USAGE_COPY_SRC))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "read_async: buffer %llu has usage 0x%llx without COPY_SRC, so it cannot be copied out. Fix: "
                       "create it with vn.BufferUsage.COPY_SRC (the default usage has it).",
                       (unsigned long long)buffer->identity, (unsigned long long)buffer->usage);
    return vn_read_start(buffer->device, buffer->buffer, buffer->byte_len, out);
}

uint64_t vn_pending_read_len(const vn_pending_read *r) { return r == NULL ? 0 : r->nbytes; }

/* The checks every completion of a read makes first. */
static vn_status check_unfinished(const vn_pending_read *r) {
    if (vn_inherited(r->device)) return vn_device_check(r->device, "completing a read");
    if (r->finished)
        return vn_fail(VN_ERROR_ALREADY_SUBMITTED, "this asynchronous read was already completed. Fix: start a new "
                       "read_async() for each result.");
    return VN_OK;
}

vn_status vn_pending_read_map(vn_pending_read *r, const void **data) {
    if (r == NULL || data == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_pending_read_map: NULL argument. Fix: pass a read and a result.");
    *data = NULL;
    vn_status st = check_unfinished(r);
    if (st == VN_OK) st = read_map(r);
    if (st == VN_OK) *data = r->mapped;
    return st;
}

void vn_pending_read_unmap(vn_pending_read *r) {
    if (r != NULL && r->mapped != NULL && !vn_inherited(r->device)) read_unmap(r);
}

vn_status vn_pending_read_finish(vn_pending_read *r, void *dst, uint64_t capacity) {
    if (r == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "pending read is NULL. Fix: pass a live read.");
    vn_status st = check_unfinished(r);
    if (st != VN_OK) return st;
    if (capacity < r->nbytes)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "the destination holds %llu bytes, but the read has %llu. Fix: pass a "
                       "writable buffer of at least %llu bytes.", (unsigned long long)capacity,
                       (unsigned long long)r->nbytes, (unsigned long long)r->nbytes);
    if (r->nbytes > 0 && dst == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "destination is NULL. Fix: pass a writable buffer.");
    return read_finish(r, dst);
}

void vn_pending_read_release(vn_pending_read *r) {
    if (r == NULL) return;
    vn_device *dev = r->device;
    if (vn_inherited(dev)) return; /* a fork() child only forgets it */
    if (r->mapped != NULL) read_unmap(r);
    vn_live_add(VN_LIVE_PENDING_READ, -1);
    if (r->map_pending && !atomic_load(&r->done)) {
        /* Never wait here (this runs from finalizers): the device keeps the read and
         * returns its staging buffer once the map callback has fired. */
        vn_mutex_lock(&dev->staging_lock);
        r->next = dev->abandoned;
        dev->abandoned = r;
        atomic_fetch_add(&dev->abandoned_count, 1);
        vn_mutex_unlock(&dev->staging_lock);
        vn_device_unref(dev);
        return;
    }
    if (r->map_pending) settle(r);
    vn_device_unref(dev);
    free(r);
}
