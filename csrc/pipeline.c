/* pipeline.c - shader modules and compute pipelines with explicit bind-group layouts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

vn_status vn_shader_create(vn_device *device, const char *wgsl, size_t wgsl_len, vn_shader **out) {
    vn_status st = vn_device_check(device, "compiling WGSL");
    if (st != VN_OK) return st;
    if (wgsl == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_shader_create: NULL source or result. Fix: pass WGSL text.");
    *out = NULL;
    vn_shader *sh = calloc(1, sizeof *sh);
    if (sh == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a shader record. Fix: free host memory.");
    WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
    source.code.data = wgsl;
    source.code.length = wgsl_len;
    WGPUShaderModuleDescriptor desc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
    desc.nextInChain = &source.chain;
    vn_scope_begin(device);
    sh->module = wgpu.DeviceCreateShaderModule(device->device, &desc);
    st = vn_scope_end(device, "compiling WGSL", VN_ERROR_SHADER, "correct the WGSL at the line the compiler names.");
    if (st == VN_OK && sh->module == NULL)
        st = vn_fail(VN_ERROR_SHADER, "compiling WGSL returned no module. Fix: check the WGSL source.");
    if (st != VN_OK) {
        if (sh->module != NULL) wgpu.ShaderModuleRelease(sh->module);
        free(sh);
        return st;
    }
    atomic_init(&sh->refs, 1);
    vn_device_retain(device);
    sh->device = device;
    vn_live_add(VN_LIVE_SHADER, 1);
    *out = sh;
    return VN_OK;
}

void vn_shader_release(vn_shader *shader) {
    if (shader == NULL || vn_inherited(shader->device)) return; /* fork() child: forget it */
    if (atomic_fetch_sub(&shader->refs, 1) != 1) return;
    wgpu.ShaderModuleRelease(shader->module);
    vn_device_unref(shader->device);
    free(shader);
    vn_live_add(VN_LIVE_SHADER, -1);
}

void vn_pipeline_retain(vn_pipeline *pipeline) { atomic_fetch_add(&pipeline->refs, 1); }

static void pipeline_free(vn_pipeline *p) {
    if (p->layouts != NULL) {
        for (uint32_t g = 0; g < p->group_count; g++)
            if (p->layouts[g] != NULL) wgpu.BindGroupLayoutRelease(p->layouts[g]);
        free(p->layouts);
    }
    if (p->pipeline != NULL) wgpu.ComputePipelineRelease(p->pipeline);
    if (p->bindings != NULL) {
        for (size_t i = 0; i < p->binding_count; i++) free(p->bindings[i].name);
        free(p->bindings);
    }
    vn_bind_cache_destroy(&p->cache);
    free(p);
}

static vn_status check_desc(const vn_device *device, const vn_pipeline_desc *desc) {
    if (desc->entry_point == NULL || desc->entry_point[0] == '\0')
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "the entry point name is empty. Fix: name the @compute function.");
    if (desc->binding_count > 0 && desc->bindings == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "binding_count is %zu but bindings is NULL. Fix: pass the bindings.",
                       desc->binding_count);
    for (size_t i = 0; i < desc->binding_count; i++) {
        const vn_binding_desc *b = &desc->bindings[i];
        if (b->group >= device->limits.maxBindGroups)
            return vn_fail(VN_ERROR_BINDING,
                           "binding `%s` uses @group(%u), but this device has %u bind groups (0..%u). Fix: move it "
                           "to a lower group.", b->name ? b->name : "?", b->group, device->limits.maxBindGroups,
                           device->limits.maxBindGroups - 1);
        if (b->kind != VN_BINDING_STORAGE_READ && b->kind != VN_BINDING_STORAGE_READ_WRITE && b->kind != VN_BINDING_UNIFORM)
            return vn_fail(VN_ERROR_INVALID_ARGUMENT, "binding `%s` has kind %d. Fix: use a vn_binding_kind value.",
                           b->name ? b->name : "?", (int)b->kind);
        if (i > 0) {
            const vn_binding_desc *a = &desc->bindings[i - 1];
            if (a->group > b->group || (a->group == b->group && a->binding >= b->binding))
                return vn_fail(VN_ERROR_BINDING,
                               "bindings are not in strictly increasing (group, binding) order at @group(%u) "
                               "@binding(%u) `%s`. Fix: sort them; each (group, binding) may appear once.",
                               b->group, b->binding, b->name ? b->name : "?");
        }
    }
    /* wgpu-native 29 checks @workgroup_size against the limits only when the size is a
     * literal; one set by an override passes, and on NVIDIA the dispatch then faults
     * the GPU and loses the device, after which the next submit aborts the process. */
    const uint32_t *wg = desc->workgroup_size;
    if (wg[0] || wg[1] || wg[2]) {
        const WGPULimits *l = &device->limits;
        uint64_t total = (uint64_t)wg[0] * wg[1] * wg[2];
        if (wg[0] == 0 || wg[1] == 0 || wg[2] == 0 || wg[0] > l->maxComputeWorkgroupSizeX ||
            wg[1] > l->maxComputeWorkgroupSizeY || wg[2] > l->maxComputeWorkgroupSizeZ ||
            total > l->maxComputeInvocationsPerWorkgroup)
            return vn_fail(VN_ERROR_SHADER,
                           "entry point `%s` has @workgroup_size (%u, %u, %u) (%llu invocations) with its override "
                           "values, but this device ('%s') allows at most (%u, %u, %u) and %u invocations per "
                           "workgroup. Fix: pass smaller override values (constants=...) or a smaller "
                           "@workgroup_size; every dimension must be at least 1.",
                           desc->entry_point, wg[0], wg[1], wg[2], (unsigned long long)total, device->info.name,
                           l->maxComputeWorkgroupSizeX, l->maxComputeWorkgroupSizeY, l->maxComputeWorkgroupSizeZ,
                           l->maxComputeInvocationsPerWorkgroup);
    }
    if (desc->indirect_binding >= 0) {
        if ((size_t)desc->indirect_binding >= desc->binding_count)
            return vn_fail(VN_ERROR_BINDING, "indirect binding index %d is outside the %zu bindings. Fix: name a binding "
                           "of this entry point.", desc->indirect_binding, desc->binding_count);
        const vn_binding_desc *b = &desc->bindings[desc->indirect_binding];
        if (desc->indirect_offset % 4 != 0)
            return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                           "indirect offset %llu into `%s` is not a multiple of 4. Fix: place the three u32 "
                           "workgroup counts at a 4-byte-aligned offset.",
                           (unsigned long long)desc->indirect_offset, b->name ? b->name : "?");
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE && !b->preserve)
            return vn_fail(VN_ERROR_BINDING,
                           "indirect buffer `%s` (@group(%u) @binding(%u)) is a read_write output, which is cleared "
                           "before the dispatch, so the dispatch would read zero workgroup counts. Fix: declare it "
                           "var<storage, read>, or compile with preserve=[\"%s\"].",
                           b->name ? b->name : "?", b->group, b->binding, b->name ? b->name : "?");
    }
    return VN_OK;
}

