/* buffer_write.c - Buffer.write and BufferView.write at any byte offset and size: whole
 * words queued with wgpuQueueWriteBuffer, a head or tail word covered in part set on the
 * queue (transfer.c: in place by a tiny dispatch where the buffer binds as storage, else
 * merged through T), and the bound on the bytes a CPU adapter's queue holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

static vn_status submittable_one(const void *buffer) {
    vn_buffer *b = (vn_buffer *)buffer;
    return vn_buffers_submittable(&b, 1, "a write or copy");
}

/* The patch of the word holding bytes [lo, hi) (inside one word) from data. */
static vn_word_patch word_patch(uint64_t lo, uint64_t hi, const uint8_t *data) {
    vn_word_patch p = {lo & ~(uint64_t)3, 0, 0};
    for (uint64_t b = lo; b < hi; b++) {
        uint32_t shift = (uint32_t)(b % 4) * 8;
        p.mask |= 0xffu << shift;
        p.value |= (uint32_t)data[b - lo] << shift;
    }
    return p;
}

/* A write into the resolved view v (its buffer held). Whole words go in with
 * wgpuQueueWriteBuffer; a head or tail word covered in part is merged on the queue. */
static vn_status view_write(const vn_view *v, uint64_t offset, const void *data, uint64_t nbytes) {
    vn_buffer *buffer = v->buffer;
    if (!(buffer->usage & VN_USAGE_COPY_DST))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.write: buffer %llu has usage 0x%llx without COPY_DST. Fix: create it with "
                       "vn.BufferUsage.COPY_DST (the default usage has it).",
                       (unsigned long long)buffer->identity, (unsigned long long)buffer->usage);
    bool whole_buffer = v->offset == 0 && v->size == buffer->byte_len;
    const char *range = whole_buffer ? "buffer" : "view";
    if (offset > v->size)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.write of %llu bytes at offset %llu starts past the end of the %s's %llu bytes. Fix: "
                       "write at an offset of at most %llu.",
                       (unsigned long long)nbytes, (unsigned long long)offset, range, (unsigned long long)v->size,
                       (unsigned long long)v->size);
    if (nbytes > v->size - offset)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT,
                       "buffer.write of %llu bytes at offset %llu runs past the end of the %s's %llu bytes. Fix: "
                       "write at most %llu bytes at that offset.",
                       (unsigned long long)nbytes, (unsigned long long)offset, range, (unsigned long long)v->size,
                       (unsigned long long)(v->size - offset));
    if (nbytes == 0) return VN_OK;
    if (data == NULL) return vn_fail(VN_ERROR_INVALID_ARGUMENT, "buffer.write: data is NULL. Fix: pass the bytes to write.");
    const uint8_t *bytes = data;
    uint64_t at = v->offset + offset, end = at + nbytes, len = buffer->byte_len;
    /* [at, m0): the head, inside one word; [m0, m1): whole words; [m1, end): the tail. */
    uint64_t m0 = at % 4 == 0 ? at : (vn_round_up4(at) < end ? vn_round_up4(at) : end);
    uint64_t m1 = (end & ~(uint64_t)3) > m0 ? end & ~(uint64_t)3 : m0;
    /* A tail that ends the buffer is written whole, zero-padded: the bytes after it are
     * the allocation's padding, which belongs to no one. */
    bool pad_tail = m1 < end && end == len;
    vn_chunk c[2];
    vn_word_patch patch[2];
    size_t count = 0;
    uint8_t host_a[8] = {0};
    uint64_t host_a_bytes = 0;
    if (m0 > at) {
        c[count] = vn_merge_chunk(NULL, 0, at, m0, len);
        memcpy(host_a, bytes, (size_t)(m0 - at));
        patch[count] = word_patch(at, m0, bytes);
        host_a_bytes = 4;
        count++;
    }
    if (m1 < end && !pad_tail) {
        c[count] = vn_merge_chunk(NULL, 0, m1, end, len);
        c[count].a_at = host_a_bytes;
        memcpy(host_a + host_a_bytes, bytes + (m1 - at), (size_t)(end - m1));
        patch[count] = word_patch(m1, end, bytes + (m1 - at));
        host_a_bytes += 4;
        count++;
    }
    vn_device *dev = buffer->device;
    vn_status st = VN_OK;
    if (count > 0) {
        st = vn_need_copy_src(buffer, "buffer.write", at, nbytes);
        /* The merge is a submit: on a CPU adapter it waits for the queue first, before
         * anything is queued (VN_PENDING: call again). */
        if (st == VN_OK) st = vn_submit_ready(dev);
        if (st != VN_OK) return st;
    }
    /* A CPU adapter's flush (below) waits for an idle queue, so writes made while its queue
     * stays busy would pile up staging copies without bound: once twice the flush bound
     * would be queued, the write first waits for the queue (VN_PENDING: call again; nothing
     * of it is queued yet) and sends what is queued. So after any write, the bytes queued
     * are under 2 * VN_WRITE_FLUSH_BYTES, or that one write's own. */
    if (count == 0 && dev->serial_submits && atomic_load(&dev->pending_write_bytes) > 0 &&
        atomic_load(&dev->pending_write_bytes) + nbytes >= 2 * VN_WRITE_FLUSH_BYTES) {
        st = vn_submit_ready(dev);
        if (st == VN_OK) st = vn_device_flush_writes(dev, "buffer.write", NULL);
        if (st != VN_OK) return st;
    }
    /* The life lock's read side: a write is queued work too, so it never lands between
     * the parts of a replay split into several submits (they hold the write side). */
    const vn_submit_guard guard = {submittable_one, buffer};
    st = count > 0 ? vn_life_lock_read_guarded(dev, "buffer.write", &guard) : vn_life_lock_read(dev, "buffer.write");
    if (st != VN_OK) return st;
    vn_scope_begin(dev);
    if (m1 > m0) wgpu.QueueWriteBuffer(dev->queue, buffer->buffer, m0, bytes + (m0 - at), (size_t)(m1 - m0));
    if (pad_tail) {
        uint8_t tail[4] = {0, 0, 0, 0};
        memcpy(tail, bytes + (m1 - at), (size_t)(end - m1));
        wgpu.QueueWriteBuffer(dev->queue, buffer->buffer, m1, tail, 4);
    }
    WGPUCommandBuffer cb = NULL;
    /* The partial words set in place where the buffer binds as storage, else through T. */
    if (count > 0) st = vn_encode_patch(dev, buffer, patch, count, &cb);
    if (count > 0 && st == VN_OK && cb == NULL)
        st = vn_encode_merge(dev, buffer->buffer, NULL, c, count, false, host_a, host_a_bytes, &cb);
    st = vn_transfer_submit(dev, "buffer.write", st, cb);
    vn_life_unlock_read(dev);
    /* On a CPU adapter the flush's submit would block in the driver while earlier work
     * runs: there it waits for a write that finds the queue idle (one poll, no wait). */
    if (st == VN_OK && count == 0 &&
        atomic_fetch_add(&dev->pending_write_bytes, nbytes) + nbytes >= VN_WRITE_FLUSH_BYTES &&
        (!dev->serial_submits || vn_wait(dev, NULL, 0.0, NULL) == VN_OK))
        st = vn_device_flush_writes(dev, "buffer.write", NULL);
    if (st == VN_OK && count > 0) atomic_store(&dev->pending_write_bytes, 0); /* the merge's submit sent them */
    return st;
}

uint64_t vn_debug_queued_write_bytes(const vn_device *device) {
    VN_GET(uint64_t, atomic_load(&device->pending_write_bytes), 0, device, VN_KIND_DEVICE);
}

vn_status vn_view_write(const vn_view *view, uint64_t offset, const void *data, uint64_t nbytes) {
    vn_view v;
    vn_status st;
    VN_VIEW_CALL(st, view, "buffer.write", v, view_write(&v, offset, data, nbytes), NULL);
    return st;
}

vn_status vn_buffer_write(vn_buffer *buffer, uint64_t offset, const void *data, uint64_t nbytes) {
    vn_view whole = {buffer, 0, 0, 1};
    return vn_view_write(&whole, offset, data, nbytes);
}
