/* prerecorded.c - pre-recorded dispatches: encoded once, submitted at most once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

/* A dispatch released without replay() leaves its command buffer unsubmitted, which
 * wgpu-native 29 does not reclaim (about 90 KB each, inside wgpu-core): the
 * single-submit design of the seed has that cost, documented in the README;
 * pipeline.record() encodes at replay time and has none. */
enum { DISPATCH_RECORDED = 0, DISPATCH_SUBMITTING = 1, DISPATCH_SUBMITTED = 2 };

struct vn_dispatch {
    vn_object obj; /* VN_KIND_DISPATCH */
    vn_bound bound;
    WGPUCommandBuffer command_buffer; /* NULL once submitted */
    atomic_int state;
    uint64_t submission_index;
};

static void dispatch_destroy(vn_object *object) {
    vn_dispatch *d = (vn_dispatch *)object;
    if (d->command_buffer != NULL) wgpu.CommandBufferRelease(d->command_buffer);
    vn_bound_release(&d->bound);
    free(d);
    vn_live_add(VN_LIVE_DISPATCH, -1);
}

static vn_status dispatch_record(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_dispatch **out) {
    if (out == NULL) return vn_null_out("vn_dispatch_record", "out");
    *out = NULL;
    vn_dispatch *d = calloc(1, sizeof *d);
    if (d == NULL) return vn_fail_no_memory("a dispatch record", sizeof *d);
    vn_status st = vn_bound_resolve(pipeline, args, &d->bound);
    if (st != VN_OK) {
        free(d);
        return st;
    }
    vn_device *dev = pipeline->device;
    /* Encoded inside error scopes; a command buffer whose encoding failed is
     * dropped here and never reaches the queue, where wgpu-native would abort. */
    WGPUCommandEncoder enc = vn_encode_begin(dev, pipeline->label);
    vn_bound_encode(&d->bound, enc, NULL);
    WGPUCommandBuffer cb;
    st = vn_encode_finish(dev, enc, pipeline->record_what, "check the buffers against the shader's declared types and the workgroup counts.",
                          &cb);
    if (st != VN_OK) {
        vn_bound_release(&d->bound);
        free(d);
        return st;
    }
    vn_object_init(&d->obj, VN_KIND_DISPATCH, dispatch_destroy);
    atomic_init(&d->state, DISPATCH_RECORDED);
    d->command_buffer = cb;
    vn_live_add(VN_LIVE_DISPATCH, 1);
    *out = d;
    return VN_OK;
}

vn_status vn_dispatch_record(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_dispatch **out) {
    VN_CALL1_OUT(dispatch_record(pipeline, args, out), out, pipeline, VN_KIND_PIPELINE);
}

