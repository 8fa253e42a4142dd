/* floor.c - the raw-C floor of the vyre_native benchmark suite.
 *
 * Each operation the suite measures, written in plain C over the same
 * wgpu-native library that vyre_native and wgpu-py load, with no Python in the
 * loop: every floor_* entry point performs its operation `n` times in a C loop
 * and returns the nanoseconds spent (CLOCK_MONOTONIC), or -1 with
 * floor_last_error() set. Work that the Python side does outside its timer
 * (encoding a recording before a replay is timed, draining the queue between
 * batches) stays outside this timer too.
 *
 * Built by benchmarks/conftest.py at session start:
 *   cc -O2 -shared -fPIC -I<wgpu package>/resources floor.c -o floor.so -ldl
 * and loaded with cffi in ABI mode. wgpu-native is dlopen'ed from the path the
 * caller passes (the file vyre_native loads), so one copy serves all three.
 */
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

static struct {
#define FLOOR_FIELD(name) __typeof__(wgpu##name) *name;
    FLOOR_WGPU_FUNCTIONS(FLOOR_FIELD)
#undef FLOOR_FIELD
} W;

/* ---- errors ------------------------------------------------------------------ */

static char last_error[2048];

const char *floor_last_error(void) { return last_error; }

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

static void sv_copy(WGPUStringView v, char *buf, size_t cap) {
    size_t n = 0;
    if (v.data != NULL) n = v.length == WGPU_STRLEN ? strlen(v.data) : v.length;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(buf, v.data, n);
    buf[n] = '\0';
}

static WGPUStringView sv(const char *s) {
    WGPUStringView v = {s, WGPU_STRLEN};
    return v;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

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
    atomic_int error;
    char error_message[1536];
    char adapter_name[256];
    char backend[32];
    char driver[256];
} floor_ctx;

static void on_uncaptured_error(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message, void *u1,
                                void *u2) {
    (void)device;
    (void)u2;
    floor_ctx *c = u1;
    if (!atomic_exchange(&c->error, 1)) {
        char msg[1400];
        sv_copy(message, msg, sizeof msg);
        snprintf(c->error_message, sizeof c->error_message, "wgpu error (type %d): %s", (int)type, msg);
    }
}

static void on_device_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message, void *u1,
                           void *u2) {
    (void)device;
    (void)u2;
    if (reason == WGPUDeviceLostReason_CallbackCancelled || reason == WGPUDeviceLostReason_Destroyed) return;
    floor_ctx *c = u1;
    if (!atomic_exchange(&c->error, 1)) {
        char msg[1400];
        sv_copy(message, msg, sizeof msg);
        snprintf(c->error_message, sizeof c->error_message, "device lost (reason %d): %s", (int)reason, msg);
    }
}

/* -1 with the message when a wgpu error was reported since the last check. */
static int64_t checked(floor_ctx *c, int64_t ns) {
    if (atomic_load(&c->error)) {
        fail("%s", c->error_message);
        atomic_store(&c->error, 0);
        return -1;
    }
    return ns;
}

struct request {
    atomic_int done;
    int status;
    void *result;
    char message[512];
};

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void *u1,
                       void *u2) {
    (void)u2;
    struct request *r = u1;
    r->status = (int)status;
    r->result = adapter;
    sv_copy(message, r->message, sizeof r->message);
    atomic_store(&r->done, 1);
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1, void *u2) {
    (void)u2;
    struct request *r = u1;
    r->status = (int)status;
    r->result = device;
    sv_copy(message, r->message, sizeof r->message);
    atomic_store(&r->done, 1);
}

static int wait_flag(floor_ctx *c, atomic_int *flag, double limit_s) {
    int64_t deadline = now_ns() + (int64_t)(limit_s * 1e9);
    while (!atomic_load(flag)) {
        if (c->device != NULL) W.DevicePoll(c->device, 0, NULL);
        W.InstanceProcessEvents(c->instance);
        if (atomic_load(flag)) break;
        if (now_ns() > deadline) return 0;
        sched_yield();
    }
    return 1;
}

static WGPUBuffer make_buffer(floor_ctx *c, uint64_t size, WGPUBufferUsage usage) {
    WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
    d.size = size;
    d.usage = usage;
    return W.DeviceCreateBuffer(c->device, &d);
}

static WGPUBindGroup make_group_of(floor_ctx *c, WGPUBindGroupLayout layout, WGPUBuffer in, WGPUBuffer out,
                                   uint64_t bytes) {
    WGPUBindGroupEntry e[2] = {WGPU_BIND_GROUP_ENTRY_INIT, WGPU_BIND_GROUP_ENTRY_INIT};
    e[0].binding = 0;
    e[0].buffer = in;
    e[0].size = bytes;
    e[1].binding = 1;
    e[1].buffer = out;
    e[1].size = bytes;
    WGPUBindGroupDescriptor d = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    d.layout = layout;
    d.entryCount = 2;
    d.entries = e;
    return W.DeviceCreateBindGroup(c->device, &d);
}

/* The launch kernel's bind group over (in, out). */
static WGPUBindGroup make_group(floor_ctx *c, WGPUBuffer in, WGPUBuffer out, uint64_t bytes) {
    return make_group_of(c, c->layout, in, out, bytes);
}

/* floor_graph's buffers and bind groups (made at its first call for a step count). */
static void graph_release(floor_ctx *c) {
    struct floor_graph *g = &c->graph;
    for (uint32_t k = 0; g->groups != NULL && k < g->steps; k++)
        if (g->groups[k]) W.BindGroupRelease(g->groups[k]);
    for (uint32_t k = 0; g->buffers != NULL && k <= g->steps; k++)
        if (g->buffers[k]) W.BufferRelease(g->buffers[k]);
    free(g->groups);
    free(g->buffers);
    g->groups = NULL;
    g->buffers = NULL;
    g->steps = 0;
}

/* `wgsl`'s entry point "main" as a compute pipeline with an automatic layout (the shader
 * module released: the pipeline holds what it needs); NULL when none was made. */
static WGPUComputePipeline compile_main(floor_ctx *c, const char *wgsl) {
    WGPUShaderSourceWGSL src = WGPU_SHADER_SOURCE_WGSL_INIT;
    src.code = sv(wgsl);
    WGPUShaderModuleDescriptor smd = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
    smd.nextInChain = &src.chain;
    WGPUShaderModule module = W.DeviceCreateShaderModule(c->device, &smd);
    WGPUComputePipelineDescriptor pd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
    pd.compute.module = module;
    pd.compute.entryPoint = sv("main");
    WGPUComputePipeline pipeline = W.DeviceCreateComputePipeline(c->device, &pd);
    W.ShaderModuleRelease(module);
    return pipeline;
}

