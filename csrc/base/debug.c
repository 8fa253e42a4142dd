/* debug.c - counts of live native objects, so tests can prove nothing leaks.
 *
 * Every file counts here, so this file uses none: vn_introspect (introspect.c) shows
 * the counts, through vn_debug_live_counts (parking.c). */
#include "layer_base.h"

static atomic_llong live[VN_LIVE_KIND_COUNT];

void vn_live_add(enum vn_live_kind kind, int64_t delta) { atomic_fetch_add(&live[kind], delta); }

int64_t vn_live_count(enum vn_live_kind kind) { return atomic_load(&live[kind]); }
