/* device.c - adapter and device creation, error scopes, waits, loss and release. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- callback plumbing ------------------------------------------------------- */

/* wgpu-native fires AllowProcessEvents callbacks from wgpuInstanceProcessEvents or
 * a device poll; drive both until `flag` is set, giving up after `limit_s`. */
bool vn_process_until(WGPUInstance instance, WGPUDevice device, atomic_int *flag, double limit_s) {
    double deadline = vn_monotonic_seconds() + limit_s;
    while (!atomic_load(flag)) {
        if (device != NULL) wgpu.DevicePoll(device, 0, NULL);
        wgpu.InstanceProcessEvents(instance);
        if (atomic_load(flag)) break;
        if (vn_monotonic_seconds() > deadline) return false;
        vn_yield();
    }
    return true;
}

/* A record a callback fills while a waiter waits for it, up to a deadline. A waiter
 * that gives up must not leave the callback a dead frame to write into, so the record
 * is on the heap and `state` says who frees it: the callback completes it (PENDING ->
 * DONE) or the waiter abandons it (PENDING -> ABANDONED), and whichever of the two
 * exchanges finds the other's mark is the last user and frees it. */
enum { REQUEST_PENDING = 0, REQUEST_DONE = 1, REQUEST_ABANDONED = 2 };

/* In a callback, after filling the record: mark it done; true when its waiter had
 * already given up, so the callback must free it. */
static bool request_complete(atomic_int *state) {
    return atomic_exchange(state, REQUEST_DONE) == REQUEST_ABANDONED;
}

/* In a waiter whose wait timed out: true when the callback came after all (the record
 * is the waiter's to read and free); false when the callback will free it. */
static bool request_abandon(atomic_int *state) {
    return atomic_exchange(state, REQUEST_ABANDONED) == REQUEST_DONE;
}

struct adapter_request {
    atomic_int state;
    WGPURequestAdapterStatus status;
    WGPUAdapter adapter;
    char message[512];
};

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *userdata1, void *userdata2) {
    (void)userdata2;
    struct adapter_request *req = userdata1;
    req->status = status;
    req->adapter = adapter;
    vn_string_view_copy(message, req->message, sizeof req->message);
    /* Abandoned: an adapter that came too late is leaked (callbacks call no wgpu). */
    if (request_complete(&req->state)) free(req);
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
    if (request_complete(&req->state)) free(req);
}

/* Wait for a request record's callback; false (the record then belongs to the
 * callback, which frees it) when it did not come within limit_s. */
static bool request_wait(WGPUInstance instance, WGPUDevice device, atomic_int *state, double limit_s) {
    return vn_process_until(instance, device, state, limit_s) || request_abandon(state);
}

static void device_destroy(vn_object *object);

