/* buffer_copy.c - Device.copy between views of one device at any byte offset and size:
 * its rules (copy_check), and the copy as whole words, the shift kernel or the merge
 * (transfer.c), in memmove order within one buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

typedef struct two_buffers {
    vn_buffer *b[2];
} two_buffers;

static vn_status submittable_two(const void *arg) {
    const two_buffers *p = arg;
    return vn_buffers_submittable(p->b, 2, "a copy");
}

vn_status vn_copy_range(uint64_t src_len, uint64_t src_offset, uint64_t dst_len, uint64_t dst_offset,
                        const uint64_t *nbytes, uint64_t align, uint64_t *n) {
    if (src_offset > src_len || dst_offset > dst_len)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copy offsets %llu (source of %llu bytes) and %llu (destination of %llu "
                       "bytes) must lie inside the source and the destination. Fix: pass a src_offset of at most %llu "
                       "and a dst_offset of at most %llu.",
                       (unsigned long long)src_offset, (unsigned long long)src_len,
                       (unsigned long long)dst_offset, (unsigned long long)dst_len,
                       (unsigned long long)src_len, (unsigned long long)dst_len);
    uint64_t room_s = src_len - src_offset, room_d = dst_len - dst_offset;
    uint64_t room = room_s < room_d ? room_s : room_d;
    uint64_t count = nbytes == NULL ? room : *nbytes;
    if (count > room)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copying %llu bytes runs past the source (%llu bytes from offset %llu) "
                       "or the destination (%llu bytes from offset %llu). Fix: copy at most %llu bytes, or pass "
                       "nbytes=None for as much as fits.",
                       (unsigned long long)count, (unsigned long long)src_len, (unsigned long long)src_offset,
                       (unsigned long long)dst_len, (unsigned long long)dst_offset,
                       (unsigned long long)(room - room % align));
    *n = count;
    return VN_OK;
}

/* Whether destination bytes [d, e) of db start or end inside a word, which a copy then
 * merges (a tail that ends the buffer does not: the rest of its word is padding). */
static bool partial_words(const vn_buffer *db, uint64_t d, uint64_t e) {
    return e > d && (d % 4 != 0 || (e % 4 != 0 && e != db->byte_len));
}

/* The rules of a copy between resolved views (buffers held): offsets inside the views,
 * *nbytes (nbytes NULL: as much as fits) inside both, COPY_SRC on the source, COPY_DST on
 * the destination, and COPY_SRC there too where a partial word is merged. *n gets the
 * byte count, *s0 and *d0 the absolute offsets. */
static vn_status copy_check(const vn_view *src, const vn_view *dst, const uint64_t *nbytes, uint64_t src_offset,
                            uint64_t dst_offset, uint64_t *n, uint64_t *s0, uint64_t *d0) {
    uint64_t count;
    vn_status st = vn_copy_range(src->size, src_offset, dst->size, dst_offset, nbytes, 1, &count);
    if (st != VN_OK) return st;
    if (!(src->buffer->usage & VN_USAGE_COPY_SRC))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copy source (buffer %llu) has usage 0x%llx without COPY_SRC. Fix: create "
                       "it with vn.BufferUsage.COPY_SRC (the default usage has it).",
                       (unsigned long long)src->buffer->identity, (unsigned long long)src->buffer->usage);
    if (!(dst->buffer->usage & VN_USAGE_COPY_DST))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "copy destination (buffer %llu) has usage 0x%llx without COPY_DST. Fix: "
                       "create it with vn.BufferUsage.COPY_DST (the default usage has it).",
                       (unsigned long long)dst->buffer->identity, (unsigned long long)dst->buffer->usage);
    uint64_t d = dst->offset + dst_offset, e = d + count;
    if (partial_words(dst->buffer, d, e)) {
        st = vn_need_copy_src(dst->buffer, "a copy", d, count);
        if (st != VN_OK) return st;
    }
    *n = count;
    *s0 = src->offset + src_offset;
    *d0 = d;
    return VN_OK;
}

/* The chunks of a copy whose bytes shift within their words (or stay in one buffer):
 * every destination word through T, chunk_bytes at a time. *out is allocated. */
static vn_status shifted_chunks(const vn_buffer *src, const vn_buffer *dst, uint64_t s0, uint64_t d0, uint64_t n,
                                uint64_t chunk_bytes, vn_chunk **out, size_t *count) {
    uint64_t first = d0 & ~(uint64_t)3, end = d0 + n;
    size_t total = (size_t)((vn_round_up4(end) - first + chunk_bytes - 1) / chunk_bytes);
    vn_chunk *c = malloc(total * sizeof *c);
    if (c == NULL) return vn_fail_no_memory("a copy's chunks", total * sizeof *c);
    size_t k = 0;
    for (uint64_t w = first; w < end; w += chunk_bytes) {
        uint64_t c0 = w > d0 ? w : d0, c1 = w + chunk_bytes < end ? w + chunk_bytes : end;
        c[k++] = vn_merge_chunk(src->buffer, s0 + (c0 - d0), c0, c1, dst->byte_len);
    }
    *out = c;
    *count = k;
    return VN_OK;
}

/* A copy between resolved views of one device (buffers held). Where source and
 * destination sit at the same offset within their words, whole words are one
 * CopyBufferToBuffer and only a partial head and tail go through T; otherwise (and
 * within one buffer, which CopyBufferToBuffer refuses) every word goes through T, in
 * memmove order. */
