/* Adapter and device features by name: WebGPU's spelling for the standard ones,
 * wgpu-py's for wgpu-native's own (so a name means the same thing in both
 * packages). Names are what users see (the CLI's `info`, Device.features,
 * Device(required_features=...)); wgpu-native's numbers never leave C. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "layer_device.h"

static const struct {
    uint32_t id;
    const char *name;
} feature_names[] = {
    {WGPUFeatureName_CoreFeaturesAndLimits, "core-features-and-limits"},
    {WGPUFeatureName_DepthClipControl, "depth-clip-control"},
    {WGPUFeatureName_Depth32FloatStencil8, "depth32float-stencil8"},
    {WGPUFeatureName_TextureCompressionBC, "texture-compression-bc"},
    {WGPUFeatureName_TextureCompressionBCSliced3D, "texture-compression-bc-sliced-3d"},
    {WGPUFeatureName_TextureCompressionETC2, "texture-compression-etc2"},
    {WGPUFeatureName_TextureCompressionASTC, "texture-compression-astc"},
    {WGPUFeatureName_TextureCompressionASTCSliced3D, "texture-compression-astc-sliced-3d"},
    {WGPUFeatureName_TimestampQuery, "timestamp-query"},
    {WGPUFeatureName_IndirectFirstInstance, "indirect-first-instance"},
    {WGPUFeatureName_ShaderF16, "shader-f16"},
    {WGPUFeatureName_RG11B10UfloatRenderable, "rg11b10ufloat-renderable"},
    {WGPUFeatureName_BGRA8UnormStorage, "bgra8unorm-storage"},
    {WGPUFeatureName_Float32Filterable, "float32-filterable"},
    {WGPUFeatureName_Float32Blendable, "float32-blendable"},
    {WGPUFeatureName_ClipDistances, "clip-distances"},
    {WGPUFeatureName_DualSourceBlending, "dual-source-blending"},
    {WGPUFeatureName_Subgroups, "subgroups"},
    {WGPUFeatureName_TextureFormatsTier1, "texture-formats-tier1"},
    {WGPUFeatureName_TextureFormatsTier2, "texture-formats-tier2"},
    {WGPUFeatureName_PrimitiveIndex, "primitive-index"},
    {WGPUFeatureName_TextureComponentSwizzle, "texture-component-swizzle"},
    {WGPUNativeFeature_Immediates, "immediates"},
    {WGPUNativeFeature_TextureAdapterSpecificFormatFeatures, "texture-adapter-specific-format-features"},
    {WGPUNativeFeature_MultiDrawIndirectCount, "multi-draw-indirect-count"},
    {WGPUNativeFeature_VertexWritableStorage, "vertex-writable-storage"},
    {WGPUNativeFeature_TextureBindingArray, "texture-binding-array"},
    {WGPUNativeFeature_SampledTextureAndStorageBufferArrayNonUniformIndexing,
     "sampled-texture-and-storage-buffer-array-non-uniform-indexing"},
    {WGPUNativeFeature_PipelineStatisticsQuery, "pipeline-statistics-query"},
    {WGPUNativeFeature_StorageResourceBindingArray, "storage-resource-binding-array"},
    {WGPUNativeFeature_PartiallyBoundBindingArray, "partially-bound-binding-array"},
    {WGPUNativeFeature_TextureFormat16bitNorm, "texture-format16bit-norm"},
    {WGPUNativeFeature_TextureCompressionAstcHdr, "texture-compression-astc-hdr"},
    {WGPUNativeFeature_MappablePrimaryBuffers, "mappable-primary-buffers"},
    {WGPUNativeFeature_BufferBindingArray, "buffer-binding-array"},
    {WGPUNativeFeature_StorageTextureArrayNonUniformIndexing, "storage-texture-array-non-uniform-indexing"},
    {WGPUNativeFeature_AddressModeClampToZero, "address-mode-clamp-to-zero"},
    {WGPUNativeFeature_AddressModeClampToBorder, "address-mode-clamp-to-border"},
    {WGPUNativeFeature_PolygonModeLine, "polygon-mode-line"},
    {WGPUNativeFeature_PolygonModePoint, "polygon-mode-point"},
    {WGPUNativeFeature_ConservativeRasterization, "conservative-rasterization"},
    {WGPUNativeFeature_ClearTexture, "clear-texture"},
    {WGPUNativeFeature_Multiview, "multiview"},
    {WGPUNativeFeature_VertexAttribute64bit, "vertex-attribute64bit"},
    {WGPUNativeFeature_TextureFormatNv12, "texture-format-nv12"},
    {WGPUNativeFeature_RayQuery, "ray-query"},
    {WGPUNativeFeature_ShaderF64, "shader-f64"},
    {WGPUNativeFeature_ShaderI16, "shader-i16"},
    {WGPUNativeFeature_ShaderEarlyDepthTest, "shader-early-depth-test"},
    {WGPUNativeFeature_Subgroup, "subgroup"},
    {WGPUNativeFeature_SubgroupVertex, "subgroup-vertex"},
    {WGPUNativeFeature_SubgroupBarrier, "subgroup-barrier"},
    {WGPUNativeFeature_TimestampQueryInsideEncoders, "timestamp-query-inside-encoders"},
    {WGPUNativeFeature_TimestampQueryInsidePasses, "timestamp-query-inside-passes"},
    {WGPUNativeFeature_ShaderInt64, "shader-int64"},
    {WGPUNativeFeature_ShaderFloat32Atomic, "shader-float32-atomic"},
    {WGPUNativeFeature_TextureAtomic, "texture-atomic"},
    {WGPUNativeFeature_TextureFormatP010, "texture-format-p010"},
    {WGPUNativeFeature_PipelineCache, "pipeline-cache"},
    {WGPUNativeFeature_ShaderInt64AtomicMinMax, "shader-int64-atomic-min-max"},
    {WGPUNativeFeature_ShaderInt64AtomicAllOps, "shader-int64-atomic-all-ops"},
    {WGPUNativeFeature_TextureInt64Atomic, "texture-int64-atomic"},
    {WGPUNativeFeature_ShaderBarycentrics, "shader-barycentrics"},
    {WGPUNativeFeature_SelectiveMultiview, "selective-multiview"},
    {WGPUNativeFeature_MultisampleArray, "multisample-array"},
    {WGPUNativeFeature_CooperativeMatrix, "cooperative-matrix"},
    {WGPUNativeFeature_ShaderPerVertex, "shader-per-vertex"},
    {WGPUNativeFeature_ShaderDrawIndex, "shader-draw-index"},
    {WGPUNativeFeature_AccelerationStructureBindingArray, "acceleration-structure-binding-array"},
    {WGPUNativeFeature_MemoryDecorationCoherent, "memory-decoration-coherent"},
    {WGPUNativeFeature_MemoryDecorationVolatile, "memory-decoration-volatile"},
};

const char *vn_feature_name(uint32_t id) {
    for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++)
        if (feature_names[i].id == id) return feature_names[i].name;
    return NULL;
}

/* Space-separated names of a feature list into out (unknown ids as hex, so a feature
 * newer than this table is listed by number rather than dropped). */
