/*
 * engine.c — the engine handle: accessors, pools, codecs and group locks
 * shared by the parts, open and close, device information and sys records.
 * See engine.h for the contract and the data path; the store set-up is in
 * store.c, space in space.c, the group commit and eng_exec() in commit.c,
 * devices in dev.c (engine_internal.h: what they share).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu.h>

#include "core/engine_internal.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "core/log.h"

/* Serial numbers of opened engines (eng_serial). */
static uint64_t eng_serial_next;

uint64_t eng_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Lower-case hex of v without leading zeros ("0" for 0) at p; returns the
 * end.  (Formatting by hand: clovis calls eng_id_str() on every op it
 * checks, and snprintf cost about as much as an index GET.) */
static char *hex_put(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	int shift = 60;

	while (shift > 0 && (v >> shift) == 0)
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		*p++ = digits[(v >> shift) & 0xf];
	return p;
}

const char *eng_id_str(const struct st_id *id)
{
	static __thread char buf[ST_ID_STR_LEN];
	char *p = hex_put(buf, id->si_hi);

	_Static_assert(ST_ID_STR_LEN >= 16 + 1 + 16 + 1, "id string");
	*p++ = ':';
	p = hex_put(p, id->si_lo);
	*p = '\0';
	return buf;
}

uint64_t eng_serial(struct eng *e)
{
	return e->e_serial;
}

struct eng_cgen *eng_cgen(struct eng *e)
{
	return &e->e_cgen;
}

struct meta *eng_meta(struct eng *e)
{
	return &e->e_meta;
}

bool eng_meta_on_nvram(const struct eng *e)
{
	return e->e_meta_nv;
}

void eng_slices(const struct eng *e, uint32_t *slice, uint32_t *slices)
{
	*slice = e->e_conf.c_slices ? e->e_conf.c_slice : 0;
	*slices = e->e_conf.c_slices;
}

struct eng_dev *eng_dev_get(struct eng *e, uint32_t i)
{
	return i < e->e_nr_devs ? &e->e_devs[i] : NULL;
}

uint32_t eng_dev_domain(struct eng *e, uint32_t d)
{
	return d < e->e_nr_devs ? e->e_dev_domain[d] : 0;
}

uint32_t eng_dev_nr(struct eng *e)
{
	return e->e_nr_devs;
}

const struct layout_pool *eng_pool(struct eng *e)
{
	return &e->e_pool;
}

void eng_thread_enter(void)
{
	rcu_register_thread();
}

void eng_thread_leave(void)
{
	rcu_unregister_thread();
}

/* ------------------------------------------- pools, codecs, group locks */

const struct eng_pool *eng_pool_get(struct eng *e, uint32_t p)
{
	return p < e->e_nr_pools ? &e->e_pools[p] : NULL;
}

uint32_t eng_pool_nr(struct eng *e)
{
	return e->e_nr_pools;
}

struct ec_codec *eng_codec(struct eng *e, uint32_t n, uint32_t k)
{
	struct ec_codec *c;

	if (n > ST_LAYOUT_UNITS_MAX || k > ST_LAYOUT_UNITS_MAX) {
		err_set(-EINVAL, "codec %u+%u out of range", n, k);
		return NULL;
	}
	pthread_mutex_lock(&e->e_codec_lock);
	c = e->e_codecs[n][k];
	if (c == NULL && e->e_lops == NULL)
		err_set(-EOPNOTSUPP, "codec %u+%u: no unit layouts in this "
			"process", n, k);
	else if (c == NULL && e->e_lops->elo_codec_create(&c, n, k) == 0)
		e->e_codecs[n][k] = c;
	pthread_mutex_unlock(&e->e_codec_lock);
	return c;
}

/* ------------------------------------------------------- unit layouts */

const struct eng_layout_ops *eng_layout_ops(struct eng *e)
{
	return e->e_lops;
}

static const char *unit_layout_name(uint32_t layout)
{
	return layout == ST_LAYOUT_PDCLUST ? "pdclust" :
	       layout == ST_LAYOUT_MIRROR ? "mirror" : "unit";
}

