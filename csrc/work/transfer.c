/* transfer.c - writes and buffer-to-buffer copies at any byte offset and size.
 *
 * WebGPU moves whole 4-byte words: wgpuQueueWriteBuffer and CopyBufferToBuffer need
 * 4-aligned offsets and sizes. Whole words go that way. A word the transfer covers only
 * in part (its head or tail, or every word of a copy whose source and destination sit at
 * different offsets within their words) has other bytes that must stay as they are, and
 * at the moment the transfer lands, not when it is called: GPU work queued before may
 * still write them. So the merge is a read-modify-write on the queue itself, in one
 * command buffer submitted right after the whole-word writes:
 *   copy the enclosing words of the destination (and of a GPU source) into a small
 *   temporary buffer T, run one tiny dispatch (MERGE_WGSL) that sets exactly the
 *   transfer's bytes of those words, and copy the words back.
 * Queue order does the rest: the command buffer runs after everything submitted before
 * it (and after the queued whole-word writes, which wgpu flushes at this submit), and
 * before everything submitted after. No host wait and no lock beyond a submit's: T is
 * private to one transfer. The alternative, copying the enclosing words to the host
 * after earlier work completes and writing them back, waits for the GPU on every
 * partial word and races with other threads' submits between the read and the write.
 *
 * Only T is bound (as storage), so the user's buffers need copy usages alone: COPY_DST,
 * and COPY_SRC where a partial word is read back in. A partial word whose other bytes
 * all lie past byte_len (the allocation's padding) needs no merge: it is written whole.
 * One exception, for speed: a copy whose bytes shift within their words, between two
 * buffers that both have STORAGE usage, is one dispatch of SHIFT_WGSL binding both (one
 * destination word an invocation, a partial head or tail word read and merged in place),
 * with no T and no copies around it.
 *
 * Per device, made on first use under the scope lock and kept until the device is
 * freed: one shader module, its layout and pipeline.
 *
 * This file holds the merge and the shift kernel (their WGSL, pipelines, chunks and
 * encoding) and the submit that ends a transfer; writes are buffer_write.c's, copies
 * buffer_copy.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

/* T holds a header of 4 u32 (lo, hi, a_lo, b: B's bytes [lo, hi) are set from A's bytes
 * from a_lo on; B starts at word b), then region A (source words), then region B (the
 * destination's words). Each invocation sets whole words of B (a grid-stride loop): a
 * word inside [lo, hi) from two words of A shifted, a partial one byte by byte from A
 * or kept, so nothing outside [lo, hi) changes. */
static const char MERGE_WGSL[] =
    "@group(0) @binding(0) var<storage, read_write> t: array<u32>;\n"
    "\n"
    "fn byte_at(i: u32) -> u32 { return (t[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }\n"
    "\n"
    "@compute @workgroup_size(64)\n"
    "fn merge(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n"
    "    let lo = t[0];\n"
    "    let hi = t[1];\n"
    "    let a_lo = t[2];\n"
    "    let b = t[3];\n"
    "    let words = (hi + 3u) / 4u;\n"
    "    for (var j = id.x; j < words; j += groups.x * 64u) {\n"
    "        if (j * 4u >= lo && j * 4u + 4u <= hi) {\n"
    "            // a whole word: two source words, shifted (one where aligned)\n"
    "            let q = 16u + a_lo + j * 4u - lo;\n"
    "            let s = (q & 3u) * 8u;\n"
    "            var w = t[q >> 2u];\n"
    "            if (s != 0u) { w = (w >> s) | (t[(q >> 2u) + 1u] << (32u - s)); }\n"
    "            t[b + j] = w;\n"
    "            continue;\n"
    "        }\n"
    "        var w = t[b + j];\n"
    "        for (var k = 0u; k < 4u; k++) {\n"
    "            let p = j * 4u + k;\n"
    "            if (p >= lo && p < hi) {\n"
    "                let shift = k * 8u;\n"
    "                w = (w & ~(0xffu << shift)) | (byte_at(16u + a_lo + p - lo) << shift);\n"
    "            }\n"
    "        }\n"
    "        t[b + j] = w;\n"
    "    }\n"
    "}\n";

