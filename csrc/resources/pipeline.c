/* pipeline.c - shader modules and compute pipelines with explicit bind-group layouts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

static void shader_destroy(vn_object *object) {
    vn_shader *shader = (vn_shader *)object;
    wgpu.ShaderModuleRelease(shader->module);
    vn_device_unref(shader->device);
    free(shader->wgsl);
    free(shader);
    vn_live_add(VN_LIVE_SHADER, -1);
}

/* wgpu calls inside one error scope, on a thread whose stack is large enough for any
 * source vn_wgsl_check_size and vn_wgsl_check_nesting accept (vn_wgsl_compile_stack):
 * naga recurses once per link of a chain of declarations (and per nesting level) when it
 * compiles, and the driver walks the same chains (a chain of nested structs, one stack
 * frame a link in lavapipe) when it creates the pipeline; on the caller's stack a long
 * chain crashes the process (wgsl_depth.c has the figures). The scope is pushed and
 * popped there too, as wgpu-native may keep scopes per thread, and what it caught comes
 * back in the record (the error slot is per thread). */
typedef struct scoped_job {
    vn_device *device;
    void (*work)(void *arg);
    void *arg;
    const char *what, *fix;
    vn_status kind, st;
    uint32_t line, column;
    char message[2048];
} scoped_job;

static void scoped_there(void *arg) {
    scoped_job *job = arg;
    vn_scope_begin(job->device);
    job->work(job->arg);
    job->st = vn_scope_end(job->device, job->what, job->kind, job->fix);
    if (job->st != VN_OK) {
        snprintf(job->message, sizeof job->message, "%s", vn_last_error());
        vn_last_error_position(&job->line, &job->column);
    }
}

/* Sources up to this long compile on the process's kept thread (vn_run_on_stack), whose
 * stack is sized for them (8 MiB + 4 MiB: address space, committed only as used); a
 * longer one, or a compile while another thread's holds it, on a thread of its own. */
#define KEPT_THREAD_SOURCE_BYTES ((size_t)64 << 10)

/* `work(arg)` inside an error scope (vn_scope_end's what, kind and fix), on its own stack
 * sized for wgsl_len bytes of WGSL; the scope's error, with its place, on this thread. */
static vn_status scoped_on_own_stack(vn_device *device, size_t wgsl_len, const char *what, vn_status kind,
                                     const char *fix, void (*work)(void *), void *arg) {
    scoped_job job = {device, work, arg, what, fix, kind, VN_OK, 0, 0, ""};
    int kib = vn_test_switch_value(VN_TEST_COMPILE_STACK_KIB);
    size_t stack = kib > 0 ? (size_t)kib * 1024u : vn_wgsl_compile_stack(wgsl_len);
    char why[256] = "";
    if (vn_run_on_stack(stack, vn_wgsl_compile_stack(KEPT_THREAD_SOURCE_BYTES), scoped_there, &job, why, sizeof why) != 0)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "%s from %zu bytes of WGSL needs a thread with a stack of %zu bytes "
                       "(reserved address space, committed only as used), and the system refused it: %s. Fix: "
                       "compile a smaller module, or allow more virtual memory (ulimit -v, vm.overcommit_memory).",
                       what, wgsl_len, stack, why);
    if (job.st != VN_OK) {
        vn_fail(job.st, "%s", job.message);
        if (job.line != 0) vn_set_error_position(job.line, job.column);
    }
    return job.st;
}

typedef struct module_job {
    vn_device *device;
    WGPUStringView code;
    uint32_t checks;
    WGPUShaderModule module;
} module_job;

static void make_module(void *arg) {
    module_job *job = arg;
    /* Labelled "wgsl": naga then shows positions as wgsl:<line>:<column>. */
    job->module = vn_wgsl_module(job->device, job->code, "wgsl", job->checks);
}

/* The shader module of the WGSL, made by wgpu-native on a stack of its own. */
static vn_status compile_on_own_stack(vn_device *device, const char *wgsl, size_t wgsl_len, uint32_t checks,
                                      WGPUShaderModule *module) {
    module_job job = {device, {wgsl, wgsl_len}, checks, NULL};
    vn_status st = scoped_on_own_stack(device, wgsl_len, "compiling WGSL", VN_ERROR_SHADER,
                                       "correct the WGSL as the message says.", make_module, &job);
    *module = job.module;
    return st;
}

