/* bind.c - resolve handles against a pipeline's bindings and validate them into a
 * bound dispatch (vn_bound), which encode.c writes into a command buffer. Shared by
 * every kind of recording. Which handle each binding takes is bind_assign.c's, the
 * checks of what it took bind_checks.c's; here: the immediates, the bind groups and the
 * output clears, and the bound dispatch's life. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

vn_status vn_bound_output(const vn_bound *bound, int64_t index, const char *kind, const vn_view **out) {
    if (index < 0 || (uint64_t)index >= bound->output_count)
        return vn_fail(VN_ERROR_OUTPUT_INDEX,
                       "output index %lld is out of range for a %s with %zu output(s). Fix: pass an index from 0 to "
                       "%lld.",
                       (long long)index, kind, bound->output_count, (long long)bound->output_count - 1);
    *out = &bound->outputs[index];
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
    if (bound->clears != NULL) { /* before the buffers they name */
        for (size_t i = 0; i < bound->clear_count; i++) vn_clear_release(&bound->clears[i]);
        free(bound->clears);
    }
    if (bound->buffers != NULL) {
        for (size_t i = 0; i < bound->buffer_count; i++) vn_release(&bound->buffers[i]->obj);
        free(bound->buffers);
    }
    if (bound->indirect != NULL) vn_release(&bound->indirect->obj);
    free(bound->views);
    free(bound->outputs);
    free(bound->immediates);
    if (bound->pipeline != NULL) vn_release(&bound->pipeline->obj);
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

