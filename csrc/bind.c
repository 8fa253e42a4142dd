/* bind.c - resolve handles against a pipeline's bindings and validate them into a
 * bound dispatch (vn_bound), which encode.c writes into a command buffer. Shared by
 * every kind of recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

/* A pipeline's kinds were checked at its creation (pipeline.c), so every one has facts. */
static const char *kind_name(vn_binding_kind kind) { return vn_binding_kind_facts_of(kind)->wgsl; }

static uint64_t required_usage(const vn_binding *b) { return vn_binding_kind_facts_of(b->kind)->usage; }

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

/* "input 2", "output 0", "params 0" or "bind['x']": where a binding's view came from. */
typedef struct vn_source {
    const vn_view *view;
    const char *role;  /* "input", "output", "params"; NULL for the named form */
    size_t index;      /* in its role's array, or in names[] */
} vn_source;

static void source_label(const vn_source *src, const vn_binding *b, char *buf, size_t cap) {
    if (src->role != NULL) vn_format(buf, cap, "%s %zu", src->role, src->index);
    else vn_format(buf, cap, "bind['%s']", b->name);
}

/* "(buffer 12)" or "(48 bytes at offset 256 of buffer 12)": what a resolved view is. */
static void view_label(const vn_view *v, char *buf, size_t cap) {
    if (v->offset == 0 && v->size == v->buffer->byte_len)
        snprintf(buf, cap, "(buffer %llu)", (unsigned long long)v->buffer->identity);
    else
        snprintf(buf, cap, "(%llu bytes at offset %llu of buffer %llu)", (unsigned long long)v->size,
                 (unsigned long long)v->offset, (unsigned long long)v->buffer->identity);
}

void vn_binding_list(const vn_pipeline *p, bool (*filter)(const vn_binding *), char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->binding_count && used < cap; i++) {
        const vn_binding *b = &p->bindings[i];
        if (filter != NULL && !filter(b)) continue;
        used += (size_t)vn_format(buf + used, cap - used, "%s`%s` (@group(%u) @binding(%u) %s)", used ? ", " : "",
                                 b->name, b->group, b->binding, kind_name(b->kind));
    }
    if (used == 0) snprintf(buf, cap, "none");
}

/* The labels of a binding's view in its messages, made on first use: a dispatch that
 * passes its checks formats none. */
typedef struct vn_labels {
    const vn_source *src;
    const vn_binding *b;
    const vn_view *v;
    char role[160], what[96];
} vn_labels;

static const char *role_of(vn_labels *l) {
    if (l->role[0] == '\0') source_label(l->src, l->b, l->role, sizeof l->role);
    return l->role;
}

static const char *what_of(vn_labels *l) {
    if (l->what[0] == '\0') view_label(l->v, l->what, sizeof l->what);
    return l->what;
}

/* Check view `src` for binding b; *v gets it resolved and, when its buffer is a live
 * buffer, *held is set and the buffer retained (whatever the checks after that say: the
 * caller releases what it took on any failure). */