static vn_status shader_create(vn_device *device, const char *wgsl, size_t wgsl_len, uint32_t checks,
                               vn_shader **out) {
    vn_status st = vn_device_check(device, "compiling WGSL");
    if (st != VN_OK) return st;
    if (wgsl == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_shader_create: NULL source or result. Fix: pass WGSL text.");
    *out = NULL;
    if (checks & ~(uint32_t)VN_CHECKS_ALL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "vn_shader_create: runtime checks 0x%x have bits outside VN_CHECKS_ALL (0x%x). Fix: pass "
                       "VN_CHECK_BOUNDS and VN_CHECK_LOOPS bits only.",
                       (unsigned)checks, (unsigned)VN_CHECKS_ALL);
    /* Nesting, or a source, past the stack the compile gets would crash the process
     * inside naga (wgsl_depth.c). */
    st = vn_wgsl_check_size(wgsl, wgsl_len);
    if (st == VN_OK) st = vn_wgsl_check_nesting(wgsl, wgsl_len, VN_WGSL_MAX_NESTING_DEPTH);
    if (st != VN_OK) return st;
    vn_shader *sh = calloc(1, sizeof *sh);
    /* The text is kept for the pipeline's errors, which name places in it (diagnostics.c). */
    char *kept = sh != NULL ? malloc(wgsl_len + 1) : NULL;
    if (kept == NULL) {
        free(sh);
        return vn_fail_no_memory("a shader record", sizeof *sh + wgsl_len + 1);
    }
    memcpy(kept, wgsl, wgsl_len);
    kept[wgsl_len] = '\0';
    sh->wgsl = kept;
    sh->wgsl_len = wgsl_len;
    st = compile_on_own_stack(device, wgsl, wgsl_len, checks, &sh->module);
    if (st == VN_ERROR_SHADER) st = vn_shader_diagnose(device, wgsl, wgsl_len, st);
    if (st == VN_OK && sh->module == NULL)
        st = vn_fail(VN_ERROR_SHADER, "compiling WGSL returned no module. Fix: check the WGSL source.");
    if (st != VN_OK) {
        if (sh->module != NULL) wgpu.ShaderModuleRelease(sh->module);
        free(sh->wgsl);
        free(sh);
        return st;
    }
    vn_object_init(&sh->obj, VN_KIND_SHADER, shader_destroy);
    vn_device_retain(device);
    sh->device = device;
    vn_live_add(VN_LIVE_SHADER, 1);
    *out = sh;
    return VN_OK;
}

vn_status vn_shader_create(vn_device *device, const char *wgsl, size_t wgsl_len, uint32_t checks, vn_shader **out) {
    VN_CALL1_OUT(shader_create(device, wgsl, wgsl_len, checks, out), out, device, VN_KIND_DEVICE);
}

void vn_shader_release(vn_shader *shader) { vn_id_release(shader, VN_KIND_SHADER); }

void vn_pipeline_retain(vn_pipeline *pipeline) { vn_retain(&pipeline->obj); }

static void pipeline_free(vn_pipeline *p) {
    if (p->layouts != NULL) {
        for (uint32_t g = 0; g < p->group_count; g++)
            if (p->layouts[g] != NULL) wgpu.BindGroupLayoutRelease(p->layouts[g]);
        free(p->layouts);
    }
    if (p->pipeline != NULL) wgpu.ComputePipelineRelease(p->pipeline);
    free(p->label);
    free(p->record_what);
    free(p->replay_what);
    if (p->bindings != NULL) {
        for (size_t i = 0; i < p->binding_count; i++) free(p->bindings[i].name);
        free(p->bindings);
    }
    vn_bind_cache_destroy(&p->cache);
    free(p);
}

/* var<immediate> data needs wgpu-native's "immediates" feature on the device and fits
 * in its maxImmediateSize; both are said here, before wgpu sees the layout. */
static vn_status check_immediates(const vn_device *device, const vn_shader *shader, const vn_pipeline_desc *desc) {
    uint32_t size = desc->immediate_size;
    if (size == 0) return VN_OK;
    if (!wgpu.DeviceHasFeature(device->device, (WGPUFeatureName)WGPUNativeFeature_Immediates)) {
        char what[300];
        vn_format(what, sizeof what, "entry point `%s` declares %u bytes of var<immediate> data", desc->entry_point, size);
        return vn_immediates_unsupported(device, what, NULL);
    }
    if (size % 4 != 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "immediate_size %u of entry point `%s` is not a multiple of 4. Fix: round "
                       "the var<immediate> type's size up to 4 bytes.", size, desc->entry_point);
    if (size > device->limits.maxImmediateSize)
        return vn_shader_point(shader->wgsl, shader->wgsl_len, desc->entry_point, NULL, "immediate", vn_fail(VN_ERROR_SHADER,
                       "entry point `%s` declares %u bytes of var<immediate> data, above this device's "
                       "max_immediate_size of %u bytes. Fix: keep the var<immediate> type within %u bytes, and move "
                       "the rest into a uniform or storage buffer.",
                       desc->entry_point, size, device->limits.maxImmediateSize, device->limits.maxImmediateSize));
    return VN_OK;
}

static uint64_t mul_saturating(uint64_t a, uint64_t b) {
    return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

/* The one check of a compute entry point against the device's workgroup limits,
 * whether literals or overrides decide the sizes. */
static vn_status check_workgroup(const vn_device *device, const vn_shader *shader, const vn_pipeline_desc *desc) {
    const uint64_t *wg = desc->workgroup_size;
    const WGPULimits *lim = &device->limits;
    const char *entry = desc->entry_point;
    if (wg[0] != 0 || wg[1] != 0 || wg[2] != 0) {
        const uint32_t dim_limit[3] = {lim->maxComputeWorkgroupSizeX, lim->maxComputeWorkgroupSizeY,
                                       lim->maxComputeWorkgroupSizeZ};
        for (int i = 0; i < 3; i++) {
            if (wg[i] == 0)
                return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                               "entry point `%s` has workgroup size (%llu, %llu, %llu), with a 0. Fix: make every "
                               "dimension at least 1.", entry, (unsigned long long)wg[0], (unsigned long long)wg[1],
                               (unsigned long long)wg[2]);
            if (wg[i] > dim_limit[i])
                return vn_shader_point(shader->wgsl, shader->wgsl_len, entry, "workgroup_size", NULL, vn_fail(VN_ERROR_SHADER,
                               "entry point `%s` has @workgroup_size(%llu, %llu, %llu): %c = %llu is above this "
                               "device's max_compute_workgroup_size_%c of %u. Fix: lower @workgroup_size (or the "
                               "override values it is computed from) to at most %u in %c.",
                               entry, (unsigned long long)wg[0], (unsigned long long)wg[1], (unsigned long long)wg[2],
                               "xyz"[i], (unsigned long long)wg[i], "xyz"[i], dim_limit[i], dim_limit[i], "xyz"[i]));
        }
        uint64_t invocations = mul_saturating(mul_saturating(wg[0], wg[1]), wg[2]);
        if (invocations > lim->maxComputeInvocationsPerWorkgroup)
            return vn_shader_point(shader->wgsl, shader->wgsl_len, entry, "workgroup_size", NULL, vn_fail(VN_ERROR_SHADER,
                           "entry point `%s` has @workgroup_size(%llu, %llu, %llu), %llu invocations per workgroup, "
                           "above this device's max_compute_invocations_per_workgroup of %u. Fix: lower "
                           "@workgroup_size (or the override values it is computed from) so that x * y * z <= %u.",
                           entry, (unsigned long long)wg[0], (unsigned long long)wg[1], (unsigned long long)wg[2],
                           (unsigned long long)invocations, lim->maxComputeInvocationsPerWorkgroup,
                           lim->maxComputeInvocationsPerWorkgroup));
    }
    /* at the first var<workgroup>: the memory is every one the entry point reaches */
    if (desc->workgroup_storage_size > lim->maxComputeWorkgroupStorageSize)
        return vn_shader_point(shader->wgsl, shader->wgsl_len, entry, NULL, "workgroup", vn_fail(VN_ERROR_SHADER,
                       "entry point `%s` uses %llu bytes of var<workgroup> memory (each variable rounded up to 16 "
                       "bytes), above this device's max_compute_workgroup_storage_size of %u bytes. Fix: shrink its "
                       "var<workgroup> arrays (or the override values that size them) to fit in %u bytes.",
                       entry, (unsigned long long)desc->workgroup_storage_size, lim->maxComputeWorkgroupStorageSize,
                       lim->maxComputeWorkgroupStorageSize));
    return VN_OK;
}

static vn_status check_desc(const vn_device *device, const vn_shader *shader, const vn_pipeline_desc *desc) {
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
        if (vn_binding_kind_facts_of(b->kind) == NULL)
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
    vn_status st = check_immediates(device, shader, desc);
    if (st != VN_OK) return st;
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
        /* Preserved or not: the counts (INDIRECT) and a writable binding of one buffer in
         * one dispatch are a usage-scope conflict, which wgpu refuses at Finish. */
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE)
            return vn_fail(VN_ERROR_BINDING,
                           "indirect buffer `%s` (@group(%u) @binding(%u)) is a var<storage, read_write> binding, but "
                           "a buffer the dispatch binds writable may not also hold its indirect counts (WebGPU's "
                           "usage scope: the whole buffer is in one state for the dispatch). Fix: declare `%s` "
                           "var<storage, read>, or keep the counts in another buffer and pass indirect=(buffer, "
                           "offset) at the dispatch.",
                           b->name ? b->name : "?", b->group, b->binding, b->name ? b->name : "?");
    }
    return check_workgroup(device, shader, desc);
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
            e.buffer.type = vn_binding_kind_facts_of(p->bindings[i].kind)->type;
            /* The size the shader needs, declared up front: with 0, wgpu re-checks
             * every bound size against the shader at every dispatch (measured: about
             * a third of the per-dispatch cost of a long sequence). The C layer
             * checks each handle against it before wgpu sees the bind group. */
            e.buffer.minBindingSize = p->bindings[i].binding_size;
            scratch[n++] = e;
        }
        WGPUBindGroupLayoutDescriptor ld = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
        ld.label = vn_sv(p->label);
        ld.entryCount = n;
        ld.entries = scratch;
        p->layouts[g] = wgpu.DeviceCreateBindGroupLayout(device->device, &ld);
    }
    return VN_OK;
}