/* A copy whose bytes shift within their words, between two buffers that can both be
 * bound as storage, whole in one dispatch: each invocation sets one destination word (a
 * grid-stride loop, consecutive invocations on consecutive words). p.x: the first source
 * byte (from the start of src's binding), [p.y, p.z): the destination bytes (from the
 * start of dst's binding). A word inside [p.y, p.z) is two source words shifted (the
 * shift is never 0 here: the offsets differ within their words); a word covered in part
 * (the head or the tail) is read and its bytes of the copy set one by one, so no other
 * byte changes; no other invocation touches that word. Every source word read holds a
 * source byte of the copy, so the bound source range holds them all. */
static const char SHIFT_WGSL[] =
    "@group(0) @binding(0) var<storage, read> src: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n"
    "@group(0) @binding(2) var<uniform> p: vec4<u32>;\n"
    "\n"
    "fn source_byte(b: u32) -> u32 {\n"
    "    let at = p.x + (b - p.y);\n"
    "    return (src[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;\n"
    "}\n"
    "\n"
    "@compute @workgroup_size(256)\n"
    "fn shift(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n"
    "    let w0 = p.y >> 2u;\n"
    "    let words = ((p.z + 3u) >> 2u) - w0;\n"
    "    for (var i = id.x; i < words; i += groups.x * 256u) {\n"
    "        let w = w0 + i;\n"
    "        let lo = max(p.y, w * 4u);\n"
    "        let hi = min(p.z, w * 4u + 4u);\n"
    "        if (lo == w * 4u && hi == w * 4u + 4u) {\n"
    "            // two source words shifted, or one where the bytes keep their places\n"
    "            let at = p.x + (w * 4u - p.y);\n"
    "            let s = (at & 3u) * 8u;\n"
    "            var v = src[at >> 2u];\n"
    "            if (s != 0u) { v = (v >> s) | (src[(at >> 2u) + 1u] << (32u - s)); }\n"
    "            dst[w] = v;\n"
    "        } else {\n"
    "            var v = dst[w];\n"
    "            for (var b = lo; b < hi; b++) {\n"
    "                let k = (b & 3u) * 8u;\n"
    "                v = (v & ~(0xffu << k)) | (source_byte(b) << k);\n"
    "            }\n"
    "            dst[w] = v;\n"
    "        }\n"
    "    }\n"
    "}\n";

/* A write's partial head and tail words, set in place: each of (at most) two invocations
 * sets the bytes `mask` names of destination word x to those of `value` (mask 0: no
 * word), so no other byte of it changes. */
static const char PATCH_WGSL[] =
    "@group(0) @binding(0) var<storage, read_write> dst: array<u32>;\n"
    "@group(0) @binding(1) var<uniform> words: array<vec4<u32>, 2>;\n"
    "\n"
    "@compute @workgroup_size(2)\n"
    "fn set_words(@builtin(local_invocation_index) i: u32) {\n"
    "    let w = words[i];\n"
    "    if (w.y != 0u) {\n"
    "        dst[w.x] = (dst[w.x] & ~w.y) | (w.z & w.y);\n"
    "    }\n"
    "}\n";

enum { WORKGROUP_SIZE = 64, HEADER = 16 };
enum { SHIFT_WORKGROUP_SIZE = 256 };

/* A copy whose source and destination sit at different offsets within their words goes
 * through T in chunks of at most this many destination bytes, so T stays small. */
static const uint64_t CHUNK_BYTES = (uint64_t)4 << 20;

static void transfer_free(struct vn_transfer *x) {
    if (x->patch_pipeline != NULL) wgpu.ComputePipelineRelease(x->patch_pipeline);
    if (x->patch_layout != NULL) wgpu.BindGroupLayoutRelease(x->patch_layout);
    if (x->patch_module != NULL) wgpu.ShaderModuleRelease(x->patch_module);
    if (x->shift_pipeline != NULL) wgpu.ComputePipelineRelease(x->shift_pipeline);
    if (x->shift_layout != NULL) wgpu.BindGroupLayoutRelease(x->shift_layout);
    if (x->shift_module != NULL) wgpu.ShaderModuleRelease(x->shift_module);
    if (x->pipeline != NULL) wgpu.ComputePipelineRelease(x->pipeline);
    if (x->layout != NULL) wgpu.BindGroupLayoutRelease(x->layout);
    if (x->module != NULL) wgpu.ShaderModuleRelease(x->module);
    free(x);
}

/* Free the device's transfer kernel state: the device's hook, run at its free. */
static void transfer_release(vn_device *dev);
static const vn_device_hooks transfer_hooks = {NULL, transfer_release};

