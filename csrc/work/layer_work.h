/* layer_work.h - layer 5, the top: turning resources into GPU work. Encoding a dispatch and
 * its clears into a pass, and the pass walk of every replay (encode.c), GPU timing
 * (timing.c), readback (readback.c; its staging ring, staging.c; the reads of buffers
 * and views, buffer_read.c), submissions (submission.c), pre-recorded dispatches
 * (prerecorded.c), recordings (recording.c), sequences (sequence.c), batches of them
 * (batch.c), submitting those whole or in parts (submit.c), writes and copies (transfer.c,
 * the byte merge and shift kernels; buffer_write.c; buffer_copy.c). */
#ifndef VN_LAYER_WORK_H
#define VN_LAYER_WORK_H

#include "../resources/layer_resources.h"

/* ---- readback (readback.c, staging.c, buffer_read.c) ----------------------------- */

/* A MAP_READ buffer kept on the device between readbacks: creating one per
 * readback costs an allocation and, for large ones, page faults on every use. */
typedef struct vn_staging {
    WGPUBuffer buffer;
    uint64_t size;
    struct vn_staging *next;
} vn_staging;

/* The device's readback state (its VN_PART_READBACK), which the device holds only as a
 * pointer: made by its first read, freed with it (readback.c's readback_release). */
struct vn_readback {
    vn_mutex lock;                        /* rank 6 of the lock order (layer_object.h) */
    vn_staging *free;                     /* the ring of staging buffers kept for reuse */
    size_t free_count;
    struct vn_pending_read *abandoned;    /* reads released in flight (readback.c's readback_reap) */
};

/* A staging buffer of at least `size` bytes for a read on `device` (staging.c): a free
 * one of the ring of `readback` (the device's readback state) that fits, else a new one. */
vn_status vn_staging_acquire(struct vn_readback *readback, vn_device *device, uint64_t size, vn_staging **out);
/* Give a staging buffer (unmapped) back to the ring, or release it when the ring is full. */
void vn_staging_return(vn_device *device, vn_staging *staging);
/* Release a staging buffer (mapped or not: wgpu unmaps it) and its record. */
void vn_staging_destroy(vn_staging *staging);
/* The rule of every read into caller memory, its one owner (readback.c): `dst`,
 * holding `capacity` bytes, takes the `nbytes` of `source` ("the buffer", "the read";
 * with `index` other than VN_NO_INDEX: "output" and its index); `what` names the call.
 * VN_OK, else VN_ERROR_INVALID_ARGUMENT with the sizes. Builds no text unless it fails:
 * every read passes here. */
