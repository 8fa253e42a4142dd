/* vn_dispatch.h - part of the public C API: pre-recorded dispatches and the binding
 * forms. vyre_native.h includes it inside its cdef section, after the parts before it,
 * whose types it uses: include vyre_native.h, never this alone. It holds only what that
 * section may (scripts/ffi_build.py reads it in where it is included): no include guard, no
 * preprocessor line but a table's use. */

/* ---- pre-recorded dispatches (csrc/work/prerecorded.c, csrc/work/readback.c) ------------- */

/* Which of the two ways of naming a dispatch's buffers a call used (bits). */
typedef enum vn_bind_form {
    VN_BIND_POSITIONAL = 1, /* inputs / outputs / params were given */
    VN_BIND_NAMED = 2       /* bind={name: buffer} was given */
} vn_bind_form;

/* One dispatch's buffers and size: what record, recording_create and sequence_add take.
 * The binding rule lives in C alone (csrc/resources/bind.c), one of two forms, never both
 * (VN_ERROR_BINDING when `forms` has both bits):
 * - positional: bindings in (group, binding) order; a read_write binding takes the next
 *   output, the first uniform takes params when not NULL, every other the next input;
 *   too few or too many handles is VN_ERROR_BINDING naming the bindings;
 * - named: names[i] binds named[i]; every binding the entry point uses must be named
 *   exactly once: an unknown, repeated or missing name is VN_ERROR_BINDING listing the
 *   pipeline's bindings.
 * Either way each view is checked against its binding: device, usage bits, size (at
 * least the declared type's, at most the device's largest binding; for storage a
 * multiple of 4, a view ending its buffer padded into the allocation) and offset (a
 * multiple of min_storage_buffer_offset_alignment, or min_uniform_buffer_offset_alignment
 * for a uniform). Outputs (read_output's indices) are the read_write bindings in
 * (group, binding) order, whichever the form.
 * indirect: NULL, or the buffer (a view) whose bytes at indirect_offset hold the three
 * u32 workgroup counts: INDIRECT usage, the pipeline's device, the counts at a multiple
 * of 4 bytes into the buffer and + 12 within the view, and no pipeline compiled with an indirect binding.
 * x, y, z are ignored by an indirect dispatch.
 * immediates: the var<immediate> data of the dispatch, exactly the pipeline's
 * immediate_size bytes (NULL and 0 for a pipeline without); copied, so the caller's
 * memory is free once the call returns.
 * keep_outputs: 0 (the default) clears the non-preserved outputs, each view's own range,
 * right before the dispatch; nonzero clears nothing, so every output keeps what it holds
 * (Python's clear_outputs=False).
 * Buffers shared between bindings follow WebGPU's rule for one dispatch, exactly: a
 * buffer bound writable (read_write) has no read-only use in it (read-only storage,
 * uniform, the indirect counts), whatever the ranges (its usage scope); two writable
 * bindings of one buffer have disjoint byte ranges as bound (touching ends are
 * disjoint); read-only uses share anything. Else VN_ERROR_BINDING naming both bindings
 * and their ranges. */
typedef struct vn_dispatch_args {
    uint32_t forms;                  /* vn_bind_form bits */
    uint32_t x, y, z;
    const vn_view *inputs;
    size_t input_count;
    const vn_view *outputs;
    size_t output_count;
    const vn_view *params;           /* NULL: none */
    /* What most dispatches leave zero comes last (a short initializer suffices). */
    const void *immediates;
    size_t immediates_len;
    const char *const *names;        /* the named form: names[i] binds named[i] */
    const vn_view *named;
    size_t named_count;
    const vn_view *indirect;         /* NULL: direct, or the pipeline's compiled indirect binding */
    uint64_t indirect_offset;
    uint32_t keep_outputs;           /* nonzero: no output is cleared before the dispatch */
} vn_dispatch_args;

/* Resolve args against the pipeline's bindings, validate each, take bind groups from
 * the pipeline's cache, and encode: clears of non-preserved outputs (each view's own
 * range), one compute pass, a direct or indirect dispatch. */
vn_status vn_dispatch_record(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_dispatch **out);
/* vn_dispatch_record of the commonest launch, with no argument struct to build: the
 * positional form, whole buffers, no params, immediates or indirect counts;
 * buffers[0 .. input_count) are the inputs and the next output_count the outputs;
 * keep_outputs as in vn_dispatch_args. Same checks and messages. */
vn_status vn_dispatch_record_buffers(vn_pipeline *pipeline, vn_buffer *const *buffers, size_t input_count,
                                     size_t output_count, uint32_t x, uint32_t y, uint32_t z, uint32_t keep_outputs,
                                     vn_dispatch **out);
/* Submit the recorded command buffer; exactly one call ever succeeds. VN_PENDING: a
 * CPU adapter's queue still runs earlier work (nothing was submitted); call again. */
vn_status vn_dispatch_replay(vn_dispatch *dispatch, uint64_t *submission_index);
/* The submission index of the replay that succeeded, 0 before one has (no allocation
 * for the caller: what vn's PrerecordedDispatch.replay reads after its own replay). */
uint64_t vn_dispatch_submission_index(const vn_dispatch *dispatch);
size_t vn_dispatch_output_count(const vn_dispatch *dispatch);
/* The output's size in bytes (a view's own), or VN_ERROR_OUTPUT_INDEX. */
vn_status vn_dispatch_output_len(const vn_dispatch *dispatch, int64_t index, uint64_t *out);
/* Start reading output `index` (after the same checks as vn_dispatch_read_output). */
vn_status vn_dispatch_read_output_async(vn_dispatch *dispatch, int64_t index, vn_pending_read **out);
/* Copy output `index` (its bytes: a view's range only) into dst once this recording's
 * own submission has completed; *written gets the byte count. VN_PENDING and *pending
 * as for vn_view_read. */
vn_status vn_dispatch_read_output(vn_dispatch *dispatch, int64_t index, void *dst,
                                  uint64_t capacity, uint64_t *written, vn_pending_read **pending);
/* The borrowed form: make the buffers from host memory by the binding rule, then
 * record as vn_dispatch_record does. Each read_write binding that is not preserved gets
 * a new zeroed output of output_sizes[k] bytes (k counting those bindings), or of its
 * declared min_size when output_sizes is NULL; every other binding takes a host buffer
 * (host[i], host_lens[i] bytes, copied): with names NULL the next one in (group,
 * binding) order, a preserved one among them; else the one named for it (names[i] for
 * host[i]), each such binding named exactly once (VN_ERROR_BINDING for an unknown,
 * repeated, missing or allocated output's name, listing the bindings). `forms` as in
 * vn_dispatch_args. Nothing is cleared: the outputs are new buffers, zero by WebGPU's
 * rule already, and the preserved bindings hold the host data. The dispatch holds the
 * buffers; the caller holds none. */
vn_status vn_dispatch_record_borrowed(vn_pipeline *pipeline, uint32_t forms,
                                      const void *const *host, const uint64_t *host_lens,
                                      const char *const *names, size_t host_count,
                                      const uint64_t *output_sizes, size_t output_size_count,
                                      uint32_t x, uint32_t y, uint32_t z,
                                      vn_dispatch **out);
void vn_dispatch_release(vn_dispatch *dispatch);
