/* replay.c - replayable recordings, dispatch sequences and batched submits.
 *
 * WebGPU command buffers are single-submit and it has no compute bundles, so the
 * only honest replay is to re-encode from pre-built state. Everything a replay
 * needs (pipeline, bind groups, dispatch size, clears) is resolved and validated
 * once; a replay is then encoder calls and one queue submit, looped in C. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct vn_recording {
    atomic_long refs;
    vn_bound bound;
    bool clears;
};

enum step_kind { STEP_DISPATCH, STEP_COPY, STEP_CLEAR };

typedef struct vn_step {
    enum step_kind kind;
    vn_bound bound;      /* STEP_DISPATCH */
    bool clear_outputs;  /* STEP_DISPATCH */
    vn_buffer *src, *dst; /* STEP_COPY (src, dst), STEP_CLEAR (dst); referenced */
    uint64_t nbytes, src_offset, dst_offset;
} vn_step;

struct vn_sequence {
    atomic_long refs;
    vn_device *device;
    vn_mutex lock; /* add/copy/clear against a replay on another thread */
    vn_step *steps;
    size_t count, capacity;
};

/* ---- encoding ----------------------------------------------------------------- */

/* Per-dispatch timing gives every dispatch a pass of its own. */
static bool split_passes(const vn_timing *t) { return t != NULL && t->mode == VN_TIMING_PER_DISPATCH; }

static uint32_t recording_passes(const vn_recording *r, uint32_t n, const vn_timing *t) {
    return r->clears || split_passes(t) ? n : 1;
}

static void encode_recording(const vn_recording *r, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    if (!r->clears && !split_passes(t)) {
        /* Nothing to clear: all n launches share one pass; state is set once. */
        WGPUComputePassEncoder pass = vn_begin_pass(enc, t);
        vn_pass_state state;
        memset(&state, 0, sizeof state);
        for (uint32_t i = 0; i < n; i++) vn_bound_dispatch_in_pass(&r->bound, pass, &state);
        wgpu.ComputePassEncoderEnd(pass);
        wgpu.ComputePassEncoderRelease(pass);
        return;
    }
    for (uint32_t i = 0; i < n; i++) vn_bound_encode(&r->bound, enc, t);
}

static void end_pass(WGPUComputePassEncoder *pass) {
    if (*pass == NULL) return;
    wgpu.ComputePassEncoderEnd(*pass);
    wgpu.ComputePassEncoderRelease(*pass);
    *pass = NULL;
}

/* The passes encode_sequence opens: the same walk without encoding, so a timed
 * replay can size its query set before it starts. */
static uint32_t sequence_passes(const vn_sequence *s, uint32_t n, const vn_timing *t) {
    uint64_t passes = 0;
    bool open = false;
    for (uint32_t rep = 0; rep < n; rep++) {
        for (size_t i = 0; i < s->count; i++) {
            const vn_step *st = &s->steps[i];
            if (st->kind != STEP_DISPATCH || (st->clear_outputs && vn_bound_clears(&st->bound))) open = false;
            if (st->kind != STEP_DISPATCH) continue;
            if (!open) passes++;
            open = !split_passes(t);
        }
    }
    return passes > UINT32_MAX ? UINT32_MAX : (uint32_t)passes;
}

static void encode_sequence(const vn_sequence *s, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    WGPUComputePassEncoder pass = NULL;
    vn_pass_state state;
    for (uint32_t rep = 0; rep < n; rep++) {
        for (size_t i = 0; i < s->count; i++) {
            const vn_step *st = &s->steps[i];
            switch (st->kind) {
            case STEP_DISPATCH:
                /* Clears are encoder commands: they end the pass before them. */
                if (st->clear_outputs && vn_bound_clears(&st->bound)) {
                    end_pass(&pass);
                    vn_bound_encode_clears(&st->bound, enc);
                }
                if (pass == NULL) {
                    pass = vn_begin_pass(enc, t);
                    memset(&state, 0, sizeof state);
                }
                vn_bound_dispatch_in_pass(&st->bound, pass, &state);
                if (split_passes(t)) end_pass(&pass);
                break;
            case STEP_COPY:
                end_pass(&pass);
                wgpu.CommandEncoderCopyBufferToBuffer(enc, st->src->buffer, st->src_offset, st->dst->buffer,
                                                      st->dst_offset, st->nbytes);
                break;
            case STEP_CLEAR:
                end_pass(&pass);
                wgpu.CommandEncoderClearBuffer(enc, st->dst->buffer, 0, st->dst->allocation_len);
                break;
            }
        }
    }
    end_pass(&pass);
}

