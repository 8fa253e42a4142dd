/* floor_launches.c - the raw-C floor's one-dispatch rows: pre-record, replay, encode + submit (floor.c says what the floor is). */

#include "floor.h"

int64_t floor_prerecord_hit(floor_ctx *c, uint64_t n, int64_t *samples) {
    WGPUCommandBuffer cbs[BATCH];
    uint64_t k = 0;
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, cbs[k] = encode(c, c->group, &c->fill.out));
        if (++k == BATCH) submit_and_drain(c, cbs, k), k = 0;
    }
    submit_and_drain(c, cbs, k);
    return checked(c, total);
}

/* 2. create a bind group (a distinct output each time) + encode + finish; every
 * BATCH, submit what was recorded and drain (untimed). */
int64_t floor_prerecord_miss(floor_ctx *c, uint64_t n, int64_t *samples) {
    WGPUCommandBuffer cbs[BATCH];
    uint64_t k = 0;
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUBuffer out = c->miss_outs[c->miss_next++ % c->miss_count];
        TIMED(i, {
            /* Both of vyre_native's caches miss: the kernel's group and the fill's. */
            WGPUBindGroup g = make_group(c, c->in, out, c->io_bytes);
            struct fill_bind fb;
            fill_plan(c, out, c->io_bytes, &fb);
            cbs[k] = encode(c, g, &fb);
            W.BindGroupRelease(g); /* the command buffer keeps them alive */
            W.BindGroupRelease(fb.group);
        });
        if (++k == BATCH) submit_and_drain(c, cbs, k), k = 0;
    }
    submit_and_drain(c, cbs, k);
    return checked(c, total);
}

/* 3. submit a pre-encoded command buffer, as the Python side replays: each is
 * encoded (untimed) just before its submit is timed; drain (untimed) every BATCH. */
int64_t floor_replay(floor_ctx *c, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUCommandBuffer cb = encode(c, c->group, &c->fill.out);
        TIMED(i, submit_one(c, cb));
        if ((i + 1) % BATCH == 0) drain(c);
    }
    drain(c);
    return checked(c, total);
}

/* 3b. the same submits back to back: encode BATCH (untimed), time the BATCH
 * submits one after another, drain (untimed). */
int64_t floor_replay_burst(floor_ctx *c, uint64_t n, int64_t *samples) {
    WGPUCommandBuffer cbs[BATCH];
    int64_t total = 0;
    for (uint64_t done = 0; done < n;) {
        uint64_t k = n - done < BATCH ? n - done : BATCH;
        for (uint64_t j = 0; j < k; j++) cbs[j] = encode(c, c->group, &c->fill.out);
        for (uint64_t j = 0; j < k; j++)
            TIMED(done + j, submit_one(c, cbs[j]));
        drain(c);
        done += k;
    }
    return checked(c, total);
}

/* 4. submit a pre-encoded command buffer (encoded untimed) and wait for it. */
int64_t floor_replay_wait(floor_ctx *c, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        WGPUCommandBuffer cb = encode(c, c->group, &c->fill.out);
        TIMED(i, {
            WGPUSubmissionIndex idx = submit_one(c, cb);
            W.DevicePoll(c->device, 1, &idx);
        });
    }
    return checked(c, total);
}

/* 5. encode + submit each dispatch; drain (untimed) every BATCH. */
int64_t floor_encode_submit(floor_ctx *c, uint64_t n, int64_t *samples) {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        TIMED(i, submit_one(c, encode(c, c->group, &c->fill.out)));
        if ((i + 1) % BATCH == 0) drain(c);
    }
    drain(c);
    return checked(c, total);
}

/* ---- one operation a call ----------------------------------------------------------
 * The rows above time each operation inside one C loop, caches warm from the one
 * before. A Python library makes one call across cffi per launch, with the
 * interpreter running between calls; these do one operation a call so that Python
 * times them as it times vyre_native's rows (harness.bench_floor_one_call): the
 * floor any Python caller of wgpu-native can reach. 0, or -1 with floor_last_error. */

/* 1b. encode + finish one dispatch (bind groups made), kept for floor_one_flush. */
int floor_one_prerecord(floor_ctx *c) {
    if (c->one.count == BATCH) return (fail("floor_one_prerecord: %d kept; call floor_one_flush", BATCH), -1);
    c->one.kept[c->one.count++] = encode(c, c->group, &c->fill.out);
    return (int)checked(c, 0);
}

/* 5b. encode + finish + submit one dispatch. */
int floor_one_encode_submit(floor_ctx *c) {
    submit_one(c, encode(c, c->group, &c->fill.out));
    return (int)checked(c, 0);
}

/* Submit what floor_one_prerecord kept, and drain the queue (untimed). */
int floor_one_flush(floor_ctx *c) {
    if (c->one.count > 0) W.QueueSubmitForIndex(c->queue, c->one.count, c->one.kept);
    for (uint32_t k = 0; k < c->one.count; k++) W.CommandBufferRelease(c->one.kept[k]);
    c->one.count = 0;
    drain(c);
    return (int)checked(c, 0);
}