static void names_of(const WGPUSupportedFeatures *features, char *out, size_t capacity) {
    if (capacity == 0) return;
    out[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < features->featureCount; i++) {
        char unknown[24];
        const char *name = vn_feature_name((uint32_t)features->features[i]);
        if (name == NULL) {
            snprintf(unknown, sizeof unknown, "0x%08x", (unsigned)features->features[i]);
            name = unknown;
        }
        size_t len = strlen(name);
        if (used + len + 2 > capacity) break; /* the field holds every name known today */
        if (used) out[used++] = ' ';
        memcpy(out + used, name, len + 1);
        used += len;
    }
}

void vn_describe_features(WGPUAdapter adapter, char *out, size_t capacity) {
    WGPUSupportedFeatures features = WGPU_SUPPORTED_FEATURES_INIT;
    wgpu.AdapterGetFeatures(adapter, &features);
    names_of(&features, out, capacity);
    wgpu.SupportedFeaturesFreeMembers(features);
}

void vn_describe_device_features(WGPUDevice device, char *out, size_t capacity) {
    WGPUSupportedFeatures features = WGPU_SUPPORTED_FEATURES_INIT;
    wgpu.DeviceGetFeatures(device, &features);
    names_of(&features, out, capacity);
    wgpu.SupportedFeaturesFreeMembers(features);
}