/* A pipeline of `entry` in `module` (NULL: none) over one group of `entries`; *group gets
 * its bind-group layout. NULL when wgpu made none (the scope has the error). */
static WGPUComputePipeline make_pipeline(vn_device *dev, WGPUShaderModule module, const WGPUBindGroupLayoutEntry *entries,
                                         size_t count, const char *label, const char *entry, WGPUBindGroupLayout *group) {
    WGPUBindGroupLayoutDescriptor ld = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
    ld.entryCount = count;
    ld.entries = entries;
    *group = wgpu.DeviceCreateBindGroupLayout(dev->device, &ld);
    WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
    pld.bindGroupLayoutCount = 1;
    pld.bindGroupLayouts = group;
    WGPUPipelineLayout layout = module != NULL ? wgpu.DeviceCreatePipelineLayout(dev->device, &pld) : NULL;
    if (layout == NULL) return NULL;
    WGPUComputePipelineDescriptor cpd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
    cpd.label = vn_sv(label);
    cpd.layout = layout;
    cpd.compute.module = module;
    cpd.compute.entryPoint = vn_sv(entry);
    WGPUComputePipeline pipeline = wgpu.DeviceCreateComputePipeline(dev->device, &cpd);
    wgpu.PipelineLayoutRelease(layout);
    return pipeline;
}

/* Inside a scope (its lock orders the first use): the device's merge pipeline. */
vn_status vn_transfer_get(vn_device *dev, struct vn_transfer **out) {
    struct vn_transfer *x = atomic_load_explicit(&dev->transfer, memory_order_acquire);
    if (x != NULL) {
        *out = x;
        return VN_OK;
    }
    x = calloc(1, sizeof *x);
    if (x == NULL) return vn_fail_no_memory("the byte-merge pipeline's record", sizeof *x);
    x->module = vn_wgsl_module(dev, vn_sv(MERGE_WGSL), "vyre_native byte merge", VN_CHECKS_ALL);
    WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
    e.binding = 0;
    e.visibility = WGPUShaderStage_Compute;
    e.buffer.type = WGPUBufferBindingType_Storage;
    e.buffer.minBindingSize = HEADER;
    x->pipeline = make_pipeline(dev, x->module, &e, 1, "vyre_native byte merge", "merge", &x->layout);
    x->shift_module = vn_wgsl_module(dev, vn_sv(SHIFT_WGSL), "vyre_native shifted copy", VN_CHECKS_ALL);
    WGPUBindGroupLayoutEntry se[3];
    for (uint32_t i = 0; i < 3; i++) {
        se[i] = (WGPUBindGroupLayoutEntry)WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
        se[i].binding = i;
        se[i].visibility = WGPUShaderStage_Compute;
        se[i].buffer.type = i == 0 ? WGPUBufferBindingType_ReadOnlyStorage
                                   : i == 1 ? WGPUBufferBindingType_Storage : WGPUBufferBindingType_Uniform;
        se[i].buffer.minBindingSize = i == 2 ? 16 : 4;
    }
    x->shift_pipeline = make_pipeline(dev, x->shift_module, se, 3, "vyre_native shifted copy", "shift", &x->shift_layout);
    x->patch_module = vn_wgsl_module(dev, vn_sv(PATCH_WGSL), "vyre_native word patch", VN_CHECKS_ALL);
    se[0].buffer.type = WGPUBufferBindingType_Storage; /* binding 0: dst; binding 1: the words */
    se[1].buffer.type = WGPUBufferBindingType_Uniform;
    se[1].buffer.minBindingSize = 32;
    x->patch_pipeline = make_pipeline(dev, x->patch_module, se, 2, "vyre_native word patch", "set_words", &x->patch_layout);
    if (x->pipeline == NULL || x->shift_pipeline == NULL || x->patch_pipeline == NULL) {
        transfer_free(x);
        return vn_fail(VN_ERROR_INTERNAL, "wgpu-native made no byte-merge, shifted-copy or word-patch pipeline on '%s'. Fix: check the device (is "
                       "it lost?) and the GPU driver.", dev->info.name);
    }
    uint32_t per_dimension = dev->limits.maxComputeWorkgroupsPerDimension;
    x->max_groups = per_dimension != 0 && per_dimension < 65535 ? per_dimension : 65535;
    /* T binds whole: a header and two chunk-sized regions within the binding limit. */
    uint64_t fit = (dev->limits.maxStorageBufferBindingSize - 64) / 2 & ~(uint64_t)3;
    x->chunk_bytes = fit < CHUNK_BYTES ? fit : CHUNK_BYTES;
    vn_device_attach(dev, VN_PART_TRANSFER, &transfer_hooks);
    atomic_store_explicit(&dev->transfer, x, memory_order_release);
    *out = x;
    return VN_OK;
}

