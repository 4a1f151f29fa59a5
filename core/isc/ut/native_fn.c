/*
 * native_fn.c — a sample native function (isc_native.h), built alone as
 * $(BUILD)/isc_native_fn.so and loaded by the suite "isc":
 *   objects: count and sum of the extents' little-endian f64 records
 *            ("count" COUNT, "sum" SUM); an extent not whole records is
 *            refused with -EINVAL;
 *   indices: count of the records ("count" COUNT), pulled 100 at a time;
 *   finish:  one record "args" (BYTES) holding the call's arguments, when
 *            there are any.
 * It keeps no state between calls: everything goes out through emit.
 */
#include <errno.h>
#include <string.h>

#include "core/isc/isc_native.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT uint32_t strata_isc_abi(void)
{
	return STRATA_ISC_NATIVE_ABI;
}

EXPORT int strata_isc_map_ext(const struct strata_isc_host *h, uint64_t off,
			      const void *data, size_t len)
{
	const unsigned char *p = data;
	int64_t n = (int64_t)(len / 8);
	double sum = 0, d;
	int rc;

	(void)off;
	if (len % 8 != 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 8) {
		memcpy(&d, p + i, 8);
		sum += d;
	}
	rc = h->emit(h->ctx, "count", 5, STRATA_ISC_COUNT, &n, 8);
	if (rc == 0)
		rc = h->emit(h->ctx, "sum", 3, STRATA_ISC_SUM, &sum, 8);
	return rc;
}

EXPORT int strata_isc_map_idx(const struct strata_isc_host *h)
{
	struct strata_isc_kv recs[100];
	unsigned char last[4096];
	size_t llen = 0;
	int64_t n = 0;
	uint32_t got;
	int rc;

	for (;;) {
		rc = h->next(h->ctx, n ? last : NULL, llen, 100, recs, &got);
		if (rc != 0)
			return rc;
		if (got == 0)
			break;
		n += got;
		llen = recs[got - 1].klen < sizeof last ?
		       recs[got - 1].klen : sizeof last;
		memcpy(last, recs[got - 1].key, llen);
	}
	return h->emit(h->ctx, "count", 5, STRATA_ISC_COUNT, &n, 8);
}

EXPORT int strata_isc_finish(const struct strata_isc_host *h)
{
	if (h->alen == 0)
		return 0;
	return h->emit(h->ctx, "args", 4, STRATA_ISC_BYTES, h->args, h->alen);
}
