/* vn_pipeline.h - part of the public C API: shaders, pipelines, binding kinds, the WGSL
 * nesting depth. vyre_native.h includes it inside its cdef section, after the parts
 * before it, whose types it uses: include vyre_native.h, never this alone. It holds only
 * what that section may (scripts/ffi_build.py reads it in where it is included): no include
 * guard, no preprocessor line but a table's use. */

/* ---- shaders and pipelines (csrc/resources/pipeline.c) ------------------------------ */

/* The runtime checks naga compiles into a shader (wgpu's ShaderRuntimeChecks), as bits.
 * VN_CHECK_BOUNDS: an index, pointer or array length out of range reads zero or an
 * element in range and a write out of range lands nowhere outside the binding; without
 * it such an access is undefined behaviour (memory-unsafe: it may read or write other
 * memory of the GPU, or lose the device). VN_CHECK_LOOPS: every loop gets a counter the
 * driver's compiler cannot see through, so a loop that never ends cannot be assumed to
 * end and miscompiled (or hang the GPU); without it the caller promises every loop
 * terminates, and loops run faster (tinygrad's matmul: about 2x on the H200). Both are
 * on by default (VN_CHECKS_ALL, wgpu's default); ray-query, task and mesh checks stay on. */
typedef enum vn_runtime_checks {
    VN_CHECK_BOUNDS = 1,
    VN_CHECK_LOOPS = 2,
    VN_CHECKS_ALL = 3,
} vn_runtime_checks;

/* Compile WGSL with the runtime checks `checks` (vn_runtime_checks bits; other bits are
 * VN_ERROR_INVALID_ARGUMENT). */
vn_status vn_shader_create(vn_device *device, const char *wgsl, size_t wgsl_len, uint32_t checks, vn_shader **out);
void vn_shader_release(vn_shader *shader);

/* ---- WGSL nesting depth (csrc/resources/wgsl_depth.c) ------------------------------- */

/* How deep WGSL may nest before vn_shader_create refuses it (VN_ERROR_SHADER), unseen
 * by wgpu-native: naga, its compiler, recurses once per level and overflows its stack,
 * killing the process, at about 2,960 nested parentheses (2,680 nested `[`, 2,770
 * nested template lists), 6,200 `else if`s in one chain or 14,500 chained operators
 * (`-` `!` or `+`) on an 8 MiB stack: some 2.9 KiB of stack a bracket, 1.3 KiB an
 * `else if` and 0.6 KiB an operator, measured against wgpu-native 29.0.1.1. 255 levels
 * keep naga under about 0.75 MiB of stack, an eighth of a Linux main or Python
 * thread's 8 MiB. A level is each enclosing bracket (`(`, `[`, `{`, a template list as
 * WGSL's template-list discovery finds it), every VN_WGSL_OPERATORS_PER_LEVEL operators
 * of the enclosing expressions (the ratio of their stack costs; `[` counts as one too,
 * and a compound operator per character) and every VN_WGSL_ELSE_IFS_PER_LEVEL `else if`s
 * of an enclosing if-chain (naga nests each in the one before). */
enum {
    VN_WGSL_MAX_NESTING_DEPTH = 255,
    VN_WGSL_OPERATORS_PER_LEVEL = 6,
    VN_WGSL_ELSE_IFS_PER_LEVEL = 2
};
/* How long a source vn_shader_create compiles, and the stack it compiles it on. naga also
 * recurses once per link of a chain of declarations each naming the next (const,
 * override, alias, struct members, fn calls): 296 bytes of stack a link, every kind
 * alike (its dependency walk), against about 3 KiB a nesting level; on an 8 MiB stack
 * some 28,000 links killed the process, nesting or not. So vn_shader_create has
 * wgpu-native make the module on a thread of its own whose stack reserves
 * VN_WGSL_STACK_BASE_KIB (the 8 MiB a main thread has, which holds nesting at
 * VN_WGSL_MAX_NESTING_DEPTH, under 0.9 MiB, many times over) plus
 * VN_WGSL_STACK_BYTES_PER_BYTE for each byte of the source: a link is at least 10 bytes
 * (`alias a=b;`), so a chain needs at most 29.6 bytes of stack a byte (21 at the 14 bytes
 * a link takes past 3,400 names), and 64 leaves a margin of 2 (for other targets'
 * frames, and shapes not measured whose recursion costs as much a byte). A chain whose
 * last link nests deep needs the larger of the two, not their sum. The reservation is
 * address space, committed only as naga touches it; at the largest source,
 * VN_WGSL_MAX_SOURCE_BYTES (longer is VN_ERROR_SHADER at the first byte past it), it is
 * 264 MiB. Measured by bisection of the stack size in child processes against
 * wgpu-native 29.0.1.1 on x86-64 (lavapipe). */
