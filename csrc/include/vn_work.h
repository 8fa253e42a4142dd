/* vn_work.h - part of the public C API: submissions, recordings, sequences, batches,
 * asynchronous readback. vyre_native.h includes it inside its cdef section, after the
 * parts before it, whose types it uses: include vyre_native.h, never this alone. It
 * holds only what that section may (scripts/ffi_build.py reads it in where it is included):
 * no include guard, no preprocessor line but a table's use. */

/* ---- submissions (csrc/work/submission.c) ----------------------------------------- */

typedef struct vn_submission vn_submission;

/* Timing modes of a replay or submit, where the device has timestamp queries. */
typedef enum vn_timing_mode {
    VN_TIMING_NONE = 0,
    VN_TIMING_TOTAL = 1,        /* GPU time from the first pass's start to the last's end */
    VN_TIMING_PER_DISPATCH = 2  /* each dispatch in its own pass, timed on its own */
} vn_timing_mode;

/* The queue submission index. */
uint64_t vn_submission_index(const vn_submission *submission);
/* GPU times in nanoseconds, after waiting for the work: out[0] is the total, and in
 * VN_TIMING_PER_DISPATCH mode out[1..] each dispatch's time. *count gets how many
 * values exist (0 when the submission was not timed). VN_PENDING: call again. */
vn_status vn_submission_gpu_times(vn_submission *submission, uint64_t *out, size_t capacity, size_t *count);
/* 1 when the submission's work has completed, 0 when not yet (never blocks); minus a
 * status (vn_last_error says why) when it never will here: -VN_ERROR_DEVICE_LOST, or
 * -VN_ERROR_FORKED for a submission inherited across fork(), or a handle error. */
int vn_submission_done(vn_submission *submission);
/* Wait (GIL released) until the work completes, for at most one time slice: VN_OK,
 * or VN_PENDING (call again). timeout_s < 0 waits without limit; otherwise *waited_s
 * (0 before the first call) accumulates the time waited across calls, and the call
 * that takes it to timeout_s fails with VN_ERROR_TIMEOUT (the work keeps running). */
vn_status vn_submission_wait(vn_submission *submission, double timeout_s, double *waited_s);
void vn_submission_release(vn_submission *submission);

/* ---- replayable recordings and sequences (csrc/work/recording.c, sequence.c, batch.c) */

typedef struct vn_recording vn_recording;
typedef struct vn_sequence vn_sequence;

/* Same binding rules, checks, clears and immediates as vn_dispatch_record, but
 * nothing is encoded yet: each replay re-encodes from the held pipeline, bind groups
 * and immediates (copied here), inside error scopes, and submits only a cleanly
 * encoded command buffer. */
vn_status vn_recording_create(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_recording **out);
/* Encode n launches (1..VN_MAX_LAUNCHES_PER_SUBMIT) into one command buffer and submit
 * it once. Without outputs to clear outside a pass the n dispatches share one compute
 * pass (each launch's fills, then its dispatch); otherwise each launch is its clears
 * then its pass. VN_PENDING (*out NULL): a CPU adapter's queue still runs earlier
 * work, and submitting now would block inside the driver; call again. The same holds
 * for every replay, submit and read on such a device. */
vn_status vn_recording_replay(vn_recording *recording, uint32_t n, vn_timing_mode timing, vn_submission **out);
/* The rule for splitting replay(n) of work of `steps` steps a launch into submits (the
 * parts rule a long sequence replay and vn_device_submit in parts follow too): returns
 * the launches per part (n itself when one submit holds them all, or when timed: the
 * timestamp queries must span one command buffer, and vn_*_replay refuses a timed n past
 * the bound), the last part what is left; at most VN_MAX_SUBMITS_IN_FLIGHT parts
 * running, so the caller waits for the oldest before the next part
 * (each holds encoder memory until the GPU has run it). The caller makes one
 * vn_recording_replay or vn_sequence_replay call per part and waits between parts
 * itself, in time slices, so that a long replay returns to it between parts (Python's
 * replay(n): Ctrl-C interrupts it there). A value returned, not written through
 * pointers: every replay asks, and out-parameters would cost the caller an allocation. */
uint32_t vn_replay_split(uint32_t n, size_t steps, vn_timing_mode timing);
size_t vn_recording_output_count(const vn_recording *recording);
/* The output as bound: its buffer (a new reference for the caller), offset and size in
 * bytes; or VN_ERROR_OUTPUT_INDEX. */
vn_status vn_recording_output(const vn_recording *recording, int64_t index, vn_view *out);
/* Output reads, as the vn_dispatch_* ones (same arguments, same outcomes) but after all
 * work submitted so far (every replay of the recording included): a recording can be
 * read before its first replay (its outputs then hold what they held). */
vn_status vn_recording_output_len(const vn_recording *recording, int64_t index, uint64_t *out);
vn_status vn_recording_read_output_async(vn_recording *recording, int64_t index, vn_pending_read **out);
vn_status vn_recording_read_output(vn_recording *recording, int64_t index, void *dst, uint64_t capacity,
                                   uint64_t *written, vn_pending_read **pending);
void vn_recording_release(vn_recording *recording);

vn_status vn_sequence_create(vn_device *device, vn_sequence **out);
/* Append a dispatch (args as for vn_dispatch_record): its non-preserved outputs are
 * cleared right before it (as a recording does), or, with args->keep_outputs, left as
 * the previous steps left them. Each step keeps its own copy of its immediates (as for
 * vn_dispatch_record), set right before its dispatch: per-step values with no buffer
 * and no bind-group change. */
