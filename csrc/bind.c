/* bind.c - resolve handles against a pipeline's bindings, validate them, and encode
 * one dispatch from the result. Shared by every kind of recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *kind_name(vn_binding_kind kind) {
    switch (kind) {
    case VN_BINDING_STORAGE_READ_WRITE: return "var<storage, read_write>";
    case VN_BINDING_UNIFORM: return "var<uniform>";
    default: return "var<storage, read>";
    }
}

/* Usage bits each binding needs: outputs are cleared (COPY_DST) and read back
 * (COPY_SRC); inputs are written from the host (COPY_DST). */
static uint64_t required_usage(const vn_binding *b) {
    switch (b->kind) {
    case VN_BINDING_STORAGE_READ_WRITE: return VN_USAGE_STORAGE | VN_USAGE_COPY_SRC | VN_USAGE_COPY_DST;
    case VN_BINDING_UNIFORM: return VN_USAGE_UNIFORM | VN_USAGE_COPY_DST;
    default: return VN_USAGE_STORAGE | VN_USAGE_COPY_DST;
    }
}

static void usage_names(uint64_t bits, char *buf, size_t cap) {
    static const char *names[] = {"MAP_READ", "MAP_WRITE", "COPY_SRC", "COPY_DST", "INDEX",
                                  "VERTEX", "UNIFORM", "STORAGE", "INDIRECT", "QUERY_RESOLVE"};
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 10; i++)
        if (bits & (1ull << i))
            used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s%s", used ? "|" : "", names[i]);
    if (used == 0) snprintf(buf, cap, "none");
}

/* Check handle h for binding b and, when it is a live buffer, retain it (whatever
 * the checks after that say: the caller releases what it took on any failure). */
static vn_status check_handle(const vn_pipeline *p, const vn_binding *b, const vn_buffer *h, const char *role,
                              size_t role_index, bool *held) {
    *held = false;
    if (h == NULL)
        return vn_fail(VN_ERROR_BINDING, "%s %zu for @group(%u) @binding(%u) `%s` is NULL. Fix: pass a live Buffer.",
                       role, role_index, b->group, b->binding, b->name);
    if (!vn_is(h, VN_KIND_BUFFER)) {
        char fn[96];
        snprintf(fn, sizeof fn, "%s %zu for @group(%u) @binding(%u) `%s`", role, role_index, b->group, b->binding,
                 b->name);
        return vn_handle_error(h, VN_KIND_BUFFER, fn);
    }
    /* Held from here: by the call while resolving, then by the recording. */
    vn_retain((vn_object *)h);
    *held = true;
    if (h->device != p->device)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %zu (buffer %llu) for @group(%u) @binding(%u) `%s` belongs to another device. Fix: "
                       "create or upload the buffer on the pipeline's device.",
                       role, role_index, (unsigned long long)h->identity, b->group, b->binding, b->name);
    uint64_t need = required_usage(b);
    if ((h->usage & need) != need) {
        char have_s[160], need_s[160], miss_s[160];
        usage_names(h->usage, have_s, sizeof have_s);
        usage_names(need, need_s, sizeof need_s);
        usage_names(need & ~h->usage, miss_s, sizeof miss_s);
        return vn_fail(VN_ERROR_BINDING,
                       "%s %zu (buffer %llu) for @group(%u) @binding(%u) `%s` (%s) has usage %s, missing %s. Fix: "
                       "create it with usage including %s, or leave usage unset for the default.",
                       role, role_index, (unsigned long long)h->identity, b->group, b->binding, b->name,
                       kind_name(b->kind), have_s, miss_s, need_s);
    }
    if (h->allocation_len < b->binding_size)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %zu (buffer %llu) for @group(%u) @binding(%u) `%s` has %llu bytes, but its declared type "
                       "needs at least %llu%s. Fix: pass a buffer of at least %llu bytes.",
                       role, role_index, (unsigned long long)h->identity, b->group, b->binding, b->name,
                       (unsigned long long)h->byte_len, (unsigned long long)b->binding_size,
                       b->binding_size > b->min_size ? " (one element of its runtime-sized array)" : "",
                       (unsigned long long)b->binding_size);
    uint64_t max_binding = b->kind == VN_BINDING_UNIFORM ? p->device->limits.maxUniformBufferBindingSize
                                                         : p->device->limits.maxStorageBufferBindingSize;
    if (h->allocation_len > max_binding)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %zu (buffer %llu) for @group(%u) @binding(%u) `%s` has %llu bytes, above this device's "
                       "largest %s binding of %llu bytes. Fix: split the data across bindings or dispatches.",
                       role, role_index, (unsigned long long)h->identity, b->group, b->binding, b->name,
                       (unsigned long long)h->allocation_len, b->kind == VN_BINDING_UNIFORM ? "uniform" : "storage",
                       (unsigned long long)max_binding);
    return VN_OK;
}