enum {
    VN_WGSL_MAX_SOURCE_BYTES = 4 << 20,
    VN_WGSL_STACK_BASE_KIB = 8192,
    VN_WGSL_STACK_BYTES_PER_BYTE = 64
};
/* VN_OK when the `len` bytes of UTF-8 WGSL at `wgsl` nest at most `max_depth` levels;
 * else VN_ERROR_SHADER naming the line and column where the count passes it
 * (vn_last_error_position has them too). Linear in len, no recursion; the check
 * vn_shader_create makes with VN_WGSL_MAX_NESTING_DEPTH, here for any limit. */
vn_status vn_wgsl_check_nesting(const char *wgsl, size_t len, uint32_t max_depth);
/* VN_ERROR_SHADER, at the line and column of the first byte past the limit
 * (vn_last_error_position), for a source longer than VN_WGSL_MAX_SOURCE_BYTES; else
 * VN_OK. The other check vn_shader_create makes before compiling. */
vn_status vn_wgsl_check_size(const char *wgsl, size_t len);

typedef enum vn_binding_kind {
    VN_BINDING_STORAGE_READ = 0,
    VN_BINDING_STORAGE_READ_WRITE = 1,
    VN_BINDING_UNIFORM = 2,
    VN_BINDING_KIND_COUNT = 3 /* the kinds are 0 .. VN_BINDING_KIND_COUNT - 1 */
} vn_binding_kind;
/* A binding kind's name as the Python API spells it ("storage_read",
 * "storage_read_write", "uniform") and its WGSL declaration ("var<storage, read>",
 * "var<storage, read_write>", "var<uniform>"); NULL for a value that is no kind. From
 * the C layer's one table of binding-kind facts (binding_kinds.c), so no caller keeps a
 * copy. */
const char *vn_binding_kind_name(vn_binding_kind kind);
const char *vn_binding_kind_wgsl(vn_binding_kind kind);

/* One buffer binding, as reflected from the WGSL (vyre_native/reflect/). */
typedef struct vn_binding_desc {
    uint32_t group;
    uint32_t binding;
    vn_binding_kind kind;
    uint32_t preserve;   /* read_write binding kept as in/out state: never cleared */
    uint64_t min_size;   /* bytes the declared type needs */
    uint64_t binding_size; /* bytes wgpu requires (a runtime array counts one element) */
    const char *name;
} vn_binding_desc;

typedef struct vn_constant {
    const char *name;    /* WebGPU's key: an @id(n) override's is "n", any other's its name */
    double value;
} vn_constant;

typedef struct vn_pipeline_desc {
    const char *entry_point;
    const vn_binding_desc *bindings;  /* sorted by (group, binding) */
    size_t binding_count;
    const vn_constant *constants;
    size_t constant_count;
    int32_t indirect_binding;         /* index into bindings of the indirect-args buffer, -1: none */
    uint64_t indirect_offset;         /* byte offset of the three u32 counts */
    uint32_t cache_capacity;          /* bind-group LRU entries, 0: 256 */
    /* The entry point's @workgroup_size and bytes of var<workgroup> memory (WebGPU's
     * sum: each variable rounded up to 16), with the override values applied, checked
     * against the device's limits here: wgpu-native checks neither once overrides
     * decide them, and a GPU runs past its limits or loses the device. All three
     * sizes 0: not checked. */
    uint64_t workgroup_size[3];
    uint64_t workgroup_storage_size;
    /* Bytes of the entry point's var<immediate> data (its type's size rounded up to 4),
     * 0: none. Declared in the pipeline layout; needs the device's "immediates" feature
     * (else VN_ERROR_UNSUPPORTED) and at most its maxImmediateSize. Every dispatch of
     * the pipeline then takes exactly this many bytes of immediates. */
    uint32_t immediate_size;
} vn_pipeline_desc;

vn_status vn_pipeline_create(vn_device *device, vn_shader *shader, const vn_pipeline_desc *desc,
                             vn_pipeline **out);

typedef struct vn_cache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions;
    uint64_t entries;
    uint64_t capacity;
} vn_cache_stats;

vn_status vn_pipeline_cache_stats(const vn_pipeline *pipeline, vn_cache_stats *out);
void vn_pipeline_release(vn_pipeline *pipeline);
