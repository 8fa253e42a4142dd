/* loss.c - whether a device can still be used: the check every call makes (closed by
 * close(), or lost: destroyed, lost by the driver, or named lost in a wgpu message),
 * and the mark a loss leaves. Below every other part of the device, which all check. */
#include "layer_device.h"

void vn_device_note_lost(vn_device *device, const char *reason) {
    if (device == NULL || atomic_load(&device->lost)) return;
    vn_format(device->lost_reason, sizeof device->lost_reason, "%s", reason);
    atomic_store(&device->lost, 1);
}

vn_status vn_device_check(const vn_device *device, const char *what) {
    if (device == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: device is NULL. Fix: pass a live Device.", what);
    if (atomic_load(&device->closed))
        return vn_fail(VN_ERROR_RELEASED,
                       "%s: the device was closed. Fix: create a new vn.Device and its buffers and pipelines "
                       "on it; nothing made on a closed device can be used.", what);
    if (atomic_load(&device->lost))
        return vn_fail(VN_ERROR_DEVICE_LOST,
                       "%s: the device '%s' was lost (%s). Fix: create a new vn.Device and re-create buffers "
                       "and pipelines on it.", what, device->info.name,
                       device->lost_reason[0] ? device->lost_reason : "destroyed");
    return VN_OK;
}
