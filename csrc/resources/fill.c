/* fill.c - the built-in zero fill: output clears planned as compute dispatches (encode.c
 * writes them into the pass).
 *
 * clear_buffer is a transfer command, so it ends the compute pass, and a sequence
 * whose steps clear their outputs became clear + pass + dispatch per step. On the
 * H200 that cost 12-20 µs a step on the host against 2 µs for dispatches sharing one
 * pass: wgpu-core's per-pass and per-transfer tracking, not the GPU. A dispatch of a
 * small fill kernel writes the zeros inside the pass instead, so steps that clear
 * keep sharing one pass. wgpu's usage tracking puts the barrier between the fill and
 * the step: every dispatch is a usage scope of its own, and a storage write after a
 * storage write is never a transition wgpu skips.
 *
 * Per device, made on first use under the scope lock and kept until the device is
 * freed: one shader module with two entry points (u32 words; vec4<u32> quads where
 * the size is a multiple of 16), a layout and a pipeline for each, and an LRU of
 * bind groups keyed by each buffer's allocation identity and size (bind_cache.c),
 * whose entries go when their buffer is released. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

/* Each invocation zeroes elements id, id + stride, ... (a grid-stride loop), so any
 * size fits in one dispatch of at most MAX_GROUPS workgroups; each store of a warp
 * or subgroup is contiguous. The words and quads bindings sit at different binding
 * numbers: one module cannot declare two variables at the same binding. */
static const char FILL_WGSL[] =
    "@group(0) @binding(0) var<storage, read_write> words: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> quads: array<vec4<u32>>;\n"
    "\n"
    "@compute @workgroup_size(256)\n"
    "fn fill_words(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n"
    "    let n = arrayLength(&words);\n"
    "    for (var i = id.x; i < n; i += groups.x * 256u) { words[i] = 0u; }\n"
    "}\n"
    "\n"
    "@compute @workgroup_size(256)\n"
    "fn fill_quads(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n"
    "    let n = arrayLength(&quads);\n"
    "    for (var i = id.x; i < n; i += groups.x * 256u) { quads[i] = vec4<u32>(); }\n"
    "}\n";

enum {
    WORKGROUP_SIZE = 256,
    /* One element per invocation up to 65535 workgroups (256 MiB of quads), the
     * most one dimension allows; bigger buffers loop. On the H200 a 64 MiB fill took
     * 21.2 µs with 16384 or 65535 workgroups against 22.1 with 1024 or 4096. */
    MAX_GROUPS = 65535,
    WORDS = 0,
    QUADS = 1
};

/* Where clear_buffer is kept. On a CPU adapter (Mesa's lavapipe) clear_buffer is a
 * memset (10-20 GB/s on one core) while a fill dispatch stores lane by lane (1.5-3
 * GB/s), so above a few KiB the fill's extra GPU time, paid on the same cores, passes
 * the 5-10 µs of host time a pass break costs there: measured on lavapipe, to
 * completion, 4 KiB was even, 16 KiB within the noise (0-10 µs a step lost) and
 * 64 KiB lost by 2x. On a GPU every bindable
 * buffer is filled: on the H200 a 64 MiB fill took about half clear_buffer's GPU
 * time, and from 256 B to 64 MiB fills won on the host and to completion (the
 * README's Benchmarks). */
static const uint64_t CPU_ADAPTER_FILL_MAX_BYTES = 16 << 10;

const char *vn_debug_fill_wgsl(void) { return FILL_WGSL; }

typedef struct vn_fill {
    WGPUShaderModule module;
    WGPUBindGroupLayout layouts[2];     /* [WORDS], [QUADS] */
    WGPUComputePipeline pipelines[2];
    /* The cache's view of the layouts: its group key is the variant, and each
     * variant's one binding number. */
    vn_binding bindings[2];
    vn_bind_cache cache;
    uint32_t max_groups;
    uint64_t max_bytes;                 /* larger buffers are cleared with clear_buffer */
} vn_fill;