void floor_destroy(floor_ctx *c);

const char *floor_adapter_name(floor_ctx *c) { return c->adapter_name; }
const char *floor_backend(floor_ctx *c) { return c->backend; }
const char *floor_driver(floor_ctx *c) { return c->driver; }
uint32_t floor_library_version(void) { return W.GetVersion ? W.GetVersion() : 0; }
int floor_timestamps(floor_ctx *c) { return c->timestamps; }

/* Load wgpu-native from lib_path, make a device with the adapter's limits, the
 * kernel's pipeline (entry point "main", bindings 0: read, 1: read_write), the
 * launch buffers of io_bytes, miss_count distinct outputs, and two readback
 * sources (small_bytes, big_bytes) with their staging buffers. NULL on failure. */
floor_ctx *floor_create(const char *lib_path, const char *wgsl, uint64_t io_bytes, uint32_t miss_count,
                        uint64_t small_bytes, uint64_t big_bytes) {
    floor_ctx *c = calloc(1, sizeof *c);
    if (c == NULL) {
        fail("out of host memory");
        return NULL;
    }
/* floor_create's way out once c is made: the message, then everything made so far released. */
#define CREATE_FAILED(...)  \
    do {                    \
        fail(__VA_ARGS__);  \
        floor_destroy(c);   \
        return NULL;        \
    } while (0)
    c->lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (c->lib == NULL) {
        fail("dlopen('%s') failed: %s", lib_path, dlerror());
        free(c);
        return NULL;
    }
#define FLOOR_LOAD(name)                                                     \
    W.name = (__typeof__(W.name))dlsym(c->lib, "wgpu" #name);                \
    if (W.name == NULL) CREATE_FAILED("'%s' has no symbol wgpu" #name, lib_path);
    FLOOR_WGPU_FUNCTIONS(FLOOR_LOAD)
#undef FLOOR_LOAD

    c->instance = W.CreateInstance(NULL);
    if (c->instance == NULL) CREATE_FAILED("wgpuCreateInstance returned NULL");
    struct request ar = {0};
    WGPURequestAdapterOptions aopts = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
    WGPURequestAdapterCallbackInfo acb = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
    acb.mode = WGPUCallbackMode_AllowProcessEvents;
    acb.callback = on_adapter;
    acb.userdata1 = &ar;
    W.InstanceRequestAdapter(c->instance, &aopts, acb);
    if (!wait_flag(c, &ar.done, 60.0) || ar.status != WGPURequestAdapterStatus_Success || ar.result == NULL)
        CREATE_FAILED("no adapter: %s", ar.message);
    c->adapter = ar.result;
    WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
    if (W.AdapterGetInfo(c->adapter, &info) == WGPUStatus_Success) {
        sv_copy(info.device, c->adapter_name, sizeof c->adapter_name);
        sv_copy(info.description, c->driver, sizeof c->driver);
        snprintf(c->backend, sizeof c->backend, "%s", info.backendType == WGPUBackendType_Vulkan ? "Vulkan"
                                                      : info.backendType == WGPUBackendType_Metal  ? "Metal"
                                                      : info.backendType == WGPUBackendType_D3D12  ? "D3D12"
                                                                                                    : "other");
        W.AdapterInfoFreeMembers(info);
    }
    WGPULimits limits = WGPU_LIMITS_INIT;
    if (W.AdapterGetLimits(c->adapter, &limits) != WGPUStatus_Success) CREATE_FAILED("wgpuAdapterGetLimits failed");
    limits.nextInChain = NULL;
    c->max_groups_per_dim = limits.maxComputeWorkgroupsPerDimension;
    WGPUDeviceDescriptor dd = WGPU_DEVICE_DESCRIPTOR_INIT;
    dd.requiredLimits = &limits;
    /* Timestamps only for floor_clear_gpu's GPU times; vyre_native enables them too. */
    WGPUFeatureName timestamp_feature = WGPUFeatureName_TimestampQuery;
    c->timestamps = W.AdapterHasFeature(c->adapter, timestamp_feature) != 0;
    if (c->timestamps) {
        dd.requiredFeatureCount = 1;
        dd.requiredFeatures = &timestamp_feature;
    }
    /* Without an uncaptured-error callback wgpu-native aborts on any error. */
    dd.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
    dd.uncapturedErrorCallbackInfo.userdata1 = c;
    dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
    dd.deviceLostCallbackInfo.callback = on_device_lost;
    dd.deviceLostCallbackInfo.userdata1 = c;
    struct request dr = {0};
    WGPURequestDeviceCallbackInfo dcb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
    dcb.mode = WGPUCallbackMode_AllowProcessEvents;
    dcb.callback = on_device;
    dcb.userdata1 = &dr;
    W.AdapterRequestDevice(c->adapter, &dd, dcb);
    if (!wait_flag(c, &dr.done, 60.0) || dr.status != WGPURequestDeviceStatus_Success || dr.result == NULL)
        CREATE_FAILED("no device: %s", dr.message);
    c->device = dr.result;
    c->queue = W.DeviceGetQueue(c->device);

    c->pipeline = compile_main(c, wgsl);
    if (c->pipeline != NULL) c->layout = W.ComputePipelineGetBindGroupLayout(c->pipeline, 0);
    c->graph.second = compile_main(c, wgsl);
    if (c->graph.second != NULL) c->graph.second_layout = W.ComputePipelineGetBindGroupLayout(c->graph.second, 0);

    const WGPUBufferUsage io = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    c->io_bytes = io_bytes;
    c->in = make_buffer(c, io_bytes, io);
    c->out = make_buffer(c, io_bytes, io);
    c->group = make_group(c, c->in, c->out, io_bytes);
    c->back = make_group(c, c->out, c->in, io_bytes);
    c->miss_count = miss_count ? miss_count : 1;
    c->miss_outs = calloc(c->miss_count, sizeof *c->miss_outs);
    for (uint32_t i = 0; c->miss_outs != NULL && i < c->miss_count; i++) c->miss_outs[i] = make_buffer(c, io_bytes, io);
    c->read_bytes[0] = small_bytes;
    c->read_bytes[1] = big_bytes;
    for (int k = 0; k < 2; k++) {
        c->read_src[k] = make_buffer(c, c->read_bytes[k], io);
        c->staging[k] = make_buffer(c, c->read_bytes[k], WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
        c->read_dst[k] = malloc(c->read_bytes[k]);
        if (c->read_dst[k] != NULL) memset(c->read_dst[k], 1, c->read_bytes[k]); /* fault the pages in */
    }
    W.DevicePoll(c->device, 1, NULL);
    if (checked(c, 0) < 0) { /* its message is already set */
        floor_destroy(c);
        return NULL;
    }
    if (c->pipeline == NULL || c->layout == NULL || c->group == NULL || c->back == NULL || c->miss_outs == NULL ||
        c->read_dst[0] == NULL || c->read_dst[1] == NULL)
        CREATE_FAILED("setting up the floor's pipeline and buffers failed");
    return c;
#undef CREATE_FAILED
}

void floor_destroy(floor_ctx *c) {
    if (c == NULL) return;
    if (c->device != NULL) W.DevicePoll(c->device, 1, NULL);
    if (c->copy.group != NULL) W.BindGroupRelease(c->copy.group);
    if (c->copy.shift != NULL) W.ComputePipelineRelease(c->copy.shift);
    if (c->copy.src != NULL) W.BufferRelease(c->copy.src);
    if (c->copy.dst != NULL) W.BufferRelease(c->copy.dst);
    for (int k = 0; k < 2; k++) {
        if (c->read_src[k]) W.BufferRelease(c->read_src[k]);
        if (c->staging[k]) W.BufferRelease(c->staging[k]);
        free(c->read_dst[k]);
    }
    free(c->memcpy_src);
    for (int k = 0; k < 64; k++)
        if (c->part_staging[k]) W.BufferRelease(c->part_staging[k]);
    struct floor_fill *f = &c->fill;
    if (f->out.group) W.BindGroupRelease(f->out.group);
    if (f->big.group) W.BindGroupRelease(f->big.group);
    for (int v = 0; v < 2; v++) {
        if (f->pipelines[v]) W.ComputePipelineRelease(f->pipelines[v]);
        if (f->layouts[v]) W.BindGroupLayoutRelease(f->layouts[v]);
    }
    if (f->module) W.ShaderModuleRelease(f->module);
    if (f->queries) W.QuerySetRelease(f->queries);
    if (f->resolve) W.BufferRelease(f->resolve);
    if (f->ticks) W.BufferRelease(f->ticks);
    if (c->miss_outs != NULL) {
        for (uint32_t i = 0; i < c->miss_count; i++)
            if (c->miss_outs[i]) W.BufferRelease(c->miss_outs[i]);
        free(c->miss_outs);
    }
    graph_release(c);
    if (c->graph.second_layout) W.BindGroupLayoutRelease(c->graph.second_layout);
    if (c->graph.second) W.ComputePipelineRelease(c->graph.second);
    if (c->group) W.BindGroupRelease(c->group);
    if (c->back) W.BindGroupRelease(c->back);
    if (c->in) W.BufferRelease(c->in);
    if (c->out) W.BufferRelease(c->out);
    if (c->layout) W.BindGroupLayoutRelease(c->layout);
    if (c->pipeline) W.ComputePipelineRelease(c->pipeline);
    if (c->queue) W.QueueRelease(c->queue);
    if (c->device) W.DeviceRelease(c->device);
    if (c->adapter) W.AdapterRelease(c->adapter);
    if (c->instance) W.InstanceRelease(c->instance);
    /* c->lib stays loaded: vyre_native and wgpu-py share this copy. */
    free(c);
}

/* ---- the operations -------------------------------------------------------------- */

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

/* The fill of `bytes` (a multiple of 4) as vyre_native dispatches it (csrc/resources/fill.c):
 * the quads entry point where the size is a multiple of 16, else words; one
 * workgroup of 256 per 256 elements, at most 65535 (or the device's per-dimension
 * limit), each invocation looping with that stride. Needs floor_fill_setup's layouts;
 * the caller releases fb->group. */
static void fill_plan(floor_ctx *c, WGPUBuffer buffer, uint64_t bytes, struct fill_bind *fb) {
    int v = bytes % 16 == 0;
    uint64_t elements = bytes / (v ? 16 : 4);
    uint64_t want = (elements + 255) / 256, cap = c->max_groups_per_dim < 65535 ? c->max_groups_per_dim : 65535;
    WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
    e.binding = (uint32_t)v;
    e.buffer = buffer;
    e.size = bytes;
    WGPUBindGroupDescriptor d = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    d.layout = c->fill.layouts[v];
    d.entryCount = 1;
    d.entries = &e;
    fb->group = W.DeviceCreateBindGroup(c->device, &d);
    fb->variant = v;
    fb->workgroups = (uint32_t)(want < cap ? want : cap);
}

/* Inside a pass: the fill of one buffer, as a vyre_native clear. */
static void fill_in_pass(floor_ctx *c, WGPUComputePassEncoder pass, const struct fill_bind *fb) {
    W.ComputePassEncoderSetPipeline(pass, c->fill.pipelines[fb->variant]);
    W.ComputePassEncoderSetBindGroup(pass, 0, fb->group, 0, NULL);
    W.ComputePassEncoderDispatchWorkgroups(pass, fb->workgroups, 1, 1);
}

/* Inside a pass: the launch kernel, one workgroup, on `group`'s buffers. */
static void kernel_in_pass(floor_ctx *c, WGPUComputePassEncoder pass, WGPUBindGroup group) {
    W.ComputePassEncoderSetPipeline(pass, c->pipeline);
    W.ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    W.ComputePassEncoderDispatchWorkgroups(pass, 1, 1, 1);
}

static void end_pass(WGPUComputePassEncoder pass) {
    W.ComputePassEncoderEnd(pass);
    W.ComputePassEncoderRelease(pass);
}

/* Submit one command buffer and release it: the submission's index. This and
 * finish_submit stand inside the rows' timed parts for the calls they make, no more. */
static WGPUSubmissionIndex submit_one(floor_ctx *c, WGPUCommandBuffer cb) {
    WGPUSubmissionIndex idx = W.QueueSubmitForIndex(c->queue, 1, &cb);
    W.CommandBufferRelease(cb);
    return idx;
}

/* Finish `enc`, submit its one command buffer and release both: the submission's index. */
static WGPUSubmissionIndex finish_submit(floor_ctx *c, WGPUCommandEncoder enc) {
    WGPUCommandBuffer cb = W.CommandEncoderFinish(enc, NULL);
    W.CommandEncoderRelease(enc);
    return submit_one(c, cb);
}

/* What vyre_native records for this kernel: one compute pass with the output's
 * fill (its clear) and one 1x1x1 dispatch. */
static WGPUCommandBuffer encode(floor_ctx *c, WGPUBindGroup group, const struct fill_bind *fill) {
    WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
    WGPUComputePassEncoder pass = W.CommandEncoderBeginComputePass(enc, NULL);
    fill_in_pass(c, pass, fill);
    kernel_in_pass(c, pass, group);
    end_pass(pass);
    WGPUCommandBuffer cb = W.CommandEncoderFinish(enc, NULL);
    W.CommandEncoderRelease(enc);
    return cb;
}

static void drain(floor_ctx *c) { W.DevicePoll(c->device, 1, NULL); }

/* Submit what a prerecord loop encoded (untimed) and wait: wgpu-native 29 does not
 * reclaim a command buffer dropped unsubmitted (about 95 KB each on lavapipe, and
 * every later encode then allocates a fresh one), so recordings are replayed
 * rather than dropped, as the Python side does. */
static void submit_and_drain(floor_ctx *c, WGPUCommandBuffer *cbs, uint64_t k) {
    if (k == 0) return;
    W.QueueSubmitForIndex(c->queue, (size_t)k, cbs);
    for (uint64_t j = 0; j < k; j++) W.CommandBufferRelease(cbs[j]);
    drain(c);
}

/* 1. encode + finish with an existing bind group; every BATCH, submit what was
 * recorded and drain (untimed). */
int64_t floor_prerecord_hit(floor_ctx *c, uint64_t n, int64_t *samples) {
    WGPUCommandBuffer cbs[BATCH];
    uint64_t k = 0;
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, cbs[k] = encode(c, c->group, &c->fill.out));
        if (++k == BATCH) submit_and_drain(c, cbs, k), k = 0;
    }
    submit_and_drain(c, cbs, k);
    return checked(c, total);
}

/* 2. create a bind group (a distinct output each time) + encode + finish; every
 * BATCH, submit what was recorded and drain (untimed). */
int64_t floor_prerecord_miss(floor_ctx *c, uint64_t n, int64_t *samples) {
    WGPUCommandBuffer cbs[BATCH];
    uint64_t k = 0;
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUBuffer out = c->miss_outs[c->miss_next++ % c->miss_count];
        TIMED(i, {
            /* Both of vyre_native's caches miss: the kernel's group and the fill's. */
            WGPUBindGroup g = make_group(c, c->in, out, c->io_bytes);
            struct fill_bind fb;
            fill_plan(c, out, c->io_bytes, &fb);
            cbs[k] = encode(c, g, &fb);
            W.BindGroupRelease(g); /* the command buffer keeps them alive */
            W.BindGroupRelease(fb.group);
        });
        if (++k == BATCH) submit_and_drain(c, cbs, k), k = 0;
    }
    submit_and_drain(c, cbs, k);
    return checked(c, total);
}

