/* batch.c - Device.submit(work): recordings and sequences, each once, in order, in one
 * command buffer, or past one submit's bound in parts, as one unit. The items are
 * translated and held, their devices checked and their sequences locked in one order
 * for the call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_work.h"

typedef struct batch {
    const vn_work *work;
    size_t count;
} batch;

static uint32_t batch_passes(const void *what, uint32_t n, vn_timing *t) {
    const batch *b = what;
    (void)n;
    return vn_batch_passes(b->work, b->count, t);
}

static void encode_batch(const void *what, WGPUCommandEncoder enc, uint32_t n, vn_timing *t) {
    const batch *b = what;
    (void)n;
    vn_batch_encode(b->work, b->count, enc, t);
}

static vn_status batch_submittable(const void *what) {
    const batch *b = what;
    vn_status st = VN_OK;
    for (size_t i = 0; i < b->count && st == VN_OK; i++)
        st = b->work[i].recording != NULL ? vn_recording_submittable(b->work[i].recording)
                                          : vn_sequence_submittable(b->work[i].sequence);
    return st;
}

static const vn_encode_job batch_job = {batch_passes, encode_batch, batch_submittable};

/* ---- batched submits in several parts ----------------------------------------------- */

static size_t item_steps(const vn_work *w) { return w->recording != NULL ? 1 : w->sequence->count; }

/* The next `steps` steps of the batch from the cursor on, in order, into enc. A part
 * may begin or end inside a sequence: its steps are encoded as one replay of it would
 * encode them (vn_steps_encode), a new pass at the part's start. */
typedef struct batch_cursor {
    const batch *b;
    size_t item, step; /* where the next part starts: step `step` of item `item` */
} batch_cursor;

static void encode_next_batch_steps(void *work, WGPUCommandEncoder enc, uint64_t steps) {
    batch_cursor *c = work;
    vn_timing none;
    memset(&none, 0, sizeof none);
    while (c->item < c->b->count) {
        const vn_work *w = &c->b->work[c->item];
        size_t len = item_steps(w), take = len - c->step < steps ? len - c->step : (size_t)steps;
        if (take > 0) {
            if (w->recording != NULL) vn_recording_encode(w->recording, enc, 1, &none);
            else vn_steps_encode(w->sequence, enc, c->step, c->step + take, &none);
        }
        c->step += take;
        steps -= take;
        if (c->step < len) return; /* the part ends inside this item */
        c->item++;
        c->step = 0;
        if (steps == 0) return;
    }
}

/* A batch of more than VN_MAX_LAUNCHES_PER_SUBMIT steps, as a replay(n) past the bound
 * goes: parts of at most that many steps, at most VN_MAX_SUBMITS_IN_FLIGHT of them
 * running (vn_submit_parts waits, in C, for the part before last). */
static vn_status submit_in_parts(vn_device *dev, const batch *b, uint64_t total, vn_submission **out) {
    static const char label[] = "device.submit";
    const vn_submit_guard guard = {batch_submittable, b};
    vn_status st = vn_device_check(dev, label);
    if (st == VN_OK) st = vn_submit_guard_check(&guard);
    if (st == VN_OK) st = vn_submit_ready(dev); /* VN_PENDING: nothing encoded, call again */
    if (st != VN_OK) return st;
    batch_cursor cursor = {b, 0, 0};
    const vn_parts_job job = {label, "submit", &guard,
                           {VN_MAX_LAUNCHES_PER_SUBMIT, VN_MAX_LAUNCHES_PER_SUBMIT, false}, true,
                           encode_next_batch_steps, &cursor};
    return vn_submit_parts(dev, &job, total, out);
}

/* Lock order for a batch: its sequences' locks, each once, in ascending object id
 * (layer_object.h, "Lock order"), so submit([a, b]) and submit([b, a]) on two threads
 * take them in the same order. `seqs` gets the distinct sequences, sorted; returns
 * how many. */
static int by_id(const void *a, const void *b) {
    uint64_t x = (*(vn_sequence *const *)a)->obj.id, y = (*(vn_sequence *const *)b)->obj.id;
    return (x > y) - (x < y);
}

static size_t distinct_sequences(const vn_work *work, size_t count, vn_sequence **seqs) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (work[i].sequence != NULL) seqs[n++] = work[i].sequence;
    qsort(seqs, n, sizeof *seqs, by_id);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || seqs[kept - 1] != seqs[i]) seqs[kept++] = seqs[i];
    return kept;
}

static void unacquire_work(const vn_work *held, size_t count) {
    for (size_t i = 0; i < count; i++)
        vn_unacquire(held[i].recording != NULL ? (const void *)held[i].recording : (const void *)held[i].sequence);
}

/* Translate every item of the caller's work (ids) into held[i] (its object, checked for
 * its kind and retained for the call). On failure none stays held. */
