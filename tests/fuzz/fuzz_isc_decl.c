/*
 * fuzz_isc_decl.c — libFuzzer target: declarative programs of shipped
 * functions (core/isc/isc_decl.c), which any client may send a server.
 * The input is a program's text: compiled for objects and for indices;
 * each that compiles runs over 4 KiB of fixed records (objects, when its
 * record size divides 4096) or 64 in-memory index records, and ends with
 * its output checked (isc_out_check()).  A compile or run may refuse with
 * an error; it must never crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/isc/isc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t rec_data[4096];
static char keys[64][16];
static uint8_t vals[64][24];

static int src_next(void *arg, const void *key, size_t klen, uint32_t n,
		    struct isc_rec *recs, uint32_t *got)
{
	uint32_t i = 0;

	(void)arg;
	if (key != NULL)
		while (i < 64 && (strlen(keys[i]) < klen ||
				  memcmp(keys[i], key, klen) <= 0))
			i++;
	*got = 0;
	for (; i < 64 && *got < n; i++)
		recs[(*got)++] = (struct isc_rec){(const uint8_t *)keys[i],
			(uint32_t)strlen(keys[i]), 0, vals[i],
			(uint32_t)(i % 24)};
	return 0;
}

static void run(const struct isc_fn *f, enum isc_target t)
{
	struct isc_limits lim = {0};
	struct isc_idx_src src = {src_next, NULL};
	struct isc_run *r;
	struct isc_out o;
	uint32_t nr;
	int rc;

	if (isc_run_start(&r, f, NULL, 0, &lim) != 0)
		return;
	if (t == ISC_T_OBJ) {
		uint32_t rec = isc_fn_record(f);

		rc = rec != 0 && sizeof rec_data % rec == 0 ?
		     isc_run_ext(r, 0, rec_data, sizeof rec_data) : 0;
	} else {
		rc = isc_run_idx(r, &src);
	}
	if (rc != 0) {
		isc_run_abort(r);
		return;
	}
	isc_out_init(&o, 0);
	if (isc_run_end(r, &o) == 0 &&
	    isc_out_check(o.o_buf, o.o_len, &nr) != 0)
		abort();
	isc_out_fini(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isc_fn_desc d = {ISC_DECL, "fuzz", data, size, {0}};

	if (rec_data[1] == 0)
		for (size_t i = 0; i < sizeof rec_data; i++)
			rec_data[i] = (uint8_t)(i * 37 + 11);
	if (keys[0][0] == 0)
		for (int i = 0; i < 64; i++) {
			snprintf(keys[i], sizeof keys[i], "k%03d", i);
			for (int j = 0; j < 24; j++)
				vals[i][j] = (uint8_t)(i * 7 + j);
		}
	if (size == 0 || size > 4096 || isc_digest(&d) != 0)
		return 0;
	for (int t = ISC_T_OBJ; t <= ISC_T_IDX; t++) {
		struct isc_fn *f = NULL;
		struct isc_limits lim = {0};

		if (isc_fn_compile(&f, &d, (enum isc_target)t, &lim) == 0) {
			run(f, (enum isc_target)t);
			isc_fn_free(f);
		}
	}
	return 0;
}