/* 3. submit a pre-encoded command buffer, as the Python side replays: each is
 * encoded (untimed) just before its submit is timed; drain (untimed) every BATCH. */
int64_t floor_replay(floor_ctx *c, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUCommandBuffer cb = encode(c, c->group, &c->fill.out);
        TIMED(i, submit_one(c, cb));
        if ((i + 1) % BATCH == 0) drain(c);
    }
    drain(c);
    return checked(c, total);
}

/* 3b. the same submits back to back: encode BATCH (untimed), time the BATCH
 * submits one after another, drain (untimed). */
int64_t floor_replay_burst(floor_ctx *c, uint64_t n, int64_t *samples) {
    WGPUCommandBuffer cbs[BATCH];
    int64_t total = 0;
    for (uint64_t done = 0; done < n;) {
        uint64_t k = n - done < BATCH ? n - done : BATCH;
        for (uint64_t j = 0; j < k; j++) cbs[j] = encode(c, c->group, &c->fill.out);
        for (uint64_t j = 0; j < k; j++)
            TIMED(done + j, submit_one(c, cbs[j]));
        drain(c);
        done += k;
    }
    return checked(c, total);
}

/* 4. submit a pre-encoded command buffer (encoded untimed) and wait for it. */
int64_t floor_replay_wait(floor_ctx *c, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUCommandBuffer cb = encode(c, c->group, &c->fill.out);
        TIMED(i, {
            WGPUSubmissionIndex idx = submit_one(c, cb);
            W.DevicePoll(c->device, 1, &idx);
        });
    }
    return checked(c, total);
}

