/* floor.h - what the files of the raw-C floor share (floor.c says what the floor is):
 * the wgpu-native function table, the context, the TIMED macro and the helpers the
 * operations use. Every shared helper is hidden: the library exports floor_* alone. */
#ifndef FLOOR_H
#define FLOOR_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "webgpu.h"
#include "wgpu.h"

#define FLOOR_HIDDEN __attribute__((visibility("hidden")))

/* ---- the functions used, resolved by dlsym ---------------------------------- */

#define FLOOR_WGPU_FUNCTIONS(X)                                                      \
    X(GetVersion) X(CreateInstance) X(InstanceRequestAdapter) X(InstanceProcessEvents) \
    X(InstanceRelease) X(AdapterGetInfo) X(AdapterInfoFreeMembers) X(AdapterGetLimits) \
    X(AdapterRequestDevice) X(AdapterRelease) X(DeviceGetQueue) X(DeviceCreateBuffer)  \
    X(DeviceCreateShaderModule) X(DeviceCreateComputePipeline)                         \
    X(ComputePipelineGetBindGroupLayout) X(DeviceCreateBindGroup)                      \
    X(DeviceCreateCommandEncoder) X(DevicePoll) X(DeviceRelease) X(QueueSubmitForIndex) \
    X(QueueRelease) X(BufferMapAsync) X(BufferGetConstMappedRange)                     \
    X(BufferGetMappedRange) X(BufferUnmap) X(BufferRelease) X(ShaderModuleRelease)     \
    X(BindGroupLayoutRelease) X(ComputePipelineRelease) X(BindGroupRelease)            \
    X(CommandEncoderClearBuffer) X(CommandEncoderCopyBufferToBuffer)                   \
    X(CommandEncoderBeginComputePass) X(CommandEncoderFinish) X(CommandEncoderRelease) \
    X(ComputePassEncoderSetPipeline) X(ComputePassEncoderSetBindGroup)                 \
    X(ComputePassEncoderDispatchWorkgroups) X(ComputePassEncoderEnd)                   \
    X(ComputePassEncoderRelease) X(CommandBufferRelease) X(QueueWriteBuffer)           \
    X(AdapterHasFeature) X(DeviceCreateBindGroupLayout) X(DeviceCreatePipelineLayout)  \
    X(PipelineLayoutRelease) X(DeviceCreateQuerySet) X(QuerySetRelease)                \
    X(CommandEncoderResolveQuerySet) X(QueueGetTimestampPeriod)

struct floor_wgpu {
#define FLOOR_FIELD(name) __typeof__(wgpu##name) *name;
    FLOOR_WGPU_FUNCTIONS(FLOOR_FIELD)
#undef FLOOR_FIELD
};
/* Filled by floor_create from the library it is given (floor.c). */
extern FLOOR_HIDDEN struct floor_wgpu W;

/* ---- the context ---------------------------------------------------------------- */

/* Operations between untimed drains (a blocking device poll), as the Python side
 * does (harness.DRAIN_EVERY): without them the queue grows through the run. */
enum { BATCH = 64 };

/* One buffer's fill, as vyre_native clears it: its bind group, the entry point
 * (0 words, 1 quads) and the dispatch's workgroups. */
struct fill_bind {
    WGPUBindGroup group;
    int variant;
    uint32_t workgroups;
};