static vn_status check_view(const vn_pipeline *p, const vn_binding *b, const vn_source *src, vn_view *v, bool *held) {
    vn_labels l;
    l.src = src;
    l.b = b;
    l.v = v;
    l.role[0] = l.what[0] = '\0';
    *held = false;
    if (src->view->buffer == NULL)
        return vn_fail(VN_ERROR_BINDING, "%s for @group(%u) @binding(%u) `%s` is NULL. Fix: pass a live Buffer.",
                       role_of(&l), b->group, b->binding, b->name);
    /* Held from here: by the call while resolving, then by the recording. A refusal is
     * asked again with the binding's name, for its message (only then formatted). */
    vn_status st = vn_view_acquire(src->view, "a binding", v);
    if (st != VN_OK) {
        char fn[224];
        vn_format(fn, sizeof fn, "%s for @group(%u) @binding(%u) `%s`", role_of(&l), b->group, b->binding, b->name);
        st = vn_view_acquire(src->view, fn, v);
        if (st != VN_OK) return st;
    }
    *held = true;
    const vn_buffer *h = v->buffer;
    if (h->device != p->device)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %s for @group(%u) @binding(%u) `%s` belongs to another device. Fix: create or upload the "
                       "buffer on the pipeline's device.", role_of(&l), what_of(&l), b->group, b->binding, b->name);
    uint64_t need = required_usage(b);
    if ((h->usage & need) != need) {
        char have_s[160], need_s[160], miss_s[160];
        usage_names(h->usage, have_s, sizeof have_s);
        usage_names(need, need_s, sizeof need_s);
        usage_names(need & ~h->usage, miss_s, sizeof miss_s);
        return vn_fail(VN_ERROR_BINDING,
                       "%s %s for @group(%u) @binding(%u) `%s` (%s) has usage %s, missing %s. Fix: create it with "
                       "usage including %s, or leave usage unset for the default.",
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, kind_name(b->kind), have_s, miss_s, need_s);
    }
    bool uniform = b->kind == VN_BINDING_UNIFORM;
    uint64_t bound = vn_view_extent(v);
    /* WebGPU: a storage binding's size is a multiple of 4 (a uniform's need not be). A
     * view ending its buffer binds its padding too; one ending mid-word inside the
     * buffer cannot be padded without binding its neighbour's bytes. */
    if (!uniform && bound % 4 != 0)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %s for @group(%u) @binding(%u) `%s` (%s) has %llu bytes and ends mid-word inside its "
                       "buffer; WebGPU needs a storage binding's size to be a multiple of 4, and padding it to %llu "
                       "would bind the next %llu byte(s) of the buffer too. Fix: make the view's nbytes a multiple "
                       "of 4 (or end it at the end of the buffer).",
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, kind_name(b->kind), (unsigned long long)bound,
                       (unsigned long long)vn_pad4(bound), (unsigned long long)(vn_pad4(bound) - bound));
    if (bound < b->binding_size)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %s for @group(%u) @binding(%u) `%s` has %llu bytes, but its declared type needs at least "
                       "%llu%s. Fix: pass a buffer of at least %llu bytes.",
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, (unsigned long long)v->size,
                       (unsigned long long)b->binding_size,
                       b->binding_size > b->min_size ? " (one element of its runtime-sized array)" : "",
                       (unsigned long long)b->binding_size);
    uint64_t max_binding = uniform ? p->device->limits.maxUniformBufferBindingSize
                                   : p->device->limits.maxStorageBufferBindingSize;
    if (bound > max_binding)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %s for @group(%u) @binding(%u) `%s` has %llu bytes, above this device's largest %s binding "
                       "of %llu bytes. Fix: split the data across bindings or dispatches.",
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, (unsigned long long)bound,
                       uniform ? "uniform" : "storage", (unsigned long long)max_binding);
    uint64_t align = uniform ? p->device->limits.minUniformBufferOffsetAlignment
                             : p->device->limits.minStorageBufferOffsetAlignment;
    if (align > 1 && v->offset % align != 0)
        return vn_fail(VN_ERROR_BINDING,
                       "%s %s for @group(%u) @binding(%u) `%s` (%s) starts at offset %llu, but this device's "
                       "min_%s_buffer_offset_alignment is %llu. Fix: place the view at a multiple of %llu bytes "
                       "(dev.limits['min_%s_buffer_offset_alignment']).",
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, kind_name(b->kind), (unsigned long long)v->offset,
                       uniform ? "uniform" : "storage", (unsigned long long)align, (unsigned long long)align,
                       uniform ? "uniform" : "storage");
    return VN_OK;
}

