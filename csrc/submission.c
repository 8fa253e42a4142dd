/* submission.c - tracked queue submissions: index, non-blocking done, bounded waits. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

struct vn_submission {
    /* The caller's side: its handle and the calls in progress on it. Its destroy
     * releases the timing resources and the device, then the caller's part of the
     * record (record_refs). */
    vn_object obj; /* VN_KIND_SUBMISSION */
    /* The record has two owners: the caller's side, and the work-done callback until
     * it fires. Only the caller's side owns a device reference: were the callback's to
     * hold one too, a submission dropped unobserved would keep its device alive, and
     * the device's release, which is what fires (or cancels) pending callbacks, would
     * never come. */
    atomic_long record_refs;
    atomic_int done;
    vn_device *device;
    uint64_t index;
    /* Timed submissions only: the queries, and the times once read (under lock). */
    vn_timing timing;
    vn_mutex lock;
    uint64_t *times;
    size_t time_count;
    bool times_read;
};

/* Frees the record only: it may run inside the work-done callback, during the
 * device's own release, so it touches no wgpu object and no device. */
static void submission_unref(vn_submission *s) {
    if (atomic_fetch_sub(&s->record_refs, 1) != 1) return;
    free(s->times);
    vn_mutex_destroy(&s->lock);
    free(s);
    vn_live_add(VN_LIVE_SUBMISSION, -1);
}

static void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)status; /* cancelled or failed work is finished work too: nothing more will run */
    (void)message;
    (void)userdata2;
    vn_submission *s = userdata1;
    atomic_store(&s->done, 1);
    submission_unref(s);
}

/* The caller's side is gone (its last reference): its part of the record goes too. */
static void submission_destroy(vn_object *object) {
    vn_submission *s = (vn_submission *)object;
    vn_device *device = s->device;
    vn_timing_release(&s->timing);
    submission_unref(s);
    vn_device_unref(device);
}

vn_status vn_submit_tracked(vn_device *dev, WGPUCommandBuffer cb, const char *what, vn_timing *timing,
                            const vn_submit_guard *guard, vn_submission **out) {
    vn_submission *s = calloc(1, sizeof *s);
    if (s == NULL) {
        wgpu.CommandBufferRelease(cb);
        if (timing != NULL) vn_timing_release(timing);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a submission record. Fix: free host memory.");
    }
    vn_status st = vn_submit_begin_guarded(dev, what, guard);
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        if (timing != NULL) vn_timing_release(timing);
        free(s);
        return st;
    }
    if (timing != NULL) s->timing = *timing; /* the submission owns the query resources now */
    vn_mutex_init(&s->lock);
    vn_object_init(&s->obj, VN_KIND_SUBMISSION, submission_destroy);
    atomic_init(&s->record_refs, 2);
    vn_device_retain(dev);
    s->device = dev;
    s->index = wgpu.QueueSubmitForIndex(dev->queue, 1, &cb);
    /* Registered right after the submit, this fires once everything up to and
     * including it has completed: an exact per-submission "done". */
    WGPUQueueWorkDoneCallbackInfo info = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_work_done;
    info.userdata1 = s;
    wgpu.QueueOnSubmittedWorkDone(dev->queue, info);
    vn_submit_end(dev);
    wgpu.CommandBufferRelease(cb);
    vn_live_add(VN_LIVE_SUBMISSION, 1);
    *out = s;
    return VN_OK;
}

uint64_t vn_submission_index(const vn_submission *s) { VN_GET(uint64_t, s->index, 0, s, VN_KIND_SUBMISSION); }

int vn_submission_done(vn_submission *s) {
    if (vn_acquire(s, VN_KIND_SUBMISSION, __func__) != VN_OK) return 0;
    if (!atomic_load(&s->done)) wgpu.DevicePoll(s->device->device, 0, NULL);
    int done = atomic_load(&s->done);
    vn_unacquire(s);
    return done;
}

static vn_status submission_wait(vn_submission *s, double timeout_s) {
    if (atomic_load(&s->done)) return VN_OK;
    if (timeout_s < 0) {
        /* No limit: let wgpu block on exactly this submission. */
        WGPUSubmissionIndex idx = s->index;
        wgpu.DevicePoll(s->device->device, 1, &idx);
        if (!atomic_load(&s->done)) wgpu.DevicePoll(s->device->device, 0, NULL);
        return VN_OK;
    }
    /* wgpu-native's blocking poll has no timeout: poll without blocking, with
     * short sleeps, until the work-done callback fires or the deadline passes. */
    double deadline = vn_monotonic_seconds() + timeout_s;
    unsigned spins = 0;
    while (!atomic_load(&s->done)) {
        wgpu.DevicePoll(s->device->device, 0, NULL);
        if (atomic_load(&s->done)) break;
        if (vn_monotonic_seconds() >= deadline)
            return vn_fail(VN_ERROR_TIMEOUT,
                           "submission %llu did not complete within %.3f s. Fix: wait longer (timeout=None waits "
                           "without limit), or check the kernel for an endless loop.",
                           (unsigned long long)s->index, timeout_s);
        if (++spins < 64) {
            vn_yield();
        } else {
            vn_sleep_ns(50000); /* 50 µs: a GPU step, not a busy core */
        }
    }
    return VN_OK;
}

vn_status vn_submission_wait(vn_submission *s, double timeout_s) {
    VN_CALL1(submission_wait(s, timeout_s), s, VN_KIND_SUBMISSION);
}

static vn_status submission_gpu_times(vn_submission *s, uint64_t *out, size_t capacity, size_t *count) {
    if (count == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_submission_gpu_times: count is NULL. Fix: pass a count.");
    *count = 0;
    if (s->timing.mode == VN_TIMING_NONE) return VN_OK;
    vn_status st = VN_OK;
    vn_mutex_lock(&s->lock);
    if (!s->times_read) {
        size_t cap = 1 + s->timing.passes;
        if (s->times == NULL) s->times = calloc(cap, sizeof *s->times);
        if (s->times == NULL) st = vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate %zu times. Fix: free host memory.", cap);
        if (st == VN_OK) st = vn_device_check(s->device, "reading GPU times");
        if (st == VN_OK) st = vn_timing_read(s->device, &s->timing, s->times, &s->time_count);
        if (st == VN_OK) s->times_read = true;
    }
    if (st == VN_OK) {
        *count = s->time_count;
        for (size_t i = 0; i < s->time_count && i < capacity && out != NULL; i++) out[i] = s->times[i];
    }
    vn_mutex_unlock(&s->lock);
    return st;
}

vn_status vn_submission_gpu_times(vn_submission *s, uint64_t *out, size_t capacity, size_t *count) {
    VN_CALL1(submission_gpu_times(s, out, capacity, count), s, VN_KIND_SUBMISSION);
}

void vn_submission_release(vn_submission *s) { vn_release_handle(s, VN_KIND_SUBMISSION); }
