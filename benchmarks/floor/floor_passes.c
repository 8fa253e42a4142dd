/* floor_passes.c - the raw-C floor's many dispatches in one pass: launches per submit, sequences, chains, graphs, fills and clears (floor.c says what the floor is). */

#include "floor.h"

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
