/* adapter_identity.c - what wgpu-native's adapter info lacks, and the adapter a scheduler
 * assigned.
 *
 * wgpu-native 29's WGPUAdapterInfo says vendor and device ids, names, backend and type;
 * no PCI address and no UUID, so two GPUs of one model look alike. Schedulers (Ray,
 * Slurm, Kubernetes) name the GPU they hand a worker by a vendor's index or UUID in
 * CUDA_VISIBLE_DEVICES and its equivalents. So this file asks the Vulkan loader itself,
 * once per process, for each physical device's deviceUUID (VkPhysicalDeviceIDProperties,
 * Vulkan 1.1) and PCI address (VK_EXT_pci_bus_info, where the driver has it), and matches
 * them to wgpu's Vulkan adapters by (vendor id, device id, order among equal pairs):
 * wgpu-hal lists Vulkan adapters in vkEnumeratePhysicalDevices order, in the same process,
 * through the same loader and drivers. A pair whose count differs between the two lists
 * (wgpu left a device out) gets no identity rather than perhaps a wrong one.
 *
 * NVIDIA's Vulkan deviceUUID is the GPU's UUID that nvidia-smi and CUDA print as
 * "GPU-<uuid>"; other vendors' deviceUUIDs are their own and match no scheduler's text. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "layer_device.h"

/* ---- the few Vulkan declarations used, as vulkan_core.h has them (a fixed ABI) ---- */

#if defined(_WIN32) && !defined(_WIN64)
#define VK_CALL __stdcall
#else
#define VK_CALL
#endif

typedef void *vk_instance;
typedef void *vk_physical_device;

enum {
    VK_SUCCESS = 0,
    VK_INCOMPLETE = 5,
    VK_TYPE_APPLICATION_INFO = 0,
    VK_TYPE_INSTANCE_CREATE_INFO = 1,
    VK_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001,
    VK_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES = 1000071004,
    VK_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT = 1000212000,
};
#define VK_API_1_1 ((1u << 22) | (1u << 12))

struct vk_application_info {
    int32_t s_type;
    const void *next;
    const char *application_name;
    uint32_t application_version;
    const char *engine_name;
    uint32_t engine_version;
    uint32_t api_version;
};

struct vk_instance_create_info {
    int32_t s_type;
    const void *next;
    uint32_t flags;
    const struct vk_application_info *application;
    uint32_t layer_count;
    const char *const *layers;
    uint32_t extension_count;
    const char *const *extensions;
};

/* VkPhysicalDeviceProperties starts with these; the rest (limits and sparse properties,
 * 824 bytes in all on 64-bit platforms) lands in the room of the union. */
struct vk_properties_head {
    uint32_t api_version;
    uint32_t driver_version;
    uint32_t vendor_id;
    uint32_t device_id;
};
union vk_properties {
    struct vk_properties_head head;
    uint64_t align;
    unsigned char room[2048];
};
struct vk_properties2 {
    int32_t s_type;
    void *next;
    union vk_properties properties;
};
struct vk_id_properties {
    int32_t s_type;
    void *next;
    uint8_t device_uuid[16];
    uint8_t driver_uuid[16];
    uint8_t device_luid[8];
    uint32_t device_node_mask;
    uint32_t device_luid_valid;
};
struct vk_pci_bus_info {
    int32_t s_type;
    void *next;
    uint32_t domain, bus, device, function;
};
struct vk_extension_properties {
    char name[256];
    uint32_t spec_version;
};

