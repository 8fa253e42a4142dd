/* adapters.c - the adapters of an instance: listing, describing (name, vendor,
 * backend, type, features) and requesting one by power preference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_device.h"

static const char *backend_name(WGPUBackendType t) {
    switch (t) {
    case WGPUBackendType_Null: return "Null";
    case WGPUBackendType_WebGPU: return "WebGPU";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGLES";
    default: return "Unknown";
    }
}

static const char *adapter_type_name(WGPUAdapterType t) {
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "DiscreteGPU";
    case WGPUAdapterType_IntegratedGPU: return "IntegratedGPU";
    case WGPUAdapterType_CPU: return "CPU";
    default: return "Unknown";
    }
}

/* Set once this process has described an adapter of NVIDIA's (or any, while the test
 * switch VN_TEST_DRIVER_CANNOT_FORK stands for such a driver): its Vulkan driver is then
 * loaded, with threads and locks of its own, and it never starts again in a fork() child,
 * which inherits this flag. There it refuses every device ("Parent device is lost"), or
 * never returns: on the H200, children forked while another thread copied between two
 * devices, or made devices and listed adapters, hung in vkCreateDevice and earlier in
 * the driver's start. So such a child is refused before any instance is made. */
static atomic_bool unforkable_driver_started;

/* What wgpu-native's adapter info says: names, backend, type, vendor and device ids. */
static void describe_info(WGPUAdapter adapter, vn_device_info *out) {
    memset(out, 0, sizeof *out);
    WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
    if (wgpu.AdapterGetInfo(adapter, &info) != WGPUStatus_Success) return;
    vn_string_view_copy(info.device, out->name, sizeof out->name);
    vn_string_view_copy(info.vendor, out->vendor, sizeof out->vendor);
    vn_string_view_copy(info.description, out->driver, sizeof out->driver);
    snprintf(out->backend, sizeof out->backend, "%s", backend_name(info.backendType));
    snprintf(out->adapter_type, sizeof out->adapter_type, "%s", adapter_type_name(info.adapterType));
    out->vendor_id = info.vendorID;
    out->device_id = info.deviceID;
    if (info.vendorID == VN_VENDOR_NVIDIA || vn_test_switch_on(VN_TEST_DRIVER_CANNOT_FORK))
        atomic_store(&unforkable_driver_started, true);
    wgpu.AdapterInfoFreeMembers(info);
}

/* ---- drivers in a fork() child ------------------------------------------------------ */

vn_status vn_refused_in_fork_child(const char *refusal, const char *why) {
    return vn_fail(VN_ERROR_FORKED,
                   "%s in this process, a fork() child of a process that had already used the GPU: %s. Some GPU drivers (NVIDIA's among them) cannot start again in a forked child. "
                   "Fix: start worker processes with multiprocessing.get_context(\"spawn\") or \"forkserver\", "
                   "or fork before the parent creates its first vn.Device or lists the adapters.",
                   refusal, why[0] ? why : "no reason given");
}

vn_status vn_fork_child_may_start_drivers(void) {
    if (atomic_load(&vn_fork_generation) == 0) return VN_OK;
    if (atomic_load(&unforkable_driver_started))
        return vn_refused_in_fork_child("no GPU driver may start", "NVIDIA's driver, which the parent had started, gives no device in a "
                                        "forked child and may never return there");
    /* The H200: a child forked while a thread's first vn.Device() was still starting the
     * driver (past the fork's 10 s wait, before any adapter was described) hung there. */
    if (vn_forked_during_a_call())
        return vn_refused_in_fork_child("no GPU driver may start", "the fork came while another thread was inside the GPU driver (its "
                                        "call had not returned in 10 s), whose locks this child holds copies of");
    return VN_OK;
}

void vn_describe_adapter(WGPUAdapter adapter, vn_device_info *out) {
    describe_info(adapter, out);
    vn_describe_features(adapter, out->features, sizeof out->features);
    vn_identify_adapters(out, 1);
}

void vn_identify_listed(WGPUAdapter *adapters, size_t count, size_t index, vn_device_info *out) {
    vn_device_info *all = calloc(count, sizeof *all);
    if (all == NULL) return; /* out keeps the identity it has alone */
    for (size_t i = 0; i < count; i++) describe_info(adapters[i], &all[i]);
    vn_identify_adapters(all, count);
    memcpy(out->uuid, all[index].uuid, sizeof out->uuid);
    memcpy(out->pci_bus, all[index].pci_bus, sizeof out->pci_bus);
    free(all);
}