static void transfer_release(vn_device *dev) {
    struct vn_transfer *x = atomic_exchange_explicit(&dev->transfer, NULL, memory_order_acq_rel);
    if (x != NULL) transfer_free(x);
}

/* A chunk setting destination bytes [d0, d1) from source bytes starting at s (in src, or
 * at host byte s of host_a when src is NULL); [d0, d1) spans at most chunk_bytes of words.
 * len: the destination's byte_len (bytes past it are padding: never read in). */
vn_chunk vn_merge_chunk(WGPUBuffer src, uint64_t s, uint64_t d0, uint64_t d1, uint64_t len) {
    vn_chunk c;
    memset(&c, 0, sizeof c);
    c.src = src;
    c.dst_at = d0 & ~(uint64_t)3;
    c.lo = (uint32_t)(d0 - c.dst_at);
    c.hi = (uint32_t)(d1 - c.dst_at);
    c.b_bytes = vn_round_up4(c.hi);
    uint64_t s_word = src != NULL ? s & ~(uint64_t)3 : 0;
    c.src_at = s_word;
    c.a_lo = (uint32_t)(s - s_word);
    c.a_bytes = vn_round_up4(c.a_lo + (d1 - d0));
    c.read_first = c.lo != 0;
    c.read_last = c.hi % 4 != 0 && d1 < len;
    return c;
}

/* The storage bindings the shift and patch kernels make of a user's buffer: the offset
 * alignment the device asks for (a power of 2, a multiple of 4), and the most bytes one
 * binding may cover (the device's limit, below 4 GiB: the kernels count bytes in u32). */
static uint64_t bind_align(const vn_device *dev) {
    return dev->limits.minStorageBufferOffsetAlignment ? dev->limits.minStorageBufferOffsetAlignment : 256;
}
static uint64_t bind_limit(const vn_device *dev) {
    uint64_t limit = dev->limits.maxStorageBufferBindingSize;
    return limit > UINT32_MAX ? UINT32_MAX & ~(uint64_t)3 : limit;
}

/* A kernel's parameters as a new uniform buffer (NULL when wgpu made none: the scope
 * has why); the caller releases it once the command buffer that binds it is finished. */
static WGPUBuffer uniform_params(vn_device *dev, const char *label, const void *data, size_t size) {
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.label = vn_sv(label);
    desc.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
    desc.size = size;
    WGPUBuffer params = wgpu.DeviceCreateBuffer(dev->device, &desc);
    if (params != NULL) wgpu.QueueWriteBuffer(dev->queue, params, 0, data, size);
    return params;
}

/* One compute pass of one dispatch of `pipeline` on `group`, for `items` of work at
 * `per_group` a workgroup (the kernels loop over what the groups cannot reach). */
static void dispatch_pass(const struct vn_transfer *x, WGPUCommandEncoder enc, WGPUComputePipeline pipeline,
                          WGPUBindGroup group, uint64_t items, uint64_t per_group) {
    uint64_t groups = (items + per_group - 1) / per_group;
    WGPUComputePassEncoder pass = wgpu.CommandEncoderBeginComputePass(enc, NULL);
    wgpu.ComputePassEncoderSetPipeline(pass, pipeline);
    wgpu.ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    wgpu.ComputePassEncoderDispatchWorkgroups(pass, groups < x->max_groups ? (uint32_t)groups : x->max_groups, 1, 1);
    wgpu.ComputePassEncoderEnd(pass);
    wgpu.ComputePassEncoderRelease(pass);
}

/* Whether a shifted copy of n bytes from src's byte s to dst's byte d can take the shift
 * kernel: both buffers distinct and with STORAGE usage, and each bound range (from an
 * offset the device allows, over the words the copy touches) within the binding limit
 * and below 4 GiB (the kernel counts bytes in u32); *w gets the bindings' offsets. */
