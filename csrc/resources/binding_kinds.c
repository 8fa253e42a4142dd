/* binding_kinds.c - what each kind of buffer binding is, in one table: its names, its
 * wgpu layout type and the buffer usage it needs. Pipelines (pipeline.c) build their
 * layouts from it, binding resolution (bind_checks.c) checks buffers and names kinds in
 * messages with it, and Python reads the names through vn_binding_kind_name. */
#include "layer_resources.h"

static const vn_binding_kind_facts facts[VN_BINDING_KIND_COUNT] = {
    [VN_BINDING_STORAGE_READ] = {"storage_read", "var<storage, read>", WGPUBufferBindingType_ReadOnlyStorage,
                                 VN_USAGE_STORAGE | VN_USAGE_COPY_DST},
    [VN_BINDING_STORAGE_READ_WRITE] = {"storage_read_write", "var<storage, read_write>", WGPUBufferBindingType_Storage,
                                       VN_USAGE_STORAGE | VN_USAGE_COPY_SRC | VN_USAGE_COPY_DST},
    [VN_BINDING_UNIFORM] = {"uniform", "var<uniform>", WGPUBufferBindingType_Uniform,
                            VN_USAGE_UNIFORM | VN_USAGE_COPY_DST},
};

const vn_binding_kind_facts *vn_binding_kind_facts_of(vn_binding_kind kind) {
    return (unsigned)kind < VN_BINDING_KIND_COUNT ? &facts[kind] : NULL;
}

const char *vn_binding_kind_name(vn_binding_kind kind) {
    const vn_binding_kind_facts *f = vn_binding_kind_facts_of(kind);
    return f != NULL ? f->name : NULL;
}

const char *vn_binding_kind_wgsl(vn_binding_kind kind) {
    const vn_binding_kind_facts *f = vn_binding_kind_facts_of(kind);
    return f != NULL ? f->wgsl : NULL;
}
