/* replay.c - replayable recordings, dispatch sequences and batched submits.
 *
 * WebGPU command buffers are single-submit and it has no compute bundles, so the
 * only honest replay is to re-encode from pre-built state. Everything a replay
 * needs (pipeline, bind groups, dispatch size, clears) is resolved and validated
 * once; a replay is then encoder calls and one queue submit, looped in C. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

struct vn_recording {
    vn_object obj; /* VN_KIND_RECORDING */
    vn_bound bound;
};

enum step_kind { STEP_DISPATCH, STEP_COPY, STEP_CLEAR };

typedef struct vn_step {
    enum step_kind kind;
    vn_bound bound;      /* STEP_DISPATCH: its clears are none when added with keep_outputs */
    vn_buffer *src, *dst; /* STEP_COPY (src, dst), STEP_CLEAR (dst); referenced */
    /* STEP_COPY: nbytes from src_offset to dst_offset; STEP_CLEAR: nbytes from dst_offset */
    uint64_t nbytes, src_offset, dst_offset;
    vn_clear clear;       /* STEP_CLEAR: a fill in the pass, or clear_buffer */
} vn_step;

struct vn_sequence {
    vn_object obj; /* VN_KIND_SEQUENCE; obj.id orders its lock among others' (vn_device_submit) */
    vn_device *device;
    vn_mutex lock; /* add/copy/clear against a replay on another thread */
    vn_step *steps;
    size_t count, capacity;
    /* These steps have been encoded cleanly in one command buffer (a replay of them
     * succeeded): later replays may go in several submits (replay_in_submits). Any step
     * added clears it. Under lock. */
    bool encoded_whole;
    /* Every buffer the steps use, each once, in the order the steps first use it: what
     * each replay's submittable check walks (twice: before encoding and under the life
     * lock) instead of every step's every binding. NULL until a replay builds it (or when
     * building it ran out of memory: the check then walks the steps); any step added
     * drops it. Under lock. */
    vn_buffer **distinct;
    size_t distinct_count;
};

/* ---- encoding ----------------------------------------------------------------- */

/* One walk over what a replay or batch encodes decides where its compute passes begin
 * and end, and serves both ends of a timed encode: walked without an encoder (`encode`
 * false) it only counts the passes it would begin, which sizes the timestamp query set;
 * walked with one it encodes them. A count that drifted from the encode would leave
 * vn_begin_pass writing no timestamps for the passes past it, so there is no second
 * walk to drift. The `encode` argument is a constant at each call (count_* and
 * encode_* below), so each is compiled as its own specialised walk: the hot path pays
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
    if (st->kind == STEP_DISPATCH) {
        walk_dispatch(w, &st->bound, encode);
    } else if (st->kind == STEP_COPY) {
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

/* n launches of the recording: with nothing to clear outside a pass they share one
 * (each its fills and its dispatch); otherwise each is its clears, then its pass. */
static VN_ALWAYS_INLINE void walk_recording(pass_walk *w, const vn_recording *r, uint32_t n, const bool encode) {
    for (uint32_t i = 0; i < n; i++) walk_dispatch(w, &r->bound, encode);
    walk_close(w, encode);
}

/* Steps [first, end) of launches of the sequence, counted across launches (step i of
 * launch r is r * count + i). */
static VN_ALWAYS_INLINE void walk_steps(pass_walk *w, const vn_sequence *s, size_t first, size_t end, const bool encode) {
    /* Each launch's run of steps as one pointer loop: one compare a step. */
    const size_t count = s->count;
    size_t i = first % count;
    for (size_t g = first; g < end; i = 0) {
        size_t run = count - i < end - g ? count - i : end - g;
        for (const vn_step *st = s->steps + i, *stop = st + run; st < stop; st++) walk_step(w, st, encode);
        g += run;
    }
    walk_close(w, encode);
}

static uint32_t clamp_passes(uint64_t passes) { return passes > UINT32_MAX ? UINT32_MAX : (uint32_t)passes; }

static uint32_t recording_passes(const vn_recording *r, uint32_t n, vn_timing *t) {
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, NULL, &state);
    walk_recording(&w, r, n, false);
    return clamp_passes(w.begun);
}

static void encode_recording(const vn_recording *r, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, enc, &state);
    walk_recording(&w, r, n, true);
}

static uint32_t sequence_passes(const vn_sequence *s, uint32_t n, vn_timing *t) {
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, NULL, &state);
    walk_steps(&w, s, 0, (size_t)n * s->count, false);
    return clamp_passes(w.begun);
}

static void encode_steps(const vn_sequence *s, WGPUCommandEncoder enc, size_t first, size_t end, vn_timing *t) {
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, enc, &state);
    walk_steps(&w, s, first, end, true);
}

static void encode_sequence(const vn_sequence *s, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    encode_steps(s, enc, 0, (size_t)n * s->count, t);
}

/* What one encode covers: how many passes it begins (for timing: the same walk as its
 * encode, counting) and how to encode it. */
typedef struct encoder_job {
    uint32_t (*passes)(const void *what, uint32_t n, vn_timing *t);
    void (*encode)(const void *what, WGPUCommandEncoder enc, uint32_t n, vn_timing *t);
    /* VN_OK when no buffer it uses is mapped or destroyed by wgpu-py (submitting one
     * would abort the process); checked under the life lock, right before the submit. */
    vn_status (*submittable)(const void *what);
} encoder_job;