void vn_device_init_locks(vn_device *dev) {
    vn_object_init(&dev->obj, VN_KIND_DEVICE, device_destroy);
    atomic_init(&dev->staging_pinned, 0);
    atomic_init(&dev->pending_write_bytes, 0);
    atomic_init(&dev->abandoned_count, 0);
    for (int part = 0; part < VN_PART_COUNT; part++) atomic_init(&dev->hooks[part], NULL);
    vn_mutex_init(&dev->scope_lock);
    vn_rwlock_init(&dev->submit_lock);
    vn_mutex_init(&dev->staging_lock);
    vn_mutex_init(&dev->pipelines_lock);
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

void vn_device_note_lost(vn_device *device, const char *reason) {
    if (device == NULL || atomic_load(&device->lost)) return;
    vn_format(device->lost_reason, sizeof device->lost_reason, "%s", reason);
    atomic_store(&device->lost, 1);
}

/* Case-insensitive substring search (wgpu spells the same condition several ways). */
static bool contains_nocase(const char *text, const char *word) {
    if (text == NULL) return false;
    size_t n = strlen(word);
    for (; *text; text++) {
        size_t i = 0;
        while (i < n && text[i] && tolower((unsigned char)text[i]) == tolower((unsigned char)word[i])) i++;
        if (i == n) return true;
    }
    return false;
}

bool vn_message_says_lost(const char *message) {
    return contains_nocase(message, "device is lost") || contains_nocase(message, "device lost");
}

vn_status vn_error_status(WGPUErrorType type, const char *message, vn_status validation_code) {
    /* wgpu-native 29 reports a failed GPU allocation ("Not enough memory left.") and
     * errors on a lost device ("Parent device is lost") with the Validation type. */
    if (contains_nocase(message, "not enough memory") || contains_nocase(message, "out of memory") ||
        type == WGPUErrorType_OutOfMemory)
        return VN_ERROR_OUT_OF_MEMORY;
    if (vn_message_says_lost(message)) return VN_ERROR_DEVICE_LOST;
    switch (type) {
    case WGPUErrorType_Validation: return validation_code;
    default: return VN_ERROR_INTERNAL;
    }
}

/* The rule above, for tests. */
vn_status vn_debug_error_status(uint32_t wgpu_error_type, const char *message) {
    return vn_error_status((WGPUErrorType)wgpu_error_type, message != NULL ? message : "", VN_ERROR_VALIDATION);
}

/* An error that reached no scope. The C layer wraps every creating and encoding
 * call in scopes, so this is a backstop: it must exist, because without it
 * wgpu-native treats the error as fatal and aborts the process. The message is
 * kept for the calling thread; vn_scope_end and the submit paths report it. */
static VN_THREAD_LOCAL struct {
    WGPUErrorType type;
    char message[1536];
} uncaptured;

static void on_uncaptured_error(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                                void *userdata1, void *userdata2) {
    (void)device;
    (void)userdata1;
    (void)userdata2;
    if (uncaptured.type == WGPUErrorType_NoError || uncaptured.type == 0) {
        uncaptured.type = type;
        vn_string_view_copy(message, uncaptured.message, sizeof uncaptured.message);
    }
}

/* ---- names ---------------------------------------------------------------------- */

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

static const char *power_name(vn_power_preference p) {
    return p == VN_POWER_LOW ? "low-power" : p == VN_POWER_HIGH ? "high-performance" : "default";
}

void vn_describe_adapter(WGPUAdapter adapter, vn_device_info *out) {
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
    wgpu.AdapterInfoFreeMembers(info);
    vn_describe_features(adapter, out->features, sizeof out->features);
    vn_identify_adapters(out, 1);
}

/* The wgpu backends a user-facing name selects (NULL: the primary ones). wgpu-native's
 * own default enables every backend, so on a machine without Vulkan it would silently
 * hand out its OpenGL adapter; a GL device is only made when asked for by name. */
static vn_status parse_backend(const char *name, WGPUInstanceBackend *out) {
    static const struct { const char *name; WGPUInstanceBackend bits; } names[] = {
        {"vulkan", WGPUInstanceBackend_Vulkan}, {"metal", WGPUInstanceBackend_Metal},
        {"dx12", WGPUInstanceBackend_DX12},     {"d3d12", WGPUInstanceBackend_DX12},
        {"gl", WGPUInstanceBackend_GL},         {"opengl", WGPUInstanceBackend_GL},
    };
    if (name == NULL) {
        *out = WGPUInstanceBackend_Vulkan | WGPUInstanceBackend_Metal | WGPUInstanceBackend_DX12;
        return VN_OK;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t k = 0;
        while (names[i].name[k] && tolower((unsigned char)name[k]) == names[i].name[k]) k++;
        if (names[i].name[k] == '\0' && name[k] == '\0') {
            *out = names[i].bits;
            return VN_OK;
        }
    }
    return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                   "backend '%.64s' is not one wgpu offers. Fix: pass \"vulkan\", \"metal\", \"dx12\" or \"gl\", "
                   "or None for the platform's primary backends.", name);
}

static WGPUInstance create_instance(WGPUInstanceBackend backends) {
    WGPUInstanceExtras extras = {0};
    extras.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
    extras.backends = backends;
    extras.flags = WGPUInstanceFlag_Default;
    WGPUInstanceDescriptor desc = WGPU_INSTANCE_DESCRIPTOR_INIT;
    desc.nextInChain = &extras.chain;
    return wgpu.CreateInstance(&desc);
}

/* ---- the reserve instance ---------------------------------------------------------

 * Each device makes an instance of its own (vn_device_create says why). Some drivers
 * refuse new Vulkan instances once a process has made a number of them, destroyed or
 * not: on the H200 machine (NVIDIA 580.159.04), the 31st vkCreateInstance of a process
 * returns VK_ERROR_INCOMPATIBLE_DRIVER, so a process could make only 30 devices there.
 * So the first time an instance of a set of backends finds an adapter, one more instance
 * of that set is made and kept, unused, for the process: its reserve. A device or an
 * adapter listing whose new instance finds no adapter tries the reserve. Devices made on
 * it share it, so there a command buffer finished and never submitted keeps its device
 * alive until exit (README, "Known cost"). Lock-free: a reserve is published once into
 * an empty slot and never freed, so reading one needs no lock, in a fork() child too,
 * which ignores its parent's (they belong to another generation) and makes its own. */
#define RESERVE_SLOTS 8
struct reserve {
    WGPUInstanceBackend backends;
    unsigned generation; /* vn_fork_generation when made */
    WGPUInstance instance;
};
static _Atomic(struct reserve *) reserves[RESERVE_SLOTS];
/* An instance for a device or a listing: one that offers no adapter while the test
 * switch stands for a driver that refuses new instances. */
static WGPUInstance new_instance(WGPUInstanceBackend backends) {
    if (vn_test_switch_on(VN_TEST_REFUSE_NEW_INSTANCES)) return create_instance((WGPUInstanceBackend)WGPUInstanceBackend_BrowserWebGPU);
    return create_instance(backends);
}

/* The reserve of `backends` made in this process, or NULL. */
static const struct reserve *reserve_find(WGPUInstanceBackend backends) {
    unsigned generation = atomic_load(&vn_fork_generation);
    for (int i = 0; i < RESERVE_SLOTS; i++) {
        const struct reserve *r = atomic_load_explicit(&reserves[i], memory_order_acquire);
        if (r != NULL && r->backends == backends && r->generation == generation) return r;
    }
    return NULL;
}

