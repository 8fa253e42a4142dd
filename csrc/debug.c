/* debug.c - counts of live native objects, so tests can prove nothing leaks. */
#include "internal.h"

static atomic_llong live[VN_LIVE_KIND_COUNT];

void vn_live_add(enum vn_live_kind kind, int64_t delta) { atomic_fetch_add(&live[kind], delta); }

int64_t vn_live_count(enum vn_live_kind kind) { return atomic_load(&live[kind]); }

void vn_debug_live_counts(vn_live_counts *out, double wait_s) {
    if (out == NULL) return;
    /* Devices released while their work ran are freed once it has finished: let a leak
     * test see them go. */
    vn_devices_reap(wait_s);
    out->devices = atomic_load(&live[VN_LIVE_DEVICE]);
    out->buffers = atomic_load(&live[VN_LIVE_BUFFER]);
    out->shaders = atomic_load(&live[VN_LIVE_SHADER]);
    out->pipelines = atomic_load(&live[VN_LIVE_PIPELINE]);
    out->dispatches = atomic_load(&live[VN_LIVE_DISPATCH]);
    out->bind_groups = atomic_load(&live[VN_LIVE_BIND_GROUP]);
    out->staging_buffers = atomic_load(&live[VN_LIVE_STAGING]);
    out->recordings = atomic_load(&live[VN_LIVE_RECORDING]);
    out->sequences = atomic_load(&live[VN_LIVE_SEQUENCE]);
    out->submissions = atomic_load(&live[VN_LIVE_SUBMISSION]);
    out->pending_reads = atomic_load(&live[VN_LIVE_PENDING_READ]);
    out->mappings = atomic_load(&live[VN_LIVE_MAPPING]);
}

vn_status vn_debug_error_status(uint32_t wgpu_error_type, const char *message) {
    return vn_error_status((WGPUErrorType)wgpu_error_type, message != NULL ? message : "", VN_ERROR_VALIDATION);
}