/* 5. encode + submit each dispatch; drain (untimed) every BATCH. */
int64_t floor_encode_submit(floor_ctx *c, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, submit_one(c, encode(c, c->group, &c->fill.out)));
        if ((i + 1) % BATCH == 0) drain(c);
    }
    drain(c);
    return checked(c, total);
}

struct map_result {
    atomic_int done;
    WGPUMapAsyncStatus status;
};

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
    (void)message;
    (void)u2;
    struct map_result *r = u1;
    r->status = status;
    atomic_store(&r->done, 1);
}

/* Map `nbytes` of `staging` for reading once submission `idx` is done: 0, or -1
 * with the message. */
static int map_after(floor_ctx *c, WGPUBuffer staging, uint64_t nbytes, WGPUSubmissionIndex idx) {
    struct map_result m = {0};
    WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_mapped;
    info.userdata1 = &m;
    W.BufferMapAsync(staging, WGPUMapMode_Read, 0, (size_t)nbytes, info);
    W.DevicePoll(c->device, 1, &idx);
    if (!wait_flag(c, &m.done, 60.0) || m.status != WGPUMapAsyncStatus_Success) {
        fail("mapping a staging buffer failed (status %d)", (int)m.status);
        return -1;
    }
    return 0;
}

/* The float32 sum of `nbytes` at p, eight partial sums (as a vectorised reduction adds):
 * the sum rows' floor of reading every byte once more. */