/* The three u32 counts at `offset` into view v (resolved), read by an indirect dispatch. */
static vn_status check_indirect(const vn_pipeline *p, const char *role, const vn_view *v, uint64_t offset) {
    const vn_buffer *h = v->buffer;
    char what[96];
    view_label(v, what, sizeof what);
    if (h->device != p->device)
        return vn_fail(VN_ERROR_BINDING,
                       "indirect buffer %s %s belongs to another device than the pipeline. Fix: create it on the "
                       "pipeline's device.", role, what);
    if (!(h->usage & VN_USAGE_INDIRECT))
        return vn_fail(VN_ERROR_BINDING,
                       "indirect buffer %s %s has no INDIRECT usage. Fix: create it with vn.BufferUsage.INDIRECT, or "
                       "leave usage unset for the default.", role, what);
    char sum[VN_SUM_TEXT], most[64] = "";
    if (offset > v->size || v->size - offset < 12) {
        /* The largest offset that fits and is 4-aligned in the buffer, where one is. */
        uint64_t top = v->size >= 12 ? (v->offset + v->size - 12) & ~(uint64_t)3 : 0;
        if (v->size >= 12 && top >= v->offset)
            snprintf(most, sizeof most, "an offset of at most %llu, or ", (unsigned long long)(top - v->offset));
        return vn_fail(VN_ERROR_BINDING,
                       "indirect buffer %s %s has %llu bytes, too few for three u32 workgroup counts at offset %llu "
                       "(needs %s). Fix: pass %sa buffer of at least offset + 12 bytes.",
                       role, what, (unsigned long long)v->size, (unsigned long long)offset,
                       vn_sum_text(offset, 12, sum), most);
    }
    /* After the range: an offset this refusal's Fix aligns then fits the buffer. */
    if ((v->offset + offset) % 4 != 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "indirect offset %llu into %s %s is byte %llu of its buffer, not a multiple of 4. Fix: place "
                       "the three u32 workgroup counts at a 4-byte-aligned byte of the buffer.",
                       (unsigned long long)offset, role, what, (unsigned long long)(v->offset + offset));
    return VN_OK;
}

vn_status vn_check_forms(uint32_t forms) {
    if ((forms & VN_BIND_POSITIONAL) && (forms & VN_BIND_NAMED))
        return vn_fail(VN_ERROR_BINDING,
                       "bind= was passed together with inputs/outputs/params. Fix: name every binding in bind= "
                       "(bind={'x': buf, ...}), or pass them positionally, not both.");
    return VN_OK;
}

vn_status vn_match_names(const vn_pipeline *p, const char *const *names, size_t count,
                         bool (*takes)(const vn_binding *), const char *not_taken, size_t *index_of) {
    size_t n = p->binding_count;
    char list[1024];
    if (count > 0 && names == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%zu named buffers but the names are NULL. Fix: pass the names.", count);
    for (size_t j = 0; j < n; j++) index_of[j] = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        if (names[i] == NULL)
            return vn_fail(VN_ERROR_INVALID_ARGUMENT, "bind name %zu is NULL. Fix: pass binding names.", i);
        size_t j = 0;
        while (j < n && strcmp(p->bindings[j].name, names[i]) != 0) j++;
        if (j == n || !takes(&p->bindings[j])) {
            vn_binding_list(p, takes, list, sizeof list);
            if (j == n)
                return vn_fail(VN_ERROR_BINDING,
                               "bind= names `%s`, which is not a binding the entry point uses; its bindings are %s. "
                               "Fix: name each of those exactly once.", names[i], list);
            return vn_fail(VN_ERROR_BINDING,
                           "bind= names `%s`, %s; bind= names %s. Fix: leave `%s` out of bind=.", names[i], not_taken,
                           list, names[i]);
        }
        if (index_of[j] != SIZE_MAX)
            return vn_fail(VN_ERROR_BINDING,
                           "bind= names `%s` twice (entries %zu and %zu). Fix: name each binding exactly once.",
                           names[i], index_of[j], i);
        index_of[j] = i;
    }
    char missing[512];
    size_t used = 0, absent = 0;
    missing[0] = '\0';
    for (size_t j = 0; j < n; j++) {
        if (index_of[j] != SIZE_MAX || !takes(&p->bindings[j])) continue;
        absent++;
        if (used < sizeof missing)
            used += (size_t)vn_format(missing + used, sizeof missing - used, "%s`%s`", used ? ", " : "",
                                     p->bindings[j].name);
    }
    if (absent > 0) {
        vn_binding_list(p, takes, list, sizeof list);
        return vn_fail(VN_ERROR_BINDING,
                       "bind= does not name %s; every binding the entry point uses must be named exactly once, and its "
                       "bindings are %s. Fix: name %s in bind= too.", missing, list, missing);
    }
    return VN_OK;
}

