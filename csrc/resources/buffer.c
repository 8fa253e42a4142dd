/* buffer.c - GPU buffers: creation with initial data, views, release (reads are
 * buffer_read.c's, writes buffer_write.c's, copies buffer_copy.c's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

static const uint64_t known_usage = 0x3ff;

void vn_buffer_retain(vn_buffer *buffer) { vn_retain(&buffer->obj); }

static void buffer_destroy(vn_object *object) {
    vn_buffer *buffer = (vn_buffer *)object;
    /* Cached bind groups naming this buffer would keep its memory alive; drop them. */
    vn_device_forget_buffer(buffer->device, buffer->identity);
    wgpu.BufferRelease(buffer->buffer);
    vn_device_unref(buffer->device);
    free(buffer);
    vn_live_add(VN_LIVE_BUFFER, -1);
}

void vn_buffer_init(vn_buffer *buffer, vn_device *device) {
    vn_object_init(&buffer->obj, VN_KIND_BUFFER, buffer_destroy);
    /* The allocation identity is the object's id: monotonic, never an address. */
    buffer->identity = buffer->obj.id;
    vn_device_retain(device);
    buffer->device = device;
    vn_live_add(VN_LIVE_BUFFER, 1);
}

vn_status vn_buffer_check(const vn_buffer *buffer, const char *what) {
    if (buffer == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: buffer is NULL. Fix: pass a live Buffer.", what);
    return vn_device_check(buffer->device, what);
}

vn_status vn_buffers_submittable(vn_buffer *const *buffers, size_t count, const char *what) {
    for (size_t i = 0; i < count; i++) {
        const vn_buffer *b = buffers[i];
        if (b == NULL) continue;
        int state = atomic_load(&b->foreign);
        if (state == VN_FOREIGN_USABLE) continue;
        return vn_fail(VN_ERROR_BINDING,
                       "%s uses buffer %llu, which it shares with wgpu-py and which wgpu-py has %s; wgpu-native "
                       "would abort the process on submitting it. Fix: %s",
                       what, (unsigned long long)b->identity, state == VN_FOREIGN_MAPPED ? "mapped" : "destroyed",
                       state == VN_FOREIGN_MAPPED ? "unmap it in wgpu-py (gpu_buffer.unmap()) before using it here."
                                                  : "use a live buffer (record again with it).");
    }
    return VN_OK;
}

vn_status vn_buffer_submittable(const void *buffer) {
    vn_buffer *b = (vn_buffer *)buffer;
    return vn_buffers_submittable(&b, 1, "reading a buffer back");
}

static vn_status buffer_create(vn_device *device, uint64_t byte_len, uint64_t usage, const void *data,
                               vn_buffer **out) {
    vn_status st = vn_device_check(device, "creating a buffer");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_null_out("vn_buffer_create", "out");
    *out = NULL;
    if (usage == 0 || (usage & ~known_usage) != 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer usage 0x%llx is %s. Fix: combine vn.BufferUsage flags (STORAGE, UNIFORM, INDIRECT, "
                       "COPY_SRC, COPY_DST, ...), or leave usage unset for the default.",
                       (unsigned long long)usage, usage == 0 ? "empty" : "not a set of WGPUBufferUsage bits");
    /* WebGPU's mapping rules, checked here so the message can say what to do. */
    if ((usage & VN_USAGE_MAP_READ) && (usage & ~(uint64_t)(VN_USAGE_MAP_READ | VN_USAGE_COPY_DST)))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer usage 0x%llx combines MAP_READ with usages other than COPY_DST, which WebGPU forbids. "
                       "Fix: use MAP_READ | COPY_DST for a readback buffer, or leave usage unset for the default "
                       "(reads go through the C layer's own staging buffers).", (unsigned long long)usage);
    if ((usage & VN_USAGE_MAP_WRITE) && (usage & ~(uint64_t)(VN_USAGE_MAP_WRITE | VN_USAGE_COPY_SRC)))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer usage 0x%llx combines MAP_WRITE with usages other than COPY_SRC, which WebGPU forbids. "
                       "Fix: use MAP_WRITE | COPY_SRC, or leave usage unset for the default.",
                       (unsigned long long)usage);
    /* What is checked is the allocation: byte_len padded to whole words (a byte_len within
     * 3 of UINT64_MAX has no padded size in 64 bits, and is past any limit). */
    uint64_t limit = device->limits.maxBufferSize;
    bool padded_overflows = byte_len > UINT64_MAX - 3;
    uint64_t allocation_len = padded_overflows ? UINT64_MAX : vn_pad4(byte_len);
    if (padded_overflows || allocation_len > limit) {
        char padded[96] = "";
        if (padded_overflows)
            snprintf(padded, sizeof padded, " (past 2**64 - 4, so it has no padded size of whole 4-byte words)");
        else if (allocation_len != byte_len)
            snprintf(padded, sizeof padded, ", padded to whole 4-byte words %llu bytes,",
                     (unsigned long long)allocation_len);
        /* The largest byte_len whose padded size fits: the limit rounded down to a word. */
        uint64_t fit = limit & ~(uint64_t)3;
        return vn_fail(VN_ERROR_OUT_OF_MEMORY,
                       "a buffer of %llu bytes%s exceeds this device's maxBufferSize of %llu bytes (%s). Fix: split the "
                       "data into buffers of at most %llu bytes.",
                       (unsigned long long)byte_len, padded, (unsigned long long)limit, device->info.name,
                       (unsigned long long)fit);
    }
    if (data != NULL && allocation_len > SIZE_MAX)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "a buffer of %llu bytes cannot be mapped on this host. Fix: split the data.",
                       (unsigned long long)byte_len);

    vn_buffer *buf = calloc(1, sizeof *buf);
    if (buf == NULL) return vn_fail_no_memory("a buffer record", sizeof *buf);

    /* Labelled by identity, so wgpu's own messages name the buffer as ours do. */
    uint64_t identity = vn_next_identity();
    char label[40];
    snprintf(label, sizeof label, "vn buffer %llu", (unsigned long long)identity);
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.label = vn_sv(label);
    desc.usage = usage;
    desc.size = allocation_len;
    /* Initial data goes in through a mapping at creation: one memcpy, no staging
     * buffer and no queue write. */
    desc.mappedAtCreation = data != NULL;
    char what[160];
    snprintf(what, sizeof what, "creating a buffer of %llu bytes with usage 0x%llx", (unsigned long long)byte_len,
             (unsigned long long)usage);
    vn_scope_begin(device);
    WGPUBuffer handle = wgpu.DeviceCreateBuffer(device->device, &desc);
    st = vn_scope_end(device, what, VN_ERROR_VALIDATION, "check the usage combination and the size.");
    if (st == VN_OK && handle == NULL)
        st = vn_fail(VN_ERROR_OUT_OF_MEMORY, "%s: wgpu-native returned no buffer. Fix: free GPU memory.", what);
    /* Map only a buffer known to be valid, and only while the device cannot be
     * destroyed under us: GetMappedRange on an invalid or destroyed buffer aborts. */
    if (st == VN_OK && data != NULL) {
        st = vn_life_lock_read(device, what);
        if (st == VN_OK) {
            void *mapped = wgpu.BufferGetMappedRange(handle, 0, (size_t)allocation_len);
            if (mapped != NULL) {
                memcpy(mapped, data, (size_t)byte_len);
                memset((char *)mapped + byte_len, 0, (size_t)(allocation_len - byte_len));
            }
            wgpu.BufferUnmap(handle);
            vn_life_unlock_read(device);
            if (mapped == NULL)
                st = vn_fail(VN_ERROR_OUT_OF_MEMORY, "%s: the new buffer could not be mapped for its initial data. "
                             "Fix: free GPU memory or upload smaller buffers.", what);
        }
    }
    if (st != VN_OK) {
        if (handle != NULL) wgpu.BufferRelease(handle);
        free(buf);
        return st;
    }
    vn_buffer_init(buf, device);
    buf->buffer = handle;
    buf->byte_len = byte_len;
    buf->allocation_len = allocation_len;
    buf->usage = usage;
    /* The id drawn for the label before the buffer existed (from the same sequence as
     * every object id, so still unique): wgpu's messages and ours name one number. */
    buf->obj.id = buf->identity = identity;
    *out = buf;
    return VN_OK;
}

