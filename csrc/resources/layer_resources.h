/* layer_resources.h - layer 4: what work is made of. Buffers and views (buffer.c), shaders'
 * diagnostics and nesting check (diagnostics.c, wgsl_depth.c), pipelines and their
 * bind-group cache (pipeline.c, bind_cache.c), binding resolution into a bound dispatch
 * (bind.c; which handle each binding takes, bind_assign.c; their checks, bind_checks.c),
 * and the plan of an output's zero fill (fill.c). interop.c (wgpu-py's
 * objects) stands beside them on this header: it defines entry points only. Encoding
 * any of it into a command buffer is layer_work.h's. */
#ifndef VN_LAYER_RESOURCES_H
#define VN_LAYER_RESOURCES_H

#include "../device/layer_device.h"

/* ---- diagnostics (diagnostics.c) ------------------------------------------------ */

/* After shader creation failed with `code`: rewrite the last error as "<what, at line
 * L, column C>\n<source line>\n<caret>\nFix: ..." with its position set
 * (vn_last_error_position); var<immediate> on a device without the feature becomes
 * VN_ERROR_UNSUPPORTED. Returns the resulting code. */
vn_status vn_shader_diagnose(vn_device *device, const char *wgsl, size_t wgsl_len, vn_status code);
/* After a check of entry point `entry` failed with `code` (this thread's message "<what>.
 * Fix: <fix>"): the same pointing at the source, "<what> at line L, column C (wgsl:L:C)\n
 * <source line>\n<caret>\nFix: <fix>" with the position set: at the first `var<space>`
 * (space not NULL), else the entry point's `@<attribute>`, else its name. Returns code;
 * the message is unchanged where no place is found. */
vn_status vn_shader_point(const char *wgsl, size_t wgsl_len, const char *entry, const char *attribute,
                          const char *space, vn_status code);
/* VN_ERROR_UNSUPPORTED: "<what>, but this device lacks ... immediates", then `shown` (a
 * source excerpt, or NULL) and the Fix that fits (the adapter offers it or not). */
vn_status vn_immediates_unsupported(const vn_device *device, const char *what, const char *shown);

/* ---- WGSL text (wgsl_depth.c) ---------------------------------------------- */

/* The place of byte `at` of src[0..n) as WGSL counts it: line (1-based; every WGSL line
 * break ends one: LF, VT, FF, CR, NEL, U+2028, U+2029, CR LF as one) and column (1-based,
 * in characters); and, where not NULL, the byte offset and length of that line (its
 * break left out). The one count of lines every message about a place in the WGSL uses. */
void vn_wgsl_place(const char *src, size_t n, size_t at, unsigned long long *line, unsigned long long *column,
                   size_t *line_start, size_t *line_len);
/* The stack vn_shader_create compiles `len` bytes of WGSL on: enough for the deepest
 * recursion naga makes over any source of that length that vn_wgsl_check_size and
 * vn_wgsl_check_nesting accept (VN_WGSL_STACK_BASE_KIB + VN_WGSL_STACK_BYTES_PER_BYTE a
 * byte; the header has the measured figures). */
size_t vn_wgsl_compile_stack(size_t len);

/* ---- buffers (buffer.c) ----------------------------------------------------- */

struct vn_buffer {
    vn_object obj; /* VN_KIND_BUFFER */
    vn_device *device;
    WGPUBuffer buffer;
    uint64_t byte_len;
    uint64_t allocation_len;
    uint64_t usage;
    uint64_t identity;     /* the allocation identity: obj.id */
    /* vn_foreign_state: what wgpu-py did to it, when it shares it (interop.c). Written
     * under the device's life lock for writing, read by submits under it for reading. */
    atomic_int foreign;
};

/* VN_OK, or VN_ERROR_BINDING naming `what` when one of the buffers is mapped or
 * destroyed by wgpu-py (submitting it would abort the process). Call under the life lock
 * (a submit's vn_submit_guard). */
vn_status vn_buffers_submittable(vn_buffer *const *buffers, size_t count, const char *what);
/* A guard check over one vn_buffer (arg), for readbacks. */
vn_status vn_buffer_submittable(const void *buffer);

void vn_buffer_retain(vn_buffer *buffer);
/* vn_buffer_create on a device object the caller holds; *out gets the buffer object. */
vn_status vn_buffer_create_held(vn_device *device, uint64_t byte_len, uint64_t usage, const void *data,
                                vn_buffer **out);
