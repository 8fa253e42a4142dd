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
 *   cc -O2 -shared -fPIC -I<wgpu package>/resources floor*.c -o floor.so -ldl
 * and loaded with cffi in ABI mode. wgpu-native is dlopen'ed from the path the
 * caller passes (the file vyre_native loads), so one copy serves all three.
 *
 * The files: floor.c (this: the library table, the context, the helpers the operations
 * share), floor_launches.c (one dispatch: record, replay, submit), floor_passes.c (many
 * dispatches in one pass: sequences, chains, graphs, fills and clears), floor_reads.c
 * (readbacks), floor_transfers.c (writes, copies, compiles); floor.h what they share.
 */

#include "floor.h"

struct floor_wgpu W;

/* ---- errors ------------------------------------------------------------------ */

static char last_error[2048];

const char *floor_last_error(void) { return last_error; }

void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

void sv_copy(WGPUStringView v, char *buf, size_t cap) {
    size_t n = 0;
    if (v.data != NULL) n = v.length == WGPU_STRLEN ? strlen(v.data) : v.length;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(buf, v.data, n);
    buf[n] = '\0';
}

WGPUStringView sv(const char *s) {
    WGPUStringView v = {s, WGPU_STRLEN};
    return v;
}

int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}


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
int64_t checked(floor_ctx *c, int64_t ns) {
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

int wait_flag(floor_ctx *c, atomic_int *flag, double limit_s) {
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

WGPUBuffer make_buffer(floor_ctx *c, uint64_t size, WGPUBufferUsage usage) {
    WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
    d.size = size;
    d.usage = usage;
    return W.DeviceCreateBuffer(c->device, &d);
}

WGPUBindGroup make_group_of(floor_ctx *c, WGPUBindGroupLayout layout, WGPUBuffer in, WGPUBuffer out,
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
WGPUBindGroup make_group(floor_ctx *c, WGPUBuffer in, WGPUBuffer out, uint64_t bytes) {
    return make_group_of(c, c->layout, in, out, bytes);
}

/* floor_graph's buffers and bind groups (made at its first call for a step count). */
void graph_release(floor_ctx *c) {
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
WGPUComputePipeline compile_main(floor_ctx *c, const char *wgsl) {
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
    for (uint32_t k = 0; k < c->one.count; k++) W.CommandBufferRelease(c->one.kept[k]);
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

/* The helpers the operations share (TIMED: floor.h). */

/* The fill of `bytes` (a multiple of 4) as vyre_native dispatches it (csrc/resources/fill.c):
 * the quads entry point where the size is a multiple of 16, else words; one
 * workgroup of 256 per 256 elements, at most 65535 (or the device's per-dimension
 * limit), each invocation looping with that stride. Needs floor_fill_setup's layouts;
 * the caller releases fb->group. */
void fill_plan(floor_ctx *c, WGPUBuffer buffer, uint64_t bytes, struct fill_bind *fb) {
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
void fill_in_pass(floor_ctx *c, WGPUComputePassEncoder pass, const struct fill_bind *fb) {
    W.ComputePassEncoderSetPipeline(pass, c->fill.pipelines[fb->variant]);
    W.ComputePassEncoderSetBindGroup(pass, 0, fb->group, 0, NULL);
    W.ComputePassEncoderDispatchWorkgroups(pass, fb->workgroups, 1, 1);
}

/* Inside a pass: the launch kernel, one workgroup, on `group`'s buffers. */
void kernel_in_pass(floor_ctx *c, WGPUComputePassEncoder pass, WGPUBindGroup group) {
    W.ComputePassEncoderSetPipeline(pass, c->pipeline);
    W.ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    W.ComputePassEncoderDispatchWorkgroups(pass, 1, 1, 1);
}

void end_pass(WGPUComputePassEncoder pass) {
    W.ComputePassEncoderEnd(pass);
    W.ComputePassEncoderRelease(pass);
}

/* Submit one command buffer and release it: the submission's index. This and
 * finish_submit stand inside the rows' timed parts for the calls they make, no more. */
WGPUSubmissionIndex submit_one(floor_ctx *c, WGPUCommandBuffer cb) {
    WGPUSubmissionIndex idx = W.QueueSubmitForIndex(c->queue, 1, &cb);
    W.CommandBufferRelease(cb);
    return idx;
}

/* Finish `enc`, submit its one command buffer and release both: the submission's index. */
WGPUSubmissionIndex finish_submit(floor_ctx *c, WGPUCommandEncoder enc) {
    WGPUCommandBuffer cb = W.CommandEncoderFinish(enc, NULL);
    W.CommandEncoderRelease(enc);
    return submit_one(c, cb);
}

/* What vyre_native records for this kernel: one compute pass with the output's
 * fill (its clear) and one 1x1x1 dispatch. */
WGPUCommandBuffer encode(floor_ctx *c, WGPUBindGroup group, const struct fill_bind *fill) {
    WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
    WGPUComputePassEncoder pass = W.CommandEncoderBeginComputePass(enc, NULL);
    fill_in_pass(c, pass, fill);
    kernel_in_pass(c, pass, group);
    end_pass(pass);
    WGPUCommandBuffer cb = W.CommandEncoderFinish(enc, NULL);
    W.CommandEncoderRelease(enc);
    return cb;
}

void drain(floor_ctx *c) { W.DevicePoll(c->device, 1, NULL); }

/* Submit what a prerecord loop encoded (untimed) and wait: wgpu-native 29 does not
 * reclaim a command buffer dropped unsubmitted (about 95 KB each on lavapipe, and
 * every later encode then allocates a fresh one), so recordings are replayed
 * rather than dropped, as the Python side does. */
void submit_and_drain(floor_ctx *c, WGPUCommandBuffer *cbs, uint64_t k) {
    if (k == 0) return;
    W.QueueSubmitForIndex(c->queue, (size_t)k, cbs);
    for (uint64_t j = 0; j < k; j++) W.CommandBufferRelease(cbs[j]);
    drain(c);
}

/* 1. encode + finish with an existing bind group; every BATCH, submit what was
 * recorded and drain (untimed). */
