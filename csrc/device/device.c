/* device.c - the device: its creation (instance, adapter, features, limits, the device
 * request), its state checks and loss, its getters, a WGSL module on it (vn_wgsl_module,
 * for the files above), and its free with what the files above attached to it. Instances, adapters, scopes, waits, parking and the life lock
 * have files of their own (layer_device.h names them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_device.h"

WGPUShaderModule vn_wgsl_module(vn_device *device, WGPUStringView code, const char *label, uint32_t checks) {
    WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
    source.code = code;
    WGPUShaderModuleDescriptor desc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
    desc.nextInChain = &source.chain;
    desc.label = vn_sv(label);
    /* All checks: wgpu's own default path, as every module had before checks were a choice. */
    if ((checks & VN_CHECKS_ALL) == VN_CHECKS_ALL) return wgpu.DeviceCreateShaderModule(device->device, &desc);
    WGPUShaderRuntimeChecks wanted = WGPUShaderRuntimeChecks_RayQueryInitializationTracking |
                                     WGPUShaderRuntimeChecks_TaskShaderDispatchTracking |
                                     WGPUShaderRuntimeChecks_MeshShaderPrimitiveIndicesClamp;
    if (checks & VN_CHECK_BOUNDS) wanted |= WGPUShaderRuntimeChecks_BoundsChecks;
    if (checks & VN_CHECK_LOOPS) wanted |= WGPUShaderRuntimeChecks_ForceLoopBounding;
    return wgpu.DeviceCreateShaderModuleTrusted(device->device, &desc, wanted);
}

void vn_device_init_locks(vn_device *dev) {
    vn_object_init(&dev->obj, VN_KIND_DEVICE, vn_device_free_or_park);
    atomic_init(&dev->staging_pinned, 0);
    atomic_init(&dev->pending_write_bytes, 0);
    atomic_init(&dev->abandoned_count, 0);
    for (int part = 0; part < VN_PART_COUNT; part++) atomic_init(&dev->hooks[part], NULL);
    vn_mutex_init(&dev->scope_lock);
    vn_rwlock_init(&dev->life_lock);
    vn_mutex_init(&dev->pipelines_lock);
    vn_lock_rank_set(&dev->scope_lock, VN_LOCK_SCOPE, "vn_device.scope_lock");
    vn_lock_rank_set(&dev->life_lock, VN_LOCK_LIFE, "vn_device.life_lock");
    vn_lock_rank_set(&dev->pipelines_lock, VN_LOCK_PIPELINES, "vn_device.pipelines_lock");
    vn_live_add(VN_LIVE_DEVICE, 1);
}

static void on_device_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message,
                           void *userdata1, void *userdata2) {
    (void)device;
    (void)userdata2;
    vn_device *dev = userdata1;
    /* CallbackCancelled fires when we release the device ourselves: not a loss. */
    if (dev == NULL || reason == WGPUDeviceLostReason_CallbackCancelled) return;
    char text[512];
    vn_string_view_copy(message, text, sizeof text);
    vn_device_note_lost(dev, text[0] ? text : "lost by the driver");
}

void vn_device_retain(vn_device *device) { vn_retain(&device->obj); }

void vn_device_unref(vn_device *device) {
    if (device != NULL) vn_release(&device->obj);
}

static vn_status finish_device(vn_device *dev, const char *required_features, WGPUAdapter *listed, size_t count,
                               size_t index, vn_device **out);

static const char *power_name(vn_power_preference p) {
    return p == VN_POWER_LOW ? "low-power" : p == VN_POWER_HIGH ? "high-performance" : "default";
}

struct device_request {
    atomic_int state;
    WGPURequestDeviceStatus status;
    WGPUDevice device;
    char message[512];
};

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                      void *userdata1, void *userdata2) {
    (void)userdata2;
    struct device_request *req = userdata1;
    req->status = status;
    req->device = device;
    vn_string_view_copy(message, req->message, sizeof req->message);
    if (vn_request_complete(&req->state)) free(req);
}

/* The adapter refused a device for another reason. A GPU driver bounds the devices
 * (contexts) one process may hold, so the message counts this process's: past that
 * bound the refusal is the count's, not the driver's version. */