static vn_status dispatch_record_buffers(vn_pipeline *pipeline, vn_buffer *const *buffers, size_t input_count,
                                        size_t output_count, uint32_t x, uint32_t y, uint32_t z, uint32_t keep_outputs,
                                        vn_dispatch **out) {
    if (out == NULL) return vn_null_out("vn_dispatch_record_buffers", "out");
    *out = NULL;
    size_t n = input_count + output_count;
    if (n > 0 && buffers == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%zu buffers were counted but the array is NULL. Fix: pass them.", n);
    vn_view stack[16];
    vn_view *views = n <= 16 ? stack : malloc(n * sizeof *views);
    if (views == NULL) return vn_fail_no_memory("the views of a dispatch", n * sizeof *views);
    for (size_t i = 0; i < n; i++) views[i] = (vn_view){buffers[i], 0, 0, 1};
    vn_dispatch_args args = {.forms = n ? VN_BIND_POSITIONAL : 0, .x = x, .y = y, .z = z,
                             .inputs = input_count ? views : NULL, .input_count = input_count,
                             .outputs = output_count ? views + input_count : NULL, .output_count = output_count,
                             .keep_outputs = keep_outputs};
    vn_status st = dispatch_record(pipeline, &args, out);
    if (views != stack) free(views);
    return st;
}

vn_status vn_dispatch_record_buffers(vn_pipeline *pipeline, vn_buffer *const *buffers, size_t input_count,
                                     size_t output_count, uint32_t x, uint32_t y, uint32_t z, uint32_t keep_outputs,
                                     vn_dispatch **out) {
    VN_CALL1_OUT(dispatch_record_buffers(pipeline, buffers, input_count, output_count, x, y, z, keep_outputs, out),
                 out, pipeline, VN_KIND_PIPELINE);
}

static vn_status dispatch_submittable(const void *dispatch) {
    return vn_bound_submittable(&((const vn_dispatch *)dispatch)->bound, "replay()");
}

static vn_status dispatch_replay(vn_dispatch *d, uint64_t *submission_index) {
    vn_device *dev = d->bound.pipeline->device;
    const vn_submit_guard guard = {dispatch_submittable, d};
    vn_status st = VN_OK;
    /* A CPU adapter's submit blocks in the driver while earlier work runs: drain first
     * (VN_PENDING: call again), unless this replay is refused anyway. */
    if (dev->serial_submits && atomic_load(&d->state) == DISPATCH_RECORDED) {
        st = vn_device_check(dev, "replaying a pre-recorded dispatch");
        if (st == VN_OK) st = vn_submit_ready(dev);
    }
    if (st == VN_OK) st = vn_life_lock_read_guarded(dev, "replaying a pre-recorded dispatch", &guard);
    if (st != VN_OK) return st;
    /* Exactly one caller wins the exchange, however many threads race here. */
    int expected = DISPATCH_RECORDED;
    if (!atomic_compare_exchange_strong(&d->state, &expected, DISPATCH_SUBMITTING)) {
        vn_life_unlock_read(dev);
        return vn_fail(VN_ERROR_ALREADY_SUBMITTED,
                       "this pre-recorded dispatch was already submitted (submission %llu). Fix: record a new "
                       "PrerecordedDispatch for each launch (wgpu command buffers are single-submit), or use "
                       "pipeline.record(...) for a replayable recording.",
                       (unsigned long long)d->submission_index);
    }
    WGPUCommandBuffer cb = d->command_buffer;
    d->command_buffer = NULL;
    d->submission_index = vn_submit_locked(dev, cb);
    vn_life_unlock_read(dev);
    atomic_store(&d->state, DISPATCH_SUBMITTED);
    if (submission_index != NULL) *submission_index = d->submission_index;
    return VN_OK;
}

vn_status vn_dispatch_replay(vn_dispatch *d, uint64_t *submission_index) {
    VN_CALL1(dispatch_replay(d, submission_index), d, VN_KIND_DISPATCH);
}

/* A borrowed dispatch allocates each cleared output; the host passes every other binding. */
static bool host_binding(const vn_binding *b) { return !vn_binding_cleared_output(b); }

/* The counts a borrowed dispatch needs, checked before any buffer is made; host_of[i]
 * gets the host buffer of binding i (SIZE_MAX for an allocated output). */
static vn_status check_borrowed(const vn_pipeline *p, bool named, const char *const *names, size_t host_count,
                                const uint64_t *output_sizes, size_t output_size_count, size_t *host_of) {
    if (p->immediate_size > 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "pipeline `%s` declares %u bytes of var<immediate> data, which a borrowed dispatch does not "
                       "take. Fix: upload the buffers (device.upload) and use prerecord_persistent_dispatch(..., "
                       "immediates=...) or record(..., immediates=...).", p->label, p->immediate_size);
    size_t outputs = 0;
    for (size_t i = 0; i < p->binding_count; i++) outputs += vn_binding_cleared_output(&p->bindings[i]);
    char list[1024];
    if (output_sizes != NULL && output_size_count != outputs) {
        vn_binding_list(p, vn_binding_cleared_output, list, sizeof list);
        return vn_fail(VN_ERROR_BINDING, "output_sizes has %zu entries, but the pipeline has %zu output(s) (%s). Fix: "
                       "give one size per output, in order.", output_size_count, outputs, list);
    }
    if (named) {
        vn_status st = vn_match_names(p, names, host_count, host_binding,
                                      "which is an output the dispatch allocates (output_sizes gives its size)", host_of);
        if (st != VN_OK) return st;
    } else if (host_count != p->binding_count - outputs) {
        vn_binding_list(p, host_binding, list, sizeof list);
        return vn_fail(VN_ERROR_BINDING, "%zu host buffer(s) were passed, but the pipeline takes %zu (%s). Fix: pass "
                       "one host buffer per non-output binding, in (group, binding) order.",
                       host_count, p->binding_count - outputs, list);
    } else {
        for (size_t i = 0, next = 0; i < p->binding_count; i++)
            host_of[i] = vn_binding_cleared_output(&p->bindings[i]) ? SIZE_MAX : next++;
    }
    for (size_t i = 0; i < p->binding_count && output_sizes == NULL; i++) {
        const vn_binding *b = &p->bindings[i];
        if (vn_binding_cleared_output(b) && b->min_size == 0)
            return vn_fail(VN_ERROR_BINDING, "output @group(%u) @binding(%u) `%s` is a runtime-sized array, so its "
                           "size cannot be inferred. Fix: pass output_sizes=[...] with its size in bytes.",
                           b->group, b->binding, b->name);
    }
    return VN_OK;
}

static vn_status dispatch_record_borrowed(vn_pipeline *pipeline, uint32_t forms, const void *const *host,
                                          const uint64_t *host_lens, const char *const *names, size_t host_count,
                                          const uint64_t *output_sizes, size_t output_size_count, uint32_t x,
                                          uint32_t y, uint32_t z, vn_dispatch **out) {
    if (out == NULL) return vn_null_out("vn_dispatch_record_borrowed", "out");
    *out = NULL;
    if (host_count > 0 && (host == NULL || host_lens == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "host_count is %zu but the host arrays are NULL. Fix: pass them.", host_count);
    vn_status st = vn_device_check(pipeline->device, "recording a borrowed dispatch");
    if (st == VN_OK) st = vn_check_forms(forms);
    if (st != VN_OK) return st;
    size_t n = pipeline->binding_count;
    vn_buffer **made = calloc(n ? n : 1, sizeof *made); /* binding order */
    vn_view *ins = calloc(n ? n : 1, sizeof *ins);
    vn_view *outs = calloc(n ? n : 1, sizeof *outs);
    size_t *host_of = calloc(n ? n : 1, sizeof *host_of);
    if (made == NULL || ins == NULL || outs == NULL || host_of == NULL) {
        free(made);
        free(ins);
        free(outs);
        free(host_of);
        return vn_fail_no_memory("binding tables", (n ? n : 1) * (sizeof *made + sizeof *ins + sizeof *outs + sizeof *host_of));
    }
    st = check_borrowed(pipeline, (forms & VN_BIND_NAMED) != 0, names, host_count, output_sizes, output_size_count,
                        host_of);
    size_t n_made = 0, n_in = 0, n_out = 0, next_size = 0;
    for (size_t i = 0; i < n && st == VN_OK; i++) {
        const vn_binding *b = &pipeline->bindings[i];
        vn_buffer *buf = NULL;
        if (vn_binding_cleared_output(b)) {
            uint64_t size = output_sizes != NULL ? output_sizes[next_size++] : b->min_size;
            st = vn_buffer_create_held(pipeline->device, size, VN_USAGE_DEFAULT, NULL, &buf);
        } else {
            size_t h = host_of[i];
            st = vn_buffer_create_held(pipeline->device, host_lens[h], VN_USAGE_DEFAULT, host[h], &buf);
        }
        /* Named by id in args' views, as any caller's buffers are (vn_bound_resolve
         * translates them). */
        st = vn_publish(st, &buf);
        if (st != VN_OK) break;
        made[n_made++] = buf;
        vn_view whole = {buf, 0, 0, 1};
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE) outs[n_out++] = whole;
        else ins[n_in++] = whole;
    }
    /* A borrowed dispatch takes no immediates: check_borrowed refused a pipeline with some.
     * Nothing to clear: its outputs are new buffers, which WebGPU zero-initialises (a
     * clear would write zeros over zeros), and its preserved bindings hold host data. */
    vn_dispatch_args args = {.forms = VN_BIND_POSITIONAL, .x = x, .y = y, .z = z,
                             .inputs = ins, .input_count = n_in, .outputs = outs, .output_count = n_out,
                             .keep_outputs = 1};
    if (st == VN_OK) st = dispatch_record(pipeline, &args, out);
    /* The dispatch took its own references to the buffers it binds; made[] holds ids. */
    for (size_t i = 0; i < n_made; i++) vn_buffer_release(made[i]);
    free(made);
    free(ins);
    free(outs);
    free(host_of);
    return st;
}

vn_status vn_dispatch_record_borrowed(vn_pipeline *pipeline, uint32_t forms, const void *const *host,
                                      const uint64_t *host_lens, const char *const *names, size_t host_count,
                                      const uint64_t *output_sizes, size_t output_size_count, uint32_t x, uint32_t y,
                                      uint32_t z, vn_dispatch **out) {
    VN_CALL1_OUT(dispatch_record_borrowed(pipeline, forms, host, host_lens, names, host_count, output_sizes,
                                          output_size_count, x, y, z, out),
                 out, pipeline, VN_KIND_PIPELINE);
}

/* Read only once the winner's store of SUBMITTED has published it (dispatch_replay). */
static uint64_t submitted_index(const vn_dispatch *d) {
    return atomic_load(&((vn_dispatch *)d)->state) == DISPATCH_SUBMITTED ? d->submission_index : 0;
}

uint64_t vn_dispatch_submission_index(const vn_dispatch *d) { VN_GET(uint64_t, submitted_index(d), 0, d, VN_KIND_DISPATCH); }

size_t vn_dispatch_output_count(const vn_dispatch *d) {
    VN_GET(size_t, d->bound.output_count, 0, d, VN_KIND_DISPATCH);
}

static vn_status output_at(const vn_dispatch *d, int64_t index, const vn_view **out) {
    return vn_bound_output(&d->bound, index, "dispatch", out);
}

static vn_status dispatch_output_len(const vn_dispatch *d, int64_t index, uint64_t *out) {
    if (out == NULL) return vn_null_out("vn_dispatch_output_len", "out");
    const vn_view *v = NULL;
    vn_status st = output_at(d, index, &v);
    if (st == VN_OK) *out = v->size;
    return st;
}

vn_status vn_dispatch_output_len(const vn_dispatch *d, int64_t index, uint64_t *out) {
    VN_CALL1(dispatch_output_len(d, index, out), d, VN_KIND_DISPATCH);
}

/* The output as bound, once the checks every read makes have passed. */
static vn_status readable_output(vn_dispatch *d, int64_t index, const vn_view **out) {
    vn_status st = output_at(d, index, out);
    if (st != VN_OK) return st;
    st = vn_device_check((*out)->buffer->device, "reading an output");
    if (st != VN_OK) return st;
    /* Reading before replay would return whatever the buffer held: refuse instead. */
    if (atomic_load(&d->state) != DISPATCH_SUBMITTED)
        return vn_fail(VN_ERROR_NOT_SUBMITTED,
                       "output %lld was read before the dispatch was replayed, so it holds no result yet. Fix: call "
                       "replay() first.", (long long)index);
    return VN_OK;
}

static vn_status dispatch_read_output_async(vn_dispatch *d, int64_t index, vn_pending_read **out) {
    const vn_view *v = NULL;
    vn_status st = readable_output(d, index, &v);
    if (st != VN_OK) return st;
    /* The copy is queued after this dispatch's submission, so it sees its results. The
     * dispatch holds the buffer for the call. */
    return vn_view_read_async_held(v, out);
}

vn_status vn_dispatch_read_output_async(vn_dispatch *d, int64_t index, vn_pending_read **out) {
    VN_CALL1_OUT(dispatch_read_output_async(d, index, out), out, d, VN_KIND_DISPATCH);
}

static vn_status dispatch_read_output(vn_dispatch *d, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                                      vn_pending_read **pending) {
    if (written != NULL) *written = 0;
    if (pending != NULL) *pending = NULL;
    const vn_view *v = NULL;
    vn_status st = readable_output(d, index, &v);
    return st != VN_OK ? st : vn_output_read(v, index, dst, capacity, written, pending);
}

vn_status vn_dispatch_read_output(vn_dispatch *d, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                                  vn_pending_read **pending) {
    VN_CALL1_OUT(dispatch_read_output(d, index, dst, capacity, written, pending), pending, d, VN_KIND_DISPATCH);
}

void vn_dispatch_release(vn_dispatch *d) { vn_id_release(d, VN_KIND_DISPATCH); }