typedef vn_dl_fn(VK_CALL *vk_get_instance_proc_addr_fn)(vk_instance, const char *);
typedef int32_t(VK_CALL *vk_enumerate_instance_version_fn)(uint32_t *);
typedef int32_t(VK_CALL *vk_create_instance_fn)(const struct vk_instance_create_info *, const void *, vk_instance *);
typedef void(VK_CALL *vk_destroy_instance_fn)(vk_instance, const void *);
typedef int32_t(VK_CALL *vk_enumerate_physical_devices_fn)(vk_instance, uint32_t *, vk_physical_device *);
typedef void(VK_CALL *vk_get_properties_fn)(vk_physical_device, union vk_properties *);
typedef void(VK_CALL *vk_get_properties2_fn)(vk_physical_device, struct vk_properties2 *);
typedef int32_t(VK_CALL *vk_enumerate_extensions_fn)(vk_physical_device, const char *, uint32_t *,
                                                     struct vk_extension_properties *);

/* ---- the process's Vulkan devices, read once -------------------------------------- */

enum { MAX_GPUS = 64 };
struct gpu {
    uint32_t vendor_id, device_id;
    char uuid[sizeof ((vn_device_info *)0)->uuid];
    char pci_bus[sizeof ((vn_device_info *)0)->pci_bus];
};
/* Written once under gpus_once, read-only after: the devices do not change while a
 * process runs (a GPU hot-plugged later has no identity until the next process). */
static struct gpu gpus[MAX_GPUS];
static size_t gpu_count;
static vn_once gpus_once = VN_ONCE_INIT;

static const char *vulkan_library_name(void) {
#if defined(_WIN32)
    return "vulkan-1.dll";
#elif defined(__APPLE__)
    return "libvulkan.1.dylib";
#else
    return "libvulkan.so.1";
#endif
}