static void fill_free(vn_fill *f) {
    for (int v = 0; v < 2; v++) {
        if (f->pipelines[v] != NULL) wgpu.ComputePipelineRelease(f->pipelines[v]);
        if (f->layouts[v] != NULL) wgpu.BindGroupLayoutRelease(f->layouts[v]);
    }
    if (f->module != NULL) wgpu.ShaderModuleRelease(f->module);
    vn_bind_cache_destroy(&f->cache);
    free(f);
}

/* The device frees its fill through this (the device names no fill function). */
static const vn_device_hooks fill_hooks = {NULL, vn_fill_release};

/* Inside a scope (its lock orders the first use): the device's fill, made now if it
 * is the first. Errors wgpu reports surface at the caller's vn_scope_end. */
static vn_status fill_get(vn_device *dev, vn_fill **out) {
    vn_fill *f = atomic_load_explicit(&dev->fill, memory_order_acquire);
    if (f != NULL) {
        *out = f;
        return VN_OK;
    }
    vn_status st = vn_device_check(dev, "making the zero-fill pipelines");
    if (st != VN_OK) return st;
    f = calloc(1, sizeof *f);
    if (f == NULL) return vn_fail_no_memory("the fill pipelines' record", sizeof *f);
    st = vn_bind_cache_init(&f->cache, 256);
    if (st != VN_OK) {
        free(f);
        return st;
    }
    f->module = vn_wgsl_module(dev, vn_sv(FILL_WGSL), "vyre_native zero fill", VN_CHECKS_ALL);
    static const char *const entry[2] = {"fill_words", "fill_quads"};
    for (uint32_t v = 0; v < 2 && f->module != NULL; v++) {
        f->bindings[v] = (vn_binding){.group = v, .binding = v, .kind = VN_BINDING_STORAGE_READ_WRITE,
                                      .binding_size = v == QUADS ? 16 : 4};
        WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
        e.binding = v;
        e.visibility = WGPUShaderStage_Compute;
        e.buffer.type = WGPUBufferBindingType_Storage;
        e.buffer.minBindingSize = f->bindings[v].binding_size; /* no per-dispatch size check */
        WGPUBindGroupLayoutDescriptor ld = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
        ld.entryCount = 1;
        ld.entries = &e;
        f->layouts[v] = wgpu.DeviceCreateBindGroupLayout(dev->device, &ld);
        WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
        pld.bindGroupLayoutCount = 1;
        pld.bindGroupLayouts = &f->layouts[v];
        WGPUPipelineLayout layout = wgpu.DeviceCreatePipelineLayout(dev->device, &pld);
        WGPUComputePipelineDescriptor cpd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
        cpd.label = vn_sv(entry[v]);
        cpd.layout = layout;
        cpd.compute.module = f->module;
        cpd.compute.entryPoint = vn_sv(entry[v]);
        f->pipelines[v] = wgpu.DeviceCreateComputePipeline(dev->device, &cpd);
        if (layout != NULL) wgpu.PipelineLayoutRelease(layout);
    }
    if (f->module == NULL || f->pipelines[WORDS] == NULL || f->pipelines[QUADS] == NULL) {
        fill_free(f);
        return vn_fail(VN_ERROR_INTERNAL, "wgpu-native made no zero-fill pipeline on '%s'. Fix: check the device "
                       "(is it lost?) and the GPU driver.", dev->info.name);
    }
    uint32_t per_dimension = dev->limits.maxComputeWorkgroupsPerDimension;
    f->max_groups = per_dimension != 0 && per_dimension < MAX_GROUPS ? per_dimension : MAX_GROUPS;
    f->max_bytes = strcmp(dev->info.adapter_type, "CPU") == 0 ? CPU_ADAPTER_FILL_MAX_BYTES
                                                               : dev->limits.maxStorageBufferBindingSize;
    vn_device_attach(dev, VN_PART_FILL, &fill_hooks);
    atomic_store_explicit(&dev->fill, f, memory_order_release);
    *out = f;
    return VN_OK;
}

