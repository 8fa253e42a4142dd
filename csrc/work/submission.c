/* submission.c - tracked queue submissions: index, non-blocking done, bounded waits. */
#include <stdio.h>
#include <stdlib.h>

#include "layer_work.h"

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
    /* Timed submissions only: the queries, and the times once read (under lock): the
     * readback of the ticks may span calls (VN_PENDING), so it is kept here. */
    vn_timing timing;
    vn_mutex lock;
    uint64_t *times;
    size_t time_count;
    bool times_read;
    uint64_t *ticks;
    vn_pending_read *ticks_read;
};

/* Frees the record only: it may run inside the work-done callback, during the
 * device's own release, so it touches no wgpu object and no device. */
static void submission_unref(vn_submission *s) {
    if (atomic_fetch_sub(&s->record_refs, 1) != 1) return;
    free(s->times);
    free(s->ticks);
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
    if (s->ticks_read != NULL) vn_release((vn_object *)s->ticks_read); /* never waits */
    s->ticks_read = NULL;
    vn_timing_release(&s->timing);
    submission_unref(s);
    vn_device_unref(device);
}

vn_status vn_submit_tracked(vn_device *dev, WGPUCommandBuffer cb, const char *what, vn_timing *timing,
                            const vn_submit_guard *guard, vn_submission **out) {
    vn_status st = vn_life_lock_read_guarded(dev, what, guard);
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        if (timing != NULL) vn_timing_release(timing);
        return st;
    }
    st = vn_submit_tracked_locked(dev, cb, timing, out);
    vn_life_unlock_read(dev);
    return st;
}

vn_status vn_submit_tracked_locked(vn_device *dev, WGPUCommandBuffer cb, vn_timing *timing, vn_submission **out) {
    vn_submission *s = calloc(1, sizeof *s);
    if (s == NULL) {
        wgpu.CommandBufferRelease(cb);
        if (timing != NULL) vn_timing_release(timing);
        return vn_fail_no_memory("a submission record", sizeof *s);
    }
    if (timing != NULL) s->timing = *timing; /* the submission owns the query resources now */
    vn_mutex_init(&s->lock);
    vn_lock_rank_set(&s->lock, VN_LOCK_OBJECT, "vn_submission.lock");
    vn_object_init(&s->obj, VN_KIND_SUBMISSION, submission_destroy);
    atomic_init(&s->record_refs, 2);
    vn_device_retain(dev);
    s->device = dev;
    s->index = vn_submit_locked(dev, cb);
    /* Registered right after the submit, this fires once everything up to and
     * including it has completed: an exact per-submission "done". */
    WGPUQueueWorkDoneCallbackInfo info = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_work_done;
    info.userdata1 = s;
    wgpu.QueueOnSubmittedWorkDone(dev->queue, info);
    vn_live_add(VN_LIVE_SUBMISSION, 1);
    *out = s;
    return VN_OK;
}

uint64_t vn_submission_index(const vn_submission *s) { VN_GET(uint64_t, s->index, 0, s, VN_KIND_SUBMISSION); }

/* 1 done, 0 not yet, or minus the status that says it never will be here. */
static int submission_done(vn_submission *s) {
    if (atomic_load(&s->done)) return 1;
    wgpu.DevicePoll(s->device->device, 0, NULL);
    if (atomic_load(&s->done)) return 1;
    /* Lost or destroyed: what has not finished will not. */
    if (atomic_load(&s->device->lost)) return -(int)vn_device_check(s->device, "Submission.done");
    return 0;
}

int vn_submission_done(vn_submission *s) { VN_PROBE(submission_done(s), s, VN_KIND_SUBMISSION); }

static vn_status submission_wait(vn_submission *s, double timeout_s, double *waited_s) {
    if (atomic_load(&s->done)) return VN_OK;
    double limit = -1.0;
    if (timeout_s >= 0) {
        if (waited_s == NULL)
            return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_submission_wait: a timeout needs waited_s. Fix: pass a "
                           "double set to 0 before the first call.");
        limit = timeout_s - *waited_s > 0 ? timeout_s - *waited_s : 0.0;
    }
    vn_status st = vn_wait(s->device, &s->done, limit, waited_s);
    if (st == VN_PENDING && timeout_s >= 0 && *waited_s >= timeout_s)
        return vn_fail(VN_ERROR_TIMEOUT,
                       "submission %llu did not complete within %.3f s. Fix: wait longer (timeout=None waits "
                       "without limit), or check the kernel for an endless loop.",
                       (unsigned long long)s->index, timeout_s);
    return st;
}

vn_status vn_submission_wait(vn_submission *s, double timeout_s, double *waited_s) {
    VN_CALL1(submission_wait(s, timeout_s, waited_s), s, VN_KIND_SUBMISSION);
}

/* Read the ticks (one time slice at a time) and turn them into times. Under s->lock. */
static vn_status read_times(vn_submission *s) {
    size_t cap = 1 + s->timing.passes;
    if (s->times == NULL) s->times = calloc(cap, sizeof *s->times);
    if (s->ticks == NULL) s->ticks = calloc(s->timing.queries ? s->timing.queries : 1, sizeof *s->ticks);
    if (s->times == NULL || s->ticks == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate %zu times. Fix: free host memory.", cap);
    vn_status st = VN_OK;
    if (s->ticks_read == NULL) {
        st = vn_device_check(s->device, "reading GPU times");
        if (st == VN_OK) st = vn_timing_read_start(s->device, &s->timing, &s->ticks_read);
        if (st != VN_OK) return st;
    }
    st = vn_pending_read_finish_held(s->ticks_read, s->ticks, 8ull * s->timing.queries);
    if (st == VN_PENDING) return st;
    vn_release((vn_object *)s->ticks_read);
    s->ticks_read = NULL;
    if (st != VN_OK) return st;
    vn_timing_convert(s->device, &s->timing, s->ticks, s->times, &s->time_count);
    s->times_read = true;
    return VN_OK;
}

static vn_status submission_gpu_times(vn_submission *s, uint64_t *out, size_t capacity, size_t *count) {
    if (count == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_submission_gpu_times: count is NULL. Fix: pass a count.");
    *count = 0;
    if (s->timing.mode == VN_TIMING_NONE) return VN_OK;
    vn_status st = VN_OK;
    vn_mutex_lock(&s->lock);
    if (!s->times_read) st = read_times(s);
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

void vn_submission_release(vn_submission *s) { vn_id_release(s, VN_KIND_SUBMISSION); }
