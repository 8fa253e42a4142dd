/* callbacks.c - waiting for wgpu-native's callbacks: driving the instance and device
 * until one has fired, and the request records a callback fills while a waiter waits
 * for it (adapter and device requests, error-scope pops), freed by whichever of the two
 * is last, so a waiter that gives up never leaves the callback a dead frame. */
#include "layer_device.h"

/* wgpu-native fires AllowProcessEvents callbacks from wgpuInstanceProcessEvents or
 * a device poll; drive both until `flag` is set, giving up after `limit_s`. */
bool vn_process_until(WGPUInstance instance, WGPUDevice device, atomic_int *flag, double limit_s) {
    double deadline = vn_monotonic_seconds() + limit_s;
    while (!atomic_load(flag)) {
        if (device != NULL) wgpu.DevicePoll(device, 0, NULL);
        wgpu.InstanceProcessEvents(instance);
        if (atomic_load(flag)) break;
        if (vn_monotonic_seconds() > deadline) return false;
        vn_yield();
    }
    return true;
}

/* A record a callback fills while a waiter waits for it, up to a deadline. A waiter
 * that gives up must not leave the callback a dead frame to write into, so the record
 * is on the heap and `state` says who frees it: the callback completes it (PENDING ->
 * DONE) or the waiter abandons it (PENDING -> ABANDONED), and whichever of the two
 * exchanges finds the other's mark is the last user and frees it. */
enum { REQUEST_PENDING = 0, REQUEST_DONE = 1, REQUEST_ABANDONED = 2 };

/* In a callback, after filling the record: mark it done; true when its waiter had
 * already given up, so the callback must free it. */
bool vn_request_complete(atomic_int *state) {
    return atomic_exchange(state, REQUEST_DONE) == REQUEST_ABANDONED;
}

/* In a waiter whose wait timed out: true when the callback came after all (the record
 * is the waiter's to read and free); false when the callback will free it. */
static bool request_abandon(atomic_int *state) {
    return atomic_exchange(state, REQUEST_ABANDONED) == REQUEST_DONE;
}

/* Wait for a request record's callback; false (the record then belongs to the
 * callback, which frees it) when it did not come within limit_s. */
bool vn_request_wait(WGPUInstance instance, WGPUDevice device, atomic_int *state, double limit_s) {
    return vn_process_until(instance, device, state, limit_s) || request_abandon(state);
}