#define VN_NO_INDEX INT64_MIN
vn_status vn_check_destination(const char *what, const char *source, int64_t index, const void *dst,
                               uint64_t capacity, uint64_t nbytes);

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
 * process on submitting an invalid one), under the life lock (vn_life_lock_read*, whose
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
/* vn_submit_locked inside vn_life_lock_read_guarded / vn_life_unlock_read (guard may be NULL);
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

/* ---- entry points over one view (buffer_read.c, buffer_write.c) ----------------- */

/* The body of a public call on one view (buffer.read, read_async, write): bracketed as
 * VN_CALL* are, since a view is acquired by its own rule (vn_view_acquire); `op`, an
 * expression over `v`, runs with the view's buffer held, and the handle it leaves in
 * `slot` (NULL: none) is published. `st` gets the status. */
#define VN_VIEW_CALL(st, view, what, v, op, slot)          \
    do {                                                   \
        vn_call_guard_enter();                             \
        (st) = vn_view_acquire((view), (what), &(v));      \
        if ((st) == VN_OK) {                               \
            (st) = (op);                                   \
            vn_unacquire((v).buffer);                      \
            (st) = vn_publish((st), (slot));               \
        }                                                  \
        vn_call_guard_leave();                             \
    } while (0)

/* ---- writes and copies (transfer.c, buffer_write.c, buffer_copy.c) -------------- */

/* A copy's range, the rule Device.copy and Sequence.copy share (buffer_copy.c): both
 * offsets inside their spans (src_len, dst_len bytes), *nbytes (NULL: as much as fits)
 * inside both; *n gets the count. A refusal's Fix names the most that fits, rounded
 * down to `align` (1 for Device.copy's byte-exact copy, 4 for a sequence's word copy). */
vn_status vn_copy_range(uint64_t src_len, uint64_t src_offset, uint64_t dst_len, uint64_t dst_offset,
                        const uint64_t *nbytes, uint64_t align, uint64_t *n);

/* The device's transfer kernels (transfer.c): the byte merge and the shifted copy. */
struct vn_transfer {
    WGPUShaderModule module;
    WGPUBindGroupLayout layout;
    WGPUComputePipeline pipeline;
    WGPUShaderModule shift_module;
    WGPUBindGroupLayout shift_layout;
    WGPUComputePipeline shift_pipeline;
    WGPUShaderModule patch_module;
    WGPUBindGroupLayout patch_layout;
    WGPUComputePipeline patch_pipeline;
    uint32_t max_groups;
    uint64_t chunk_bytes;
};

/* One merge: B = the destination's words [dst_at, dst_at + b_bytes), of which bytes
 * [lo, hi) (counted from dst_at) take A's bytes from a_lo on. */
typedef struct vn_chunk {
    WGPUBuffer src;     /* A's words come from here; NULL: from the host (host_a) */
    uint64_t src_at;    /* 4-aligned */
    uint64_t a_at;      /* where this chunk's A starts in region A (4-aligned) */
    uint64_t a_bytes;   /* a multiple of 4 */
    uint64_t dst_at;    /* 4-aligned */
    uint64_t b_bytes;   /* a multiple of 4: roundup(hi) */
    uint32_t lo, hi, a_lo;
    bool read_first, read_last; /* copy B's first / last word in from the destination */
} vn_chunk;

static inline uint64_t vn_round_up4(uint64_t n) { return (n + 3) & ~(uint64_t)3; }

/* Whole words copied straight, before the chunks (n 0: none): one CopyBufferToBuffer;
 * or, where source and destination shift within their words (shift non-NULL), all n
 * bytes from src_at to dst_at (any offsets, a partial head and tail included) by one
 * dispatch of the shift kernel over both buffers bound as storage (transfer.c's
 * shift_fits). */
typedef struct vn_words_copy {
    WGPUBuffer src;
    uint64_t src_at, dst_at, n;
    const struct vn_transfer *shift;
    uint64_t src_bind, dst_bind; /* the bindings' offsets (shift only) */
} vn_words_copy;

/* Inside a scope (its lock orders the first use): the device's transfer kernels, made on first use. */
vn_status vn_transfer_get(vn_device *device, struct vn_transfer **out);
/* A chunk setting destination bytes [d0, d1) from source bytes at s (src NULL: the host's). */
vn_chunk vn_merge_chunk(WGPUBuffer src, uint64_t s, uint64_t d0, uint64_t d1, uint64_t len);
/* Inside a scope: `pre` (may be NULL), then the chunks through one T, encoded into *out. */
vn_status vn_encode_merge(vn_device *device, WGPUBuffer dst, const vn_words_copy *pre, vn_chunk *c, size_t count,
                          bool reverse, const void *host_a, uint64_t host_a_bytes, WGPUCommandBuffer *out);
/* A word a write covers in part: the bytes `mask` names of the word at byte `at`
 * (4-aligned) take those of `value` (little-endian, as the buffer holds them). */
typedef struct vn_word_patch {
    uint64_t at;
    uint32_t mask, value;
} vn_word_patch;
/* Inside a scope: words[0..count) (1 or 2, ascending) set in place by one tiny dispatch
 * binding the buffer as storage, into *out; *out NULL when it cannot be bound so. */
vn_status vn_encode_patch(vn_device *device, const vn_buffer *b, const vn_word_patch *words, size_t count,
                          WGPUCommandBuffer *out);
/* Pop the scope; submit cb (under the life lock) only when everything encoded cleanly. */
vn_status vn_transfer_submit(vn_device *device, const char *what, vn_status st, WGPUCommandBuffer cb);
/* VN_OK, or why buffer b cannot have a partial word read back in (no COPY_SRC). */
vn_status vn_need_copy_src(const vn_buffer *b, const char *what, uint64_t at, uint64_t nbytes);
/* A shifted copy as one dispatch of the shift kernel (head and tail included); n 0 when
 * the kernel cannot take it (transfer.c's shift_fits). */
vn_words_copy vn_shifted_words(const vn_device *device, const vn_buffer *sb, const vn_buffer *db, uint64_t s0,
                               uint64_t d0, uint64_t d1, const struct vn_transfer *x);

/* ---- what the C layer shows of its insides (introspect.c) ---------------------- */

/* Buffer.write bytes queued and not yet submitted (VN_INTROSPECT_QUEUED_WRITE_BYTES,
 * buffer_write.c). */
uint64_t vn_debug_queued_write_bytes(const vn_device *device);

/* ---- recordings, sequences and batches: what they hold -------------------------------
 *
 * A recording (recording.c) is one resolved dispatch, a sequence (sequence.c) steps of
 * dispatches, copies and clears, a batch (batch.c) items of both; encode.c's pass walk
 * encodes all three, submit.c submits them in one command buffer or in parts. */

struct vn_recording {
    vn_object obj; /* VN_KIND_RECORDING */
    vn_bound bound;
};

typedef enum vn_step_kind { VN_STEP_DISPATCH, VN_STEP_COPY, VN_STEP_CLEAR } vn_step_kind;

typedef struct vn_step {
    vn_step_kind kind;
    vn_bound bound;      /* VN_STEP_DISPATCH: its clears are none when added with keep_outputs */
    vn_buffer *src, *dst; /* VN_STEP_COPY (src, dst), VN_STEP_CLEAR (dst); referenced */
    /* VN_STEP_COPY: nbytes from src_offset to dst_offset; VN_STEP_CLEAR: nbytes from dst_offset */
    uint64_t nbytes, src_offset, dst_offset;
    vn_clear clear;       /* VN_STEP_CLEAR: a fill in the pass, or clear_buffer */
} vn_step;

struct vn_sequence {
    vn_object obj; /* VN_KIND_SEQUENCE; obj.id orders its lock among others' (batch.c) */
    vn_device *device;
    vn_mutex lock; /* add/copy/clear against a replay on another thread */
    vn_step *steps;
    size_t count, capacity;
    /* These steps have been encoded cleanly in one command buffer (a replay of them
     * succeeded): later replays may go in several submits (sequence.c, replay_in_submits). Any step
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


/* ---- the pass walk (encode.c) -----------------------------------------------------
 *
 * One walk decides where the compute passes of a recording's, sequence's or batch's
 * encode begin and end. Each *_passes is that walk counting the passes it would begin,
 * without an encoder (timing sizes its query set by it), each *_encode the same walk
 * encoding: there is no second walk to drift from the first. */
uint32_t vn_recording_passes(const vn_recording *recording, uint32_t n, vn_timing *timing);
/* n launches: with nothing to clear outside a pass they share one (each its fills and
 * its dispatch); otherwise each is its clears, then its pass. */
void vn_recording_encode(const vn_recording *recording, WGPUCommandEncoder encoder, uint32_t n, vn_timing *timing);
uint32_t vn_sequence_passes(const vn_sequence *sequence, uint32_t n, vn_timing *timing);
/* Steps [first, end) of launches of the sequence, counted across launches (step i of
 * launch r is r * count + i): consecutive dispatches share a pass; copies and
 * clear_buffer clears end it. */
void vn_steps_encode(const vn_sequence *sequence, WGPUCommandEncoder encoder, size_t first, size_t end,
                     vn_timing *timing);
/* Every item once, in order, each in passes of its own. */
uint32_t vn_batch_passes(const vn_work *work, size_t count, vn_timing *timing);
void vn_batch_encode(const vn_work *work, size_t count, WGPUCommandEncoder encoder, vn_timing *timing);

/* ---- submitting recordings, sequences and batches (submit.c) ----------------------- */

/* What one encode covers: how many passes it begins (for timing: the pass walk,
 * counting) and how to encode it. */
typedef struct vn_encode_job {
    uint32_t (*passes)(const void *what, uint32_t n, vn_timing *timing);
    void (*encode)(const void *what, WGPUCommandEncoder encoder, uint32_t n, vn_timing *timing);
    /* VN_OK when no buffer it uses is mapped or destroyed by wgpu-py (submitting one
     * would abort the process); checked under the life lock, right before the submit. */
    vn_status (*submittable)(const void *what);
} vn_encode_job;

/* n launches of `what` in one command buffer: encoded inside error scopes (timed as
 * `mode` asks), then submitted only when it finished cleanly; *out the submission. */
vn_status vn_encode_and_submit(vn_device *device, const vn_encode_job *job, const void *what, uint32_t n,
                               vn_timing_mode mode, const char *label, vn_submission **out);
/* VN_OK when n launches of `steps` steps each fit one command buffer (VN_MAX_LAUNCHES_PER_SUBMIT
 * steps, or one launch of any length); else why not, naming `what` ("Recording", "Sequence"). */
vn_status vn_replay_count_check(uint32_t n, size_t steps, const char *what);

/* How work of `total` steps goes in parts (submit.c says the rule once). */
typedef struct vn_parts_rule {
    uint64_t first, most;
    bool grows;
} vn_parts_rule;

/* What a submit in parts encodes: the next `steps` steps of its work, in order, into
 * the encoder (the work keeps its own cursor). */
typedef struct vn_parts_job {
    const char *label, *what; /* the encoders' label; "replay" or "submit", for the error */
    const vn_submit_guard *guard;
    vn_parts_rule rule;
    /* Keep at most VN_MAX_SUBMITS_IN_FLIGHT parts running, waiting (in C, vn_fence_wait_held)
     * for the part before last before encoding the next: each holds encoder memory until
     * the GPU has run it. Without it every part is queued at once. */
    bool bounded;
    void (*encode_next)(void *work, WGPUCommandEncoder encoder, uint64_t steps);
    void *work;
} vn_parts_job;

/* The one loop that submits work in parts, as one unit (see submit.c); *out tracks the
 * last part. */
vn_status vn_submit_parts(vn_device *device, const vn_parts_job *job, uint64_t total, vn_submission **out);

/* ---- what a batch needs of recordings and sequences (recording.c, sequence.c) ------- */

/* vn_encode_job.submittable of a recording, of a sequence (s->lock held). */
vn_status vn_recording_submittable(const void *recording);
vn_status vn_sequence_submittable(const void *sequence);
/* The sequence's distinct buffers, indexed for vn_sequence_submittable unless they are
 * (s->lock held; out of memory they stay unindexed, and the check walks the steps). */
void vn_sequence_index_buffers(vn_sequence *sequence);

#endif /* VN_LAYER_WORK_H */
