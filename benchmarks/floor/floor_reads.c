/* floor_reads.c - the raw-C floor's readbacks: one read, a borrowed dispatch, reads in flight (floor.c says what the floor is). */

#include "floor.h"

struct map_result {
    atomic_int done;
    WGPUMapAsyncStatus status;
};

static void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
    (void)message;
    (void)u2;
    struct map_result *r = u1;
    r->status = status;
    atomic_store(&r->done, 1);
}

/* Map `nbytes` of `staging` for reading once submission `idx` is done: 0, or -1
 * with the message. */
int map_after(floor_ctx *c, WGPUBuffer staging, uint64_t nbytes, WGPUSubmissionIndex idx) {
    struct map_result m = {0};
    WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
    info.mode = WGPUCallbackMode_AllowProcessEvents;
    info.callback = on_mapped;
    info.userdata1 = &m;
    W.BufferMapAsync(staging, WGPUMapMode_Read, 0, (size_t)nbytes, info);
    W.DevicePoll(c->device, 1, &idx);
    if (!wait_flag(c, &m.done, 60.0) || m.status != WGPUMapAsyncStatus_Success) {
        fail("mapping a staging buffer failed (status %d)", (int)m.status);
        return -1;
    }
    return 0;
}

/* The float32 sum of `nbytes` at p, eight partial sums (as a vectorised reduction adds):
 * the sum rows' floor of reading every byte once more. */
static volatile float sum_sink;
static void sum_f32(const void *p, uint64_t nbytes) {
    const float *f = p;
    uint64_t n = nbytes / 4;
    float acc[8] = {0};
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += f[i + k];
    for (; i < n; i++) acc[0] += f[i];
    sum_sink = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* Copy src to the staging buffer, submit, map, wait, memcpy to dst (none when dst is
 * NULL: the floor of a zero-copy read, whose mapped pointer is the result), with `sum`
 * the float32 sum of what was read (dst, or the mapped range), unmap. */
static int readback(floor_ctx *c, WGPUBuffer src, WGPUBuffer staging, uint64_t nbytes, void *dst, int sum) {
    WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
    W.CommandEncoderCopyBufferToBuffer(enc, src, 0, staging, 0, nbytes);
    if (map_after(c, staging, nbytes, finish_submit(c, enc)) < 0) return -1;
    const void *p = W.BufferGetConstMappedRange(staging, 0, (size_t)nbytes);
    if (p == NULL) {
        W.BufferUnmap(staging);
        fail("the mapped staging buffer has no range");
        return -1;
    }
    if (dst != NULL) memcpy(dst, p, (size_t)nbytes);
    if (sum) sum_f32(dst != NULL ? dst : p, nbytes);
    W.BufferUnmap(staging);
    return 0;
}

/* 6/7. read the small (which=0) or big (which=1) source back through its reused
 * staging buffer; into the reused host buffer (reuse=1) or a fresh malloc each
 * time (reuse=0, freed after the copy, as a new bytes object would be); reuse=2:
 * no host copy at all, only the staging copy and its map (a zero-copy read's floor).
 * reuse + 4 (FLOOR_READ_SUM): the same, then the float32 sum of what was read (the
 * floor of a read followed by arr.sum()). */
int64_t floor_read(floor_ctx *c, int which, uint64_t n, int reuse, int64_t *samples) {
    which = which ? 1 : 0;
    int sum = (reuse & 4) != 0;
    reuse &= 3;
    uint64_t nbytes = c->read_bytes[which];
    int64_t total = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        TIMED(i, {
            void *dst = reuse == 2 ? NULL : reuse ? c->read_dst[which] : malloc(nbytes);
            rc = dst == NULL && reuse != 2 ? (fail("out of host memory"), -1)
                                           : readback(c, c->read_src[which], c->staging[which], nbytes, dst, sum);
            if (!reuse) free(dst);
        });
    }
    return rc < 0 ? -1 : checked(c, total);
}

/* 8. a borrowed dispatch end to end: upload the host bytes into a new buffer
 * (mapped at creation), a new output, a new bind group, encode + submit, then
 * read the output back (its own copy + submit, as vyre_native and wgpu-py do) into
 * a fresh host buffer, and release everything. */