static bool has_extension(vk_enumerate_extensions_fn enumerate, vk_physical_device pd, const char *name) {
    uint32_t n = 0;
    if (enumerate == NULL || enumerate(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    struct vk_extension_properties *ext = calloc(n, sizeof *ext);
    if (ext == NULL) return false;
    bool found = false;
    int32_t r = enumerate(pd, NULL, &n, ext);
    for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n && !found; i++)
        found = strncmp(ext[i].name, name, sizeof ext[i].name) == 0;
    free(ext);
    return found;
}

static void describe_gpu(vk_physical_device pd, vk_get_properties_fn props, vk_get_properties2_fn props2,
                         vk_enumerate_extensions_fn extensions, struct gpu *out) {
    union vk_properties p;
    memset(&p, 0, sizeof p);
    props(pd, &p);
    out->vendor_id = p.head.vendor_id;
    out->device_id = p.head.device_id;
    /* Properties2 on a device of Vulkan 1.0 is not valid usage: such a device keeps no identity. */
    if (props2 == NULL || p.head.api_version < VK_API_1_1) return;
    struct vk_pci_bus_info pci = {.s_type = VK_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
    struct vk_id_properties id = {.s_type = VK_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    bool with_pci = has_extension(extensions, pd, "VK_EXT_pci_bus_info");
    if (with_pci) id.next = &pci;
    struct vk_properties2 p2;
    memset(&p2, 0, sizeof p2);
    p2.s_type = VK_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.next = &id;
    props2(pd, &p2);
    const uint8_t *u = id.device_uuid;
    bool zero = true;
    for (int i = 0; i < 16; i++) zero = zero && u[i] == 0;
    if (!zero)
        snprintf(out->uuid, sizeof out->uuid,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    if (with_pci)
        snprintf(out->pci_bus, sizeof out->pci_bus, "%04x:%02x:%02x.%x", pci.domain & 0xFFFFu, pci.bus & 0xFFu,
                 pci.device & 0x1Fu, pci.function & 0x7u);
}

/* One instance of Vulkan 1.1, no layers or extensions, destroyed at once (NVIDIA's driver
 * allows a process about 30 instances in all: csrc/device/device.c's reserve). Nothing is found
 * where there is no loader, or one older than 1.1: adapters then have no identity. */
static void read_gpus(void) {
    char err[256];
    void *vk = vn_dl_open(vulkan_library_name(), err, sizeof err);
    if (vk == NULL) return;
    vk_get_instance_proc_addr_fn gipa = (vk_get_instance_proc_addr_fn)vn_dl_sym(vk, "vkGetInstanceProcAddr");
    if (gipa == NULL) return;
    vk_enumerate_instance_version_fn version = (vk_enumerate_instance_version_fn)gipa(NULL, "vkEnumerateInstanceVersion");
    uint32_t api = 0;
    if (version == NULL || version(&api) != VK_SUCCESS || api < VK_API_1_1) return;
    vk_create_instance_fn create = (vk_create_instance_fn)gipa(NULL, "vkCreateInstance");
    struct vk_application_info app = {.s_type = VK_TYPE_APPLICATION_INFO, .application_name = "vyre_native",
                                      .engine_name = "vyre_native", .api_version = VK_API_1_1};
    struct vk_instance_create_info info = {.s_type = VK_TYPE_INSTANCE_CREATE_INFO, .application = &app};
    vk_instance instance = NULL;
    if (create == NULL || create(&info, NULL, &instance) != VK_SUCCESS || instance == NULL) return;
    vk_destroy_instance_fn destroy = (vk_destroy_instance_fn)gipa(instance, "vkDestroyInstance");
    vk_enumerate_physical_devices_fn enumerate =
        (vk_enumerate_physical_devices_fn)gipa(instance, "vkEnumeratePhysicalDevices");
    vk_get_properties_fn props = (vk_get_properties_fn)gipa(instance, "vkGetPhysicalDeviceProperties");
    vk_get_properties2_fn props2 = (vk_get_properties2_fn)gipa(instance, "vkGetPhysicalDeviceProperties2");
    vk_enumerate_extensions_fn extensions =
        (vk_enumerate_extensions_fn)gipa(instance, "vkEnumerateDeviceExtensionProperties");
    vk_physical_device pds[MAX_GPUS];
    uint32_t n = MAX_GPUS;
    int32_t r = enumerate != NULL && props != NULL ? enumerate(instance, &n, pds) : -1;
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
        for (uint32_t i = 0; i < n && i < MAX_GPUS; i++) describe_gpu(pds[i], props, props2, extensions, &gpus[i]);
        gpu_count = n < MAX_GPUS ? n : MAX_GPUS;
    }
    if (destroy != NULL) destroy(instance, NULL);
}

void vn_identify_adapters(vn_device_info *adapters, size_t count) {
    vn_once_run(&gpus_once, read_gpus);
    for (size_t i = 0; i < count; i++) {
        vn_device_info *a = &adapters[i];
        a->uuid[0] = a->pci_bus[0] = '\0';
        if (strcmp(a->backend, "Vulkan") != 0) continue;
        size_t ordinal = 0, in_list = 0, in_vulkan = 0, at = 0;
        for (size_t j = 0; j < count; j++) {
            const vn_device_info *b = &adapters[j];
            if (strcmp(b->backend, "Vulkan") != 0 || b->vendor_id != a->vendor_id || b->device_id != a->device_id)
                continue;
            in_list++;
            if (j < i) ordinal++;
        }
        for (size_t k = 0; k < gpu_count; k++) {
            if (gpus[k].vendor_id != a->vendor_id || gpus[k].device_id != a->device_id) continue;
            if (in_vulkan++ == ordinal) at = k;
        }
        if (in_vulkan != in_list) continue; /* the lists differ: which is which is unknown */
        memcpy(a->uuid, gpus[at].uuid, sizeof a->uuid);
        memcpy(a->pci_bus, gpus[at].pci_bus, sizeof a->pci_bus);
    }
}

/* ---- the adapter a scheduler assigned --------------------------------------------- */

/* The variables honoured, each naming GPUs of one vendor by index (in PCI order) or, for
 * NVIDIA, by UUID; ROCm applies HIP_VISIBLE_DEVICES within ROCR_VISIBLE_DEVICES' list. */
static const struct assigner {
    const char *variable;
    uint32_t vendor_id;
    const char *vendor;
} assigners[] = {
    {"CUDA_VISIBLE_DEVICES", VN_VENDOR_NVIDIA, "NVIDIA"},
    {"ROCR_VISIBLE_DEVICES", 0x1002, "AMD"},
    {"HIP_VISIBLE_DEVICES", 0x1002, "AMD"},
    {"ZE_AFFINITY_MASK", 0x8086, "Intel"},
};
enum { ASSIGNERS = sizeof assigners / sizeof assigners[0], MAX_ADAPTERS = 256 };

int vn_assigned_by_environment(void) {
    for (size_t i = 0; i < ASSIGNERS; i++)
        if (getenv(assigners[i].variable) != NULL) return 1;
    return 0;
}

/* "[0] llvmpipe (vendor 0x10005, device 0x0, uuid ..., pci ...), [1] ..." into buf. */
static const char *adapters_text(const vn_device_info *adapters, size_t count, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count && used + 1 < cap; i++) {
        const vn_device_info *a = &adapters[i];
        int n = snprintf(buf + used, cap - used, "%s[%zu] %.60s (%s, vendor 0x%x, device 0x%x, uuid %s, pci %s)",
                         i ? ", " : "", i, a->name, a->backend, (unsigned)a->vendor_id, (unsigned)a->device_id,
                         a->uuid[0] ? a->uuid : "unknown", a->pci_bus[0] ? a->pci_bus : "unknown");
        if (n < 0) break;
        used += (size_t)n;
    }
    if (count == 0) snprintf(buf, cap, "none");
    return buf;
}

static bool is_uuid_text(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) && s[i] != '-') return false;
    return true;
}

