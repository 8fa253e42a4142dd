/* interop.c - wrapping wgpu-py's objects and handing ours to it.
 *
 * wgpu-py loads the same libwgpu_native file, so both bindings share one copy of
 * wgpu-native and its objects are plain reference-counted pointers: adopting one
 * is an AddRef, and the vn object releases that reference when it goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

vn_status vn_device_adopt(uintptr_t instance, uintptr_t adapter, uintptr_t device, uintptr_t queue, vn_device **out) {
    vn_status st = vn_require_library();
    if (st != VN_OK) return st;
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_device_adopt: out is NULL. Fix: pass a result pointer.");
    *out = NULL;
    if (!instance || !adapter || !device || !queue)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "adopting a wgpu device needs its instance, adapter, device and queue; "
                       "one is NULL. Fix: pass a live wgpu.GPUDevice.");
    vn_device *dev = calloc(1, sizeof *dev);
    if (dev == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a device record. Fix: free host memory.");
    vn_device_init_locks(dev);
    dev->instance = (WGPUInstance)instance;
    dev->adapter = (WGPUAdapter)adapter;
    dev->device = (WGPUDevice)device;
    dev->queue = (WGPUQueue)queue;
    wgpu.InstanceAddRef(dev->instance);
    wgpu.AdapterAddRef(dev->adapter);
    wgpu.DeviceAddRef(dev->device);
    wgpu.QueueAddRef(dev->queue);
    vn_describe_adapter(dev->adapter, &dev->info);
    dev->serial_submits = strcmp(dev->info.adapter_type, "CPU") == 0;
    dev->limits = (WGPULimits)WGPU_LIMITS_INIT;
    if (wgpu.DeviceGetLimits(dev->device, &dev->limits) != WGPUStatus_Success) {
        vn_device_unref(dev);
        return vn_fail(VN_ERROR_INTERNAL, "could not read the adopted device's limits. Fix: pass a live wgpu.GPUDevice.");
    }
    dev->limits.nextInChain = NULL;
    dev->timestamps = wgpu.DeviceHasFeature(dev->device, WGPUFeatureName_TimestampQuery) != 0;
    dev->timestamp_period = dev->timestamps ? (double)wgpu.QueueGetTimestampPeriod(dev->queue) : 0.0;
    /* The adopter installed its own uncaptured-error handler at device creation;
     * every call of this layer runs inside error scopes, so ours is not needed. */
    *out = dev;
    return VN_OK;
}

vn_status vn_buffer_adopt(vn_device *device, uintptr_t buffer, vn_buffer **out) {
    vn_status st = vn_device_check(device, "adopting a buffer");
    if (st != VN_OK) return st;
    if (out == NULL || !buffer)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_buffer_adopt: NULL buffer or result. Fix: pass a live wgpu.GPUBuffer.");
    *out = NULL;
    vn_buffer *b = calloc(1, sizeof *b);
    if (b == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a buffer record. Fix: free host memory.");
    b->buffer = (WGPUBuffer)buffer;
    wgpu.BufferAddRef(b->buffer);
    b->byte_len = wgpu.BufferGetSize(b->buffer);
    b->allocation_len = b->byte_len;
    b->usage = wgpu.BufferGetUsage(b->buffer);
    if (b->byte_len % 4 != 0 || b->byte_len == 0) {
        /* Bindings and clears cover the allocation rounded to 4 bytes; a wgpu buffer
         * of another size has no such padding to use. */
        uint64_t size = b->byte_len;
        wgpu.BufferRelease(b->buffer);
        free(b);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "the wgpu buffer has %llu bytes, not a positive multiple of 4, which binding and clearing need. "
                       "Fix: create it with a size rounded up to 4 bytes.", (unsigned long long)size);
    }
    atomic_init(&b->refs, 1);
    atomic_init(&b->foreign, VN_FOREIGN_USABLE);
    b->adopted = true;
    vn_device_retain(device);
    b->device = device;
    b->identity = vn_next_identity();
    vn_live_add(VN_LIVE_BUFFER, 1);
    *out = b;
    return VN_OK;
}

vn_status vn_buffer_export(vn_buffer *buffer, uintptr_t *out) {
    vn_status st = vn_buffer_check(buffer, "buffer.to_wgpu");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_buffer_export: out is NULL. Fix: pass a result pointer.");
    wgpu.BufferAddRef(buffer->buffer);
    *out = (uintptr_t)buffer->buffer;
    return VN_OK;
}

void vn_buffer_set_foreign_state(vn_buffer *buffer, vn_foreign_state state) {
    if (buffer == NULL || !buffer->adopted) return;
    /* Destroyed is final: a later unmap report must not make it usable again. */
    if (atomic_load(&buffer->foreign) == VN_FOREIGN_DESTROYED) return;
    atomic_store(&buffer->foreign, state);
}

vn_status vn_buffers_submittable(vn_buffer *const *buffers, size_t count, const char *what) {
    for (size_t i = 0; i < count; i++) {
        const vn_buffer *b = buffers[i];
        if (b == NULL || !b->adopted) continue;
        int state = atomic_load(&b->foreign);
        if (state == VN_FOREIGN_USABLE) continue;
        return vn_fail(VN_ERROR_BINDING,
                       "%s uses buffer %llu (adopted from wgpu-py), which wgpu-py has %s; wgpu-native would abort "
                       "the process on submitting it. Fix: %s",
                       what, (unsigned long long)b->identity, state == VN_FOREIGN_MAPPED ? "mapped" : "destroyed",
                       state == VN_FOREIGN_MAPPED ? "unmap it in wgpu-py (buffer.unmap()) before replaying."
                                                  : "record again with a live buffer.");
    }
    return VN_OK;
}

void vn_device_mark_lost(vn_device *device, const char *reason) {
    if (device == NULL || vn_inherited(device)) return;
    /* The write side of the life lock: no submit of ours is between its check and its
     * queue call when this returns, and none starts afterwards. */
    vn_rwlock_write_lock(&device->submit_lock);
    snprintf(device->lost_reason, sizeof device->lost_reason, "%s", reason ? reason : "destroyed by its owner");
    atomic_store(&device->lost, 1);
    vn_rwlock_write_unlock(&device->submit_lock);
}

void vn_buffer_retain_for_watch(vn_buffer *buffer) {
    if (buffer != NULL) vn_buffer_retain(buffer);
}

void vn_device_retain_for_watch(vn_device *device) {
    if (device != NULL) vn_device_retain(device);
}