static bool any_binding(const vn_binding *b) {
    (void)b;
    return true;
}

/* The seed's rule: outputs take the next output handle, the first uniform takes
 * params when given, everything else the next input handle. */
static vn_status assign_positional(const vn_pipeline *p, const vn_dispatch_args *a, vn_source *src) {
    if ((a->input_count && a->inputs == NULL) || (a->output_count && a->outputs == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "handle counts are non-zero but the arrays are NULL. Fix: pass the handles.");
    size_t n = p->binding_count, next_in = 0, next_out = 0;
    bool params_used = false;
    for (size_t i = 0; i < n; i++) {
        const vn_binding *b = &p->bindings[i];
        if (b->kind == VN_BINDING_STORAGE_READ_WRITE) {
            if (next_out >= a->output_count)
                return vn_fail(VN_ERROR_BINDING,
                               "@group(%u) @binding(%u) `%s` (%s) needs output %zu, but %zu output(s) were passed. "
                               "Fix: pass one output buffer per read_write binding, in (group, binding) order.",
                               b->group, b->binding, b->name, kind_name(b->kind), next_out, a->output_count);
            src[i] = (vn_source){&a->outputs[next_out], "output", next_out};
            next_out++;
        } else if (b->kind == VN_BINDING_UNIFORM && a->params != NULL && !params_used) {
            src[i] = (vn_source){a->params, "params", 0};
            params_used = true;
        } else {
            if (next_in >= a->input_count)
                return vn_fail(VN_ERROR_BINDING,
                               "@group(%u) @binding(%u) `%s` (%s) needs input %zu, but %zu input(s) were passed. Fix: "
                               "pass one input buffer per read-only storage%s binding, in (group, binding) order.",
                               b->group, b->binding, b->name, kind_name(b->kind), next_in, a->input_count,
                               a->params != NULL ? " and every uniform after the first" : " and uniform");
            src[i] = (vn_source){&a->inputs[next_in], "input", next_in};
            next_in++;
        }
    }
    if (a->params != NULL && !params_used)
        return vn_fail(VN_ERROR_BINDING, "params was passed, but entry point has no var<uniform> binding to take it. "
                       "Fix: pass params=None, or declare the uniform in the WGSL.");
    if (next_in == a->input_count && next_out == a->output_count) return VN_OK;
    /* Name the bindings that do take handles of the kind left over. */
    bool outs_left = next_out != a->output_count;
    char names[512];
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const vn_binding *b = &p->bindings[i];
        bool is_out = b->kind == VN_BINDING_STORAGE_READ_WRITE;
        if (is_out != outs_left || used >= sizeof names) continue;
        used += (size_t)vn_format(names + used, sizeof names - used, "%s@group(%u) @binding(%u) `%s`",
                                 used ? ", " : "", b->group, b->binding, b->name);
    }
    return vn_fail(VN_ERROR_BINDING,
                   "%zu %s(s) were passed, but the entry point has %zu %s binding(s)%s%s; %s %zu has no binding to "
                   "take it. Fix: pass exactly one handle per binding (see pipeline.bindings).",
                   outs_left ? a->output_count : a->input_count, outs_left ? "output" : "input",
                   outs_left ? next_out : next_in, outs_left ? "read_write" : "input", used ? ": " : "", names,
                   outs_left ? "output" : "input", outs_left ? next_out : next_in);
}

static vn_status assign_named(const vn_pipeline *p, const vn_dispatch_args *a, vn_source *src) {
    size_t n = p->binding_count;
    size_t stack_index[32];
    size_t *index_of = n <= 32 ? stack_index : malloc(n * sizeof *index_of);
    if (index_of == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a name table. Fix: free host memory.");
    if (a->named_count > 0 && a->named == NULL) {
        if (index_of != stack_index) free(index_of);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%zu names but the named views are NULL. Fix: pass them.",
                       a->named_count);
    }
    vn_status st = vn_match_names(p, a->names, a->named_count, any_binding, "", index_of);
    for (size_t j = 0; j < n && st == VN_OK; j++) src[j] = (vn_source){&a->named[index_of[j]], NULL, index_of[j]};
    if (index_of != stack_index) free(index_of);
    return st;
}

