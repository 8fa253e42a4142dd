/* encode.c - encoding resolved work into a command buffer: a bound dispatch's clears
 * and the dispatch itself, inside one compute pass or, where a clear must be a
 * clear_buffer (a transfer command, which ends the pass), around it. What the bound
 * dispatch binds and clears is decided before, by bind.c and fill.c; this file only
 * writes it into the encoder, and is on every replay's hot path. */
#include <string.h>

#include "work.h"

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