/* All adapters of an instance, in wgpu-native's order; the caller releases them. */
vn_status vn_list_adapters(WGPUInstance instance, WGPUAdapter **out, size_t *count) {
    *out = NULL;
    *count = wgpu.InstanceEnumerateAdapters(instance, NULL, NULL);
    if (*count == 0) return VN_OK;
    *out = calloc(*count, sizeof **out);
    if (*out == NULL) return vn_fail_no_memory("the adapter list", *count * sizeof **out);
    *count = wgpu.InstanceEnumerateAdapters(instance, NULL, *out);
    return VN_OK;
}

void vn_release_adapters(WGPUAdapter *adapters, size_t count, WGPUAdapter keep) {
    for (size_t i = 0; i < count; i++)
        if (adapters[i] != NULL && adapters[i] != keep) wgpu.AdapterRelease(adapters[i]);
    free(adapters);
}

static vn_status enumerate_adapters(const char *backend, vn_device_info *out, size_t capacity, size_t *count) {
    vn_status st = vn_require_library();
    if (st != VN_OK) return st;
    if (count == NULL || (capacity > 0 && out == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_enumerate_adapters: NULL argument. Fix: pass a result array and count.");
    WGPUInstanceBackend backends;
    if ((st = vn_parse_backend(backend, &backends)) != VN_OK) return st;
    if ((st = vn_fork_child_may_start_drivers()) != VN_OK) return st;
    WGPUInstance instance;
    if ((st = vn_new_instance(backends, &instance)) != VN_OK) return st;
    WGPUAdapter *adapters;
    size_t n;
    st = vn_list_adapters(instance, &adapters, &n);
    if (st == VN_OK && vn_switch_to_reserve(&instance, backends, n > 0))
        st = vn_list_adapters(instance, &adapters, &n); /* none were listed: nothing to release */
    if (st == VN_OK) {
        for (size_t i = 0; i < n && i < capacity; i++) vn_describe_adapter(adapters[i], &out[i]);
        vn_identify_adapters(out, n < capacity ? n : capacity);
        *count = n;
        vn_release_adapters(adapters, n, NULL);
    }
    wgpu.InstanceRelease(instance);
    return st;
}

vn_status vn_enumerate_adapters(const char *backend, vn_device_info *out, size_t capacity, size_t *count) {
    vn_fork_guard_arm(); /* before the driver starts: a fork waits for this call */
    vn_call_guard_enter(); /* instances start the driver: not while the process exits */
    vn_status st = enumerate_adapters(backend, out, capacity, count);
    vn_call_guard_leave();
    vn_exit_guard_arm();
    return st;
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *userdata1, void *userdata2) {
    (void)userdata2;
    struct vn_adapter_request *req = userdata1;
    req->status = status;
    req->adapter = adapter;
    vn_string_view_copy(message, req->message, sizeof req->message);
    /* Abandoned: an adapter that came too late is leaked (callbacks call no wgpu). */
    if (vn_request_complete(&req->state)) free(req);
}

vn_status vn_request_adapter(WGPUInstance instance, const WGPURequestAdapterOptions *opts,
                            struct vn_adapter_request *out) {
    struct vn_adapter_request *pending = calloc(1, sizeof *pending);
    if (pending == NULL)
        return vn_fail_no_memory("an adapter request", sizeof *pending);
    WGPURequestAdapterCallbackInfo acb = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
    acb.mode = WGPUCallbackMode_AllowProcessEvents;
    acb.callback = on_adapter;
    acb.userdata1 = pending;
    wgpu.InstanceRequestAdapter(instance, opts, acb);
    if (!vn_request_wait(instance, NULL, &pending->state, 60.0)) return VN_ERROR_TIMEOUT; /* the callback frees it */
    memcpy(out, pending, sizeof *out); /* the callback is done with it */
    free(pending);
    if (out->status != WGPURequestAdapterStatus_Success && out->adapter != NULL) {
        wgpu.AdapterRelease(out->adapter);
        out->adapter = NULL;
    }
    return VN_OK;
}
