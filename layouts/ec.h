/*
 * ec.h — erasure coding and unit checksums of pdclust layouts (ISA-L).
 *
 * A codec is systematic Reed-Solomon over GF(2^8): n data units are kept as
 * they are and k parity units are computed from them with a Cauchy matrix
 * (ISA-L gf_gen_cauchy1_matrix + ec_init_tables).  Every square submatrix of
 * a Cauchy matrix is invertible, so ANY n of the n + k units rebuild all the
 * others (the code is MDS for every n + k <= 32).
 *
 * Threads: a codec is immutable after ec_codec_create(); any number of
 * threads may call ec_encode(), ec_decode(), ec_codec_n() and ec_codec_k()
 * on the same codec at once.  ec_decode() builds its decode rows on its
 * own stack (about 10 KiB, most of it the 32 * n * lost <= 8 KiB of ISA-L
 * tables); there is no shared cache and no lock.  It inverts only the
 * e x e Cauchy submatrix of the e lost data units (e <= min(n, k)), not an
 * n x n matrix, so a decode costs about as much as an encode of the same
 * group even for wide codes (measured at 4 KiB units: 8+2 1.7 us against
 * 1.5 us to encode, 28+4 5.8 us against 10 us), and a cache of decode
 * tables would not pay for its lock.  ec_codec_destroy() must not race
 * with any other use of the codec.
 *
 * Buffers: all unit buffers belong to the caller and are not kept after a
 * call returns.  They may have any length and alignment (ISA-L is fastest
 * with 32-byte multiples at 32-byte alignment) and must not overlap.
 *
 * Checksums: ec_crc() is the per-unit checksum of Strata, ISA-L's
 * crc64_ecma_refl with seed 0 (that is CRC-64/XZ: "123456789" gives
 * 0x995dc9bbdf1939fa).
 */
#ifndef STRATA_LAYOUTS_EC_H
#define STRATA_LAYOUTS_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** An n + k Reed-Solomon codec: opaque, immutable after create. */
struct ec_codec;

/**
 * Create an n data + k parity codec in *out (owned by the caller, freed
 * with ec_codec_destroy()).  1 <= n, 0 <= k, n + k <= 32
 * (ST_LAYOUT_UNITS_MAX).  k == 0 is valid: encode does nothing and
 * decode only reports lost units.  Returns 0, -EINVAL (message names n or
 * k; *out untouched) or -ENOMEM.
 */
int ec_codec_create(struct ec_codec **out, uint32_t n, uint32_t k);

/** Free a codec (NULL is allowed). */
void ec_codec_destroy(struct ec_codec *c);

/** Data units per group of the codec. */
uint32_t ec_codec_n(const struct ec_codec *c);

/** Parity units per group of the codec. */
uint32_t ec_codec_k(const struct ec_codec *c);

/**
 * Compute parity[0..k-1] from data[0..n-1], every buffer len bytes.  In:
 * data (read only).  Out: parity (overwritten).  Never fails.
 */
void ec_encode(const struct ec_codec *c, size_t len, uint8_t *const *data,
	       uint8_t **parity);

/**
 * Rebuild lost units in place.  units[0..n+k-1] are the data then the parity
 * units of one group, each len bytes; present[i] is false when units[i] is
 * lost (its buffer must still be there: it receives the rebuilt bytes).
 * Every lost unit, data or parity, is rebuilt from n present ones; present
 * units are only read.  Returns 0 (also when nothing was lost), or -EIO
 * with an err_set() message "ec: N units lost, at most K can be rebuilt"
 * when more than k are lost (then no buffer is written).
 */
int ec_decode(const struct ec_codec *c, size_t len, uint8_t **units,
	      const bool *present);

/** ISA-L crc64_ecma_refl of buf[0..len-1] with seed 0 (see above). */
uint64_t ec_crc(const void *buf, size_t len);
/** The same checksum continued over more bytes: ec_crc(a ++ b) is
 *  ec_crc_cont(ec_crc(a), b) (a unit read into several buffers). */
uint64_t ec_crc_cont(uint64_t crc, const void *buf, size_t len);

#endif
