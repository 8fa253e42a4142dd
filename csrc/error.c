/* error.c - the thread-local "last error" slot behind vn_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* One slot per thread, as SQLite keeps one per connection: a failing call on one
 * thread never overwrites the message another thread is about to read. */
static VN_THREAD_LOCAL char last_error[2048];
/* Where in WGSL the last failure points (line 0: nowhere); vn_fail resets it. */
static VN_THREAD_LOCAL uint32_t last_line, last_column;

const char *vn_last_error(void) { return last_error; }

int vn_last_error_position(uint32_t *line, uint32_t *column) {
    if (line != NULL) *line = last_line;
    if (column != NULL) *column = last_column;
    return last_line != 0;
}

void vn_set_error_position(uint32_t line, uint32_t column) {
    last_line = line;
    last_column = column;
}

void vn_clear_error(void) {
    last_error[0] = '\0';
    last_line = last_column = 0;
}

vn_status vn_fail(vn_status code, const char *fmt, ...) {
    va_list args;
    last_line = last_column = 0;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return code;
}

vn_status vn_fail_prefixed(vn_status code, const char *prefix) {
    char kept[sizeof last_error];
    memcpy(kept, last_error, sizeof kept);
    snprintf(last_error, sizeof last_error, "%s%s", prefix, kept);
    return code;
}

void vn_string_view_copy(WGPUStringView view, char *buf, size_t cap) {
    if (cap == 0) return;
    size_t len = 0;
    if (view.data != NULL) len = view.length == WGPU_STRLEN ? strlen(view.data) : view.length;
    if (len >= cap) len = cap - 1;
    if (len > 0) memcpy(buf, view.data, len);
    buf[len] = '\0';
}
