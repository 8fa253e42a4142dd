/* sequence.c - Sequence: steps (dispatches, copies, clears) built once, each resolved
 * and checked as it is added, replayed by re-encoding them all (consecutive dispatches
 * sharing a pass), in one submit or, long and once encoded whole, in parts. */
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

static uint32_t sequence_passes_cb(const void *s, uint32_t n, vn_timing *t) { return vn_sequence_passes(s, n, t); }
static void encode_sequence_cb(const void *what, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    const vn_sequence *s = what;
    vn_steps_encode(s, enc, 0, (size_t)n * s->count, t);
}
vn_status vn_sequence_submittable(const void *what) {
    const vn_sequence *s = what;
    if (s->distinct != NULL) return vn_buffers_submittable(s->distinct, s->distinct_count, "Sequence.replay()");
    vn_status st = VN_OK;
    for (size_t i = 0; i < s->count && st == VN_OK; i++) {
        const vn_step *step = &s->steps[i];
        if (step->kind == VN_STEP_DISPATCH) {
            st = vn_bound_submittable(&step->bound, "Sequence.replay()");
        } else {
            vn_buffer *const ends[2] = {step->src, step->dst};
            st = vn_buffers_submittable(step->src != NULL ? ends : ends + 1, step->src != NULL ? 2 : 1,
                                        "Sequence.replay()");
        }
    }
    return st;
}
/* Where a buffer is first used among the steps' buffers (vn_sequence_index_buffers). */
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
void vn_sequence_index_buffers(vn_sequence *s) {
    if (s->distinct != NULL || s->count == 0) return;
    size_t uses = 0;
    for (size_t i = 0; i < s->count; i++) {
        const vn_step *st = &s->steps[i];
        uses += st->kind == VN_STEP_DISPATCH ? st->bound.buffer_count + 1 : 2;
    }
    buffer_use *all = malloc(uses * sizeof *all);
    if (all == NULL) return;
    size_t n = 0;
    for (size_t i = 0; i < s->count; i++) {
        /* what vn_sequence_submittable's walk checks, in its order */
        const vn_step *st = &s->steps[i];
        bool dispatch = st->kind == VN_STEP_DISPATCH;
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

static const vn_encode_job sequence_job = {sequence_passes_cb, encode_sequence_cb, vn_sequence_submittable};

static void sequence_destroy(vn_object *object);

static vn_status sequence_create(vn_device *device, vn_sequence **out) {
    vn_status st = vn_device_check(device, "creating a sequence");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_null_out("vn_sequence_create", "out");
    vn_sequence *s = calloc(1, sizeof *s);
    if (s == NULL) return vn_fail_no_memory("a sequence", sizeof *s);
    vn_object_init(&s->obj, VN_KIND_SEQUENCE, sequence_destroy);
    vn_mutex_init(&s->lock);
    vn_lock_rank_set(&s->lock, VN_LOCK_OBJECT, "vn_sequence.lock");
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
    step.kind = VN_STEP_DISPATCH;
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
    uint64_t nbytes;
    /* The range first (Device.copy's rule): the alignment refusal's Fix (round to 4)
     * then names a count that fits, and the range refusal's a count of whole words. */
    st = vn_copy_range(src_len, src_offset, dst_len, dst_offset, count, 4, &nbytes);
    if (st != VN_OK) return st;
    /* A step is one CopyBufferToBuffer, which moves whole words: the byte-exact copy,
     * which merges partial words with a dispatch of its own, is Device.copy. */
    if ((src->offset + src_offset) % 4 || (dst->offset + dst_offset) % 4 || nbytes % 4)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a sequence's copy step moves whole 4-byte words: nbytes %llu, and the "
                       "source and destination bytes %llu and %llu of their buffers, must be multiples of 4. Fix: align "
                       "them to 4 bytes, or copy any byte range with Device.copy (queued now, not a step).",
                       (unsigned long long)nbytes, (unsigned long long)(src->offset + src_offset),
                       (unsigned long long)(dst->offset + dst_offset));
    if (src->buffer == dst->buffer)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "a copy from buffer %llu to itself is not allowed by WebGPU (not even "
                       "between two views of it). Fix: copy through a second buffer.",
                       (unsigned long long)src->buffer->identity);
    vn_step step;
    memset(&step, 0, sizeof step);
    step.kind = VN_STEP_COPY;
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
    step.kind = VN_STEP_CLEAR;
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
    const bool out_of_order = vn_test_switch_on(VN_TEST_BREAK_LOCK_ORDER); /* the check's test */
    if (out_of_order) vn_mutex_lock(&seq->device->pipelines_lock);
    vn_mutex_lock(&seq->lock); /* an add on another thread may be growing it */
    size_t n = seq->count;
    vn_mutex_unlock(&seq->lock);
    if (out_of_order) vn_mutex_unlock(&seq->device->pipelines_lock);
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
    vn_steps_encode(c->s, enc, (size_t)c->next, (size_t)(c->next + steps), &none);
    c->next += steps;
}

/* No vn_submit_ready: a device whose submits wait splits only in tests. Parts double
 * from VN_SPLIT_FIRST_STEPS, all queued at once (the whole is at most one submit's
 * bound, or one launch the caller built). */
static vn_status replay_in_submits(vn_sequence *s, uint32_t n, vn_submission **out) {
    const vn_submit_guard guard = {vn_sequence_submittable, s};
    steps_cursor cursor = {s, 0};
    const vn_parts_job job = {"replaying a sequence", "replay", &guard, {VN_SPLIT_FIRST_STEPS, UINT64_MAX, true},
                           false, encode_next_steps, &cursor};
    return vn_submit_parts(s->device, &job, (uint64_t)n * s->count, out);
}

static vn_status sequence_replay(vn_sequence *s, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    if (out == NULL) return vn_null_out("vn_sequence_replay", "out");
    *out = NULL;
    vn_mutex_lock(&s->lock);
    if (s->count == 0) {
        vn_mutex_unlock(&s->lock);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "the sequence is empty. Fix: add dispatches, copies or clears first.");
    }
    vn_status st = vn_replay_count_check(n, s->count, "Sequence");
    if (st != VN_OK) {
        vn_mutex_unlock(&s->lock);
        return st;
    }
    vn_sequence_index_buffers(s);
    if (replay_splits(s, n, timing)) {
        st = replay_in_submits(s, n, out);
    } else {
        st = vn_encode_and_submit(s->device, &sequence_job, s, n, timing, "replaying a sequence", out);
        if (st == VN_OK) s->encoded_whole = true;
    }
    vn_mutex_unlock(&s->lock);
    return st;
}

vn_status vn_sequence_replay(vn_sequence *s, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    VN_CALL1_OUT(sequence_replay(s, n, timing, out), out, s, VN_KIND_SEQUENCE);
}

void vn_sequence_release(vn_sequence *s) { vn_id_release(s, VN_KIND_SEQUENCE); }

static void sequence_destroy(vn_object *object) {
    vn_sequence *s = (vn_sequence *)object;
    for (size_t i = 0; i < s->count; i++) {
        vn_step *st = &s->steps[i];
        if (st->kind == VN_STEP_DISPATCH) vn_bound_release(&st->bound);
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
