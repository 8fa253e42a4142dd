/* vn_device.h - part of the public C API: devices: adapters, creation, limits, features,
 * loss, waits. vyre_native.h includes it inside its cdef section, after the parts before
 * it, whose types it uses: include vyre_native.h, never this alone. It holds only what
 * that section may (scripts/ffi_build.py reads it in where it is included): no include
 * guard, no preprocessor line but a table's use. */

/* ---- device (csrc/device/device.c) ----------------------------------------------- */

typedef enum vn_power_preference {
    VN_POWER_DEFAULT = 0,
    VN_POWER_LOW = 1,
    VN_POWER_HIGH = 2
} vn_power_preference;

typedef struct vn_device_info {
    char name[256];
    char vendor[256];
    char backend[32];
    char adapter_type[32];
    char driver[256];
    uint32_t vendor_id;
    uint32_t device_id;
    /* What wgpu-native does not say, from the Vulkan loader (csrc/device/adapter_identity.c);
     * "" where unknown: the deviceUUID as 8-4-4-4-12 hex (NVIDIA's is the GPU's UUID,
     * "GPU-<uuid>" in nvidia-smi), and the PCI address "dddd:bb:dd.f". */
    char uuid[40];
    char pci_bus[16];
    /* The adapter's features, space-separated, in WebGPU's spelling ("shader-f16",
     * "timestamp-query") and wgpu-py's for wgpu-native's own ("subgroup", "shader-f64"). */
    char features[2048];
} vn_device_info;

/* The device's limits that matter for compute (the adapter's own limits). */
typedef struct vn_limits {
    uint64_t max_buffer_size;
    uint64_t max_storage_buffer_binding_size;
    uint64_t max_uniform_buffer_binding_size;
    uint32_t max_bind_groups;
    uint32_t max_bindings_per_bind_group;
    uint32_t max_storage_buffers_per_shader_stage;
    uint32_t max_uniform_buffers_per_shader_stage;
    uint32_t min_storage_buffer_offset_alignment;
    uint32_t min_uniform_buffer_offset_alignment;
    uint32_t max_compute_workgroup_storage_size;
    uint32_t max_compute_invocations_per_workgroup;
    uint32_t max_compute_workgroup_size_x;
    uint32_t max_compute_workgroup_size_y;
    uint32_t max_compute_workgroup_size_z;
    uint32_t max_compute_workgroups_per_dimension;
    uint32_t max_immediate_size;    /* bytes of var<immediate> data; 0 without the feature */
} vn_limits;

/* backend: NULL for the platform's primary backends (Vulkan, Metal, DX12; never wgpu's
 * OpenGL fallback unless named), or one of "vulkan", "metal", "dx12" ("d3d12"), "gl"
 * ("opengl"), any case; anything else is VN_ERROR_INVALID_ARGUMENT naming the choices.
 * adapter_index < 0: the default adapter of those backends for power_preference;
 * otherwise the adapter at that index of vn_enumerate_adapters(backend) (power_preference
 * ignored). */
vn_status vn_device_create(vn_power_preference power_preference, int32_t adapter_index, const char *backend,
                           const char *required_features, vn_device **out);
/* The device's features as space-separated names (see vn_device_info.features). Every
 * device requests the compute features its adapter offers (shader-f16, subgroups,
 * subgroup, subgroup-barrier, shader-f64, shader-int64, shader-float32-atomic, the int64
 * atomics, timestamp-query, immediates, pipeline-cache) plus required_features (the same
 * names, space-separated; NULL for none): an unknown name is VN_ERROR_INVALID_ARGUMENT, one
 * the adapter lacks VN_ERROR_UNSUPPORTED naming every missing one. */
vn_status vn_device_get_features(const vn_device *device, char *out, size_t capacity);
/* Describe up to `capacity` adapters of `backend` (as for vn_device_create) into out;
 * *count gets how many exist. */
vn_status vn_enumerate_adapters(const char *backend, vn_device_info *out, size_t capacity, size_t *count);
vn_status vn_device_get_info(const vn_device *device, vn_device_info *out);
/* The adapter to use among `adapters` (count of them, as vn_enumerate_adapters lists
 * them) into *index; -1 for the default adapter. `wanted` (not NULL): the one whose uuid
 * (with or without "GPU-", or a unique prefix) or PCI address ("0000:3b:00.0" or
 * "3b:00.0") it is. NULL: the first GPU that CUDA_VISIBLE_DEVICES (NVIDIA: indices in
 * PCI order, or GPU-<uuid>), ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (AMD, indices;
 * HIP's within ROCR's) or ZE_AFFINITY_MASK (Intel, indices) names; where those that are
 * set name none, but hide some of their vendor's adapters, the first adapter not
 * hidden; -1 where nothing is named or hidden. An entry that matches no adapter, and
 * variables that leave none, are VN_ERROR_INVALID_ARGUMENT naming the variable, its
 * value and the adapters seen. */
vn_status vn_adapter_choose(const vn_device_info *adapters, size_t count, const char *wanted, int32_t *index);
/* 1 when any variable vn_adapter_choose reads is set, else 0. */
int vn_assigned_by_environment(void);
vn_status vn_device_get_limits(const vn_device *device, vn_limits *out);
/* 1 when the device can time GPU work (timestamp queries), else 0. */
int vn_device_has_timestamps(const vn_device *device);
/* Wait (GIL released by cffi) until all submitted work has finished: VN_OK, or
 * VN_PENDING after one time slice (call again). */
vn_status vn_device_wait_idle(vn_device *device);
/* Destroy the GPU device now (as a lost device): every later call on it, or on
 * anything made from it, fails with VN_ERROR_DEVICE_LOST. */
vn_status vn_device_destroy(vn_device *device);
/* Mark closed: later calls on it and on everything made from it fail with
 * VN_ERROR_RELEASED. Does not drop the caller's reference (vn_device_release does),
 * so a thread still inside a call on the device never sees it freed. */
void vn_device_close(vn_device *device);
/* Drop the caller's reference. Never waits: the last reference to a device whose
 * submitted work is still running parks it, and the next vn_device_create (or
 * VN_INTROSPECT_LIVE_COUNTS) frees it once that work is done. */
void vn_device_release(vn_device *device);
