/* encode.c - the one road from resolved work to the queue. An encoder opens inside an
 * error scope (vn_encode_begin) and finishes only into a clean command buffer
 * (vn_encode_finish: wgpu-native aborts the process on submitting an invalid one),
 * which is submitted under the life lock (vn_submit_locked, vn_submit_guarded). And
 * what goes into the encoder: a bound dispatch's clears and the dispatch itself,
 * inside one compute pass or, where a clear must be a clear_buffer (a transfer command,
 * which ends the pass), around it, with the pass's timestamp writes. What the bound
 * dispatch binds and clears is decided before, by bind.c and fill.c; this file only
 * writes it, and is on every replay's hot path. */
#include <string.h>

#include "layer_work.h"

WGPUCommandEncoder vn_encode_begin(vn_device *dev, const char *label) {
    vn_scope_begin(dev);
    if (label == NULL) return wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    WGPUCommandEncoderDescriptor ed = WGPU_COMMAND_ENCODER_DESCRIPTOR_INIT;
    ed.label = vn_sv(label);
    return wgpu.DeviceCreateCommandEncoder(dev->device, &ed);
}

vn_status vn_encode_finish(vn_device *dev, WGPUCommandEncoder enc, const char *what, const char *fix,
                           WGPUCommandBuffer *cb) {
    *cb = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    vn_status st = vn_scope_end(dev, what, VN_ERROR_VALIDATION, fix);
    if (st != VN_OK && *cb != NULL) {
        wgpu.CommandBufferRelease(*cb);
        *cb = NULL;
    }
    return st;
}

WGPUSubmissionIndex vn_submit_locked(vn_device *dev, WGPUCommandBuffer cb) {
    WGPUSubmissionIndex index = wgpu.QueueSubmitForIndex(dev->queue, 1, &cb);
    wgpu.CommandBufferRelease(cb);
    return index;
}

vn_status vn_submit_guarded(vn_device *dev, WGPUCommandBuffer cb, const char *what, const vn_submit_guard *guard) {
    vn_status st = vn_submit_begin_guarded(dev, what, guard);
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        return st;
    }
    vn_submit_locked(dev, cb);
    vn_submit_end(dev);
    return VN_OK;
}

/* The pass's timestamp writes: TOTAL times the whole encode (the first pass's
 * beginning, the last pass's end), PER_DISPATCH each of the first `passes` passes. */
WGPUComputePassEncoder vn_begin_pass(WGPUCommandEncoder encoder, vn_timing *t) {
    if (t == NULL || t->mode == VN_TIMING_NONE) return wgpu.CommandEncoderBeginComputePass(encoder, NULL);
    uint32_t i = t->next_pass++;
    WGPUPassTimestampWrites writes = WGPU_PASS_TIMESTAMP_WRITES_INIT;
    writes.querySet = t->query_set;
    if (t->mode == VN_TIMING_TOTAL) {
        writes.beginningOfPassWriteIndex = i == 0 ? 0 : WGPU_QUERY_SET_INDEX_UNDEFINED;
        writes.endOfPassWriteIndex = i + 1 == t->passes ? 1 : WGPU_QUERY_SET_INDEX_UNDEFINED;
    } else if (i < t->passes) {
        writes.beginningOfPassWriteIndex = 2 * i;
        writes.endOfPassWriteIndex = 2 * i + 1;
    } else {
        writes.beginningOfPassWriteIndex = writes.endOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED;
    }
    if (writes.beginningOfPassWriteIndex == WGPU_QUERY_SET_INDEX_UNDEFINED &&
        writes.endOfPassWriteIndex == WGPU_QUERY_SET_INDEX_UNDEFINED)
        return wgpu.CommandEncoderBeginComputePass(encoder, NULL);
    WGPUComputePassDescriptor desc = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
    desc.timestampWrites = &writes;
    return wgpu.CommandEncoderBeginComputePass(encoder, &desc);
}

void vn_clear_encode_outside(const vn_clear *clear, WGPUCommandEncoder encoder) {
    wgpu.CommandEncoderClearBuffer(encoder, clear->view.buffer->buffer, clear->view.offset, vn_pad4(clear->view.size));
}

void vn_clear_fill_in_pass(const vn_clear *clear, WGPUComputePassEncoder pass, vn_pass_state *state) {
    if (state->pipeline != clear->pipeline) {
        wgpu.ComputePassEncoderSetPipeline(pass, clear->pipeline);
        state->pipeline = clear->pipeline;
        memset(state->groups, 0, sizeof state->groups);
    }
    if (state->groups[0] != clear->group) {
        wgpu.ComputePassEncoderSetBindGroup(pass, 0, clear->group, 0, NULL);
        state->groups[0] = clear->group;
    }
    wgpu.ComputePassEncoderDispatchWorkgroups(pass, clear->workgroups, 1, 1);
}

bool vn_bound_clears_outside(const vn_bound *bound, const vn_timing *timing) {
    for (size_t i = 0; i < bound->clear_count; i++)
        if (vn_clear_outside(&bound->clears[i], timing)) return true;
    return false;
}

void vn_bound_encode_clears(const vn_bound *bound, WGPUCommandEncoder encoder, const vn_timing *timing) {
    for (size_t i = 0; i < bound->clear_count; i++)
        if (vn_clear_outside(&bound->clears[i], timing)) vn_clear_encode_outside(&bound->clears[i], encoder);
}

void vn_bound_fill_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state,
                           const vn_timing *timing) {
    for (size_t i = 0; i < bound->clear_count; i++)
        if (!vn_clear_outside(&bound->clears[i], timing)) vn_clear_fill_in_pass(&bound->clears[i], pass, state);
}

void vn_bound_dispatch_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state) {
    const vn_pipeline *p = bound->pipeline;
    /* State is set only when it changes: a sequence of dispatches of one pipeline
     * over the same buffers costs one SetPipeline and one SetBindGroup per group. */
    if (state->pipeline != p->pipeline) {
        wgpu.ComputePassEncoderSetPipeline(pass, p->pipeline);
        state->pipeline = p->pipeline;
        memset(state->groups, 0, sizeof state->groups);
    }
    for (uint32_t g = 0; g < bound->group_count; g++) {
        if (g < 8 && state->groups[g] == bound->groups[g]) continue;
        wgpu.ComputePassEncoderSetBindGroup(pass, g, bound->groups[g], 0, NULL);
        if (g < 8) state->groups[g] = bound->groups[g];
    }
    if (bound->immediate_len > 0) wgpu.ComputePassEncoderSetImmediates(pass, 0, bound->immediates, bound->immediate_len);
    if (bound->indirect != NULL)
        wgpu.ComputePassEncoderDispatchWorkgroupsIndirect(pass, bound->indirect->buffer, bound->indirect_offset);
    else if (bound->x && bound->y && bound->z)
        wgpu.ComputePassEncoderDispatchWorkgroups(pass, bound->x, bound->y, bound->z);
}

void vn_bound_encode(const vn_bound *bound, WGPUCommandEncoder encoder, vn_timing *timing) {
    vn_bound_encode_clears(bound, encoder, timing);
    WGPUComputePassEncoder pass = vn_begin_pass(encoder, timing);
    vn_pass_state state;
    memset(&state, 0, sizeof state);
    vn_bound_fill_in_pass(bound, pass, &state, timing);
    vn_bound_dispatch_in_pass(bound, pass, &state);
    wgpu.ComputePassEncoderEnd(pass);
    wgpu.ComputePassEncoderRelease(pass);
}
