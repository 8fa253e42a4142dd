/* encode.c - the one road from resolved work to the queue. An encoder opens inside an
 * error scope (vn_encode_begin) and finishes only into a clean command buffer
 * (vn_encode_finish: wgpu-native aborts the process on submitting an invalid one),
 * which is submitted under the life lock (vn_submit_locked, vn_submit_guarded). And
 * what goes into the encoder: a bound dispatch's clears and the dispatch itself,
 * inside one compute pass or, where a clear must be a clear_buffer (a transfer command,
 * which ends the pass), around it, with the pass's timestamp writes. What the bound
 * dispatch binds and clears is decided before, by bind.c and fill.c; this file only
 * writes it, and is on every replay's hot path. And the pass walk: where the passes of
 * a recording's, sequence's or batch's encode begin and end, one walk that both counts
 * them (for timing) and encodes them. */
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
    vn_status st = vn_life_lock_read_guarded(dev, what, guard);
    if (st != VN_OK) {
        wgpu.CommandBufferRelease(cb);
        return st;
    }
    vn_submit_locked(dev, cb);
    vn_life_unlock_read(dev);
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

/* ---- the pass walk (layer_work.h) -------------------------------------------- */

/* One walk over what a replay or batch encodes decides where its compute passes begin
 * and end, and serves both ends of a timed encode: walked without an encoder (`encode`
 * false) it only counts the passes it would begin, which sizes the timestamp query set;
 * walked with one it encodes them. A count that drifted from the encode would leave
 * vn_begin_pass writing no timestamps for the passes past it, so there is no second
 * walk to drift. The `encode` argument is a constant at each call (*_passes and
 * *_encode below), so each is compiled as its own specialised walk: the hot path pays
 * no test for it. */
typedef struct pass_walk {
    WGPUCommandEncoder enc;      /* NULL when counting */
    WGPUComputePassEncoder pass; /* the open pass, when encoding */
    bool open;                   /* a pass is open, when counting (encoding: pass != NULL) */
    bool splits;                 /* vn_timing_splits(t), read once */
    uint64_t begun;              /* passes begun so far */
    /* Apart from the walk, which the compiler then keeps in registers: its address
     * goes to encode.c's calls. */
    vn_pass_state *state;
    vn_timing *t;
} pass_walk;

static VN_ALWAYS_INLINE void walk_begin(pass_walk *w, vn_timing *t, WGPUCommandEncoder enc, vn_pass_state *state) {
    w->enc = enc;
    w->pass = NULL;
    w->open = false;
    w->splits = vn_timing_splits(t);
    w->begun = 0;
    w->state = state;
    w->t = t;
}

static VN_ALWAYS_INLINE bool walk_is_open(const pass_walk *w, const bool encode) { return encode ? w->pass != NULL : w->open; }

static VN_ALWAYS_INLINE void walk_open(pass_walk *w, const bool encode) {
    if (walk_is_open(w, encode)) return;
    w->begun++;
    if (encode) {
        w->pass = vn_begin_pass(w->enc, w->t);
        memset(w->state, 0, sizeof *w->state);
    } else {
        w->open = true;
    }
}

/* Commands outside a compute pass (copies, clear_buffer clears) end the open one. */
static VN_ALWAYS_INLINE void walk_close(pass_walk *w, const bool encode) {
    if (!walk_is_open(w, encode)) return;
    if (encode) {
        wgpu.ComputePassEncoderEnd(w->pass);
        wgpu.ComputePassEncoderRelease(w->pass);
        w->pass = NULL;
    } else {
        w->open = false;
    }
}

/* A dispatch: its clear_buffer clears before the pass, its fills inside it, then the
 * dispatch; per-dispatch timing gives it a pass of its own. Consecutive dispatches
 * with nothing outside a pass between them share one. */
static VN_ALWAYS_INLINE void walk_dispatch(pass_walk *w, const vn_bound *b, const bool encode) {
    /* A step added with clear_outputs=False (a graph's every step) has no clears: it
     * skips the clears' walks, calls into encode.c, on this hot path. */
    if (b->clear_count > 0) {
        if (vn_bound_clears_outside(b, w->t)) {
            walk_close(w, encode);
            if (encode) vn_bound_encode_clears(b, w->enc, w->t);
        }
        walk_open(w, encode);
        if (encode) vn_bound_fill_in_pass(b, w->pass, w->state, w->t);
    } else {
        walk_open(w, encode);
    }
    if (encode) vn_bound_dispatch_in_pass(b, w->pass, w->state);
    if (w->splits) walk_close(w, encode);
}