static vn_status check_indirect(const vn_pipeline *p, const vn_buffer *h) {
    const vn_binding *b = &p->bindings[p->indirect_binding];
    if (!(h->usage & VN_USAGE_INDIRECT))
        return vn_fail(VN_ERROR_BINDING,
                       "indirect buffer `%s` (buffer %llu) has no INDIRECT usage. Fix: create it with "
                       "vn.BufferUsage.INDIRECT, or leave usage unset for the default.",
                       b->name, (unsigned long long)h->identity);
    if (p->indirect_offset > h->byte_len || h->byte_len - p->indirect_offset < 12)
        return vn_fail(VN_ERROR_BINDING,
                       "indirect buffer `%s` (buffer %llu) has %llu bytes, too few for three u32 workgroup counts "
                       "at offset %llu (needs %llu). Fix: pass a buffer of at least offset + 12 bytes.",
                       b->name, (unsigned long long)h->identity, (unsigned long long)h->byte_len,
                       (unsigned long long)p->indirect_offset, (unsigned long long)p->indirect_offset + 12);
    return VN_OK;
}

void vn_bound_release(vn_bound *bound) {
    if (bound->groups != NULL) {
        for (uint32_t g = 0; g < bound->group_count; g++)
            if (bound->groups[g] != NULL) {
                wgpu.BindGroupRelease(bound->groups[g]);
                vn_live_add(VN_LIVE_BIND_GROUP, -1);
            }
        free(bound->groups);
    }
    if (bound->buffers != NULL) {
        for (size_t i = 0; i < bound->buffer_count; i++) vn_buffer_release(bound->buffers[i]);
        free(bound->buffers);
    }
    free(bound->outputs);
    free(bound->immediates);
    if (bound->pipeline != NULL) vn_pipeline_release(bound->pipeline);
    memset(bound, 0, sizeof *bound);
}

/* The dispatch's var<immediate> data against the pipeline's: exactly immediate_size
 * bytes, copied into the bound dispatch (a replay re-encodes from the copy). */
static vn_status take_immediates(const vn_pipeline *p, const void *immediates, size_t len, vn_bound *out) {
    if (len > 0 && immediates == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "immediates_len is %zu but immediates is NULL. Fix: pass the bytes.", len);
    if (p->immediate_size == 0 && len > 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%zu bytes of immediates were passed, but the entry point declares no var<immediate> data "
                       "(immediate_size 0). Fix: pass immediates=None, or declare e.g. `var<immediate> k: u32;` and "
                       "use it in the entry point.", len);
    if (len != p->immediate_size)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "immediates has %zu bytes, but the entry point's var<immediate> data is %u bytes "
                       "(pipeline.immediate_size). Fix: pass exactly %u bytes of immediates, laid out as the WGSL "
                       "type declares (e.g. numpy.array([...], numpy.uint32).tobytes()).",
                       len, p->immediate_size, p->immediate_size);
    if (len == 0) return VN_OK;
    out->immediates = malloc(len);
    if (out->immediates == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not copy %zu bytes of immediates. Fix: free host memory.", len);
    memcpy(out->immediates, immediates, len);
    out->immediate_len = (uint32_t)len;
    return VN_OK;
}