int eng_unit_refuse(const struct st_id *id, uint32_t layout)
{
	return err_set(-EOPNOTSUPP, "object %s: layout %s (%u): this process "
		       "was assembled without the unit layouts (no "
		       "eng_conf.ec_layout_ops)", eng_id_str(id),
		       unit_layout_name(layout), layout);
}

int eng_unit_exec(struct eng *e, struct eng_req *r, const struct meta_ent *ent)
{
	if (e->e_lops == NULL)
		return eng_unit_refuse(&r->er_id, ent->me_layout);
	return e->e_lops->elo_exec(e, r, ent);
}

int eng_unit_reqs_locks(struct eng *e, struct eng_req **reqs, uint32_t nr,
			uint32_t **slots, uint32_t *nslots, uint32_t *bad)
{
	if (e->e_lops != NULL)
		return e->e_lops->elo_reqs_locks(e, reqs, nr, slots, nslots,
						 bad);
	*slots = NULL;
	*nslots = 0;
	for (uint32_t i = 0; i < nr; i++)
		if (reqs[i] != NULL && stripe_layout(reqs[i]->er_ent.me_layout)) {
			*bad = i;
			return eng_unit_refuse(&reqs[i]->er_id,
					       reqs[i]->er_ent.me_layout);
		}
	return 0;
}

int eng_unit_apply(struct eng *e, MDB_txn *txn, struct eng_req *r)
{
	if (e->e_lops == NULL)
		return r->er_nr_upd == 0 ? 0 :
		       eng_unit_refuse(&r->er_id, r->er_ent.me_layout);
	return e->e_lops->elo_apply(e, txn, r);
}

int eng_unit_delete_units(struct eng *e, MDB_txn *txn,
			  const struct st_id *obj, uint32_t layout,
			  struct eng_spacevec *freed)
{
	if (e->e_lops == NULL)
		return eng_unit_refuse(obj, layout);
	return e->e_lops->elo_delete_units(e, txn, obj, freed);
}

int eng_unit_groups_drop(struct eng *e, MDB_txn *txn,
			 const struct st_id *obj, uint32_t layout,
			 uint64_t g, uint64_t nr, uint32_t w,
			 struct eng_spacevec *freed)
{
	if (e->e_lops == NULL)
		return eng_unit_refuse(obj, layout);
	return e->e_lops->elo_groups_drop(e, txn, obj, g, nr, w, freed);
}

int eng_unit_attr_check(struct eng *e, const struct st_id *id,
			struct meta_ent *me)
{
	if (e->e_lops == NULL)
		return eng_unit_refuse(id, me->me_layout);
	return e->e_lops->elo_attr_check(e, id, me);
}

void eng_unit_req_fini(struct eng_req *r)
{
	free(r->er_upd);
	r->er_upd = NULL;
	r->er_nr_upd = r->er_cap_upd = 0;
	free(r->er_locks);
	r->er_locks = NULL;
}

static int unit_walk_refuse(const char *what)
{
	return err_set(-EOPNOTSUPP, "%s: this process was assembled without "
		       "the unit layouts (no eng_conf.ec_layout_ops)", what);
}

int eng_unit_repair(struct eng *e, stripe_progress_fn fn, void *arg,
		    struct stripe_walk_stats *st)
{
	if (e->e_lops == NULL)
		return unit_walk_refuse("repair");
	return e->e_lops->elo_repair(e, fn, arg, st);
}

int eng_unit_rebalance(struct eng *e, stripe_progress_fn fn, void *arg,
		       struct stripe_walk_stats *st)
{
	if (e->e_lops == NULL)
		return unit_walk_refuse("rebalance");
	return e->e_lops->elo_rebalance(e, fn, arg, st);
}

int eng_unit_scrub(struct eng *e, stripe_progress_fn fn, void *arg,
		   struct stripe_walk_stats *st)
{
	if (e->e_lops == NULL)
		return unit_walk_refuse("scrub");
	return e->e_lops->elo_scrub(e, fn, arg, st);
}

