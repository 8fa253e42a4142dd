/* introspect.c - vn_introspect, the one door to what the C layer shows of its insides
 * (live objects and ids, queued write bytes, the wgpu error mapping, the fill's WGSL, the
 * compile threads made):
 * read-only, for tests, leak hunts and the benchmarks, beside the API rather than in it.
 * At the top layer because what it reads lives in every layer; each value is read by the
 * file that owns it (vn_debug_*, declared in that file's layer header). */
#include "layer_work.h"

vn_status vn_introspect(vn_introspect_op op, vn_introspection *io) {
    if (io == NULL) return vn_null_out("vn_introspect", "io");
    switch (op) {
    case VN_INTROSPECT_LIVE_COUNTS: /* frees parked devices: a call into the driver */
        vn_call_guard_enter();
        vn_debug_live_counts(&io->live, io->wait_s);
        vn_call_guard_leave();
        return VN_OK;
    case VN_INTROSPECT_LIVE_IDS: io->live_ids = vn_debug_live_ids(); return VN_OK;
    case VN_INTROSPECT_QUEUED_WRITE_BYTES: io->queued_write_bytes = vn_debug_queued_write_bytes(io->device); return VN_OK;
    case VN_INTROSPECT_ERROR_STATUS: io->status = vn_debug_error_status(io->wgpu_error_type, io->message); return VN_OK;
    case VN_INTROSPECT_FILL_WGSL: io->fill_wgsl = vn_debug_fill_wgsl(); return VN_OK;
    case VN_INTROSPECT_STACK_THREADS: io->stack_threads = vn_stack_threads_made(); return VN_OK;
    case VN_INTROSPECT_HOST_BLOCKS_KEPT_BYTES: io->host_blocks_kept_bytes = vn_debug_host_blocks_kept_bytes(); return VN_OK;
    }
    return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_introspect: no op %d. Fix: pass a vn_introspect_op.", (int)op);
}
