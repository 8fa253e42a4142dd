/* vn_buffer.h - part of the public C API: buffers, views and their reads, writes and
 * copies. vyre_native.h includes it inside its cdef section, after the parts before it,
 * whose types it uses: include vyre_native.h, never this alone. It holds only what that
 * section may (scripts/ffi_build.py reads it in where it is included): no include guard, no
 * preprocessor line but a table's use. */

/* ---- buffers (csrc/resources/buffer.c; reads, writes, copies: buffer_read.c, _write.c, _copy.c) */

/* WGPUBufferUsage bits, their one table csrc/include/usage_bits.h; mirrored by
 * vyre_native.BufferUsage. */
typedef enum vn_buffer_usage {
#define VN_USAGE(name, bit) VN_USAGE_##name = bit,
#include "usage_bits.h"
#undef VN_USAGE
    /* STORAGE|UNIFORM|INDIRECT|COPY_SRC|COPY_DST: serves as any binding, copies both ways */
    VN_USAGE_DEFAULT = 0x1cc
} vn_buffer_usage;

typedef struct vn_buffer_desc {
    uint64_t byte_len;           /* bytes the caller asked for */
    uint64_t allocation_len;     /* byte_len padded to 4, at least 4 */
    uint64_t usage;              /* WGPUBufferUsage bits */
    uint64_t allocation_identity;/* monotonic per process, never reused */
} vn_buffer_desc;

/* A buffer of byte_len bytes; when data is not NULL its first byte_len bytes are
 * the initial contents (copied through a mapping at creation), else zeros. */
vn_status vn_buffer_create(vn_device *device, uint64_t byte_len, uint64_t usage,
                           const void *data, vn_buffer **out);
vn_status vn_buffer_describe(const vn_buffer *buffer, vn_buffer_desc *out);
/* A byte range of a buffer: what binds, copies, clears and reads take wherever they
 * take a buffer. Either size bytes from offset (to_end 0: size is a count like any
 * other, checked as given, at least 1), or, with to_end set, everything from offset to
 * the end of the buffer (size must then be 0): a whole buffer is {buffer, 0, 0, 1}. "To
 * the end" is the flag alone; no value of size means it, so a caller's size is never
 * taken for another. Every function that takes one checks it (vn_view_check's rules) and
 * holds a reference on the buffer for the call; what it records keeps one. */
typedef struct vn_view {
    vn_buffer *buffer;
    uint64_t offset;
    uint64_t size;
    uint32_t to_end;
} vn_view;

/* The rules of a view, checked wherever one is taken: a live buffer; offset within
 * byte_len, and offset + size too (else VN_ERROR_INVALID_ARGUMENT naming both); a size of
 * at least 1 unless to_end (a to_end view of an empty rest is empty), and of 0 with it.
 * Any byte offset and size: writes, reads and copies are byte-exact. *resolved gets the
 * offset and the size in bytes, to_end 0 (the rest resolved to its size); resolved may
 * be NULL. Binding a view also
 * needs the device's min_storage_buffer_offset_alignment /
 * min_uniform_buffer_offset_alignment, and a storage binding a size in whole 4-byte words
 * unless the view ends the buffer (see vn_dispatch_args). */
vn_status vn_view_check(const vn_view *view, vn_view *resolved);
/* Queue a write of nbytes at offset into the view, at any byte offset and size; the
 * write must lie inside the view. It lands before any later submit and after every
 * earlier one; no other byte changes. Whole words go in with wgpuQueueWriteBuffer; a
 * partial head or tail word is merged on the queue by a tiny dispatch (one submit; the
 * buffer then needs COPY_SRC, except for a tail that ends the buffer), and on a CPU
 * adapter whose queue is busy that returns VN_PENDING before anything is queued: call
 * again. */
vn_status vn_view_write(const vn_view *view, uint64_t offset, const void *data, uint64_t nbytes);
/* Copy the view's bytes into dst (capacity >= its size), after all work submitted
 * before the call. Only the view's range is copied off the GPU. When the work is not
 * done within one time slice, returns VN_PENDING with *pending set to the read in
 * flight: finish it with vn_pending_read_finish(*pending, dst, capacity) (VN_PENDING
 * again means call again) and release it with vn_pending_read_release. VN_PENDING with
 * *pending NULL: the read has not started (a CPU adapter's queue runs one submission at
 * a time, and earlier work is still running): call vn_view_read again. pending may be
 * NULL only when the caller takes VN_PENDING as a failure (the read in flight is then
 * dropped, without waiting). */
vn_status vn_view_read(const vn_view *view, void *dst, uint64_t capacity, vn_pending_read **pending);
/* The whole-buffer forms of vn_view_write and vn_view_read. */
vn_status vn_buffer_write(vn_buffer *buffer, uint64_t offset, const void *data, uint64_t nbytes);
vn_status vn_buffer_read(vn_buffer *buffer, void *dst, uint64_t capacity, vn_pending_read **pending);
/* Host memory for a new array a typed read fills (csrc/base/host_blocks.c): *out gets
 * a block of at least nbytes (16-byte aligned, contents undefined), reused from one given
 * back when one fits (at most twice the size), so its pages are in place and the read's
 * copy into it runs at memcpy's speed; VN_ERROR_OUT_OF_MEMORY when the host has none.
 * vn_host_block_give hands a block back (NULL: nothing), once, when nothing uses it: it
 * is kept for a later take while the blocks kept stay within VN_HOST_BLOCKS_KEPT_BYTES
 * (the oldest freed first), else freed. Python takes blocks for arrays of at least
 * VN_HOST_BLOCK_MIN_BYTES (a smaller new array has its pages at hand already). */
typedef enum vn_host_block_bounds {
    VN_HOST_BLOCK_MIN_BYTES = 1048576,
    VN_HOST_BLOCKS_KEPT_BYTES = 268435456
} vn_host_block_bounds;
vn_status vn_host_block_take(uint64_t nbytes, void **out);
/* vn_host_block_take as an allocator (cffi's ffi.new_allocator): the block, or NULL with
 * this thread's last error set. */
void *vn_host_block_alloc(size_t nbytes);
void vn_host_block_give(void *block);
/* Free every block kept for later takes (their memory goes back to the host). */
void vn_host_blocks_free_kept(void);
void vn_buffer_release(vn_buffer *buffer);
/* Queue a copy of *nbytes (nbytes NULL: as much as fits from the offsets; any count, 0
 * and UINT64_MAX included, is checked as the count it is) from src_offset into the src
 * view to dst_offset into the dst view, both buffers of `device`, at any byte range,
 * ordered on the queue as a submit is; no other byte of dst changes. Where both
 * sit at the same offset within their words the whole words are one GPU copy and a
 * partial head or tail word is merged by a tiny dispatch; otherwise, between two buffers
 * with STORAGE usage, one dispatch sets every destination word (a partial one merged in
 * place); otherwise (or within one buffer, where overlapping ranges copy as memmove
 * does) every word goes through a temporary buffer and that dispatch, 4 MiB at a time.
 * A merged word needs COPY_SRC on dst. VN_PENDING as vn_view_write. */
vn_status vn_device_copy(vn_device *device, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                         uint64_t src_offset, uint64_t dst_offset);
/* vn_device_copy's checks alone, for a copy between two devices through the host (src
 * or dst belongs to `device`): *resolved gets the byte count. */
vn_status vn_device_copy_check(vn_device *device, const vn_view *src, const vn_view *dst, const uint64_t *nbytes,
                               uint64_t src_offset, uint64_t dst_offset, uint64_t *resolved);