static VN_ALWAYS_INLINE void walk_step(pass_walk *w, const vn_step *st, const bool encode) {
    /* Dispatches first: tested first, on the hot path. */
    if (st->kind == VN_STEP_DISPATCH) {
        walk_dispatch(w, &st->bound, encode);
    } else if (st->kind == VN_STEP_COPY) {
        walk_close(w, encode);
        if (encode)
            wgpu.CommandEncoderCopyBufferToBuffer(w->enc, st->src->buffer, st->src_offset, st->dst->buffer,
                                                  st->dst_offset, st->nbytes);
    } else if (vn_clear_outside(&st->clear, w->t)) {
        walk_close(w, encode);
        if (encode) vn_clear_encode_outside(&st->clear, w->enc);
    } else {
        walk_open(w, encode);
        if (encode) vn_clear_fill_in_pass(&st->clear, w->pass, w->state);
    }
}

static VN_ALWAYS_INLINE void walk_recording(pass_walk *w, const vn_recording *r, uint32_t n, const bool encode) {
    for (uint32_t i = 0; i < n; i++) walk_dispatch(w, &r->bound, encode);
    walk_close(w, encode);
}

static VN_ALWAYS_INLINE void walk_steps(pass_walk *w, const vn_sequence *s, size_t first, size_t end, const bool encode) {
    /* Each launch's run of steps as one pointer loop: one compare a step. */
    const size_t count = s->count;
    /* An empty sequence (one in a batch: Device.submit takes it) walks no step. */
    size_t i = count > 0 ? first % count : 0;
    for (size_t g = first; count > 0 && g < end; i = 0) {
        size_t run = count - i < end - g ? count - i : end - g;
        for (const vn_step *st = s->steps + i, *stop = st + run; st < stop; st++) walk_step(w, st, encode);
        g += run;
    }
    walk_close(w, encode);
}

/* What one walk covers: n launches of a recording, steps [first, end) of a sequence, or
 * a batch's `count` items. */
typedef struct walk_what {
    const vn_recording *recording;
    const vn_sequence *sequence;
    const vn_work *work;
    size_t first, end; /* the recording's launches [0, end); a batch's items [0, end) */
} walk_what;

static VN_ALWAYS_INLINE void walk_batch(pass_walk *w, const vn_work *work, size_t count, const bool encode) {
    for (size_t i = 0; i < count; i++) {
        if (work[i].recording != NULL) walk_recording(w, work[i].recording, 1, encode);
        else walk_steps(w, work[i].sequence, 0, work[i].sequence->count, encode);
    }
}

static VN_ALWAYS_INLINE void walk(pass_walk *w, const walk_what *x, const bool encode) {
    if (x->recording != NULL) walk_recording(w, x->recording, (uint32_t)x->end, encode);
    else if (x->sequence != NULL) walk_steps(w, x->sequence, x->first, x->end, encode);
    else walk_batch(w, x->work, x->end, encode);
}

/* The walk counting (no encoder; the passes, clamped to a uint32_t), and encoding. */
static uint32_t count_passes(const walk_what *x, vn_timing *t) {
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, NULL, &state);
    walk(&w, x, false);
    return w.begun > UINT32_MAX ? UINT32_MAX : (uint32_t)w.begun;
}

static void encode_passes(const walk_what *x, WGPUCommandEncoder enc, vn_timing *t) {
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, enc, &state);
    walk(&w, x, true);
}

uint32_t vn_recording_passes(const vn_recording *r, uint32_t n, vn_timing *t) {
    return count_passes(&(walk_what){.recording = r, .end = n}, t);
}

void vn_recording_encode(const vn_recording *r, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    encode_passes(&(walk_what){.recording = r, .end = n}, enc, t);
}

uint32_t vn_sequence_passes(const vn_sequence *s, uint32_t n, vn_timing *t) {
    return count_passes(&(walk_what){.sequence = s, .end = (size_t)n * s->count}, t);
}

void vn_steps_encode(const vn_sequence *s, WGPUCommandEncoder enc, size_t first, size_t end, vn_timing *t) {
    encode_passes(&(walk_what){.sequence = s, .first = first, .end = end}, enc, t);
}

uint32_t vn_batch_passes(const vn_work *work, size_t count, vn_timing *t) {
    return count_passes(&(walk_what){.work = work, .end = count}, t);
}

void vn_batch_encode(const vn_work *work, size_t count, WGPUCommandEncoder enc, vn_timing *t) {
    encode_passes(&(walk_what){.work = work, .end = count}, enc, t);
}
