/*
 * stats.c — per-op-class counters and latency histograms (clovis_stats_*).
 * Counters are updated with relaxed atomics from library and application
 * threads (three per op: bytes, latency sum, latency bucket; failures and
 * a new maximum only when they happen; the count is the sum of the
 * buckets), each thread into its own shard (struct stats_set: 16 threads
 * running index reads on two cores do not pass the same cache lines
 * around); a report sums the shards, a consistent-enough snapshot for
 * people and benchmarks.
 */
#include <stdlib.h>
#include <string.h>

#include "addb/addb.h"
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
_Static_assert(CLOVIS_STAT_NR == 14, "the op labels of addb/addb.c follow "
	       "CLOVIS_STAT_*");

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

static uint32_t stats_next_shard;
/* The calling thread's shard, plus one (0: not chosen yet): threads take
 * shards in turn. */
static __thread uint32_t t_shard;

/* The calling thread's histograms in s: its shard (allocated at its first
 * use), or the base when there is no memory for it. */
static struct stats_hist *stats_hists(struct stats_set *s)
{
	struct stats_hist *h, *none = NULL;
	uint32_t i = t_shard;

	if (i == 0) {
		i = __atomic_fetch_add(&stats_next_shard, 1, __ATOMIC_RELAXED) %
		    STATS_SHARDS + 1;
		t_shard = i;
	}
	h = __atomic_load_n(&s->ss_shard[i - 1], __ATOMIC_ACQUIRE);
	if (h != NULL)
		return h;
	h = calloc(CLOVIS_STAT_NR, sizeof *h);
	if (h == NULL)
		return s->ss_base.st_h;
	if (!__atomic_compare_exchange_n(&s->ss_shard[i - 1], &none, h, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(h);
		h = none;
	}
	return h;
}

void stats_record(struct stats_set *s, uint32_t cls, uint64_t lat_us,
		  uint64_t bytes, bool failed)
{
	struct stats_hist *h = &stats_hists(s)[cls];
	uint64_t max = __atomic_load_n(&h->sh_max_us, __ATOMIC_RELAXED);

	/* The process's metrics (addb/addb.h): the op classes are the same
	 * list; "bytes" are an index op's records, and a group commit's
	 * items, which the engine counts itself (strata_commit_items_total). */
#ifndef STRATA_NO_ADDB
	{
		uint64_t *r = addb_row_get(); /* once for the updates */

		if (r != NULL && cls < CLOVIS_STAT_NR) {
			addb_robs(r, ADDB_CLIENT_OP_LAT, cls, lat_us * 1000);
			if (failed)
				addb_radd(r, ADDB_CLIENT_OP_ERR, cls, 1);
			if (bytes != 0 && cls <= CLOVIS_STAT_OBJ_FREE)
				addb_radd(r, ADDB_CLIENT_OP_BYTES, cls, bytes);
			else if (bytes != 0 && cls <= CLOVIS_STAT_IDX_NEXT)
				addb_radd(r, ADDB_CLIENT_OP_RECORDS, cls,
					  bytes);
		}
	}
#endif

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

/* Add src into dst (relaxed loads: a report while ops run is a snapshot
 * that is consistent enough). */
static void stats_add(struct stats_hist *dst, const struct stats_hist *src)
{
	uint64_t m = __atomic_load_n(&src->sh_max_us, __ATOMIC_RELAXED);

	dst->sh_failed += __atomic_load_n(&src->sh_failed, __ATOMIC_RELAXED);
	dst->sh_bytes += __atomic_load_n(&src->sh_bytes, __ATOMIC_RELAXED);
	dst->sh_sum_us += __atomic_load_n(&src->sh_sum_us, __ATOMIC_RELAXED);
	if (m > dst->sh_max_us)
		dst->sh_max_us = m;
	for (uint32_t b = 0; b < STATS_BUCKETS; b++)
		dst->sh_b[b] += __atomic_load_n(&src->sh_b[b], __ATOMIC_RELAXED);
}

/* The base and every shard of class cls summed into *out. */
static void stats_sum(const struct stats_set *s, uint32_t cls,
		      struct stats_hist *out)
{
	memset(out, 0, sizeof *out);
	stats_add(out, &s->ss_base.st_h[cls]);
	for (uint32_t i = 0; i < STATS_SHARDS; i++) {
		const struct stats_hist *h =
			__atomic_load_n(&s->ss_shard[i], __ATOMIC_ACQUIRE);

		if (h != NULL)
			stats_add(out, &h[cls]);
	}
}

void stats_total(const struct stats_set *s, uint32_t cls,
		 struct stats_hist *out)
{
	stats_sum(s, cls, out);
}

void stats_fold(struct stats_set *s)
{
	for (uint32_t cls = 0; cls < CLOVIS_STAT_NR; cls++) {
		struct stats_hist sum;

		stats_sum(s, cls, &sum);
		sum.sh_count = s->ss_base.st_h[cls].sh_count;
		s->ss_base.st_h[cls] = sum;
	}
	for (uint32_t i = 0; i < STATS_SHARDS; i++)
		if (s->ss_shard[i] != NULL)
			memset(s->ss_shard[i], 0,
			       CLOVIS_STAT_NR * sizeof *s->ss_shard[i]);
}

void stats_zero(struct stats_set *s)
{
	memset(s->ss_base.st_h, 0, sizeof s->ss_base.st_h);
	for (uint32_t i = 0; i < STATS_SHARDS; i++) {
		struct stats_hist *h =
			__atomic_load_n(&s->ss_shard[i], __ATOMIC_ACQUIRE);

		if (h != NULL)
			memset(h, 0, CLOVIS_STAT_NR * sizeof *h);
	}
}

void stats_fini(struct stats_set *s)
{
	for (uint32_t i = 0; i < STATS_SHARDS; i++) {
		free(s->ss_shard[i]);
		s->ss_shard[i] = NULL;
	}
}

/* The latency below which a fraction pct/100 of the ops finished. */
static uint64_t stats_pct(const struct stats_hist *h, uint64_t count,
			  unsigned pct)
{
	uint64_t want = (count * pct + 99) / 100, seen = 0;

	for (uint32_t b = 0; b < STATS_BUCKETS; b++) {
		seen += h->sh_b[b];
		if (seen >= want && want > 0) {
			uint64_t hi = stats_bucket_hi(b);
			return hi < h->sh_max_us ? hi : h->sh_max_us;
		}
	}
	return h->sh_max_us;
}

void stats_report(const struct stats_set *s, struct clovis_stat *out)
{
	for (uint32_t i = 0; i < CLOVIS_STAT_NR; i++) {
		struct stats_hist h;
		struct clovis_stat *o = &out[i];

		stats_sum(s, i, &h);
		memset(o, 0, sizeof *o);
		o->cs_name = stats_names[i];
		for (uint32_t b = 0; b < STATS_BUCKETS; b++)
			o->cs_count += h.sh_b[b];
		o->cs_failed = h.sh_failed;
		o->cs_bytes = h.sh_bytes;
		o->cs_max_us = h.sh_max_us;
		if (o->cs_count == 0)
			continue;
		o->cs_mean_us = (double)h.sh_sum_us / (double)o->cs_count;
		o->cs_p50_us = stats_pct(&h, o->cs_count, 50);
		o->cs_p90_us = stats_pct(&h, o->cs_count, 90);
		o->cs_p99_us = stats_pct(&h, o->cs_count, 99);
	}
}