static WGPUBufferBindingType binding_type(vn_binding_kind kind) {
    switch (kind) {
    case VN_BINDING_STORAGE_READ_WRITE: return WGPUBufferBindingType_Storage;
    case VN_BINDING_UNIFORM: return WGPUBufferBindingType_Uniform;
    default: return WGPUBufferBindingType_ReadOnlyStorage;
    }
}

/* Explicit layouts, one per group up to the highest, empty groups included: wgpu's
 * layout inference ("auto") would drop bindings and groups the entry point does
 * not touch, and a cache key must not depend on what the compiler inferred. */
static vn_status create_layouts(vn_device *device, vn_pipeline *p, WGPUBindGroupLayoutEntry *scratch) {
    for (uint32_t g = 0; g < p->group_count; g++) {
        size_t n = 0;
        for (size_t i = 0; i < p->binding_count; i++) {
            if (p->bindings[i].group != g) continue;
            WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
            e.binding = p->bindings[i].binding;
            e.visibility = WGPUShaderStage_Compute;
            e.buffer.type = binding_type(p->bindings[i].kind);
            /* The size the shader needs, declared up front: with 0, wgpu re-checks
             * every bound size against the shader at every dispatch (measured: about
             * a third of the per-dispatch cost of a long sequence). The C layer
             * checks each handle against it before wgpu sees the bind group. */
            e.buffer.minBindingSize = p->bindings[i].binding_size;
            scratch[n++] = e;
        }
        WGPUBindGroupLayoutDescriptor ld = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
        ld.entryCount = n;
        ld.entries = scratch;
        p->layouts[g] = wgpu.DeviceCreateBindGroupLayout(device->device, &ld);
    }
    return VN_OK;
}

