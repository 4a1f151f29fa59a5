/* ec.c — Reed-Solomon codec and unit checksum over ISA-L (see ec.h). */
#include <errno.h>
#include <isa-l/crc64.h>
#include <isa-l/erasure_code.h>
#include <stdlib.h>

#include "core/errors.h"
#include "core/log.h"
#include "layouts/ec.h"
#include "layouts/layout_limits.h"

_Static_assert(EC_UNITS_MAX <= 255, "GF(2^8) Cauchy rows need n + k < 256");

struct ec_codec {
	uint32_t ec_n, ec_k;
	uint8_t *ec_matrix; /**< (n + k) x n: identity over Cauchy rows */
	uint8_t *ec_tables; /**< ec_init_tables() of the k parity rows */
	uint8_t ec_mem[];   /**< storage of the two arrays above */
};

int ec_codec_create(struct ec_codec **out, uint32_t n, uint32_t k)
{
	struct ec_codec *c;
	size_t msize, tsize;

	if (n < 1 || n > EC_UNITS_MAX)
		return err_set(-EINVAL, "ec: n = %u data units, want 1..%u", n,
			       EC_UNITS_MAX);
	if (k > EC_UNITS_MAX - n)
		return err_set(-EINVAL, "ec: k = %u parity units, want n + k "
			       "<= %u (n = %u)", k, EC_UNITS_MAX, n);
	msize = (size_t)(n + k) * n;
	tsize = (size_t)32 * n * k;
	c = malloc(sizeof *c + msize + tsize);
	if (c == NULL)
		return err_set(-ENOMEM, "ec: no memory for a %u+%u codec", n, k);
	c->ec_n = n;
	c->ec_k = k;
	c->ec_matrix = c->ec_mem;
	c->ec_tables = c->ec_mem + msize;
	gf_gen_cauchy1_matrix(c->ec_matrix, (int)(n + k), (int)n);
	if (k > 0)
		ec_init_tables((int)n, (int)k, c->ec_matrix + (size_t)n * n,
			       c->ec_tables);
	*out = c;
	return 0;
}

void ec_codec_destroy(struct ec_codec *c)
{
	free(c);
}

uint32_t ec_codec_n(const struct ec_codec *c)
{
	return c->ec_n;
}

uint32_t ec_codec_k(const struct ec_codec *c)
{
	return c->ec_k;
}

/* Run ISA-L's ec_encode_data over len bytes in int-sized chunks: rows
 * outputs dst[] from n inputs src[] through tables. */
static void ec_run(uint32_t n, uint32_t rows, const uint8_t *tables,
		   size_t len, uint8_t *const *src, uint8_t *const *dst)
{
	uint8_t *s[EC_UNITS_MAX], *d[EC_UNITS_MAX];

	for (size_t off = 0; off < len; off += EC_CHUNK) {
		size_t chunk = len - off < EC_CHUNK ? len - off : EC_CHUNK;

		for (uint32_t i = 0; i < n; i++)
			s[i] = src[i] + off;
		for (uint32_t i = 0; i < rows; i++)
			d[i] = dst[i] + off;
		ec_encode_data((int)chunk, (int)n, (int)rows,
			       (unsigned char *)tables, s, d);
	}
}

void ec_encode(const struct ec_codec *c, size_t len, uint8_t *const *data,
	       uint8_t **parity)
{
	if (c->ec_k > 0)
		ec_run(c->ec_n, c->ec_k, c->ec_tables, len, data, parity);
}

/* Coefficient of data unit j in parity unit r (0..k-1) of the generator. */
static uint8_t ec_coef(const struct ec_codec *c, uint32_t r, uint32_t j)
{
	return c->ec_matrix[(size_t)(c->ec_n + r) * c->ec_n + j];
}

/*
 * Which units a decode reads and writes.  Sources, in this order: the
 * present data units (pd[0..n-e-1]) then e present parity units (ps[]),
 * where e is the number of lost data units (ld[0..e-1]).  lp[] are the lost
 * parity units.  Parity units are numbered 0..k-1 here.
 */
struct ec_plan {
	uint32_t ep_e, ep_npd, ep_nlp;
	uint32_t ep_ld[EC_UNITS_MAX], ep_pd[EC_UNITS_MAX];
	uint32_t ep_ps[EC_UNITS_MAX], ep_lp[EC_UNITS_MAX];
};

static void ec_plan_make(const struct ec_codec *c, const bool *present,
			 struct ec_plan *pl)
{
	uint32_t nps = 0;