/* The header, identity, device reference and live count of a new buffer record. */
void vn_buffer_init(vn_buffer *buffer, vn_device *device);
/* VN_OK or why the buffer cannot be used (device closed or lost). */
vn_status vn_buffer_check(const vn_buffer *buffer, const char *what);
/* vn_view_check's rules, with `what` (the argument, e.g. "input 0") in the message:
 * *out gets the view with its size resolved. The view's buffer must be held (acquired). */
vn_status vn_view_resolve(const vn_view *view, const char *what, vn_view *out);
/* At an entry point: translate the caller's view (its buffer an id) into a view of the
 * buffer object, retained for the call (as vn_acquire does; `what` names it in the
 * message), resolved into *out. On failure nothing is held and out->buffer is NULL; on
 * success the caller releases out->buffer (vn_unacquire) when done, or keeps the
 * reference. */
vn_status vn_view_acquire(const vn_view *view, const char *what, vn_view *out);

/* ---- small helpers of views --------------------------------------------------- */

static inline uint64_t vn_pad4(uint64_t n) { return n == 0 ? 4 : (n + 3) & ~(uint64_t)3; }
/* The bytes a resolved view occupies on the GPU, as it binds and clears: its size,
 * padded to 4 only where it ends its buffer (the padding is the allocation's own; a
 * view ending mid-word inside the buffer would reach its neighbour's bytes). */
static inline uint64_t vn_view_extent(const vn_view *v) {
    return v->offset + v->size == v->buffer->byte_len ? vn_pad4(v->size) : v->size;
}

/* ---- pipelines and the bind-group cache (pipeline.c, bind_cache.c) ---------- */

struct vn_shader {
    vn_object obj; /* VN_KIND_SHADER */
    vn_device *device;
    WGPUShaderModule module;
    char *wgsl;          /* the source (terminated): where pipeline errors point */
    size_t wgsl_len;
};

/* The facts of each binding kind, in one table (binding_kinds.c): its names (the public
 * vn_binding_kind_name and vn_binding_kind_wgsl read them), the wgpu binding type of its
 * layout entry, and the usage bits a buffer bound to it needs (outputs are cleared,
 * COPY_DST, and read back, COPY_SRC; inputs are written from the host, COPY_DST). */
typedef struct vn_binding_kind_facts {
    const char *name;
    const char *wgsl;
    WGPUBufferBindingType type;
    uint64_t usage;
} vn_binding_kind_facts;
/* The facts of `kind`, or NULL when it is no vn_binding_kind. */
const vn_binding_kind_facts *vn_binding_kind_facts_of(vn_binding_kind kind);
/* A pipeline binding's kind as WGSL spells it, for messages: a pipeline's kinds were
 * checked at its creation (pipeline.c), so every one has facts. */
static inline const char *vn_binding_wgsl(vn_binding_kind kind) { return vn_binding_kind_facts_of(kind)->wgsl; }

typedef struct vn_binding {
    uint32_t group;
    uint32_t binding;
    vn_binding_kind kind;
    bool preserve;
    uint64_t min_size;
    uint64_t binding_size; /* the layout's minBindingSize: >= min_size */
    char *name;
} vn_binding;
/* An output whose contents start at zero: a read_write binding that is not preserved
 * in/out state. A dispatch clears it (bind.c, unless the caller keeps its outputs); a
 * borrowed dispatch allocates it (prerecorded.c). */
static inline bool vn_binding_cleared_output(const vn_binding *b) {
    return b->kind == VN_BINDING_STORAGE_READ_WRITE && !b->preserve;
}

typedef struct vn_bind_cache_entry {
    uint32_t group;
    uint32_t key_len;   /* number of bound views */
    uint64_t *key;      /* (identity, offset, padded size) per view: 3 * key_len words */
    WGPUBindGroup bind_group;
} vn_bind_cache_entry;

typedef struct vn_bind_cache {
    vn_mutex lock;
    vn_bind_cache_entry *entries;
    /* Beside entries[i], in arrays of their own so that the scans a lookup and an
     * eviction make read 8 bytes an entry: its key's hash and its last use (tick). */
    uint64_t *hashes;
    uint64_t *last_used;
    uint32_t count;
    uint32_t capacity;
    uint64_t tick;
    uint64_t hits, misses, evictions;
} vn_bind_cache;

