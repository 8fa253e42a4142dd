/* Adapter and device features by name: WebGPU's spelling for the standard ones,
 * wgpu-py's for wgpu-native's own (so a name means the same thing in both
 * packages). Names are what users see (the CLI's `info`, and in time Device.features);
 * wgpu-native's numbers never leave C. */
#include <stdio.h>
#include <string.h>
#include "internal.h"

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

void vn_describe_features(WGPUAdapter adapter, char *out, size_t capacity) {
    if (capacity == 0) return;
    out[0] = '\0';
    WGPUSupportedFeatures features = WGPU_SUPPORTED_FEATURES_INIT;
    wgpu.AdapterGetFeatures(adapter, &features);
    size_t used = 0;
    for (size_t i = 0; i < features.featureCount; i++) {
        char unknown[24];
        const char *name = vn_feature_name((uint32_t)features.features[i]);
        if (name == NULL) {
            /* A feature newer than this table: listed by number rather than dropped. */
            snprintf(unknown, sizeof unknown, "0x%08x", (unsigned)features.features[i]);
            name = unknown;
        }
        size_t len = strlen(name);
        if (used + len + 2 > capacity) break; /* the field holds every name known today */
        if (used) out[used++] = ' ';
        memcpy(out + used, name, len + 1);
        used += len;
    }
    wgpu.SupportedFeaturesFreeMembers(features);
}