	pl->ep_e = pl->ep_npd = pl->ep_nlp = 0;
	for (uint32_t j = 0; j < c->ec_n; j++) {
		if (present[j])
			pl->ep_pd[pl->ep_npd++] = j;
		else
			pl->ep_ld[pl->ep_e++] = j;
	}
	for (uint32_t r = 0; r < c->ec_k; r++) {
		if (!present[c->ec_n + r])
			pl->ep_lp[pl->ep_nlp++] = r;
		else if (nps < pl->ep_e)
			pl->ep_ps[nps++] = r;
	}
	ASSERT(nps == pl->ep_e); /* callers checked: at most k units lost */
}

/*
 * Decode rows of the lost data units over the sources.  With S the chosen
 * parity units and L the lost data units, P_S = C[S,L] D_L + C[S,pd] D_pd,
 * so D_L = C[S,L]^-1 P_S + C[S,L]^-1 C[S,pd] D_pd (GF(2^8) adds by XOR).
 * Only the e x e matrix C[S,L] is inverted, e <= min(n, k) <= 16, instead
 * of an n x n one: this keeps wide codes (28+4) cheap to decode.
 */
static void ec_data_rows(const struct ec_codec *c, const struct ec_plan *pl,
			 uint8_t *rows)
{
	uint8_t sub[EC_NK_MAX], inv[EC_NK_MAX];
	uint32_t e = pl->ep_e, n = c->ec_n, npd = pl->ep_npd;
	int rc;

	if (e == 0)
		return;
	for (uint32_t i = 0; i < e; i++)
		for (uint32_t a = 0; a < e; a++)
			sub[i * e + a] = ec_coef(c, pl->ep_ps[i], pl->ep_ld[a]);
	rc = gf_invert_matrix(sub, inv, (int)e);
	ASSERT(rc == 0); /* every square submatrix of a Cauchy matrix */
	for (uint32_t a = 0; a < e; a++) {
		uint8_t *row = rows + (size_t)a * n;

		for (uint32_t b = 0; b < npd; b++) {
			uint8_t v = 0;

			for (uint32_t i = 0; i < e; i++)
				v ^= gf_mul(inv[a * e + i],
					    ec_coef(c, pl->ep_ps[i], pl->ep_pd[b]));
			row[b] = v;
		}
		for (uint32_t i = 0; i < e; i++)
			row[npd + i] = inv[a * e + i];
	}
}

/* Decode row of lost parity unit r over the sources: its generator row,
 * with every lost data unit replaced by that unit's decode row. */
static void ec_parity_row(const struct ec_codec *c, const struct ec_plan *pl,
			  uint32_t r, const uint8_t *data_rows, uint8_t *row)
{
	uint32_t n = c->ec_n;

	for (uint32_t col = 0; col < n; col++) {
		uint8_t v = col < pl->ep_npd ? ec_coef(c, r, pl->ep_pd[col]) : 0;

		for (uint32_t a = 0; a < pl->ep_e; a++)
			v ^= gf_mul(ec_coef(c, r, pl->ep_ld[a]),
				    data_rows[(size_t)a * n + col]);
		row[col] = v;
	}
}

/*
 * Plan sources and targets, derive one decode row per lost unit (data rows
 * first, then parity rows) and regenerate every lost unit in one pass over
 * the n sources.
 */
int ec_decode(const struct ec_codec *c, size_t len, uint8_t **units,
	      const bool *present)
{
	uint8_t rows[EC_NK_MAX], tables[32 * EC_NK_MAX];
	uint8_t *src[EC_UNITS_MAX], *dst[EC_UNITS_MAX];
	uint32_t n = c->ec_n, nlost = 0;
	struct ec_plan pl;

	for (uint32_t i = 0; i < n + c->ec_k; i++)
		nlost += !present[i];
	if (nlost > c->ec_k)
		return err_set(-EIO, "ec: %u units lost, at most %u can be "
			       "rebuilt", nlost, c->ec_k);
	if (nlost == 0)
		return 0;
	ec_plan_make(c, present, &pl);
	for (uint32_t b = 0; b < pl.ep_npd; b++)
		src[b] = units[pl.ep_pd[b]];
	for (uint32_t i = 0; i < pl.ep_e; i++) {
		src[pl.ep_npd + i] = units[n + pl.ep_ps[i]];
		dst[i] = units[pl.ep_ld[i]];
	}
	ec_data_rows(c, &pl, rows);
	for (uint32_t i = 0; i < pl.ep_nlp; i++) {
		ec_parity_row(c, &pl, pl.ep_lp[i], rows,
			      rows + (size_t)(pl.ep_e + i) * n);
		dst[pl.ep_e + i] = units[n + pl.ep_lp[i]];
	}
	ec_init_tables((int)n, (int)nlost, rows, tables);
	ec_run(n, nlost, tables, len, src, dst);
	return 0;
}

uint64_t ec_crc(const void *buf, size_t len)
{
	return crc64_ecma_refl(0, buf, len);
}

uint64_t ec_crc_cont(uint64_t crc, const void *buf, size_t len)
{
	return crc64_ecma_refl(crc, buf, len);
}