int64_t floor_borrowed(floor_ctx *c, const void *host, uint64_t nbytes, uint64_t n, int64_t *samples) {
    if (nbytes != c->io_bytes) {
        fail("floor_borrowed: %llu host bytes, the floor's kernel buffers hold %llu", (unsigned long long)nbytes,
             (unsigned long long)c->io_bytes);
        return -1;
    }
    const WGPUBufferUsage io = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    int64_t total = 0;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        TIMED(i, {
            WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
            d.size = nbytes;
            d.usage = io;
            d.mappedAtCreation = 1;
            WGPUBuffer in = W.DeviceCreateBuffer(c->device, &d);
            memcpy(W.BufferGetMappedRange(in, 0, (size_t)nbytes), host, (size_t)nbytes);
            W.BufferUnmap(in);
            WGPUBuffer out = make_buffer(c, nbytes, io);
            WGPUBindGroup g = make_group(c, in, out, nbytes);
            struct fill_bind fb;
            fill_plan(c, out, nbytes, &fb);
            WGPUCommandBuffer cb = encode(c, g, &fb);
            W.BindGroupRelease(fb.group);
            submit_one(c, cb);
            void *dst = malloc(nbytes);
            rc = dst == NULL ? -1 : readback(c, out, c->staging[0], nbytes, dst, 0);
            if (rc == 0 && i == 0) memcpy(c->read_dst[0], dst, (size_t)nbytes); /* for floor_result() */
            free(dst);
            W.BindGroupRelease(g);
            W.BufferRelease(in);
            W.BufferRelease(out);
        });
    }
    return rc < 0 ? -1 : checked(c, total);
}

/* The first bytes floor_borrowed read back (a correctness check for the caller). */
int floor_result(floor_ctx *c, void *dst, uint64_t nbytes) {
    if (nbytes > c->read_bytes[0]) return -1;
    memcpy(dst, c->read_dst[0], (size_t)nbytes);
    return 0;
}

/* The host's memcpy of the big readback size into the reused destination: the
 * ceiling on any readback throughput. */
int64_t floor_memcpy(floor_ctx *c, uint64_t n) {
    if (c->memcpy_src == NULL) {
        c->memcpy_src = malloc(c->read_bytes[1]);
        if (c->memcpy_src == NULL) {
            fail("out of host memory");
            return -1;
        }
        memset(c->memcpy_src, 2, c->read_bytes[1]);
    }
    int64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        memcpy(c->read_dst[1], c->memcpy_src, (size_t)c->read_bytes[1]);
        __asm__ __volatile__("" ::: "memory");
    }
    return now_ns() - t0;
}


int64_t floor_read_parts(floor_ctx *c, uint32_t parts, uint64_t n, int64_t *samples) {
    enum { MAX_PARTS = 64 };
    WGPUBuffer *staging = c->part_staging;
    uint64_t slice = c->read_bytes[1] / parts;
    if (parts == 0 || parts > MAX_PARTS || slice % 4 != 0) {
        fail("floor_read_parts: %u parts of %llu bytes is not supported", parts, (unsigned long long)c->read_bytes[1]);
        return -1;
    }
    if (c->part_bytes != slice) {
        for (uint32_t k = 0; k < MAX_PARTS; k++)
            if (staging[k] != NULL) W.BufferRelease(staging[k]), staging[k] = NULL;
        for (uint32_t k = 0; k < parts; k++)
            staging[k] = make_buffer(c, slice, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
        c->part_bytes = slice;
    }
    int64_t total = 0;
    struct map_result maps[MAX_PARTS];
    for (uint64_t i = 0; i < n; i++) {
        int failed = 0;
        TIMED(i, {
            WGPUCommandEncoder enc = W.DeviceCreateCommandEncoder(c->device, NULL);
            for (uint32_t k = 0; k < parts; k++)
                W.CommandEncoderCopyBufferToBuffer(enc, c->read_src[1], k * slice, staging[k], 0, slice);
            WGPUSubmissionIndex idx = finish_submit(c, enc);
            for (uint32_t k = 0; k < parts; k++) {
                memset(&maps[k], 0, sizeof maps[k]);
                WGPUBufferMapCallbackInfo info = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
                info.mode = WGPUCallbackMode_AllowProcessEvents;
                info.callback = on_mapped;
                info.userdata1 = &maps[k];
                W.BufferMapAsync(staging[k], WGPUMapMode_Read, 0, (size_t)slice, info);
            }
            W.DevicePoll(c->device, 1, &idx);
            for (uint32_t k = 0; k < parts; k++) {
                if (!wait_flag(c, &maps[k].done, 60.0) || maps[k].status != WGPUMapAsyncStatus_Success) {
                    failed = 1;
                    continue;
                }
                const void *p = W.BufferGetConstMappedRange(staging[k], 0, (size_t)slice);
                if (p != NULL) memcpy((char *)c->read_dst[1] + k * slice, p, (size_t)slice);
                else failed = 1;
                W.BufferUnmap(staging[k]);
            }
        });
        if (failed) {
            fail("mapping a slice's staging buffer failed");
            return -1;
        }
    }
    return checked(c, total);
}
