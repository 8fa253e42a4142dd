/* layer_work.h - layer 5, the top: turning resources into GPU work. Encoding a dispatch and
 * its clears into a pass (encode.c), GPU timing (timing.c), readback (readback.c),
 * submissions (submission.c), pre-recorded dispatches (record.c), recordings, sequences
 * and their replay (replay.c), writes and copies (transfer.c). */
#ifndef VN_LAYER_WORK_H
#define VN_LAYER_WORK_H

#include "layer_resources.h"

/* ---- readback (readback.c) ---------------------------------------------------- */

/* Copy `nbytes` of `src` from `offset` (any byte; src has COPY_SRC usage and an
 * allocation of at least round_up(offset + nbytes, 4) bytes) into dst, after all work
 * submitted before the call: the readback primitive's copying form (the pinning form is
 * vn_pending_read_pin). The copy's submit checks `guard` under the life lock (NULL for
 * the layer's own buffers). Waits one time slice at most: VN_OK, or VN_PENDING with
 * *pending the read in flight (finish it with vn_pending_read_finish; NULL pending: it
 * is dropped), or with *pending NULL when it has not started (vn_submit_ready). */
vn_status vn_readback(vn_device *device, WGPUBuffer src, uint64_t offset, uint64_t nbytes, void *dst,
                      const vn_submit_guard *guard, vn_pending_read **pending);
/* Queue the copy and its map: a pending read (a handle) the caller owns. VN_PENDING
 * (*out NULL): not started, as vn_submit_ready says. */
vn_status vn_read_start(vn_device *device, WGPUBuffer src, uint64_t offset, uint64_t nbytes,
                        const vn_submit_guard *guard, vn_pending_read **out);
/* The view can be read back: COPY_SRC usage (the readback's submit checks the rest). */
vn_status vn_view_readable(const vn_view *view, const char *what);
/* vn_pending_read_finish of a read the C layer holds itself (a submission's ticks). */
vn_status vn_pending_read_finish_held(vn_pending_read *r, void *dst, uint64_t capacity);
/* vn_view_read_async of a resolved view whose buffer the caller holds. */
vn_status vn_view_read_async_held(const vn_view *view, vn_pending_read **out);
/* A recording's or dispatch's output `index`, bound as `v` (its buffer held by the
 * recording), copied into dst after all work submitted so far: the one output read both
 * kinds use (each checks its index and state first). *written and *pending as for
 * vn_dispatch_read_output. */
vn_status vn_output_read(const vn_view *v, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                         vn_pending_read **pending);

/* GPU timing of one encode: a query set, the passes it times, and where the
 * resolved ticks go. Passes open through vn_begin_pass, which assigns writes. */
typedef struct vn_timing {
    vn_timing_mode mode;
    uint32_t passes;      /* passes the encode will open (counted before encoding) */
    uint32_t next_pass;   /* while encoding */
    uint32_t queries;
    WGPUQuerySet query_set;
    WGPUBuffer resolve;   /* QUERY_RESOLVE | COPY_SRC: read back through vn_readback */
} vn_timing;

/* Inside a scope: the query set and buffers for `passes` passes (nothing for NONE). */
vn_status vn_timing_prepare(vn_device *device, vn_timing_mode mode, uint32_t passes, vn_timing *timing);
/* After the passes: resolve the queries into the resolve buffer. */
void vn_timing_resolve(vn_timing *timing, WGPUCommandEncoder encoder);
void vn_timing_release(vn_timing *timing);
/* Start reading the resolved timestamps (the copy is queued after the timed submission):
 * a pending read of timing->queries ticks. */
vn_status vn_timing_read_start(vn_device *device, vn_timing *timing, vn_pending_read **out);
/* The ticks read into ns (ns[0] total, ns[1..] per pass in per-dispatch mode; ns holds
 * 1 + passes values); *count gets how many. */
void vn_timing_convert(const vn_device *device, const vn_timing *timing, const uint64_t *ticks, uint64_t *ns,
                       size_t *count);

/* Submit one finished command buffer (holding the submit lock, after `guard`'s check
 * under it; guard may be NULL) and track its completion; *out gets a submission the
 * caller owns, which takes over the timing resources (timing may be NULL). Releases cb. */
vn_status vn_submit_tracked(vn_device *device, WGPUCommandBuffer cb, const char *what, vn_timing *timing,
                            const vn_submit_guard *guard, vn_submission **out);
