/*
 * crash_common.c — contents and update layouts shared by the crash writer
 * and checker (see crash.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/crash/crash.h"

#define CRASH_MAGIC_BLK 0x4b4c42485352430aull /* block header */
#define CRASH_MAGIC_VAL 0x4c4156485352430aull /* value header */

const struct crash_obj_shape crash_shapes[CRASH_NR_OBJ] = {
	{9, CLOVIS_TIER_FLASH, 64, 16},
	{12, CLOVIS_TIER_NVRAM, 64, 16},
	{16, CLOVIS_TIER_FLASH, 32, 8},
	{20, CLOVIS_TIER_SAS, 4, 2},
};

/* The head of every block and value; the rest is filler. */
struct crash_hdr {
	uint64_t ch_magic;
	uint32_t ch_ent;
	uint32_t ch_len;   /* value length (values), block shift (blocks) */
	uint64_t ch_pos;   /* block number or key number */
	uint64_t ch_gen;
	uint64_t ch_sum;   /* FNV-1a of the whole buffer with ch_sum = 0 */
};

/* One step of the splitmix64 generator. */
static uint64_t crash_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* FNV-1a over len bytes. */
static uint64_t crash_fnv(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

uint32_t crash_tier(uint32_t e)
{
	const char *smr = getenv("CRASH_SMR");

	/* 1 MiB blocks stay off SMR: each would need a whole 1 MiB zone */
	if (smr != NULL && smr[0] != '\0')
		return crash_shapes[e].cs_shift < 20 ? CLOVIS_TIER_SMR
						     : CLOVIS_TIER_FLASH;
	return crash_shapes[e].cs_tier;
}

struct clovis_id crash_id(uint32_t e)
{
	return (struct clovis_id){CRASH_ID_HI, 1 + e};
}

/* Extents of an object update: 1..3, one per equal segment. */
static void crash_layout_obj(uint64_t *s, uint32_t e, struct crash_layout *l)
{
	const struct crash_obj_shape *sh = &crash_shapes[e];
	uint32_t n = 1 + crash_next(s) % CRASH_EXT_MAX;
	uint64_t seg = sh->cs_nr_blks / n, most = sh->cs_op_max / n;

	if (most > seg)
		most = seg;
	if (most == 0)
		most = 1;
	l->cl_nr = n;
	l->cl_blocks = 0;
	for (uint32_t i = 0; i < n; i++) {
		l->cl_len[i] = 1 + crash_next(s) % most;
		l->cl_start[i] = i * seg +
				 crash_next(s) % (seg - l->cl_len[i] + 1);
		l->cl_blocks += l->cl_len[i];
	}
}

/* Records of an index update: 1..CRASH_PUT_MAX distinct keys. */
static void crash_layout_idx(uint64_t *s, struct crash_layout *l)
{
	uint32_t first = crash_next(s) % CRASH_KEYS;

	l->cl_nr = 1 + crash_next(s) % CRASH_PUT_MAX;
	for (uint32_t i = 0; i < l->cl_nr; i++) {
		l->cl_key[i] = (first + 7 * i) % CRASH_KEYS;
		l->cl_vlen[i] = CRASH_VAL_MIN +
				crash_next(s) % (CRASH_VAL_MAX - CRASH_VAL_MIN + 1);
	}
}

void crash_layout(uint64_t gen, uint32_t e, struct crash_layout *l)
{
	uint64_t s = gen * 0x100 + e;

	memset(l, 0, sizeof *l);
	if (e < CRASH_NR_OBJ)
		crash_layout_obj(&s, e, l);
	else
		crash_layout_idx(&s, l);
}

bool crash_layout_has_blk(const struct crash_layout *l, uint64_t blk)
{
	for (uint32_t i = 0; i < l->cl_nr; i++)
		if (blk >= l->cl_start[i] && blk < l->cl_start[i] + l->cl_len[i])
			return true;
	return false;
}

bool crash_layout_has_key(const struct crash_layout *l, uint32_t k)
{
	for (uint32_t i = 0; i < l->cl_nr; i++)
		if (l->cl_key[i] == k)
			return true;
	return false;
}

/* Write a header and filler for (magic, e, pos, gen) over len bytes. */
static void crash_fill(uint8_t *buf, size_t len, uint64_t magic, uint32_t e,
		       uint32_t hlen, uint64_t pos, uint64_t gen)
{
	struct crash_hdr h = {magic, e, hlen, pos, gen, 0};
	uint64_t s = gen ^ pos << 32 ^ (uint64_t)e << 56, w;

	for (size_t i = sizeof h; i < len; i += sizeof w) {
		w = crash_next(&s);
		memcpy(buf + i, &w, len - i < sizeof w ? len - i : sizeof w);
	}
	memcpy(buf, &h, sizeof h);
	h.ch_sum = crash_fnv(buf, len);
	memcpy(buf, &h, sizeof h);
}

/* Check a header and filler against (magic, e, pos); 0 and *gen, or -1. */
static int crash_verify(const uint8_t *buf, size_t len, uint64_t magic,
			uint32_t e, uint32_t hlen, uint64_t pos, uint64_t *gen)
{
	struct crash_hdr h;
	uint8_t copy[sizeof h];
	uint64_t sum;

	memcpy(&h, buf, sizeof h);
	if (h.ch_magic != magic || h.ch_ent != e || h.ch_len != hlen ||
	    h.ch_pos != pos || h.ch_gen == 0)
		return -1;
	memcpy(copy, buf, sizeof copy);
	memset(copy + offsetof(struct crash_hdr, ch_sum), 0, sizeof h.ch_sum);
	sum = crash_fnv(copy, sizeof copy);
	for (size_t i = sizeof copy; i < len; i++)
		sum = (sum ^ buf[i]) * 0x100000001b3ull;
	if (sum != h.ch_sum)
		return -1;
	*gen = h.ch_gen;
	return 0;
}

void crash_block_fill(uint8_t *buf, uint32_t shift, uint32_t e, uint64_t blk,
		      uint64_t gen)
{
	crash_fill(buf, (size_t)1 << shift, CRASH_MAGIC_BLK, e, shift, blk,
		   gen);
}

int crash_block_check(const uint8_t *buf, uint32_t shift, uint32_t e,
		      uint64_t blk, uint64_t *gen)
{
	size_t len = (size_t)1 << shift;
	size_t i;

	for (i = 0; i < len && buf[i] == 0; i++)
		;
	if (i == len) {
		*gen = 0;
		return 0;
	}
	return crash_verify(buf, len, CRASH_MAGIC_BLK, e, shift, blk, gen);
}

size_t crash_key(uint32_t k, char buf[16])
{
	return (size_t)snprintf(buf, 16, "key-%03u", k);
}

void crash_val_fill(uint8_t *buf, size_t len, uint32_t e, uint32_t k,
		    uint64_t gen)
{
	crash_fill(buf, len, CRASH_MAGIC_VAL, e, (uint32_t)len, k, gen);
}

int crash_val_check(const uint8_t *buf, size_t len, uint32_t e, uint32_t k,
		    uint64_t *gen)
{
	if (len < sizeof(struct crash_hdr))
		return -1;
	return crash_verify(buf, len, CRASH_MAGIC_VAL, e, (uint32_t)len, k,
			    gen);
}

void crash_conf(struct clovis_conf *conf, const char *dir, uint32_t flags)
{
	const char *nv = getenv("CRASH_META_NVRAM");
	const char *smr = getenv("CRASH_SMR");

	memset(conf, 0, sizeof *conf);
	conf->cc_data_dir = dir;
	conf->cc_nvram_dir = dir;
	conf->cc_flags = flags;
	if (nv != NULL && nv[0] != '\0') {
		/* crash_test.sh ... metanv: the metadata on NVRAM there */
		conf->cc_nvram_dir = nv;
		if (flags & CLOVIS_CONF_CREATE)
			conf->cc_flags |= CLOVIS_CONF_META_NVRAM;
	}
	conf->cc_dev_size = CRASH_DEV_SIZE;
	if (getenv("CRASH_DEV_MIB") != NULL)
		conf->cc_dev_size = strtoull(getenv("CRASH_DEV_MIB"), NULL,
					     10) << 20;
	if (getenv("CRASH_CONFIG") != NULL)
		conf->cc_config = getenv("CRASH_CONFIG");
	if (smr != NULL && smr[0] != '\0') {
		/* crash_test.sh ... smr: CRASH_SMR names the configuration
		 * (a flash device for the indices, an SMR device) */
		conf->cc_config = smr;
		conf->cc_dev_size = CRASH_SMR_DEV_SIZE;
	}
	conf->cc_meta_size = 256ull << 20;
}