static void pipeline_destroy(vn_object *object);

typedef struct pipeline_job {
    vn_device *device;
    vn_shader *shader;
    const vn_pipeline_desc *desc;
    vn_pipeline *p;
    WGPUBindGroupLayoutEntry *scratch;
    WGPUConstantEntry *constants;
} pipeline_job;

/* The layouts and the compute pipeline (run on a stack of its own: scoped_on_own_stack). */
static void make_pipeline(void *arg) {
    pipeline_job *job = arg;
    vn_device *device = job->device;
    vn_pipeline *p = job->p;
    create_layouts(device, p, job->scratch);
    /* Labels are the entry point: wgpu's own messages then name the pipeline. */
    WGPUPipelineLayoutDescriptor pld = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
    pld.label = vn_sv(p->label);
    pld.bindGroupLayoutCount = p->group_count;
    pld.bindGroupLayouts = p->layouts;
    pld.immediateSize = p->immediate_size;
    WGPUPipelineLayout layout = wgpu.DeviceCreatePipelineLayout(device->device, &pld);
    WGPUComputePipelineDescriptor cpd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
    cpd.label = vn_sv(p->label);
    cpd.layout = layout;
    cpd.compute.module = job->shader->module;
    cpd.compute.entryPoint = vn_sv(job->desc->entry_point);
    cpd.compute.constantCount = job->desc->constant_count;
    cpd.compute.constants = job->constants;
    p->pipeline = wgpu.DeviceCreateComputePipeline(device->device, &cpd);
    if (layout != NULL) wgpu.PipelineLayoutRelease(layout);
}

