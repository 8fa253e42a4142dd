/* loader.c - finds wgpu-native at run time (vn_dl_open + vn_dl_sym into one table).
 *
 * The library ships inside the `wgpu` wheel without a SONAME, so linking against it
 * by rpath is fragile; loading the very file wgpu-py loads also shares one copy of
 * wgpu-native with wgpu-py in the same process. */
#include <stdio.h>
#include <string.h>

#include "layer_base.h"

#ifndef VN_EXPECTED_WGPU_VERSION
#error "VN_EXPECTED_WGPU_VERSION must be defined by the build (CMakeLists.txt)"
#endif
/* pyproject.toml's pin of wgpu, "wgpu==X.Y.Z" (scripts/ffi_build.py --wgpu-info). */
#ifndef VN_WGPU_REQUIREMENT
#error "VN_WGPU_REQUIREMENT must be defined by the build (CMakeLists.txt)"
#endif

struct vn_wgpu_table wgpu;

static vn_once load_once = VN_ONCE_INIT;
static const char *load_path;
static vn_status load_status = VN_ERROR_LIBRARY;
static char load_message[1024] = "wgpu-native was never loaded. Fix: import vyre_native, which loads it.";
static uint32_t loaded_version;

static void version_text(uint32_t v, char *buf, size_t cap) {
    snprintf(buf, cap, "%u.%u.%u.%u", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
}

/* A name with a directory part names a file; a bare one is looked up by the system. */
static bool names_a_file(const char *path) {
#ifdef _WIN32
    return strpbrk(path, "/\\:") != NULL;
#else
    return strchr(path, '/') != NULL;
#endif
}

static void load_library(void) {
    /* dlerror's text names the file: room for a whole path (PATH_MAX) and its reason,
     * which vn_format then shortens in the middle, never at the end. */
    char why[4096 + 512];
    uint64_t size = 0;
    /* Before the system loader sees it: a truncated file kills the process inside it.
     * A bare file name is the loader's to look up in its search path, not a file here. */
    if (names_a_file(load_path) && !vn_library_file_check(load_path, &size, why, sizeof why)) {
        char sized[40] = "";
        if (size != UINT64_MAX) snprintf(sized, sizeof sized, " (%llu bytes)", (unsigned long long)size);
        vn_format(load_message, sizeof load_message,
                 "could not load wgpu-native from '%s'%s: %s. Fix: reinstall the pinned wgpu package (pip install "
                 "--force-reinstall '" VN_WGPU_REQUIREMENT "') or point WGPU_LIB_PATH at a complete copy of its "
                 "wgpu_native library file.",
                 load_path, sized, why);
        return;
    }
    /* A library refused below stays loaded: it may be wgpu-py's copy too, and the
     * table of a failed load is never called. */
    void *handle = vn_dl_open(load_path, why, sizeof why);
    if (handle == NULL) {
        vn_format(load_message, sizeof load_message,
                 "could not load wgpu-native from '%s': %s. Fix: install the pinned wgpu package "
                 "(pip install '" VN_WGPU_REQUIREMENT "') or point WGPU_LIB_PATH at its wgpu_native library file.",
                 load_path, why);
        return;
    }
#define VN_WGPU_FN(name)                                                                            \
    wgpu.name = (__typeof__(wgpu.name))vn_dl_sym(handle, "wgpu" #name);                             \
    if (wgpu.name == NULL) {                                                                        \
        vn_format(load_message, sizeof load_message,                                                 \
                 "'%s' has no symbol wgpu" #name ": it is not the wgpu-native this package was "    \
                 "built for. Fix: install the pinned wgpu package (pip install '"                   \
                 VN_WGPU_REQUIREMENT "') or unset WGPU_LIB_PATH.",                                  \
                 load_path);                                                                        \
        return;                                                                                     \
    }
#include "wgpu_functions.h"
#undef VN_WGPU_FN
    loaded_version = wgpu.GetVersion();
    if (loaded_version != VN_EXPECTED_WGPU_VERSION) {
        char got[32], want[32];
        version_text(loaded_version, got, sizeof got);
        version_text(VN_EXPECTED_WGPU_VERSION, want, sizeof want);
        vn_format(load_message, sizeof load_message,
                 "wgpu-native at '%s' is version %s, but vyre_native was compiled against the "
                 "headers of %s, whose C ABI differs between releases. Fix: install the wgpu package "
                 "this build pins (pip install '" VN_WGPU_REQUIREMENT "'), or rebuild vyre_native against "
                 "the installed one.",
                 load_path, got, want);
        return;
    }
    load_status = VN_OK;
    load_message[0] = '\0';
}

vn_status vn_library_load(const char *path) {
    if (path == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "library path is NULL. Fix: pass the path of libwgpu_native.");
    load_path = path;
    vn_once_run(&load_once, load_library);
    return vn_require_library();
}

vn_status vn_require_library(void) {
    if (load_status != VN_OK) return vn_fail(load_status, "%s", load_message);
    return VN_OK;
}

uint32_t vn_library_version(void) { return loaded_version; }

uint32_t vn_expected_version(void) { return VN_EXPECTED_WGPU_VERSION; }

const char *vn_wgpu_requirement(void) { return VN_WGPU_REQUIREMENT; }