/* vn_encode_finish of a replay's or batch's encoder, labelled `label`. */
static vn_status finish_encoding(vn_device *dev, const char *label, WGPUCommandEncoder enc, WGPUCommandBuffer *cb) {
    return vn_encode_finish(dev, enc, label,
                            "check the buffers against the shaders' declared types, and copy ranges and alignment.", cb);
}

/* Encode inside error scopes, then submit only a cleanly finished command buffer. */
static vn_status encode_and_submit(vn_device *dev, const encoder_job *job, const void *what, uint32_t n,
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

static uint32_t recording_passes_cb(const void *r, uint32_t n, vn_timing *t) { return recording_passes(r, n, t); }
static void encode_recording_cb(const void *r, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    encode_recording(r, enc, n, t);
}
static uint32_t sequence_passes_cb(const void *s, uint32_t n, vn_timing *t) { return sequence_passes(s, n, t); }
static void encode_sequence_cb(const void *s, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    encode_sequence(s, enc, n, t);
}
static vn_status recording_submittable(const void *r) {
    return vn_bound_submittable(&((const vn_recording *)r)->bound, "Recording.replay()");
}
static vn_status sequence_submittable(const void *what) {
    const vn_sequence *s = what;
    if (s->distinct != NULL) return vn_buffers_submittable(s->distinct, s->distinct_count, "Sequence.replay()");
    vn_status st = VN_OK;
    for (size_t i = 0; i < s->count && st == VN_OK; i++) {
        const vn_step *step = &s->steps[i];
        if (step->kind == STEP_DISPATCH) {
            st = vn_bound_submittable(&step->bound, "Sequence.replay()");
        } else {
            vn_buffer *const ends[2] = {step->src, step->dst};
            st = vn_buffers_submittable(step->src != NULL ? ends : ends + 1, step->src != NULL ? 2 : 1,
                                        "Sequence.replay()");
        }
    }
    return st;
}
/* Where a buffer is first used among the steps' buffers (sequence_index_buffers). */
typedef struct buffer_use {
    vn_buffer *buffer;
    size_t at;
} buffer_use;

static int by_identity_then_use(const void *a, const void *b) {
    const buffer_use *x = a, *y = b;
    if (x->buffer->identity != y->buffer->identity) return x->buffer->identity < y->buffer->identity ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

static int by_use(const void *a, const void *b) {
    const buffer_use *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* s->distinct from the steps, unless it is there (the caller holds s->lock). Its order is
 * the order the steps first use each buffer, the order the walk over the steps checks
 * them in, so a refusal names the same buffer either way. Out of memory it stays NULL. */
static void sequence_index_buffers(vn_sequence *s) {
    if (s->distinct != NULL || s->count == 0) return;
    size_t uses = 0;
    for (size_t i = 0; i < s->count; i++) {
        const vn_step *st = &s->steps[i];
        uses += st->kind == STEP_DISPATCH ? st->bound.buffer_count + 1 : 2;
    }
    buffer_use *all = malloc(uses * sizeof *all);
    if (all == NULL) return;
    size_t n = 0;
    for (size_t i = 0; i < s->count; i++) {
        /* what sequence_submittable's walk checks, in its order */
        const vn_step *st = &s->steps[i];
        bool dispatch = st->kind == STEP_DISPATCH;
        size_t len = dispatch ? st->bound.buffer_count : 0;
        for (size_t j = 0; j < len; j++) {
            if (st->bound.buffers[j] == NULL) continue;
            all[n].buffer = st->bound.buffers[j];
            all[n].at = n;
            n++;
        }
        vn_buffer *const ends[2] = {dispatch ? st->bound.indirect : st->src, dispatch ? NULL : st->dst};
        for (int j = 0; j < 2; j++) {
            if (ends[j] == NULL) continue;
            all[n].buffer = ends[j];
            all[n].at = n;
            n++;
        }
    }
    qsort(all, n, sizeof *all, by_identity_then_use);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || all[kept - 1].buffer != all[i].buffer) all[kept++] = all[i];
    qsort(all, kept, sizeof *all, by_use);
    vn_buffer **distinct = malloc((kept ? kept : 1) * sizeof *distinct);
    if (distinct != NULL) {
        for (size_t i = 0; i < kept; i++) distinct[i] = all[i].buffer;
        s->distinct = distinct;
        s->distinct_count = kept;
    }
    free(all);
}

static const encoder_job recording_job = {recording_passes_cb, encode_recording_cb, recording_submittable};
static const encoder_job sequence_job = {sequence_passes_cb, encode_sequence_cb, sequence_submittable};

/* ---- recordings ------------------------------------------------------------------ */

static void recording_destroy(vn_object *object) {
    vn_recording *r = (vn_recording *)object;
    vn_bound_release(&r->bound);
    free(r);
    vn_live_add(VN_LIVE_RECORDING, -1);
}

static vn_status recording_create(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_recording **out) {
    if (out == NULL) return vn_null_out("vn_recording_create", "out");
    *out = NULL;
    vn_recording *r = calloc(1, sizeof *r);
    if (r == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a recording. Fix: free host memory.");
    /* No trial encode here: wgpu-native 29 leaks the command buffer of an encode that
     * is finished but never submitted (about 90 KB each). Every replay encodes inside
     * error scopes and submits only what encoded cleanly, so an error the handle
     * checks cannot see (a shader type larger than its buffer) surfaces at the first
     * replay as a ValidationError, with nothing submitted. */
    vn_status st = vn_bound_resolve(pipeline, args, &r->bound);
    if (st != VN_OK) {
        free(r);
        return st;
    }
    vn_object_init(&r->obj, VN_KIND_RECORDING, recording_destroy);
    vn_live_add(VN_LIVE_RECORDING, 1);
    *out = r;
    return VN_OK;
}

vn_status vn_recording_create(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_recording **out) {
    VN_CALL1_OUT(recording_create(pipeline, args, out), out, pipeline, VN_KIND_PIPELINE);
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
 * which waits between parts in slices), replay_in_submits and submit_in_parts (the C
 * loop below, submit_parts). */
typedef struct parts_rule {
    uint64_t first, most;
    bool grows;
} parts_rule;

/* Where the part that starts at `first`, of `size` steps by the rule, ends. */
static uint64_t part_end(const parts_rule *rule, uint64_t total, uint64_t first, uint64_t size) {
    uint64_t left = total - first;
    return left < 2 * size && left <= rule->most ? total : first + size;
}

static uint64_t next_part_size(const parts_rule *rule, uint64_t size) {
    return rule->grows && size <= rule->most / 2 ? 2 * size : rule->most < size ? rule->most : size;
}

/* replay(n) past one submit: parts of as many launches as one submit holds; a launch
 * longer than the bound is one part (its size is the sequence the caller built). */
static parts_rule launches_rule(size_t steps) {
    uint64_t fit = steps <= 1 ? VN_MAX_LAUNCHES_PER_SUBMIT
                   : steps >= VN_MAX_LAUNCHES_PER_SUBMIT ? 1
                                                         : VN_MAX_LAUNCHES_PER_SUBMIT / steps;
    parts_rule rule = {fit, fit, false};
    return rule;
}

uint32_t vn_replay_split(uint32_t n, size_t steps, vn_timing_mode timing) {
    if (timing != VN_TIMING_NONE || n == 0) return n; /* timed: one command buffer holds the queries */
    parts_rule rule = launches_rule(steps);
    return (uint32_t)part_end(&rule, n, 0, rule.first);
}

static vn_status recording_replay(vn_recording *r, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    if (out == NULL) return vn_null_out("vn_recording_replay", "out");
    *out = NULL;
    vn_status st = check_count(n, 1, "Recording");
    if (st != VN_OK) return st;
    char label[300];
    vn_format(label, sizeof label, "replaying a recording of pipeline `%s`", r->bound.pipeline->label);
    return encode_and_submit(r->bound.pipeline->device, &recording_job, r, n, timing, label, out);
}

vn_status vn_recording_replay(vn_recording *r, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    VN_CALL1_OUT(recording_replay(r, n, timing, out), out, r, VN_KIND_RECORDING);
}

size_t vn_recording_output_count(const vn_recording *r) {
    VN_GET(size_t, r->bound.output_count, 0, r, VN_KIND_RECORDING);
}

static vn_status output_at(const vn_recording *r, int64_t index, const vn_view **out) {
    return vn_bound_output(&r->bound, index, "recording", out);
}

static vn_status recording_output(const vn_recording *r, int64_t index, vn_view *out) {
    if (out == NULL) return vn_null_out("vn_recording_output", "out");
    const vn_view *v = NULL;
    vn_status st = output_at(r, index, &v);
    if (st != VN_OK) return st;
    *out = *v;
    vn_buffer_retain(out->buffer);
    return VN_OK;
}

vn_status vn_recording_output(const vn_recording *r, int64_t index, vn_view *out) {
    VN_CALL1_OUT(recording_output(r, index, out), out != NULL ? &out->buffer : NULL, r, VN_KIND_RECORDING);
}

static vn_status recording_output_len(const vn_recording *r, int64_t index, uint64_t *out) {
    if (out == NULL) return vn_null_out("vn_recording_output_len", "out");
    const vn_view *v = NULL;
    vn_status st = output_at(r, index, &v);
    if (st == VN_OK) *out = v->size;
    return st;
}

vn_status vn_recording_output_len(const vn_recording *r, int64_t index, uint64_t *out) {
    VN_CALL1(recording_output_len(r, index, out), r, VN_KIND_RECORDING);
}

/* The checks every read of an output makes: the index, and a device not lost. */
static vn_status readable_output(const vn_recording *r, int64_t index, const vn_view **out) {
    vn_status st = output_at(r, index, out);
    return st != VN_OK ? st : vn_device_check((*out)->buffer->device, "reading an output");
}

static vn_status recording_read_output_async(vn_recording *r, int64_t index, vn_pending_read **out) {
    if (out == NULL) return vn_null_out("read_output_async", "out");
    *out = NULL;
    const vn_view *v = NULL;
    vn_status st = readable_output(r, index, &v);
    return st != VN_OK ? st : vn_view_read_async_held(v, out); /* the recording holds the buffer */
}

vn_status vn_recording_read_output_async(vn_recording *r, int64_t index, vn_pending_read **out) {
    VN_CALL1_OUT(recording_read_output_async(r, index, out), out, r, VN_KIND_RECORDING);
}

static vn_status recording_read_output(vn_recording *r, int64_t index, void *dst, uint64_t capacity,
                                       uint64_t *written, vn_pending_read **pending) {
    if (written != NULL) *written = 0;
    if (pending != NULL) *pending = NULL;
    const vn_view *v = NULL;
    vn_status st = readable_output(r, index, &v);
    return st != VN_OK ? st : vn_output_read(v, index, dst, capacity, written, pending);
}

vn_status vn_recording_read_output(vn_recording *r, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                                   vn_pending_read **pending) {
    VN_CALL1_OUT(recording_read_output(r, index, dst, capacity, written, pending), pending, r, VN_KIND_RECORDING);
}

void vn_recording_release(vn_recording *r) { vn_release_handle(r, VN_KIND_RECORDING); }

/* ---- sequences ------------------------------------------------------------------- */

static void sequence_destroy(vn_object *object);

static vn_status sequence_create(vn_device *device, vn_sequence **out) {
    vn_status st = vn_device_check(device, "creating a sequence");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_null_out("vn_sequence_create", "out");
    vn_sequence *s = calloc(1, sizeof *s);
    if (s == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a sequence. Fix: free host memory.");
    vn_object_init(&s->obj, VN_KIND_SEQUENCE, sequence_destroy);
    vn_mutex_init(&s->lock);
    vn_device_retain(device);
    s->device = device;
    vn_live_add(VN_LIVE_SEQUENCE, 1);
    *out = s;
    return VN_OK;
}

vn_status vn_sequence_create(vn_device *device, vn_sequence **out) {
    VN_CALL1_OUT(sequence_create(device, out), out, device, VN_KIND_DEVICE);
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
    s->encoded_whole = false; /* the next replay checks the new steps in one piece */
    free(s->distinct);         /* and indexes their buffers again */
    s->distinct = NULL;
    s->distinct_count = 0;
    return VN_OK;
}

static vn_status sequence_add(vn_sequence *s, vn_pipeline *pipeline, const vn_dispatch_args *args) {
    if (pipeline->device != s->device)
        return vn_fail(VN_ERROR_BINDING, "the pipeline belongs to another device than the sequence. Fix: compile it on "
                       "the sequence's device.");
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = STEP_DISPATCH;
    vn_status st = vn_bound_resolve(pipeline, args, &step.bound);
    if (st != VN_OK) return st;
    vn_mutex_lock(&s->lock);
    st = push_step(s, &step);
    vn_mutex_unlock(&s->lock);
    if (st != VN_OK) vn_bound_release(&step.bound);
    return st;
}

vn_status vn_sequence_add(vn_sequence *s, vn_pipeline *pipeline, const vn_dispatch_args *args) {
    VN_CALL2(sequence_add(s, pipeline, args), s, VN_KIND_SEQUENCE, pipeline, VN_KIND_PIPELINE);
}

/* The view (resolved, its buffer held) is on the sequence's device, with usage `need`. */
static vn_status check_sequence_view(const vn_sequence *s, const vn_view *v, const char *role, uint64_t need) {
    const vn_buffer *b = v->buffer;
    if (b->device != s->device)
        return vn_fail(VN_ERROR_BINDING, "%s (buffer %llu) belongs to another device than the sequence. Fix: create it on "
                       "the sequence's device.", role, (unsigned long long)b->identity);
    if ((b->usage & need) != need)
        return vn_fail(VN_ERROR_BINDING, "%s (buffer %llu) has usage 0x%llx without %s. Fix: create it with that usage, or "
                       "leave usage unset for the default.", role, (unsigned long long)b->identity,
                       (unsigned long long)b->usage, need == VN_USAGE_COPY_SRC ? "COPY_SRC" : "COPY_DST");
    return VN_OK;
}

/* The GPU extent of a resolved view: its size, padded to 4 where it ends its buffer
 * (the padding is the allocation's own). */
static uint64_t extent(const vn_view *v) { return vn_view_extent(v); }

/* A copy between resolved views whose buffers the call holds. */
static vn_status sequence_copy(vn_sequence *s, const vn_view *src, const vn_view *dst, const uint64_t *count,
                               uint64_t src_offset, uint64_t dst_offset) {
    vn_status st = check_sequence_view(s, src, "copy source", VN_USAGE_COPY_SRC);
    if (st == VN_OK) st = check_sequence_view(s, dst, "copy destination", VN_USAGE_COPY_DST);
    if (st != VN_OK) return st;
    uint64_t src_len = extent(src), dst_len = extent(dst);
    if (src_offset > src_len || dst_offset > dst_len)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copy offsets %llu (source of %llu bytes) and %llu (destination of %llu "
                       "bytes) must lie inside the buffers. Fix: pass a src_offset of at most %llu and a dst_offset "
                       "of at most %llu.",
                       (unsigned long long)src_offset, (unsigned long long)src_len,
                       (unsigned long long)dst_offset, (unsigned long long)dst_len,
                       (unsigned long long)src_len, (unsigned long long)dst_len);
    uint64_t room_s = src_len - src_offset, room_d = dst_len - dst_offset;
    uint64_t room = room_s < room_d ? room_s : room_d;
    uint64_t nbytes = count == NULL ? room : *count;
    /* A step is one CopyBufferToBuffer, which moves whole words: the byte-exact copy,
     * which merges partial words with a dispatch of its own, is Device.copy. */
    if ((src->offset + src_offset) % 4 || (dst->offset + dst_offset) % 4 || nbytes % 4)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a sequence's copy step moves whole 4-byte words: nbytes %llu, and the "
                       "source and destination bytes %llu and %llu of their buffers, must be multiples of 4. Fix: align "
                       "them to 4 bytes, or copy any byte range with Device.copy (queued now, not a step).",
                       (unsigned long long)nbytes, (unsigned long long)(src->offset + src_offset),
                       (unsigned long long)(dst->offset + dst_offset));
    if (nbytes > room)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copying %llu bytes runs past the source (%llu bytes from offset %llu) "
                       "or the destination (%llu bytes from offset %llu). Fix: copy at most %llu bytes, or pass "
                       "nbytes=None for as much as fits.",
                       (unsigned long long)nbytes, (unsigned long long)src_len, (unsigned long long)src_offset,
                       (unsigned long long)dst_len, (unsigned long long)dst_offset,
                       (unsigned long long)(room & ~(uint64_t)3));
    if (src->buffer == dst->buffer)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a copy from buffer %llu to itself is not allowed by WebGPU (not even "
                       "between two views of it). Fix: copy through a second buffer.",
                       (unsigned long long)src->buffer->identity);
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = STEP_COPY;
    step.src = src->buffer;
    step.dst = dst->buffer;
    step.nbytes = nbytes;
    step.src_offset = src->offset + src_offset;
    step.dst_offset = dst->offset + dst_offset;
    vn_mutex_lock(&s->lock);
    st = push_step(s, &step);
    vn_mutex_unlock(&s->lock);
    if (st == VN_OK) {
        vn_buffer_retain(src->buffer);
        vn_buffer_retain(dst->buffer);
    }
    return st;
}

vn_status vn_sequence_copy(vn_sequence *s, const vn_view *src_view, const vn_view *dst_view, const uint64_t *nbytes,
                           uint64_t src_offset, uint64_t dst_offset) {
    vn_object *held;
    vn_status st = vn_acquire(s, VN_KIND_SEQUENCE, __func__, &held);
    if (st != VN_OK) return st;
    VN_REBIND_(s, held);
    vn_view src, dst = {NULL, 0, 0, 0};
    st = vn_view_acquire(src_view, "copy source", &src);
    if (st == VN_OK) st = vn_view_acquire(dst_view, "copy destination", &dst);
    if (st == VN_OK) st = sequence_copy(s, &src, &dst, nbytes, src_offset, dst_offset);
    if (dst.buffer != NULL) vn_unacquire(dst.buffer);
    if (src.buffer != NULL) vn_unacquire(src.buffer);
    vn_unacquire(s);
    return st;
}

/* A clear of the resolved view v, whose buffer the call holds. */
static vn_status sequence_clear(vn_sequence *s, const vn_view *v) {
    vn_status st = check_sequence_view(s, v, "cleared buffer", VN_USAGE_COPY_DST);
    if (st != VN_OK) return st;
    /* A fill or clear_buffer sets whole words: a view covering part of one would zero
     * its neighbour's bytes. */
    if (v->offset % 4 != 0 || extent(v) % 4 != 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a clear of %llu bytes at byte %llu of buffer %llu covers part of a 4-byte "
                       "word; a GPU clear zeroes whole words, so it would zero the rest of that word too. Fix: clear a "
                       "view of whole words (offset and nbytes multiples of 4, or ending the buffer), or write zeros "
                       "to the exact bytes with view.write.", (unsigned long long)v->size,
                       (unsigned long long)v->offset, (unsigned long long)v->buffer->identity);
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = STEP_CLEAR;
    step.dst = v->buffer;
    step.dst_offset = v->offset;
    step.nbytes = extent(v);
    vn_scope_begin(s->device);
    st = vn_clear_plan(s->device, v, &step.clear);
    vn_status scope = vn_scope_end(s->device, "planning a clear", VN_ERROR_VALIDATION,
                                   "check the buffer's usage and size.");
    if (st == VN_OK) st = scope;
    if (st == VN_OK) {
        vn_mutex_lock(&s->lock);
        st = push_step(s, &step);
        vn_mutex_unlock(&s->lock);
    }
    if (st != VN_OK) {
        vn_fill_forget(s->device, v->buffer->identity); /* a group that failed validation may be cached */
        vn_clear_release(&step.clear);
        return st;
    }
    vn_buffer_retain(v->buffer);
    return VN_OK;
}

vn_status vn_sequence_clear(vn_sequence *s, const vn_view *view) {
    vn_object *held;
    vn_status st = vn_acquire(s, VN_KIND_SEQUENCE, __func__, &held);
    if (st != VN_OK) return st;
    VN_REBIND_(s, held);
    vn_view v;
    st = vn_view_acquire(view, "cleared buffer", &v);
    if (st == VN_OK) {
        st = sequence_clear(s, &v);
        vn_unacquire(v.buffer);
    }
    vn_unacquire(s);
    return st;
}

size_t vn_sequence_length(const vn_sequence *s) {
    vn_object *held;
    if (vn_acquire(s, VN_KIND_SEQUENCE, __func__, &held) != VN_OK) return 0;
    vn_sequence *seq = (vn_sequence *)held;
    vn_mutex_lock(&seq->lock); /* an add on another thread may be growing it */
    size_t n = seq->count;
    vn_mutex_unlock(&seq->lock);
    vn_unacquire(held);
    return n;
}

/* ---- long replays in several submits ---------------------------------------------- */

/* Time to completion of a long replay is otherwise encode + GPU + a round trip: the GPU
 * waits for the last step to be encoded. Split, it starts after the first
 * VN_SPLIT_FIRST_STEPS, and each later submit is queued while the GPU still runs the
 * one before (encoding a step costs far less than running it, on any GPU measured).
 * Only for steps already encoded cleanly as one command buffer, so that a failure of a
 * later part (which cannot be undone: the parts before it are running) is as unlikely
 * as it can be; not with timing, whose passes one command buffer must hold; not where
 * a submit waits for the work before it (CPU adapters), since no part could overlap. */
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

/* What a submit in parts encodes: the next `steps` steps of its work, in order, into
 * enc (the work keeps its own cursor). */
typedef struct parts_job {
    const char *label, *what; /* the encoders' label; "replay" or "submit", for parts_failed */
    const vn_submit_guard *guard;
    parts_rule rule;
    /* Keep at most VN_MAX_SUBMITS_IN_FLIGHT parts running, waiting (in C, vn_fence_wait_held)
     * for the part before last before encoding the next: each holds encoder memory until
     * the GPU has run it. Without it every part is queued at once. */
    bool bounded;
    void (*encode_next)(void *work, WGPUCommandEncoder enc, uint64_t steps);
    void *work;
} parts_job;

/* The one loop that submits work in parts, as one unit: the life lock's write side is
 * held across every part, so no other thread's submit, queued write or readback, nor
 * wgpu-py's map or destroy of a shared buffer, nor destroy(), lands between two of them,
 * or between the guard's check and the last part. Its checks come before anything is
 * encoded. The last part is the one tracked: the queue runs in order, so its completion
 * is the whole work's. Should a later part fail (the device lost meanwhile), the error
 * says how many steps went before it. */
static vn_status submit_parts(vn_device *dev, const parts_job *job, uint64_t total, vn_submission **out) {
    vn_status st = vn_submit_begin_exclusive(dev, job->label, job->guard);
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
    vn_submit_end_exclusive(dev);
    return parts_failed(st, first, total, job->what);
}

static bool replay_splits(const vn_sequence *s, uint32_t n, vn_timing_mode timing) {
    return timing == VN_TIMING_NONE && s->encoded_whole && (uint64_t)n * s->count >= VN_SPLIT_MIN_STEPS &&
           (!s->device->serial_submits || vn_test_switch_on(VN_TEST_SPLIT_SUBMITS_EVERYWHERE));
}

/* A sequence's replay in parts: where the next part starts, counted across launches. */
typedef struct steps_cursor {
    const vn_sequence *s;
    uint64_t next;
} steps_cursor;

static void encode_next_steps(void *work, WGPUCommandEncoder enc, uint64_t steps) {
    steps_cursor *c = work;
    vn_timing none;
    memset(&none, 0, sizeof none);
    encode_steps(c->s, enc, (size_t)c->next, (size_t)(c->next + steps), &none);
    c->next += steps;
}

/* No vn_submit_ready: a device whose submits wait splits only in tests. Parts double
 * from VN_SPLIT_FIRST_STEPS, all queued at once (the whole is at most one submit's
 * bound, or one launch the caller built). */
static vn_status replay_in_submits(vn_sequence *s, uint32_t n, vn_submission **out) {
    const vn_submit_guard guard = {sequence_submittable, s};
    steps_cursor cursor = {s, 0};
    const parts_job job = {"replaying a sequence", "replay", &guard, {VN_SPLIT_FIRST_STEPS, UINT64_MAX, true},
                           false, encode_next_steps, &cursor};
    return submit_parts(s->device, &job, (uint64_t)n * s->count, out);
}

static vn_status sequence_replay(vn_sequence *s, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    if (out == NULL) return vn_null_out("vn_sequence_replay", "out");
    *out = NULL;
    vn_mutex_lock(&s->lock);
    if (s->count == 0) {
        vn_mutex_unlock(&s->lock);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "the sequence is empty. Fix: add dispatches, copies or clears first.");
    }
    vn_status st = check_count(n, s->count, "Sequence");
    if (st != VN_OK) {
        vn_mutex_unlock(&s->lock);
        return st;
    }
    sequence_index_buffers(s);
    if (replay_splits(s, n, timing)) {
        st = replay_in_submits(s, n, out);
    } else {
        st = encode_and_submit(s->device, &sequence_job, s, n, timing, "replaying a sequence", out);
        if (st == VN_OK) s->encoded_whole = true;
    }
    vn_mutex_unlock(&s->lock);
    return st;
}

vn_status vn_sequence_replay(vn_sequence *s, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    VN_CALL1_OUT(sequence_replay(s, n, timing, out), out, s, VN_KIND_SEQUENCE);
}

void vn_sequence_release(vn_sequence *s) { vn_release_handle(s, VN_KIND_SEQUENCE); }

static void sequence_destroy(vn_object *object) {
    vn_sequence *s = (vn_sequence *)object;
    for (size_t i = 0; i < s->count; i++) {
        vn_step *st = &s->steps[i];
        if (st->kind == STEP_DISPATCH) vn_bound_release(&st->bound);
        vn_clear_release(&st->clear);
        if (st->src != NULL) vn_release(&st->src->obj);
        if (st->dst != NULL) vn_release(&st->dst->obj);
    }
    free(s->steps);
    free(s->distinct);
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

/* Every item once, in order, each in passes of its own. */
static VN_ALWAYS_INLINE void walk_batch(pass_walk *w, const batch *b, const bool encode) {
    for (size_t i = 0; i < b->count; i++) {
        if (b->work[i].recording != NULL) walk_recording(w, b->work[i].recording, 1, encode);
        else walk_steps(w, b->work[i].sequence, 0, b->work[i].sequence->count, encode);
    }
}

static uint32_t batch_passes(const void *what, uint32_t n, vn_timing *t) {
    (void)n;
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, NULL, &state);
    walk_batch(&w, what, false);
    return clamp_passes(w.begun);
}

static void encode_batch(const void *what, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    (void)n;
    pass_walk w;
    vn_pass_state state;
    walk_begin(&w, t, enc, &state);
    walk_batch(&w, what, true);
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

/* ---- batched submits in several parts ----------------------------------------------- */

static size_t item_steps(const vn_work *w) { return w->recording != NULL ? 1 : w->sequence->count; }

/* The next `steps` steps of the batch from the cursor on, in order, into enc. A part
 * may begin or end inside a sequence: its steps are encoded as one replay of it would
 * encode them (encode_steps), a new pass at the part's start. */
typedef struct batch_cursor {
    const batch *b;
    size_t item, step; /* where the next part starts: step `step` of item `item` */
} batch_cursor;

static void encode_next_batch_steps(void *work, WGPUCommandEncoder enc, uint64_t steps) {
    batch_cursor *c = work;
    vn_timing none;
    memset(&none, 0, sizeof none);
    while (c->item < c->b->count) {
        const vn_work *w = &c->b->work[c->item];
        size_t len = item_steps(w), take = len - c->step < steps ? len - c->step : (size_t)steps;
        if (take > 0) {
            if (w->recording != NULL) encode_recording(w->recording, enc, 1, &none);
            else encode_steps(w->sequence, enc, c->step, c->step + take, &none);
        }
        c->step += take;
        steps -= take;
        if (c->step < len) return; /* the part ends inside this item */
        c->item++;
        c->step = 0;
        if (steps == 0) return;
    }
}

/* A batch of more than VN_MAX_LAUNCHES_PER_SUBMIT steps, as a replay(n) past the bound
 * goes: parts of at most that many steps, at most VN_MAX_SUBMITS_IN_FLIGHT of them
 * running (submit_parts waits, in C, for the part before last). */
static vn_status submit_in_parts(vn_device *dev, const batch *b, uint64_t total, vn_submission **out) {
    static const char label[] = "device.submit";
    const vn_submit_guard guard = {batch_submittable, b};
    vn_status st = vn_device_check(dev, label);
    if (st == VN_OK) st = vn_submit_guard_check(&guard);
    if (st == VN_OK) st = vn_submit_ready(dev); /* VN_PENDING: nothing encoded, call again */
    if (st != VN_OK) return st;
    batch_cursor cursor = {b, 0, 0};
    const parts_job job = {label, "submit", &guard,
                           {VN_MAX_LAUNCHES_PER_SUBMIT, VN_MAX_LAUNCHES_PER_SUBMIT, false}, true,
                           encode_next_batch_steps, &cursor};
    return submit_parts(dev, &job, total, out);
}

/* Lock order for a batch: its sequences' locks, each once, in ascending object id
 * (layer_object.h, "Lock order"), so submit([a, b]) and submit([b, a]) on two threads
 * take them in the same order. `seqs` gets the distinct sequences, sorted; returns
 * how many. */
static int by_id(const void *a, const void *b) {
    uint64_t x = (*(vn_sequence *const *)a)->obj.id, y = (*(vn_sequence *const *)b)->obj.id;
    return (x > y) - (x < y);
}

static size_t distinct_sequences(const vn_work *work, size_t count, vn_sequence **seqs) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (work[i].sequence != NULL) seqs[n++] = work[i].sequence;
    qsort(seqs, n, sizeof *seqs, by_id);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || seqs[kept - 1] != seqs[i]) seqs[kept++] = seqs[i];
    return kept;
}