/* After a new instance of `backends` found an adapter: make its reserve, once. */
static void reserve_make(WGPUInstanceBackend backends) {
    if (reserve_find(backends) != NULL) return;
    struct reserve *made = malloc(sizeof *made);
    if (made == NULL) return; /* no reserve: devices keep making instances of their own */
    made->backends = backends;
    made->generation = atomic_load(&vn_fork_generation);
    made->instance = create_instance(backends);
    for (int i = 0; made->instance != NULL && i < RESERVE_SLOTS; i++) {
        struct reserve *expected = NULL;
        if (atomic_compare_exchange_strong_explicit(&reserves[i], &expected, made, memory_order_acq_rel,
                                                    memory_order_acquire))
            return;
        if (expected->backends == backends && expected->generation == made->generation) break; /* a race won */
    }
    if (made->instance != NULL) wgpu.InstanceRelease(made->instance);
    free(made);
}

/* After *instance (new, of `backends`) looked for adapters: where it found one, make the
 * reserve; where it found none and there is a reserve, put the reserve (with a
 * reference) in its place and return true: look again there. */
static bool switch_to_reserve(WGPUInstance *instance, WGPUInstanceBackend backends, bool found) {
    if (found) {
        reserve_make(backends);
        return false;
    }
    const struct reserve *r = reserve_find(backends);
    if (r == NULL) return false;
    wgpu.InstanceAddRef(r->instance);
    wgpu.InstanceRelease(*instance);
    *instance = r->instance;
    return true;
}

