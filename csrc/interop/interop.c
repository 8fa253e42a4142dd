/* interop.c - wrapping wgpu-py's objects and handing ours to it.
 *
 * wgpu-py loads the same libwgpu_native file, so both bindings share one copy of
 * wgpu-native and its objects are plain reference-counted pointers: adopting one
 * is an AddRef, and the vn object releases that reference when it goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../resources/layer_resources.h"

static vn_status device_adopt(uintptr_t instance, uintptr_t adapter, uintptr_t device, uintptr_t queue,
                              vn_device **out) {
    vn_status st = vn_require_library();
    if (st != VN_OK) return st;
    if (out == NULL) return vn_null_out("vn_device_adopt", "out");
    *out = NULL;
    if (!instance || !adapter || !device || !queue)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "adopting a wgpu device needs its instance, adapter, device and queue; "
                       "one is NULL. Fix: pass a live wgpu.GPUDevice.");
    vn_device *dev = calloc(1, sizeof *dev);
    if (dev == NULL) return vn_fail_no_memory("a device record", sizeof *dev);
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

vn_status vn_device_adopt(uintptr_t instance, uintptr_t adapter, uintptr_t device, uintptr_t queue, vn_device **out) {
    vn_call_guard_enter(); /* it calls wgpu-native on wgpu-py's objects */
    vn_status st = vn_publish(device_adopt(instance, adapter, device, queue, out), out);
    vn_call_guard_leave();
    return st;
}

/* True when wgpu-native reports `buffer` destroyed. wgpu-py keeps no record of a destroy,
 * and one made before its calls were watched (before the first interop call) would make
 * every submit using the buffer abort. Unmapping a buffer that is not mapped changes
 * nothing and reports "not mapped", or "destroyed" for a destroyed one: the one probe
 * wgpu-native 29 answers without side effects (wgpuBufferGetMapState is a stub). Only
 * for a buffer wgpu-py reports unmapped: a mapped one would be unmapped under it. */
static bool destroyed_already(vn_device *device, WGPUBuffer buffer) {
    vn_scope_begin(device);
    wgpu.BufferUnmap(buffer);
    bool destroyed = vn_scope_end(device, "probing the buffer", VN_ERROR_VALIDATION, "none.") != VN_OK &&
                     strstr(vn_last_error(), "destroyed") != NULL;
    vn_clear_error();
    return destroyed;
}

static vn_status buffer_adopt(vn_device *device, uintptr_t buffer, int mapped, vn_buffer **out) {
    vn_status st = vn_device_check(device, "adopting a buffer");
    if (st != VN_OK) return st;
    if (out == NULL || !buffer)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_buffer_adopt: NULL buffer or result. Fix: pass a live wgpu.GPUBuffer.");
    *out = NULL;
    vn_buffer *b = calloc(1, sizeof *b);
    if (b == NULL) return vn_fail_no_memory("a buffer record", sizeof *b);
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
    if (!mapped && destroyed_already(device, b->buffer)) {
        uint64_t size = b->byte_len;
        wgpu.BufferRelease(b->buffer);
        free(b);
        return vn_fail(VN_ERROR_BINDING,
                       "the wgpu buffer of %llu bytes was destroyed (GPUBuffer.destroy()) before it was adopted; "
                       "wgpu-native would abort the process on submitting work that uses it. Fix: adopt a live "
                       "buffer.", (unsigned long long)size);
    }
    atomic_init(&b->foreign, mapped ? VN_FOREIGN_MAPPED : VN_FOREIGN_USABLE);
    vn_buffer_init(b, device);
    *out = b;
    return VN_OK;
}

vn_status vn_buffer_adopt(vn_device *device, uintptr_t buffer, int mapped, vn_buffer **out) {
    VN_CALL1_OUT(buffer_adopt(device, buffer, mapped, out), out, device, VN_KIND_DEVICE);
}

static vn_status buffer_export(vn_buffer *buffer, uintptr_t *out) {
    vn_status st = vn_buffer_check(buffer, "buffer.to_wgpu");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_null_out("vn_buffer_export", "out");
    wgpu.BufferAddRef(buffer->buffer);
    *out = (uintptr_t)buffer->buffer;
    return VN_OK;
}

vn_status vn_buffer_export(vn_buffer *buffer, uintptr_t *out) {
    VN_CALL1(buffer_export(buffer, out), buffer, VN_KIND_BUFFER);
}

static vn_foreign_state set_foreign_state(vn_buffer *buffer, vn_foreign_state state) {
    if (state != VN_FOREIGN_USABLE && state != VN_FOREIGN_MAPPED && state != VN_FOREIGN_DESTROYED)
        state = VN_FOREIGN_DESTROYED; /* an unknown report: refuse the buffer rather than trust it */
    /* The write side of the life lock: every submit reads its buffers' states under the
     * read side (vn_life_lock_read_guarded), so none is between that check and its queue
     * call when this returns, and every later one sees the new state. */
    vn_rwlock_write_lock(&buffer->device->life_lock);
    vn_foreign_state before = (vn_foreign_state)atomic_load(&buffer->foreign);
    /* Destroyed is final: a later unmap report must not make it usable again. */
    if (before != VN_FOREIGN_DESTROYED) atomic_store(&buffer->foreign, (int)state);
    vn_rwlock_write_unlock(&buffer->device->life_lock);
    return before;
}

vn_foreign_state vn_buffer_set_foreign_state(vn_buffer *buffer, vn_foreign_state state) {
    VN_GET(vn_foreign_state, set_foreign_state(buffer, state), VN_FOREIGN_DESTROYED, buffer, VN_KIND_BUFFER);
}

void vn_device_destroy_shared(vn_device *device, const char *reason) {
    vn_object *held;
    if (vn_acquire(device, VN_KIND_DEVICE, __func__, &held) != VN_OK) return;
    /* As vn_device_destroy, whether or not this layer closed the device: see there. */
    vn_device_mark_destroyed((vn_device *)held, reason ? reason : "destroyed by its owner");
    vn_unacquire(held);
}

/* A second id of the object, with a reference of its own (acquiring takes it): the slot
 * keeps it (NULL when `handle` is no live id of `kind`, or no id could be had). */
static void retain_for_watch(const void *handle, vn_kind kind, void *slot) {
    vn_object *held;
    void *none = NULL;
    memcpy(slot, &none, sizeof none);
    if (vn_acquire(handle, kind, "retain_for_watch", &held) != VN_OK) return;
    memcpy(slot, &held, sizeof held);
    vn_publish(VN_OK, slot); /* on failure: released, the slot NULL */
}

void vn_buffer_retain_for_watch(vn_buffer *buffer, vn_buffer **slot) { retain_for_watch(buffer, VN_KIND_BUFFER, slot); }

void vn_device_retain_for_watch(vn_device *device, vn_device **slot) { retain_for_watch(device, VN_KIND_DEVICE, slot); }
