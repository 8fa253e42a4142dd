/* error.c - the thread-local "last error" slot behind vn_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* One slot per thread, as SQLite keeps one per connection: a failing call on one
 * thread never overwrites the message another thread is about to read. */
static VN_THREAD_LOCAL char last_error[2048];

const char *vn_last_error(void) { return last_error; }

void vn_clear_error(void) { last_error[0] = '\0'; }

vn_status vn_fail(vn_status code, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
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