static volatile float sum_sink;
static void sum_f32(const void *p, uint64_t nbytes) {
    const float *f = p;
    uint64_t n = nbytes / 4;
    float acc[8] = {0};
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += f[i + k];
    for (; i < n; i++) acc[0] += f[i];
    sum_sink = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* Copy src to the staging buffer, submit, map, wait, memcpy to dst (none when dst is
 * NULL: the floor of a zero-copy read, whose mapped pointer is the result), with `sum`
 * the float32 sum of what was read (dst, or the mapped range), unmap. */
static int readback(floor_ctx *c, WGPUBuffer src, WGPUBuffer staging, uint64_t nbytes, void *dst, int sum) {
    WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
    W.CommandEncoderCopyBufferToBuffer(enc, src, 0, staging, 0, nbytes);
    if (map_after(c, staging, nbytes, finish_submit(c, enc)) < 0) return -1;
    const void *p = W.BufferGetConstMappedRange(staging, 0, (size_t)nbytes);
    if (p == NULL) {
        W.BufferUnmap(staging);
        fail("the mapped staging buffer has no range");
        return -1;
    }
    if (dst != NULL) memcpy(dst, p, (size_t)nbytes);
    if (sum) sum_f32(dst != NULL ? dst : p, nbytes);
    W.BufferUnmap(staging);
    return 0;
}

/* 6/7. read the small (which=0) or big (which=1) source back through its reused
 * staging buffer; into the reused host buffer (reuse=1) or a fresh malloc each
 * time (reuse=0, freed after the copy, as a new bytes object would be); reuse=2:
 * no host copy at all, only the staging copy and its map (a zero-copy read's floor).
 * reuse + 4 (FLOOR_READ_SUM): the same, then the float32 sum of what was read (the
 * floor of a read followed by arr.sum()). */
int64_t floor_read(floor_ctx *c, int which, uint64_t n, int reuse, int64_t *samples) {
    which = which ? 1 : 0;
    int sum = (reuse & 4) != 0;
    reuse &= 3;
    uint64_t nbytes = c->read_bytes[which];
    int64_t total = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        TIMED(i, {
            void *dst = reuse == 2 ? NULL : reuse ? c->read_dst[which] : malloc(nbytes);
            rc = dst == NULL && reuse != 2 ? (fail("out of host memory"), -1)
                                           : readback(c, c->read_src[which], c->staging[which], nbytes, dst, sum);
            if (!reuse) free(dst);
        });
    }
    return rc < 0 ? -1 : checked(c, total);
}

/* 8. a borrowed dispatch end to end: upload the host bytes into a new buffer
 * (mapped at creation), a new output, a new bind group, encode + submit, then
 * read the output back (its own copy + submit, as vyre_native and wgpu-py do) into
 * a fresh host buffer, and release everything. */
int64_t floor_borrowed(floor_ctx *c, const void *host, uint64_t nbytes, uint64_t n, int64_t *samples) {
    if (nbytes != c->io_bytes) {
        fail("floor_borrowed: %llu host bytes, the floor's kernel buffers hold %llu", (unsigned long long)nbytes,
             (unsigned long long)c->io_bytes);
        return -1;
    }
    const WGPUBufferUsage io = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    int64_t total = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        TIMED(i, {
            WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
            d.size = nbytes;
            d.usage = io;
            d.mappedAtCreation = 1;
            WGPUBuffer in = W.DeviceCreateBuffer(c->device, &d);
            memcpy(W.BufferGetMappedRange(in, 0, (size_t)nbytes), host, (size_t)nbytes);
            W.BufferUnmap(in);
            WGPUBuffer out = make_buffer(c, nbytes, io);
            WGPUBindGroup g = make_group(c, in, out, nbytes);
            struct fill_bind fb;
            fill_plan(c, out, nbytes, &fb);
            WGPUCommandBuffer cb = encode(c, g, &fb);
            W.BindGroupRelease(fb.group);
            submit_one(c, cb);
            void *dst = malloc(nbytes);
            rc = dst == NULL ? -1 : readback(c, out, c->staging[0], nbytes, dst, 0);
            if (rc == 0 && i == 0) memcpy(c->read_dst[0], dst, (size_t)nbytes); /* for floor_result() */
            free(dst);
            W.BindGroupRelease(g);
            W.BufferRelease(in);
            W.BufferRelease(out);
        });
    }
    return rc < 0 ? -1 : checked(c, total);
}

/* The first bytes floor_borrowed read back (a correctness check for the caller). */
int floor_result(floor_ctx *c, void *dst, uint64_t nbytes) {
    if (nbytes > c->read_bytes[0]) return -1;
    memcpy(dst, c->read_dst[0], (size_t)nbytes);
    return 0;
}

/* The host's memcpy of the big readback size into the reused destination: the
 * ceiling on any readback throughput. */
int64_t floor_memcpy(floor_ctx *c, uint64_t n) {
    if (c->memcpy_src == NULL) {
        c->memcpy_src = malloc(c->read_bytes[1]);
        if (c->memcpy_src == NULL) {
            fail("out of host memory");
            return -1;
        }
        memset(c->memcpy_src, 2, c->read_bytes[1]);
    }
    int64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        memcpy(c->read_dst[1], c->memcpy_src, (size_t)c->read_bytes[1]);
        __asm__ __volatile__("" ::: "memory");
    }
    return now_ns() - t0;
}

/* ---- beyond the seed: many launches per submit, and readbacks in flight ---------- */

/* 9. `launches` launches, each written the naive way (clear_buffer of the output,
 * its own compute pass, one dispatch), encoded into one command buffer and submitted
 * once: what Recording.replay(n) and a clearing sequence encoded before clears became
 * fills inside the pass (floor_fill_in_pass). Each sample is one whole submit of
 * `launches`; drain (untimed) after each. */
int64_t floor_encode_n_submit(floor_ctx *c, uint32_t launches, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, {
            WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
            for (uint32_t k = 0; k < launches; k++) {
                W.CommandEncoderClearBuffer(enc, c->out, 0, c->io_bytes);
                WGPUComputePassEncoder pass = W.CommandEncoderBeginComputePass(enc, NULL);
                kernel_in_pass(c, pass, c->group);
                end_pass(pass);
            }
            finish_submit(c, enc);
        });
        drain(c);
    }
    return checked(c, total);
}

/* How steps_in_one_pass sets up each step: PLAIN, the kernel's pipeline and bind group
 * set once; FILL, each step first fills the kernel's output (as a vyre_native step that
 * clears it), then sets the kernel's pipeline and bind group again; CHAIN, the
 * pipeline set once and the bind group every step, alternating (in, out) and
 * (out, in), so each step reads what the one before wrote; GRAPH, pipeline and bind
 * group both set every step, from floor_graph's (made before the first). */
enum { STEPS_PLAIN, STEPS_FILL, STEPS_CHAIN, STEPS_GRAPH };

/* `steps` dispatches of the launch kernel in ONE compute pass, one submit, each step
 * set up as `how` says. With wait, each sample also blocks until the GPU has
 * finished; without, the drain is untimed. */
static int64_t steps_in_one_pass(floor_ctx *c, uint32_t steps, int how, int wait, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, {
            WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
            WGPUComputePassEncoder pass = W.CommandEncoderBeginComputePass(enc, NULL);
            for (uint32_t k = 0; k < steps; k++) {
                if (how == STEPS_FILL) fill_in_pass(c, pass, &c->fill.out);
                if (how == STEPS_GRAPH) {
                    W.ComputePassEncoderSetPipeline(pass, k % 2 ? c->graph.second : c->pipeline);
                    W.ComputePassEncoderSetBindGroup(pass, 0, c->graph.groups[k], 0, NULL);
                } else {
                    if (how == STEPS_FILL || k == 0) W.ComputePassEncoderSetPipeline(pass, c->pipeline);
                    if (how != STEPS_PLAIN || k == 0)
                        W.ComputePassEncoderSetBindGroup(pass, 0, how == STEPS_CHAIN && k % 2 ? c->back : c->group,
                                                         0, NULL);
                }
                W.ComputePassEncoderDispatchWorkgroups(pass, 1, 1, 1);
            }
            end_pass(pass);
            WGPUSubmissionIndex idx = finish_submit(c, enc);
            if (wait) W.DevicePoll(c->device, 1, &idx);
        });
        if (!wait) drain(c);
    }
    return checked(c, total);
}