static vn_status refused(const char *adapter, const char *why) {
    long long alive = (long long)vn_live_count(VN_LIVE_DEVICE) - 1; /* the one refused counts until freed */
    return vn_fail(VN_ERROR_INTERNAL,
                   "adapter '%s' refused to create a device: %s. This process holds %lld other vn.Device%s now "
                   "(wgpu-py's devices not counted), and GPU drivers bound how many devices one process may hold. "
                   "Fix: %s",
                   adapter, why[0] ? why : "no reason given", alive, alive == 1 ? "" : "s",
                   alive > 0 ? "close the devices this process no longer uses (Device.close(), or a with block) "
                               "or share one Device among the code that uses the GPU; if few are alive, update "
                               "the GPU driver."
                             : "update the GPU driver.");
}

static vn_status device_create(vn_power_preference power_preference, int32_t adapter_index, const char *backend,
                               const char *required_features, vn_device **out) {
    vn_status st = vn_require_library();
    if (st != VN_OK) return st;
    if (out == NULL) return vn_null_out("vn_device_create", "out");
    *out = NULL;
    vn_devices_reap(0.0); /* free devices released while busy that have finished since */
    if (power_preference != VN_POWER_DEFAULT && power_preference != VN_POWER_LOW && power_preference != VN_POWER_HIGH)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "power preference %d is not one of 0 (default), 1 (low-power), "
                       "2 (high-performance). Fix: pass one of those.", (int)power_preference);
    WGPUInstanceBackend backends;
    if ((st = vn_parse_backend(backend, &backends)) != VN_OK) return st;
    if ((st = vn_fork_child_may_start_drivers()) != VN_OK) return st;
    /* For the messages: the backend asked for, or what the default means. */
    const char *wanted = backend ? backend : "primary: Vulkan, Metal or DX12";

    vn_device *dev = calloc(1, sizeof *dev);
    if (dev == NULL) return vn_fail_no_memory("a device record", sizeof *dev);
    vn_device_init_locks(dev);

    /* An instance of its own, released with the device: wgpu-native 29 frees a command
     * buffer finished but never submitted only when its instance goes, and that buffer
     * holds its wgpu device alive (tests/test_device_lifecycle.py). Where the driver
     * offers no adapter to a new instance, the reserve's (above). */
    if ((st = vn_new_instance(backends, &dev->instance)) != VN_OK) {
        vn_device_unref(dev);
        return st;
    }

    if (adapter_index >= 0) {
        WGPUAdapter *adapters;
        size_t n;
        vn_status lst = vn_list_adapters(dev->instance, &adapters, &n);
        if (lst == VN_OK && vn_switch_to_reserve(&dev->instance, backends, n > 0))
            lst = vn_list_adapters(dev->instance, &adapters, &n); /* none were listed: nothing to release */
        if (lst != VN_OK || (size_t)adapter_index >= n) {
            if (lst == VN_OK) vn_release_adapters(adapters, n, NULL);
            vn_device_unref(dev);
            if (lst != VN_OK) return lst;
            return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                           "adapter index %d is out of range: %zu adapter(s) found (backend %.64s). Fix: pass "
                           "an index from vn.enumerate_adapters() with the same backend, or leave adapter unset "
                           "for the default.", (int)adapter_index, n, wanted);
        }
        WGPUAdapter chosen = dev->adapter = adapters[adapter_index];
        st = finish_device(dev, required_features, adapters, n, (size_t)adapter_index, out); /* dev is gone on failure */
        vn_release_adapters(adapters, n, chosen); /* the others, once they told the chosen one's identity */
        return st;
    }
    WGPURequestAdapterOptions opts = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
    opts.powerPreference = power_preference == VN_POWER_LOW    ? WGPUPowerPreference_LowPower
                           : power_preference == VN_POWER_HIGH ? WGPUPowerPreference_HighPerformance
                                                               : WGPUPowerPreference_Undefined;
    struct vn_adapter_request areq;
    st = vn_request_adapter(dev->instance, &opts, &areq);
    if (st == VN_OK && vn_switch_to_reserve(&dev->instance, backends, areq.adapter != NULL))
        st = vn_request_adapter(dev->instance, &opts, &areq);
    if (st != VN_OK) {
        vn_device_unref(dev);
        return st == VN_ERROR_TIMEOUT ? vn_fail(st, "requesting an adapter (power preference %s) did not finish in "
                                                "60 s. Fix: check the Vulkan driver installation.",
                                                power_name(power_preference))
                                      : st;
    }
    if (areq.adapter == NULL) {
        vn_device_unref(dev);
        size_t len = strlen(areq.message);
        while (len > 0 && (areq.message[len - 1] == '\n' || areq.message[len - 1] == ' ')) areq.message[--len] = '\0';
        if (backend != NULL)
            return vn_fail(VN_ERROR_LIBRARY,
                           "no GPU adapter found on backend '%.64s' (power preference %s): %s. Fix: this machine "
                           "offers no adapter there; see which backends have one with vn.enumerate_adapters("
                           "backend=...) for \"vulkan\", \"metal\", \"dx12\" and \"gl\", or leave backend unset.",
                           backend, power_name(power_preference), areq.message[0] ? areq.message : "none offered");
        return vn_fail(VN_ERROR_LIBRARY,
                       "no GPU adapter found (backend %.64s, power preference %s): %s. Fix: install a Vulkan "
                       "driver (on a machine without a GPU, Mesa's CPU driver lavapipe: on Debian, apt-get "
                       "install mesa-vulkan-drivers), or pass backend=\"gl\" to use wgpu's OpenGL adapter.",
                       wanted, power_name(power_preference), areq.message[0] ? areq.message : "none offered");
    }
    dev->adapter = areq.adapter;
    return finish_device(dev, required_features, NULL, 0, 0, out);
}