/* The adapters whose uuid starts with s[0..n) (any case): how many, and the first. */
static size_t uuid_matches(const vn_device_info *adapters, const size_t *among, size_t count, const char *s,
                           size_t n, size_t *first) {
    size_t found = 0;
    for (size_t i = 0; i < count; i++) {
        const char *u = adapters[among[i]].uuid;
        if (strlen(u) < n) continue;
        size_t k = 0;
        while (k < n && tolower((unsigned char)s[k]) == u[k]) k++;
        if (k == n && found++ == 0) *first = i;
    }
    return found;
}

/* The vendor's Vulkan adapters, in PCI order where each has its address, else in wgpu's. */
static size_t vendor_adapters(const vn_device_info *adapters, size_t count, uint32_t vendor, size_t *out) {
    size_t n = 0;
    bool all_pci = true;
    for (size_t i = 0; i < count; i++) {
        if (adapters[i].vendor_id != vendor || strcmp(adapters[i].backend, "Vulkan") != 0) continue;
        out[n++] = i;
        all_pci = all_pci && adapters[i].pci_bus[0] != '\0';
    }
    for (size_t i = 1; all_pci && i < n; i++) /* insertion sort: a handful of GPUs */
        for (size_t j = i; j > 0 && strcmp(adapters[out[j - 1]].pci_bus, adapters[out[j]].pci_bus) > 0; j--) {
            size_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* Apply one variable's value to `list` (n adapters, indices into adapters), in place:
 * afterwards it holds the entries the value names, in its order, up to a negative index
 * (CUDA ends the list there). Blank, "-1" or Slurm's "NoDevFiles": no GPU. */
static vn_status apply_assigner(const struct assigner *as, const char *value, const vn_device_info *adapters,
                                size_t count, size_t *list, size_t *n) {
    size_t named[MAX_ADAPTERS], kept = 0;
    char seen[2048];
    const char *p = value;
    while (*p == ' ' || *p == '\t') p++;
    size_t whole = strlen(p);
    while (whole > 0 && (p[whole - 1] == ' ' || p[whole - 1] == '\t')) whole--;
    if (whole == 0 || (whole == 10 && strncmp(p, "NoDevFiles", 10) == 0)) { /* no GPU assigned */
        *n = 0;
        return VN_OK;
    }
    while (*p != '\0') {
        const char *end = p;
        while (*end != '\0' && *end != ',') end++;
        const char *s = p, *e = end;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        size_t len = (size_t)(e - s), at = 0;
        char entry[96];
        snprintf(entry, sizeof entry, "%.*s", (int)(len < 90 ? len : 90), s);
        bool digits = len > 0 && len <= 9, negative = len > 1 && s[0] == '-';
        for (size_t k = 0; k < len && digits; k++) digits = isdigit((unsigned char)s[k]) != 0;
        for (size_t k = 1; k < len && negative; k++) negative = isdigit((unsigned char)s[k]) != 0;
        /* CUDA's rule, which the others follow: a negative index ends the list, the GPUs
         * before it stay assigned ("0,2,-1,1" is GPUs 0 and 2; "-1" alone is none). */
        if (negative) break;
        if (digits) {
            at = (size_t)strtoul(entry, NULL, 10);
            if (at >= *n)
                return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                               "%s='%.200s' names %s GPU %zu, but Vulkan shows %zu %s adapter(s) there (adapters "
                               "seen: %s). Fix: run where the scheduler's GPU has a Vulkan driver (in a container, "
                               "NVIDIA's needs NVIDIA_DRIVER_CAPABILITIES to include graphics), or unset %s and "
                               "pass vn.Device(adapter=...) an index or UUID from vn.enumerate_adapters().",
                               as->variable, value, as->vendor, at, *n, as->vendor,
                               adapters_text(adapters, count, seen, sizeof seen), as->variable);
        } else if (as->vendor_id == VN_VENDOR_NVIDIA && len > 4 && strncmp(s, "GPU-", 4) == 0 && is_uuid_text(s + 4, len - 4)) {
            size_t found = uuid_matches(adapters, list, *n, s + 4, len - 4, &at);
            if (found != 1)
                return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                               "%s='%.200s': entry '%s' matches %zu of the %zu NVIDIA adapter(s) Vulkan shows by "
                               "UUID (adapters seen: %s). Fix: name one GPU by its full UUID as nvidia-smi -L prints "
                               "it, or by index; or unset %s and pass vn.Device(adapter=...).",
                               as->variable, value, entry, found, *n,
                               adapters_text(adapters, count, seen, sizeof seen), as->variable);
        } else {
            return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                           "%s='%.200s': entry '%s' is not one vyre_native can match to a Vulkan adapter (it "
                           "takes GPU indices%s; MIG instances, sub-devices and other vendors' UUIDs have no "
                           "Vulkan counterpart; adapters seen: %s). Fix: assign whole GPUs by index, or unset %s "
                           "and pass vn.Device(adapter=...) an index or UUID from vn.enumerate_adapters().",
                           as->variable, value, entry, as->vendor_id == VN_VENDOR_NVIDIA ? " and GPU-<uuid>" : "",
                           adapters_text(adapters, count, seen, sizeof seen), as->variable);
        }
        if (kept < MAX_ADAPTERS) named[kept++] = list[at];
        p = *end == ',' ? end + 1 : end;
    }
    memcpy(list, named, kept * sizeof *list);
    *n = kept;
    return VN_OK;
}

