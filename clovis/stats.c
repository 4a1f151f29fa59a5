/*
 * stats.c — per-op-class counters and latency histograms (clovis_stats_*).
 * Counters are updated with relaxed atomics from library threads (three
 * per op: bytes, latency sum, latency bucket; failures and a new maximum
 * only when they happen; the count is the sum of the buckets); a report is
 * a consistent-enough snapshot for people and benchmarks.
 */
#include <string.h>

#include "clovis/clovis_internal.h"

static const char *const stats_names[CLOVIS_STAT_NR] = {
	[CLOVIS_STAT_OBJ_READ] = "obj.read",
	[CLOVIS_STAT_OBJ_WRITE] = "obj.write",
	[CLOVIS_STAT_OBJ_ALLOC] = "obj.alloc",
	[CLOVIS_STAT_OBJ_FREE] = "obj.free",
	[CLOVIS_STAT_IDX_GET] = "idx.get",
	[CLOVIS_STAT_IDX_PUT] = "idx.put",
	[CLOVIS_STAT_IDX_DEL] = "idx.del",
	[CLOVIS_STAT_IDX_NEXT] = "idx.next",
	[CLOVIS_STAT_ENT_CREATE] = "entity.create",
	[CLOVIS_STAT_ENT_OPEN] = "entity.open",
	[CLOVIS_STAT_ENT_DELETE] = "entity.delete",
	[CLOVIS_STAT_ENT_GETATTR] = "entity.getattr",
	[CLOVIS_STAT_ENT_SETATTR] = "entity.setattr",
	[CLOVIS_STAT_COMMIT] = "commit",
};

/* Bucket of a latency: exact below 16 us, then 8 sub-buckets per octave. */
static uint32_t stats_bucket(uint64_t us)
{
	uint32_t msb, idx;

	if (us < 16)
		return (uint32_t)us;
	msb = 63u - (uint32_t)__builtin_clzll(us);
	idx = 16u + (msb - 4u) * 8u + (uint32_t)((us >> (msb - 3u)) & 7u);
	return idx < STATS_BUCKETS ? idx : STATS_BUCKETS - 1;
}

/* Upper bound of bucket b in us (what a percentile in it reports). */
static uint64_t stats_bucket_hi(uint32_t b)
{
	uint32_t msb, sub;

	if (b < 16)
		return b;
	msb = (b - 16u) / 8u + 4u;
	sub = (b - 16u) % 8u;
	return ((8ull + sub + 1) << (msb - 3u)) - 1;
}

void stats_record(struct stats *s, uint32_t cls, uint64_t lat_us,
		  uint64_t bytes, bool failed)
{
	struct stats_hist *h = &s->st_h[cls];
	uint64_t max = __atomic_load_n(&h->sh_max_us, __ATOMIC_RELAXED);

	if (failed)
		__atomic_fetch_add(&h->sh_failed, 1, __ATOMIC_RELAXED);
	if (bytes != 0)
		__atomic_fetch_add(&h->sh_bytes, bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sh_sum_us, lat_us, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sh_b[stats_bucket(lat_us)], 1, __ATOMIC_RELAXED);
	while (lat_us > max &&
	       !__atomic_compare_exchange_n(&h->sh_max_us, &max, lat_us, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The latency below which a fraction pct/100 of the ops finished. */
static uint64_t stats_pct(const struct stats_hist *h, uint64_t count,
			  unsigned pct)
{
	uint64_t want = (count * pct + 99) / 100, seen = 0;

	for (uint32_t b = 0; b < STATS_BUCKETS; b++) {
		seen += __atomic_load_n(&h->sh_b[b], __ATOMIC_RELAXED);
		if (seen >= want && want > 0) {
			uint64_t hi = stats_bucket_hi(b);
			return hi < h->sh_max_us ? hi : h->sh_max_us;
		}
	}
	return h->sh_max_us;
}

void stats_report(const struct stats *s, struct clovis_stat *out)
{
	for (uint32_t i = 0; i < CLOVIS_STAT_NR; i++) {
		const struct stats_hist *h = &s->st_h[i];
		struct clovis_stat *o = &out[i];

		memset(o, 0, sizeof *o);
		o->cs_name = stats_names[i];
		for (uint32_t b = 0; b < STATS_BUCKETS; b++)
			o->cs_count += __atomic_load_n(&h->sh_b[b],
						       __ATOMIC_RELAXED);
		o->cs_failed = __atomic_load_n(&h->sh_failed, __ATOMIC_RELAXED);
		o->cs_bytes = __atomic_load_n(&h->sh_bytes, __ATOMIC_RELAXED);
		o->cs_max_us = __atomic_load_n(&h->sh_max_us, __ATOMIC_RELAXED);
		if (o->cs_count == 0)
			continue;
		o->cs_mean_us = (double)h->sh_sum_us / (double)o->cs_count;
		o->cs_p50_us = stats_pct(h, o->cs_count, 50);
		o->cs_p90_us = stats_pct(h, o->cs_count, 90);
		o->cs_p99_us = stats_pct(h, o->cs_count, 99);
	}
}
