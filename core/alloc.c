/* alloc.c — bitmap allocator of device units (see alloc.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "addb/addb.h"
#include "core/alloc.h"
#include "core/errors.h"
#include "core/log.h"

static inline bool bit_get(const uint64_t *map, uint64_t i)
{
	return (map[i >> 6] >> (i & 63)) & 1;
}

/* Set or clear bits [start, start + n). */
static void bits_set(uint64_t *map, uint64_t start, uint64_t n, bool on)
{
	uint64_t i = start, end = start + n;

	while (i < end) {
		uint64_t w = i >> 6, b = i & 63;
		uint64_t span = (64 - b) < (end - i) ? 64 - b : end - i;
		uint64_t mask = (span == 64 ? ~0ull : ((1ull << span) - 1)) << b;

		if (on)
			map[w] |= mask;
		else
			map[w] &= ~mask;
		i += span;
	}
}

/* First free unit at or after from, or a->al_units if none. */
static uint64_t alloc_find_free(const struct alloc *a, uint64_t from)
{
	uint64_t nwords = (a->al_units + 63) >> 6;

	for (uint64_t w = from >> 6; w < nwords; w++) {
		uint64_t inv = ~a->al_map[w];

		if (w == from >> 6)
			inv &= ~0ull << (from & 63);
		if (inv != 0) {
			uint64_t i = (w << 6) + (uint64_t)__builtin_ctzll(inv);
			return i < a->al_units ? i : a->al_units;
		}
	}
	return a->al_units;
}

/* Length of the free run starting at start, at most max. */
static uint64_t alloc_run_len(const struct alloc *a, uint64_t start,
			      uint64_t max)
{
	uint64_t n = 0;

	while (n < max && start + n < a->al_units) {
		uint64_t i = start + n;

		if ((i & 63) == 0 && max - n >= 64 && i + 64 <= a->al_units &&
		    a->al_map[i >> 6] == 0) {
			n += 64;
			continue;
		}
		if (bit_get(a->al_map, i))
			break;
		n++;
	}
	return n;
}

int alloc_init(struct alloc *a, uint64_t units)
{
	memset(a, 0, sizeof *a);
	a->al_map = calloc((units + 63) / 64, sizeof(uint64_t));
	if (a->al_map == NULL)
		return err_set(-ENOMEM, "allocation bitmap of %llu units",
			       (unsigned long long)units);
	a->al_units = units;
	a->al_free = units;
	pthread_mutex_init(&a->al_lock, NULL);
	return 0;
}

void alloc_fini(struct alloc *a)
{
	if (a->al_map == NULL)
		return;
	free(a->al_map);
	a->al_map = NULL;
	pthread_mutex_destroy(&a->al_lock);
}

/* First free run of at least gran units in [from, to); sets *len to its
 * length capped at want.  Returns its start, or a->al_units. */
static uint64_t alloc_search(const struct alloc *a, uint64_t from, uint64_t to,
			     uint64_t want, uint64_t gran, uint64_t *len)
{
	uint64_t i = from;

	while (i < to) {
		i = alloc_find_free(a, i);
		if (i >= to)
			break;
		*len = alloc_run_len(a, i, want);
		if (*len >= gran)
			return i;
		i += *len + 1;
	}
	return a->al_units;
}

/* The free-bytes gauge of the device (a->al_lock held). */
static void alloc_gauge(const struct alloc *a)
{
	if (a->al_addb != 0)
		addb_set(ADDB_DEV_FREE, a->al_addb - 1,
			 a->al_free << LIM_ALLOC_UNIT_SHIFT);
}

int alloc_take(struct alloc *a, uint64_t want, uint64_t gran, uint64_t *start,
	       uint64_t *got)
{
	uint64_t i, len = 0;
	int rc = -ENOSPC;

	PRE(want > 0 && gran > 0 && want % gran == 0);
	pthread_mutex_lock(&a->al_lock);
	if (a->al_free < gran)
		goto out_unlock;
	i = alloc_search(a, a->al_hint, a->al_units, want, gran, &len);
	if (i == a->al_units)
		i = alloc_search(a, 0, a->al_hint, want, gran, &len);
	if (i == a->al_units)
		goto out_unlock;
	*start = i;
	*got = len - len % gran;
	bits_set(a->al_map, i, *got, true);
	a->al_free -= *got;
	a->al_hint = i + *got;
	alloc_gauge(a);
	rc = 0;
out_unlock:
	pthread_mutex_unlock(&a->al_lock);
	return rc;
}

int alloc_mark(struct alloc *a, uint64_t start, uint64_t n)
{
	int rc = 0;

	pthread_mutex_lock(&a->al_lock);
	if (start + n > a->al_units || start + n < start ||
	    alloc_run_len(a, start, n) != n) {
		rc = -EEXIST;
		goto out_unlock;
	}
	bits_set(a->al_map, start, n, true);
	a->al_free -= n;
	alloc_gauge(a);
out_unlock:
	pthread_mutex_unlock(&a->al_lock);
	return rc;
}

void alloc_release(struct alloc *a, uint64_t start, uint64_t n)
{
	pthread_mutex_lock(&a->al_lock);
	PRE(start + n <= a->al_units);
	for (uint64_t i = start; i < start + n; i++)
		ASSERT(bit_get(a->al_map, i));
	bits_set(a->al_map, start, n, false);
	a->al_free += n;
	alloc_gauge(a);
	pthread_mutex_unlock(&a->al_lock);
}

uint64_t alloc_free_units(struct alloc *a)
{
	uint64_t n;

	pthread_mutex_lock(&a->al_lock);
	n = a->al_free;
	pthread_mutex_unlock(&a->al_lock);
	return n;
}

uint64_t alloc_used_in(struct alloc *a, uint64_t start, uint64_t n)
{
	uint64_t used = 0;

	pthread_mutex_lock(&a->al_lock);
	for (uint64_t i = start; i < start + n && i < a->al_units; i++)
		used += bit_get(a->al_map, i);
	pthread_mutex_unlock(&a->al_lock);
	return used;
}