static bool shift_fits(const vn_device *dev, const vn_buffer *sb, const vn_buffer *db, uint64_t s, uint64_t d,
                       uint64_t n, vn_words_copy *w) {
    uint64_t align = bind_align(dev), limit = bind_limit(dev);
    if (sb == db || n == 0 || !(sb->usage & VN_USAGE_STORAGE) || !(db->usage & VN_USAGE_STORAGE)) return false;
    w->src_bind = s - s % align;
    w->dst_bind = d - d % align;
    return vn_round_up4(s + n) - w->src_bind <= limit && vn_round_up4(d + n) - w->dst_bind <= limit;
}

/* What a shift dispatch made, released once its command buffer is finished. */
typedef struct shift_objects {
    WGPUBuffer params;
    WGPUBindGroup group;
} shift_objects;

static void encode_words(vn_device *dev, WGPUCommandEncoder enc, WGPUBuffer dst, const vn_words_copy *w,
                         shift_objects *made) {
    made->params = NULL;
    made->group = NULL;
    if (w->n == 0) return;
    if (w->shift == NULL) {
        wgpu.CommandEncoderCopyBufferToBuffer(enc, w->src, w->src_at, dst, w->dst_at, w->n);
        return;
    }
    uint64_t first = w->src_at - w->src_bind, d0 = w->dst_at - w->dst_bind, d1 = d0 + w->n;
    uint32_t p[4] = {(uint32_t)first, (uint32_t)d0, (uint32_t)d1, 0};
    made->params = uniform_params(dev, "vyre_native shifted copy", p, sizeof p);
    if (made->params == NULL) return;
    WGPUBindGroupEntry be[3];
    for (int i = 0; i < 3; i++) be[i] = (WGPUBindGroupEntry)WGPU_BIND_GROUP_ENTRY_INIT;
    be[0].binding = 0;
    be[0].buffer = w->src;
    be[0].offset = w->src_bind;
    be[0].size = vn_round_up4(w->src_at + w->n) - w->src_bind;
    be[1].binding = 1;
    be[1].buffer = dst;
    be[1].offset = w->dst_bind;
    be[1].size = vn_round_up4(d1);
    be[2].binding = 2;
    be[2].buffer = made->params;
    be[2].size = sizeof p;
    WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    bd.label = vn_sv("vyre_native shifted copy");
    bd.layout = w->shift->shift_layout;
    bd.entryCount = 3;
    bd.entries = be;
    made->group = wgpu.DeviceCreateBindGroup(dev->device, &bd);
    dispatch_pass(w->shift, enc, w->shift->shift_pipeline, made->group, vn_round_up4(d1) / 4 - d0 / 4,
                  SHIFT_WORKGROUP_SIZE);
}

static void release_shift_objects(const shift_objects *made) {
    if (made->group != NULL) wgpu.BindGroupRelease(made->group);
    if (made->params != NULL) wgpu.BufferRelease(made->params);
}

static WGPUCommandBuffer finish_words(vn_device *dev, WGPUBuffer dst, const vn_words_copy *w) {
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    shift_objects made;
    encode_words(dev, enc, dst, w, &made);
    WGPUCommandBuffer cb = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    release_shift_objects(&made);
    return cb;
}

/* Inside a scope: encode `pre` (may be NULL), then the chunks (their order, or the
 * reverse) through one T, into *out. host_a (host_a_bytes, a multiple of 4): region A's
 * bytes from the host, or NULL. */