void eng_walk_stats_add(struct stripe_walk_stats *a,
			const struct stripe_walk_stats *b)
{
	a->sw_units += b->sw_units;
	a->sw_bytes += b->sw_bytes;
	a->sw_rebuilt += b->sw_rebuilt;
	a->sw_moved += b->sw_moved;
	a->sw_corrupt += b->sw_corrupt;
	a->sw_unrepairable += b->sw_unrepairable;
	a->sw_resumed |= b->sw_resumed;
	a->sw_elapsed_ns += b->sw_elapsed_ns;
	a->sw_devices += b->sw_devices;
	a->sw_shared += b->sw_shared;
	a->sw_walk_units += b->sw_walk_units;
	a->sw_walk_rebuilt += b->sw_walk_rebuilt;
	a->sw_walk_moved += b->sw_walk_moved;
	a->sw_walk_corrupt += b->sw_walk_corrupt;
	a->sw_walk_unrepairable += b->sw_walk_unrepairable;
}

int eng_unit_data_units(struct eng *e, const struct st_id *id,
			const struct meta_ent *me, uint64_t start,
			uint64_t end, eng_unit_fn fn, void *arg)
{
	if (e->e_lops == NULL || e->e_lops->elo_data_units == NULL)
		return eng_unit_refuse(id, me->me_layout);
	return e->e_lops->elo_data_units(e, id, me, start, end, fn, arg);
}

int eng_unit_scrub_obj(struct eng *e, const struct st_id *id,
		       struct stripe_walk_stats *st)
{
	if (e->e_lops == NULL || e->e_lops->elo_scrub_obj == NULL)
		return unit_walk_refuse("object scrub");
	return e->e_lops->elo_scrub_obj(e, id, st);
}

static bool glock_free(struct eng *e, const uint32_t *slots, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		if (e->e_gbusy[slots[i]])
			return false;
	return true;
}

void eng_glock(struct eng *e, const uint32_t *slots, uint32_t nr)
{
	pthread_mutex_lock(&e->e_glock);
	while (!glock_free(e, slots, nr))
		pthread_cond_wait(&e->e_gcond, &e->e_glock);
	for (uint32_t i = 0; i < nr; i++)
		e->e_gbusy[slots[i]] = 1;
	pthread_mutex_unlock(&e->e_glock);
}

void eng_gunlock(struct eng *e, const uint32_t *slots, uint32_t nr)
{
	pthread_mutex_lock(&e->e_glock);
	for (uint32_t i = 0; i < nr; i++)
		e->e_gbusy[slots[i]] = 0;
	pthread_cond_broadcast(&e->e_gcond);
	pthread_mutex_unlock(&e->e_glock);
}

void eng_default_layout(struct eng *e, const struct st_id *c,
			struct meta_ent *me)
{
	const struct conf_layout *l = conf_layout_for(&e->e_conf, c);

	me->me_layout = l->cl_type;
	me->me_tier = l->cl_tier;
	me->me_pool = l->cl_pool;
	me->me_n = (uint8_t)l->cl_n;
	me->me_k = (uint8_t)l->cl_k;
	me->me_s = (uint8_t)l->cl_s;
	me->me_unit_shift = (uint8_t)l->cl_unit_shift;
}

uint32_t eng_default_pool(struct eng *e)
{
	const struct conf_layout *l = &e->e_conf.c_default_layout;

	if (stripe_layout(l->cl_type))
		return l->cl_pool;
	for (uint32_t p = 0; p < e->e_nr_pools; p++)
		if (strcmp(e->e_pools[p].ep_name, "flash") == 0)
			return p;
	return 0;
}

struct eng_ucounters *eng_ucounters(struct eng *e)
{
	return &e->e_uc;
}

/* ---------------------------------------------------- open and close */

