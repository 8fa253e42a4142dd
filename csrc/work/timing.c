/* timing.c - GPU time of a replay or submit through timestamp queries.
 *
 * Timing is opt-in per replay: it adds a query set, a resolve and a copy to the
 * command buffer, and the launch-cost hot path must not pay for that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

/* WebGPU caps a query set at 4096 queries: two per timed pass. */
enum { MAX_QUERIES = 4096 };

vn_status vn_timing_prepare(vn_device *dev, vn_timing_mode mode, uint32_t passes, vn_timing *t) {
    memset(t, 0, sizeof *t);
    if (mode == VN_TIMING_NONE) return VN_OK;
    if (mode != VN_TIMING_TOTAL && mode != VN_TIMING_PER_DISPATCH)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "timing mode %d is not one of 0 (none), 1 (total), 2 (per dispatch). "
                       "Fix: pass timing=False, True or \"dispatch\".", (int)mode);
    if (!dev->timestamps) {
        /* vn.Device() requests timestamp queries wherever the adapter offers them, so
         * an offering adapter means a device created elsewhere (adopted from wgpu-py). */
        if (wgpu.AdapterHasFeature(dev->adapter, WGPUFeatureName_TimestampQuery))
            return vn_fail(VN_ERROR_UNSUPPORTED,
                           "this device was created without the \"timestamp-query\" feature, though adapter '%s' offers "
                           "it (a device adopted from wgpu-py has the features it was created with), so GPU time "
                           "cannot be measured. Fix: request the feature when creating the wgpu-py device: "
                           "adapter.request_device_sync(required_features=[\"timestamp-query\"]), then "
                           "vn.Device.from_wgpu(it); or replay without timing.", dev->info.name);
        return vn_fail(VN_ERROR_UNSUPPORTED, "adapter '%s' has no timestamp queries, so GPU time cannot be measured. "
                       "Fix: check device.timestamps before asking for timing, and replay without timing where it is "
                       "False.", dev->info.name);
    }
    if (passes == 0) return VN_OK;
    uint64_t queries = mode == VN_TIMING_TOTAL ? 2 : 2 * (uint64_t)passes;
    if (queries > MAX_QUERIES)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "per-dispatch timing of %u dispatches needs %llu timestamp queries, above "
                       "WebGPU's %d. Fix: time at most %d dispatches per replay, or use timing=True for the total.",
                       passes, (unsigned long long)queries, MAX_QUERIES, MAX_QUERIES / 2);
    t->mode = mode;
    t->passes = passes;
    t->queries = (uint32_t)queries;
    WGPUQuerySetDescriptor qd = WGPU_QUERY_SET_DESCRIPTOR_INIT;
    qd.type = WGPUQueryType_Timestamp;
    qd.count = t->queries;
    t->query_set = wgpu.DeviceCreateQuerySet(dev->device, &qd);
    WGPUBufferDescriptor bd = WGPU_BUFFER_DESCRIPTOR_INIT;
    bd.size = 8ull * t->queries;
    bd.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
    t->resolve = wgpu.DeviceCreateBuffer(dev->device, &bd);
    return VN_OK;
}

void vn_timing_resolve(vn_timing *t, WGPUCommandEncoder encoder) {
    if (t == NULL || t->mode == VN_TIMING_NONE) return;
    wgpu.CommandEncoderResolveQuerySet(encoder, t->query_set, 0, t->queries, t->resolve, 0);
}

void vn_timing_release(vn_timing *t) {
    if (t->query_set) wgpu.QuerySetRelease(t->query_set);
    if (t->resolve) wgpu.BufferRelease(t->resolve);
    memset(t, 0, sizeof *t);
}

vn_status vn_timing_read_start(vn_device *dev, vn_timing *t, vn_pending_read **out) {
    /* The readback's copy is queued after the timed submission, so it sees the
     * resolved queries; it also brings the device checks and the life lock. */
    return vn_read_start(dev, t->resolve, 0, 8ull * t->queries, NULL, out);
}

void vn_timing_convert(const vn_device *dev, const vn_timing *t, const uint64_t *ticks, uint64_t *ns, size_t *count) {
    *count = 0;
    if (t->mode == VN_TIMING_NONE) return;
    double period = dev->timestamp_period > 0 ? dev->timestamp_period : 1.0;
    /* Ticks are per-adapter counters; a pair out of order (a driver quirk) reads 0. */
#define VN_SPAN(a, b) ((b) > (a) ? (uint64_t)((double)((b) - (a)) * period) : 0)
    if (t->mode == VN_TIMING_TOTAL) {
        ns[0] = VN_SPAN(ticks[0], ticks[1]);
        *count = 1;
    } else {
        ns[0] = VN_SPAN(ticks[0], ticks[2 * t->passes - 1]);
        for (uint32_t i = 0; i < t->passes; i++) ns[1 + i] = VN_SPAN(ticks[2 * i], ticks[2 * i + 1]);
        *count = 1 + t->passes;
    }
#undef VN_SPAN
}
