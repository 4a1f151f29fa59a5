/*
 * stripe_isc.c — the data units of a pdclust or mirror object, for
 * function shipping (core/isc/isc_eng.c): which unit holds which of the
 * object's bytes, on which device, with which checksum, so that each
 * unit's function run happens where the unit is (stripe.h,
 * elo_data_units; docs/isc.md "Where a function runs").
 *
 * Group g's data slot j (j < N; a mirror's copy 0) holds the object's
 * bytes [(g * N + j) * U, (g * N + j + 1) * U) for a unit of U bytes.
 * Records are read in read transactions of at most ENG_UNITS_BATCH
 * groups each, so a call over a large object never pins old pages of the
 * metadata for long.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/meta_txn.h"
#include "layouts/stripe_internal.h"

int stripe_data_units(struct eng *e, const struct st_id *id,
		      const struct meta_ent *me, uint64_t start, uint64_t end,
		      eng_unit_fn fn, void *arg)
{
	struct eng_req r;
	struct sctx sc;
	uint64_t gbytes, g0, g1;
	int rc = 0;

	if (!stripe_layout(me->me_layout))
		return err_set(-EINVAL, "object %s: layout %u has no units",
			       eng_id_str(id), me->me_layout);
	if (start >= end)
		return 0;
	memset(&r, 0, sizeof r);
	r.er_id = *id;
	memset(&sc, 0, sizeof sc);
	sc.sc_e = e;
	sc.sc_r = &r;
	sc.sc_ent = *me;
	sc.sc_mirror = me->me_layout == ST_LAYOUT_MIRROR;
	sc.sc_n = sc.sc_mirror ? 1 : me->me_n;
	sc.sc_k = sc.sc_mirror ? me->me_n - 1u : me->me_k;
	sc.sc_w = sc.sc_n + sc.sc_k;
	sc.sc_unit = 1ull << me->me_unit_shift;
	if (sc.sc_n == 0 || sc.sc_w > UMAX)
		return err_set(-ST_ECORRUPT, "object %s: stored layout %u+%u",
			       eng_id_str(id), sc.sc_n, sc.sc_k);
	gbytes = sc.sc_unit * sc.sc_n;
	g0 = start / gbytes;
	g1 = (end - 1) / gbytes;
	for (uint64_t gb = g0; rc == 0 && gb <= g1; gb += ENG_UNITS_BATCH) {
		uint64_t ge = gb + ENG_UNITS_BATCH - 1 < g1 ?
			      gb + ENG_UNITS_BATCH - 1 : g1;
		struct sgroup *sgs;
		MDB_txn *txn;

		sgs = calloc(ge - gb + 1, sizeof *sgs);
		if (sgs == NULL)
			return err_set(-ENOMEM, "object %s: unit records",
				       eng_id_str(id));
		rc = meta_rtxn_once(eng_meta(e), &txn, "begin read");
		if (rc != 0) {
			free(sgs);
			return rc;
		}
		for (uint64_t g = gb; rc == 0 && g <= ge; g++) {
			sgs[g - gb].sg_g = g;
			rc = stripe_group_load(&sc, txn, &sgs[g - gb]);
		}
		meta_txn_abort(txn);
		for (uint64_t g = gb; rc == 0 && g <= ge; g++) {
			const struct sgroup *sg = &sgs[g - gb];

			for (uint32_t j = 0; rc == 0 && j < sc.sc_n; j++) {
				uint64_t u0 = (g * sc.sc_n + j) * sc.sc_unit;
				uint64_t a = u0 > start ? u0 : start;
				uint64_t b = u0 + sc.sc_unit < end ?
					     u0 + sc.sc_unit : end;
				struct eng_unit_ref u = {0};

				if (a >= b)
					continue;
				u.ur_obj_off = a;
				u.ur_skip = (uint32_t)(a - u0);
				u.ur_len = (uint32_t)(b - a);
				u.ur_unit = (uint32_t)sc.sc_unit;
				u.ur_group = g;
				u.ur_slot = j;
				if (!(sg->sg_has >> j & 1)) {
					u.ur_hole = true;
				} else {
					u.ur_dev = sg->sg_rec[j].mu_dev;
					u.ur_dev_off = sg->sg_rec[j].mu_dev_off;
					u.ur_crc = sg->sg_rec[j].mu_crc;
					u.ur_lost = (sg->sg_rec[j].mu_flags &
						     MU_LOST) != 0;
				}
				rc = fn(arg, &u);
			}
		}
		free(sgs);
	}
	return rc;
}