/* With dev->adapter chosen (listed[index] of `count`, when chosen from a list: its
 * identity is told among them): read its info and limits and request the device. On
 * failure dev is released. */
static vn_status finish_device(vn_device *dev, const char *required_features, WGPUAdapter *listed, size_t count,
                               size_t index, vn_device **out) {
    vn_describe_adapter(dev->adapter, &dev->info);
    if (listed != NULL) vn_identify_listed(listed, count, index, &dev->info);

    /* The adapter's own limits, not WebGPU's defaults: a 1 GiB storage buffer must
     * bind wherever the hardware allows it. */
    WGPULimits limits = WGPU_LIMITS_INIT;
    if (wgpu.AdapterGetLimits(dev->adapter, &limits) != WGPUStatus_Success) {
        vn_status st = vn_fail(VN_ERROR_INTERNAL, "could not read the limits of adapter '%s'. Fix: update the GPU "
                               "driver.", dev->info.name);
        vn_device_unref(dev);
        return st;
    }
    limits.nextInChain = NULL;

    WGPUDeviceDescriptor ddesc = WGPU_DEVICE_DESCRIPTOR_INIT;
    ddesc.label = vn_sv("vyre_native");
    ddesc.requiredLimits = &limits;
    /* The compute features the adapter offers (timestamps among them: replays can then
     * report GPU time), and what the caller requires. */
    WGPUFeatureName features[VN_MAX_DEVICE_FEATURES];
    size_t feature_count;
    vn_status st = vn_features_choose(dev->adapter, dev->info.name, required_features, features,
                                      VN_MAX_DEVICE_FEATURES, &feature_count);
    if (st != VN_OK) {
        vn_device_unref(dev);
        return st;
    }
    ddesc.requiredFeatureCount = feature_count;
    ddesc.requiredFeatures = features;
    for (size_t i = 0; i < feature_count; i++)
        if (features[i] == WGPUFeatureName_TimestampQuery) dev->timestamps = true;
    ddesc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
    ddesc.deviceLostCallbackInfo.callback = on_device_lost;
    ddesc.deviceLostCallbackInfo.userdata1 = dev;
    vn_scope_catch_uncaptured(&ddesc, dev);
    struct device_request *pending = calloc(1, sizeof *pending);
    if (pending == NULL) {
        vn_device_unref(dev);
        return vn_fail_no_memory("a device request", sizeof *pending);
    }
    WGPURequestDeviceCallbackInfo dcb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
    dcb.mode = WGPUCallbackMode_AllowProcessEvents;
    dcb.callback = on_device;
    dcb.userdata1 = pending;
    wgpu.AdapterRequestDevice(dev->adapter, &ddesc, dcb);
    if (!vn_request_wait(dev->instance, NULL, &pending->state, 60.0)) {
        /* The message names the adapter: written before dev goes. */
        vn_status st = vn_fail(VN_ERROR_TIMEOUT, "requesting a device from adapter '%s' did not finish in 60 s. "
                               "Fix: check the GPU driver.", dev->info.name);
        vn_device_unref(dev);
        return st;
    }
    struct device_request dreq;
    memcpy(&dreq, pending, sizeof dreq); /* the callback is done with it */
    free(pending);
    if (dreq.status != WGPURequestDeviceStatus_Success || dreq.device == NULL) {
        char refusal[sizeof dev->info.name + 48];
        snprintf(refusal, sizeof refusal, "adapter '%s' refused to create a device", dev->info.name);
        vn_status st = atomic_load(&vn_fork_generation) > 0 ? vn_refused_in_fork_child(refusal, dreq.message)
                                                            : refused(dev->info.name, dreq.message);
        vn_device_unref(dev);
        return st;
    }
    dev->device = dreq.device;
    dev->queue = wgpu.DeviceGetQueue(dev->device);
    dev->serial_submits = strcmp(dev->info.adapter_type, "CPU") == 0;
    dev->timestamp_period = dev->timestamps ? (double)wgpu.QueueGetTimestampPeriod(dev->queue) : 0.0;
    dev->limits = WGPU_LIMITS_INIT;
    if (wgpu.DeviceGetLimits(dev->device, &dev->limits) != WGPUStatus_Success) dev->limits = limits;
    dev->limits.nextInChain = NULL;
    *out = dev;
    return VN_OK;
}