int eng_open(struct eng **out, const struct eng_conf *c)
{
	struct eng *e;
	int rc;

	if (strlen(c->ec_dir) > LIM_PATH_MAX - 32)
		return err_set(-ENAMETOOLONG, "data directory %s: path too long",
			       c->ec_dir);
	e = calloc(1, sizeof *e);
	if (e == NULL)
		return err_set(-ENOMEM, "engine");
	e->e_lockfd = -1;
	e->e_model = c->ec_model;
	e->e_lops = c->ec_layout_ops;
	e->e_dev_path = c->ec_dev_path;
	e->e_dev_path_arg = c->ec_dev_path_arg;
	e->e_serial = __atomic_add_fetch(&eng_serial_next, 1, __ATOMIC_RELAXED);
	pthread_mutex_init(&e->e_codec_lock, NULL);
	pthread_mutex_init(&e->e_glock, NULL);
	pthread_cond_init(&e->e_gcond, NULL);
	pthread_mutex_init(&e->e_dev_lock, NULL);
	pthread_mutex_init(&e->e_heat_lock, NULL);
	snprintf(e->e_dir, sizeof e->e_dir, "%s", c->ec_dir);
	rc = eng_store_start(e, c);
	if (rc != 0) {
		eng_close(e);
		return rc;
	}
	eng_dev_home_back(e);
	eng_fdmi_open_check(e);
	*out = e;
	return 0;
}

/* Log the group-commit profile (LOG_INFO): per batch, its items and the
 * mean time of each stage. */
static void gcprof_log(struct eng *e)
{
	const struct eng_gcprof *g = &e->e_gp;
	double sb = g->gp_sbatches ? (double)g->gp_sbatches : 1;
	double cb = g->gp_cbatches ? (double)g->gp_cbatches : 1;

	if (g->gp_sbatches == 0)
		return;
	LOG_INFO("group commit: %" PRIu64 " sync batches, %.2f items each, "
		 "gather %.0f us (ended: %" PRIu64 " none coming, %" PRIu64
		 " gap, %" PRIu64 " window), device sync %.0f us, direct %"
		 PRIu64 " (released here %" PRIu64 "); "
		 "%" PRIu64 " commits: apply %.0f us, commit %.0f us, reports "
		 "%.0f us; %" PRIu64 " meta syncs %.0f us each; %" PRIu64
		 " stable waits %.0f us each, %" PRIu64 " got a batch; "
		 "update exec %.0f us; %" PRIu64 " batches came back after "
		 "a report, %.0f us each",
		 g->gp_sbatches, g->gp_sitems / sb, g->gp_gather_us / sb,
		 g->gp_gend[0], g->gp_gend[1], g->gp_gend[2],
		 g->gp_dsync_us / sb, g->gp_direct, g->gp_release_here,
		 g->gp_cbatches,
		 g->gp_apply_us / cb, g->gp_commit_us / cb, g->gp_cb_us / cb,
		 g->gp_msync, g->gp_msync ? g->gp_msync_us / (double)g->gp_msync
					  : 0.0,
		 g->gp_swait, g->gp_swait ? g->gp_swait_us / (double)g->gp_swait
					  : 0.0,
		 g->gp_swait_hit, e->e_exec_ns / 1000.0, g->gp_ret,
		 g->gp_ret ? g->gp_ret_us / (double)g->gp_ret : 0.0);
}

void eng_close(struct eng *e)
{
	if (e == NULL)
		return;
	if (e->e_crunning) {
		/* The syncer drains its queue, then stops the committer,
		 * which drains its own. */
		eng_cq_stop(&e->e_syncq);
		pthread_join(e->e_syncer, NULL);
		pthread_join(e->e_committer, NULL);
		eng_rwaiter_stop(e); /* after the committer: drains it */
		gcprof_log(e);
		eng_cq_fini(&e->e_syncq);
		eng_cq_fini(&e->e_commitq);
		pthread_mutex_destroy(&e->e_cmlock);
		pthread_mutex_destroy(&e->e_slock);
	}
	if (e->e_rrunning) {
		pthread_mutex_lock(&e->e_rlock);
		e->e_rstop = true;
		pthread_cond_signal(&e->e_rcond);
		pthread_mutex_unlock(&e->e_rlock);
		pthread_join(e->e_reclaimer, NULL);
		/* Fenced space not yet due: the next open rebuilds the
		 * allocator from the maps (where it is free), and the owners'
		 * epoch fence keeps late writes out (docs/cluster.md). */
		while (e->e_fhead != NULL) {
			struct eng_deferred *df = e->e_fhead;

			e->e_fhead = df->df_next;
			eng_spacevec_fini(&df->df_sv);
			free(df);
		}
		pthread_mutex_destroy(&e->e_rlock);
		pthread_cond_destroy(&e->e_rcond);
	}
	for (uint32_t i = 0; i < e->e_nr_devs; i++) {
		tier_dev_close(e->e_devs[i].ed_dev);
		alloc_fini(&e->e_devs[i].ed_alloc);
	}
	for (uint32_t i = 0; i < LIM_DEV_MAX; i++)
		free(e->e_devs[i].ed_rec_path);
	meta_close(&e->e_meta);
	if (e->e_lockfd >= 0)
		close(e->e_lockfd);
	for (uint32_t n = 0; n <= ST_LAYOUT_UNITS_MAX; n++)
		for (uint32_t k = 0; k <= ST_LAYOUT_UNITS_MAX; k++)
			if (e->e_codecs[n][k] != NULL)
				e->e_lops->elo_codec_destroy(e->e_codecs[n][k]);
	if (e->e_conf_loaded)
		conf_fini(&e->e_conf);
	free(e->e_pools);
	free(e->e_cgen.cg_pend);
	free(e->e_heat);
	pthread_mutex_destroy(&e->e_heat_lock);
	free(e);
}