static void unacquire_work(const vn_work *held, size_t count) {
    for (size_t i = 0; i < count; i++)
        vn_unacquire(held[i].recording != NULL ? (const void *)held[i].recording : (const void *)held[i].sequence);
}

/* Translate every item of the caller's work (ids) into held[i] (its object, checked for
 * its kind and retained for the call). On failure none stays held. */
static vn_status acquire_work(const vn_work *work, size_t count, vn_work *held) {
    for (size_t i = 0; i < count; i++) {
        const vn_work *w = &work[i];
        vn_status st;
        if ((w->recording == NULL) == (w->sequence == NULL)) {
            st = vn_fail(VN_ERROR_INVALID_ARGUMENT, "work item %zu must be exactly one recording or sequence. Fix: "
                         "pass vn.Recording or vn.Sequence objects.", i);
        } else {
            char fn[64];
            snprintf(fn, sizeof fn, "device.submit work item %zu", i);
            vn_object *object;
            bool recording = w->recording != NULL;
            st = vn_acquire(recording ? (const void *)w->recording : (const void *)w->sequence,
                            recording ? VN_KIND_RECORDING : VN_KIND_SEQUENCE, fn, &object);
            held[i].recording = recording ? (vn_recording *)object : NULL;
            held[i].sequence = recording ? NULL : (vn_sequence *)object;
        }
        if (st != VN_OK) {
            unacquire_work(held, i);
            return st;
        }
    }
    return VN_OK;
}

