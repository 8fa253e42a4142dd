/* wgpu_errors.c - what a wgpu error means: the status of an error by its type and
 * message (wgpu-native 29 reports a failed allocation and a lost device with the
 * Validation type, so the message decides). */
#include <ctype.h>
#include <string.h>

#include "layer_device.h"

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