/* What compute code uses: every device requests these where its adapter offers them,
 * so `enable f16;`, subgroup operations, 64-bit types, float atomics, immediates,
 * timestamps and the pipeline cache work without the user asking. */
static const uint32_t compute_features[] = {
    WGPUFeatureName_TimestampQuery,      WGPUFeatureName_ShaderF16,
    WGPUFeatureName_Subgroups,           WGPUNativeFeature_Subgroup,
    WGPUNativeFeature_SubgroupBarrier,   WGPUNativeFeature_ShaderF64,
    WGPUNativeFeature_ShaderInt64,       WGPUNativeFeature_ShaderFloat32Atomic,
    WGPUNativeFeature_ShaderInt64AtomicMinMax, WGPUNativeFeature_ShaderInt64AtomicAllOps,
    WGPUNativeFeature_Immediates,        WGPUNativeFeature_PipelineCache,
};

static bool listed(const WGPUFeatureName *list, size_t count, uint32_t id) {
    for (size_t i = 0; i < count; i++)
        if ((uint32_t)list[i] == id) return true;
    return false;
}

vn_status vn_features_choose(WGPUAdapter adapter, const char *adapter_name, const char *required,
                             WGPUFeatureName *out, size_t capacity, size_t *count) {
    *count = 0;
    char missing[512] = "";
    size_t missing_len = 0;
    for (const char *p = required ? required : ""; *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, " ");
        if (len == 0) break;
        uint32_t id = 0;
        bool known = false;
        for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++)
            if (strlen(feature_names[i].name) == len && memcmp(feature_names[i].name, p, len) == 0) {
                id = feature_names[i].id;
                known = true;
                break;
            }
        if (!known)
            return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                           "required feature '%.*s' is not a WebGPU or wgpu-native feature name. Fix: use the "
                           "names `python -m vyre_native info` lists for the adapter, e.g. \"shader-f16\" or "
                           "\"subgroup\".", (int)(len > INT_MAX ? INT_MAX : len), p);
        if (!wgpu.AdapterHasFeature(adapter, (WGPUFeatureName)id)) {
            if (missing_len + len + 3 < sizeof missing)
                missing_len += (size_t)snprintf(missing + missing_len, sizeof missing - missing_len, "%s%.*s",
                                                missing_len ? ", " : "", (int)len, p);
        } else if (!listed(out, *count, id) && *count < capacity) {
            out[(*count)++] = (WGPUFeatureName)id;
        }
        p += len;
    }
    if (missing_len)
        return vn_fail(VN_ERROR_UNSUPPORTED,
                       "adapter '%s' does not offer the required feature(s) %s. Fix: pick an adapter that "
                       "does (`python -m vyre_native info` lists each adapter's features; Device(adapter=i)), or "
                       "drop them from required_features and take the path that works without them.",
                       adapter_name, missing);
    for (size_t i = 0; i < sizeof compute_features / sizeof compute_features[0]; i++)
        if (wgpu.AdapterHasFeature(adapter, (WGPUFeatureName)compute_features[i]) &&
            !listed(out, *count, compute_features[i]) && *count < capacity)
            out[(*count)++] = (WGPUFeatureName)compute_features[i];
    return VN_OK;
}