/* With every item held: check devices, lock the sequences in order, encode, submit. */
static vn_status submit_held(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                             vn_submission **out) {
    size_t sequences = 0;
    for (size_t i = 0; i < count; i++) {
        const vn_work *w = &work[i];
        vn_device *owner = w->recording ? w->recording->bound.pipeline->device : w->sequence->device;
        if (owner != device)
            return vn_fail(VN_ERROR_BINDING, "work item %zu belongs to another device. Fix: submit it on its own device.", i);
        sequences += w->sequence != NULL;
    }
    /* Sequences are locked for the encode so a concurrent add cannot move their steps.
     * Their list lives on the stack for the usual few; a batch of many sequences pays
     * one allocation, of at most `count` pointers (the caller's own array is larger). */
    vn_sequence *stack_seqs[16];
    vn_sequence **seqs = sequences <= 16 ? stack_seqs : malloc(sequences * sizeof *seqs);
    if (seqs == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate the lock list of %zu sequences. Fix: free host "
                       "memory, or submit fewer sequences at once.", sequences);
    size_t locked = distinct_sequences(work, count, seqs);
    for (size_t i = 0; i < locked; i++) {
        vn_mutex_lock(&seqs[i]->lock);
        sequence_index_buffers(seqs[i]);
    }
    /* One item is what the caller built; several past one submit's bound go in parts,
     * as a replay(n) past it does, unless timed (one command buffer holds the queries). */
    uint64_t steps = 0;
    for (size_t i = 0; i < count; i++) steps += item_steps(&work[i]);
    batch b = {work, count};
    vn_status st;
    if (count > 1 && steps > VN_MAX_LAUNCHES_PER_SUBMIT && timing != VN_TIMING_NONE) {
        st = vn_fail(VN_ERROR_INVALID_ARGUMENT,
                     "a timed device.submit() of %zu items would encode %llu steps into one command buffer, above "
                     "the %d one submit holds (each keeps encoder memory until the GPU has run it; an untimed one "
                     "goes in parts, but the timestamp queries must span one command buffer). Fix: submit without "
                     "timing, or time at most %d steps at once (a recording is one step, a sequence its length).",
                     count, (unsigned long long)steps, VN_MAX_LAUNCHES_PER_SUBMIT, VN_MAX_LAUNCHES_PER_SUBMIT);
    } else if (count > 1 && steps > VN_MAX_LAUNCHES_PER_SUBMIT) {
        st = submit_in_parts(device, &b, steps, out);
    } else {
        st = encode_and_submit(device, &batch_job, &b, 1, timing, "device.submit", out);
    }
    for (size_t i = locked; i-- > 0;) vn_mutex_unlock(&seqs[i]->lock);
    if (seqs != stack_seqs) free(seqs);
    return st;
}

static vn_status device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                               vn_submission **out) {
    vn_status st = vn_device_check(device, "device.submit");
    if (st != VN_OK) return st;
    if (out == NULL || (count > 0 && work == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_device_submit: NULL argument. Fix: pass the work and a result.");
    *out = NULL;
    if (count == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "device.submit([]): nothing to submit. Fix: pass recordings or sequences.");
    /* The objects live on the stack for the usual few items; a longer batch pays one
     * allocation (the caller's own array of ids is as long). */
    vn_work stack_held[32];
    vn_work *held = count <= 32 ? stack_held : calloc(count, sizeof *held);
    if (held == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate the list of %zu work items. Fix: free host "
                       "memory, or submit fewer items at once.", count);
    st = acquire_work(work, count, held);
    if (st == VN_OK) {
        st = submit_held(device, held, count, timing, out);
        /* After every lock is released: this may drop an item's last reference. */
        unacquire_work(held, count);
    }
    if (held != stack_held) free(held);
    return st;
}

vn_status vn_device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                           vn_submission **out) {
    VN_CALL1_OUT(device_submit(device, work, count, timing, out), out, device, VN_KIND_DEVICE);
}
