/* buffer_read.c - the reads of a buffer or a view: blocking (Buffer.read), asynchronous
 * (read_async) and a recording's or dispatch's output. Each is one read of readback.c's
 * primitive, its destination checked by vn_check_destination (readback.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

/* A blocking read of the resolved view v (its buffer held), one time slice at a time
 * (VN_PENDING and *pending as vn_readback says). */
static vn_status view_read(const vn_view *v, void *dst, uint64_t capacity, vn_pending_read **pending) {
    if (pending != NULL) *pending = NULL;
    vn_status st = vn_buffer_check(v->buffer, "buffer.read");
    if (st == VN_OK) st = vn_view_readable(v, "buffer.read");
    if (st != VN_OK) return st;
    st = vn_check_destination("buffer.read", v->size == v->buffer->byte_len ? "the buffer" : "the view", VN_NO_INDEX,
                              dst, capacity, v->size);
    if (st != VN_OK || v->size == 0) return st;
    const vn_submit_guard guard = {vn_buffer_submittable, v->buffer};
    return vn_readback(v->buffer->device, v->buffer->buffer, v->offset, v->size, dst, &guard, pending);
}

vn_status vn_view_read(const vn_view *view, void *dst, uint64_t capacity, vn_pending_read **pending) {
    vn_view v;
    vn_status st;
    VN_VIEW_CALL(st, view, "buffer.read", v, view_read(&v, dst, capacity, pending), pending);
    return st;
}

vn_status vn_buffer_read(vn_buffer *buffer, void *dst, uint64_t capacity, vn_pending_read **pending) {
    vn_view whole = {buffer, 0, 0, 1};
    return vn_view_read(&whole, dst, capacity, pending);
}

/* An asynchronous read of the resolved view v (its buffer held). */
static vn_status view_read_async(const vn_view *v, vn_pending_read **out) {
    vn_buffer *buffer = v->buffer;
    vn_status st = vn_view_readable(v, "read_async");
    if (st != VN_OK) return st;
    const vn_submit_guard guard = {vn_buffer_submittable, buffer};
    return vn_read_start(buffer->device, buffer->buffer, v->offset, v->size, &guard, out);
}

/* The read of a view an entry point holds (vn_dispatch_read_output_async too). */
vn_status vn_view_read_async_held(const vn_view *v, vn_pending_read **out) {
    if (out == NULL) return vn_null_out("read_async", "out");
    *out = NULL;
    vn_status st = vn_buffer_check(v->buffer, "buffer.read_async");
    return st != VN_OK ? st : view_read_async(v, out);
}

vn_status vn_output_read(const vn_view *v, int64_t index, void *dst, uint64_t capacity, uint64_t *written,
                         vn_pending_read **pending) {
    if (written != NULL) *written = 0;
    if (pending != NULL) *pending = NULL;
    vn_status st = vn_check_destination("read_output", "output", index, dst, capacity, v->size);
    if (st != VN_OK) return st;
    if (v->size > 0) {
        /* The readback's copy is queued after every submission before it, the
         * recording's own included, so its completion implies theirs. */
        const vn_submit_guard guard = {vn_buffer_submittable, v->buffer};
        st = vn_readback(v->buffer->device, v->buffer->buffer, v->offset, v->size, dst, &guard, pending);
        if (st != VN_OK) return st;
    }
    if (written != NULL) *written = v->size;
    return VN_OK;
}

vn_status vn_view_read_async(const vn_view *view, vn_pending_read **out) {
    vn_view v;
    vn_status st;
    VN_VIEW_CALL(st, view, "buffer.read_async", v, vn_view_read_async_held(&v, out), out);
    return st;
}

vn_status vn_buffer_read_async(vn_buffer *buffer, vn_pending_read **out) {
    vn_view whole = {buffer, 0, 0, 1};
    return vn_view_read_async(&whole, out);
}
