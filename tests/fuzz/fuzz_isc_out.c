/*
 * fuzz_isc_out.c — libFuzzer target: the output records of shipped
 * functions (core/isc/isc_out.c) as a home and a client meet them from the
 * network: an IscReply's `out` checked (isc_out_check()), then merged into
 * an empty list and into itself, prefixed as a container member's, and
 * finished (MEAN to FLOAT; no reduce).  An accepted list must keep its
 * promises: every record walked by isc_out_next() in bounds and as many
 * as counted, a merge's result accepted by the checker again, or the
 * harness aborts.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/isc/isc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const void *buf, size_t len, uint32_t nr)
{
	struct isc_rec r;
	size_t pos = 0;
	uint32_t n = 0;
	int rc;

	while ((rc = isc_out_next(buf, len, &pos, &r)) == 1) {
		if (pos > len || r.r_key + r.r_klen > (const uint8_t *)buf + len ||
		    r.r_val + r.r_vlen > (const uint8_t *)buf + len)
			abort();
		n++;
	}
	if (rc != 0 || n != nr)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isc_out o;
	uint32_t nr;

	if (isc_out_check(data, size, &nr) != 0)
		return 0;
	walk(data, size, nr);
	isc_out_init(&o, 1u << 20);
	if (isc_out_merge(&o, data, size) == 0) {
		if (isc_out_check(o.o_buf, o.o_len, &nr) != 0 || nr != o.o_nr)
			abort();
		walk(o.o_buf, o.o_len, nr);
		/* itself again: combiners combine, lists grow */
		{
			uint8_t *copy = malloc(o.o_len ? o.o_len : 1);

			if (copy == NULL)
				abort();
			for (size_t i = 0; i < o.o_len; i++)
				copy[i] = o.o_buf[i];
			(void)isc_out_merge(&o, copy, o.o_len);
			free(copy);
		}
		if (isc_out_check(o.o_buf, o.o_len, &nr) != 0)
			abort();
		(void)isc_out_prefix(&o, "0123456789abcdef", 16);
		if (isc_out_check(o.o_buf, o.o_len, &nr) != 0)
			abort();
		(void)isc_out_final(&o, NULL, NULL);
		if (isc_out_check(o.o_buf, o.o_len, &nr) != 0)
			abort();
	}
	isc_out_fini(&o);
	return 0;
}
