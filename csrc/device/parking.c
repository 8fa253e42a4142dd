/* parking.c - devices released while their work still runs. wgpu-native's release of a
 * device waits for its queue to drain (for ever on a device lost to a GPU fault), and a
 * release runs from ffi.gc finalizers, which must never block: such a device is parked,
 * and vn_devices_reap frees the ones that have become idle. And the free itself. */
#include "layer_device.h"

/* The parked devices: a lock-free stack (push by compare-exchange, take-all by
 * exchange), so no mutex is inherited locked by a fork() child; a child forgets the
 * parent's (vn_inherited). */
static _Atomic(vn_device *) parked;

static void park(vn_device *device) {
    vn_device *head = atomic_load(&parked);
    do {
        device->parked_next = head;
    } while (!atomic_compare_exchange_weak(&parked, &head, device));
}

bool vn_devices_reap(double wait_s) {
    double deadline = vn_monotonic_seconds() + wait_s;
    for (;;) {
        vn_device *list = atomic_exchange(&parked, NULL);
        while (list != NULL) {
            vn_device *device = list;
            list = device->parked_next;
            if (vn_inherited(&device->obj)) continue; /* the parent's: forget it */
            if (vn_device_idle(device)) vn_device_free(device);
            else park(device);
        }
        if (atomic_load(&parked) == NULL) return true;
        if (vn_monotonic_seconds() >= deadline) return false;
        vn_sleep_ns(1000000);
    }
}

void vn_device_free_or_park(vn_object *object) {
    vn_device *device = (vn_device *)object;
    if (device->device != NULL && !vn_device_idle(device)) {
        park(device);
        return;
    }
    vn_device_free(device);
}

void vn_device_free(vn_device *device) {
    vn_fence_release(device->idle_fence);
    /* What other files attached: abandoned reads settled, then the fill pipelines and
     * the staging ring freed (vn_device_hooks). */
    vn_device_reap_parts(device, true);
    for (int part = 0; part < VN_PART_COUNT; part++) {
        const vn_device_hooks *hooks = atomic_load_explicit(&device->hooks[part], memory_order_acquire);
        if (hooks != NULL) hooks->release(device);
    }
    if (device->queue) wgpu.QueueRelease(device->queue);
    if (device->device) wgpu.DeviceRelease(device->device);
    if (device->adapter) wgpu.AdapterRelease(device->adapter);
    if (device->instance) wgpu.InstanceRelease(device->instance);
    vn_mutex_destroy(&device->scope_lock);
    vn_rwlock_destroy(&device->life_lock);
    vn_mutex_destroy(&device->pipelines_lock);
    vn_scope_results_free(device);
    free(device);
    vn_live_add(VN_LIVE_DEVICE, -1);
}

/* The live-object counts (debug.c's) for leak tests, after the parked devices whose
 * work has finished are freed. */
void vn_debug_live_counts(vn_live_counts *out, double wait_s) {
    if (out == NULL) return;
    /* Devices released while their work ran are freed once it has finished: let a leak
     * test see them go. */
    vn_devices_reap(wait_s);
#define VN_HANDLE_KIND(name, field, what) out->field = vn_live_count(VN_LIVE_##name);
#define VN_INNER_KIND(name, field) out->field = vn_live_count(VN_LIVE_##name);
#include "../include/object_kinds.h"
#undef VN_HANDLE_KIND
#undef VN_INNER_KIND
}