/* One use of a buffer by a dispatch: a binding, or the indirect counts (binding NULL),
 * over bytes [begin, end) of the buffer as wgpu sees them bound (vn_view_extent, as
 * bind_cache.c binds it). */
typedef struct vn_use {
    const vn_binding *binding;
    const vn_buffer *buffer;
    uint64_t begin, end;
} vn_use;

static vn_use binding_use(const vn_binding *b, const vn_view *v) {
    return (vn_use){b, v->buffer, v->offset, v->offset + vn_view_extent(v)};
}

static bool use_writable(const vn_use *u) { return u->binding != NULL && u->binding->kind == VN_BINDING_STORAGE_READ_WRITE; }

/* "@group(0) @binding(1) `out` (var<storage, read_write>, bytes [256, 512))", or
 * "the indirect workgroup counts (bytes [0, 12))". */
static void use_label(const vn_use *u, char *buf, size_t cap) {
    if (u->binding == NULL)
        snprintf(buf, cap, "the indirect workgroup counts (bytes [%llu, %llu))", (unsigned long long)u->begin,
                 (unsigned long long)u->end);
    else
        snprintf(buf, cap, "@group(%u) @binding(%u) `%s` (%s, bytes [%llu, %llu))", u->binding->group,
                 u->binding->binding, u->binding->name, kind_name(u->binding->kind), (unsigned long long)u->begin,
                 (unsigned long long)u->end);
}

/* WebGPU's rule for two uses of one buffer by one dispatch, exactly. The dispatch is a
 * usage scope in which a buffer (one subresource, whatever the ranges) is either in
 * read-only uses alone (storage-read, constant, input: read-only storage, uniform, the
 * indirect counts) or in writable storage uses alone (the "usage scope storage
 * exception"); wgpu-core holds the whole buffer in one state and refuses
 * STORAGE_READ_WRITE with any other usage at Finish. Writable bindings of one buffer
 * must not overlap ("encoder bind groups alias a writable resource"), which wgpu-native
 * 29 does not check: it accepts overlapping read_write bindings and the invocations
 * race. Here both are errors at recording time, naming both uses and their ranges. */
static vn_status check_pair(const vn_use *a, const vn_use *b) {
    if (a->buffer->buffer != b->buffer->buffer) return VN_OK;
    bool wa = use_writable(a), wb = use_writable(b);
    if (!wa && !wb) return VN_OK;
    char la[200], lb[200];
    use_label(a, la, sizeof la);
    use_label(b, lb, sizeof lb);
    unsigned long long id = (unsigned long long)a->buffer->identity;
    static const char rule[] =
        "but a buffer bound writable (var<storage, read_write>) may have no read-only use in that dispatch "
        "(var<storage, read>, var<uniform>, the indirect counts), whatever the byte ranges: WebGPU's usage scope "
        "holds the whole buffer in one state for the dispatch";
    if (wa != wb && (a->binding == NULL || b->binding == NULL))
        return vn_fail(VN_ERROR_BINDING,
                       "buffer %llu holds %s and is bound to %s of the same dispatch, %s. Fix: keep the counts in a "
                       "buffer this dispatch does not write (copy them there first).",
                       id, a->binding == NULL ? la : lb, a->binding == NULL ? lb : la, rule);
    if (wa != wb)
        return vn_fail(VN_ERROR_BINDING,
                       "buffer %llu is bound to %s and to %s of the same dispatch, %s. Fix: keep the read-only data "
                       "in another buffer (copy it there first), or bind it var<storage, read_write> too, over a "
                       "range disjoint from the other.",
                       id, la, lb, rule);
    if (a->begin >= b->end || b->begin >= a->end) return VN_OK;
    uint64_t lo = a->begin > b->begin ? a->begin : b->begin, hi = a->end < b->end ? a->end : b->end;
    return vn_fail(VN_ERROR_BINDING,
                   "buffer %llu is bound to %s and to %s of the same dispatch, and those writable ranges overlap in "
                   "bytes [%llu, %llu): WebGPU forbids writable bindings that alias (\"encoder bind groups alias a "
                   "writable resource\"), and the invocations would race on those bytes. Fix: bind disjoint ranges "
                   "of the buffer (views that do not overlap; touching ends are disjoint), or one binding over the "
                   "whole range.",
                   id, la, lb, (unsigned long long)lo, (unsigned long long)hi);
}