struct vn_pipeline {
    vn_object obj; /* VN_KIND_PIPELINE */
    vn_device *device;
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout *layouts;
    uint32_t group_count;       /* highest group + 1; empty groups have layouts too */
    vn_binding *bindings;       /* sorted by (group, binding) */
    size_t binding_count;
    int32_t indirect_binding;
    uint64_t indirect_offset;
    uint32_t immediate_size;    /* bytes of var<immediate> data each dispatch takes, 0: none */
    char *label;                /* the entry point: wgpu's label, and what messages call it */
    char *record_what;          /* "recording a dispatch of pipeline `<label>`", made once */
    char *replay_what;          /* "replaying a recording of pipeline `<label>`", made once */
    vn_bind_cache cache;
    struct vn_pipeline *next, *prev; /* device->pipelines, under pipelines_lock */
};

void vn_pipeline_retain(vn_pipeline *pipeline);

vn_status vn_bind_cache_init(vn_bind_cache *cache, uint32_t capacity);
void vn_bind_cache_destroy(vn_bind_cache *cache);
/* A bind group binding `views` (resolved: one per entry of the group, in binding order;
 * each binds its offset and vn_view_extent), from the cache or created; the caller gets
 * its own reference. Must run inside vn_scope_begin/end. `group` keys the entry and
 * selects, from `bindings`, the binding numbers of its entries; the group is made with
 * `layout` on `device` and labelled "<owner> @group(<group>)". */
vn_status vn_bind_cache_fetch(vn_bind_cache *cache, WGPUDevice device, WGPUBindGroupLayout layout,
                              const vn_binding *bindings, size_t binding_count, const char *owner, uint32_t group,
                              const vn_view *views, uint32_t count, WGPUBindGroup *out);
/* vn_bind_cache_fetch after a vn_bind_cache_lookup that missed: the group is made
 * without looking again (inside vn_scope_begin/end); _get_missed: for `group` of
 * `pipeline`, in the pipeline's cache. */
vn_status vn_bind_cache_make(vn_bind_cache *cache, WGPUDevice device, WGPUBindGroupLayout layout,
                             const vn_binding *bindings, size_t binding_count, const char *owner, uint32_t group,
                             const vn_view *views, uint32_t count, WGPUBindGroup *out);
vn_status vn_bind_cache_get_missed(vn_pipeline *pipeline, uint32_t group, const vn_view *views, uint32_t count,
                                   WGPUBindGroup *out);
/* The cached group alone, no scope needed: true (and *out a reference) on a hit, false
 * on a miss (nothing made, nothing counted: a fetch after it counts the miss). Keys of
 * more than 16 views always miss here. */
bool vn_bind_cache_lookup(vn_bind_cache *cache, uint32_t group, const vn_view *views, uint32_t count,
                          WGPUBindGroup *out);
/* Drop every cached bind group that binds the buffer of `identity` (on its release). */
void vn_bind_cache_forget(vn_bind_cache *cache, uint64_t identity);
void vn_device_forget_buffer(vn_device *device, uint64_t identity);

/* ---- bound dispatch state (bind.c, bind_assign.c, bind_checks.c) -------------- */

/* How one buffer range is zeroed before a dispatch (fill.c): a fill dispatch inside the
 * compute pass, or, where pipeline is NULL, clear_buffer outside it. */
typedef struct vn_clear {
    vn_view view;                  /* what is zeroed: [offset, offset + pad4(size)) of the
                                    * buffer, borrowed (whoever holds the clear holds it) */
    WGPUComputePipeline pipeline;  /* the device's fill pipeline (borrowed), or NULL */
    WGPUBindGroup group;           /* the clear's own reference; NULL with pipeline NULL */
    uint32_t workgroups;           /* of the fill dispatch */
} vn_clear;

/* Handles resolved against a pipeline's bindings, validated, with bind groups: all
 * that encoding one dispatch needs. Holds a reference on everything it names. */
typedef struct vn_bound {
    vn_pipeline *pipeline;
    uint32_t group_count;
    WGPUBindGroup *groups;
    size_t buffer_count;
    vn_buffer **buffers;   /* one per binding, binding order */
    vn_view *views;        /* one per binding: its buffer (held by buffers), offset, size */
    size_t output_count;
    vn_view *outputs;      /* the read_write bindings' views, output order */
    uint32_t x, y, z;
    vn_buffer *indirect;   /* its own reference; NULL for a direct dispatch */
    uint64_t indirect_offset; /* from the start of the buffer */
    uint8_t *immediates;   /* the dispatch's own copy of its var<immediate> data, or NULL */
    uint32_t immediate_len;
    size_t clear_count;
    vn_clear *clears;      /* one per non-preserved output, output order */
} vn_bound;

