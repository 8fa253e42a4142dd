/* bind_cache.c - a bounded LRU of bind groups per pipeline.
 *
 * Key: the group index (the layout; the cache is per pipeline) and each bound
 * view's (allocation identity, offset, padded size), so two views of one buffer are
 * two entries. Identities are never reused, so a hit can never name a freed buffer;
 * a released buffer's entries are purged so the cache does not keep its GPU memory
 * alive.
 *
 * Lookup is a linear scan comparing a precomputed 64-bit hash first (over an array of
 * the hashes alone, 2 KiB at the default 256 entries): well under a microsecond, far
 * below the cost of creating a bind group, and it keeps eviction (oldest tick, also
 * its own array) trivially correct. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

/* Key words per bound view: allocation identity, offset, padded size. */
enum { VN_KEY_WORDS = 3 };

vn_status vn_bind_cache_init(vn_bind_cache *cache, uint32_t capacity) {
    memset(cache, 0, sizeof *cache);
    cache->entries = calloc(capacity, sizeof *cache->entries);
    cache->hashes = calloc(capacity ? capacity : 1, sizeof *cache->hashes);
    cache->last_used = calloc(capacity ? capacity : 1, sizeof *cache->last_used);
    if (cache->entries == NULL || cache->hashes == NULL || cache->last_used == NULL) {
        free(cache->entries);
        free(cache->hashes);
        free(cache->last_used);
        memset(cache, 0, sizeof *cache);
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate a bind-group cache of %u entries. Fix: free host memory.",
                       capacity);
    }
    cache->capacity = capacity;
    vn_mutex_init(&cache->lock);
    vn_lock_rank_set(&cache->lock, VN_LOCK_BIND_CACHE, "vn_bind_cache.lock");
    return VN_OK;
}

static void entry_clear(vn_bind_cache_entry *e) {
    if (e->bind_group != NULL) {
        wgpu.BindGroupRelease(e->bind_group);
        vn_live_add(VN_LIVE_BIND_GROUP, -1);
    }
    free(e->key);
    memset(e, 0, sizeof *e);
}

void vn_bind_cache_destroy(vn_bind_cache *cache) {
    if (cache->entries == NULL) return;
    for (uint32_t i = 0; i < cache->count; i++) entry_clear(&cache->entries[i]);
    free(cache->entries);
    free(cache->hashes);
    free(cache->last_used);
    cache->entries = NULL;
    vn_mutex_destroy(&cache->lock);
}