vn_status vn_buffer_create(vn_device *device, uint64_t byte_len, uint64_t usage, const void *data, vn_buffer **out) {
    VN_CALL1_OUT(buffer_create(device, byte_len, usage, data, out), out, device, VN_KIND_DEVICE);
}

vn_status vn_buffer_create_held(vn_device *device, uint64_t byte_len, uint64_t usage, const void *data,
                                vn_buffer **out) {
    return buffer_create(device, byte_len, usage, data, out);
}

static vn_status buffer_describe(const vn_buffer *buffer, vn_buffer_desc *out) {
    if (out == NULL) return vn_null_out("vn_buffer_describe", "out");
    out->byte_len = buffer->byte_len;
    out->allocation_len = buffer->allocation_len;
    out->usage = buffer->usage;
    out->allocation_identity = buffer->identity;
    return VN_OK;
}

vn_status vn_buffer_describe(const vn_buffer *buffer, vn_buffer_desc *out) {
    VN_CALL1(buffer_describe(buffer, out), buffer, VN_KIND_BUFFER);
}

/* The Fix of a view that does not fit: the largest size at offset that would, or, where
 * none would, the offsets that leave room. */
static void view_fix(uint64_t offset, uint64_t len, char *buf, size_t cap) {
    if (offset < len)
        snprintf(buf, cap, "at offset %llu, pass nbytes of at most %llu", (unsigned long long)offset,
                 (unsigned long long)(len - offset));
    else if (len > 0)
        snprintf(buf, cap, "pass an offset below %llu (the buffer's byte_len), and nbytes of at most byte_len - offset",
                 (unsigned long long)len);
    else
        snprintf(buf, cap, "a buffer of 0 bytes has no range to view: pass the buffer itself");
}