/* An explicit adapter= text: a UUID (with or without "GPU-", or a unique prefix) or a
 * PCI address ("0000:3b:00.0", or "3b:00.0" in domain 0). */
static vn_status find_adapter(const vn_device_info *adapters, size_t count, const char *wanted, int32_t *index) {
    char seen[2048];
    size_t all[MAX_ADAPTERS], n = count < MAX_ADAPTERS ? count : MAX_ADAPTERS, at = 0, found = 0;
    for (size_t i = 0; i < n; i++) all[i] = i;
    const char *u = strncmp(wanted, "GPU-", 4) == 0 ? wanted + 4 : wanted;
    size_t len = strlen(u);
    if (is_uuid_text(u, len)) found = uuid_matches(adapters, all, n, u, len, &at);
    for (size_t i = 0; found == 0 && i < n; i++) {
        const char *pci = adapters[i].pci_bus;
        size_t plen = strlen(pci), wlen = strlen(wanted);
        bool same = plen > 0 && wlen <= plen && (wlen == plen || (wlen + 5 == plen && strncmp(pci, "0000:", 5) == 0));
        for (size_t k = 0; same && k < wlen; k++) same = tolower((unsigned char)wanted[k]) == pci[plen - wlen + k];
        if (same) {
            found = 1;
            at = i;
        }
    }
    if (found != 1)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "adapter '%.120s' matches %zu adapter(s) by UUID or PCI address (adapters seen: %s). Fix: "
                       "pass a whole UUID (\"GPU-<uuid>\" as nvidia-smi -L prints it, or the \"uuid\" of "
                       "vn.enumerate_adapters()), a PCI address (\"0000:3b:00.0\"), or an index.",
                       wanted, found, adapters_text(adapters, count, seen, sizeof seen));
    *index = (int32_t)at;
    return VN_OK;
}