/* 10. `dispatches` dispatches in ONE compute pass (pipeline and bind group set once,
 * nothing cleared), one submit: the floor of a vyre_native sequence. */
int64_t floor_one_pass(floor_ctx *c, uint32_t dispatches, int wait, uint64_t n, int64_t *samples) {
    return steps_in_one_pass(c, dispatches, STEPS_PLAIN, wait, n, samples);
}

/* 10b. a dependent chain of `dispatches` tiny dispatches in ONE compute pass, one
 * submit: each reads what the one before wrote (the bind group alternates between
 * (in, out) and (out, in), set every step; the pipeline once), so wgpu puts a barrier
 * between every two. What any wgpu-native client pays for a graph of dependent kernels,
 * such as a tinygrad JIT: the floor of a Sequence whose steps change bindings. */
int64_t floor_chain(floor_ctx *c, uint32_t dispatches, int wait, uint64_t n, int64_t *samples) {
    return steps_in_one_pass(c, dispatches, STEPS_CHAIN, wait, n, samples);
}

/* 10c. a dependent chain of `steps` tiny dispatches in ONE compute pass, one submit, in
 * which every step changes both pipeline and bindings, as in a graph of a tensor
 * library's kernels (a tinygrad JIT): step k runs the launch kernel's pipeline (k even)
 * or a second pipeline of the same kernel (k odd), each with its own automatic layout,
 * on its own bind group (buffers[k] -> buffers[k + 1], steps + 1 buffers), so each
 * step reads what the one before wrote and wgpu puts a barrier between every two.
 * Pipelines, buffers and bind groups are made before timing, as a graph's are once. */
int64_t floor_graph(floor_ctx *c, uint32_t steps, int wait, uint64_t n, int64_t *samples) {
    struct floor_graph *g = &c->graph;
    if (g->second == NULL || g->second_layout == NULL) {
        fail("floor_graph: the second pipeline was not made");
        return -1;
    }
    if (g->steps != steps) {
        graph_release(c);
        const WGPUBufferUsage io = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
        g->buffers = calloc((size_t)steps + 1, sizeof *g->buffers);
        g->groups = calloc(steps ? steps : 1, sizeof *g->groups);
        if (g->buffers == NULL || g->groups == NULL) {
            fail("floor_graph: out of host memory");
            return -1;
        }
        g->steps = steps;
        for (uint32_t k = 0; k <= steps; k++) g->buffers[k] = make_buffer(c, c->io_bytes, io);
        for (uint32_t k = 0; k < steps; k++)
            g->groups[k] = make_group_of(c, k % 2 ? g->second_layout : c->layout, g->buffers[k], g->buffers[k + 1],
                                         c->io_bytes);
    }
    return steps_in_one_pass(c, steps, STEPS_GRAPH, wait, n, samples);
}

/* 11. the big source read back as `parts` equal slices, all in flight at once: one
 * copy per slice into its own reused staging buffer, one submit, every map
 * requested, one wait, then a memcpy of each slice into the reused destination. */
int64_t floor_read_parts(floor_ctx *c, uint32_t parts, uint64_t n, int64_t *samples) {
    enum { MAX_PARTS = 64 };
    WGPUBuffer *staging = c->part_staging;
    uint64_t slice = c->read_bytes[1] / parts;
    if (parts == 0 || parts > MAX_PARTS || slice % 4 != 0) {
        fail("floor_read_parts: %u parts of %llu bytes is not supported", parts, (unsigned long long)c->read_bytes[1]);
        return -1;
    }
    if (c->part_bytes != slice) {
        for (uint32_t k = 0; k < MAX_PARTS; k++)
            if (staging[k] != NULL) W.BufferRelease(staging[k]), staging[k] = NULL;
        for (uint32_t k = 0; k < parts; k++)
            staging[k] = make_buffer(c, slice, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
        c->part_bytes = slice;
    }
    int64_t total = 0;
    struct map_result maps[MAX_PARTS];
    for (uint64_t i = 0; i < n; i++) {
        int failed = 0;
        TIMED(i, {
            WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
            for (uint32_t k = 0; k < parts; k++)
                W.CommandEncoderCopyBufferToBuffer(enc, c->read_src[1], k * slice, staging[k], 0, slice);
            WGPUSubmissionIndex idx = finish_submit(c, enc);
            for (uint32_t k = 0; k < parts; k++) {
                memset(&maps[k], 0, sizeof maps[k]);
                WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
                info.mode = WGPUCallbackMode_AllowProcessEvents;
                info.callback = on_mapped;
                info.userdata1 = &maps[k];
                W.BufferMapAsync(staging[k], WGPUMapMode_Read, 0, (size_t)slice, info);
            }
            W.DevicePoll(c->device, 1, &idx);
            for (uint32_t k = 0; k < parts; k++) {
                if (!wait_flag(c, &maps[k].done, 60.0) || maps[k].status != WGPUMapAsyncStatus_Success) {
                    failed = 1;
                    continue;
                }
                const void *p = W.BufferGetConstMappedRange(staging[k], 0, (size_t)slice);
                if (p != NULL) memcpy((char *)c->read_dst[1] + k * slice, p, (size_t)slice);
                else failed = 1;
                W.BufferUnmap(staging[k]);
            }
        });
        if (failed) {
            fail("mapping a slice's staging buffer failed");
            return -1;
        }
    }
    return checked(c, total);
}

/* ---- upload ------------------------------------------------------------------------ */

/* 13. write `nbytes` of host memory into the big readback source with
 * wgpuQueueWriteBuffer, and wait until the queue has done it (an empty submit, then
 * a blocking poll): what buffer.write + wait_idle and wgpu-py's write_buffer + wait
 * cost. */
int64_t floor_write(floor_ctx *c, const void *host, uint64_t nbytes, uint64_t n, int64_t *samples) {
    if (nbytes > c->read_bytes[1]) {
        fail("floor_write: %llu bytes, the floor's big buffer holds %llu", (unsigned long long)nbytes,
             (unsigned long long)c->read_bytes[1]);
        return -1;
    }
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, {
            W.QueueWriteBuffer(c->queue, c->read_src[1], 0, host, (size_t)nbytes);
            W.QueueSubmitForIndex(c->queue, 0, NULL);
            drain(c);
        });
    }
    return checked(c, total);
}

