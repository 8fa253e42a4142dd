/* timing.c - GPU time of a replay or submit through timestamp queries.
 *
 * Timing is opt-in per replay: it adds a query set, a resolve and a copy to the
 * command buffer, and the launch-cost hot path must not pay for that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* WebGPU caps a query set at 4096 queries: two per timed pass. */
enum { MAX_QUERIES = 4096 };

WGPUComputePassEncoder vn_begin_pass(WGPUCommandEncoder encoder, vn_timing *t) {
    if (t == NULL || t->mode == VN_TIMING_NONE) return wgpu.CommandEncoderBeginComputePass(encoder, NULL);
    uint32_t i = t->next_pass++;
    WGPUPassTimestampWrites writes = WGPU_PASS_TIMESTAMP_WRITES_INIT;
    writes.querySet = t->query_set;
    if (t->mode == VN_TIMING_TOTAL) {
        writes.beginningOfPassWriteIndex = i == 0 ? 0 : WGPU_QUERY_SET_INDEX_UNDEFINED;
        writes.endOfPassWriteIndex = i + 1 == t->passes ? 1 : WGPU_QUERY_SET_INDEX_UNDEFINED;
    } else if (i < t->passes) {
        writes.beginningOfPassWriteIndex = 2 * i;
        writes.endOfPassWriteIndex = 2 * i + 1;
    } else {
        writes.beginningOfPassWriteIndex = writes.endOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED;
    }
    if (writes.beginningOfPassWriteIndex == WGPU_QUERY_SET_INDEX_UNDEFINED &&
        writes.endOfPassWriteIndex == WGPU_QUERY_SET_INDEX_UNDEFINED)
        return wgpu.CommandEncoderBeginComputePass(encoder, NULL);
    WGPUComputePassDescriptor desc = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
    desc.timestampWrites = &writes;
    return wgpu.CommandEncoderBeginComputePass(encoder, &desc);
}

vn_status vn_timing_prepare(vn_device *dev, vn_timing_mode mode, uint32_t passes, vn_timing *t) {
    memset(t, 0, sizeof *t);
    if (mode == VN_TIMING_NONE) return VN_OK;
    if (mode != VN_TIMING_TOTAL && mode != VN_TIMING_PER_DISPATCH)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "timing mode %d is not one of 0 (none), 1 (total), 2 (per dispatch). "
                       "Fix: pass timing=False, True or \"dispatch\".", (int)mode);
    if (!dev->timestamps)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "adapter '%s' has no timestamp queries, so GPU time cannot be measured. "
                       "Fix: check device.timestamps before asking for timing.", dev->info.name);
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
    bd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    t->readback = wgpu.DeviceCreateBuffer(dev->device, &bd);
    return VN_OK;
}

void vn_timing_resolve(vn_timing *t, WGPUCommandEncoder encoder) {
    if (t == NULL || t->mode == VN_TIMING_NONE) return;
    wgpu.CommandEncoderResolveQuerySet(encoder, t->query_set, 0, t->queries, t->resolve, 0);
    wgpu.CommandEncoderCopyBufferToBuffer(encoder, t->resolve, 0, t->readback, 0, 8ull * t->queries);
}

void vn_timing_release(vn_timing *t) {
    if (t->query_set) wgpu.QuerySetRelease(t->query_set);
    if (t->resolve) wgpu.BufferRelease(t->resolve);
    if (t->readback) wgpu.BufferRelease(t->readback);
    memset(t, 0, sizeof *t);
}

struct map_wait {
    atomic_int done;
    WGPUMapAsyncStatus status;
};

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)message;
    (void)userdata2;
    struct map_wait *w = userdata1;
    w->status = status;
    atomic_store(&w->done, 1);
}

vn_status vn_timing_read(vn_device *dev, vn_timing *t, uint64_t index, uint64_t *ns, size_t *count) {
    *count = 0;
    if (t->mode == VN_TIMING_NONE) return VN_OK;
    WGPUSubmissionIndex idx = index;
    wgpu.DevicePoll(dev->device, 1, &idx);
    struct map_wait w = {0};
    WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_mapped;
    info.userdata1 = &w;
    wgpu.BufferMapAsync(t->readback, WGPUMapMode_Read, 0, 8ull * t->queries, info);
    if (!vn_process_until(dev->instance, dev->device, &w.done, 60.0)) {
        /* Releasing the buffer cancels the map, which fires the callback now. */
        wgpu.BufferRelease(t->readback);
        t->readback = NULL;
        t->mode = VN_TIMING_NONE;
        return vn_fail(VN_ERROR_TIMEOUT, "reading GPU timestamps did not complete in 60 s. Fix: check the device.");
    }
    if (w.status != WGPUMapAsyncStatus_Success) {
        vn_status st = vn_device_check(dev, "reading GPU timestamps");
        return st != VN_OK ? st : vn_fail(VN_ERROR_INTERNAL, "mapping the timestamp buffer failed (status %d). Fix: retry.",
                                          (int)w.status);
    }
    /* Held so the device cannot be destroyed while its buffer's range is read. */
    vn_status st = vn_submit_begin(dev, "reading GPU timestamps");
    if (st != VN_OK) return st;
    const uint64_t *ticks = wgpu.BufferGetConstMappedRange(t->readback, 0, 8ull * t->queries);
    if (ticks == NULL) {
        wgpu.BufferUnmap(t->readback);
        vn_submit_end(dev);
        return vn_fail(VN_ERROR_INTERNAL, "the timestamp buffer has no readable range. Fix: retry.");
    }
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
    wgpu.BufferUnmap(t->readback);
    vn_submit_end(dev);
    return VN_OK;
}