/* Every pair of the dispatch's uses (each binding, and the indirect counts when
 * `indirect` has a buffer: its view and the counts' offset into it). Pairs compare
 * pointers first, so the common case (distinct buffers) costs n^2/2 compares of a
 * pipeline's few bindings. */
static vn_status check_aliasing(const vn_pipeline *p, const vn_view *views, const vn_view *indirect,
                                uint64_t indirect_offset) {
    size_t n = p->binding_count;
    for (size_t i = 0; i < n; i++) {
        vn_use a = binding_use(&p->bindings[i], &views[i]);
        for (size_t j = i + 1; j < n; j++) {
            if (views[j].buffer->buffer != views[i].buffer->buffer) continue;
            vn_use b = binding_use(&p->bindings[j], &views[j]);
            vn_status st = check_pair(&a, &b);
            if (st != VN_OK) return st;
        }
        if (indirect->buffer != NULL) {
            uint64_t at = indirect->offset + indirect_offset;
            vn_use counts = {NULL, indirect->buffer, at, at + 12};
            vn_status st = check_pair(&a, &counts);
            if (st != VN_OK) return st;
        }
    }
    return VN_OK;
}

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

/* Which view binds each binding, each checked, and the indirect counts' view. Every
 * buffer taken is retained as it is taken (views[i].buffer, indirect->buffer non-NULL:
 * held), so a release on another thread cannot free it while it is checked. */
static vn_status resolve_views(vn_pipeline *p, const vn_dispatch_args *a, vn_source *src, vn_view *views,
                               vn_view *indirect, uint64_t *indirect_offset) {
    vn_status st = vn_check_forms(a->forms);
    if (st == VN_OK) st = (a->forms & VN_BIND_NAMED) ? assign_named(p, a, src) : assign_positional(p, a, src);
    for (size_t i = 0; i < p->binding_count && st == VN_OK; i++) {
        bool held = false;
        st = check_view(p, &p->bindings[i], &src[i], &views[i], &held);
        if (!held) views[i].buffer = NULL;
    }
    if (st != VN_OK) return st;
    if (a->indirect != NULL) {
        if (p->indirect_binding >= 0)
            return vn_fail(VN_ERROR_BINDING,
                           "indirect= was passed, but the pipeline was compiled with indirect=('%s', %llu), which "
                           "already names where its workgroup counts are. Fix: pass indirect= to compile() or to the "
                           "dispatch, not both.", p->bindings[p->indirect_binding].name,
                           (unsigned long long)p->indirect_offset);
        if (a->indirect->buffer == NULL)
            return vn_fail(VN_ERROR_BINDING, "the indirect buffer is NULL. Fix: pass indirect=(buffer, offset).");
        st = vn_view_acquire(a->indirect, "indirect buffer", indirect);
        if (st != VN_OK) {
            indirect->buffer = NULL;
            return st;
        }
        st = check_indirect(p, "indirect=", indirect, a->indirect_offset);
        *indirect_offset = a->indirect_offset;
    } else if (p->indirect_binding >= 0) {
        const vn_view *v = &views[p->indirect_binding];
        *indirect_offset = p->indirect_offset;
        char role[160];
        vn_format(role, sizeof role, "`%s`", p->bindings[p->indirect_binding].name);
        st = check_indirect(p, role, v, p->indirect_offset);
        if (st == VN_OK) {
            vn_buffer_retain(v->buffer); /* the bound dispatch's own reference, as for any indirect buffer */
            *indirect = *v;
        }
    }
    if (st == VN_OK) st = check_aliasing(p, views, indirect, *indirect_offset);
    return st;
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
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate binding tables. Fix: free host memory.");
    }
    vn_view indirect = {NULL, 0, 0, 0};
    uint64_t indirect_offset = 0;
    st = resolve_views(p, a, src, views, &indirect, &indirect_offset);
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
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate bind-group slots. Fix: free host memory.");
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
