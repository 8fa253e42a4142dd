/* submit.c - recordings', sequences' and batches' work to the queue: in one command
 * buffer (vn_encode_and_submit, timed or not), or in parts (vn_submit_parts), the parts
 * cut by the one rule that also cuts a replay(n) past one submit (vn_replay_split). */
#include <stdio.h>
#include <string.h>

#include "layer_work.h"

/* vn_encode_finish of a replay's or batch's encoder, labelled `label`. */
static vn_status finish_encoding(vn_device *dev, const char *label, WGPUCommandEncoder enc, WGPUCommandBuffer *cb) {
    return vn_encode_finish(dev, enc, label,
                            "check the buffers against the shaders' declared types, and copy ranges and alignment.", cb);
}

/* Encode inside error scopes, then submit only a cleanly finished command buffer. */
vn_status vn_encode_and_submit(vn_device *dev, const vn_encode_job *job, const void *what, uint32_t n,
                               vn_timing_mode mode, const char *label, vn_submission **out) {
    const vn_submit_guard guard = {job->submittable, what};
    vn_status st = vn_device_check(dev, label);
    if (st == VN_OK) st = vn_submit_guard_check(&guard);
    if (st == VN_OK) st = vn_submit_ready(dev); /* VN_PENDING: nothing encoded, call again */
    if (st != VN_OK) return st;
    vn_timing timing;
    memset(&timing, 0, sizeof timing);
    if (mode != VN_TIMING_NONE) {
        timing.mode = mode; /* lets the pass count see per-dispatch splitting */
        uint32_t passes = job->passes(what, n, &timing);
        vn_scope_begin(dev);
        st = vn_timing_prepare(dev, mode, passes, &timing);
        vn_status scope = vn_scope_end(dev, "creating timestamp queries", VN_ERROR_VALIDATION,
                                       "time fewer dispatches, or replay without timing.");
        if (st == VN_OK) st = scope;
        if (st != VN_OK) {
            vn_timing_release(&timing);
            return st;
        }
    }
    WGPUCommandEncoder enc = vn_encode_begin(dev, label);
    job->encode(what, enc, n, &timing);
    vn_timing_resolve(&timing, enc);
    WGPUCommandBuffer cb;
    st = finish_encoding(dev, label, enc, &cb);
    if (st == VN_OK && timing.next_pass != timing.passes) {
        /* The count and the encode are one walk; should they ever differ, the timestamps
         * past the count would be missing: refuse rather than report wrong times. */
        wgpu.CommandBufferRelease(cb);
        st = vn_fail(VN_ERROR_INTERNAL, "%s began %u compute passes where its count said %u, so its timestamps "
                     "would be wrong. Fix: report this as a vyre_native bug; replay without timing meanwhile.",
                     label, timing.next_pass, timing.passes);
    }
    if (st != VN_OK) {
        vn_timing_release(&timing);
        return st;
    }
    return vn_submit_tracked(dev, cb, label, &timing, &guard, out);
}

/* n launches of `steps` steps each in one command buffer: wgpu keeps encoder memory for
 * every step until the GPU has run it (about 17 KiB a launch with clears on lavapipe),
 * so one submit holds at most VN_MAX_LAUNCHES_PER_SUBMIT steps; one launch of a longer
 * sequence is allowed (its size is the sequence the caller built). */
vn_status vn_replay_count_check(uint32_t n, size_t steps, const char *what) {
    if (n == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s.replay(n=0): nothing to launch. Fix: pass n >= 1.", what);
    if (n > 1 && (uint64_t)n * steps > VN_MAX_LAUNCHES_PER_SUBMIT)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s.replay(n=%u) would encode %llu steps into one command buffer, above the %d one submit "
                       "holds (each keeps encoder memory until the GPU has run it). Fix: pass n <= %llu per call; "
                       "without timing, split a larger n into parts as vn_replay_split says (vn's replay(n) does).",
                       what, n, (unsigned long long)n * steps, VN_MAX_LAUNCHES_PER_SUBMIT,
                       (unsigned long long)(steps ? VN_MAX_LAUNCHES_PER_SUBMIT / steps : 1));
    return VN_OK;
}

/* ---- work in several submits: one rule, one loop -------------------------------------
 *
 * Work of `total` steps (launches, for replay(n)) goes in parts: the first of `first`
 * steps, each next twice the one before where the rule grows, none above `most`; the
 * last takes what is left once that is less than twice the next part's size and no
 * more than `most`. Three callers follow it: vn_replay_split (Python's replay(n) loop,
 * which waits between parts in slices), replay_in_submits (sequence.c) and
 * submit_in_parts (batch.c), through the C loop below, vn_submit_parts. */