typedef struct floor_ctx {
    void *lib;
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout layout;
    WGPUBuffer in, out;           /* the launch kernel's buffers */
    uint64_t io_bytes;
    WGPUBindGroup group;          /* (in, out) */
    WGPUBindGroup back;           /* (out, in): a chain's every other step */
    WGPUBuffer *miss_outs;        /* distinct outputs for bind-group misses */
    uint32_t miss_count, miss_next;
    WGPUBuffer read_src[2];       /* [0] small, [1] big: sources of the readback benchmarks */
    WGPUBuffer staging[2];        /* MAP_READ|COPY_DST of the same sizes, reused */
    uint64_t read_bytes[2];
    void *read_dst[2];            /* reused host destinations */
    void *memcpy_src;             /* floor_memcpy's source, of the big size */
    WGPUBuffer part_staging[64];  /* floor_read_parts' staging buffers, one per slice */
    uint64_t part_bytes;
    int timestamps;               /* TimestampQuery enabled */
    uint32_t max_groups_per_dim;
    struct floor_fill {           /* floor_fill_setup: vyre_native's zero fill, in raw C */
        WGPUShaderModule module;
        WGPUBindGroupLayout layouts[2];  /* [0] words (@binding(0)), [1] quads (@binding(1)) */
        WGPUComputePipeline pipelines[2];
        struct fill_bind out, big;           /* over c->out and the big readback source */
        WGPUQuerySet queries;
        WGPUBuffer resolve, ticks;           /* QUERY_RESOLVE|COPY_SRC, MAP_READ|COPY_DST */
    } fill;
    struct floor_copy {           /* floor_copy: the aligned copy and the shifted copy's kernel */
        uint64_t bytes;
        WGPUBuffer src, dst;                 /* bytes + 8 each, STORAGE|COPY_SRC|COPY_DST */
        WGPUComputePipeline shift;
        WGPUBindGroup group;
        uint32_t workgroups;
    } copy;
    struct floor_graph {          /* floor_graph: a chain whose every step has its own bindings */
        WGPUComputePipeline second;          /* the launch kernel again: a pipeline of its own */
        WGPUBindGroupLayout second_layout;
        uint32_t steps;
        WGPUBuffer *buffers;                 /* steps + 1, io_bytes each */
        WGPUBindGroup *groups;               /* step k: (buffers[k], buffers[k + 1]) */
    } graph;
    struct floor_one {            /* floor_one_*: one operation a call, as a Python caller makes it */
        WGPUCommandBuffer kept[BATCH];       /* floor_one_prerecord's, until floor_one_flush */
        uint32_t count;
    } one;
    atomic_int error;
    char error_message[1536];
    char adapter_name[256];
    char backend[32];
    char driver[256];
} floor_ctx;

/* Every entry point below performs its operation n times and returns the total
 * nanoseconds of the timed parts; when `samples` is not NULL, samples[i] gets
 * operation i's own nanoseconds (each operation is timed on its own, so the
 * distribution is per operation, as it is for the Python ways; two
 * clock_gettime calls, a few tens of ns, are inside each sample). */
#define TIMED(i, ...)                                \
    do {                                             \
        int64_t t0_ = now_ns();                      \
        __VA_ARGS__;                                 \
        int64_t d_ = now_ns() - t0_;                 \
        total += d_;                                 \
        if (samples != NULL) samples[(i)] = d_;      \
    } while (0)


/* ---- the helpers the operations share (floor.c; map_after: floor_reads.c) ---------- */

#pragma GCC visibility push(hidden)
void fail(const char *fmt, ...);
void sv_copy(WGPUStringView v, char *buf, size_t cap);
WGPUStringView sv(const char *s);
int64_t now_ns(void);
int64_t checked(floor_ctx *c, int64_t ns);
WGPUBuffer make_buffer(floor_ctx *c, uint64_t size, WGPUBufferUsage usage);
WGPUBindGroup make_group_of(floor_ctx *c, WGPUBindGroupLayout layout, WGPUBuffer in, WGPUBuffer out, uint64_t bytes);
WGPUBindGroup make_group(floor_ctx *c, WGPUBuffer in, WGPUBuffer out, uint64_t bytes);
WGPUComputePipeline compile_main(floor_ctx *c, const char *wgsl);
void fill_plan(floor_ctx *c, WGPUBuffer buffer, uint64_t bytes, struct fill_bind *fb);
void fill_in_pass(floor_ctx *c, WGPUComputePassEncoder pass, const struct fill_bind *fb);
void kernel_in_pass(floor_ctx *c, WGPUComputePassEncoder pass, WGPUBindGroup group);
void end_pass(WGPUComputePassEncoder pass);
WGPUSubmissionIndex submit_one(floor_ctx *c, WGPUCommandBuffer cb);
WGPUSubmissionIndex finish_submit(floor_ctx *c, WGPUCommandEncoder enc);
WGPUCommandBuffer encode(floor_ctx *c, WGPUBindGroup group, const struct fill_bind *fill);
void drain(floor_ctx *c);
void submit_and_drain(floor_ctx *c, WGPUCommandBuffer *cbs, uint64_t k);
int map_after(floor_ctx *c, WGPUBuffer staging, uint64_t nbytes, WGPUSubmissionIndex idx);
/* floor_graph's buffers and bind groups, released (floor.c). */
void graph_release(floor_ctx *c);
/* Poll until *flag is set or limit_s seconds have passed: 1 when it was set. */
int wait_flag(floor_ctx *c, atomic_int *flag, double limit_s);
#pragma GCC visibility pop

#endif /* FLOOR_H */