/* ------------------------------------------------------------ misc */

void eng_dev_info(struct eng *e, uint32_t i, struct st_dev_info *out)
{
	struct eng_dev *d = &e->e_devs[i];

	memset(out, 0, sizeof *out);
	out->di_index = i;
	out->di_tier = d->ed_tier;
	snprintf(out->di_path, sizeof out->di_path, "%s", d->ed_dev->td_path);
	snprintf(out->di_driver, sizeof out->di_driver, "%s",
		 d->ed_dev->td_ops->to_name);
	out->di_size_bytes = tier_dev_size(d->ed_dev);
	out->di_free_bytes = alloc_free_units(&d->ed_alloc)
			     << LIM_ALLOC_UNIT_SHIFT;
	out->di_direct_io = d->ed_dev->td_direct;
	out->di_state = __atomic_load_n(&d->ed_state, __ATOMIC_ACQUIRE);
	out->di_errors = tier_dev_errors(d->ed_dev);
	out->di_reads = __atomic_load_n(&d->ed_dev->td_nr_reads,
					__ATOMIC_RELAXED);
	out->di_writes = __atomic_load_n(&d->ed_dev->td_nr_writes,
					 __ATOMIC_RELAXED);
	out->di_rebalance = (d->ed_flags & EDF_REBALANCE) != 0;
	out->di_model = tier_dev_model_on(d->ed_dev);
	if (tier_dev_zoned(d->ed_dev)) {
		out->di_zone_size = tier_dev_zone_size(d->ed_dev);
		out->di_zones = tier_dev_zone_nr(d->ed_dev);
		for (uint32_t z = 0; z < out->di_zones; z++) {
			struct tier_zone tz;

			if (tier_dev_zone_get(d->ed_dev, z, &tz) == 0 &&
			    tz.tz_wp == tz.tz_start)
				out->di_zones_empty++;
		}
	}
}

int eng_sys_save(struct eng *e, const char *name, const void *buf, size_t len)
{
	MDB_txn *txn;
	int rc = meta_wtxn_open(&e->e_meta, &txn);

	if (rc != 0)
		return meta_err(rc, "begin save");
	rc = meta_sys_put(txn, &e->e_meta, name, buf, len);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = meta_txn_commit(&e->e_meta, txn);
	return rc == 0 ? 0 : meta_err(rc, "commit save");
}

int eng_sys_load(struct eng *e, const char *name, void *buf, size_t len)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin load");
	rc = meta_sys_get(txn, &e->e_meta, name, buf, len);
	mdb_txn_abort(txn);
	return rc;
}

int eng_sys_del(struct eng *e, const char *name)
{
	MDB_val k = {strlen(name), (void *)name};
	MDB_txn *txn;
	int rc = meta_wtxn_open(&e->e_meta, &txn);

	if (rc != 0)
		return meta_err(rc, "begin delete");
	rc = meta_mdel(&e->e_meta, txn, e->e_meta.m_sys, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return meta_err(rc, "delete");
	}
	rc = meta_txn_commit(&e->e_meta, txn);
	return rc == 0 ? 0 : meta_err(rc, "commit delete");
}