vn_status vn_pipeline_create(vn_device *device, vn_shader *shader, const vn_pipeline_desc *desc, vn_pipeline **out) {
    vn_status st = vn_device_check(device, "creating a pipeline");
    if (st != VN_OK) return st;
    if (shader == NULL || desc == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_pipeline_create: NULL argument. Fix: pass a shader, a description and a result pointer.");
    *out = NULL;
    if (shader->device != device)
        return vn_fail(VN_ERROR_BINDING, "the shader was compiled on another device. Fix: compile it on this device.");
    st = check_desc(device, desc);
    if (st != VN_OK) return st;

    vn_pipeline *p = calloc(1, sizeof *p);
    if (p == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a pipeline record. Fix: free host memory.");
    st = vn_bind_cache_init(&p->cache, desc->cache_capacity ? desc->cache_capacity : 256);
    if (st != VN_OK) {
        free(p);
        return st;
    }
    p->binding_count = desc->binding_count;
    p->indirect_binding = desc->indirect_binding;
    p->indirect_offset = desc->indirect_offset;
    p->group_count = desc->binding_count ? desc->bindings[desc->binding_count - 1].group + 1 : 0;
    p->bindings = calloc(desc->binding_count ? desc->binding_count : 1, sizeof *p->bindings);
    p->layouts = calloc(p->group_count ? p->group_count : 1, sizeof *p->layouts);
    WGPUBindGroupLayoutEntry *scratch = calloc(desc->binding_count ? desc->binding_count : 1, sizeof *scratch);
    WGPUConstantEntry *constants = calloc(desc->constant_count ? desc->constant_count : 1, sizeof *constants);
    if (p->bindings == NULL || p->layouts == NULL || scratch == NULL || constants == NULL) {
        free(scratch);
        free(constants);
        pipeline_free(p);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate pipeline tables. Fix: free host memory.");
    }
    for (size_t i = 0; i < desc->binding_count; i++) {
        const vn_binding_desc *b = &desc->bindings[i];
        uint64_t binding_size = b->binding_size > b->min_size ? b->binding_size : b->min_size;
        p->bindings[i] = (vn_binding){b->group, b->binding, b->kind, b->preserve != 0, b->min_size, binding_size,
                                      vn_strdup(b->name ? b->name : "")};
        if (p->bindings[i].name == NULL) st = VN_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < desc->constant_count; i++) {
        WGPUConstantEntry c = WGPU_CONSTANT_ENTRY_INIT;
        c.key = vn_sv(desc->constants[i].name);
        c.value = desc->constants[i].value;
        constants[i] = c;
    }

    char what[300];
    snprintf(what, sizeof what, "creating the compute pipeline for entry point `%s`", desc->entry_point);
    vn_scope_begin(device);
    create_layouts(device, p, scratch);
    WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
    pld.bindGroupLayoutCount = p->group_count;
    pld.bindGroupLayouts = p->layouts;
    WGPUPipelineLayout layout = wgpu.DeviceCreatePipelineLayout(device->device, &pld);
    WGPUComputePipelineDescriptor cpd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
    cpd.layout = layout;
    cpd.compute.module = shader->module;
    cpd.compute.entryPoint = vn_sv(desc->entry_point);
    cpd.compute.constantCount = desc->constant_count;
    cpd.compute.constants = constants;
    p->pipeline = wgpu.DeviceCreateComputePipeline(device->device, &cpd);
    if (layout != NULL) wgpu.PipelineLayoutRelease(layout);
    vn_status scope = vn_scope_end(device, what, VN_ERROR_SHADER,
                                   "check that the entry point is a @compute function, that every override "
                                   "constant has a value, and that the bindings match the shader.");
    free(scratch);
    free(constants);
    if (st == VN_OK) st = scope;
    else st = vn_fail(st, "could not copy binding names. Fix: free host memory.");
    if (st == VN_OK && p->pipeline == NULL)
        st = vn_fail(VN_ERROR_INTERNAL, "%s returned no pipeline. Fix: check the WGSL and the device.", what);
    if (st != VN_OK) {
        pipeline_free(p);
        return st;
    }
    atomic_init(&p->refs, 1);
    vn_device_retain(device);
    p->device = device;
    vn_mutex_lock(&device->pipelines_lock);
    p->next = device->pipelines;
    if (device->pipelines) device->pipelines->prev = p;
    device->pipelines = p;
    vn_mutex_unlock(&device->pipelines_lock);
    vn_live_add(VN_LIVE_PIPELINE, 1);
    *out = p;
    return VN_OK;
}

vn_status vn_pipeline_cache_stats(const vn_pipeline *pipeline, vn_cache_stats *out) {
    if (pipeline == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_pipeline_cache_stats: NULL argument. Fix: pass a pipeline and a result.");
    vn_bind_cache *c = (vn_bind_cache *)&pipeline->cache;
    vn_mutex_lock(&c->lock);
    *out = (vn_cache_stats){c->hits, c->misses, c->evictions, c->count, c->capacity};
    vn_mutex_unlock(&c->lock);
    return VN_OK;
}

void vn_pipeline_release(vn_pipeline *pipeline) {
    if (pipeline == NULL || vn_inherited(pipeline->device)) return; /* fork() child: forget it */
    if (atomic_fetch_sub(&pipeline->refs, 1) != 1) return;
    vn_device *dev = pipeline->device;
    vn_mutex_lock(&dev->pipelines_lock);
    if (pipeline->prev) pipeline->prev->next = pipeline->next;
    else dev->pipelines = pipeline->next;
    if (pipeline->next) pipeline->next->prev = pipeline->prev;
    vn_mutex_unlock(&dev->pipelines_lock);
    pipeline_free(pipeline);
    vn_device_unref(dev);
    vn_live_add(VN_LIVE_PIPELINE, -1);
}

void vn_device_forget_buffer(vn_device *device, uint64_t identity) {
    vn_mutex_lock(&device->pipelines_lock);
    for (vn_pipeline *p = device->pipelines; p != NULL; p = p->next) vn_bind_cache_forget(&p->cache, identity);
    vn_mutex_unlock(&device->pipelines_lock);
}