/* "<doing> of pipeline `<label>`", what a failure of that names (malloc'd; NULL: no memory). */
static char *pipeline_what(const char *doing, const char *label) {
    size_t len = strlen(doing) + strlen(label) + sizeof " of pipeline ``";
    char *what = malloc(len);
    if (what != NULL) snprintf(what, len, "%s of pipeline `%s`", doing, label);
    return what;
}

static vn_status pipeline_create(vn_device *device, vn_shader *shader, const vn_pipeline_desc *desc,
                                 vn_pipeline **out) {
    vn_status st = vn_device_check(device, "creating a pipeline");
    if (st != VN_OK) return st;
    if (desc == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_pipeline_create: NULL argument. Fix: pass a description and a result pointer.");
    *out = NULL;
    if (shader->device != device)
        return vn_fail(VN_ERROR_BINDING, "the shader was compiled on another device. Fix: compile it on this device.");
    st = check_desc(device, shader, desc);
    if (st != VN_OK) return st;

    vn_pipeline *p = calloc(1, sizeof *p);
    if (p == NULL) return vn_fail_no_memory("a pipeline record", sizeof *p);
    st = vn_bind_cache_init(&p->cache, desc->cache_capacity ? desc->cache_capacity : 256);
    if (st != VN_OK) {
        free(p);
        return st;
    }
    p->binding_count = desc->binding_count;
    p->indirect_binding = desc->indirect_binding;
    p->indirect_offset = desc->indirect_offset;
    p->immediate_size = desc->immediate_size;
    p->label = vn_strdup(desc->entry_point);
    /* A recording's and a replay's failure messages name the pipeline; formatted here,
     * not per record or per replay (a replay is on the launch path). */
    p->record_what = pipeline_what("recording a dispatch", desc->entry_point);
    p->replay_what = pipeline_what("replaying a recording", desc->entry_point);
    p->group_count = desc->binding_count ? desc->bindings[desc->binding_count - 1].group + 1 : 0;
    p->bindings = calloc(desc->binding_count ? desc->binding_count : 1, sizeof *p->bindings);
    p->layouts = calloc(p->group_count ? p->group_count : 1, sizeof *p->layouts);
    WGPUBindGroupLayoutEntry *scratch = calloc(desc->binding_count ? desc->binding_count : 1, sizeof *scratch);
    WGPUConstantEntry *constants = calloc(desc->constant_count ? desc->constant_count : 1, sizeof *constants);
    if (p->label == NULL || p->record_what == NULL || p->replay_what == NULL || p->bindings == NULL || p->layouts == NULL || scratch == NULL || constants == NULL) {
        free(scratch);
        free(constants);
        pipeline_free(p);
        size_t bindings = desc->binding_count ? desc->binding_count : 1;
        return vn_fail_no_memory("pipeline tables", bindings * (sizeof *p->bindings + sizeof *scratch) +
                                 (p->group_count ? p->group_count : 1) * sizeof *p->layouts +
                                 (desc->constant_count ? desc->constant_count : 1) * sizeof *constants);
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
    vn_format(what, sizeof what, "creating the compute pipeline for entry point `%s`", desc->entry_point);
    pipeline_job job = {device, shader, desc, p, scratch, constants};
    vn_status scope = scoped_on_own_stack(device, shader->wgsl_len, what, VN_ERROR_SHADER,
                                          "check that the entry point is a @compute function, that every override "
                                          "constant has a value, and that the bindings match the shader.",
                                          make_pipeline, &job);
    free(scratch);
    free(constants);
    /* naga's pipeline errors (override values, the entry point) name places in the WGSL. */
    if (scope == VN_ERROR_SHADER) scope = vn_shader_diagnose(device, shader->wgsl, shader->wgsl_len, scope);
    if (st == VN_OK) st = scope;
    else st = vn_fail(st, "could not copy binding names. Fix: free host memory.");
    if (st == VN_OK && p->pipeline == NULL)
        st = vn_fail(VN_ERROR_INTERNAL, "%s returned no pipeline. Fix: check the WGSL and the device.", what);
    if (st != VN_OK) {
        pipeline_free(p);
        return st;
    }
    vn_object_init(&p->obj, VN_KIND_PIPELINE, pipeline_destroy);
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

vn_status vn_pipeline_create(vn_device *device, vn_shader *shader, const vn_pipeline_desc *desc, vn_pipeline **out) {
    VN_CALL2_OUT(pipeline_create(device, shader, desc, out), out, device, VN_KIND_DEVICE, shader, VN_KIND_SHADER);
}

static vn_status pipeline_cache_stats(const vn_pipeline *pipeline, vn_cache_stats *out) {
    if (out == NULL) return vn_null_out("vn_pipeline_cache_stats", "out");
    vn_bind_cache *c = (vn_bind_cache *)&pipeline->cache;
    vn_mutex_lock(&c->lock);
    *out = (vn_cache_stats){c->hits, c->misses, c->evictions, c->count, c->capacity};
    vn_mutex_unlock(&c->lock);
    return VN_OK;
}

vn_status vn_pipeline_cache_stats(const vn_pipeline *pipeline, vn_cache_stats *out) {
    VN_CALL1(pipeline_cache_stats(pipeline, out), pipeline, VN_KIND_PIPELINE);
}

void vn_pipeline_release(vn_pipeline *pipeline) { vn_id_release(pipeline, VN_KIND_PIPELINE); }

static void pipeline_destroy(vn_object *object) {
    vn_pipeline *pipeline = (vn_pipeline *)object;
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
    vn_fill_forget(device, identity);
}