vn_status vn_adapter_choose(const vn_device_info *adapters, size_t count, const char *wanted, int32_t *index) {
    if (index == NULL || (count > 0 && adapters == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_adapter_choose: NULL argument. Fix: pass the adapters and a result.");
    *index = -1;
    if (wanted != NULL) return find_adapter(adapters, count, wanted, index);
    if (count > MAX_ADAPTERS) count = MAX_ADAPTERS;
    bool hidden[MAX_ADAPTERS] = {false}, any_hidden = false;
    int32_t first_named = -1;
    for (size_t v = 0; v < ASSIGNERS; v++) {
        const struct assigner *as = &assigners[v];
        if (v > 0 && assigners[v - 1].vendor_id == as->vendor_id) continue; /* applied with the one before */
        size_t list[MAX_ADAPTERS], n = vendor_adapters(adapters, count, as->vendor_id, list), all = n;
        bool set = false;
        for (size_t w = v; w < ASSIGNERS && assigners[w].vendor_id == as->vendor_id; w++) {
            const char *value = getenv(assigners[w].variable);
            if (value == NULL) continue;
            set = true;
            vn_status st = apply_assigner(&assigners[w], value, adapters, count, list, &n);
            if (st != VN_OK) return st;
        }
        if (!set) continue;
        if (n > 0 && first_named < 0) first_named = (int32_t)list[0];
        /* The vendor's adapters the variables leave out are hidden; other vendors' stay. */
        size_t vendor_list[MAX_ADAPTERS];
        vendor_adapters(adapters, count, as->vendor_id, vendor_list);
        for (size_t i = 0; i < all; i++) {
            bool named = false;
            for (size_t k = 0; k < n && !named; k++) named = list[k] == vendor_list[i];
            if (!named) hidden[vendor_list[i]] = any_hidden = true;
        }
    }
    if (first_named >= 0) {
        *index = first_named;
        return VN_OK;
    }
    if (!any_hidden) return VN_OK; /* nothing assigned, nothing hidden: the default adapter */
    for (size_t i = 0; i < count; i++)
        if (!hidden[i]) {
            *index = (int32_t)i;
            return VN_OK;
        }
    char seen[2048], vars[256];
    size_t used = 0;
    vars[0] = '\0';
    for (size_t v = 0; v < ASSIGNERS; v++) {
        const char *value = getenv(assigners[v].variable);
        if (value != NULL && used < sizeof vars) {
            int k = snprintf(vars + used, sizeof vars - used, "%s%s='%.40s'", used ? ", " : "", assigners[v].variable, value);
            if (k > 0) used += (size_t)k;
        }
    }
    return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                   "%s assign(s) no GPU and leave no other adapter (adapters seen: %s). Fix: ask the scheduler for "
                   "a GPU (Ray: num_gpus=1, or a fraction to share one), or unset the variable.",
                   vars, adapters_text(adapters, count, seen, sizeof seen));
}