/* The plan of vn_clear_plan. PLAN_CACHED makes nothing: *planned says whether the plan
 * is complete (false: the fill pipelines or its bind group do not exist yet);
 * PLAN_MISSED makes the bind group without looking it up (the caller's PLAN_CACHED just
 * missed); PLAN_ANY looks it up, then makes it. */
enum { PLAN_CACHED, PLAN_MISSED, PLAN_ANY }; /* what a plan may do: see clear_plan */

static vn_status clear_plan(vn_device *dev, const vn_view *view, int mode, vn_clear *out, bool *planned) {
    bool create = mode != PLAN_CACHED;
    memset(out, 0, sizeof *out);
    *planned = true;
    out->view = *view;
    uint64_t bytes = vn_pad4(view->size);
    /* A fill binds the range as storage: without STORAGE usage, at an offset a storage
     * binding cannot start at, or above the binding or fill limits, the clear stays a
     * clear_buffer (which needs only 4-byte alignment). */
    uint64_t align = dev->limits.minStorageBufferOffsetAlignment ? dev->limits.minStorageBufferOffsetAlignment : 256;
    if (!(view->buffer->usage & VN_USAGE_STORAGE) || view->offset % align != 0 ||
        bytes > dev->limits.maxStorageBufferBindingSize)
        return VN_OK;
    vn_fill *f = atomic_load_explicit(&dev->fill, memory_order_acquire);
    if (f == NULL && !create) {
        memset(out, 0, sizeof *out);
        *planned = false;
        return VN_OK;
    }
    vn_status st = f != NULL ? VN_OK : fill_get(dev, &f);
    if (st != VN_OK) return st;
    if (bytes > f->max_bytes) return VN_OK;
    uint32_t v = bytes % 16 == 0 ? QUADS : WORDS;
    vn_view bound = *view;
    bound.size = bytes;
    if (!create) {
        if (!vn_bind_cache_lookup(&f->cache, v, &bound, 1, &out->group)) {
            memset(out, 0, sizeof *out);
            *planned = false;
            return VN_OK;
        }
    } else {
        st = (mode == PLAN_MISSED ? vn_bind_cache_make : vn_bind_cache_fetch)(
            &f->cache, dev->device, f->layouts[v], f->bindings, 2, "vyre_native zero fill", v, &bound, 1, &out->group);
        if (st != VN_OK) return st;
    }
    uint64_t elements = bytes / (v == QUADS ? 16 : 4);
    uint64_t groups = (elements + WORKGROUP_SIZE - 1) / WORKGROUP_SIZE;
    out->workgroups = groups < f->max_groups ? (uint32_t)groups : f->max_groups;
    out->pipeline = f->pipelines[v];
    return VN_OK;
}

vn_status vn_clear_plan(vn_device *dev, const vn_view *view, vn_clear *out) {
    bool planned;
    return clear_plan(dev, view, PLAN_ANY, out, &planned);
}

vn_status vn_clear_plan_missed(vn_device *dev, const vn_view *view, vn_clear *out) {
    bool planned;
    return clear_plan(dev, view, PLAN_MISSED, out, &planned);
}

bool vn_clear_plan_cached(vn_device *dev, const vn_view *view, vn_clear *out) {
    bool planned = false;
    return clear_plan(dev, view, PLAN_CACHED, out, &planned) == VN_OK && planned;
}

void vn_clear_release(vn_clear *clear) {
    if (clear->group != NULL) {
        wgpu.BindGroupRelease(clear->group);
        vn_live_add(VN_LIVE_BIND_GROUP, -1);
    }
    memset(clear, 0, sizeof *clear);
}

void vn_fill_forget(vn_device *dev, uint64_t identity) {
    vn_fill *f = atomic_load_explicit(&dev->fill, memory_order_acquire);
    if (f != NULL) vn_bind_cache_forget(&f->cache, identity);
}

void vn_fill_release(vn_device *dev) {
    vn_fill *f = atomic_exchange_explicit(&dev->fill, NULL, memory_order_acq_rel);
    if (f != NULL) fill_free(f);
}