vn_status vn_sequence_add(vn_sequence *sequence, vn_pipeline *pipeline, const vn_dispatch_args *args);
/* Append a GPU copy of *nbytes (nbytes NULL: as much as fits from the offsets) from
 * src_offset into the src view to dst_offset into the dst view: whole words (both
 * offsets, counted in their buffers, and nbytes multiples of 4); any other byte range is
 * vn_device_copy's. */
vn_status vn_sequence_copy(vn_sequence *sequence, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                           uint64_t src_offset, uint64_t dst_offset);
/* Append a clear of the view's bytes to zero. */
vn_status vn_sequence_clear(vn_sequence *sequence, const vn_view *buffer);
size_t vn_sequence_length(const vn_sequence *sequence);
/* Encode every step n times into one command buffer (consecutive dispatches share
 * a compute pass) and submit it once; n > 1 needs n * steps <= VN_MAX_LAUNCHES_PER_SUBMIT.
 * Once these steps have been replayed whole, an untimed replay of VN_SPLIT_MIN_STEPS
 * steps or more on an adapter whose submits do not wait for earlier work (a GPU, not a
 * CPU adapter) goes in several submits instead, in order (see VN_SPLIT_FIRST_STEPS), and
 * the submission returned is the last. The replay holds the device's life lock for
 * writing across its parts, so no other submit, queued write, readback, wgpu-py map or
 * destroy comes between them. Should a later part fail (the device lost meanwhile), the
 * error says how many steps were submitted before it. */
vn_status vn_sequence_replay(vn_sequence *sequence, uint32_t n, vn_timing_mode timing, vn_submission **out);
void vn_sequence_release(vn_sequence *sequence);

/* One item of a batch submit: exactly one of the two is set. */
typedef struct vn_work {
    vn_recording *recording;
    vn_sequence *sequence;
} vn_work;

/* Encode every item once, in order, into one command buffer; one queue submit. More
 * than one item of more than VN_MAX_LAUNCHES_PER_SUBMIT steps in all (a recording is one
 * step, a sequence its length): submits of at most that many steps each, in order, at
 * most VN_MAX_SUBMITS_IN_FLIGHT in flight (the call waits, inside C and not in time
 * slices, for the GPU to run all but the last two: see "Waits" above), run as one unit:
 * no other submit, write or readback of the device lands between them.
 * Timed, such a batch is VN_ERROR_INVALID_ARGUMENT (its queries span one command buffer). */
vn_status vn_device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                           vn_submission **out);

/* ---- asynchronous readback (csrc/work/readback.c) -------------------------------- */

/* Queue a copy of the view's bytes into a staging buffer from the device's ring
 * and return at once; many may be in flight. VN_PENDING (*out NULL): a CPU adapter's
 * queue still runs earlier work; call again. */
vn_status vn_view_read_async(const vn_view *view, vn_pending_read **out);
/* The whole-buffer form. */
vn_status vn_buffer_read_async(vn_buffer *buffer, vn_pending_read **out);
uint64_t vn_pending_read_len(const vn_pending_read *read);
/* 1 once the read's data is in its staging buffer (finishing it will not wait), else 0.
 * Never blocks: it only polls the device. Minus a status (vn_last_error says why) when it
 * never will here, as vn_submission_done: -VN_ERROR_DEVICE_LOST, -VN_ERROR_RELEASED (the
 * device closed), -VN_ERROR_FORKED, or a handle error. */
int vn_pending_read_done(vn_pending_read *read);
/* Wait for the copy, then copy byte_len bytes into dst (capacity >= byte_len).
 * VN_PENDING: one time slice passed first, nothing was copied; call again. Any number of
 * callers, on any threads, may finish one read, each as often as it likes: the first to
 * find the data back takes the staging buffer (pinned, kept by the read until its
 * release), and every call copies from it; a failure is kept and given to every caller. */
vn_status vn_pending_read_finish(vn_pending_read *read, void *dst, uint64_t capacity);
/* A read's bytes handed out in place: the staging buffer they sit in stays mapped and
 * pinned (out of the device's staging ring) until vn_mapping_release, and nothing
 * unmaps, reuses or frees it before then: vn_device_destroy on its device defers the
 * GPU device's destruction until the last pin goes, and closing or releasing the
 * device keeps its record alive for the mapping (vn_device_destroy_shared, wgpu-py's
 * destroy of a shared device, defers as vn_device_destroy does). Holds no lock between
 * calls. */
typedef struct vn_mapping vn_mapping;
/* Wait for the read, then pin its staging buffer: *out gets a reference of its own on
 * the read's one mapping and *data its byte_len (vn_pending_read_len) bytes, readable
 * until that reference's vn_mapping_release. Every caller gets the same memory (read
 * only). VN_PENDING and many callers as for vn_pending_read_finish. */
vn_status vn_pending_read_pin(vn_pending_read *read, vn_mapping **out, const void **data);
/* Unpin: unmap the staging buffer and give it back to the ring. Never waits for the
 * GPU; safe after the device was closed, released or destroyed (the last unpin of a
 * destroyed device destroys it). In a fork() child an inherited mapping is only
 * forgotten (nothing is unmapped). */
void vn_mapping_release(vn_mapping *mapping);
/* Release without waiting: a read still in flight is handed to its device, which
 * returns its staging buffer once the copy completes (at a later poll). */
void vn_pending_read_release(vn_pending_read *read);

/* The release of a handle of any kind (NULL and anything that is not a live handle are
 * ignored). A creating call's out-parameter (`vn_<kind> **`, or the vn_view that
 * vn_recording_output writes, whose buffer holds a reference the call took) owns what the
 * call writes into it: a caller that cannot be interrupted between the call and taking
 * the result (Python's owner, csrc/python/owner.c, *is* that out-parameter) releases it
 * with this. */
void vn_handle_release(void *handle);
