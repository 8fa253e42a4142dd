/* bind_checks.c - which view binds each binding of a dispatch, and its checks: each view
 * against its binding (live, same device, usage, size, limits, alignment), the indirect
 * counts, and WebGPU's aliasing rule over every pair of uses. bind.c makes a bound
 * dispatch of what passes here; which handle goes to which binding is bind_assign.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

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
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, vn_binding_wgsl(b->kind), have_s, miss_s, need_s);
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
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, vn_binding_wgsl(b->kind), (unsigned long long)bound,
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
                       role_of(&l), what_of(&l), b->group, b->binding, b->name, vn_binding_wgsl(b->kind), (unsigned long long)v->offset,
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
                 u->binding->binding, u->binding->name, vn_binding_wgsl(u->binding->kind), (unsigned long long)u->begin,
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

vn_status vn_resolve_views(vn_pipeline *p, const vn_dispatch_args *a, vn_source *src, vn_view *views,
                          vn_view *indirect, uint64_t *indirect_offset) {
    vn_status st = vn_bind_sources(p, a, src);
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
