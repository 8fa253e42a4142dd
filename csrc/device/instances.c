/* instances.c - wgpu instances: which backends a name selects, a new instance per
 * device, and the process's reserve instance for drivers that refuse new ones. */
#include <ctype.h>
#include <stdlib.h>

#include "layer_device.h"

/* The wgpu backends a user-facing name selects (NULL: the primary ones). wgpu-native's
 * own default enables every backend, so on a machine without Vulkan it would silently
 * hand out its OpenGL adapter; a GL device is only made when asked for by name. */
vn_status vn_parse_backend(const char *name, WGPUInstanceBackend *out) {
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
vn_status vn_new_instance(WGPUInstanceBackend backends, WGPUInstance *out) {
    if (vn_test_switch_on(VN_TEST_REFUSE_NEW_INSTANCES)) backends = (WGPUInstanceBackend)WGPUInstanceBackend_BrowserWebGPU;
    *out = create_instance(backends);
    if (*out != NULL) return VN_OK;
    return vn_fail(VN_ERROR_INTERNAL, "wgpuCreateInstance returned NULL. Fix: check that a Vulkan loader is installed.");
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
bool vn_switch_to_reserve(WGPUInstance *instance, WGPUInstanceBackend backends, bool found) {
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