vn_status vn_view_resolve(const vn_view *view, const char *what, vn_view *out) {
    vn_status st = vn_buffer_check(view->buffer, what);
    if (st != VN_OK) return st;
    const vn_buffer *b = view->buffer;
    uint64_t offset = view->offset, len = b->byte_len;
    char fix[128];
    if (view->to_end && view->size != 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s: a view of buffer %llu runs to its end (to_end) and also names a size of %llu bytes. "
                       "Fix: pass size 0 with to_end, or clear to_end to give a size.", what,
                       (unsigned long long)b->identity, (unsigned long long)view->size);
    if (offset > len) {
        view_fix(offset, len, fix, sizeof fix);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s: a view at offset %llu starts past the end of buffer %llu, which has %llu bytes. Fix: %s.",
                       what, (unsigned long long)offset, (unsigned long long)b->identity, (unsigned long long)len, fix);
    }
    if (!view->to_end && view->size > len - offset) {
        view_fix(offset, len, fix, sizeof fix);
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s: a view of %llu bytes at offset %llu runs past the end of buffer %llu, which has %llu "
                       "bytes. Fix: %s.", what, (unsigned long long)view->size, (unsigned long long)offset,
                       (unsigned long long)b->identity, (unsigned long long)len, fix);
    }
    if (!view->to_end && view->size == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "%s: a view of 0 bytes (at offset %llu of buffer %llu) has nothing to bind, copy or read. Fix: "
                       "pass nbytes >= 1.", what, (unsigned long long)offset, (unsigned long long)b->identity);
    /* Any byte range: transfers handle partial words (transfer.c, readback.c); what a
     * binding needs beyond it (offset alignment, a storage size in whole words) is
     * checked where the view binds (bind_checks.c). */
    out->buffer = view->buffer;
    out->offset = offset;
    out->size = view->to_end ? len - offset : view->size;
    out->to_end = 0;
    return VN_OK;
}

vn_status vn_view_acquire(const vn_view *view, const char *what, vn_view *out) {
    out->buffer = NULL;
    if (view == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: the view is NULL. Fix: pass a buffer or a view.", what);
    vn_object *held;
    vn_status st = vn_acquire(view->buffer, VN_KIND_BUFFER, what, &held);
    if (st != VN_OK) return st;
    vn_view translated = {(vn_buffer *)held, view->offset, view->size, view->to_end};
    st = vn_view_resolve(&translated, what, out);
    if (st != VN_OK) {
        vn_unacquire(held);
        out->buffer = NULL;
    }
    return st;
}

vn_status vn_view_check(const vn_view *view, vn_view *resolved) {
    vn_view v;
    vn_status st = vn_view_acquire(view, "buffer.view", &v);
    if (st != VN_OK) return st;
    vn_unacquire(v.buffer);
    if (resolved != NULL) {
        *resolved = v;
        resolved->buffer = view->buffer; /* the caller's id, not the object */
    }
    return VN_OK;
}

void vn_buffer_release(vn_buffer *buffer) { vn_id_release(buffer, VN_KIND_BUFFER); }