/* ---- copies ------------------------------------------------------------------------- */

/* The floor of a copy whose bytes shift within their words (1 -> 2: three bytes), which
 * no CopyBufferToBuffer does: the best kernel of that shape, with nothing per call but
 * its dispatch (pipeline and bind group made once, the shift a constant): each
 * invocation stores one vec4 of destination words made from five source words. */
static const char SHIFT_FLOOR_WGSL[] =
    "@group(0) @binding(0) var<storage, read> src: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;\n"
    "const S: u32 = 24u;\n"
    "@compute @workgroup_size(256)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) g: vec3<u32>) {\n"
    "    for (var i = id.x; i < arrayLength(&dst); i += g.x * 256u) {\n"
    "        let w = i * 4u;\n"
    "        let a0 = src[w]; let a1 = src[w + 1u]; let a2 = src[w + 2u]; let a3 = src[w + 3u];\n"
    "        let a4 = src[w + 4u];\n"
    "        dst[i] = vec4<u32>((a0 >> S) | (a1 << (32u - S)), (a1 >> S) | (a2 << (32u - S)),\n"
    "                           (a2 >> S) | (a3 << (32u - S)), (a3 >> S) | (a4 << (32u - S)));\n"
    "    }\n"
    "}\n";

static int copy_setup(floor_ctx *c, uint64_t bytes) {
    struct floor_copy *k = &c->copy;
    if (k->bytes == bytes) return 0;
    if (k->bytes != 0) {
        fail("floor_copy: set up for %llu bytes, asked for %llu", (unsigned long long)k->bytes,
             (unsigned long long)bytes);
        return -1;
    }
    WGPUBufferUsage usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    k->src = make_buffer(c, bytes + 8, usage);
    k->dst = make_buffer(c, bytes + 8, usage);
    k->shift = compile_main(c, SHIFT_FLOOR_WGSL);
    if (k->shift == NULL) {
        fail("floor_copy: no shift pipeline");
        return -1;
    }
    WGPUBindGroupEntry e[2] = {WGPU_BIND_GROUP_ENTRY_INIT, WGPU_BIND_GROUP_ENTRY_INIT};
    e[0].binding = 0;
    e[0].buffer = k->src;
    e[0].size = bytes + 8;
    e[1].binding = 1;
    e[1].buffer = k->dst;
    e[1].size = bytes;
    WGPUBindGroupDescriptor d = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    d.layout = W.ComputePipelineGetBindGroupLayout(k->shift, 0);
    d.entryCount = 2;
    d.entries = e;
    k->group = W.DeviceCreateBindGroup(c->device, &d);
    W.BindGroupLayoutRelease(d.layout);
    uint64_t groups = (bytes / 16 + 255) / 256, cap = c->max_groups_per_dim < 65535 ? c->max_groups_per_dim : 65535;
    k->workgroups = (uint32_t)(groups < cap ? groups : cap);
    k->bytes = bytes;
    return checked(c, 0) < 0 ? -1 : 0;
}

/* 19. copy `bytes` between two buffers and wait for it (a blocking poll): shifted 0,
 * one CopyBufferToBuffer of whole words (what Device.copy at offsets 0 -> 0 does);
 * shifted 1, the kernel above over the same bytes (the floor of a copy 1 -> 2). */
int64_t floor_copy(floor_ctx *c, int shifted, uint64_t bytes, uint64_t n, int64_t *samples) {
    if (copy_setup(c, bytes) < 0) return -1;
    struct floor_copy *k = &c->copy;
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, {
            WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
            if (shifted) {
                WGPUComputePassEncoder pass = W.CommandEncoderBeginComputePass(enc, NULL);
                W.ComputePassEncoderSetPipeline(pass, k->shift);
                W.ComputePassEncoderSetBindGroup(pass, 0, k->group, 0, NULL);
                W.ComputePassEncoderDispatchWorkgroups(pass, k->workgroups, 1, 1);
                end_pass(pass);
            } else {
                W.CommandEncoderCopyBufferToBuffer(enc, k->src, 0, k->dst, 0, bytes);
            }
            WGPUSubmissionIndex idx = finish_submit(c, enc);
            W.DevicePoll(c->device, 1, &idx);
        });
    }
    return checked(c, total);
}

/* ---- compile ------------------------------------------------------------------------ */

/* 15. compile `wgsl` into a shader module and a compute pipeline with an automatic
 * layout (compile_main), then release both: what dev.compile and wgpu-py's create_shader_module +
 * create_compute_pipeline cost (the caller varies the source so no cache answers). */
int64_t floor_compile(floor_ctx *c, const char *wgsl, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        TIMED(i, {
            WGPUComputePipeline pipeline = compile_main(c, wgsl);
            if (pipeline == NULL) rc = (fail("floor_compile: no pipeline"), -1);
            else W.ComputePipelineRelease(pipeline);
        });
    }
    return rc < 0 ? -1 : checked(c, total);
}

/* 15b. floor_compile with each compile on a new thread of an 8 MiB stack, joined at
 * once: what a compile costs when it runs where its stack is known (vyre_native
 * compiles on such a thread: pipeline.c, vn_wgsl_compile_stack), so the thread's own
 * cost, and any per-thread start of the driver's, shows against floor_compile. */
struct compile_on_thread {
    floor_ctx *c;
    const char *wgsl;
    WGPUComputePipeline pipeline;
};

static void *compile_there(void *arg) {
    struct compile_on_thread *job = arg;
    job->pipeline = compile_main(job->c, job->wgsl);
    return NULL;
}

int64_t floor_compile_on_new_thread(floor_ctx *c, const char *wgsl, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    int rc = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)8 << 20);
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        TIMED(i, {
            struct compile_on_thread job = {c, wgsl, NULL};
            pthread_t thread;
            if (pthread_create(&thread, &attr, compile_there, &job) != 0) rc = (fail("floor_compile_on_new_thread: no thread"), -1);
            else pthread_join(thread, NULL);
            if (rc == 0 && job.pipeline == NULL) rc = (fail("floor_compile_on_new_thread: no pipeline"), -1);
            else if (job.pipeline != NULL) W.ComputePipelineRelease(job.pipeline);
        });
    }
    pthread_attr_destroy(&attr);
    return rc < 0 ? -1 : checked(c, total);
}

/* ---- clears inside the pass: vyre_native's zero fill --------------------------------- */