static vn_status bound_resolve(vn_pipeline *p, const vn_dispatch_args *a, vn_bound *out) {
    vn_status st = vn_device_check(p->device, "recording a dispatch");
    if (st != VN_OK) return st;
    st = take_immediates(p, a->immediates, a->immediates_len, out);
    if (st != VN_OK) return st;
    bool indirect_dispatch = a->indirect != NULL || p->indirect_binding >= 0;
    uint32_t max_wg = p->device->limits.maxComputeWorkgroupsPerDimension;
    if (!indirect_dispatch && (a->x > max_wg || a->y > max_wg || a->z > max_wg))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "workgroups (%u, %u, %u) exceed this device's maxComputeWorkgroupsPerDimension of %u. Fix: "
                       "use at most %u workgroups per dimension (spread work over y and z, or loop in the kernel).",
                       a->x, a->y, a->z, max_wg, max_wg);

    size_t n = p->binding_count, slots = n ? n : 1;
    vn_source *src = calloc(slots, sizeof *src);
    vn_view *views = calloc(slots, sizeof *views);
    vn_buffer **bound = calloc(slots, sizeof *bound);
    vn_view *outs = calloc(slots, sizeof *outs);
    if (src == NULL || views == NULL || bound == NULL || outs == NULL) {
        free(src);
        free(views);
        free(bound);
        free(outs);
        return vn_fail_no_memory("binding tables", slots * (sizeof *src + sizeof *views + sizeof *bound + sizeof *outs));
    }
    vn_view indirect = {NULL, 0, 0, 0};
    uint64_t indirect_offset = 0;
    st = vn_resolve_views(p, a, src, views, &indirect, &indirect_offset);
    free(src);
    if (st != VN_OK) {
        for (size_t i = 0; i < n; i++)
            if (views[i].buffer != NULL) vn_release(&views[i].buffer->obj);
        if (indirect.buffer != NULL) vn_release(&indirect.buffer->obj);
        free(views);
        free(bound);
        free(outs);
        return st;
    }

    /* Everything checks out: the recording keeps the pipeline, the buffers and the
     * indirect buffer (the references taken while checking). */
    vn_pipeline_retain(p);
    size_t n_outs = 0;
    for (size_t i = 0; i < n; i++) {
        bound[i] = views[i].buffer;
        if (p->bindings[i].kind == VN_BINDING_STORAGE_READ_WRITE) outs[n_outs++] = views[i];
    }
    out->pipeline = p;
    out->buffers = bound;
    out->views = views;
    out->buffer_count = n;
    out->outputs = outs;
    out->output_count = n_outs;
    out->x = a->x;
    out->y = a->y;
    out->z = a->z;
    out->indirect = indirect.buffer;
    out->indirect_offset = indirect.offset + indirect_offset;
    out->group_count = p->group_count;
    out->groups = calloc(p->group_count ? p->group_count : 1, sizeof *out->groups);
    /* Outputs start at zero unless they are preserved in/out state, or the caller keeps
     * them all (clear_outputs=False). */
    size_t clears = 0;
    for (size_t i = 0; i < n && !a->keep_outputs; i++) clears += vn_binding_cleared_output(&p->bindings[i]);
    out->clears = clears ? calloc(clears, sizeof *out->clears) : NULL;
    if (out->groups == NULL || (clears && out->clears == NULL)) {
        vn_bound_release(out);
        return vn_fail_no_memory("bind-group slots",
                                 (p->group_count ? p->group_count : 1) * sizeof *out->groups + clears * sizeof *out->clears);
    }
    /* From the caches first, with no error scope: a hit makes nothing wgpu could refuse.
     * Only what must be made (a missed group, the first fill) is made inside a scope. */
    bool all_cached = true;
    size_t first = 0;
    for (uint32_t g = 0; g < p->group_count; g++) {
        size_t count = 0;
        while (first + count < n && p->bindings[first + count].group == g) count++;
        all_cached &= vn_bind_cache_lookup(&p->cache, g, views + first, (uint32_t)count, &out->groups[g]);
        first += count;
    }
    for (size_t i = 0; i < n && clears > 0; i++) {
        if (!vn_binding_cleared_output(&p->bindings[i])) continue;
        if (!vn_clear_plan_cached(p->device, &views[i], &out->clears[out->clear_count])) {
            all_cached = false;
            break;
        }
        out->clear_count++;
    }
    if (all_cached) return VN_OK;
    first = 0;
    size_t planned = 0, missed = out->clear_count; /* the clear whose lookup missed */
    vn_scope_begin(p->device);
    for (uint32_t g = 0; g < p->group_count && st == VN_OK; g++) {
        size_t count = 0;
        while (first + count < n && p->bindings[first + count].group == g) count++;
        if (out->groups[g] == NULL) st = vn_bind_cache_get_missed(p, g, views + first, (uint32_t)count, &out->groups[g]);
        first += count;
    }
    for (size_t i = 0; i < n && st == VN_OK && clears > 0; i++) {
        if (!vn_binding_cleared_output(&p->bindings[i]) || planned++ < out->clear_count) continue;
        st = (out->clear_count == missed ? vn_clear_plan_missed : vn_clear_plan)(p->device, &views[i],
                                                                               &out->clears[out->clear_count]);
        if (st == VN_OK) out->clear_count++;
    }
    vn_status scope = vn_scope_end(p->device, "creating bind groups", VN_ERROR_VALIDATION,
                                   "check that each buffer fits its binding (size and usage).");
    if (st == VN_OK) st = scope;
    if (st != VN_OK) {
        /* A group that failed validation may sit in a cache as an invalid object. */
        for (size_t i = 0; i < n; i++) {
            vn_bind_cache_forget(&p->cache, bound[i]->identity);
            vn_fill_forget(p->device, bound[i]->identity);
        }
        vn_bound_release(out);
    }
    return st;
}

vn_status vn_bound_resolve(vn_pipeline *p, const vn_dispatch_args *a, vn_bound *out) {
    memset(out, 0, sizeof *out);
    if (p == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "pipeline is NULL. Fix: pass a live Pipeline.");
    if (a == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "the dispatch arguments are NULL. Fix: pass them.");
    vn_status st = bound_resolve(p, a, out);
    if (st == VN_OK) return VN_OK;
    free(out->immediates); /* a failure before the bound owned anything else */
    memset(out, 0, sizeof *out);
    /* Every message of the binding rules names the pipeline, by its label. */
    char prefix[200];
    vn_format(prefix, sizeof prefix, "pipeline `%s`: ", p->label);
    return vn_fail_prefixed(st, prefix);
}

vn_status vn_bound_submittable(const vn_bound *bound, const char *what) {
    vn_status st = vn_buffers_submittable(bound->buffers, bound->buffer_count, what);
    if (st == VN_OK && bound->indirect != NULL) st = vn_buffers_submittable(&bound->indirect, 1, what);
    return st;
}
