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
    pthread_mutex_lock(&dev->staging_lock);
    vn_staging **best = NULL;
    for (vn_staging **p = &dev->staging_free; *p != NULL; p = &(*p)->next)
        if ((*p)->size >= size && (best == NULL || (*p)->size < (*best)->size)) best = p;
    if (best != NULL) {
        vn_staging *s = *best;
        *best = s->next;
        dev->staging_free_count--;
        pthread_mutex_unlock(&dev->staging_lock);
        s->next = NULL;
        *out = s;
        return VN_OK;
    }
    pthread_mutex_unlock(&dev->staging_lock);

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
    pthread_mutex_lock(&dev->staging_lock);
    if (dev->staging_free_count < STAGING_KEEP) {
        s->next = dev->staging_free;
        dev->staging_free = s;
        dev->staging_free_count++;
        s = NULL;
    }
    pthread_mutex_unlock(&dev->staging_lock);
    if (s != NULL) staging_destroy(s);
}

void vn_staging_free_all(vn_device *dev) {
    pthread_mutex_lock(&dev->staging_lock);
    vn_staging *s = dev->staging_free;
    dev->staging_free = NULL;
    dev->staging_free_count = 0;
    pthread_mutex_unlock(&dev->staging_lock);
    while (s != NULL) {
        vn_staging *next = s->next;
        staging_destroy(s);
        s = next;
    }
}

struct map_result {
    atomic_int done;
    WGPUMapAsyncStatus status;
    char message[512];
};

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)userdata2;
    struct map_result *r = userdata1;
    r->status = status;
    vn_string_view_copy(message, r->message, sizeof r->message);
    atomic_store(&r->done, 1);
}

vn_status vn_readback(vn_device *dev, WGPUBuffer src, uint64_t nbytes, void *dst) {
    uint64_t padded = vn_pad4(nbytes);
    vn_staging *staging = NULL;
    vn_status st = staging_acquire(dev, padded, &staging);
    if (st != VN_OK) return st;

    /* Encode inside error scopes and submit only a command buffer that encoded
     * cleanly: wgpu-native aborts the process on submitting an invalid one. */
    vn_scope_begin(dev);
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    wgpu.CommandEncoderCopyBufferToBuffer(enc, src, 0, staging->buffer, 0, padded);
    WGPUCommandBuffer cb = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    st = vn_scope_end(dev, "encoding a readback copy", VN_ERROR_VALIDATION,
                      "read only buffers with COPY_SRC usage, on the device that made them.");
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        staging_return(dev, staging);
        return st;
    }
    st = vn_submit_begin(dev, "reading back");
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        staging_return(dev, staging);
        return st;
    }
    WGPUSubmissionIndex idx = wgpu.QueueSubmitForIndex(dev->queue, 1, &cb);
    vn_submit_end(dev);
    wgpu.CommandBufferRelease(cb);

    struct map_result mapped = {0};
    WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_mapped;
    info.userdata1 = &mapped;
    wgpu.BufferMapAsync(staging->buffer, WGPUMapMode_Read, 0, (size_t)padded, info);
    wgpu.DevicePoll(dev->device, 1, &idx);
    if (!vn_process_until(dev->instance, dev->device, &mapped.done, 60.0)) {
        /* The callback still points at our stack frame: the staging buffer must not be
         * reused, and releasing it cancels the map (firing the callback) now. */
        wgpu.BufferRelease(staging->buffer);
        free(staging);
        vn_live_add(VN_LIVE_STAGING, -1);
        st = vn_device_check(dev, "reading back");
        if (st != VN_OK) return st;
        return vn_fail(VN_ERROR_TIMEOUT, "reading back %llu bytes did not complete in 60 s. Fix: check for a hung GPU "
                       "kernel (an endless loop in the shader).", (unsigned long long)nbytes);
    }
    if (mapped.status != WGPUMapAsyncStatus_Success) {
        staging_return(dev, staging);
        st = vn_device_check(dev, "reading back");
        if (st != VN_OK) return st;
        return vn_fail(VN_ERROR_INTERNAL, "mapping the readback staging buffer failed (status %d): %s. Fix: retry; if it "
                       "persists, the device may be lost.", (int)mapped.status, mapped.message);
    }
    const void *src_bytes = wgpu.BufferGetConstMappedRange(staging->buffer, 0, (size_t)padded);
    if (src_bytes == NULL) {
        wgpu.BufferUnmap(staging->buffer);
        staging_return(dev, staging);
        return vn_fail(VN_ERROR_INTERNAL, "the mapped staging buffer has no readable range. Fix: retry the readback.");
    }
    memcpy(dst, src_bytes, (size_t)nbytes);
    wgpu.BufferUnmap(staging->buffer);
    staging_return(dev, staging);
    return VN_OK;
}
