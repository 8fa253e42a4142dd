/* buffer.c - GPU buffers: creation with initial data, writes, blocking reads, release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Allocation identity: monotonic and never reused, unlike an address, so a cache
 * keyed by it cannot hand out a bind group that names a freed buffer's successor. */
static atomic_ullong next_identity = 1;

static const uint64_t known_usage = 0x3ff;

uint64_t vn_next_identity(void) { return atomic_fetch_add(&next_identity, 1); }

void vn_buffer_retain(vn_buffer *buffer) { atomic_fetch_add(&buffer->refs, 1); }

vn_status vn_buffer_check(const vn_buffer *buffer, const char *what) {
    if (buffer == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: buffer is NULL. Fix: pass a live Buffer.", what);
    return vn_device_check(buffer->device, what);
}

vn_status vn_buffer_create(vn_device *device, uint64_t byte_len, uint64_t usage, const void *data, vn_buffer **out) {
    vn_status st = vn_device_check(device, "creating a buffer");
    if (st != VN_OK) return st;
    if (out == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_buffer_create: out is NULL. Fix: pass a result pointer.");
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
    uint64_t allocation_len = vn_pad4(byte_len);
    if (byte_len > device->limits.maxBufferSize || allocation_len > device->limits.maxBufferSize)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY,
                       "a buffer of %llu bytes exceeds this device's maxBufferSize of %llu bytes (%s). Fix: split the "
                       "data into buffers of at most %llu bytes.",
                       (unsigned long long)byte_len, (unsigned long long)device->limits.maxBufferSize, device->info.name,
                       (unsigned long long)device->limits.maxBufferSize);
    if (data != NULL && allocation_len > SIZE_MAX)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "a buffer of %llu bytes cannot be mapped on this host. Fix: split the data.",
                       (unsigned long long)byte_len);

    vn_buffer *buf = calloc(1, sizeof *buf);
    if (buf == NULL) return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a buffer record. Fix: free host memory.");

    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
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
        st = vn_submit_begin(device, what);
        if (st == VN_OK) {
            void *mapped = wgpu.BufferGetMappedRange(handle, 0, (size_t)allocation_len);
            if (mapped != NULL) {
                memcpy(mapped, data, (size_t)byte_len);
                memset((char *)mapped + byte_len, 0, (size_t)(allocation_len - byte_len));
            }
            wgpu.BufferUnmap(handle);
            vn_submit_end(device);
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
    atomic_init(&buf->refs, 1);
    vn_device_retain(device);
    buf->device = device;
    buf->buffer = handle;
    buf->byte_len = byte_len;
    buf->allocation_len = allocation_len;
    buf->usage = usage;
    buf->identity = vn_next_identity();
    vn_live_add(VN_LIVE_BUFFER, 1);
    *out = buf;
    return VN_OK;
}

vn_status vn_buffer_describe(const vn_buffer *buffer, vn_buffer_desc *out) {
    if (buffer == NULL || out == NULL)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_buffer_describe: NULL argument. Fix: pass a buffer and a result.");
    out->byte_len = buffer->byte_len;
    out->allocation_len = buffer->allocation_len;
    out->usage = buffer->usage;
    out->allocation_identity = buffer->identity;
    return VN_OK;
}

vn_status vn_buffer_write(vn_buffer *buffer, uint64_t offset, const void *data, uint64_t nbytes) {
    vn_status st = vn_buffer_check(buffer, "buffer.write");
    if (st != VN_OK) return st;
    if (!(buffer->usage & VN_USAGE_COPY_DST))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.write: buffer %llu has usage 0x%llx without COPY_DST. Fix: create it with "
                       "vn.BufferUsage.COPY_DST (the default usage has it).",
                       (unsigned long long)buffer->identity, (unsigned long long)buffer->usage);
    if (offset > buffer->byte_len || nbytes > buffer->byte_len - offset)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.write of %llu bytes at offset %llu runs past the buffer's %llu bytes. Fix: write at "
                       "most byte_len - offset bytes.",
                       (unsigned long long)nbytes, (unsigned long long)offset, (unsigned long long)buffer->byte_len);
    bool ends_buffer = offset + nbytes == buffer->byte_len;
    if (offset % 4 != 0 || (nbytes % 4 != 0 && !ends_buffer))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.write of %llu bytes at offset %llu: GPU copies move whole 4-byte words, so the offset "
                       "must be a multiple of 4 and so must the length unless the write ends the buffer. Fix: align "
                       "offset and length to 4 bytes.",
                       (unsigned long long)nbytes, (unsigned long long)offset);
    if (nbytes == 0) return VN_OK;
    if (data == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "buffer.write: data is NULL. Fix: pass the bytes to write.");
    uint64_t whole = nbytes & ~(uint64_t)3;
    vn_device *dev = buffer->device;
    vn_scope_begin(dev);
    if (whole > 0) wgpu.QueueWriteBuffer(dev->queue, buffer->buffer, offset, data, (size_t)whole);
    if (whole < nbytes) {
        /* A tail of 1-3 bytes at the end of the buffer: the padding bytes after it
         * belong to the allocation only, so writing them as zeros is harmless. */
        uint8_t tail[4] = {0, 0, 0, 0};
        memcpy(tail, (const uint8_t *)data + whole, (size_t)(nbytes - whole));
        wgpu.QueueWriteBuffer(dev->queue, buffer->buffer, offset + whole, tail, 4);
    }
    return vn_scope_end(dev, "buffer.write", VN_ERROR_VALIDATION, "check offset, length and usage.");
}

vn_status vn_buffer_read(vn_buffer *buffer, void *dst, uint64_t capacity, vn_pending_read **pending) {
    vn_status st = vn_buffer_check(buffer, "buffer.read");
    if (st == VN_OK) st = vn_buffers_submittable(&buffer, 1, "buffer.read()");
    if (st != VN_OK) return st;
    if (!(buffer->usage & VN_USAGE_COPY_SRC))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.read: buffer %llu has usage 0x%llx without COPY_SRC, so it cannot be copied out. Fix: "
                       "create it with vn.BufferUsage.COPY_SRC (the default usage has it).",
                       (unsigned long long)buffer->identity, (unsigned long long)buffer->usage);
    if (capacity < buffer->byte_len)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.read into %llu bytes, but the buffer holds %llu. Fix: pass a destination of at least "
                       "%llu bytes.",
                       (unsigned long long)capacity, (unsigned long long)buffer->byte_len,
                       (unsigned long long)buffer->byte_len);
    if (buffer->byte_len == 0) return VN_OK;
    return vn_readback(buffer->device, buffer->buffer, buffer->byte_len, dst, pending);
}

void vn_buffer_release(vn_buffer *buffer) {
    if (buffer == NULL || vn_inherited(buffer->device)) return; /* fork() child: forget it */
    if (atomic_fetch_sub(&buffer->refs, 1) != 1) return;
    /* Cached bind groups naming this buffer would keep its memory alive; drop them. */
    vn_device_forget_buffer(buffer->device, buffer->identity);
    wgpu.BufferRelease(buffer->buffer);
    vn_device_unref(buffer->device);
    free(buffer);
    vn_live_add(VN_LIVE_BUFFER, -1);
}