vn_status vn_encode_merge(vn_device *dev, WGPUBuffer dst, const vn_words_copy *pre, vn_chunk *c, size_t count,
                               bool reverse, const void *host_a, uint64_t host_a_bytes, WGPUCommandBuffer *out) {
    *out = NULL;
    static const vn_words_copy none = {NULL, 0, 0, 0, NULL, 0, 0};
    if (count == 0) {
        *out = finish_words(dev, dst, pre != NULL ? pre : &none);
        return VN_OK;
    }
    struct vn_transfer *x = NULL;
    vn_status st = vn_transfer_get(dev, &x);
    if (st != VN_OK) return st;
    uint64_t a_cap = host_a_bytes, b_cap = 4;
    for (size_t i = 0; i < count; i++) {
        if (c[i].src != NULL && c[i].a_bytes > a_cap) a_cap = c[i].a_bytes;
        if (c[i].b_bytes > b_cap) b_cap = c[i].b_bytes;
    }
    uint64_t b_off = HEADER + a_cap;
    uint32_t *headers = malloc(count * HEADER);
    if (headers == NULL) return vn_fail_no_memory("transfer headers", count * HEADER);
    for (size_t i = 0; i < count; i++) {
        headers[4 * i] = c[i].lo;
        headers[4 * i + 1] = c[i].hi;
        headers[4 * i + 2] = (uint32_t)c[i].a_at + c[i].a_lo;
        headers[4 * i + 3] = (uint32_t)(b_off / 4);
    }
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.label = vn_sv("vyre_native transfer words");
    desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    desc.size = b_off + b_cap;
    WGPUBuffer t = wgpu.DeviceCreateBuffer(dev->device, &desc);
    /* One chunk: its header goes straight into T. Several: a table, each header copied
     * into T before its dispatch (the copies are ordered within the command buffer). */
    WGPUBuffer table = NULL;
    if (count > 1) {
        desc.label = vn_sv("vyre_native transfer headers");
        desc.usage = WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
        desc.size = count * HEADER;
        table = wgpu.DeviceCreateBuffer(dev->device, &desc);
    }
    if (t == NULL || (count > 1 && table == NULL)) {
        if (t != NULL) wgpu.BufferRelease(t);
        if (table != NULL) wgpu.BufferRelease(table);
        free(headers);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "wgpu-native returned no transfer buffer of %llu bytes. Fix: free GPU "
                       "memory.", (unsigned long long)(b_off + b_cap));
    }
    if (table != NULL) wgpu.QueueWriteBuffer(dev->queue, table, 0, headers, count * HEADER);
    else wgpu.QueueWriteBuffer(dev->queue, t, 0, headers, HEADER);
    free(headers);
    if (host_a != NULL && host_a_bytes > 0) wgpu.QueueWriteBuffer(dev->queue, t, HEADER, host_a, (size_t)host_a_bytes);
    WGPUBindGroupEntry be = WGPU_BIND_GROUP_ENTRY_INIT;
    be.binding = 0;
    be.buffer = t;
    be.offset = 0;
    be.size = b_off + b_cap;
    WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    bd.label = vn_sv("vyre_native transfer words");
    bd.layout = x->layout;
    bd.entryCount = 1;
    bd.entries = &be;
    WGPUBindGroup group = wgpu.DeviceCreateBindGroup(dev->device, &bd);
    WGPUCommandEncoderDescriptor ed = WGPU_COMMAND_ENCODER_DESCRIPTOR_INIT;
    ed.label = vn_sv("vyre_native transfer");
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, &ed);
    shift_objects made = {NULL, NULL};
    if (pre != NULL) encode_words(dev, enc, dst, pre, &made);
    for (size_t k = 0; k < count; k++) {
        const vn_chunk *ch = &c[reverse ? count - 1 - k : k];
        size_t i = (size_t)(ch - c);
        if (table != NULL) wgpu.CommandEncoderCopyBufferToBuffer(enc, table, i * HEADER, t, 0, HEADER);
        if (ch->src != NULL)
            wgpu.CommandEncoderCopyBufferToBuffer(enc, ch->src, ch->src_at, t, HEADER + ch->a_at, ch->a_bytes);
        if (ch->read_first) wgpu.CommandEncoderCopyBufferToBuffer(enc, dst, ch->dst_at, t, b_off, 4);
        if (ch->read_last && (ch->b_bytes > 4 || !ch->read_first))
            wgpu.CommandEncoderCopyBufferToBuffer(enc, dst, ch->dst_at + ch->b_bytes - 4, t, b_off + ch->b_bytes - 4, 4);
        dispatch_pass(x, enc, x->pipeline, group, ch->b_bytes / 4, WORKGROUP_SIZE);
        wgpu.CommandEncoderCopyBufferToBuffer(enc, t, b_off, dst, ch->dst_at, ch->b_bytes);
    }
    *out = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    /* The command buffer keeps what it uses alive until the GPU has run it. */
    release_shift_objects(&made);
    if (group != NULL) wgpu.BindGroupRelease(group);
    if (table != NULL) wgpu.BufferRelease(table);
    wgpu.BufferRelease(t);
    return VN_OK;
}

/* Pop the scope; submit cb only when everything encoded cleanly (wgpu-native aborts on
 * submitting an invalid command buffer). The caller holds the life lock (guarded). */