/* Make the fill pipelines from vyre_native's own fill WGSL (vn.debug.fill_wgsl()),
 * bind groups over the launch output and the big readback source, and the timestamp
 * queries floor_clear_gpu uses. 0, or -1 with floor_last_error(). */
int floor_fill_setup(floor_ctx *c, const char *fill_wgsl) {
    struct floor_fill *f = &c->fill;
    if (f->module != NULL) return 0;
    WGPUShaderSourceWGSL src = WGPU_SHADER_SOURCE_WGSL_INIT;
    src.code = sv(fill_wgsl);
    WGPUShaderModuleDescriptor smd = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
    smd.nextInChain = &src.chain;
    f->module = W.DeviceCreateShaderModule(c->device, &smd);
    static const char *const entry[2] = {"fill_words", "fill_quads"};
    for (uint32_t v = 0; v < 2; v++) {
        WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
        e.binding = v;
        e.visibility = WGPUShaderStage_Compute;
        e.buffer.type = WGPUBufferBindingType_Storage;
        e.buffer.minBindingSize = v ? 16 : 4;
        WGPUBindGroupLayoutDescriptor ld = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
        ld.entryCount = 1;
        ld.entries = &e;
        f->layouts[v] = W.DeviceCreateBindGroupLayout(c->device, &ld);
        WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
        pld.bindGroupLayoutCount = 1;
        pld.bindGroupLayouts = &f->layouts[v];
        WGPUPipelineLayout layout = W.DeviceCreatePipelineLayout(c->device, &pld);
        WGPUComputePipelineDescriptor pd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
        pd.layout = layout;
        pd.compute.module = f->module;
        pd.compute.entryPoint = sv(entry[v]);
        f->pipelines[v] = W.DeviceCreateComputePipeline(c->device, &pd);
        W.PipelineLayoutRelease(layout);
    }
    fill_plan(c, c->out, c->io_bytes, &f->out);
    fill_plan(c, c->read_src[1], c->read_bytes[1], &f->big);
    if (c->timestamps) {
        WGPUQuerySetDescriptor qd = WGPU_QUERY_SET_DESCRIPTOR_INIT;
        qd.type = WGPUQueryType_Timestamp;
        qd.count = 2;
        f->queries = W.DeviceCreateQuerySet(c->device, &qd);
        f->resolve = make_buffer(c, 16, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc);
        f->ticks = make_buffer(c, 16, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
    }
    W.DevicePoll(c->device, 1, NULL);
    if (checked(c, 0) < 0) return -1;
    if (f->pipelines[0] == NULL || f->pipelines[1] == NULL || f->out.group == NULL || f->big.group == NULL) {
        fail("making the fill pipelines failed");
        return -1;
    }
    return 0;
}

/* 16. `steps` steps in ONE compute pass, one submit, each as a sequence step that
 * clears its output: set the fill pipeline and its bind group, dispatch the fill,
 * set the kernel's pipeline and bind group, dispatch: the floor of a vyre_native
 * sequence whose steps clear their outputs (clear_outputs=True, the default). */
int64_t floor_fill_in_pass(floor_ctx *c, uint32_t steps, int wait, uint64_t n, int64_t *samples) {
    if (c->fill.module == NULL) {
        fail("floor_fill_in_pass: call floor_fill_setup first");
        return -1;
    }
    return steps_in_one_pass(c, steps, STEPS_FILL, wait, n, samples);
}

/* A compute pass that writes timestamp `begin` at its start and/or `end` at its end,
 * and holds, in order: the launch kernel's dispatch (when pre), the big buffer's
 * fill (when fill), the launch kernel's dispatch again (when post). */
static void timed_pass(floor_ctx *c, WGPUCommandEncoder enc, uint32_t begin, uint32_t end, int pre, int fill, int post) {
    WGPUPassTimestampWrites tw = WGPU_PASS_TIMESTAMP_WRITES_INIT;
    tw.querySet = c->fill.queries;
    tw.beginningOfPassWriteIndex = begin;
    tw.endOfPassWriteIndex = end;
    WGPUComputePassDescriptor pd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
    pd.timestampWrites = &tw;
    WGPUComputePassEncoder pass = W.CommandEncoderBeginComputePass(enc, &pd);
    int what[3] = {pre, fill, post};
    for (int k = 0; k < 3; k++) {
        if (!what[k]) continue;
        if (k == 1) {
            fill_in_pass(c, pass, &c->fill.big);
            continue;
        }
        kernel_in_pass(c, pass, c->group);
    }
    end_pass(pass);
}

/* 17. GPU time (timestamps, ns) of zeroing the big readback source (64 MiB) between
 * two launch-kernel dispatches, as a vyre_native sequence [dispatch, clear(big),
 * dispatch] replayed with timing=True measures it (the first pass's start to the last
 * pass's end): how = 0, clear_buffer between the two dispatches' passes; 1, the fill
 * dispatch in the one pass with both; 2, no clear (the two dispatches alone). Each
 * sample is submitted and waited for (untimed on the host); returns the samples' sum. */
int64_t floor_clear_gpu(floor_ctx *c, int how, uint64_t n, int64_t *samples) {
    struct floor_fill *f = &c->fill;
    if (f->module == NULL || f->queries == NULL) {
        fail(c->timestamps ? "floor_clear_gpu: call floor_fill_setup first"
                           : "floor_clear_gpu: the adapter has no timestamp queries");
        return -1;
    }
    const uint32_t none = WGPU_QUERY_SET_INDEX_UNDEFINED;
    double period = W.QueueGetTimestampPeriod(c->queue);
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
        if (how == 1) {
            timed_pass(c, enc, 0, 1, 1, 1, 1);
        } else {
            timed_pass(c, enc, 0, none, 1, 0, 0);
            if (how == 0) W.CommandEncoderClearBuffer(enc, c->read_src[1], 0, c->read_bytes[1]);
            timed_pass(c, enc, none, 1, 0, 0, 1);
        }
        W.CommandEncoderResolveQuerySet(enc, f->queries, 0, 2, f->resolve, 0);
        W.CommandEncoderCopyBufferToBuffer(enc, f->resolve, 0, f->ticks, 0, 16);
        if (map_after(c, f->ticks, 16, finish_submit(c, enc)) < 0) return -1;
        const uint64_t *t = W.BufferGetConstMappedRange(f->ticks, 0, 16);
        int64_t ns = t != NULL && t[1] > t[0] ? (int64_t)((double)(t[1] - t[0]) * period) : 0;
        W.BufferUnmap(f->ticks);
        total += ns;
        if (samples != NULL) samples[i] = ns;
    }
    return checked(c, total);
}