static vn_status bound_resolve(vn_pipeline *p, vn_buffer *const *inputs, size_t input_count, vn_buffer *const *outputs,
                               size_t output_count, vn_buffer *params, const void *immediates, size_t immediates_len,
                               uint32_t x, uint32_t y, uint32_t z, vn_bound *out) {
    vn_status st = vn_device_check(p->device, "recording a dispatch");
    if (st != VN_OK) return st;
    st = take_immediates(p, immediates, immediates_len, out);
    if (st != VN_OK) return st;
    if ((input_count && inputs == NULL) || (output_count && outputs == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "handle counts are non-zero but the arrays are NULL. Fix: pass the handles.");
    uint32_t max_wg = p->device->limits.maxComputeWorkgroupsPerDimension;
    if (p->indirect_binding < 0 && (x > max_wg || y > max_wg || z > max_wg))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "workgroups (%u, %u, %u) exceed this device's maxComputeWorkgroupsPerDimension of %u. Fix: "
                       "use at most %u workgroups per dimension (spread work over y and z, or loop in the kernel).",
                       x, y, z, max_wg, max_wg);

    size_t n = p->binding_count;
    vn_buffer **bound = calloc(n ? n : 1, sizeof *bound);
    vn_buffer **outs = calloc(n ? n : 1, sizeof *outs);
    if (bound == NULL || outs == NULL) {
        free(bound);
        free(outs);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate binding tables. Fix: free host memory.");
    }
    /* The seed's rule: outputs take the next output handle, the first uniform
     * takes params when given, everything else the next input handle. Each handle
     * is retained as it is taken (bound[i] non-NULL: held), so a release on another
     * thread cannot free it while it is checked; on success the references are the
     * recording's. Handles no binding takes are never read. */
    size_t next_in = 0, next_out = 0, n_outs = 0;
    bool params_used = false, held = false;
    for (size_t i = 0; i < n && st == VN_OK; i++) {
        const vn_binding *b = &p->bindings[i];
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE) {
            if (next_out >= output_count) {
                st = vn_fail(VN_ERROR_BINDING,
                             "@group(%u) @binding(%u) `%s` (%s) needs output %zu, but %zu output(s) were passed. "
                             "Fix: pass one output buffer per read_write binding, in (group, binding) order.",
                             b->group, b->binding, b->name, kind_name(b->kind), next_out, output_count);
                break;
            }
            st = check_handle(p, b, outputs[next_out], "output", next_out, &held);
            bound[i] = held ? outputs[next_out] : NULL;
            next_out++;
            outs[n_outs++] = bound[i];
        } else if (b->kind == VN_BINDING_UNIFORM && params != NULL && !params_used) {
            st = check_handle(p, b, params, "params", 0, &held);
            bound[i] = held ? params : NULL;
            params_used = true;
        } else {
            if (next_in >= input_count) {
                st = vn_fail(VN_ERROR_BINDING,
                             "@group(%u) @binding(%u) `%s` (%s) needs input %zu, but %zu input(s) were passed. Fix: "
                             "pass one input buffer per read-only storage%s binding, in (group, binding) order.",
                             b->group, b->binding, b->name, kind_name(b->kind), next_in, input_count,
                             params != NULL ? " and every uniform after the first" : " and uniform");
                break;
            }
            st = check_handle(p, b, inputs[next_in], "input", next_in, &held);
            bound[i] = held ? inputs[next_in] : NULL;
            next_in++;
        }
    }
    if (st == VN_OK && (next_in != input_count || next_out != output_count || (params != NULL && !params_used))) {
        if (params != NULL && !params_used)
            st = vn_fail(VN_ERROR_BINDING, "params was passed, but entry point has no var<uniform> binding to take it. "
                         "Fix: pass params=None, or declare the uniform in the WGSL.");
        else {
            /* Name the bindings that do take handles of the kind left over. */
            bool outs_left = next_out != output_count;
            char names[512];
            size_t used = 0;
            names[0] = '\0';
            for (size_t i = 0; i < n; i++) {
                const vn_binding *b = &p->bindings[i];
                bool is_out = b->kind == VN_BINDING_STORAGE_READ_WRITE;
                if (is_out != outs_left || used >= sizeof names) continue;
                used += (size_t)snprintf(names + used, sizeof names - used, "%s@group(%u) @binding(%u) `%s`",
                                         used ? ", " : "", b->group, b->binding, b->name);
            }
            st = vn_fail(VN_ERROR_BINDING,
                         "%zu %s(s) were passed, but the entry point has %zu %s binding(s)%s%s; %s %zu has no "
                         "binding to take it. Fix: pass exactly one handle per binding (see pipeline.bindings).",
                         outs_left ? output_count : input_count, outs_left ? "output" : "input",
                         outs_left ? next_out : next_in, outs_left ? "read_write" : "input",
                         used ? ": " : "", names, outs_left ? "output" : "input", outs_left ? next_out : next_in);
        }
    }
    /* WebGPU's usage scopes: a buffer bound writable may not be bound anywhere else
     * in the same dispatch. wgpu reports it only when the command buffer is
     * finished; here it is an error at recording time, naming both bindings. */
    for (size_t i = 0; i < n && st == VN_OK; i++) {
        if (p->bindings[i].kind != VN_BINDING_STORAGE_READ_WRITE) continue;
        for (size_t j = 0; j < n && st == VN_OK; j++) {
            if (j == i || bound[j] != bound[i]) continue;
            const vn_binding *a = &p->bindings[i], *b = &p->bindings[j];
            st = vn_fail(VN_ERROR_BINDING,
                         "buffer %llu is bound to @group(%u) @binding(%u) `%s` (%s) and to @group(%u) @binding(%u) "
                         "`%s` (%s) of the same dispatch, but a writable storage binding may not share its buffer "
                         "with any other binding. Fix: pass distinct buffers (copy the input first), or make the "
                         "buffer one preserved read_write binding (compile(..., preserve=[\"%s\"])).",
                         (unsigned long long)bound[i]->identity, a->group, a->binding, a->name, kind_name(a->kind),
                         b->group, b->binding, b->name, kind_name(b->kind), a->name);
        }
    }
    vn_buffer *indirect = NULL;
    if (st == VN_OK && p->indirect_binding >= 0) {
        indirect = bound[p->indirect_binding];
        st = check_indirect(p, indirect);
    }
    if (st != VN_OK) {
        for (size_t i = 0; i < n; i++)
            if (bound[i] != NULL) vn_buffer_release(bound[i]);
        free(bound);
        free(outs);
        return st;
    }

    /* Everything checks out: the recording keeps the pipeline and the buffers. */
    vn_pipeline_retain(p);
    out->pipeline = p;
    out->buffers = bound;
    out->buffer_count = n;
    out->outputs = outs;
    out->output_count = n_outs;
    out->x = x;
    out->y = y;
    out->z = z;
    out->indirect = indirect;
    out->indirect_offset = p->indirect_offset;
    out->group_count = p->group_count;
    out->groups = calloc(p->group_count ? p->group_count : 1, sizeof *out->groups);
    if (out->groups == NULL) {
        vn_bound_release(out);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate bind-group slots. Fix: free host memory.");
    }
    size_t first = 0;
    vn_scope_begin(p->device);
    for (uint32_t g = 0; g < p->group_count && st == VN_OK; g++) {
        size_t count = 0;
        while (first + count < n && p->bindings[first + count].group == g) count++;
        st = vn_bind_cache_get(p, g, bound + first, (uint32_t)count, &out->groups[g]);
        first += count;
    }
    vn_status scope = vn_scope_end(p->device, "creating bind groups", VN_ERROR_VALIDATION,
                                   "check that each buffer fits its binding (size and usage).");
    if (st == VN_OK) st = scope;
    if (st != VN_OK) {
        /* A group that failed validation may sit in the cache as an invalid object. */
        for (size_t i = 0; i < n; i++) vn_bind_cache_forget(&p->cache, bound[i]->identity);
        vn_bound_release(out);
    }
    return st;
}