static vn_status copy_views(const vn_view *src, const vn_view *dst, const uint64_t *nbytes, uint64_t src_offset,
                            uint64_t dst_offset) {
    vn_buffer *sb = src->buffer, *db = dst->buffer;
    vn_device *dev = db->device;
    if (sb->device != db->device)
        return vn_fail(VN_ERROR_BINDING, "copy source (buffer %llu) and destination (buffer %llu) belong to different "
                       "devices; a GPU copy stays on one. Fix: call Device.copy, which copies between devices through "
                       "the host.", (unsigned long long)sb->identity, (unsigned long long)db->identity);
    uint64_t n = 0, s0 = 0, d0 = 0;
    vn_status st = copy_check(src, dst, nbytes, src_offset, dst_offset, &n, &s0, &d0);
    if (st != VN_OK || n == 0) return st;
    uint64_t d1 = d0 + n;
    st = vn_submit_ready(dev); /* VN_PENDING: nothing queued, call again */
    if (st != VN_OK) return st;
    two_buffers both = {{sb, db}};
    const vn_submit_guard guard = {submittable_two, &both};
    st = vn_life_lock_read_guarded(dev, "a copy", &guard);
    if (st != VN_OK) return st;
    vn_scope_begin(dev);
    struct vn_transfer *x = NULL;
    st = vn_transfer_get(dev, &x); /* its chunk size, and the pipeline made in this scope */
    WGPUCommandBuffer cb = NULL;
    vn_words_copy words = {NULL, 0, 0, 0, NULL, 0, 0};
    vn_chunk c[2];
    size_t count = 0;
    /* Anything but whole words in their places, between two buffers that bind as storage:
     * every word, a partial head and tail included, in one dispatch of the shift kernel
     * (on the H200 a 1 MiB copy at offset 1 took 119-161 µs by whole words and merged
     * ends, 45-46 by the kernel). Else bytes that keep their places: the whole words one
     * CopyBufferToBuffer, the ends merged; bytes that shift: merged through T. */
    bool in_place = s0 % 4 == d0 % 4, whole_words = in_place && !partial_words(db, d0, d1);
    if (st == VN_OK && !whole_words && (words = vn_shifted_words(dev, sb, db, s0, d0, d1, x)).n > 0) {
        st = vn_encode_merge(dev, db->buffer, &words, c, 0, false, NULL, 0, &cb);
    } else if (st == VN_OK && sb != db && in_place) {
        uint64_t m0 = d0 % 4 == 0 ? d0 : (vn_round_up4(d0) < d1 ? vn_round_up4(d0) : d1);
        uint64_t m1 = (d1 & ~(uint64_t)3) > m0 ? d1 & ~(uint64_t)3 : m0;
        /* A tail that ends the destination copies whole: the rest of its word is padding. */
        if (m1 < d1 && d1 == db->byte_len) m1 = vn_round_up4(d1);
        if (m0 > d0) c[count++] = vn_merge_chunk(sb->buffer, s0, d0, m0, db->byte_len);
        if (m1 < d1) c[count++] = vn_merge_chunk(sb->buffer, s0 + (m1 - d0), m1, d1, db->byte_len);
        words = (vn_words_copy){sb->buffer, s0 + (m0 - d0), m0, m1 > m0 ? m1 - m0 : 0, NULL, 0, 0};
        st = vn_encode_merge(dev, db->buffer, &words, c, count, false, NULL, 0, &cb);
    } else if (st == VN_OK) {
        vn_chunk *all = NULL;
        st = shifted_chunks(sb, db, s0, d0, n, x->chunk_bytes, &all, &count);
        if (st == VN_OK) st = vn_encode_merge(dev, db->buffer, NULL, all, count, sb == db && d0 > s0, NULL, 0, &cb);
        free(all);
    }
    st = vn_transfer_submit(dev, "a copy", st, cb);
    vn_life_unlock_read(dev);
    return st;
}

static vn_status device_copy(vn_device *dev, const vn_view *src_view, const vn_view *dst_view, const uint64_t *nbytes,
                             uint64_t src_offset, uint64_t dst_offset, int check_only, uint64_t *resolved) {
    vn_view src, dst = {NULL, 0, 0, 0};
    vn_status st = vn_device_check(dev, "Device.copy");
    if (st == VN_OK) st = vn_view_acquire(src_view, "copy source", &src);
    if (st != VN_OK) return st;
    st = vn_view_acquire(dst_view, "copy destination", &dst);
    if (st == VN_OK && src.buffer->device != dev && dst.buffer->device != dev)
        st = vn_fail(VN_ERROR_BINDING, "Device.copy: neither the source (buffer %llu) nor the destination (buffer %llu) "
                     "belongs to this device. Fix: call copy on the device of one of them.",
                     (unsigned long long)src.buffer->identity, (unsigned long long)dst.buffer->identity);
    if (st == VN_OK && check_only) {
        uint64_t s0 = 0, d0 = 0;
        st = copy_check(&src, &dst, nbytes, src_offset, dst_offset, resolved, &s0, &d0);
    } else if (st == VN_OK) {
        st = copy_views(&src, &dst, nbytes, src_offset, dst_offset);
    }
    if (dst.buffer != NULL) vn_unacquire(dst.buffer);
    vn_unacquire(src.buffer);
    return st;
}

vn_status vn_device_copy(vn_device *device, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                         uint64_t src_offset, uint64_t dst_offset) {
    VN_CALL1(device_copy(device, src, dst, nbytes, src_offset, dst_offset, 0, NULL), device, VN_KIND_DEVICE);
}

vn_status vn_device_copy_check(vn_device *device, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                               uint64_t src_offset, uint64_t dst_offset, uint64_t *resolved) {
    if (resolved == NULL) return vn_null_out("vn_device_copy_check", "resolved");
    VN_CALL1(device_copy(device, src, dst, nbytes, src_offset, dst_offset, 1, resolved), device, VN_KIND_DEVICE);
}
