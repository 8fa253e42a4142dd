/* scopes.c - error scopes around every creating and encoding call: push, work and pop
 * under the device's scope lock (one thread's scope at a time), the captured error as a
 * status and a message, and the backstop for an error that reached no scope. */
#include <stdlib.h>
#include <string.h>

#include "layer_device.h"

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

void vn_scope_catch_uncaptured(WGPUDeviceDescriptor *desc, vn_device *device) {
    desc->uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
    desc->uncapturedErrorCallbackInfo.userdata1 = device;
}

/* What one pop reports: a request record (see request_complete), owned by the device
 * between pops so the encoding path allocates nothing. */
struct vn_scope_result {
    atomic_int state;
    WGPUPopErrorScopeStatus status;
    WGPUErrorType type;
    char message[1536];
};

void vn_scope_results_free(vn_device *device) {
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
    if (vn_request_complete(&r->state)) free(r);
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
        done[i] = vn_request_wait(device->instance, NULL, &results[i]->state, 10.0);
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
