/* log.c - wgpu-native's log messages, on their way to Python's logging.
 *
 * wgpu-native calls the log callback on whichever thread logs, often inside one of its
 * own calls made by our C with the GIL released. Calling into Python from there could
 * deadlock against a lock that thread holds, or run during interpreter shutdown, so the
 * callback only copies the message into a bounded ring (dropping the oldest when full,
 * and counting what it dropped). A Python thread blocked in vn_log_next, GIL released,
 * forwards each message to logging.getLogger("vyre_native"). */
#include <stdio.h>
#include <string.h>

#include "layer_base.h"

#define LOG_SLOTS VN_LOG_RING_SLOTS

static struct {
    int level;
    char text[VN_LOG_MESSAGE_BYTES];
} ring[LOG_SLOTS];
static size_t head, count;
static uint64_t dropped;
static vn_mutex lock;
static vn_cond ready;
static vn_once once = VN_ONCE_INIT;

static void init_ring(void) {
    vn_mutex_init(&lock);
    vn_cond_init(&ready);
}

static void on_log(WGPULogLevel level, WGPUStringView message, void *userdata) {
    (void)userdata;
    vn_mutex_lock(&lock);
    if (count == LOG_SLOTS) {
        head = (head + 1) % LOG_SLOTS;
        count--;
        dropped++;
    }
    size_t slot = (head + count) % LOG_SLOTS;
    ring[slot].level = (int)level;
    vn_string_view_copy(message, ring[slot].text, sizeof ring[slot].text);
    count++;
    vn_cond_broadcast(&ready);
    vn_mutex_unlock(&lock);
}

static vn_status check_level(int level) {
    if (level < WGPULogLevel_Off || level > WGPULogLevel_Trace)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "log level %d is not one of 0 (off) to 5 (trace). Fix: pass one of "
                       "those.", level);
    return VN_OK;
}

vn_status vn_log_start(int level) {
    vn_status st = vn_require_library();
    if (st == VN_OK) st = check_level(level);
    if (st != VN_OK) return st;
    vn_once_run(&once, init_ring);
    wgpu.SetLogCallback(on_log, NULL);
    wgpu.SetLogLevel((WGPULogLevel)level);
    return VN_OK;
}

vn_status vn_log_set_level(int level) {
    vn_status st = vn_require_library();
    if (st == VN_OK) st = check_level(level);
    if (st != VN_OK) return st;
    wgpu.SetLogLevel((WGPULogLevel)level);
    return VN_OK;
}

int vn_log_next(double timeout_s, int *level, char *out, size_t capacity, uint64_t *dropped_out) {
    if (level == NULL || out == NULL || capacity == 0 || dropped_out == NULL) return 0;
    vn_once_run(&once, init_ring);
    uint64_t deadline = vn_monotonic_ns() + (uint64_t)(timeout_s > 0 ? timeout_s * 1e9 : 0);
    vn_mutex_lock(&lock);
    for (uint64_t now = vn_monotonic_ns(); count == 0 && now < deadline; now = vn_monotonic_ns())
        vn_cond_wait_ns(&ready, &lock, deadline - now);
    int got = count > 0;
    if (got) {
        *level = ring[head].level;
        snprintf(out, capacity, "%s", ring[head].text);
        head = (head + 1) % LOG_SLOTS;
        count--;
    }
    *dropped_out = dropped;
    dropped = 0;
    vn_mutex_unlock(&lock);
    return got;
}