/* Where the part that starts at `first`, of `size` steps by the rule, ends. */
static uint64_t part_end(const vn_parts_rule *rule, uint64_t total, uint64_t first, uint64_t size) {
    uint64_t left = total - first;
    return left < 2 * size && left <= rule->most ? total : first + size;
}

static uint64_t next_part_size(const vn_parts_rule *rule, uint64_t size) {
    return rule->grows && size <= rule->most / 2 ? 2 * size : rule->most < size ? rule->most : size;
}

/* replay(n) past one submit: parts of as many launches as one submit holds; a launch
 * longer than the bound is one part (its size is the sequence the caller built). */
static vn_parts_rule launches_rule(size_t steps) {
    uint64_t fit = steps <= 1 ? VN_MAX_LAUNCHES_PER_SUBMIT
                   : steps >= VN_MAX_LAUNCHES_PER_SUBMIT ? 1
                                                         : VN_MAX_LAUNCHES_PER_SUBMIT / steps;
    vn_parts_rule rule = {fit, fit, false};
    return rule;
}

uint32_t vn_replay_split(uint32_t n, size_t steps, vn_timing_mode timing) {
    if (timing != VN_TIMING_NONE || n == 0) return n; /* timed: one command buffer holds the queries */
    vn_parts_rule rule = launches_rule(steps);
    return (uint32_t)part_end(&rule, n, 0, rule.first);
}

/* Finish one part of a replay in several submits: VN_OK with *cb to submit, or the error
 * (of the encode, or the device lost while it was encoded) with nothing left to release. */
static vn_status finish_part(vn_device *dev, const char *label, WGPUCommandEncoder enc, WGPUCommandBuffer *cb) {
    vn_status st = finish_encoding(dev, label, enc, cb);
    if (st == VN_OK) st = vn_device_check(dev, label); /* lost while this part was encoded */
    if (st != VN_OK && *cb != NULL) {
        wgpu.CommandBufferRelease(*cb);
        *cb = NULL;
    }
    return st;
}

/* A failure after `first` of `total` steps went out: the message says they run. */
static vn_status parts_failed(vn_status st, uint64_t first, uint64_t total, const char *what) {
    if (st == VN_OK || first == 0) return st;
    char prefix[200];
    snprintf(prefix, sizeof prefix, "after %llu of this %s's %llu steps were submitted (they run): ",
             (unsigned long long)first, what, (unsigned long long)total);
    return vn_fail_prefixed(st, prefix);
}

/* The one loop that submits work in parts, as one unit: the life lock's write side is
 * held across every part, so no other thread's submit, queued write or readback, nor
 * wgpu-py's map or destroy of a shared buffer, nor destroy(), lands between two of them,
 * or between the guard's check and the last part. Its checks come before anything is
 * encoded. The last part is the one tracked: the queue runs in order, so its completion
 * is the whole work's. Should a later part fail (the device lost meanwhile), the error
 * says how many steps went before it. */
vn_status vn_submit_parts(vn_device *dev, const vn_parts_job *job, uint64_t total, vn_submission **out) {
    vn_status st = vn_life_lock_write(dev, job->label, job->guard);
    if (st != VN_OK) return st;
    /* Part p's fence is in_flight[p % VN_MAX_SUBMITS_IN_FLIGHT] until that slot's next part. */
    vn_fence *in_flight[VN_MAX_SUBMITS_IN_FLIGHT] = {NULL};
    uint64_t first = 0, size = job->rule.first;
    for (unsigned part = 0; first < total; part++) {
        uint64_t end = part_end(&job->rule, total, first, size);
        vn_fence **slot = &in_flight[part % VN_MAX_SUBMITS_IN_FLIGHT];
        if (*slot != NULL) {
            st = vn_fence_wait_held(dev, *slot);
            vn_fence_release(*slot);
            *slot = NULL;
            if (st != VN_OK) break;
        }
        WGPUCommandEncoder enc = vn_encode_begin(dev, job->label);
        job->encode_next(job->work, enc, end - first);
        WGPUCommandBuffer cb;
        st = finish_part(dev, job->label, enc, &cb);
        if (st != VN_OK) break;
        if (end == total) {
            st = vn_submit_tracked_locked(dev, cb, NULL, out);
            if (st != VN_OK) break;
        } else {
            vn_submit_locked(dev, cb);
            if (job->bounded) *slot = vn_fence_create(dev);
        }
        first = end;
        size = next_part_size(&job->rule, size);
    }
    for (int i = 0; i < VN_MAX_SUBMITS_IN_FLIGHT; i++) vn_fence_release(in_flight[i]);
    vn_life_unlock_write(dev);
    return parts_failed(st, first, total, job->what);
}
