/* bind_assign.c - which handle a dispatch gives each binding: the positional rule (the
 * seed's) or the named form (bind=), never both; and the list of a pipeline's bindings
 * that their messages name. bind_checks.c checks what each binding was given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

void vn_binding_list(const vn_pipeline *p, bool (*filter)(const vn_binding *), char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < p->binding_count && used < cap; i++) {
        const vn_binding *b = &p->bindings[i];
        if (filter != NULL && !filter(b)) continue;
        used += (size_t)vn_format(buf + used, cap - used, "%s`%s` (@group(%u) @binding(%u) %s)", used ? ", " : "",
                                 b->name, b->group, b->binding, vn_binding_wgsl(b->kind));
    }
    if (used == 0) snprintf(buf, cap, "none");
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
                               b->group, b->binding, b->name, vn_binding_wgsl(b->kind), next_out, a->output_count);
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
                               b->group, b->binding, b->name, vn_binding_wgsl(b->kind), next_in, a->input_count,
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
    if (index_of == NULL) return vn_fail_no_memory("a name table", n * sizeof *index_of);
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

vn_status vn_bind_sources(const vn_pipeline *p, const vn_dispatch_args *a, vn_source *src) {
    vn_status st = vn_check_forms(a->forms);
    if (st == VN_OK) st = (a->forms & VN_BIND_NAMED) ? assign_named(p, a, src) : assign_positional(p, a, src);
    return st;
}