/* What one encode covers: how many passes it opens (for timing) and how to encode it. */
typedef struct encoder_job {
    uint32_t (*passes)(const void *what, uint32_t n, const vn_timing *t);
    void (*encode)(const void *what, WGPUCommandEncoder enc, uint32_t n, vn_timing *t);
    /* VN_OK when no buffer it uses is mapped or destroyed by the binding it was
     * adopted from (submitting one would abort the process). */
    vn_status (*submittable)(const void *what);
} encoder_job;

/* Encode inside error scopes, then submit only a cleanly finished command buffer:
 * wgpu-native aborts the process on submitting an invalid one. */
static vn_status encode_and_submit(vn_device *dev, const encoder_job *job, const void *what, uint32_t n,
                                   vn_timing_mode mode, const char *label, vn_submission **out) {
    vn_status st = vn_device_check(dev, label);
    if (st == VN_OK) st = job->submittable(what);
    if (st == VN_OK) st = vn_submit_ready(dev);
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
    vn_scope_begin(dev);
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    job->encode(what, enc, n, &timing);
    vn_timing_resolve(&timing, enc);
    WGPUCommandBuffer cb = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    st = vn_scope_end(dev, label, VN_ERROR_VALIDATION,
                      "check the buffers against the shaders' declared types, and copy ranges and alignment.");
    if (st != VN_OK) {
        if (cb != NULL) wgpu.CommandBufferRelease(cb);
        vn_timing_release(&timing);
        return st;
    }
    return vn_submit_tracked(dev, cb, label, &timing, out);
}

static uint32_t recording_passes_cb(const void *r, uint32_t n, const vn_timing *t) { return recording_passes(r, n, t); }
static void encode_recording_cb(const void *r, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    encode_recording(r, enc, n, t);
}
static uint32_t sequence_passes_cb(const void *s, uint32_t n, const vn_timing *t) { return sequence_passes(s, n, t); }
static void encode_sequence_cb(const void *s, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    encode_sequence(s, enc, n, t);
}
static vn_status bound_submittable(const vn_bound *b, const char *what) {
    return b->adopted ? vn_buffers_submittable(b->buffers, b->buffer_count, what) : VN_OK;
}
static vn_status recording_submittable(const void *r) {
    return bound_submittable(&((const vn_recording *)r)->bound, "Recording.replay()");
}
static vn_status sequence_submittable(const void *what) {
    const vn_sequence *s = what;
    vn_status st = VN_OK;
    for (size_t i = 0; i < s->count && st == VN_OK; i++) {
        const vn_step *step = &s->steps[i];
        if (step->kind == STEP_DISPATCH) {
            st = bound_submittable(&step->bound, "Sequence.replay()");
        } else {
            vn_buffer *const ends[2] = {step->src, step->dst};
            st = vn_buffers_submittable(step->src != NULL ? ends : ends + 1, step->src != NULL ? 2 : 1,
                                        "Sequence.replay()");
        }
    }
    return st;
}
static const encoder_job recording_job = {recording_passes_cb, encode_recording_cb, recording_submittable};
static const encoder_job sequence_job = {sequence_passes_cb, encode_sequence_cb, sequence_submittable};

/* ---- recordings ------------------------------------------------------------------ */