/* All adapters of an instance, in wgpu-native's order; the caller releases them. */
static vn_status list_adapters(WGPUInstance instance, WGPUAdapter **out, size_t *count) {
    *out = NULL;
    *count = wgpu.InstanceEnumerateAdapters(instance, NULL, NULL);
    if (*count == 0) return VN_OK;
    *out = calloc(*count, sizeof **out);
    if (*out == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate the adapter list. Fix: free host memory.");
    *count = wgpu.InstanceEnumerateAdapters(instance, NULL, *out);
    return VN_OK;
}

static void release_adapters(WGPUAdapter *adapters, size_t count, WGPUAdapter keep) {
    for (size_t i = 0; i < count; i++)
        if (adapters[i] != NULL && adapters[i] != keep) wgpu.AdapterRelease(adapters[i]);
    free(adapters);
}

vn_status vn_enumerate_adapters(const char *backend, vn_device_info *out, size_t capacity, size_t *count) {
    vn_status st = vn_require_library();
    if (st != VN_OK) return st;
    if (count == NULL || (capacity > 0 && out == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_enumerate_adapters: NULL argument. Fix: pass a result array and count.");
    WGPUInstanceBackend backends;
    if ((st = parse_backend(backend, &backends)) != VN_OK) return st;
    WGPUInstance instance = new_instance(backends);
    if (instance == NULL) return vn_fail(VN_ERROR_INTERNAL, "wgpuCreateInstance returned NULL. Fix: check that a Vulkan loader is installed.");
    WGPUAdapter *adapters;
    size_t n;
    st = list_adapters(instance, &adapters, &n);
    if (st == VN_OK && switch_to_reserve(&instance, backends, n > 0))
        st = list_adapters(instance, &adapters, &n); /* none were listed: nothing to release */
    if (st == VN_OK) {
        for (size_t i = 0; i < n && i < capacity; i++) vn_describe_adapter(adapters[i], &out[i]);
        vn_identify_adapters(out, n < capacity ? n : capacity);
        *count = n;
        release_adapters(adapters, n, NULL);
    }
    wgpu.InstanceRelease(instance);
    return st;
}

/* ---- lifetime -------------------------------------------------------------------- */

void vn_device_retain(vn_device *device) { vn_retain(&device->obj); }

void vn_device_unref(vn_device *device) {
    if (device != NULL) vn_release(&device->obj);
}

/* ---- fences: "everything submitted so far has finished" -------------------------- */

/* wgpuDevicePoll's return value does not say whether work is still running (wgpu-native
 * 29 returns true with a submission in flight), so completion of "all work so far" is a
 * work-done callback registered now: it fires once everything submitted before it has. */
struct vn_fence {
    atomic_int done;
    atomic_int refs; /* the holder's and the callback's */
};

static void fence_unref(vn_fence *f) {
    if (f != NULL && atomic_fetch_sub(&f->refs, 1) == 1) free(f);
}

static void on_fence(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
    (void)status; /* cancelled or failed work is finished work too */
    (void)message;
    (void)userdata2;
    vn_fence *f = userdata1;
    atomic_store(&f->done, 1);
    fence_unref(f);
}

/* NULL only when out of host memory (the caller then polls as if it were not done). */
static vn_fence *fence_create(vn_device *device) {
    vn_fence *f = calloc(1, sizeof *f);
    if (f == NULL) return NULL;
    atomic_init(&f->refs, 2);
    WGPUQueueWorkDoneCallbackInfo info = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_fence;
    info.userdata1 = f;
    wgpu.QueueOnSubmittedWorkDone(device->queue, info);
    return f;
}

/* Each attached part's reap (vn_device_hooks), in slot order. */
static void reap_parts(vn_device *device, bool final) {
    for (int part = 0; part < VN_PART_COUNT; part++) {
        const vn_device_hooks *hooks = atomic_load_explicit(&device->hooks[part], memory_order_acquire);
        if (hooks != NULL && hooks->reap != NULL) hooks->reap(device, final);
    }
}

/* True when nothing submitted to the device is still running (its callbacks have run).
 * Never blocks: the first call registers the fence, later ones poll it. */
static bool device_idle(vn_device *device) {
    if (device->idle_fence == NULL) device->idle_fence = fence_create(device);
    wgpu.DevicePoll(device->device, 0, NULL);
    wgpu.InstanceProcessEvents(device->instance);
    reap_parts(device, false);
    return device->idle_fence != NULL && atomic_load(&device->idle_fence->done);
}

/* ---- devices released while busy ----------------------------------------------------
 *
 * wgpu-native's release of a device waits for its queue to drain (for ever on a device
 * lost to a GPU fault), and a release runs from ffi.gc finalizers, which must never
 * block: such a device waits here, and vn_devices_reap frees the ones that have become
 * idle. A lock-free stack (push by compare-exchange, take-all by exchange), so no mutex
 * is inherited locked by a fork() child; a child forgets the parent's (vn_inherited). */
static _Atomic(vn_device *) parked;

static void park(vn_device *device) {
    vn_device *head = atomic_load(&parked);
    do {
        device->parked_next = head;
    } while (!atomic_compare_exchange_weak(&parked, &head, device));
}

static void free_scope_results(vn_device *device);
static void device_free(vn_device *device);

bool vn_devices_reap(double wait_s) {
    double deadline = vn_monotonic_seconds() + wait_s;
    for (;;) {
        vn_device *list = atomic_exchange(&parked, NULL);
        while (list != NULL) {
            vn_device *device = list;
            list = device->parked_next;
            if (vn_inherited(&device->obj)) continue; /* the parent's: forget it */
            if (device_idle(device)) device_free(device);
            else park(device);
        }
        if (atomic_load(&parked) == NULL) return true;
        if (vn_monotonic_seconds() >= deadline) return false;
        vn_sleep_ns(1000000);
    }
}

/* The live-object counts (debug.c's) for leak tests, after the parked devices whose
 * work has finished are freed. */
void vn_debug_live_counts(vn_live_counts *out, double wait_s) {
    if (out == NULL) return;
    /* Devices released while their work ran are freed once it has finished: let a leak
     * test see them go. */
    vn_devices_reap(wait_s);
    out->devices = vn_live_count(VN_LIVE_DEVICE);
    out->buffers = vn_live_count(VN_LIVE_BUFFER);
    out->shaders = vn_live_count(VN_LIVE_SHADER);
    out->pipelines = vn_live_count(VN_LIVE_PIPELINE);
    out->dispatches = vn_live_count(VN_LIVE_DISPATCH);
    out->bind_groups = vn_live_count(VN_LIVE_BIND_GROUP);
    out->staging_buffers = vn_live_count(VN_LIVE_STAGING);
    out->recordings = vn_live_count(VN_LIVE_RECORDING);
    out->sequences = vn_live_count(VN_LIVE_SEQUENCE);
    out->submissions = vn_live_count(VN_LIVE_SUBMISSION);
    out->pending_reads = vn_live_count(VN_LIVE_PENDING_READ);
    out->mappings = vn_live_count(VN_LIVE_MAPPING);
}

/* The last reference went: free the device now, or park it while its work runs. */
static void device_destroy(vn_object *object) {
    vn_device *device = (vn_device *)object;
    if (device->device != NULL && !device_idle(device)) {
        park(device);
        return;
    }
    device_free(device);
}

static void device_free(vn_device *device) {
    fence_unref(device->idle_fence);
    /* What other files attached: abandoned reads settled, then the fill pipelines and
     * the staging ring freed (vn_device_hooks). */
    reap_parts(device, true);
    for (int part = 0; part < VN_PART_COUNT; part++) {
        const vn_device_hooks *hooks = atomic_load_explicit(&device->hooks[part], memory_order_acquire);
        if (hooks != NULL) hooks->release(device);
    }
    if (device->queue) wgpu.QueueRelease(device->queue);
    if (device->device) wgpu.DeviceRelease(device->device);
    if (device->adapter) wgpu.AdapterRelease(device->adapter);
    if (device->instance) wgpu.InstanceRelease(device->instance);
    vn_mutex_destroy(&device->scope_lock);
    vn_rwlock_destroy(&device->submit_lock);
    vn_mutex_destroy(&device->staging_lock);
    vn_mutex_destroy(&device->pipelines_lock);
    free_scope_results(device);
    free(device);
    vn_live_add(VN_LIVE_DEVICE, -1);
}

vn_status vn_device_check(const vn_device *device, const char *what) {
    if (device == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: device is NULL. Fix: pass a live Device.", what);
    if (atomic_load(&device->closed))
        return vn_fail(VN_ERROR_RELEASED,
                       "%s: the device was closed. Fix: create a new vn.Device and its buffers and pipelines "
                       "on it; nothing made on a closed device can be used.", what);
    if (atomic_load(&device->lost))
        return vn_fail(VN_ERROR_DEVICE_LOST,
                       "%s: the device '%s' was lost (%s). Fix: create a new vn.Device and re-create buffers "
                       "and pipelines on it.", what, device->info.name,
                       device->lost_reason[0] ? device->lost_reason : "destroyed");
    return VN_OK;
}

static vn_status finish_device(vn_device *dev, const char *required_features, vn_device **out);

/* This process is a fork() child of one that had made vyre_native objects (the fork
 * handler is registered with the first), and the adapter refused it a device.
 * Some drivers cannot start again in a child forked after the parent used them: on the
 * H200, NVIDIA's refuses every new device there ("Parent device is lost"), while
 * lavapipe gives one. The cause is the fork, so the error is ForkedError. */
static vn_status refused_in_fork_child(const char *adapter, const char *why) {
    return vn_fail(VN_ERROR_FORKED,
                   "adapter '%s' refused to create a device in this process, a fork() child of a process that "
                   "had already used the GPU: %s. Some GPU drivers (NVIDIA's among them) cannot start again in "
                   "a forked child. Fix: start worker processes with multiprocessing.get_context(\"spawn\") "
                   "or \"forkserver\", or fork before the parent creates its first vn.Device.",
                   adapter, why[0] ? why : "no reason given");
}

/* Request an adapter of `instance` and wait for it (60 s at most): VN_OK with *out
 * filled (out->adapter NULL when none was offered, out->message saying why),
 * VN_ERROR_TIMEOUT, or VN_ERROR_OUT_OF_MEMORY with its message set. */
static vn_status request_adapter(WGPUInstance instance, const WGPURequestAdapterOptions *opts,
                                 struct adapter_request *out) {
    struct adapter_request *pending = calloc(1, sizeof *pending);
    if (pending == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate an adapter request. Fix: free host memory.");
    WGPURequestAdapterCallbackInfo acb = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
    acb.mode = WGPUCallbackMode_AllowProcessEvents;
    acb.callback = on_adapter;
    acb.userdata1 = pending;
    wgpu.InstanceRequestAdapter(instance, opts, acb);
    if (!request_wait(instance, NULL, &pending->state, 60.0)) return VN_ERROR_TIMEOUT; /* the callback frees it */
    memcpy(out, pending, sizeof *out); /* the callback is done with it */
    free(pending);
    if (out->status != WGPURequestAdapterStatus_Success && out->adapter != NULL) {
        wgpu.AdapterRelease(out->adapter);
        out->adapter = NULL;
    }
    return VN_OK;
}

static vn_status device_create(vn_power_preference power_preference, int32_t adapter_index, const char *backend,
                               const char *required_features, vn_device **out) {
    vn_status st = vn_require_library();
    if (st != VN_OK) return st;
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_device_create: out is NULL. Fix: pass a result pointer.");
    *out = NULL;
    vn_devices_reap(0.0); /* free devices released while busy that have finished since */
    if (power_preference != VN_POWER_DEFAULT && power_preference != VN_POWER_LOW && power_preference != VN_POWER_HIGH)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "power preference %d is not one of 0 (default), 1 (low-power), "
                       "2 (high-performance). Fix: pass one of those.", (int)power_preference);
    WGPUInstanceBackend backends;
    if ((st = parse_backend(backend, &backends)) != VN_OK) return st;
    /* For the messages: the backend asked for, or what the default means. */
    const char *wanted = backend ? backend : "primary: Vulkan, Metal or DX12";

    vn_device *dev = calloc(1, sizeof *dev);
    if (dev == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a device record. Fix: free host memory.");
    vn_device_init_locks(dev);

    /* An instance of its own, released with the device: wgpu-native 29 frees a command
     * buffer finished but never submitted only when its instance goes, and that buffer
     * holds its wgpu device alive (tests/test_device_lifecycle.py). Where the driver
     * offers no adapter to a new instance, the reserve's (above). */
    dev->instance = new_instance(backends);
    if (dev->instance == NULL) {
        vn_device_unref(dev);
        return vn_fail(VN_ERROR_INTERNAL, "wgpuCreateInstance returned NULL. Fix: check that a Vulkan loader is installed.");
    }

    if (adapter_index >= 0) {
        WGPUAdapter *adapters;
        size_t n;
        vn_status lst = list_adapters(dev->instance, &adapters, &n);
        if (lst == VN_OK && switch_to_reserve(&dev->instance, backends, n > 0))
            lst = list_adapters(dev->instance, &adapters, &n); /* none were listed: nothing to release */
        if (lst != VN_OK || (size_t)adapter_index >= n) {
            if (lst == VN_OK) release_adapters(adapters, n, NULL);
            vn_device_unref(dev);
            if (lst != VN_OK) return lst;
            return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                           "adapter index %d is out of range: %zu adapter(s) found (backend %.64s). Fix: pass "
                           "an index from vn.enumerate_adapters() with the same backend, or leave adapter unset "
                           "for the default.", (int)adapter_index, n, wanted);
        }
        dev->adapter = adapters[adapter_index];
        release_adapters(adapters, n, dev->adapter);
        return finish_device(dev, required_features, out);
    }
    WGPURequestAdapterOptions opts = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
    opts.powerPreference = power_preference == VN_POWER_LOW    ? WGPUPowerPreference_LowPower
                           : power_preference == VN_POWER_HIGH ? WGPUPowerPreference_HighPerformance
                                                               : WGPUPowerPreference_Undefined;
    struct adapter_request areq;
    st = request_adapter(dev->instance, &opts, &areq);
    if (st == VN_OK && switch_to_reserve(&dev->instance, backends, areq.adapter != NULL))
        st = request_adapter(dev->instance, &opts, &areq);
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
    return finish_device(dev, required_features, out);
}

/* With dev->adapter chosen: read its info and limits and request the device. On
 * failure dev is released. */
static vn_status finish_device(vn_device *dev, const char *required_features, vn_device **out) {
    vn_describe_adapter(dev->adapter, &dev->info);

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
    ddesc.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
    ddesc.uncapturedErrorCallbackInfo.userdata1 = dev;
    struct device_request *pending = calloc(1, sizeof *pending);
    if (pending == NULL) {
        vn_device_unref(dev);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a device request. Fix: free host memory.");
    }
    WGPURequestDeviceCallbackInfo dcb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
    dcb.mode = WGPUCallbackMode_AllowProcessEvents;
    dcb.callback = on_device;
    dcb.userdata1 = pending;
    wgpu.AdapterRequestDevice(dev->adapter, &ddesc, dcb);
    if (!request_wait(dev->instance, NULL, &pending->state, 60.0)) {
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
        vn_status st = atomic_load(&vn_fork_generation) > 0
                           ? refused_in_fork_child(dev->info.name, dreq.message)
                           : vn_fail(VN_ERROR_INTERNAL, "adapter '%s' refused to create a device: %s. Fix: update "
                                     "the GPU driver.", dev->info.name, dreq.message);
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
    return vn_publish(device_create(power_preference, adapter_index, backend, required_features, out), out);
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

/* Polls spin (yielding) this long, so work of microseconds is seen at once, then sleep
 * between polls, doubling from the first pause to the longest: a long wait costs a
 * poll every 0.2 ms, not a busy core, and sees completion at most that late. */
enum { SPIN_NS = 200000, FIRST_PAUSE_NS = 20000, LONGEST_PAUSE_NS = 200000 };

vn_status vn_wait(vn_device *device, atomic_int *flag, double limit_s, double *waited_s) {
    if (flag == NULL) {
        /* All work so far: a fence of this call's own. */
        vn_fence *f = fence_create(device);
        if (f == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a fence. Fix: free host memory.");
        vn_status st = vn_wait(device, &f->done, limit_s, waited_s);
        fence_unref(f);
        return st;
    }
    uint64_t start = vn_monotonic_ns();
    uint64_t limit = (uint64_t)VN_WAIT_SLICE_MS * 1000000u;
    if (limit_s >= 0 && limit_s * 1e9 < (double)limit) limit = (uint64_t)(limit_s * 1e9);
    uint64_t pause = 0;
    vn_status st = VN_PENDING;
    for (;;) {
        wgpu.DevicePoll(device->device, 0, NULL);
        /* Map and work-done callbacks (AllowProcessEvents) fire from here too. */
        wgpu.InstanceProcessEvents(device->instance);
        if (atomic_load_explicit(&device->abandoned_count, memory_order_relaxed) != 0) reap_parts(device, false);
        if (atomic_load(flag)) {
            st = VN_OK;
            break;
        }
        if (atomic_load(&device->lost)) {
            /* Destroyed or lost: what has not finished by now will not. */
            st = vn_device_check(device, "waiting for submitted work");
            break;
        }
        uint64_t spent = vn_monotonic_ns() - start;
        if (spent >= limit) break;
        if (spent < SPIN_NS) {
            vn_yield();
            continue;
        }
        pause = pause == 0 ? FIRST_PAUSE_NS : pause * 2 > LONGEST_PAUSE_NS ? LONGEST_PAUSE_NS : pause * 2;
        vn_sleep_ns(pause < limit - spent ? pause : limit - spent);
    }
    if (waited_s != NULL) *waited_s += (double)(vn_monotonic_ns() - start) * 1e-9;
    return st;
}

vn_fence *vn_fence_create(vn_device *device) { return fence_create(device); }

void vn_fence_release(vn_fence *fence) { fence_unref(fence); }

vn_status vn_fence_wait_held(vn_device *device, vn_fence *f) {
    uint64_t start = vn_monotonic_ns(), pause = 0;
    while (f != NULL && !atomic_load(&f->done)) {
        wgpu.DevicePoll(device->device, 0, NULL);
        wgpu.InstanceProcessEvents(device->instance);
        if (atomic_load(&f->done)) break;
        if (atomic_load(&device->lost)) return vn_device_check(device, "waiting for an earlier part of the work");
        if (vn_monotonic_ns() - start < SPIN_NS) {
            vn_yield();
            continue;
        }
        pause = pause == 0 ? FIRST_PAUSE_NS : pause * 2 > LONGEST_PAUSE_NS ? LONGEST_PAUSE_NS : pause * 2;
        vn_sleep_ns(pause);
    }
    return VN_OK;
}

vn_status vn_device_flush_writes(vn_device *device, const char *what, uint64_t *index) {
    vn_status st = vn_submit_begin(device, what);
    if (st != VN_OK) return st;
    atomic_store(&device->pending_write_bytes, 0);
    WGPUSubmissionIndex idx = wgpu.QueueSubmitForIndex(device->queue, 0, NULL);
    vn_submit_end(device);
    if (index != NULL) *index = idx;
    return VN_OK;
}

/* buffer.write queues its bytes for the next submit (wgpu's pending writes): a wait
 * with nothing submitted since would return before they land, and wgpu would keep
 * every write's staging copy. The empty submit sends them, so wait_idle covers them;
 * it is made once (a call again after VN_PENDING finds nothing queued), after a CPU
 * adapter's queue has drained (vn_submit_ready). */
static vn_status device_wait_idle(vn_device *device) {
    vn_status st = vn_device_check(device, "device.wait_idle");
    if (st == VN_OK && atomic_load(&device->pending_write_bytes) > 0) {
        st = vn_submit_ready(device);
        if (st == VN_OK) st = vn_device_flush_writes(device, "device.wait_idle", NULL);
    }
    if (st != VN_OK) return st;
    return vn_wait(device, NULL, -1.0, NULL);
}

vn_status vn_device_wait_idle(vn_device *device) { VN_CALL1(device_wait_idle(device), device, VN_KIND_DEVICE); }

/* Under the life lock held for writing. */
static void destroy_gpu_device(vn_device *device) {
    vn_mutex_lock(&device->scope_lock);
    wgpu.DeviceDestroy(device->device);
    vn_mutex_unlock(&device->scope_lock);
}

void vn_device_mark_destroyed(vn_device *device, const char *reason) {
    /* Exclusive: no submit is between its check and its queue call while the device
     * goes away (wgpu-native aborts on a submit to a destroyed device), and none starts
     * afterwards without seeing `lost`; under the scope lock no encoding of ours is
     * between its pushes and pops. */
    vn_rwlock_write_lock(&device->submit_lock);
    vn_format(device->lost_reason, sizeof device->lost_reason, "%s", reason);
    atomic_store(&device->lost, 1);
    /* Destroying the GPU device frees every buffer's memory, the mapped memory of a
     * pinned staging buffer too, which a zero-copy array still reads: with pins alive,
     * only the flag is set now (every call already fails as on a destroyed device) and
     * the last unpin destroys it (vn_device_destroy_deferred). */
    if (atomic_load(&device->staging_pinned) > 0) device->destroy_deferred = true;
    else destroy_gpu_device(device);
    vn_rwlock_write_unlock(&device->submit_lock);
}

static vn_status device_destroy_now(vn_device *device) {
    vn_status st = vn_device_check(device, "device.destroy");
    if (st != VN_OK) return st;
    vn_device_mark_destroyed(device, "destroyed by Device.destroy()");
    return VN_OK;
}

vn_status vn_device_destroy(vn_device *device) { VN_CALL1(device_destroy_now(device), device, VN_KIND_DEVICE); }

void vn_device_destroy_deferred(vn_device *device) {
    vn_rwlock_write_lock(&device->submit_lock);
    if (device->destroy_deferred && atomic_load(&device->staging_pinned) == 0) {
        device->destroy_deferred = false;
        destroy_gpu_device(device);
    }
    vn_rwlock_write_unlock(&device->submit_lock);
}

vn_status vn_submit_begin(vn_device *device, const char *what) {
    vn_rwlock_read_lock(&device->submit_lock);
    vn_status st = vn_device_check(device, what);
    if (st != VN_OK) vn_rwlock_read_unlock(&device->submit_lock);
    return st;
}

void vn_submit_end(vn_device *device) { vn_rwlock_read_unlock(&device->submit_lock); }

vn_status vn_submit_guard_check(const vn_submit_guard *guard) {
    return guard == NULL || guard->check == NULL ? VN_OK : guard->check(guard->arg);
}

vn_status vn_submit_begin_guarded(vn_device *device, const char *what, const vn_submit_guard *guard) {
    vn_status st = vn_submit_begin(device, what);
    if (st != VN_OK) return st;
    st = vn_submit_guard_check(guard);
    if (st != VN_OK) vn_submit_end(device);
    return st;
}

vn_status vn_submit_begin_exclusive(vn_device *device, const char *what, const vn_submit_guard *guard) {
    vn_rwlock_write_lock(&device->submit_lock);
    vn_status st = vn_device_check(device, what);
    if (st == VN_OK) st = vn_submit_guard_check(guard);
    if (st != VN_OK) vn_rwlock_write_unlock(&device->submit_lock);
    return st;
}

void vn_submit_end_exclusive(vn_device *device) { vn_rwlock_write_unlock(&device->submit_lock); }

void vn_device_close(vn_device *device) {
    vn_object *held;
    if (vn_acquire(device, VN_KIND_DEVICE, __func__, &held) != VN_OK) return;
    atomic_store(&((vn_device *)held)->closed, 1);
    vn_unacquire(held);
}

void vn_device_release(vn_device *device) { vn_release_handle(device, VN_KIND_DEVICE); }

/* ---- error scopes ------------------------------------------------------------------ */

/* What one pop reports: a request record (see request_complete), owned by the device
 * between pops so the encoding path allocates nothing. */
struct vn_scope_result {
    atomic_int state;
    WGPUPopErrorScopeStatus status;
    WGPUErrorType type;
    char message[1536];
};

static void free_scope_results(vn_device *device) {
    for (int i = 0; i < 2; i++) free(device->scope_results[i]);
}

/* wgpu's messages open with "Validation Error\n\nCaused by:\n" and end in blank
 * lines; keep what follows (the call, the cause, naga's source excerpt). */
static void tidy_message(char *msg) {
    char *start = msg;
    char *caused = strstr(msg, "Caused by:");
    if (caused != NULL) start = caused + strlen("Caused by:");
    while (*start == ' ' || *start == '\n' || *start == '\t' || *start == '\r') start++;
    memmove(msg, start, strlen(start) + 1);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\n' || msg[n - 1] == '\t' || msg[n - 1] == '\r')) n--;
    msg[n] = '\0';
}

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *userdata1,
                   void *userdata2) {
    (void)userdata2;
    struct vn_scope_result *r = userdata1;
    if (r == NULL) return; /* popped without a record (host memory ran out) */
    r->status = status;
    r->type = type;
    vn_string_view_copy(message, r->message, sizeof r->message);
    if (request_complete(&r->state)) free(r);
}

void vn_scope_begin(vn_device *device) {
    vn_mutex_lock(&device->scope_lock);
    uncaptured.type = WGPUErrorType_NoError;
    /* wgpu-native 29 panics on WGPUErrorFilter_Internal ("invalid error filter"), so
     * internal errors reach the uncaptured-error backstop instead. */
    wgpu.DevicePushErrorScope(device->device, WGPUErrorFilter_OutOfMemory);
    wgpu.DevicePushErrorScope(device->device, WGPUErrorFilter_Validation);
}

/* A captured error as its status and message. An error saying the device is lost also
 * marks it lost, so that no later call submits to it (wgpu-native aborts on that), and
 * a failed allocation is out of memory whatever type wgpu gave it. */
static vn_status scope_failure(vn_device *device, WGPUErrorType type, const char *message, const char *what,
                               vn_status validation_code, const char *fix) {
    vn_status st = vn_error_status(type, message, validation_code);
    if (st == VN_ERROR_DEVICE_LOST) {
        vn_device_note_lost(device, message);
        return vn_fail(st, "%s failed: the device '%s' is lost (%s). Fix: create a new vn.Device and re-create "
                       "buffers and pipelines on it.", what, device->info.name, message);
    }
    if (st == VN_ERROR_OUT_OF_MEMORY)
        return vn_fail(st, "%s failed: the GPU could not allocate it (%s). Fix: free GPU memory (release buffers "
                       "you no longer need) or use smaller buffers.", what, message);
    return vn_fail(st, "%s failed: %s. Fix: %s", what, message, fix);
}

vn_status vn_scope_end(vn_device *device, const char *what, vn_status validation_code, const char *fix) {
    /* The device's two records, reused under scope_lock; a pop whose callback did not
     * come in time leaves its record to the callback, and the slot gets a new one. */
    struct vn_scope_result **results = device->scope_results;
    bool done[2] = {false, false}, recorded = true;
    for (int i = 0; i < 2; i++) {
        if (results[i] == NULL) results[i] = malloc(sizeof *results[i]);
        if (results[i] != NULL) memset(results[i], 0, sizeof *results[i]);
        recorded = recorded && results[i] != NULL;
        WGPUPopErrorScopeCallbackInfo cb = WGPU_POP_ERROR_SCOPE_CALLBACK_INFO_INIT;
        cb.mode = WGPUCallbackMode_AllowProcessEvents;
        cb.callback = on_pop;
        cb.userdata1 = results[i]; /* NULL: popped all the same, its report dropped */
        wgpu.DevicePopErrorScope(device->device, cb);
        if (results[i] == NULL) continue;
        done[i] = request_wait(device->instance, NULL, &results[i]->state, 10.0);
        if (!done[i]) results[i] = NULL;
    }
    /* Read before unlocking: the records are the next scope's once the lock is free. */
    vn_status st = recorded ? VN_OK
                            : vn_fail(VN_ERROR_OUT_OF_MEMORY, "%s: no host memory for its error report. Fix: free "
                                      "host memory.", what);
    for (int i = 0; i < 2 && st == VN_OK; i++) {
        struct vn_scope_result *r = results[i];
        if (!done[i]) continue;
        if (r->status == WGPUPopErrorScopeStatus_Success && r->type != WGPUErrorType_NoError && r->type != 0) {
            tidy_message(r->message);
            st = scope_failure(device, r->type, r->message, what, validation_code, fix);
        }
    }
    vn_mutex_unlock(&device->scope_lock);
    /* An error from a device destroyed meanwhile ("Parent device is lost": destroy() on
     * another thread, or the deferred destroy of a zero-copy read's last unpin, between
     * this call's device check and its encoding) is that loss, not a validation error. */
    if (st != VN_OK && atomic_load(&device->lost)) return vn_device_check(device, what);
    if (st != VN_OK) return st;
    if (uncaptured.type != WGPUErrorType_NoError && uncaptured.type != 0) {
        WGPUErrorType t = uncaptured.type;
        tidy_message(uncaptured.message);
        uncaptured.type = WGPUErrorType_NoError;
        return scope_failure(device, t, uncaptured.message, what, validation_code, fix);
    }
    return vn_device_check(device, what);
}
