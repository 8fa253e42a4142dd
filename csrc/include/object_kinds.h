/* object_kinds.h - the kinds of native object, one table (an X-macro list, as
 * wgpu_functions.h), in the order of their live counts, one row a line:
 *   VN_HANDLE_KIND(name, field, what)  an object behind a handle: its vn_kind
 *     (VN_KIND_<name>, layer_object.h), its live count (VN_LIVE_<name>, layer_base.h,
 *     and the vn_live_counts `field`, vn_introspect.h), and `what` a Python user knows it by
 *     (object.c's messages);
 *   VN_INNER_KIND(name, field)  one the C layer holds with no handle: a live count only.
 * Every use defines both macros. No include guard: it is included once per use. */
VN_HANDLE_KIND(DEVICE, devices, "Device")
VN_HANDLE_KIND(BUFFER, buffers, "Buffer")
VN_HANDLE_KIND(SHADER, shaders, "shader module")
VN_HANDLE_KIND(PIPELINE, pipelines, "Pipeline")
VN_HANDLE_KIND(DISPATCH, dispatches, "PrerecordedDispatch")
VN_INNER_KIND(BIND_GROUP, bind_groups)       /* references the C layer holds (a cache's, a recording's) */
VN_INNER_KIND(STAGING, staging_buffers)      /* readback buffers, kept for reuse or in use */
VN_HANDLE_KIND(RECORDING, recordings, "Recording")
VN_HANDLE_KIND(SEQUENCE, sequences, "Sequence")
VN_HANDLE_KIND(SUBMISSION, submissions, "Submission")
VN_HANDLE_KIND(PENDING_READ, pending_reads, "PendingRead")
VN_HANDLE_KIND(MAPPING, mappings, "MappedStaging")
VN_INNER_KIND(HOST_BLOCK, host_blocks)       /* host blocks of typed reads: held by arrays or kept for reuse */