vn_status vn_recording_create(vn_pipeline *pipeline, vn_buffer *const *inputs, size_t input_count,
                              vn_buffer *const *outputs, size_t output_count, vn_buffer *params, uint32_t x,
                              uint32_t y, uint32_t z, vn_recording **out) {
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_recording_create: out is NULL. Fix: pass a result pointer.");
    *out = NULL;
    vn_recording *r = calloc(1, sizeof *r);
    if (r == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a recording. Fix: free host memory.");
    /* No trial encode here: wgpu-native 29 leaks the command buffer of an encode that
     * is finished but never submitted (about 90 KB each). Every replay encodes inside
     * error scopes and submits only what encoded cleanly, so an error the handle
     * checks cannot see (a shader type larger than its buffer) surfaces at the first
     * replay as a ValidationError, with nothing submitted. */
    vn_status st = vn_bound_resolve(pipeline, inputs, input_count, outputs, output_count, params, x, y, z, &r->bound);
    if (st == VN_OK) r->clears = vn_bound_clears(&r->bound);
    if (st != VN_OK) {
        free(r);
        return st;
    }
    atomic_init(&r->refs, 1);
    vn_live_add(VN_LIVE_RECORDING, 1);
    *out = r;
    return VN_OK;
}

/* n launches of `steps` steps each in one command buffer: wgpu keeps encoder memory for
 * every step until the GPU has run it (about 17 KiB a launch with clears on lavapipe),
 * so one submit holds at most VN_MAX_LAUNCHES_PER_SUBMIT steps; one launch of a longer
 * sequence is allowed (its size is the sequence the caller built). */
static vn_status check_count(uint32_t n, size_t steps, const char *what) {
    if (n == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s.replay(n=0): nothing to launch. Fix: pass n >= 1.", what);
    if (n > 1 && (uint64_t)n * steps > VN_MAX_LAUNCHES_PER_SUBMIT)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s.replay(n=%u) would encode %llu steps into one command buffer, above the %d one submit "
                       "holds (each keeps encoder memory until the GPU has run it). Fix: pass n <= %llu per call; "
                       "without timing, vn's Python replay(n) splits a larger n into submits of that size itself.",
                       what, n, (unsigned long long)n * steps, VN_MAX_LAUNCHES_PER_SUBMIT,
                       (unsigned long long)(steps ? VN_MAX_LAUNCHES_PER_SUBMIT / steps : 1));
    return VN_OK;
}

vn_status vn_recording_replay(vn_recording *r, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    if (r == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_recording_replay: NULL argument. Fix: pass a recording and a result.");
    *out = NULL;
    vn_status st = check_count(n, 1, "Recording");
    if (st != VN_OK) return st;
    return encode_and_submit(r->bound.pipeline->device, &recording_job, r, n, timing, "replaying a recording", out);
}

size_t vn_recording_output_count(const vn_recording *r) { return r == NULL ? 0 : r->bound.output_count; }

vn_status vn_recording_output(const vn_recording *r, int64_t index, vn_buffer **out) {
    if (r == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_recording_output: NULL argument. Fix: pass a recording and a result.");
    if (index < 0 || (uint64_t)index >= r->bound.output_count)
        return vn_fail(VN_ERROR_OUTPUT_INDEX,
                       "output index %lld is out of range for a recording with %zu output(s). Fix: pass an index "
                       "from 0 to %lld.",
                       (long long)index, r->bound.output_count, (long long)r->bound.output_count - 1);
    vn_buffer *b = r->bound.outputs[index];
    vn_buffer_retain(b);
    *out = b;
    return VN_OK;
}

void vn_recording_release(vn_recording *r) {
    if (r == NULL || vn_inherited(r->bound.pipeline->device)) return; /* fork() child: forget it */
    if (atomic_fetch_sub(&r->refs, 1) != 1) return;
    vn_bound_release(&r->bound);
    free(r);
    vn_live_add(VN_LIVE_RECORDING, -1);
}

/* ---- sequences ------------------------------------------------------------------- */

vn_status vn_sequence_create(vn_device *device, vn_sequence **out) {
    vn_status st = vn_device_check(device, "creating a sequence");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_sequence_create: out is NULL. Fix: pass a result pointer.");
    vn_sequence *s = calloc(1, sizeof *s);
    if (s == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a sequence. Fix: free host memory.");
    atomic_init(&s->refs, 1);
    vn_mutex_init(&s->lock);
    vn_device_retain(device);
    s->device = device;
    vn_live_add(VN_LIVE_SEQUENCE, 1);
    *out = s;
    return VN_OK;
}

static vn_status push_step(vn_sequence *s, const vn_step *step) {
    if (s->count == s->capacity) {
        size_t cap = s->capacity ? s->capacity * 2 : 16;
        vn_step *grown = realloc(s->steps, cap * sizeof *grown);
        if (grown == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not grow the sequence to %zu steps. Fix: free host memory.", cap);
        s->steps = grown;
        s->capacity = cap;
    }
    s->steps[s->count++] = *step;
    return VN_OK;
}

vn_status vn_sequence_add(vn_sequence *s, vn_pipeline *pipeline, vn_buffer *const *inputs, size_t input_count,
                          vn_buffer *const *outputs, size_t output_count, vn_buffer *params, uint32_t x, uint32_t y,
                          uint32_t z, int clear_outputs) {
    if (s == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "sequence is NULL. Fix: pass a live Sequence.");
    if (pipeline != NULL && pipeline->device != s->device)
        return vn_fail(VN_ERROR_BINDING, "the pipeline belongs to another device than the sequence. Fix: compile it on "
                       "the sequence's device.");
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = STEP_DISPATCH;
    step.clear_outputs = clear_outputs != 0;
    vn_status st = vn_bound_resolve(pipeline, inputs, input_count, outputs, output_count, params, x, y, z, &step.bound);
    if (st != VN_OK) return st;
    vn_mutex_lock(&s->lock);
    st = push_step(s, &step);
    vn_mutex_unlock(&s->lock);
    if (st != VN_OK) vn_bound_release(&step.bound);
    return st;
}

static vn_status check_sequence_buffer(const vn_sequence *s, const vn_buffer *b, const char *role, uint64_t need) {
    vn_status st = vn_buffer_check(b, role);
    if (st != VN_OK) return st;
    if (b->device != s->device)
        return vn_fail(VN_ERROR_BINDING, "%s (buffer %llu) belongs to another device than the sequence. Fix: create it on "
                       "the sequence's device.", role, (unsigned long long)b->identity);
    if ((b->usage & need) != need)
        return vn_fail(VN_ERROR_BINDING, "%s (buffer %llu) has usage 0x%llx without %s. Fix: create it with that usage, or "
                       "leave usage unset for the default.", role, (unsigned long long)b->identity,
                       (unsigned long long)b->usage, need == VN_USAGE_COPY_SRC ? "COPY_SRC" : "COPY_DST");
    return VN_OK;
}

vn_status vn_sequence_copy(vn_sequence *s, vn_buffer *src, vn_buffer *dst, uint64_t nbytes, uint64_t src_offset,
                           uint64_t dst_offset) {
    if (s == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "sequence is NULL. Fix: pass a live Sequence.");
    vn_status st = check_sequence_buffer(s, src, "copy source", VN_USAGE_COPY_SRC);
    if (st == VN_OK) st = check_sequence_buffer(s, dst, "copy destination", VN_USAGE_COPY_DST);
    if (st != VN_OK) return st;
    if (src_offset > src->allocation_len || dst_offset > dst->allocation_len)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copy offsets %llu (source of %llu bytes) and %llu (destination of %llu "
                       "bytes) must lie inside the buffers. Fix: pass smaller offsets.",
                       (unsigned long long)src_offset, (unsigned long long)src->allocation_len,
                       (unsigned long long)dst_offset, (unsigned long long)dst->allocation_len);
    if (nbytes == UINT64_MAX) {
        uint64_t a = src->allocation_len - src_offset, b = dst->allocation_len - dst_offset;
        nbytes = a < b ? a : b;
    }
    if (src_offset % 4 || dst_offset % 4 || nbytes % 4)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a GPU copy moves whole 4-byte words: nbytes %llu, src_offset %llu and "
                       "dst_offset %llu must be multiples of 4. Fix: align them to 4 bytes.",
                       (unsigned long long)nbytes, (unsigned long long)src_offset, (unsigned long long)dst_offset);
    if (nbytes > src->allocation_len - src_offset || nbytes > dst->allocation_len - dst_offset)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copying %llu bytes runs past the source (%llu bytes from offset %llu) "
                       "or the destination (%llu bytes from offset %llu). Fix: copy fewer bytes.",
                       (unsigned long long)nbytes, (unsigned long long)src->allocation_len, (unsigned long long)src_offset,
                       (unsigned long long)dst->allocation_len, (unsigned long long)dst_offset);
    if (src == dst)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a copy from buffer %llu to itself is not allowed by WebGPU. Fix: copy "
                       "through a second buffer.", (unsigned long long)src->identity);
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = STEP_COPY;
    step.src = src;
    step.dst = dst;
    step.nbytes = nbytes;
    step.src_offset = src_offset;
    step.dst_offset = dst_offset;
    vn_mutex_lock(&s->lock);
    st = push_step(s, &step);
    vn_mutex_unlock(&s->lock);
    if (st == VN_OK) {
        vn_buffer_retain(src);
        vn_buffer_retain(dst);
    }
    return st;
}

vn_status vn_sequence_clear(vn_sequence *s, vn_buffer *buffer) {
    if (s == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "sequence is NULL. Fix: pass a live Sequence.");
    vn_status st = check_sequence_buffer(s, buffer, "cleared buffer", VN_USAGE_COPY_DST);
    if (st != VN_OK) return st;
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = STEP_CLEAR;
    step.dst = buffer;
    vn_mutex_lock(&s->lock);
    st = push_step(s, &step);
    vn_mutex_unlock(&s->lock);
    if (st == VN_OK) vn_buffer_retain(buffer);
    return st;
}

size_t vn_sequence_length(const vn_sequence *s) { return s == NULL ? 0 : s->count; }

vn_status vn_sequence_replay(vn_sequence *s, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    if (s == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_sequence_replay: NULL argument. Fix: pass a sequence and a result.");
    *out = NULL;
    /* Before the lock: a fork() child may have inherited it held. */
    vn_status st = vn_device_check(s->device, "replaying a sequence");
    if (st != VN_OK) return st;
    vn_mutex_lock(&s->lock);
    if (s->count == 0) {
        vn_mutex_unlock(&s->lock);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "the sequence is empty. Fix: add dispatches, copies or clears first.");
    }
    st = check_count(n, s->count, "Sequence");
    if (st != VN_OK) {
        vn_mutex_unlock(&s->lock);
        return st;
    }
    st = encode_and_submit(s->device, &sequence_job, s, n, timing, "replaying a sequence", out);
    vn_mutex_unlock(&s->lock);
    return st;
}

void vn_sequence_release(vn_sequence *s) {
    if (s == NULL || vn_inherited(s->device)) return; /* fork() child: forget it */
    if (atomic_fetch_sub(&s->refs, 1) != 1) return;
    for (size_t i = 0; i < s->count; i++) {
        vn_step *st = &s->steps[i];
        if (st->kind == STEP_DISPATCH) vn_bound_release(&st->bound);
        if (st->src != NULL) vn_buffer_release(st->src);
        if (st->dst != NULL) vn_buffer_release(st->dst);
    }
    free(s->steps);
    vn_mutex_destroy(&s->lock);
    vn_device_unref(s->device);
    free(s);
    vn_live_add(VN_LIVE_SEQUENCE, -1);
}

/* ---- batched submits -------------------------------------------------------------- */

typedef struct batch {
    const vn_work *work;
    size_t count;
} batch;

static uint32_t batch_passes(const void *what, uint32_t n, const vn_timing *t) {
    const batch *b = what;
    (void)n;
    uint64_t passes = 0;
    for (size_t i = 0; i < b->count; i++)
        passes += b->work[i].recording != NULL ? recording_passes(b->work[i].recording, 1, t)
                                               : sequence_passes(b->work[i].sequence, 1, t);
    return passes > UINT32_MAX ? UINT32_MAX : (uint32_t)passes;
}

static void encode_batch(const void *what, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    const batch *b = what;
    (void)n;
    for (size_t i = 0; i < b->count; i++) {
        if (b->work[i].recording != NULL) encode_recording(b->work[i].recording, enc, 1, t);
        else encode_sequence(b->work[i].sequence, enc, 1, t);
    }
}

static vn_status batch_submittable(const void *what) {
    const batch *b = what;
    vn_status st = VN_OK;
    for (size_t i = 0; i < b->count && st == VN_OK; i++)
        st = b->work[i].recording != NULL ? recording_submittable(b->work[i].recording)
                                          : sequence_submittable(b->work[i].sequence);
    return st;
}

static const encoder_job batch_job = {batch_passes, encode_batch, batch_submittable};

/* True when work[i] is a sequence not listed earlier: a sequence submitted twice in
 * one batch is locked once (its mutex is not recursive). */
static bool first_mention(const vn_work *work, size_t i) {
    if (work[i].sequence == NULL) return false;
    for (size_t j = 0; j < i; j++)
        if (work[j].sequence == work[i].sequence) return false;
    return true;
}

vn_status vn_device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                           vn_submission **out) {
    vn_status st = vn_device_check(device, "device.submit");
    if (st != VN_OK) return st;
    if (out == NULL || (count > 0 && work == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_device_submit: NULL argument. Fix: pass the work and a result.");
    *out = NULL;
    if (count == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "device.submit([]): nothing to submit. Fix: pass recordings or sequences.");
    for (size_t i = 0; i < count; i++) {
        const vn_work *w = &work[i];
        if ((w->recording == NULL) == (w->sequence == NULL))
            return vn_fail(VN_ERROR_INVALID_ARGUMENT, "work item %zu must be exactly one recording or sequence. Fix: pass "
                           "vn.Recording or vn.Sequence objects.", i);
        vn_device *owner = w->recording ? w->recording->bound.pipeline->device : w->sequence->device;
        if (owner != device)
            return vn_fail(VN_ERROR_BINDING, "work item %zu belongs to another device. Fix: submit it on its own device.", i);
    }

    /* Sequences are locked for the encode so a concurrent add cannot move their steps. */
    for (size_t i = 0; i < count; i++)
        if (first_mention(work, i)) vn_mutex_lock(&work[i].sequence->lock);
    /* One item is what the caller built; several are bounded as one replay is. */
    uint64_t steps = 0;
    for (size_t i = 0; i < count; i++) steps += work[i].recording != NULL ? 1 : work[i].sequence->count;
    if (count > 1 && steps > VN_MAX_LAUNCHES_PER_SUBMIT) {
        st = vn_fail(VN_ERROR_INVALID_ARGUMENT,
                     "device.submit() of %zu items would encode %llu steps into one command buffer, above the %d "
                     "one submit holds (each keeps encoder memory until the GPU has run it). Fix: split the list "
                     "into submits of at most %d steps (a recording is one step, a sequence its length).",
                     count, (unsigned long long)steps, VN_MAX_LAUNCHES_PER_SUBMIT, VN_MAX_LAUNCHES_PER_SUBMIT);
    } else {
        batch b = {work, count};
        st = encode_and_submit(device, &batch_job, &b, 1, timing, "device.submit", out);
    }
    for (size_t i = count; i-- > 0;)
        if (first_mention(work, i)) vn_mutex_unlock(&work[i].sequence->lock);
    return st;
}