static vn_status acquire_work(const vn_work *work, size_t count, vn_work *held) {
    for (size_t i = 0; i < count; i++) {
        const vn_work *w = &work[i];
        vn_status st;
        if ((w->recording == NULL) == (w->sequence == NULL)) {
            st = vn_fail(VN_ERROR_INVALID_ARGUMENT, "work item %zu must be exactly one recording or sequence. Fix: "
                         "pass vn.Recording or vn.Sequence objects.", i);
        } else {
            char fn[64];
            snprintf(fn, sizeof fn, "device.submit work item %zu", i);
            vn_object *object;
            bool recording = w->recording != NULL;
            st = vn_acquire(recording ? (const void *)w->recording : (const void *)w->sequence,
                            recording ? VN_KIND_RECORDING : VN_KIND_SEQUENCE, fn, &object);
            held[i].recording = recording ? (vn_recording *)object : NULL;
            held[i].sequence = recording ? NULL : (vn_sequence *)object;
        }
        if (st != VN_OK) {
            unacquire_work(held, i);
            return st;
        }
    }
    return VN_OK;
}

/* With every item held: check devices, lock the sequences in order, encode, submit. */
static vn_status submit_held(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                             vn_submission **out) {
    size_t sequences = 0;
    for (size_t i = 0; i < count; i++) {
        const vn_work *w = &work[i];
        vn_device *owner = w->recording ? w->recording->bound.pipeline->device : w->sequence->device;
        if (owner != device)
            return vn_fail(VN_ERROR_BINDING, "work item %zu belongs to another device. Fix: submit it on its own device.", i);
        sequences += w->sequence != NULL;
    }
    /* Sequences are locked for the encode so a concurrent add cannot move their steps.
     * Their list lives on the stack for the usual few; a batch of many sequences pays
     * one allocation, of at most `count` pointers (the caller's own array is larger). */
    vn_sequence *stack_seqs[16];
    vn_sequence **seqs = sequences <= 16 ? stack_seqs : malloc(sequences * sizeof *seqs);
    if (seqs == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate the lock list of %zu sequences. Fix: free host "
                       "memory, or submit fewer sequences at once.", sequences);
    size_t locked = distinct_sequences(work, count, seqs);
    for (size_t i = 0; i < locked; i++) {
        vn_mutex_lock(&seqs[i]->lock);
        vn_sequence_index_buffers(seqs[i]);
    }
    /* One item is what the caller built; several past one submit's bound go in parts,
     * as a replay(n) past it does, unless timed (one command buffer holds the queries). */
    uint64_t steps = 0;
    for (size_t i = 0; i < count; i++) steps += item_steps(&work[i]);
    batch b = {work, count};
    vn_status st;
    if (count > 1 && steps > VN_MAX_LAUNCHES_PER_SUBMIT && timing != VN_TIMING_NONE) {
        st = vn_fail(VN_ERROR_INVALID_ARGUMENT,
                     "a timed device.submit() of %zu items would encode %llu steps into one command buffer, above "
                     "the %d one submit holds (each keeps encoder memory until the GPU has run it; an untimed one "
                     "goes in parts, but the timestamp queries must span one command buffer). Fix: submit without "
                     "timing, or time at most %d steps at once (a recording is one step, a sequence its length).",
                     count, (unsigned long long)steps, VN_MAX_LAUNCHES_PER_SUBMIT, VN_MAX_LAUNCHES_PER_SUBMIT);
    } else if (count > 1 && steps > VN_MAX_LAUNCHES_PER_SUBMIT) {
        st = submit_in_parts(device, &b, steps, out);
    } else {
        st = vn_encode_and_submit(device, &batch_job, &b, 1, timing, "device.submit", out);
    }
    for (size_t i = locked; i-- > 0;) vn_mutex_unlock(&seqs[i]->lock);
    if (seqs != stack_seqs) free(seqs);
    return st;
}

static vn_status device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                               vn_submission **out) {
    vn_status st = vn_device_check(device, "device.submit");
    if (st != VN_OK) return st;
    if (out == NULL || (count > 0 && work == NULL))
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_device_submit: NULL argument. Fix: pass the work and a result.");
    *out = NULL;
    if (count == 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "device.submit([]): nothing to submit. Fix: pass recordings or sequences.");
    /* The objects live on the stack for the usual few items; a longer batch pays one
     * allocation (the caller's own array of ids is as long). */
    vn_work stack_held[32];
    vn_work *held = count <= 32 ? stack_held : calloc(count, sizeof *held);
    if (held == NULL)
        return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate the list of %zu work items. Fix: free host "
                       "memory, or submit fewer items at once.", count);
    st = acquire_work(work, count, held);
    if (st == VN_OK) {
        st = submit_held(device, held, count, timing, out);
        /* After every lock is released: this may drop an item's last reference. */
        unacquire_work(held, count);
    }
    if (held != stack_held) free(held);
    return st;
}

vn_status vn_device_submit(vn_device *device, const vn_work *work, size_t count, vn_timing_mode timing,
                           vn_submission **out) {
    VN_CALL1_OUT(device_submit(device, work, count, timing, out), out, device, VN_KIND_DEVICE);
}