vn_status vn_bound_resolve(vn_pipeline *p, vn_buffer *const *inputs, size_t input_count, vn_buffer *const *outputs,
                           size_t output_count, vn_buffer *params, const void *immediates, size_t immediates_len,
                           uint32_t x, uint32_t y, uint32_t z, vn_bound *out) {
    memset(out, 0, sizeof *out);
    if (p == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "pipeline is NULL. Fix: pass a live Pipeline.");
    vn_status st = bound_resolve(p, inputs, input_count, outputs, output_count, params, immediates, immediates_len, x,
                                 y, z, out);
    if (st == VN_OK) return VN_OK;
    free(out->immediates); /* a failure before the bound owned anything else */
    memset(out, 0, sizeof *out);
    /* Every message of the binding rules names the pipeline, by its label. */
    char prefix[200];
    snprintf(prefix, sizeof prefix, "pipeline `%s`: ", p->label);
    return vn_fail_prefixed(st, prefix);
}

bool vn_bound_clears(const vn_bound *bound) {
    for (size_t i = 0; i < bound->buffer_count; i++) {
        const vn_binding *b = &bound->pipeline->bindings[i];
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE && !b->preserve) return true;
    }
    return false;
}

void vn_bound_encode_clears(const vn_bound *bound, WGPUCommandEncoder encoder) {
    /* Outputs start at zero unless they are preserved in/out state. */
    for (size_t i = 0; i < bound->buffer_count; i++) {
        const vn_binding *b = &bound->pipeline->bindings[i];
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE && !b->preserve)
            wgpu.CommandEncoderClearBuffer(encoder, bound->buffers[i]->buffer, 0, bound->buffers[i]->allocation_len);
    }
}