static uint64_t hash_key(uint32_t group, const uint64_t *key, uint32_t words) {
    uint64_t h = 1469598103934665603ull ^ group; /* FNV-1a over 64-bit words */
    for (uint32_t i = 0; i < words; i++) {
        h ^= key[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Remove entry i by moving the last entry into its place. */
static void remove_at(vn_bind_cache *cache, uint32_t i) {
    entry_clear(&cache->entries[i]);
    cache->count--;
    if (i != cache->count) {
        cache->entries[i] = cache->entries[cache->count];
        cache->hashes[i] = cache->hashes[cache->count];
        cache->last_used[i] = cache->last_used[cache->count];
        memset(&cache->entries[cache->count], 0, sizeof cache->entries[cache->count]);
    }
}

/* The key of `views` into `key` (3 words a view) and its hash. */
static uint64_t make_key(uint32_t group, const vn_view *views, uint32_t count, uint64_t *key) {
    for (uint32_t i = 0; i < count; i++) {
        key[VN_KEY_WORDS * i] = views[i].buffer->identity;
        key[VN_KEY_WORDS * i + 1] = views[i].offset;
        key[VN_KEY_WORDS * i + 2] = vn_view_extent(&views[i]);
    }
    return hash_key(group, key, VN_KEY_WORDS * count);
}

/* The first index from `from` on whose hash is h, or count: four compares a branch. */
static uint32_t find_hash(const uint64_t *hashes, uint32_t from, uint32_t count, uint64_t h) {
    uint32_t i = from;
    for (; i + 4 <= count; i += 4)
        if ((hashes[i] == h) | (hashes[i + 1] == h) | (hashes[i + 2] == h) | (hashes[i + 3] == h)) break;
    for (; i < count; i++)
        if (hashes[i] == h) return i;
    return count;
}

/* A hit: *out gets a reference to the cached group (counted as a hit); a miss counts
 * nothing and leaves *out alone. */
static bool lookup(vn_bind_cache *cache, uint32_t group, const uint64_t *key, uint32_t count, uint64_t h,
                   WGPUBindGroup *out) {
    vn_mutex_lock(&cache->lock);
    for (uint32_t i = find_hash(cache->hashes, 0, cache->count, h); i < cache->count;
         i = find_hash(cache->hashes, i + 1, cache->count, h)) {
        vn_bind_cache_entry *e = &cache->entries[i];
        if (e->group == group && e->key_len == count && memcmp(e->key, key, VN_KEY_WORDS * count * sizeof *key) == 0) {
            cache->last_used[i] = ++cache->tick;
            cache->hits++;
            wgpu.BindGroupAddRef(e->bind_group);
            vn_live_add(VN_LIVE_BIND_GROUP, 1);
            *out = e->bind_group;
            vn_mutex_unlock(&cache->lock);
            return true;
        }
    }
    vn_mutex_unlock(&cache->lock);
    return false;
}

bool vn_bind_cache_lookup(vn_bind_cache *cache, uint32_t group, const vn_view *views, uint32_t count,
                          WGPUBindGroup *out) {
    uint64_t key[VN_KEY_WORDS * 16];
    return count <= 16 && lookup(cache, group, key, count, make_key(group, views, count, key), out);
}

/* vn_bind_cache_fetch; `look` false: the caller's lookup just missed, so make it now (a
 * group another thread made meanwhile is made twice: two entries of one key, both
 * valid, the older evicted in time). */
static vn_status fetch(vn_bind_cache *cache, WGPUDevice device, WGPUBindGroupLayout layout, const vn_binding *bindings,
                       size_t binding_count, const char *owner, uint32_t group, const vn_view *views, uint32_t count,
                       bool look, WGPUBindGroup *out) {
    uint64_t stack_key[3 * 16];
    uint64_t *key = count <= 16 ? stack_key : malloc(VN_KEY_WORDS * count * sizeof *key);
    if (key == NULL) return vn_fail_no_memory("a bind-group key", VN_KEY_WORDS * count * sizeof *key);
    uint64_t h = make_key(group, views, count, key);
    if (look && lookup(cache, group, key, count, h, out)) {
        if (key != stack_key) free(key);
        return VN_OK;
    }
    vn_mutex_lock(&cache->lock);
    cache->misses++;
    vn_mutex_unlock(&cache->lock);

    /* Create outside the cache lock: bind-group creation is the slow part, and the
     * caller already holds the device's scope lock, which orders it. */
    WGPUBindGroupEntry stack_entries[16];
    WGPUBindGroupEntry *entries = count <= 16 ? stack_entries : calloc(count, sizeof *entries);
    if (entries == NULL) {
        if (key != stack_key) free(key);
        return vn_fail_no_memory("bind-group entries", count * sizeof *entries);
    }
    uint32_t n = 0;
    for (size_t i = 0; i < binding_count; i++) {
        if (bindings[i].group != group) continue;
        WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
        e.binding = bindings[i].binding;
        e.buffer = views[n].buffer->buffer;
        e.offset = views[n].offset;
        e.size = vn_view_extent(&views[n]);
        entries[n++] = e;
    }
    char label[240];
    snprintf(label, sizeof label, "%s @group(%u)", owner, group);
    WGPUBindGroupDescriptor desc = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    desc.label = vn_sv(label);
    desc.layout = layout;
    desc.entryCount = n;
    desc.entries = entries;
    WGPUBindGroup bg = wgpu.DeviceCreateBindGroup(device, &desc);
    if (entries != stack_entries) free(entries);
    if (bg == NULL) {
        if (key != stack_key) free(key);
        return vn_fail(VN_ERROR_INTERNAL, "wgpu-native returned no bind group for @group(%u). Fix: check the buffers.", group);
    }
    vn_live_add(VN_LIVE_BIND_GROUP, 1);

    uint64_t *owned = key;
    if (key == stack_key) {
        owned = malloc(VN_KEY_WORDS * count * sizeof *owned + 1);
        if (owned != NULL) memcpy(owned, key, VN_KEY_WORDS * count * sizeof *owned);
    }
    vn_mutex_lock(&cache->lock);
    if (owned != NULL && cache->capacity > 0) {
        if (cache->count == cache->capacity) {
            uint32_t oldest = 0;
            for (uint32_t i = 1; i < cache->count; i++)
                if (cache->last_used[i] < cache->last_used[oldest]) oldest = i;
            remove_at(cache, oldest);
            cache->evictions++;
        }
        wgpu.BindGroupAddRef(bg); /* the cache's own reference */
        cache->hashes[cache->count] = h;
        cache->last_used[cache->count] = ++cache->tick;
        cache->entries[cache->count++] = (vn_bind_cache_entry){group, count, owned, bg};
        vn_live_add(VN_LIVE_BIND_GROUP, 1);
        owned = NULL;
    }
    vn_mutex_unlock(&cache->lock);
    free(owned); /* not cached (no memory for the key): the caller still gets the group */
    *out = bg;
    return VN_OK;
}

vn_status vn_bind_cache_fetch(vn_bind_cache *cache, WGPUDevice device, WGPUBindGroupLayout layout,
                              const vn_binding *bindings, size_t binding_count, const char *owner, uint32_t group,
                              const vn_view *views, uint32_t count, WGPUBindGroup *out) {
    return fetch(cache, device, layout, bindings, binding_count, owner, group, views, count, true, out);
}

vn_status vn_bind_cache_make(vn_bind_cache *cache, WGPUDevice device, WGPUBindGroupLayout layout,
                             const vn_binding *bindings, size_t binding_count, const char *owner, uint32_t group,
                             const vn_view *views, uint32_t count, WGPUBindGroup *out) {
    return fetch(cache, device, layout, bindings, binding_count, owner, group, views, count, false, out);
}

vn_status vn_bind_cache_get_missed(vn_pipeline *pipeline, uint32_t group, const vn_view *views, uint32_t count,
                                   WGPUBindGroup *out) {
    return vn_bind_cache_make(&pipeline->cache, pipeline->device->device, pipeline->layouts[group],
                              pipeline->bindings, pipeline->binding_count, pipeline->label, group, views, count, out);
}

void vn_bind_cache_forget(vn_bind_cache *cache, uint64_t identity) {
    vn_mutex_lock(&cache->lock);
    for (uint32_t i = 0; i < cache->count;) {
        vn_bind_cache_entry *e = &cache->entries[i];
        bool names = false;
        for (uint32_t k = 0; k < e->key_len && !names; k++) names = e->key[VN_KEY_WORDS * k] == identity;
        if (names) remove_at(cache, i);
        else i++;
    }
    vn_mutex_unlock(&cache->lock);
}
