/*
 * clovis.c — the Clovis instance, ids, entity handles, op construction with
 * full argument checks, listing and management calls.  The contract is
 * clovis/clovis.h; ops run in op.c and the engine (core/).
 *
 * Every argument is checked here, before anything is queued, and refused
 * with -EINVAL/-E2BIG plus a message: the library never aborts its caller.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addb/addb.h"
#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "layouts/stripe.h"
#include "core/server/msg.h"
#include "ha/srv_ha.h"
#include "core/log.h"
#include "core/meta_txn.h"
#include "core/types.h"

#define STATS_VERSION 1u

/* The boundary: the public names of clovis.h and the ground floor's names
 * of core/types.h (used by tiers/ and layouts/) must stay the same values
 * and the same id layout (issue 27 point 1). */
#define SAME(a, b) \
	_Static_assert((long long)(a) == (long long)(b), #a " != " #b)
SAME(CLOVIS_EBASE, ST_EBASE);
SAME(CLOVIS_ECORRUPT, ST_ECORRUPT);
SAME(CLOVIS_EVERSION, ST_EVERSION);
SAME(CLOVIS_ECHECKSUM, ST_ECHECKSUM);
SAME(CLOVIS_ESTATE, ST_ESTATE);
SAME(CLOVIS_TIER_NVRAM, ST_TIER_NVRAM);
SAME(CLOVIS_TIER_FLASH, ST_TIER_FLASH);
SAME(CLOVIS_TIER_SAS, ST_TIER_SAS);
SAME(CLOVIS_TIER_SMR, ST_TIER_SMR);
SAME(CLOVIS_TIER_NR, ST_TIER_NR);
SAME(CLOVIS_LAYOUT_PLAIN, ST_LAYOUT_PLAIN);
SAME(CLOVIS_LAYOUT_PDCLUST, ST_LAYOUT_PDCLUST);
SAME(CLOVIS_LAYOUT_MIRROR, ST_LAYOUT_MIRROR);
SAME(CLOVIS_LAYOUT_COMPOSITE, ST_LAYOUT_COMPOSITE);
SAME(CLOVIS_LAYOUT_UNITS_MAX, ST_LAYOUT_UNITS_MAX);
SAME(CLOVIS_UNIT_SHIFT_MIN, ST_UNIT_SHIFT_MIN);
SAME(CLOVIS_UNIT_SHIFT_MAX, ST_UNIT_SHIFT_MAX);
SAME(CLOVIS_ET_CONTAINER, ST_ET_CONTAINER);
SAME(CLOVIS_ET_OBJ, ST_ET_OBJ);
SAME(CLOVIS_ET_IDX, ST_ET_IDX);
SAME(CLOVIS_IF_OVERWRITE, ST_IF_OVERWRITE);
SAME(CLOVIS_IF_EXCLUDE_START_KEY, ST_IF_EXCLUDE_START_KEY);
SAME(CLOVIS_IF_CALLER_BUFS, ST_IF_CALLER_BUFS);
SAME(CLOVIS_CONF_CREATE, ST_CONF_CREATE);
SAME(CLOVIS_CONF_DEVICE_MODEL, ST_CONF_DEVICE_MODEL);
SAME(CLOVIS_CONF_META_NVRAM, ST_CONF_META_NVRAM);
SAME(CLOVIS_DEV_ONLINE, ED_ONLINE);
SAME(CLOVIS_DEV_FAILED, ED_FAILED);
SAME(CLOVIS_DEV_REPAIRED, ED_REPAIRED);
SAME(CLOVIS_BLOCK_SHIFT_MIN, ST_BLOCK_SHIFT_MIN);
SAME(CLOVIS_BLOCK_SHIFT_MAX, ST_BLOCK_SHIFT_MAX);
SAME(CLOVIS_KEY_MAX, ST_KEY_MAX);
SAME(CLOVIS_VAL_MAX, ST_VAL_MAX);
SAME(CLOVIS_VEC_MAX, ST_VEC_MAX);
SAME(CLOVIS_OP_BYTES_MAX, ST_OP_BYTES_MAX);
SAME(CLOVIS_BLOCK_NR_MAX, ST_BLOCK_NR_MAX);
SAME(CLOVIS_DTX_OPS_MAX, ST_DTX_OPS_MAX);
SAME(CLOVIS_DTX_MEMBER_RECS_MAX, MSG_RECS_INLINE);
SAME(CLOVIS_ID_USER_MIN, ST_ID_USER_MIN);
SAME(CLOVIS_ID_STR_LEN, ST_ID_STR_LEN);
/* The structs: clovis/ hands pointers across (st_of(), clovis_of(),
 * clovis_internal.h), so every field is at the same place. */
#define FIELD(cs, ss, cf, sf)                                              \
	SAME(offsetof(struct cs, cf), offsetof(struct ss, sf));            \
	SAME(sizeof(((struct cs *)0)->cf), sizeof(((struct ss *)0)->sf))
SAME(sizeof(struct clovis_id), sizeof(struct st_id));
FIELD(clovis_id, st_id, ci_hi, si_hi);
FIELD(clovis_id, st_id, ci_lo, si_lo);
SAME(sizeof(struct clovis_extvec), sizeof(struct st_extvec));
FIELD(clovis_extvec, st_extvec, ev_nr, ev_nr);
FIELD(clovis_extvec, st_extvec, ev_start_blk, ev_start_blk);
FIELD(clovis_extvec, st_extvec, ev_nr_blks, ev_nr_blks);
SAME(sizeof(struct clovis_bufvec), sizeof(struct st_bufvec));
FIELD(clovis_bufvec, st_bufvec, bv_nr, bv_nr);
FIELD(clovis_bufvec, st_bufvec, bv_buf, bv_buf);
FIELD(clovis_bufvec, st_bufvec, bv_len, bv_len);
SAME(sizeof(struct clovis_dtx_id), sizeof(struct st_dtx_id));
FIELD(clovis_dtx_id, st_dtx_id, di_hlc, di_hlc);
FIELD(clovis_dtx_id, st_dtx_id, di_node, di_node);
FIELD(clovis_dtx_id, st_dtx_id, di_pad, di_pad);
#define OA(f) FIELD(clovis_obj_attr, st_obj_attr, f, f)
SAME(sizeof(struct clovis_obj_attr), sizeof(struct st_obj_attr));
OA(oa_block_shift); OA(oa_layout); OA(oa_tier); OA(oa_dev); OA(oa_pool);
OA(oa_data_units); OA(oa_parity_units); OA(oa_spare_units);
OA(oa_unit_shift); OA(oa_pad); OA(oa_size_blocks); OA(oa_size_bytes);
OA(oa_ctime_ns); OA(oa_mtime_ns);
#undef OA
#define DI(f) FIELD(clovis_dev_info, st_dev_info, f, f)
SAME(sizeof(struct clovis_dev_info), sizeof(struct st_dev_info));
DI(di_index); DI(di_tier); DI(di_path); DI(di_driver); DI(di_size_bytes);
DI(di_free_bytes); DI(di_direct_io); DI(di_state); DI(di_errors);
DI(di_rebalance); DI(di_model); DI(di_zone_size); DI(di_zones);
DI(di_zones_empty); DI(di_reads); DI(di_writes);
#undef DI
SAME(sizeof(struct clovis_layer_info), sizeof(struct st_layer_info));
FIELD(clovis_layer_info, st_layer_info, li_layer, li_layer);
FIELD(clovis_layer_info, st_layer_info, li_priority, li_priority);
FIELD(clovis_layer_info, st_layer_info, li_attr, li_attr);
FIELD(clovis_layer_info, st_layer_info, li_blocks, li_blocks);
SAME(sizeof(struct clovis_layer_ext), sizeof(struct st_layer_ext));
FIELD(clovis_layer_ext, st_layer_ext, le_start, le_start);
FIELD(clovis_layer_ext, st_layer_ext, le_blocks, le_blocks);
FIELD(clovis_layer_ext, st_layer_ext, le_layer, le_layer);
#undef FIELD
#undef SAME

/* ------------------------------------------------------------ errors */

const char *clovis_strerror(int rc)
{
	return err_str(rc);
}

const char *clovis_errmsg(void)
{
	return err_msg();
}

/* ------------------------------------------------------------ ids */

int clovis_id_cmp(const struct clovis_id *a, const struct clovis_id *b)
{
	return st_id_cmp(st_of(a), st_of(b));
}

char *clovis_id_format(const struct clovis_id *id, char *buf)
{
	return st_id_format(st_of(id), buf);
}

int clovis_id_parse(const char *s, struct clovis_id *out)
{
	return st_id_parse(s, st_of(out));
}

static bool id_reserved(const struct clovis_id *id)
{
	return id->ci_hi == 0 && id->ci_lo < CLOVIS_ID_USER_MIN;
}

/* ------------------------------------------------------------ instance */

/* Cluster mode: a file, or a server with the secret; no store fields. */
static int cluster_conf_check(const struct clovis_conf *conf)
{
	if ((conf->cc_cluster_conf == NULL) == (conf->cc_server == NULL))
		return err_set(-EINVAL, "clovis_init: cluster mode needs "
			       "cc_cluster_conf or cc_server (one of them)");
	if (conf->cc_cluster_conf != NULL && conf->cc_secret != NULL)
		return err_set(-EINVAL, "clovis_init: cc_secret goes with "
			       "cc_server (the cluster file has its own)");
	if (conf->cc_isc_native != NULL && conf->cc_isc_native[0] != '\0')
		return err_set(-EINVAL, "clovis_init: cluster mode: "
			       "cc_isc_native must be unset (each server "
			       "allows native functions by its cluster file's "
			       "isc_native)");
	if (conf->cc_data_dir != NULL || conf->cc_flags != 0 ||
	    conf->cc_dev_size != 0 || conf->cc_nvram_dir != NULL ||
	    conf->cc_meta_size != 0 || conf->cc_config != NULL)
		return err_set(-EINVAL, "clovis_init: cluster mode: store fields"
			       " (cc_data_dir, cc_flags, cc_dev_size, "
			       "cc_nvram_dir, cc_meta_size, cc_config) must be "
			       "unset: the servers own the stores");
	if (conf->cc_nr_workers > LIM_WORKERS_MAX)
		return err_set(-EINVAL, "clovis_init: cc_nr_workers %u > %u",
			       conf->cc_nr_workers, LIM_WORKERS_MAX);
	return 0;
}

static int conf_check(const struct clovis_conf *conf)
{
	if (conf == NULL)
		return err_set(-EINVAL, "clovis_init: conf is NULL");
	if (conf->cc_mode == CLOVIS_MODE_CLUSTER)
		return cluster_conf_check(conf);
	if (conf->cc_mode != CLOVIS_MODE_EMBEDDED)
		return err_set(-EINVAL, "clovis_init: cc_mode %d unknown",
			       (int)conf->cc_mode);
	if (conf->cc_cluster_conf != NULL || conf->cc_server != NULL ||
	    conf->cc_secret != NULL)
		return err_set(-EINVAL, "clovis_init: cc_cluster_conf, "
			       "cc_server and cc_secret are for cluster mode");
	if (conf->cc_data_dir == NULL || conf->cc_data_dir[0] == '\0')
		return err_set(-EINVAL, "clovis_init: cc_data_dir is empty");
	if (conf->cc_flags & ~(uint32_t)(CLOVIS_CONF_CREATE |
					 CLOVIS_CONF_DEVICE_MODEL |
					 CLOVIS_CONF_META_NVRAM |
					 CLOVIS_CONF_FDMI_ON |
					 CLOVIS_CONF_FDMI_OFF))
		return err_set(-EINVAL, "clovis_init: cc_flags 0x%x unknown",
			       conf->cc_flags);
	if ((conf->cc_flags & CLOVIS_CONF_FDMI_ON) &&
	    (conf->cc_flags & CLOVIS_CONF_FDMI_OFF))
		return err_set(-EINVAL, "clovis_init: cc_flags: FDMI both on "
			       "and off");
	if (conf->cc_nr_workers > LIM_WORKERS_MAX)
		return err_set(-EINVAL, "clovis_init: cc_nr_workers %u > %u",
			       conf->cc_nr_workers, LIM_WORKERS_MAX);
	if (conf->cc_dev_size != 0 &&
	    (conf->cc_dev_size < LIM_DEV_SIZE_MIN ||
	     conf->cc_dev_size > LIM_DEV_SIZE_MAX ||
	     conf->cc_dev_size % LIM_ALLOC_UNIT != 0))
		return err_set(-EINVAL, "clovis_init: cc_dev_size %" PRIu64
			       " outside 1 MiB..16 TiB or not 512-aligned",
			       conf->cc_dev_size);
	if (conf->cc_meta_size != 0 &&
	    (conf->cc_meta_size < LIM_META_SIZE_MIN ||
	     conf->cc_meta_size > LIM_META_SIZE_MAX))
		return err_set(-EINVAL, "clovis_init: cc_meta_size %" PRIu64
			       " outside 16 MiB..1 TiB", conf->cc_meta_size);
	return 0;
}

/* Load the statistics saved by earlier sessions (none is fine). */
static void stats_load(struct clovis *cl)
{
	struct stats *base = &cl->cl_stats.ss_base;

	if (eng_sys_load(cl->cl_eng, "stats", base, sizeof *base) != 0 ||
	    base->st_version != STATS_VERSION)
		memset(base, 0, sizeof *base);
	base->st_version = STATS_VERSION;
}

/* Group commits are recorded as their own op class. */
static void commit_hook(void *arg, uint64_t lat_us, uint32_t nr_items)
{
	struct clovis *cl = arg;

	stats_record(&cl->cl_stats, CLOVIS_STAT_COMMIT, lat_us, nr_items, false);
}

#ifdef STRATA_FAULT_INJECT
/*
 * Test builds only: when STRATA_UT_CLUSTER names a cluster file, an
 * embedded-mode clovis_init() opens a client of that cluster instead, so
 * that the unchanged Clovis suites run against a cluster
 * (tests/integ/cluster_test.sh).  Release builds never look at it.
 */
static const struct clovis_conf *ut_cluster_conf(const struct clovis_conf *conf,
						 struct clovis_conf *tmp)
{
	const char *file = getenv("STRATA_UT_CLUSTER");

	/* A conf that embedded mode refuses is refused as it is, so that the
	 * argument checks of the suites hold in both modes. */
	if (conf == NULL || file == NULL || file[0] == '\0' ||
	    conf->cc_mode != CLOVIS_MODE_EMBEDDED ||
	    conf->cc_data_dir == NULL || conf_check(conf) != 0)
		return conf;
	*tmp = (struct clovis_conf){.cc_mode = CLOVIS_MODE_CLUSTER,
				    .cc_cluster_conf = file,
				    .cc_nr_workers = conf->cc_nr_workers,
				    .cc_log_level = conf->cc_log_level};
	return tmp;
}
#endif

/* Open the backend: the engine (embedded) or the cluster client. */
static int backend_open(struct clovis *cl, const struct clovis_conf *conf)
{
	struct eng_conf ec;
	struct fdmi_conf fc = {0};
	int rc;

	if (conf->cc_mode == CLOVIS_MODE_CLUSTER)
		return cluster_open(cl, conf, conf->cc_cluster_conf);
	ec = (struct eng_conf){
		.ec_dir = conf->cc_data_dir,
		.ec_create = (conf->cc_flags & CLOVIS_CONF_CREATE) != 0,
		.ec_dev_size = conf->cc_dev_size,
		.ec_nvram_dir = conf->cc_nvram_dir,
		.ec_meta_size = conf->cc_meta_size,
		.ec_config = conf->cc_config,
		.ec_model = (conf->cc_flags & CLOVIS_CONF_DEVICE_MODEL) != 0,
		.ec_meta_nvram = (conf->cc_flags & CLOVIS_CONF_META_NVRAM) != 0,
		/* clovis assembles the layers below it: the unit layouts
		 * (layouts/stripe.h) are the engine's through this table. */
		.ec_layout_ops = &stripe_layout_ops};
	cl->cl_exec = exec_embedded;
	rc = eng_open(&cl->cl_eng, &ec);
	if (rc != 0)
		return rc;
	fc.fc_mode = (conf->cc_flags & CLOVIS_CONF_FDMI_ON) ? FDMI_MODE_ON :
		     (conf->cc_flags & CLOVIS_CONF_FDMI_OFF) ? FDMI_MODE_OFF :
							      FDMI_MODE_AUTO;
	rc = fdmi_open(cl->cl_eng, &fc, &cl->cl_fdmi);
	if (rc != 0) {
		eng_close(cl->cl_eng);
		cl->cl_eng = NULL;
		return rc;
	}
	stats_load(cl);
	eng_commit_hook_set(cl->cl_eng, commit_hook, cl);
	return 0;
}

int clovis_init(struct clovis **out, const struct clovis_conf *conf)
{
	struct clovis *cl;
	int rc;
#ifdef STRATA_FAULT_INJECT
	struct clovis_conf ut_tmp;

	conf = ut_cluster_conf(conf, &ut_tmp);
#endif
	rc = conf_check(conf);
	if (rc != 0)
		return rc;
	if (out == NULL)
		return err_set(-EINVAL, "clovis_init: out is NULL");
	log_level_set(conf->cc_log_level < 0 ? LOG_NONE :
		      conf->cc_log_level ? conf->cc_log_level : LOG_ERR);
	cl = calloc(1, sizeof *cl);
	if (cl == NULL)
		return err_set(-ENOMEM, "clovis_init: instance");
	pthread_mutex_init(&cl->cl_qlock, NULL);
	pthread_cond_init(&cl->cl_qcond, NULL);
	pthread_mutex_init(&cl->cl_olock, NULL);
	pthread_cond_init(&cl->cl_oidle, NULL);
	pthread_mutex_init(&cl->cl_fdmi_lock, NULL);
	rc = backend_open(cl, conf);
	if (rc != 0)
		goto out_free;
	cl->cl_default = (struct clovis_realm){cl, CLOVIS_ID_DEFAULT_CONTAINER};
	cl->cl_stats.ss_base.st_version = STATS_VERSION;
	rc = isc_native_list(conf->cc_isc_native, &cl->cl_isc_native);
	if (rc != 0)
		goto out_fini;
	rc = workers_start(cl, conf->cc_nr_workers ? conf->cc_nr_workers :
			   conf->cc_mode == CLOVIS_MODE_CLUSTER ?
			   LIM_CLU_WORKERS_DEFAULT : LIM_WORKERS_DEFAULT);
	if (rc != 0)
		goto out_fini;
	*out = cl;
	return 0;
out_fini:
	clovis_fini(cl);
	return rc;
out_free:
	pthread_mutex_destroy(&cl->cl_fdmi_lock);
	free(cl);
	return rc;
}

void clovis_fini(struct clovis *cl)
{
	if (cl == NULL)
		return;
	ops_drain_and_free(cl);
	workers_stop(cl);
	if (cl->cl_eng == NULL)
		cluster_stats_push(cl); /* its statistics outlive it */
	if (cl->cl_eng != NULL) {
		eng_commit_hook_set(cl->cl_eng, NULL, NULL);
		stats_fold(&cl->cl_stats);
		if (eng_sys_save(cl->cl_eng, "stats", &cl->cl_stats.ss_base,
				 sizeof cl->cl_stats.ss_base) != 0)
			LOG_WARNING("statistics not saved: %s", err_msg());
		fdmi_close(cl->cl_fdmi);
		cl->cl_fdmi = NULL;
		fdmi_pos_free(cl);
		eng_close(cl->cl_eng);
	}
	cluster_close(cl);
	pthread_mutex_destroy(&cl->cl_qlock);
	pthread_cond_destroy(&cl->cl_qcond);
	pthread_mutex_destroy(&cl->cl_olock);
	pthread_cond_destroy(&cl->cl_oidle);
	fdmi_pos_free(cl);
	pthread_mutex_destroy(&cl->cl_fdmi_lock);
	stats_fini(&cl->cl_stats);
	isc_native_list_free(cl->cl_isc_native);
	free(cl);
}

int clovis_store_destroy(const char *data_dir)
{
	if (data_dir == NULL || data_dir[0] == '\0')
		return err_set(-EINVAL, "store_destroy: data_dir is empty");
	return eng_destroy(data_dir);
}

/* ------------------------------------------------------------ entities */

struct clovis_realm *clovis_default_realm(struct clovis *cl)
{
	return cl != NULL ? &cl->cl_default : NULL;
}

/* Common set-up of a handle. */
static int entity_init(struct clovis_entity *e, struct clovis *cl,
		       struct clovis_realm *r, uint32_t type,
		       const struct clovis_id *id)
{
	memset(e, 0, sizeof *e);
	e->en_type = type;
	e->en_state = CLOVIS_ES_INIT;
	e->en_id = *id;
	e->en_realm = r;
	e->en_cl = cl;
	e->en_magic = CLOVIS_ENT_MAGIC;
	return 0;
}

int clovis_container_init(struct clovis_container *c, struct clovis *cl,
			  const struct clovis_id *id)
{
	struct clovis_id dflt = CLOVIS_ID_DEFAULT_CONTAINER;

	if (c == NULL || cl == NULL || id == NULL)
		return err_set(-EINVAL, "container_init: NULL argument");
	if (id_reserved(id) && clovis_id_cmp(id, &dflt) != 0)
		return err_set(-EINVAL, "container %s: reserved id",
			       eng_id_str(st_of(id)));
	entity_init(&c->co_entity, cl, NULL, CLOVIS_ET_CONTAINER, id);
	c->co_realm = (struct clovis_realm){cl, *id};
	return 0;
}

static int realm_check(const struct clovis_realm *r, const struct clovis_id *id,
		       const char *what)
{
	if (r == NULL || r->re_cl == NULL || id == NULL)
		return err_set(-EINVAL, "%s_init: NULL argument", what);
	if (id_reserved(id))
		return err_set(-EINVAL, "%s %s: reserved id (hi 0 and lo < %u)",
			       what, eng_id_str(st_of(id)), CLOVIS_ID_USER_MIN);
	return 0;
}

/* Check and complete object attributes with their defaults. */
static int obj_attr_check(const struct clovis_id *id,
			  struct clovis_obj_attr *a)
{
	if (a->oa_block_shift == 0)
		a->oa_block_shift = 12;
	if (a->oa_block_shift < CLOVIS_BLOCK_SHIFT_MIN ||
	    a->oa_block_shift > CLOVIS_BLOCK_SHIFT_MAX)
		return err_set(-EINVAL, "object %s: block shift %u outside "
			       "%u..%u (512 B..64 MiB)", eng_id_str(st_of(id)),
			       a->oa_block_shift, CLOVIS_BLOCK_SHIFT_MIN,
			       CLOVIS_BLOCK_SHIFT_MAX);
	if (a->oa_layout > CLOVIS_LAYOUT_COMPOSITE)
		return err_set(-EINVAL, "object %s: layout %u unknown",
			       eng_id_str(st_of(id)), a->oa_layout);
	if (a->oa_data_units > CLOVIS_LAYOUT_UNITS_MAX ||
	    a->oa_parity_units > CLOVIS_LAYOUT_UNITS_MAX ||
	    a->oa_spare_units > CLOVIS_LAYOUT_UNITS_MAX)
		return err_set(-EINVAL, "object %s: units per group %u+%u+%u, "
			       "each at most %u", eng_id_str(st_of(id)),
			       a->oa_data_units, a->oa_parity_units,
			       a->oa_spare_units, CLOVIS_LAYOUT_UNITS_MAX);
	if (a->oa_unit_shift != 0 &&
	    (a->oa_unit_shift < CLOVIS_UNIT_SHIFT_MIN ||
	     a->oa_unit_shift > CLOVIS_UNIT_SHIFT_MAX))
		return err_set(-EINVAL, "object %s: unit shift %u outside "
			       "%u..%u (4 KiB..16 MiB)", eng_id_str(st_of(id)),
			       a->oa_unit_shift, CLOVIS_UNIT_SHIFT_MIN,
			       CLOVIS_UNIT_SHIFT_MAX);
	if (a->oa_tier >= CLOVIS_TIER_NR)
		return err_set(-EINVAL, "object %s: tier %u unknown",
			       eng_id_str(st_of(id)), a->oa_tier);
	return 0;
}

int clovis_obj_init(struct clovis_obj *o, struct clovis_realm *r,
		    const struct clovis_id *id,
		    const struct clovis_obj_attr *attr)
{
	struct clovis_obj_attr a = {.oa_tier = CLOVIS_TIER_FLASH};
	int rc = o == NULL ? err_set(-EINVAL, "obj_init: NULL object")
			   : realm_check(r, id, "object");

	if (rc != 0)
		return rc;
	if (attr != NULL)
		a = *attr;
	rc = obj_attr_check(id, &a);
	if (rc != 0)
		return rc;
	entity_init(&o->ob_entity, r->re_cl, r, CLOVIS_ET_OBJ, id);
	o->ob_attr = a;
	return 0;
}

int idx_init_sys(struct clovis_idx *i, struct clovis *cl,
		 const struct clovis_id *id)
{
	entity_init(&i->in_entity, cl, &cl->cl_default, CLOVIS_ET_IDX, id);
	memset(&i->in_attr, 0, sizeof i->in_attr);
	return 0;
}

int clovis_idx_init(struct clovis_idx *i, struct clovis_realm *r,
		    const struct clovis_id *id)
{
	int rc = i == NULL ? err_set(-EINVAL, "idx_init: NULL index")
			   : realm_check(r, id, "index");

	if (rc != 0)
		return rc;
	entity_init(&i->in_entity, r->re_cl, r, CLOVIS_ET_IDX, id);
	memset(&i->in_attr, 0, sizeof i->in_attr);
	return 0;
}

static bool entity_valid(const struct clovis_entity *e)
{
	return e != NULL && e->en_magic == CLOVIS_ENT_MAGIC && e->en_cl != NULL;
}

/* The handle's stored attributes as the engine's request needs them. */
static void req_from_handle(struct eng_req *r, const struct clovis_entity *e)
{
	if (e->en_type == CLOVIS_ET_OBJ) {
		const struct clovis_obj_attr *a =
			&((const struct clovis_obj *)e)->ob_attr;

		r->er_ent.me_block_shift = a->oa_block_shift;
		r->er_ent.me_layout = a->oa_layout;
		r->er_ent.me_tier = a->oa_tier;
		r->er_ent.me_dev = a->oa_dev;
		r->er_ent.me_pool = a->oa_pool;
		r->er_ent.me_n = (uint8_t)a->oa_data_units;
		r->er_ent.me_k = (uint8_t)a->oa_parity_units;
		r->er_ent.me_s = (uint8_t)a->oa_spare_units;
		r->er_ent.me_unit_shift = (uint8_t)a->oa_unit_shift;
		r->er_ent.me_ctime_ns = a->oa_ctime_ns;
		r->er_ent.me_size_bytes = a->oa_size_bytes;
	} else if (e->en_type == CLOVIS_ET_IDX) {
		r->er_ent.me_ctime_ns =
			((const struct clovis_idx *)e)->in_attr.ia_ctime_ns;
	}
	if (e->en_realm != NULL)
		r->er_container = *st_of(&e->en_realm->re_id);
}

static const struct {
	uint32_t kind;
	uint32_t stat;
} ent_ops[] = {
	[CLOVIS_EO_CREATE] = {ER_ENT_CREATE, CLOVIS_STAT_ENT_CREATE},
	[CLOVIS_EO_OPEN] = {ER_ENT_OPEN, CLOVIS_STAT_ENT_OPEN},
	[CLOVIS_EO_DELETE] = {ER_ENT_DELETE, CLOVIS_STAT_ENT_DELETE},
	[CLOVIS_EO_GETATTR] = {ER_ENT_GETATTR, CLOVIS_STAT_ENT_GETATTR},
	[CLOVIS_EO_SETATTR] = {ER_ENT_SETATTR, CLOVIS_STAT_ENT_SETATTR},
};

int clovis_entity_op(struct clovis_entity *e, enum clovis_entity_opcode opcode,
		     struct clovis_op **op)
{
	int rc;

	if (!entity_valid(e) || op == NULL)
		return err_set(-EINVAL, "entity_op: %s", op == NULL ?
			       "op is NULL" : "not an initialised handle");
	if (opcode < CLOVIS_EO_CREATE || opcode > CLOVIS_EO_SETATTR)
		return err_set(-EINVAL, "entity %s: opcode %d unknown",
			       eng_id_str(st_of(&e->en_id)), (int)opcode);
	if (opcode == CLOVIS_EO_SETATTR && e->en_type != CLOVIS_ET_OBJ)
		return err_set(-EINVAL, "entity %s: SETATTR applies to objects "
			       "only", eng_id_str(st_of(&e->en_id)));
	if ((opcode == CLOVIS_EO_SETATTR || opcode == CLOVIS_EO_GETATTR) &&
	    e->en_state != CLOVIS_ES_OPEN)
		return err_set(-EINVAL, "entity %s: handle not open (CREATE or "
			       "OPEN it first)", eng_id_str(st_of(&e->en_id)));
	if (opcode == CLOVIS_EO_SETATTR) {
		const struct clovis_obj_attr *a =
			&((const struct clovis_obj *)e)->ob_attr;

		if (a->oa_size_bytes >> a->oa_block_shift >= CLOVIS_BLOCK_NR_MAX)
			return err_set(-EINVAL, "object %s: oa_size_bytes %"
				       PRIu64 " beyond 2^48 blocks",
				       eng_id_str(st_of(&e->en_id)),
				       a->oa_size_bytes);
	}
	rc = op_alloc(e, ent_ops[opcode].kind, ent_ops[opcode].stat, op);
	if (rc == 0)
		req_from_handle(&(*op)->op_req, e);
	return rc;
}

/* ------------------------------------------------------------ object ops */

struct ext_ref {
	uint64_t s;
	uint64_t n;
};

static int ext_ref_cmp(const void *a, const void *b)
{
	const struct ext_ref *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Extents: non-empty, in range, not overlapping; sets *blocks. */
/* The object's id as text, made only for a message (eng_id_str() costs
 * about 300 instructions: made eagerly it was 5 % of a 4 KiB write). */
#define OBJ_ID(o) eng_id_str(st_of(&(o)->ob_entity.en_id))

static int extvec_check(const struct clovis_obj *o,
			const struct clovis_extvec *ext, uint64_t *blocks)
{
	struct ext_ref *v;
	int rc = 0;

	if (ext == NULL || ext->ev_nr == 0 || ext->ev_start_blk == NULL ||
	    ext->ev_nr_blks == NULL)
		return err_set(-EINVAL, "object %s: extent vector empty",
			       OBJ_ID(o));
	if (ext->ev_nr > CLOVIS_VEC_MAX)
		return err_set(-E2BIG, "object %s: %u extents > %u", OBJ_ID(o),
			       ext->ev_nr, CLOVIS_VEC_MAX);
	v = malloc(ext->ev_nr * sizeof *v);
	if (v == NULL)
		return err_set(-ENOMEM, "object %s: extent check", OBJ_ID(o));
	*blocks = 0;
	for (uint32_t i = 0; rc == 0 && i < ext->ev_nr; i++) {
		v[i] = (struct ext_ref){ext->ev_start_blk[i], ext->ev_nr_blks[i]};
		if (v[i].n == 0 || v[i].s >= CLOVIS_BLOCK_NR_MAX ||
		    v[i].n > CLOVIS_BLOCK_NR_MAX - v[i].s)
			rc = err_set(-EINVAL, "object %s: extent %u [%" PRIu64
				     ", +%" PRIu64 ") empty or past block "
				     "2^48", OBJ_ID(o), i, v[i].s, v[i].n);
		*blocks += v[i].n;
	}
	qsort(v, ext->ev_nr, sizeof *v, ext_ref_cmp);
	for (uint32_t i = 1; rc == 0 && i < ext->ev_nr; i++)
		if (v[i - 1].s + v[i - 1].n > v[i].s)
			rc = err_set(-EINVAL, "object %s: extents overlap at "
				     "block %" PRIu64, OBJ_ID(o), v[i].s);
	free(v);
	return rc;
}

/* Buffers: whole blocks, adding up to the extents' bytes. */
static int bufvec_check(const struct clovis_obj *o,
			const struct clovis_bufvec *data, uint64_t blocks)
{
	uint32_t shift = o->ob_attr.oa_block_shift;
	uint64_t total = 0;

	if (data == NULL || data->bv_nr == 0 || data->bv_buf == NULL ||
	    data->bv_len == NULL)
		return err_set(-EINVAL, "object %s: buffer vector empty",
			       OBJ_ID(o));
	if (data->bv_nr > CLOVIS_VEC_MAX)
		return err_set(-E2BIG, "object %s: %u buffers > %u", OBJ_ID(o),
			       data->bv_nr, CLOVIS_VEC_MAX);
	if (blocks > (CLOVIS_OP_BYTES_MAX >> shift))
		return err_set(-E2BIG, "object %s: %" PRIu64 " blocks exceed "
			       "%llu bytes per op", OBJ_ID(o), blocks,
			       CLOVIS_OP_BYTES_MAX);
	for (uint32_t i = 0; i < data->bv_nr; i++) {
		if (data->bv_buf[i] == NULL || data->bv_len[i] == 0 ||
		    data->bv_len[i] % (1ull << shift) != 0)
			return err_set(-EINVAL, "object %s: buffer %u: NULL or "
				       "%zu bytes, not whole %u-byte blocks",
				       OBJ_ID(o),
				       i, data->bv_len[i], 1u << shift);
		total += data->bv_len[i];
	}
	if (total != blocks << shift)
		return err_set(-EINVAL, "object %s: buffers hold %" PRIu64
			       " bytes, extents cover %" PRIu64, OBJ_ID(o),
			       total,
			       blocks << shift);
	return 0;
}

static int obj_op_check(struct clovis_obj *o, enum clovis_obj_opcode opcode,
			const struct clovis_extvec *ext,
			struct clovis_bufvec *data, uint32_t flags)
{
	uint64_t blocks = 0;
	int rc;

	if (o == NULL || !entity_valid(&o->ob_entity) ||
	    o->ob_entity.en_type != CLOVIS_ET_OBJ)
		return err_set(-EINVAL, "obj_op: not an object handle");
	if (o->ob_entity.en_state != CLOVIS_ES_OPEN)
		return err_set(-EINVAL, "object %s: handle not open (CREATE or "
			       "OPEN it first)", OBJ_ID(o));
	if (opcode < CLOVIS_OC_READ || opcode > CLOVIS_OC_FREE)
		return err_set(-EINVAL, "object %s: opcode %d unknown",
			       OBJ_ID(o),
			       (int)opcode);
	if ((flags & ~(uint32_t)CLOVIS_OF_HERE) != 0)
		return err_set(-EINVAL, "object %s: flags 0x%x unknown",
			       OBJ_ID(o), flags);
	if (flags != 0 && opcode != CLOVIS_OC_WRITE)
		return err_set(-EINVAL, "object %s: CLOVIS_OF_HERE is for WRITE "
			       "only", OBJ_ID(o));
	rc = extvec_check(o, ext, &blocks);
	if (rc != 0)
		return rc;
	if (opcode == CLOVIS_OC_ALLOC || opcode == CLOVIS_OC_FREE)
		return data == NULL ? 0 :
		       err_set(-EINVAL, "object %s: ALLOC/FREE take no data",
			       OBJ_ID(o));
	return bufvec_check(o, data, blocks);
}

int clovis_obj_op(struct clovis_obj *o, enum clovis_obj_opcode opcode,
		  const struct clovis_extvec *ext, struct clovis_bufvec *data,
		  uint32_t flags, struct clovis_op **op)
{
	static const uint32_t kinds[] = {0, ER_OBJ_READ, ER_OBJ_WRITE,
					 ER_OBJ_ALLOC, ER_OBJ_FREE};
	static const uint32_t stats[] = {0, CLOVIS_STAT_OBJ_READ,
					 CLOVIS_STAT_OBJ_WRITE,
					 CLOVIS_STAT_OBJ_ALLOC,
					 CLOVIS_STAT_OBJ_FREE};
	int rc = op == NULL ? err_set(-EINVAL, "obj_op: op is NULL")
			    : obj_op_check(o, opcode, ext, data, flags);

	if (rc != 0)
		return rc;
	rc = op_alloc(&o->ob_entity, kinds[opcode], stats[opcode], op);
	if (rc != 0)
		return rc;
	req_from_handle(&(*op)->op_req, &o->ob_entity);
	(*op)->op_req.er_ext = st_of(ext);
	(*op)->op_req.er_data = st_of(data);
	(*op)->op_here = (flags & CLOVIS_OF_HERE) != 0;
	return 0;
}

/* ------------------------------------------------------------ index ops */

/* Keys (and values for PUT): present, within limits. */
/* (The id string is made only for a message: a GET costs little more.) */
static int records_check(const struct clovis_id *cid,
			 enum clovis_idx_opcode opcode,
			 const struct clovis_bufvec *keys,
			 const struct clovis_bufvec *vals)
{
	for (uint32_t k = 0; k < keys->bv_nr; k++) {
		bool start = opcode == CLOVIS_IC_NEXT;

		if (start && k > 0)
			break;
		if (keys->bv_buf[k] == NULL && keys->bv_len[k] != 0 && !start)
			return err_set(-EINVAL, "index %s: record %u: NULL key "
				       "of %zu bytes", eng_id_str(st_of(cid)),
				       k, keys->bv_len[k]);
		if (keys->bv_buf[k] != NULL && keys->bv_len[k] > CLOVIS_KEY_MAX)
			return err_set(-E2BIG, "index %s: record %u: key of %zu "
				       "bytes > %u", eng_id_str(st_of(cid)), k,
				       keys->bv_len[k], CLOVIS_KEY_MAX);
		if (opcode != CLOVIS_IC_PUT)
			continue;
		if (vals->bv_buf[k] == NULL && vals->bv_len[k] != 0)
			return err_set(-EINVAL, "index %s: record %u: NULL value "
				       "of %zu bytes", eng_id_str(st_of(cid)),
				       k, vals->bv_len[k]);
		if (vals->bv_len[k] > CLOVIS_VAL_MAX)
			return err_set(-E2BIG, "index %s: record %u: value of %zu"
				       " bytes > %u", eng_id_str(st_of(cid)), k,
				       vals->bv_len[k], CLOVIS_VAL_MAX);
	}
	return 0;
}

static int idx_op_check(struct clovis_idx *i, enum clovis_idx_opcode opcode,
			struct clovis_bufvec *keys, struct clovis_bufvec *vals,
			int32_t *rcs, uint32_t flags)
{
	uint32_t allowed = opcode == CLOVIS_IC_PUT ? CLOVIS_IF_OVERWRITE :
			   opcode == CLOVIS_IC_NEXT ? CLOVIS_IF_EXCLUDE_START_KEY |
						      CLOVIS_IF_CALLER_BUFS : 0;
	const struct clovis_id *cid;

	if (i == NULL || !entity_valid(&i->in_entity) ||
	    i->in_entity.en_type != CLOVIS_ET_IDX)
		return err_set(-EINVAL, "idx_op: not an index handle");
	cid = &i->in_entity.en_id;
	if (i->in_entity.en_state != CLOVIS_ES_OPEN)
		return err_set(-EINVAL, "index %s: handle not open",
			       eng_id_str(st_of(cid)));
	if (opcode < CLOVIS_IC_GET || opcode > CLOVIS_IC_NEXT)
		return err_set(-EINVAL, "index %s: opcode %d unknown",
			       eng_id_str(st_of(cid)), (int)opcode);
	if (flags & ~allowed)
		return err_set(-EINVAL, "index %s: flags 0x%x not allowed for "
			       "this opcode", eng_id_str(st_of(cid)), flags);
	if (keys == NULL || keys->bv_nr == 0 || keys->bv_buf == NULL ||
	    keys->bv_len == NULL || rcs == NULL)
		return err_set(-EINVAL, "index %s: keys or rcs missing",
			       eng_id_str(st_of(cid)));
	if (keys->bv_nr > CLOVIS_VEC_MAX)
		return err_set(-E2BIG, "index %s: %u records > %u",
			       eng_id_str(st_of(cid)), keys->bv_nr,
			       CLOVIS_VEC_MAX);
	if (opcode == CLOVIS_IC_DEL && vals != NULL)
		return err_set(-EINVAL, "index %s: DEL takes no values",
			       eng_id_str(st_of(cid)));
	if (opcode != CLOVIS_IC_DEL &&
	    (vals == NULL || vals->bv_nr != keys->bv_nr ||
	     vals->bv_buf == NULL || vals->bv_len == NULL))
		return err_set(-EINVAL, "index %s: values missing or not one "
			       "per key", eng_id_str(st_of(cid)));
	if (flags & CLOVIS_IF_CALLER_BUFS)
		for (uint32_t k = 0; k < keys->bv_nr; k++)
			if (keys->bv_buf[k] == NULL || vals->bv_buf[k] == NULL)
				return err_set(-EINVAL, "index %s: record %u: "
					       "NULL %s buffer with "
					       "CLOVIS_IF_CALLER_BUFS",
					       eng_id_str(st_of(cid)), k,
					       keys->bv_buf[k] == NULL ? "key" :
					       "value");
	return records_check(cid, opcode, keys, vals);
}

int clovis_idx_op(struct clovis_idx *i, enum clovis_idx_opcode opcode,
		  struct clovis_bufvec *keys, struct clovis_bufvec *vals,
		  int32_t *rcs, uint32_t flags, struct clovis_op **op)
{
	static const uint32_t kinds[] = {0, ER_IDX_GET, ER_IDX_PUT, ER_IDX_DEL,
					 ER_IDX_NEXT};
	static const uint32_t stats[] = {0, CLOVIS_STAT_IDX_GET,
					 CLOVIS_STAT_IDX_PUT,
					 CLOVIS_STAT_IDX_DEL,
					 CLOVIS_STAT_IDX_NEXT};
	int rc = op == NULL ? err_set(-EINVAL, "idx_op: op is NULL")
			    : idx_op_check(i, opcode, keys, vals, rcs, flags);
	struct eng_req *r;

	if (rc != 0)
		return rc;
	rc = op_alloc(&i->in_entity, kinds[opcode], stats[opcode], op);
	if (rc != 0)
		return rc;
	r = &(*op)->op_req;
	req_from_handle(r, &i->in_entity);
	r->er_keys = st_of(keys);
	r->er_vals = st_of(vals);
	r->er_rcs = rcs;
	r->er_flags = flags;
	return 0;
}

/* ------------------------------------------------------------ management */

/* Management calls that act on one store's engine: not in cluster mode. */
static int store_only(struct clovis *cl, const char *what)
{
	if (cl->cl_eng != NULL)
		return 0;
	return err_set(-ENOTSUP, "%s: not available in cluster mode (it acts "
		       "on one store's engine)", what);
}

struct list_arg {
	struct clovis_id *la_ids;
	uint32_t la_n;
	uint32_t la_max;
};

static int list_one(void *arg, const struct st_id *id)
{
	struct list_arg *a = arg;

	if (a->la_n == a->la_max)
		return META_SCAN_STOP;
	a->la_ids[a->la_n++] = (struct clovis_id){id->si_hi, id->si_lo};
	return a->la_n == a->la_max ? META_SCAN_STOP : META_SCAN_NEXT;
}

/* Walk member records of (cont, type) after *after into ids. */
static int list_walk(struct clovis *cl, MDB_txn *txn,
		     const struct clovis_id *cont, uint32_t type,
		     const struct clovis_id *after, struct clovis_id *ids,
		     uint32_t *nr)
{
	struct st_id c = {cont->ci_hi, cont->ci_lo}, a;
	struct list_arg la = {ids, 0, *nr};
	int rc;

	if (after != NULL)
		a = (struct st_id){after->ci_hi, after->ci_lo};
	rc = meta_member_scan(txn, eng_meta(cl->cl_eng), &c, type,
			      after != NULL ? &a : NULL, list_one, &la, "list");
	*nr = la.la_n;
	return rc;
}

int clovis_entity_list(struct clovis *cl, struct clovis_realm *r,
		       enum clovis_entity_type type,
		       const struct clovis_id *after, struct clovis_id *ids,
		       uint32_t *nr)
{
	struct clovis_id root = {0, 0};
	struct meta_ent me;
	MDB_txn *txn;
	int rc;

	if (cl == NULL || ids == NULL || nr == NULL)
		return err_set(-EINVAL, "entity_list: NULL argument");
	if ((r == NULL) != (type == CLOVIS_ET_CONTAINER) ||
	    type < CLOVIS_ET_CONTAINER || type > CLOVIS_ET_IDX)
		return err_set(-EINVAL, "entity_list: containers are listed with "
			       "r == NULL, objects and indices in a realm");
	if (cl->cl_eng == NULL)
		return cluster_entity_list(cl, r, type, st_of(after),
					   st_of(ids), nr);
	rc = meta_rtxn_begin(eng_meta(cl->cl_eng), &txn, "begin list");
	if (rc != 0)
		return rc;
	if (r != NULL) {
		rc = meta_ent_get(txn, eng_meta(cl->cl_eng), st_of(&r->re_id),
				  &me);
		if (rc == 0 && me.me_type != CLOVIS_ET_CONTAINER)
			rc = -ENOENT;
		if (rc == -ENOENT)
			rc = err_set(-ENOENT, "container %s does not exist",
				     eng_id_str(st_of(&r->re_id)));
	}
	if (rc == 0)
		rc = list_walk(cl, txn, r ? &r->re_id : &root, type, after, ids,
			       nr);
	meta_rtxn_put(eng_meta(cl->cl_eng), txn);
	return rc;
}

int clovis_dev_list(struct clovis *cl, struct clovis_dev_info *info,
		    uint32_t *nr)
{
	uint32_t n;

	if (cl == NULL || nr == NULL || (info == NULL && *nr > 0))
		return err_set(-EINVAL, "dev_list: NULL argument");
	if (cl->cl_eng == NULL)
		return cluster_dev_list(cl, st_of(info), nr);
	n = eng_dev_nr(cl->cl_eng);
	for (uint32_t i = 0; i < n && i < *nr; i++)
		eng_dev_info(cl->cl_eng, i, st_of(&info[i]));
	*nr = n;
	return 0;
}

int clovis_pool_list(struct clovis *cl, struct clovis_pool_info *info,
		     uint32_t *nr)
{
	uint32_t n;

	if (cl == NULL || nr == NULL || (info == NULL && *nr > 0))
		return err_set(-EINVAL, "pool_list: NULL argument");
	if (cl->cl_eng == NULL)
		return cluster_pool_list(cl, info, nr);
	n = eng_pool_nr(cl->cl_eng);
	for (uint32_t p = 0; p < n && p < *nr; p++) {
		const struct eng_pool *ep = eng_pool_get(cl->cl_eng, p);
		struct clovis_pool_info *pi = &info[p];

		memset(pi, 0, sizeof *pi);
		pi->pi_index = p;
		pi->pi_nr_devs = ep->ep_nr;
		snprintf(pi->pi_name, sizeof pi->pi_name, "%s", ep->ep_name);
		for (uint32_t i = 0; i < ep->ep_nr; i++) {
			struct st_dev_info di;

			pi->pi_devs[i] = ep->ep_devs[i];
			eng_dev_info(cl->cl_eng, ep->ep_devs[i], &di);
			pi->pi_size_bytes += di.di_size_bytes;
			pi->pi_free_bytes += di.di_free_bytes;
		}
	}
	*nr = n;
	return 0;
}

int clovis_dev_fail(struct clovis *cl, uint32_t dev)
{
	uint32_t owner, d;
	int rc;

	if (cl == NULL)
		return err_set(-EINVAL, "dev_fail: NULL instance");
	if (cl->cl_eng != NULL)
		return eng_dev_fail(cl->cl_eng, dev,
				    "marked failed by the operator");
	rc = cluster_dev_locate(cl, dev, &owner, &d);
	return rc != 0 ? rc : cluster_dev_fail(cl, owner, d);
}

/* A replacement path: set, at most LIM_PATH_MAX bytes. */
static int dev_path_check(const char *path, const char *what)
{
	if (path == NULL || path[0] == '\0' || strlen(path) > LIM_PATH_MAX)
		return err_set(-EINVAL, "%s: replacement path empty or longer "
			       "than %u", what, LIM_PATH_MAX);
	return 0;
}

int clovis_dev_replace(struct clovis *cl, uint32_t dev, const char *path)
{
	uint32_t owner, d;
	int rc;

	if (cl == NULL)
		return err_set(-EINVAL, "dev_replace: NULL instance");
	if (cl->cl_eng != NULL)
		return eng_dev_replace(cl->cl_eng, dev, path);
	rc = dev_path_check(path, "dev_replace");
	if (rc == 0)
		rc = cluster_dev_locate(cl, dev, &owner, &d);
	return rc != 0 ? rc : cluster_dev_replace(cl, owner, d, path);
}

/* The index of server name of a cluster client (what names the call,
 * alt the call for an embedded store). */
static int dev_server(struct clovis *cl, const char *server, uint32_t *s,
		      const char *what, const char *alt)
{
	if (cl == NULL || server == NULL)
		return err_set(-EINVAL, "%s: NULL %s", what,
			       cl == NULL ? "instance" : "server");
	if (cl->cl_eng != NULL)
		return err_set(-ENOTSUP, "%s: an embedded store has no servers "
			       "(use %s())", what, alt);
	return cluster_server_find(cl, server, s);
}

int clovis_server_dev_fail(struct clovis *cl, const char *server,
			   uint32_t dev)
{
	uint32_t s;
	int rc = dev_server(cl, server, &s, "server_dev_fail",
			    "clovis_dev_fail");

	return rc != 0 ? rc : cluster_dev_fail(cl, s, dev);
}

int clovis_server_dev_replace(struct clovis *cl, const char *server,
			      uint32_t dev, const char *path)
{
	uint32_t s;
	int rc = dev_server(cl, server, &s, "server_dev_replace",
			    "clovis_dev_replace");

	if (rc == 0)
		rc = dev_path_check(path, "server_dev_replace");
	return rc != 0 ? rc : cluster_dev_replace(cl, s, dev, path);
}

/* The open object handle o, or an error naming what is wrong.  Both
 * modes: embedded, the engine's layer code runs here (core/comp.c); in
 * cluster mode, on the server serving the object's home (cli_cluster.c
 * "layers", core/server/srv_layer.c). */
static int obj_handle_check(struct clovis_obj *o, const char *what)
{
	if (o == NULL || !entity_valid(&o->ob_entity) ||
	    o->ob_entity.en_type != CLOVIS_ET_OBJ)
		return err_set(-EINVAL, "%s: not an object handle", what);
	if (o->ob_entity.en_state != CLOVIS_ES_OPEN)
		return err_set(-EINVAL, "%s: object %s is not open (CREATE or "
			       "OPEN it first)", what,
			       eng_id_str(st_of(&o->ob_entity.en_id)));
	return 0;
}

/* The engine of o's instance; NULL in cluster mode. */
static struct eng *obj_eng(const struct clovis_obj *o)
{
	return o->ob_entity.en_cl->cl_eng;
}

/* The handle's incarnation, which a cluster's server checks. */
static uint64_t obj_inc(const struct clovis_obj *o)
{
	return o->ob_attr.oa_ctime_ns;
}

int clovis_obj_layer_add(struct clovis_obj *o, const struct clovis_obj_attr *attr,
			 uint32_t priority, uint32_t *layer)
{
	struct clovis_obj_attr a;
	struct meta_ent me = {0};
	const struct st_id *id;
	int rc = obj_handle_check(o, "layer_add");

	if (rc == 0 && (attr == NULL || layer == NULL))
		rc = err_set(-EINVAL, "layer_add: NULL argument");
	if (rc != 0)
		return rc;
	a = *attr;
	a.oa_block_shift = o->ob_attr.oa_block_shift;
	rc = obj_attr_check(&o->ob_entity.en_id, &a);
	if (rc != 0)
		return rc;
	me.me_layout = a.oa_layout;
	me.me_tier = a.oa_tier;
	me.me_pool = a.oa_pool;
	me.me_n = (uint8_t)a.oa_data_units;
	me.me_k = (uint8_t)a.oa_parity_units;
	me.me_s = (uint8_t)a.oa_spare_units;
	me.me_unit_shift = (uint8_t)a.oa_unit_shift;
	me.me_block_shift = a.oa_block_shift;
	id = st_of(&o->ob_entity.en_id);
	if (obj_eng(o) == NULL)
		return cluster_layer_add(o->ob_entity.en_cl, id, obj_inc(o), &me,
					 priority, layer);
	return comp_layer_add(obj_eng(o), id, &me, priority, layer);
}

int clovis_obj_layer_drop(struct clovis_obj *o, uint32_t layer)
{
	int rc = obj_handle_check(o, "layer_drop");

	if (rc != 0)
		return rc;
	if (obj_eng(o) == NULL)
		return cluster_layer_drop(o->ob_entity.en_cl,
					  st_of(&o->ob_entity.en_id),
					  obj_inc(o), layer);
	return comp_layer_drop(obj_eng(o), st_of(&o->ob_entity.en_id), layer);
}

int clovis_obj_layer_list(struct clovis_obj *o, struct clovis_layer_info *out,
			  uint32_t *nr)
{
	int rc = obj_handle_check(o, "layer_list");

	if (rc == 0 && (nr == NULL || (out == NULL && *nr > 0)))
		rc = err_set(-EINVAL, "layer_list: NULL argument");
	if (rc != 0)
		return rc;
	if (obj_eng(o) == NULL)
		return cluster_layer_list(o->ob_entity.en_cl,
					  st_of(&o->ob_entity.en_id),
					  obj_inc(o), st_of(out), nr);
	return comp_layer_list(obj_eng(o), st_of(&o->ob_entity.en_id),
			       st_of(out), nr);
}

int clovis_obj_layer_move(struct clovis_obj *o, uint64_t start_blk,
			  uint64_t nr_blks, uint32_t to, uint64_t *moved)
{
	const struct st_id *id;
	uint64_t m = 0;
	int rc = obj_handle_check(o, "layer_move");

	if (rc == 0 && (nr_blks == 0 || start_blk >= CLOVIS_BLOCK_NR_MAX ||
			nr_blks > CLOVIS_BLOCK_NR_MAX - start_blk))
		rc = err_set(-EINVAL, "layer_move: object %s: blocks %" PRIu64
			     "+%" PRIu64 " out of range",
			     eng_id_str(st_of(&o->ob_entity.en_id)), start_blk,
			     nr_blks);
	if (rc == 0) {
		id = st_of(&o->ob_entity.en_id);
		rc = obj_eng(o) == NULL ?
		     cluster_layer_move(o->ob_entity.en_cl, id, obj_inc(o),
					start_blk, nr_blks, to, &m) :
		     comp_move(obj_eng(o), id, start_blk, nr_blks, to, &m);
	}
	if (moved != NULL)
		*moved = m;
	return rc;
}

int clovis_obj_layer_of(struct clovis_obj *o, uint64_t blk, uint32_t *layer)
{
	int rc = obj_handle_check(o, "layer_of");

	if (rc == 0 && layer == NULL)
		rc = err_set(-EINVAL, "layer_of: NULL argument");
	if (rc == 0 && blk >= CLOVIS_BLOCK_NR_MAX)
		rc = err_set(-EINVAL, "layer_of: object %s: block %" PRIu64
			     " past CLOVIS_BLOCK_NR_MAX",
			     eng_id_str(st_of(&o->ob_entity.en_id)), blk);
	if (rc != 0)
		return rc;
	if (obj_eng(o) == NULL)
		return cluster_layer_of(o->ob_entity.en_cl,
					st_of(&o->ob_entity.en_id), obj_inc(o),
					blk, layer);
	return comp_where(obj_eng(o), st_of(&o->ob_entity.en_id), blk, layer);
}

int clovis_obj_layer_map(struct clovis_obj *o, uint64_t start_blk,
			 uint64_t nr_blks, struct clovis_layer_ext *out,
			 uint32_t *nr, uint64_t *next)
{
	const struct st_id *id;
	uint64_t nx = 0;
	int rc = obj_handle_check(o, "layer_map");

	if (rc == 0 && (out == NULL || nr == NULL || *nr == 0))
		rc = err_set(-EINVAL, "layer_map: out or nr NULL, or *nr 0");
	if (rc == 0 && (nr_blks == 0 || start_blk >= CLOVIS_BLOCK_NR_MAX ||
			nr_blks > CLOVIS_BLOCK_NR_MAX - start_blk))
		rc = err_set(-EINVAL, "layer_map: object %s: blocks %" PRIu64
			     "+%" PRIu64 " empty or past CLOVIS_BLOCK_NR_MAX",
			     eng_id_str(st_of(&o->ob_entity.en_id)), start_blk,
			     nr_blks);
	if (rc != 0)
		return rc;
	id = st_of(&o->ob_entity.en_id);
	rc = obj_eng(o) == NULL ?
	     cluster_layer_map(o->ob_entity.en_cl, id, obj_inc(o), start_blk,
			       nr_blks, st_of(out), nr, &nx) :
	     comp_layer_map(obj_eng(o), id, start_blk, nr_blks, st_of(out), nr,
			    &nx);
	if (rc == 0 && next != NULL)
		*next = nx;
	return rc;
}

int clovis_unit_counters_get(struct clovis *cl,
			     struct clovis_unit_counters *out)
{
	struct eng_ucounters *uc;

	if (cl == NULL || out == NULL)
		return err_set(-EINVAL, "unit_counters_get: NULL argument");
	if (store_only(cl, "unit_counters_get") != 0)
		return -ENOTSUP;
	uc = eng_ucounters(cl->cl_eng);
	out->uc_degraded_reads = __atomic_load_n(&uc->uc_degraded_reads,
						 __ATOMIC_RELAXED);
	out->uc_crc_errors = __atomic_load_n(&uc->uc_crc_errors,
					     __ATOMIC_RELAXED);
	out->uc_read_repairs = __atomic_load_n(&uc->uc_read_repairs,
					       __ATOMIC_RELAXED);
	return 0;
}

int clovis_smr_clean(struct clovis *cl, uint32_t dev, uint32_t live_pct,
		     struct clovis_clean_stats *st)
{
	struct eng_clean_stats cs;
	int rc;

	if (cl == NULL)
		return err_set(-EINVAL, "smr_clean: NULL instance");
	if (store_only(cl, "smr_clean") != 0)
		return -ENOTSUP;
	if (live_pct > 100)
		return err_set(-EINVAL, "smr_clean: live_pct %u above 100",
			       live_pct);
	rc = eng_smr_clean(cl->cl_eng, dev, live_pct, &cs);
	if (st != NULL)
		*st = (struct clovis_clean_stats){
			.cs_zones_reset = cs.cs_zones_reset,
			.cs_bytes_moved = cs.cs_bytes_moved,
			.cs_records_moved = cs.cs_records_moved};
	return rc;
}

typedef int (*walk_fn)(struct eng *, stripe_progress_fn, void *,
		       struct stripe_walk_stats *);

/* The engine's walk figures as the API's. */
static void walk_stats_out(const struct stripe_walk_stats *ss,
			   struct clovis_walk_stats *st)
{
	*st = (struct clovis_walk_stats){
		.ws_units = ss->sw_units, .ws_bytes = ss->sw_bytes,
		.ws_rebuilt = ss->sw_rebuilt, .ws_moved = ss->sw_moved,
		.ws_corrupt = ss->sw_corrupt,
		.ws_unrepairable = ss->sw_unrepairable,
		.ws_elapsed_ns = ss->sw_elapsed_ns,
		.ws_resumed = (uint32_t)ss->sw_resumed,
		.ws_devices = ss->sw_devices,
		.ws_walk_units = ss->sw_walk_units,
		.ws_walk_rebuilt = ss->sw_walk_rebuilt,
		.ws_walk_moved = ss->sw_walk_moved,
		.ws_walk_corrupt = ss->sw_walk_corrupt,
		.ws_walk_unrepairable = ss->sw_walk_unrepairable,
		.ws_shared = ss->sw_shared};
}

static int walk_call(struct clovis *cl, walk_fn fn, clovis_progress_fn pf,
		     void *arg, struct clovis_walk_stats *st, const char *what)
{
	struct stripe_walk_stats ss;
	struct clovis_walk_stats cs;
	int rc;

	if (cl == NULL)
		return err_set(-EINVAL, "%s: NULL instance", what);
	if (cl->cl_eng == NULL) {
		/* Cluster mode: every server walks the objects homed on it
		 * (SOP_WALK); pf is not called. */
		rc = cluster_walk(cl, fn == stripe_repair ? SWK_REPAIR :
				  fn == stripe_rebalance ? SWK_REBALANCE :
				  SWK_SCRUB, what, &cs);
		if (st != NULL)
			*st = cs;
		return rc;
	}
	rc = fn(cl->cl_eng, pf, arg, &ss);
	if (st != NULL)
		walk_stats_out(&ss, st);
	return rc;
}

int clovis_repair(struct clovis *cl, clovis_progress_fn fn, void *arg,
		  struct clovis_walk_stats *st)
{
	return walk_call(cl, stripe_repair, fn, arg, st, "repair");
}

int clovis_rebalance(struct clovis *cl, clovis_progress_fn fn, void *arg,
		     struct clovis_walk_stats *st)
{
	return walk_call(cl, stripe_rebalance, fn, arg, st, "rebalance");
}

int clovis_scrub(struct clovis *cl, clovis_progress_fn fn, void *arg,
		 struct clovis_walk_stats *st)
{
	return walk_call(cl, stripe_scrub, fn, arg, st, "scrub");
}

int clovis_obj_scrub(struct clovis_obj *o, struct clovis_walk_stats *st)
{
	struct stripe_walk_stats ss;
	int rc = obj_handle_check(o, "obj_scrub");

	if (rc == 0 && st == NULL)
		rc = err_set(-EINVAL, "obj_scrub: NULL st");
	if (rc != 0)
		return rc;
	if (obj_eng(o) == NULL)
		return cluster_obj_scrub(o->ob_entity.en_cl,
					 st_of(&o->ob_entity.en_id),
					 obj_inc(o), st);
	rc = comp_obj_scrub(obj_eng(o), st_of(&o->ob_entity.en_id), &ss);
	walk_stats_out(&ss, st);
	return rc;
}

int clovis_addb_metrics(struct clovis *cl, const char *server,
			uint32_t min_priority, uint32_t flags, char **text,
			size_t *len)
{
	struct addb_snap *s = NULL;
	FILE *f;
	int rc;

	if (text == NULL || len == NULL)
		return err_set(-EINVAL, "addb_metrics: NULL text or len");
	*text = NULL;
	*len = 0;
	if (min_priority > 100 || (flags & ~CLOVIS_ADDB_JSON) != 0)
		return err_set(-EINVAL, "addb_metrics: min_priority %u (0..100) "
			       "or flags 0x%x (CLOVIS_ADDB_JSON) out of range",
			       min_priority, flags);
	if (server != NULL) {
		if (cl == NULL || cl->cl_eng != NULL)
			return err_set(-EINVAL, "addb_metrics: server %s: only "
				       "a cluster-mode instance reads a "
				       "server's metrics", server);
		return cluster_metrics(cl, server, min_priority,
				       flags & CLOVIS_ADDB_JSON, text, len);
	}
	rc = addb_snap_self(&s);
	if (rc != 0)
		return rc;
	f = open_memstream(text, len);
	if (f == NULL) {
		addb_snap_free(s);
		return err_set(-ENOMEM, "addb_metrics: no memory");
	}
	rc = flags & CLOVIS_ADDB_JSON ? addb_json_write(s, min_priority, f) :
					addb_prom_write(s, min_priority, f);
	fclose(f);
	addb_snap_free(s);
	if (rc != 0) {
		free(*text);
		*text = NULL;
		*len = 0;
	}
	return rc;
}

int clovis_addb_trace(uint32_t sample, uint32_t size_mib)
{
	return addb_trace_set(sample, size_mib);
}

int clovis_addb_records(struct clovis *cl, const char *server,
			uint32_t max_records, char **text, size_t *len)
{
	struct addb_trace *t = NULL;
	FILE *f;
	int rc;

	if (text == NULL || len == NULL || max_records > 10000)
		return err_set(-EINVAL, "addb_records: NULL text or len, or "
			       "max_records %u over 10000", max_records);
	*text = NULL;
	*len = 0;
	if (server != NULL) {
		if (cl == NULL || cl->cl_eng != NULL)
			return err_set(-EINVAL, "addb_records: server %s: only "
				       "a cluster-mode instance reads a "
				       "server's records", server);
		return cluster_records(cl, server, max_records, text, len);
	}
	if (max_records == 0)
		max_records = 10000;
	rc = addb_trace_read(getpid(), NULL, max_records, &t);
	if (rc != 0)
		return rc;
	f = open_memstream(text, len);
	rc = f == NULL ? err_set(-ENOMEM, "addb_records: no memory") :
	     addb_trace_json(t, max_records, f);
	if (f != NULL)
		fclose(f);
	addb_trace_free(t);
	if (rc != 0) {
		free(*text);
		*text = NULL;
		*len = 0;
	}
	return rc;
}

static pthread_mutex_t addb_serve_lock = PTHREAD_MUTEX_INITIALIZER;
static struct addb_http *addb_served;

int clovis_addb_serve(const char *listen, uint16_t *port)
{
	int rc = 0;

	pthread_mutex_lock(&addb_serve_lock);
	if (addb_served != NULL)
		rc = err_set(-EALREADY, "addb_serve: this process serves its "
			     "metrics already (port %u)",
			     addb_http_port(addb_served));
	else
		rc = addb_http_start(listen, &addb_served);
	if (rc == 0 && port != NULL)
		*port = addb_http_port(addb_served);
	pthread_mutex_unlock(&addb_serve_lock);
	return rc;
}

void clovis_addb_serve_stop(void)
{
	pthread_mutex_lock(&addb_serve_lock);
	addb_http_stop(addb_served);
	addb_served = NULL;
	pthread_mutex_unlock(&addb_serve_lock);
}

int clovis_stats_get(struct clovis *cl, struct clovis_stat out[CLOVIS_STAT_NR])
{
	if (cl == NULL || out == NULL)
		return err_set(-EINVAL, "stats_get: NULL argument");
	stats_report(&cl->cl_stats, out);
	return 0;
}

int clovis_stats_clients(struct clovis *cl,
			 struct clovis_stat out[CLOVIS_STAT_NR],
			 struct clovis_stats_clients *info)
{
	if (cl == NULL || out == NULL)
		return err_set(-EINVAL, "stats_clients: NULL argument");
	if (cl->cl_eng != NULL)
		return err_set(-ENOTSUP, "stats_clients: cluster mode only (an "
			       "embedded store's statistics are its own: "
			       "clovis_stats_get)");
	return cluster_stats_clients(cl, out, info);
}

int clovis_stats_reset(struct clovis *cl)
{
	if (cl == NULL)
		return err_set(-EINVAL, "stats_reset: NULL argument");
	stats_zero(&cl->cl_stats);
	if (cl->cl_eng == NULL)
		return 0; /* cluster mode: this client's figures only */
	return eng_sys_save(cl->cl_eng, "stats", &cl->cl_stats.ss_base,
			    sizeof cl->cl_stats.ss_base);
}

_Static_assert((int)CLOVIS_HA_MAP == (int)HAK_MAP &&
	       (int)CLOVIS_HA_EVENTS == (int)HAK_EVENTS &&
	       (int)CLOVIS_HA_DECISIONS == (int)HAK_DECISIONS &&
	       (int)CLOVIS_HA_STATE == (int)HAK_STATE,
	       "clovis_ha_what = ha_req_kind");

int clovis_ha_query(struct clovis *cl, uint32_t what, uint64_t from,
		    uint32_t limit, char **text)
{
	if (cl == NULL || text == NULL)
		return err_set(-EINVAL, "ha_query: NULL argument");
	*text = NULL;
	if (what != CLOVIS_HA_MAP && what != CLOVIS_HA_EVENTS &&
	    what != CLOVIS_HA_DECISIONS && what != CLOVIS_HA_STATE)
		return err_set(-EINVAL, "ha_query: what %u is not one of "
			       "enum clovis_ha_what", what);
	if (cl->cl_eng != NULL)
		return err_set(-ENOTSUP, "ha_query: an embedded store has no "
			       "cluster map");
	return cluster_ha(cl, what, from, limit, NULL, text);
}

int clovis_ha_server_state(struct clovis *cl, const char *name, char **text)
{
	if (cl == NULL || name == NULL || text == NULL)
		return err_set(-EINVAL, "ha_server_state: NULL argument");
	*text = NULL;
	if (cl->cl_eng != NULL)
		return err_set(-ENOTSUP, "ha_server_state: an embedded store "
			       "has no servers");
	return cluster_ha_on(cl, name, HAK_STATE, text);
}

int clovis_ha_report(struct clovis *cl, const char *event_json)
{
	char *out = NULL;
	int rc;

	if (cl == NULL || event_json == NULL || event_json[0] == '\0')
		return err_set(-EINVAL, "ha_report: NULL or empty event");
	if (cl->cl_eng != NULL)
		return err_set(-ENOTSUP, "ha_report: an embedded store has no "
			       "cluster map");
	rc = cluster_ha(cl, HAK_REPORT, 0, 0, event_json, &out);
	free(out);
	return rc;
}

int clovis_server_list(struct clovis *cl, struct clovis_server_info *info,
		       uint32_t *nr)
{
	uint32_t n;

	if (cl == NULL || nr == NULL || (info == NULL && *nr > 0))
		return err_set(-EINVAL, "server_list: NULL argument");
	if (cl->cl_eng != NULL)
		return err_set(-ENOTSUP, "server_list: an embedded store has no "
			       "servers");
	n = cluster_nr_servers(cl);
	for (uint32_t s = 0; s < n && s < *nr; s++)
		cluster_status(cl, s, &info[s]);
	*nr = n;
	return 0;
}
