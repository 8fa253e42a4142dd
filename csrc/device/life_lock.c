/* life_lock.c - the device's life lock (vn_device.life_lock): submitting to a
 * destroyed device, or reading the mapped range of a buffer it destroyed, aborts the
 * process inside wgpu-native, so every submit and mapped-range read holds it for reading
 * after checking the device, and destroy() holds it for writing (deferred while a
 * zero-copy read pins a staging buffer). */
#include "layer_device.h"

/* Under the life lock held for writing. */
static void destroy_gpu_device(vn_device *device) {
    vn_mutex_lock(&device->scope_lock);
    wgpu.DeviceDestroy(device->device);
    vn_mutex_unlock(&device->scope_lock);
}

void vn_device_mark_destroyed(vn_device *device, const char *reason) {
    /* Exclusive: no submit is between its check and its queue call while the device
     * goes away (wgpu-native aborts on a submit to a destroyed device), and none starts
     * afterwards without seeing `lost`; under the scope lock no encoding of ours is
     * between its pushes and pops. */
    vn_rwlock_write_lock(&device->life_lock);
    vn_device_note_lost(device, reason);
    /* Destroying the GPU device frees every buffer's memory, the mapped memory of a
     * pinned staging buffer too, which a zero-copy array still reads: with pins alive,
     * only the flag is set now (every call already fails as on a destroyed device) and
     * the last unpin destroys it (vn_device_destroy_deferred). */
    if (atomic_load(&device->staging_pinned) > 0) device->destroy_deferred = true;
    else destroy_gpu_device(device);
    vn_rwlock_write_unlock(&device->life_lock);
}

static vn_status device_destroy_now(vn_device *device) {
    vn_status st = vn_device_check(device, "device.destroy");
    if (st != VN_OK) return st;
    vn_device_mark_destroyed(device, "destroyed by Device.destroy()");
    return VN_OK;
}

vn_status vn_device_destroy(vn_device *device) { VN_CALL1(device_destroy_now(device), device, VN_KIND_DEVICE); }

void vn_device_destroy_deferred(vn_device *device) {
    vn_rwlock_write_lock(&device->life_lock);
    if (device->destroy_deferred && atomic_load(&device->staging_pinned) == 0) {
        device->destroy_deferred = false;
        destroy_gpu_device(device);
    }
    vn_rwlock_write_unlock(&device->life_lock);
}

vn_status vn_life_lock_read(vn_device *device, const char *what) {
    vn_rwlock_read_lock(&device->life_lock);
    vn_status st = vn_device_check(device, what);
    if (st != VN_OK) vn_rwlock_read_unlock(&device->life_lock);
    return st;
}

void vn_life_unlock_read(vn_device *device) { vn_rwlock_read_unlock(&device->life_lock); }

vn_status vn_submit_guard_check(const vn_submit_guard *guard) {
    return guard == NULL || guard->check == NULL ? VN_OK : guard->check(guard->arg);
}

vn_status vn_life_lock_read_guarded(vn_device *device, const char *what, const vn_submit_guard *guard) {
    vn_status st = vn_life_lock_read(device, what);
    if (st != VN_OK) return st;
    st = vn_submit_guard_check(guard);
    if (st != VN_OK) vn_life_unlock_read(device);
    return st;
}

vn_status vn_life_lock_write(vn_device *device, const char *what, const vn_submit_guard *guard) {
    vn_rwlock_write_lock(&device->life_lock);
    vn_status st = vn_device_check(device, what);
    if (st == VN_OK) st = vn_submit_guard_check(guard);
    if (st != VN_OK) vn_rwlock_write_unlock(&device->life_lock);
    return st;
}

void vn_life_unlock_write(vn_device *device) { vn_rwlock_write_unlock(&device->life_lock); }
