/* waits.c - waiting for the GPU without blocking inside wgpu-native: fences ("everything
 * submitted so far has finished"), polls in time slices (vn_wait), the drain before a
 * CPU adapter's submit (vn_submit_ready), whether a device is idle, and sending the
 * writes queued since the last submit (wait_idle). */
#include <stdlib.h>

#include "layer_device.h"

/* wgpuDevicePoll's return value does not say whether work is still running (wgpu-native
 * 29 returns true with a submission in flight), so completion of "all work so far" is a
 * work-done callback registered now: it fires once everything submitted before it has. */
struct vn_fence {
    atomic_int done;
    atomic_int refs; /* the holder's and the callback's */
};

static void fence_unref(vn_fence *f) {
    if (f != NULL && atomic_fetch_sub(&f->refs, 1) == 1) free(f);
}

static void on_fence(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)status; /* cancelled or failed work is finished work too */
    (void)message;
    (void)userdata2;
    vn_fence *f = userdata1;
    atomic_store(&f->done, 1);
    fence_unref(f);
}

/* NULL only when out of host memory (the caller then polls as if it were not done). */
static vn_fence *fence_create(vn_device *device) {
    vn_fence *f = calloc(1, sizeof *f);
    if (f == NULL) return NULL;
    atomic_init(&f->refs, 2);
    WGPUQueueWorkDoneCallbackInfo info = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_fence;
    info.userdata1 = f;
    wgpu.QueueOnSubmittedWorkDone(device->queue, info);
    return f;
}

/* Each attached part's reap (vn_device_hooks), in slot order. */
void vn_device_reap_parts(vn_device *device, bool final) {
    for (int part = 0; part < VN_PART_COUNT; part++) {
        const vn_device_hooks *hooks = atomic_load_explicit(&device->hooks[part], memory_order_acquire);
        if (hooks != NULL && hooks->reap != NULL) hooks->reap(device, final);
    }
}


bool vn_device_idle(vn_device *device) {
    if (device->idle_fence == NULL) device->idle_fence = fence_create(device);
    wgpu.DevicePoll(device->device, 0, NULL);
    wgpu.InstanceProcessEvents(device->instance);
    vn_device_reap_parts(device, false);
    return device->idle_fence != NULL && atomic_load(&device->idle_fence->done);
}

/* Polls spin (yielding) this long, so work of microseconds is seen at once, then sleep
 * between polls, doubling from the first pause to the longest: a long wait costs a
 * poll every 0.2 ms, not a busy core, and sees completion at most that late. */
enum { SPIN_NS = 200000, FIRST_PAUSE_NS = 20000, LONGEST_PAUSE_NS = 200000 };

/* Between two polls of a wait `spent` ns old: a yield while it spins, else a sleep of
 * the next pause (*pause, the one before) or `at_most` ns, whichever is shorter. */
static void between_polls(uint64_t spent, uint64_t *pause, uint64_t at_most) {
    if (spent < SPIN_NS) {
        vn_yield();
        return;
    }
    *pause = *pause == 0 ? FIRST_PAUSE_NS : *pause * 2 > LONGEST_PAUSE_NS ? LONGEST_PAUSE_NS : *pause * 2;
    vn_sleep_ns(*pause < at_most ? *pause : at_most);
}

vn_status vn_wait(vn_device *device, atomic_int *flag, double limit_s, double *waited_s) {
    if (flag == NULL) {
        /* All work so far: a fence of this call's own. */
        vn_fence *f = fence_create(device);
        if (f == NULL) return vn_fail_no_memory("a fence", sizeof(vn_fence));
        vn_status st = vn_wait(device, &f->done, limit_s, waited_s);
        fence_unref(f);
        return st;
    }
    uint64_t start = vn_monotonic_ns();
    uint64_t limit = (uint64_t)VN_WAIT_SLICE_MS * 1000000u;
    if (limit_s >= 0 && limit_s * 1e9 < (double)limit) limit = (uint64_t)(limit_s * 1e9);
    uint64_t pause = 0;
    vn_status st = VN_PENDING;
    for (;;) {
        wgpu.DevicePoll(device->device, 0, NULL);
        /* Map and work-done callbacks (AllowProcessEvents) fire from here too. */
        wgpu.InstanceProcessEvents(device->instance);
        if (atomic_load_explicit(&device->abandoned_count, memory_order_relaxed) != 0) vn_device_reap_parts(device, false);
        if (atomic_load(flag)) {
            st = VN_OK;
            break;
        }
        if (atomic_load(&device->lost)) {
            /* Destroyed or lost: what has not finished by now will not. */
            st = vn_device_check(device, "waiting for submitted work");
            break;
        }
        uint64_t spent = vn_monotonic_ns() - start;
        if (spent >= limit) break;
        between_polls(spent, &pause, limit - spent);
    }
    if (waited_s != NULL) *waited_s += (double)(vn_monotonic_ns() - start) * 1e-9;
    return st;
}

vn_status vn_submit_ready(vn_device *device) {
    return device->serial_submits ? vn_wait(device, NULL, -1.0, NULL) : VN_OK;
}

vn_fence *vn_fence_create(vn_device *device) { return fence_create(device); }

void vn_fence_release(vn_fence *fence) { fence_unref(fence); }

vn_status vn_fence_wait_held(vn_device *device, vn_fence *f) {
    uint64_t start = vn_monotonic_ns(), pause = 0;
    while (f != NULL && !atomic_load(&f->done)) {
        wgpu.DevicePoll(device->device, 0, NULL);
        wgpu.InstanceProcessEvents(device->instance);
        if (atomic_load(&f->done)) break;
        if (atomic_load(&device->lost)) return vn_device_check(device, "waiting for an earlier part of the work");
        between_polls(vn_monotonic_ns() - start, &pause, UINT64_MAX);
    }
    return VN_OK;
}

vn_status vn_device_flush_writes(vn_device *device, const char *what, uint64_t *index) {
    vn_status st = vn_life_lock_read(device, what);
    if (st != VN_OK) return st;
    atomic_store(&device->pending_write_bytes, 0);
    WGPUSubmissionIndex idx = wgpu.QueueSubmitForIndex(device->queue, 0, NULL);
    vn_life_unlock_read(device);
    if (index != NULL) *index = idx;
    return VN_OK;
}

/* buffer.write queues its bytes for the next submit (wgpu's pending writes): a wait
 * with nothing submitted since would return before they land, and wgpu would keep
 * every write's staging copy. The empty submit sends them, so wait_idle covers them;
 * it is made once (a call again after VN_PENDING finds nothing queued), after a CPU
 * adapter's queue has drained (vn_submit_ready). */
static vn_status device_wait_idle(vn_device *device) {
    vn_status st = vn_device_check(device, "device.wait_idle");
    if (st == VN_OK && atomic_load(&device->pending_write_bytes) > 0) {
        st = vn_submit_ready(device);
        if (st == VN_OK) st = vn_device_flush_writes(device, "device.wait_idle", NULL);
    }
    if (st != VN_OK) return st;
    return vn_wait(device, NULL, -1.0, NULL);
}

vn_status vn_device_wait_idle(vn_device *device) { VN_CALL1(device_wait_idle(device), device, VN_KIND_DEVICE); }