/* The same with the submit lock already held by the caller (either side) and checked. */
vn_status vn_submit_tracked_locked(vn_device *device, WGPUCommandBuffer cb, vn_timing *timing, vn_submission **out);

/* ---- encoding and submitting (encode.c) -------------------------------------------
 *
 * Every command buffer goes one road: vn_encode_begin opens an encoder inside an error
 * scope, the work is encoded, vn_encode_finish finishes it and pops the scope, and only
 * a buffer whose scope popped clean reaches vn_submit_locked (wgpu-native aborts the
 * process on submitting an invalid one), under the life lock (vn_submit_begin*, whose
 * checks make a submit to a destroyed device or of a buffer wgpu-py mapped impossible).
 * The one other submit is waits.c's empty one (vn_device_flush_writes: no command
 * buffer, nothing to validate). */

/* A command encoder labelled `label` (NULL: no descriptor) inside an error scope. */
WGPUCommandEncoder vn_encode_begin(vn_device *device, const char *label);
/* Finish and release the encoder and pop the scope: VN_OK with *cb the finished command
 * buffer only when the scope popped clean, else the scope's error naming `what` with
 * `fix`, and *cb NULL (the buffer released). */
vn_status vn_encode_finish(vn_device *device, WGPUCommandEncoder encoder, const char *what, const char *fix,
                           WGPUCommandBuffer *cb);
/* The submit of a command buffer: cb (cleanly finished, vn_encode_finish) to the queue,
 * then released. The caller holds the life lock, either side, its checks made. Returns
 * the submission index. */
WGPUSubmissionIndex vn_submit_locked(vn_device *device, WGPUCommandBuffer cb);
/* vn_submit_locked inside vn_submit_begin_guarded / vn_submit_end (guard may be NULL);
 * refused, cb is released unsubmitted. */
vn_status vn_submit_guarded(vn_device *device, WGPUCommandBuffer cb, const char *what, const vn_submit_guard *guard);

/* ---- encoding a bound dispatch (encode.c) ------------------------------------ */

/* Begin a compute pass (timing.c's queries), with timestamp writes when timing (may be NULL) asks. */
WGPUComputePassEncoder vn_begin_pass(WGPUCommandEncoder encoder, vn_timing *timing);

/* Per-dispatch timing gives every dispatch a pass of its own, and its clears go
 * outside the timed passes (clear_buffer), so each time is the dispatch's alone. */
static inline bool vn_timing_splits(const vn_timing *t) { return t != NULL && t->mode == VN_TIMING_PER_DISPATCH; }
/* One compute pass with the non-preserved outputs' clears and the dispatch; clears
 * that need clear_buffer (all of them when timing splits) go before the pass. */
void vn_bound_encode(const vn_bound *bound, WGPUCommandEncoder encoder, vn_timing *timing);

/* True when some clear of the bound dispatch is a clear_buffer, which ends the pass. */
bool vn_bound_clears_outside(const vn_bound *bound, const vn_timing *timing);
/* Inside an open compute pass: set pipeline and bind groups where they differ from
 * *state (updated), the dispatch's immediates (always: each step may carry its own),
 * then dispatch. */
typedef struct vn_pass_state {
    WGPUComputePipeline pipeline;
    WGPUBindGroup groups[8];
} vn_pass_state;
void vn_bound_dispatch_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state);
/* Outside a pass: the clears that go there (see vn_bound_clears_outside). */
void vn_bound_encode_clears(const vn_bound *bound, WGPUCommandEncoder encoder, const vn_timing *timing);
/* Inside an open pass: the fill dispatches of the clears that go there. */
void vn_bound_fill_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state,
                           const vn_timing *timing);

/* Whether the clear is a clear_buffer outside the pass (always, when timing splits). */
static inline bool vn_clear_outside(const vn_clear *clear, const vn_timing *timing) {
    return clear->pipeline == NULL || vn_timing_splits(timing);
}
void vn_clear_encode_outside(const vn_clear *clear, WGPUCommandEncoder encoder);
void vn_clear_fill_in_pass(const vn_clear *clear, WGPUComputePassEncoder pass, vn_pass_state *state);

/* ---- what the C layer shows of its insides (introspect.c) ---------------------- */

/* Buffer.write bytes queued and not yet submitted (VN_INTROSPECT_QUEUED_WRITE_BYTES,
 * transfer.c). */
uint64_t vn_debug_queued_write_bytes(const vn_device *device);

#endif /* VN_LAYER_WORK_H */