vn_status vn_device_create(vn_power_preference power_preference, int32_t adapter_index, const char *backend,
                           const char *required_features, vn_device **out) {
    vn_fork_guard_arm(); /* before the driver starts: a fork waits for this call */
    vn_call_guard_enter();
    vn_status st = vn_publish(device_create(power_preference, adapter_index, backend, required_features, out), out);
    vn_call_guard_leave();
    vn_exit_guard_arm(); /* after the driver's own exit handlers, registered as it loaded */
    return st;
}

static vn_status device_get_info(const vn_device *device, vn_device_info *out) {
    vn_status st = vn_device_check(device, "device.info");
    if (st != VN_OK) return st;
    *out = device->info;
    return VN_OK;
}

vn_status vn_device_get_info(const vn_device *device, vn_device_info *out) {
    VN_CALL1(device_get_info(device, out), device, VN_KIND_DEVICE);
}

static vn_status device_get_limits(const vn_device *device, vn_limits *out) {
    vn_status st = vn_device_check(device, "device.limits");
    if (st != VN_OK) return st;
    const WGPULimits *l = &device->limits;
    out->max_buffer_size = l->maxBufferSize;
    out->max_storage_buffer_binding_size = l->maxStorageBufferBindingSize;
    out->max_uniform_buffer_binding_size = l->maxUniformBufferBindingSize;
    out->max_bind_groups = l->maxBindGroups;
    out->max_bindings_per_bind_group = l->maxBindingsPerBindGroup;
    out->max_storage_buffers_per_shader_stage = l->maxStorageBuffersPerShaderStage;
    out->max_uniform_buffers_per_shader_stage = l->maxUniformBuffersPerShaderStage;
    out->min_storage_buffer_offset_alignment = l->minStorageBufferOffsetAlignment;
    out->min_uniform_buffer_offset_alignment = l->minUniformBufferOffsetAlignment;
    out->max_compute_workgroup_storage_size = l->maxComputeWorkgroupStorageSize;
    out->max_compute_invocations_per_workgroup = l->maxComputeInvocationsPerWorkgroup;
    out->max_compute_workgroup_size_x = l->maxComputeWorkgroupSizeX;
    out->max_compute_workgroup_size_y = l->maxComputeWorkgroupSizeY;
    out->max_compute_workgroup_size_z = l->maxComputeWorkgroupSizeZ;
    out->max_compute_workgroups_per_dimension = l->maxComputeWorkgroupsPerDimension;
    out->max_immediate_size = l->maxImmediateSize == WGPU_LIMIT_U32_UNDEFINED ? 0 : l->maxImmediateSize;
    return VN_OK;
}

vn_status vn_device_get_limits(const vn_device *device, vn_limits *out) {
    VN_CALL1(device_get_limits(device, out), device, VN_KIND_DEVICE);
}

static vn_status device_get_features(const vn_device *device, char *out, size_t capacity) {
    vn_status st = vn_device_check(device, "vn_device_get_features");
    if (st != VN_OK) return st;
    if (out == NULL || capacity == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_device_get_features: no output buffer. Fix: pass one.");
    vn_describe_device_features(device->device, out, capacity);
    return VN_OK;
}

vn_status vn_device_get_features(const vn_device *device, char *out, size_t capacity) {
    VN_CALL1(device_get_features(device, out, capacity), device, VN_KIND_DEVICE);
}

int vn_device_has_timestamps(const vn_device *device) {
    VN_GET(int, device->timestamps, 0, device, VN_KIND_DEVICE);
}

void vn_device_close(vn_device *device) {
    vn_object *held;
    if (vn_acquire(device, VN_KIND_DEVICE, __func__, &held) != VN_OK) return;
    atomic_store(&((vn_device *)held)->closed, 1);
    vn_unacquire(held);
}

void vn_device_release(vn_device *device) { vn_id_release(device, VN_KIND_DEVICE); }

