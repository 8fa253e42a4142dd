/* floor_transfers.c - the raw-C floor's transfers and compiles: writes, copies, the compile rows (floor.c says what the floor is). */

#include "floor.h"

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