void vn_bound_dispatch_in_pass(const vn_bound *bound, WGPUComputePassEncoder pass, vn_pass_state *state) {
    const vn_pipeline *p = bound->pipeline;
    /* State is set only when it changes: a sequence of dispatches of one pipeline
     * over the same buffers costs one SetPipeline and one SetBindGroup per group. */
    if (state->pipeline != p->pipeline) {
        wgpu.ComputePassEncoderSetPipeline(pass, p->pipeline);
        state->pipeline = p->pipeline;
        memset(state->groups, 0, sizeof state->groups);
    }
    for (uint32_t g = 0; g < bound->group_count; g++) {
        if (g < 8 && state->groups[g] == bound->groups[g]) continue;
        wgpu.ComputePassEncoderSetBindGroup(pass, g, bound->groups[g], 0, NULL);
        if (g < 8) state->groups[g] = bound->groups[g];
    }
    if (bound->immediate_len > 0) wgpu.ComputePassEncoderSetImmediates(pass, 0, bound->immediates, bound->immediate_len);
    if (bound->indirect != NULL)
        wgpu.ComputePassEncoderDispatchWorkgroupsIndirect(pass, bound->indirect->buffer, bound->indirect_offset);
    else if (bound->x && bound->y && bound->z)
        wgpu.ComputePassEncoderDispatchWorkgroups(pass, bound->x, bound->y, bound->z);
}

void vn_bound_encode(const vn_bound *bound, WGPUCommandEncoder encoder, vn_timing *timing) {
    vn_bound_encode_clears(bound, encoder);
    WGPUComputePassEncoder pass = vn_begin_pass(encoder, timing);
    vn_pass_state state;
    memset(&state, 0, sizeof state);
    vn_bound_dispatch_in_pass(bound, pass, &state);
    wgpu.ComputePassEncoderEnd(pass);
    wgpu.ComputePassEncoderRelease(pass);
}