vn_status vn_transfer_submit(vn_device *dev, const char *what, vn_status st, WGPUCommandBuffer cb) {
    vn_status scope = vn_scope_end(dev, what, VN_ERROR_VALIDATION, "check offsets, sizes and usages.");
    if (st == VN_OK) st = scope;
    if (cb == NULL) return st;
    if (st == VN_OK) vn_submit_locked(dev, cb);
    else wgpu.CommandBufferRelease(cb);
    return st;
}

/* COPY_SRC, which reading a partial word back in needs. */
vn_status vn_need_copy_src(const vn_buffer *b, const char *what, uint64_t at, uint64_t nbytes) {
    if (b->usage & VN_USAGE_COPY_SRC) return VN_OK;
    return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                   "%s of %llu bytes at byte %llu of buffer %llu covers only part of a 4-byte word whose other bytes "
                   "must be kept; the GPU writes whole words, so the word is read back in first, which needs "
                   "COPY_SRC, and buffer %llu has usage 0x%llx. Fix: create it with vn.BufferUsage.COPY_SRC (the "
                   "default usage has it), or transfer whole 4-byte words.",
                   what, (unsigned long long)nbytes, (unsigned long long)at, (unsigned long long)b->identity,
                   (unsigned long long)b->identity, (unsigned long long)b->usage);
}

/* A copy whose bytes shift within their words, [d0, d1) of db from sb's bytes at s0, as
 * one dispatch of the shift kernel; n 0 when the kernel cannot take it. */
vn_words_copy vn_shifted_words(const vn_device *dev, const vn_buffer *sb, const vn_buffer *db, uint64_t s0,
                                uint64_t d0, uint64_t d1, const struct vn_transfer *x) {
    vn_words_copy w = {NULL, 0, 0, 0, NULL, 0, 0};
    if (!shift_fits(dev, sb, db, s0, d0, d1 - d0, &w)) return (vn_words_copy){NULL, 0, 0, 0, NULL, 0, 0};
    w.src = sb->buffer;
    w.src_at = s0;
    w.dst_at = d0;
    w.n = d1 - d0;
    w.shift = x;
    return w;
}

/* Inside a scope: a command buffer setting words[0..count) (count 1 or 2, the words in
 * ascending order) of buffer b in place, in *out; *out NULL when b cannot be bound as
 * storage over them (no STORAGE usage, or past the binding limit): merge through T then. */
vn_status vn_encode_patch(vn_device *dev, const vn_buffer *b, const vn_word_patch *words, size_t count,
                          WGPUCommandBuffer *out) {
    *out = NULL;
    uint64_t bind = words[0].at - words[0].at % bind_align(dev), size = words[count - 1].at + 4 - bind;
    if (!(b->usage & VN_USAGE_STORAGE) || size > bind_limit(dev)) return VN_OK;
    struct vn_transfer *x = NULL;
    vn_status st = vn_transfer_get(dev, &x);
    if (st != VN_OK) return st;
    uint32_t p[8] = {0};
    for (size_t i = 0; i < count; i++) {
        p[4 * i] = (uint32_t)((words[i].at - bind) / 4);
        p[4 * i + 1] = words[i].mask;
        p[4 * i + 2] = words[i].value;
    }
    WGPUBuffer params = uniform_params(dev, "vyre_native word patch", p, sizeof p);
    if (params == NULL) return VN_OK; /* the scope has why */
    WGPUBindGroupEntry be[2] = {WGPU_BIND_GROUP_ENTRY_INIT, WGPU_BIND_GROUP_ENTRY_INIT};
    be[0].binding = 0;
    be[0].buffer = b->buffer;
    be[0].offset = bind;
    be[0].size = size;
    be[1].binding = 1;
    be[1].buffer = params;
    be[1].size = sizeof p;
    WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    bd.label = vn_sv("vyre_native word patch");
    bd.layout = x->patch_layout;
    bd.entryCount = 2;
    bd.entries = be;
    WGPUBindGroup group = wgpu.DeviceCreateBindGroup(dev->device, &bd);
    WGPUCommandEncoder enc = wgpu.DeviceCreateCommandEncoder(dev->device, NULL);
    dispatch_pass(x, enc, x->patch_pipeline, group, 1, 1); /* one workgroup of two */
    *out = wgpu.CommandEncoderFinish(enc, NULL);
    wgpu.CommandEncoderRelease(enc);
    /* The command buffer keeps what it uses alive until the GPU has run it. */
    if (group != NULL) wgpu.BindGroupRelease(group);
    wgpu.BufferRelease(params);
    return VN_OK;
}
