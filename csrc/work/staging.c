/* staging.c - the ring of staging buffers of a device's readback state (MAP_READ buffers
 * kept between reads, STAGING_KEEP of them free at most): readback.c's reads take their
 * staging buffers here and give them back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

/* Free staging buffers kept per device; more than this are released. Pinned ones are
 * not in the ring at all: each belongs to its vn_mapping until released. */
enum { STAGING_KEEP = 4 };

/* A free staging buffer serves a read of at least half its size, or any read when it
 * is this small: a small read, which may pin its buffer for as long as a zero-copy
 * array lives, never holds a large one. */
#define STAGING_SMALL ((uint64_t)64 << 10)

static bool staging_fits(uint64_t have, uint64_t need) {
    return have >= need && (have <= STAGING_SMALL || have / 2 <= need);
}

void vn_staging_destroy(vn_staging *s) {
    wgpu.BufferRelease(s->buffer);
    free(s);
    vn_live_add(VN_LIVE_STAGING, -1);
}

vn_status vn_staging_acquire(struct vn_readback *rb, vn_device *dev, uint64_t size, vn_staging **out) {
    vn_mutex_lock(&rb->lock);
    vn_staging **best = NULL;
    for (vn_staging **p = &rb->free; *p != NULL; p = &(*p)->next)
        if (staging_fits((*p)->size, size) && (best == NULL || (*p)->size < (*best)->size)) best = p;
    if (best != NULL) {
        vn_staging *s = *best;
        *best = s->next;
        rb->free_count--;
        vn_mutex_unlock(&rb->lock);
        s->next = NULL;
        *out = s;
        return VN_OK;
    }
    vn_mutex_unlock(&rb->lock);

    vn_staging *s = calloc(1, sizeof *s);
    if (s == NULL) return vn_fail_no_memory("a staging record", sizeof *s);
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

void vn_staging_return(vn_device *dev, vn_staging *s) {
    struct vn_readback *rb = atomic_load_explicit(&dev->readback, memory_order_acquire);
    vn_mutex_lock(&rb->lock);
    if (rb->free_count < STAGING_KEEP) {
        s->next = rb->free;
        rb->free = s;
        rb->free_count++;
        s = NULL;
    }
    vn_mutex_unlock(&rb->lock);
    if (s != NULL) vn_staging_destroy(s);
}
