/* recording.c - Recording: one dispatch resolved once (pipeline, bind groups, dispatch
 * size, clears, immediates), replayed by re-encoding it: WebGPU command buffers are
 * single-submit and it has no compute bundles, so a replay is encoder calls and one
 * queue submit, in C. And its outputs' reads. */
#include <stdlib.h>

#include "layer_work.h"

static uint32_t recording_passes_cb(const void *r, uint32_t n, vn_timing *t) { return vn_recording_passes(r, n, t); }
static void encode_recording_cb(const void *r, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    vn_recording_encode(r, enc, n, t);
}
vn_status vn_recording_submittable(const void *r) {
    return vn_bound_submittable(&((const vn_recording *)r)->bound, "Recording.replay()");
}
static const vn_encode_job recording_job = {recording_passes_cb, encode_recording_cb, vn_recording_submittable};

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
    if (r == NULL) return vn_fail_no_memory("a recording", sizeof *r);
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

static vn_status recording_replay(vn_recording *r, uint32_t n, vn_timing_mode timing, vn_submission **out) {
    if (out == NULL) return vn_null_out("vn_recording_replay", "out");
    *out = NULL;
    vn_status st = vn_replay_count_check(n, 1, "Recording");
    if (st != VN_OK) return st;
    const vn_pipeline *p = r->bound.pipeline;
    return vn_encode_and_submit(p->device, &recording_job, r, n, timing, p->replay_what, out);
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

void vn_recording_release(vn_recording *r) { vn_id_release(r, VN_KIND_RECORDING); }
