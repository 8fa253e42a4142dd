/* record.c - pre-recorded dispatches: encoded once, submitted at most once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A dispatch released without replay() leaves its command buffer unsubmitted, which
 * wgpu-native 29 does not reclaim (about 90 KB each, inside wgpu-core): the
 * single-submit design of the seed has that cost, documented in the README;
 * pipeline.record() encodes at replay time and has none. */
enum { DISPATCH_RECORDED = 0, DISPATCH_SUBMITTING = 1, DISPATCH_SUBMITTED = 2 };

struct vn_dispatch {
    atomic_long refs;
    vn_bound bound;
    WGPUCommandBuffer command_buffer; /* NULL once submitted */
    atomic_int state;
    uint64_t submission_index;
};

vn_status vn_dispatch_record(vn_pipeline *pipeline, vn_buffer *const *inputs, size_t input_count,
                             vn_buffer *const *outputs, size_t output_count, vn_buffer *params, uint32_t x, uint32_t y,
                             uint32_t z, vn_dispatch **out) {
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_dispatch_record: out is NULL. Fix: pass a result pointer.");
    *out = NULL;
    vn_dispatch *d = calloc(1, sizeof *d);
    if (d == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a dispatch record. Fix: free host memory.");
    vn_status st = vn_bound_resolve(pipeline, inputs, input_count, outputs, output_count, params, x, y, z, &d->bound);
    if (st != VN_OK) {
        free(d);
        return st;
    }
    vn_device *dev = pipeline->device;
    /* Encoded inside error scopes; a command buffer whose encoding failed is
     * dropped here and never reaches the queue, where wgpu-native would abort. */
    vn_scope_begin(dev);
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    vn_bound_encode(&d->bound, enc, NULL);
    WGPUCommandBuffer cb = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    st = vn_scope_end(dev, "recording the dispatch", VN_ERROR_VALIDATION,
                      "check the buffers against the shader's declared types and the workgroup counts.");
    if (st != VN_OK) {
        if (cb != NULL) wgpu.CommandBufferRelease(cb);
        vn_bound_release(&d->bound);
        free(d);
        return st;
    }
    atomic_init(&d->refs, 1);
    atomic_init(&d->state, DISPATCH_RECORDED);
    d->command_buffer = cb;
    vn_live_add(VN_LIVE_DISPATCH, 1);
    *out = d;
    return VN_OK;
}

vn_status vn_dispatch_replay(vn_dispatch *d, uint64_t *submission_index) {
    if (d == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "dispatch is NULL. Fix: pass a live PrerecordedDispatch.");
    vn_device *dev = d->bound.pipeline->device;
    vn_status st = VN_OK;
    if (d->bound.adopted) st = vn_buffers_submittable(d->bound.buffers, d->bound.buffer_count, "replay()");
    if (st == VN_OK && dev->serial_submits && atomic_load(&d->state) == DISPATCH_RECORDED) {
        st = vn_device_check(dev, "replaying a pre-recorded dispatch");
        if (st == VN_OK) st = vn_submit_ready(dev);
    }
    if (st == VN_OK) st = vn_submit_begin(dev, "replaying a pre-recorded dispatch");
    if (st != VN_OK) return st;
    /* Exactly one caller wins the exchange, however many threads race here. */
    int expected = DISPATCH_RECORDED;
    if (!atomic_compare_exchange_strong(&d->state, &expected, DISPATCH_SUBMITTING)) {
        vn_submit_end(dev);
        return vn_fail(VN_ERROR_ALREADY_SUBMITTED,
                       "this pre-recorded dispatch was already submitted (submission %llu). Fix: record a new "
                       "PrerecordedDispatch for each launch (wgpu command buffers are single-submit), or use "
                       "pipeline.record(...) for a replayable recording.",
                       (unsigned long long)d->submission_index);
    }
    WGPUCommandBuffer cb = d->command_buffer;
    d->command_buffer = NULL;
    d->submission_index = wgpu.QueueSubmitForIndex(dev->queue, 1, &cb);
    vn_submit_end(dev);
    wgpu.CommandBufferRelease(cb);
    atomic_store(&d->state, DISPATCH_SUBMITTED);
    if (submission_index != NULL) *submission_index = d->submission_index;
    return VN_OK;
}

size_t vn_dispatch_output_count(const vn_dispatch *d) { return d == NULL ? 0 : d->bound.output_count; }

static vn_status output_at(const vn_dispatch *d, int64_t index, vn_buffer **out) {
    if (index < 0 || (uint64_t)index >= d->bound.output_count)
        return vn_fail(VN_ERROR_OUTPUT_INDEX,
                       "output index %lld is out of range for a dispatch with %zu output(s). Fix: pass an index "
                       "from 0 to %lld.",
                       (long long)index, d->bound.output_count, (long long)d->bound.output_count - 1);
    *out = d->bound.outputs[index];
    return VN_OK;
}

vn_status vn_dispatch_output_len(const vn_dispatch *d, int64_t index, uint64_t *out) {
    if (d == NULL || out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_dispatch_output_len: NULL argument. Fix: pass a dispatch and a result.");
    vn_buffer *b = NULL;
    vn_status st = output_at(d, index, &b);
    if (st == VN_OK) *out = b->byte_len;
    return st;
}

/* The output buffer, once the checks every read makes have passed. */
static vn_status readable_output(vn_dispatch *d, int64_t index, vn_buffer **out) {
    if (d == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "dispatch is NULL. Fix: pass a live PrerecordedDispatch.");
    vn_status st = output_at(d, index, out);
    if (st != VN_OK) return st;
    st = vn_device_check((*out)->device, "reading an output");
    if (st == VN_OK) st = vn_buffers_submittable(out, 1, "reading an output");
    if (st != VN_OK) return st;
    /* Reading before replay would return whatever the buffer held: refuse instead. */
    if (atomic_load(&d->state) != DISPATCH_SUBMITTED)
        return vn_fail(VN_ERROR_NOT_SUBMITTED,
                       "output %lld was read before the dispatch was replayed, so it holds no result yet. Fix: call "
                       "replay() first.", (long long)index);
    return VN_OK;
}

vn_status vn_dispatch_read_output_async(vn_dispatch *d, int64_t index, vn_pending_read **out) {
    vn_buffer *b = NULL;
    vn_status st = readable_output(d, index, &b);
    if (st != VN_OK) return st;
    /* The copy is queued after this dispatch's submission, so it sees its results. */
    return vn_buffer_read_async(b, out);
}

vn_status vn_dispatch_read_output(vn_dispatch *d, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                                  vn_pending_read **pending) {
    if (written != NULL) *written = 0;
    vn_buffer *b = NULL;
    vn_status st = readable_output(d, index, &b);
    if (st != VN_OK) return st;
    if (capacity < b->byte_len)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "the destination holds %llu bytes, but output %lld has %llu. Fix: pass a writable buffer of at "
                       "least %llu bytes.",
                       (unsigned long long)capacity, (long long)index, (unsigned long long)b->byte_len,
                       (unsigned long long)b->byte_len);
    if (b->byte_len > 0) {
        if (dst == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "destination is NULL. Fix: pass a writable buffer.");
        /* The readback's copy is queued after this dispatch's submission, so its
         * completion implies the dispatch's. */
        st = vn_readback(b->device, b->buffer, b->byte_len, dst, pending);
        if (st != VN_OK) return st;
    }
    if (written != NULL) *written = b->byte_len;
    return VN_OK;
}

void vn_dispatch_release(vn_dispatch *d) {
    if (d == NULL || vn_inherited(d->bound.pipeline->device)) return; /* fork() child: forget it */
    if (atomic_fetch_sub(&d->refs, 1) != 1) return;
    if (d->command_buffer != NULL) wgpu.CommandBufferRelease(d->command_buffer);
    vn_bound_release(&d->bound);
    free(d);
    vn_live_add(VN_LIVE_DISPATCH, -1);
}
