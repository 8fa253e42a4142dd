/* host_blocks.c - host memory for the arrays a typed read makes (Buffer.read(dtype),
 * read_output(i, dtype)), kept for the next read when the array is gone.
 *
 * A new block of megabytes is address space with no pages behind it: the read's copy
 * into it faults in every page on first touch, which costs more than the copy itself
 * (64 MiB on lavapipe's machine: 3.5 ms into memory touched before, 8.7 ms into a new
 * numpy array; 13 against 23 ms on the H200's). What a raw-C reader does is copy into a
 * buffer it reuses. A block given back here is kept, up to VN_HOST_BLOCKS_KEPT_BYTES in
 * all, and the next take of a size it holds (not more than twice over) reuses it, pages
 * already in place. Python frees a block only when no array, view or buffer of it is
 * left (the array's base is the block's cffi owner), so a block is never handed out
 * twice at once.
 *
 * Each block starts with a header holding its capacity, so a give needs only the
 * pointer: Python takes a block through a cffi allocator over vn_host_block_alloc and
 * vn_host_block_give, so the block is owned by its cdata from the moment C returns it
 * (no Python step between for a signal handler's exception to orphan it). The lock is a
 * leaf, taken by these entry points alone, from Python, with no other lock held; a fork()
 * waits for it (held across the fork, released on both sides), so the child's pool is
 * whole. */
#include <stdlib.h>
#include <string.h>

#include "layer_base.h"

/* A header of 64 bytes keeps what follows aligned as malloc's memory is (16 bytes). */
#define BLOCK_HEADER 64
#define KEPT_MAX 16

static struct {
    vn_mutex lock;
    void *blocks[KEPT_MAX]; /* oldest first */
    size_t count;
    uint64_t kept_bytes;
} pool;
static vn_once pool_once = VN_ONCE_INIT;

static void pool_lock(void) { vn_mutex_lock(&pool.lock); }
static void pool_unlock(void) { vn_mutex_unlock(&pool.lock); }
static void pool_init(void) {
    vn_mutex_init(&pool.lock);
    vn_at_fork(pool_lock, pool_unlock, pool_unlock);
}

static uint64_t capacity_of(const void *block) {
    uint64_t capacity;
    memcpy(&capacity, (const char *)block - BLOCK_HEADER, sizeof capacity);
    return capacity;
}

static void drop_kept(size_t i) {
    pool.kept_bytes -= capacity_of(pool.blocks[i]);
    memmove(&pool.blocks[i], &pool.blocks[i + 1], (pool.count - i - 1) * sizeof pool.blocks[0]);
    pool.count--;
}

vn_status vn_host_block_take(uint64_t nbytes, void **out) {
    if (out == NULL) return vn_null_out("vn_host_block_take", "out");
    *out = NULL;
    vn_once_run(&pool_once, pool_init);
    /* the kept block that fits with the least to spare, not more than twice the size */
    pool_lock();
    size_t best = pool.count;
    for (size_t i = 0; i < pool.count; i++) {
        uint64_t capacity = capacity_of(pool.blocks[i]);
        if (capacity >= nbytes && capacity / 2 <= nbytes &&
            (best == pool.count || capacity < capacity_of(pool.blocks[best])))
            best = i;
    }
    if (best < pool.count) {
        *out = pool.blocks[best];
        drop_kept(best);
    }
    pool_unlock();
    if (*out != NULL) return VN_OK;
    if (nbytes > SIZE_MAX - BLOCK_HEADER) return vn_fail_no_memory("a read's host array", SIZE_MAX);
    char *base = malloc((size_t)nbytes + BLOCK_HEADER);
    if (base == NULL) return vn_fail_no_memory("a read's host array", (size_t)nbytes + BLOCK_HEADER);
    memcpy(base, &nbytes, sizeof nbytes);
    vn_live_add(VN_LIVE_HOST_BLOCK, 1);
    *out = base + BLOCK_HEADER;
    return VN_OK;
}

void *vn_host_block_alloc(size_t nbytes) {
    void *block = NULL;
    return vn_host_block_take(nbytes, &block) == VN_OK ? block : NULL;
}

static void free_block(void *block) {
    free((char *)block - BLOCK_HEADER);
    vn_live_add(VN_LIVE_HOST_BLOCK, -1);
}

void vn_host_block_give(void *block) {
    if (block == NULL) return;
    vn_once_run(&pool_once, pool_init);
    uint64_t capacity = capacity_of(block);
    if (capacity > VN_HOST_BLOCKS_KEPT_BYTES) {
        free_block(block);
        return;
    }
    void *dropped[KEPT_MAX];
    size_t n_dropped = 0;
    pool_lock();
    /* room for it: the oldest kept blocks go first */
    while (pool.count > 0 && (pool.count == KEPT_MAX || pool.kept_bytes + capacity > VN_HOST_BLOCKS_KEPT_BYTES)) {
        dropped[n_dropped++] = pool.blocks[0];
        drop_kept(0);
    }
    pool.blocks[pool.count++] = block;
    pool.kept_bytes += capacity;
    pool_unlock();
    for (size_t i = 0; i < n_dropped; i++) free_block(dropped[i]); /* outside the lock */
}

void vn_host_blocks_free_kept(void) {
    vn_once_run(&pool_once, pool_init);
    void *kept[KEPT_MAX];
    pool_lock();
    size_t n = pool.count;
    memcpy(kept, pool.blocks, n * sizeof kept[0]);
    pool.count = 0;
    pool.kept_bytes = 0;
    pool_unlock();
    for (size_t i = 0; i < n; i++) free_block(kept[i]);
}

uint64_t vn_debug_host_blocks_kept_bytes(void) {
    vn_once_run(&pool_once, pool_init);
    pool_lock();
    uint64_t kept = pool.kept_bytes;
    pool_unlock();
    return kept;
}