/* The binding rule's one owner: args (vn_dispatch_args' rules) resolved against the
 * pipeline's bindings and checked, with bind groups; immediates copied. Failures name
 * the pipeline ("pipeline `main`: ..."). */
vn_status vn_bound_resolve(vn_pipeline *pipeline, const vn_dispatch_args *args, vn_bound *out);
/* vn_buffers_submittable over every buffer the bound dispatch uses (its bindings' and
 * its indirect buffer). Call under the life lock. */
vn_status vn_bound_submittable(const vn_bound *bound, const char *what);
/* VN_ERROR_BINDING when `forms` (vn_bind_form bits) names both forms. */
vn_status vn_check_forms(uint32_t forms);
/* The named form's matching: index_of[j] (binding_count entries) gets the index into
 * names of the name of binding j, or SIZE_MAX for a binding `takes` refuses. A name that
 * is no binding, one `takes` refuses (the message says it `not_taken`), one repeated,
 * or a binding `takes` accepts left unnamed is VN_ERROR_BINDING listing the bindings. */
vn_status vn_match_names(const vn_pipeline *p, const char *const *names, size_t count,
                         bool (*takes)(const vn_binding *), const char *not_taken, size_t *index_of);
/* "`x` (@group(0) @binding(0) var<storage, read>), ..." of the bindings `filter` accepts
 * (all when NULL), or "none". */
void vn_binding_list(const vn_pipeline *p, bool (*filter)(const vn_binding *), char *buf, size_t cap);

/* "input 2", "output 0", "params 0" or "bind['x']": where a binding's view came from. */
typedef struct vn_source {
    const vn_view *view;
    const char *role;  /* "input", "output", "params"; NULL for the named form */
    size_t index;      /* in its role's array, or in names[] */
} vn_source;
/* Where each binding's view comes from (bind_assign.c): src[i] for binding i, by the
 * positional rule or the named form of args (their forms checked, vn_check_forms). */
vn_status vn_bind_sources(const vn_pipeline *p, const vn_dispatch_args *args, vn_source *src);
/* Which view binds each binding, each checked, and the indirect counts' view, checked
 * with WebGPU's aliasing rule (bind_checks.c): views[i] gets binding i's view resolved,
 * *indirect the counts' view (buffer NULL: a direct dispatch) and *indirect_offset their
 * offset into it. Every buffer taken is retained as it is taken (a non-NULL buffer is
 * held, on failure too: the caller releases them), so a release on another thread cannot
 * free it while it is checked. src has binding_count entries, filled here. */
vn_status vn_resolve_views(vn_pipeline *p, const vn_dispatch_args *args, vn_source *src, vn_view *views,
                           vn_view *indirect, uint64_t *indirect_offset);

void vn_bound_release(vn_bound *bound);
/* Output `index` of a bound dispatch (`kind`: "dispatch", "recording", for the message),
 * or VN_ERROR_OUTPUT_INDEX naming the range. */
vn_status vn_bound_output(const vn_bound *bound, int64_t index, const char *kind, const vn_view **out);

/* ---- the built-in zero fill (fill.c) ------------------------------------------ */

/* Plan how the resolved `view` is zeroed: a fill dispatch where its range can be bound
 * as storage (STORAGE usage, the offset aligned for a storage binding, the size within
 * the binding limit) and is no larger than the device's fill limit, else clear_buffer.
 * Runs inside vn_scope_begin/end (it may make the fill pipelines and a bind group). */
vn_status vn_clear_plan(vn_device *device, const vn_view *view, vn_clear *out);
/* The same plan where it needs nothing made (no scope needed): true when *out is
 * planned (a clear_buffer, or a fill whose pipelines and bind group exist), false
 * (and *out empty) when vn_clear_plan must make something. */
bool vn_clear_plan_cached(vn_device *device, const vn_view *view, vn_clear *out);
/* vn_clear_plan after vn_clear_plan_cached said false: its bind group made without
 * looking it up again. */
vn_status vn_clear_plan_missed(vn_device *device, const vn_view *view, vn_clear *out);
void vn_clear_release(vn_clear *clear);

/* On a buffer's release: drop the fill bind group naming it. */
void vn_fill_forget(vn_device *device, uint64_t identity);
/* On the device's free: free its fill pipelines and bind groups (the device's hook,
 * VN_PART_FILL, registered when the fill is made). */
void vn_fill_release(vn_device *device);
/* The fill's WGSL (VN_INTROSPECT_FILL_WGSL, introspect.c). */
const char *vn_debug_fill_wgsl(void);

#endif /* VN_LAYER_RESOURCES_H */
