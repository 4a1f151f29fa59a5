/*
 * store.c — store set-up: create (crash-safe, with the CREATING marker),
 * open (lock, devices, configuration, pools, allocators rebuilt from the
 * maps), the start of the engine's threads, and destroy.  See engine.h and
 * core/README.md "On disk".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <urcu.h>

#include "core/engine_internal.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"

/* Test builds: a point where the process kills itself with SIGKILL when
 * armed (tests/crash/crash_test.sh: a create stopped there). */
#define FAULT_KILL(name) (FAULT_HIT(name) && raise(SIGKILL) == 0)

#define STORE_MAGIC 0x5354524154415354ull /* "STRATAST" */

/* ------------------------------------------------------ store set-up */

static void dev_path_make(char *out, size_t len, const struct eng_conf *c,
			  const uint8_t uuid[16], const struct conf_dev *cd)
{
	char u[33];

	if (cd->cd_path[0] != '\0') {
		snprintf(out, len, "%s", cd->cd_path);
		return;
	}
	for (int k = 0; k < 16; k++)
		snprintf(u + 2 * k, 3, "%02x", uuid[k]);
	if (cd->cd_tier == ST_TIER_NVRAM)
		snprintf(out, len, "%s/strata-%s-%s.dev",
			 c->ec_nvram_dir ? c->ec_nvram_dir : "/dev/shm", u,
			 cd->cd_name);
	else
		snprintf(out, len, "%s/devices/%s.dev", c->ec_dir, cd->cd_name);
}

/* Save the configuration text in sys/conf. */
static int store_conf_save(struct eng *e, MDB_txn *txn)
{
	char *text = NULL;
	int rc = conf_emit(&e->e_conf, &text);

	if (rc == 0)
		rc = meta_sys_put(txn, &e->e_meta, "conf", text, strlen(text));
	free(text);
	return rc;
}

/* Make the configured devices and record them in the store's metadata. */
/* A create that failed: remove the device files of its first nr devices
 * (an NVRAM device's file lives outside the data directory, in the NVRAM
 * directory, and would be left there otherwise). */
static void store_unmake_devices(struct eng *e, const struct eng_conf *c,
				 uint32_t nr)
{
	char path[LIM_PATH_MAX + 1];

	for (uint32_t j = 0; j < nr && j < e->e_conf.c_nr_devs; j++) {
		const struct conf_dev *cd = &e->e_conf.c_devs[j];

		if (cd->cd_remote[0] != '\0')
			continue;
		dev_path_make(path, sizeof path, c, e->e_store.st_uuid, cd);
		unlink(path);
	}
}

static int store_make_devices(struct eng *e, const struct eng_conf *c,
			      MDB_txn *txn)
{
	char dir[LIM_PATH_MAX + 16], name[16], path[LIM_PATH_MAX + 1];
	uint64_t size = c->ec_dev_size ? c->ec_dev_size :
			e->e_conf.c_dev_size ? e->e_conf.c_dev_size :
			LIM_DEV_SIZE_DEFAULT;
	int rc;

	snprintf(dir, sizeof dir, "%s/devices", c->ec_dir);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return err_set(-errno, "%s: %s", dir, strerror(errno));
	for (uint32_t i = 0; i < e->e_conf.c_nr_devs; i++) {
		const struct conf_dev *cd = &e->e_conf.c_devs[i];
		struct tier_format_opts fo = {.tf_zone_size = cd->cd_zone_size,
					      .tf_fill = e->e_conf.c_dev_fill};
		struct dev_rec dr = {.dr_tier = cd->cd_tier,
				     .dr_size = cd->cd_size ? cd->cd_size : size};

		if (cd->cd_remote[0] != '\0') {
			/* Another server's device: nothing to make here. */
			snprintf(dr.dr_path, sizeof dr.dr_path, "%s%s",
				 ENG_REMOTE_PREFIX, cd->cd_remote);
			goto record;
		}
		dev_path_make(dr.dr_path, sizeof dr.dr_path, c,
			      e->e_store.st_uuid, cd);
		unlink(dr.dr_path); /* left by an interrupted create */
		rc = tier_dev_format_opts(dr.dr_path, cd->cd_tier,
					  e->e_store.st_uuid, i, dr.dr_size, &fo);
		if (rc == 0 && FAULT_KILL("store.create.kill"))
			return 0;
		if (rc == 0 && FAULT_HIT("store.create.dev"))
			rc = err_set(-ENOSPC, "store %s: device %u (%s): no "
				     "space left (fault point store.create.dev)",
				     c->ec_dir, i, dr.dr_path);
		if (rc != 0) {
			store_unmake_devices(e, c, i + 1);
			return rc;
		}
		eng_dev_path_store(e, dr.dr_path, path, sizeof path);
		snprintf(dr.dr_path, sizeof dr.dr_path, "%s", path);
record:
		snprintf(name, sizeof name, "dev.%u", i);
		rc = meta_sys_put(txn, &e->e_meta, name, &dr, sizeof dr);
		if (rc != 0) {
			store_unmake_devices(e, c, i + 1);
			return rc;
		}
	}
	e->e_store.st_nr_devs = e->e_conf.c_nr_devs;
	rc = store_conf_save(e, txn);
	if (rc != 0)
		store_unmake_devices(e, c, e->e_conf.c_nr_devs);
	return rc;
}

/* Write the default container's entity record. */
static int store_make_default_container(struct eng *e, MDB_txn *txn)
{
	struct st_id id = ST_ID_DEFAULT_CONTAINER;
	struct meta_ent me = {
		.me_version = META_FORMAT_VERSION,
		.me_type = ST_ET_CONTAINER,
		.me_ctime_ns = eng_now_ns(),
	};

	struct st_id root = {0, 0};
	uint8_t kb[META_MEMBER_KEY_LEN];
	MDB_val k = meta_member_key(kb, &root, ST_ET_CONTAINER, &id);
	MDB_val v = {0, ""};
	int rc;

	me.me_mtime_ns = me.me_ctime_ns;
	rc = meta_ent_put(txn, &e->e_meta, &id, &me);
	if (rc == 0 && (rc = meta_mput(&e->e_meta, txn, e->e_meta.m_member, &k, &v, 0)) != 0)
		rc = meta_err(rc, "default container member");
	return rc;
}

/* Make a new store: identity, devices, default container, in one commit. */
static int store_create(struct eng *e, const struct eng_conf *c)
{
	MDB_txn *txn;
	int rc;

	e->e_store.st_magic = STORE_MAGIC; /* st_uuid: eng_store_start() */
	e->e_store.st_version = META_FORMAT_VERSION;
	e->e_store.st_ctime_ns = eng_now_ns();
	rc = c->ec_config ? conf_load(&e->e_conf, c->ec_config)
			  : conf_default(&e->e_conf, c->ec_dev_size);
	if (rc != 0)
		return rc;
	e->e_conf_loaded = true;
	if (e->e_conf.c_nr_devs == 0 || e->e_conf.c_nr_devs > LIM_DEV_MAX)
		return err_set(-EINVAL, "configuration: %u devices (1..%u)",
			       e->e_conf.c_nr_devs, LIM_DEV_MAX);
	rc = meta_wtxn_open(&e->e_meta, &txn);
	if (rc != 0)
		return meta_err(rc, "begin create");
	rc = store_make_devices(e, c, txn);
	if (rc == 0)
		rc = store_make_default_container(e, txn);
	if (rc == 0)
		rc = meta_sys_put(txn, &e->e_meta, "store", &e->e_store,
				  sizeof e->e_store);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = meta_txn_commit(&e->e_meta, txn);
	return rc == 0 ? 0 : meta_err(rc, "commit create");
}

/* Open device i recorded as dr: a file, or a remote device through the
 * hook of a cluster server. */
static int store_open_device(struct eng *e, uint32_t i,
			     const struct dev_rec *dr)
{
	struct eng_dev *d = &e->e_devs[i];
	const struct tier_ops *ops;
	char path[LIM_PATH_MAX + 64];
	struct dev_rec over;
	int rc;

	if (e->e_dev_path != NULL) {
		/* the opener's path for this device (eng_conf.ec_dev_path) */
		over = *dr;
		rc = e->e_dev_path(e->e_dev_path_arg, i, dr->dr_path,
				   over.dr_path, sizeof over.dr_path);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			over.dr_path[LIM_PATH_MAX] = '\0';
			LOG_INFO("store %s: device %u (%s) attached as %s",
				 e->e_dir, i, dr->dr_path, over.dr_path);
			free(d->ed_rec_path);
			d->ed_rec_path = strdup(dr->dr_path);
			if (d->ed_rec_path == NULL)
				return err_set(-ENOMEM, "store %s: device %u",
					       e->e_dir, i);
			dr = &over;
		}
	}
	if (!eng_dev_path_remote(dr->dr_path)) {
		eng_dev_path_open(e, dr->dr_path, path, sizeof path);
		rc = tier_dev_open(&d->ed_dev, path, dr->dr_tier,
				   e->e_store.st_uuid, i);
		if (rc != 0 && dr->dr_path[0] == '/' &&
		    strcmp(path, dr->dr_path) != 0) {
			/* not this device after all: the path as recorded */
			LOG_INFO("store %s: %s: %s; trying %s", e->e_dir, path,
				 err_msg(), dr->dr_path);
			rc = tier_dev_open(&d->ed_dev, dr->dr_path, dr->dr_tier,
					   e->e_store.st_uuid, i);
		}
		return rc;
	}
	ops = tier_driver_find(ENG_REMOTE_DRIVER);
	if (ops == NULL)
		return err_set(-ENOTSUP, "store %s: device %u is %s, another "
			       "server's: this store belongs to a cluster "
			       "server (strata-server opens it)", e->e_dir, i,
			       dr->dr_path);
	return tier_dev_attach(&d->ed_dev, ops, dr->dr_path, dr->dr_tier, i,
			       dr->dr_size, NULL);
}

/* A local device of a sliced (cluster) store: only its own slice is this
 * store's to allocate from; mark the rest used (never mapped, so the
 * rebuild from the maps cannot collide with it). */
static int store_slice_mark(struct eng *e, uint32_t i)
{
	struct eng_dev *d = &e->e_devs[i];
	uint64_t size = tier_dev_size(d->ed_dev);
	uint64_t sl = conf_slice_size(size, e->e_conf.c_slices);
	uint64_t lo = sl * e->e_conf.c_slice, hi = lo + sl;
	int rc = 0;

	if (e->e_conf.c_slices == 0 || tier_dev_zoned(d->ed_dev) ||
	    i >= e->e_conf.c_nr_devs || e->e_conf.c_devs[i].cd_remote[0] ||
	    e->e_conf.c_devs[i].cd_local)
		return 0;
	if (lo > 0)
		rc = alloc_mark(&d->ed_alloc, 0, lo >> LIM_ALLOC_UNIT_SHIFT);
	if (rc == 0 && hi < size)
		rc = alloc_mark(&d->ed_alloc, hi >> LIM_ALLOC_UNIT_SHIFT,
				(size - hi) >> LIM_ALLOC_UNIT_SHIFT);
	if (rc != 0)
		return err_set(-ST_ECORRUPT, "store %s: device %u: slice "
			       "%u of %u cannot be set apart", e->e_dir, i,
			       e->e_conf.c_slice, e->e_conf.c_slices);
	return 0;
}

/* Open every device recorded in the store. */
static int store_open_devices(struct eng *e, MDB_txn *txn)
{
	char name[16];
	int rc;

	if (e->e_store.st_nr_devs == 0 || e->e_store.st_nr_devs > LIM_DEV_MAX)
		return err_set(-ST_ECORRUPT, "store %s: %u devices",
			       e->e_dir, e->e_store.st_nr_devs);
	for (uint32_t i = 0; i < e->e_store.st_nr_devs; i++) {
		struct dev_rec dr;
		struct eng_dev *d = &e->e_devs[i];

		snprintf(name, sizeof name, "dev.%u", i);
		rc = meta_sys_get(txn, &e->e_meta, name, &dr, sizeof dr);
		if (rc == -ENOENT)
			rc = err_set(-ST_ECORRUPT, "store %s: device %u "
				     "record missing", e->e_dir, i);
		if (rc != 0)
			return rc;
		dr.dr_path[LIM_PATH_MAX] = '\0';
		rc = store_open_device(e, i, &dr);
		if (rc != 0)
			return rc;
		d->ed_tier = dr.dr_tier;
		pthread_mutex_init(&d->ed_zlock, NULL);
		d->ed_zclean = UINT32_MAX;
		d->ed_state = dr.dr_state & 0xffffu;
		d->ed_flags = dr.dr_state >> 16;
		e->e_dev_tier[i] = dr.dr_tier;
		e->e_nr_devs = i + 1;
		rc = alloc_init(&d->ed_alloc,
				tier_dev_size(d->ed_dev) >> LIM_ALLOC_UNIT_SHIFT);
		if (rc == 0)
			rc = store_slice_mark(e, i);
		if (rc != 0)
			return rc;
		if (i < e->e_conf.c_nr_devs)
			e->e_dev_domain[i] = e->e_conf.c_devs[i].cd_domain;
	}
	/* Plain objects are placed over the local devices only (they come
	 * first in a cluster store): one server's data, its own failure. */
	e->e_pool = (struct layout_pool){e->e_nr_devs, e->e_dev_tier,
					 e->e_dev_domain};
	for (uint32_t i = 0; i < e->e_conf.c_nr_devs && i < e->e_nr_devs; i++)
		if (e->e_conf.c_devs[i].cd_remote[0] != '\0') {
			e->e_pool.lp_nr = i;
			break;
		}
	return 0;
}

/* The failure domains of pool ep (cluster stores): every device's domain
 * numbered in order of first appearance; none when a device has none. */
static void store_pool_domains(struct eng *e, struct eng_pool *ep)
{
	uint32_t seen[LIM_DEV_MAX], nr = 0;

	ep->ep_nr_dom = 0;
	for (uint32_t i = 0; i < ep->ep_nr; i++) {
		uint32_t dm = e->e_dev_domain[ep->ep_devs[i]], j;

		if (dm == 0)
			return;
		for (j = 0; j < nr && seen[j] != dm; j++)
			;
		if (j == nr)
			seen[nr++] = dm;
		ep->ep_dom[i] = (uint8_t)j;
	}
	ep->ep_nr_dom = nr >= 2 ? nr : 0;
}

/* Parse the configuration saved in sys/conf. */
static int store_conf_load(struct eng *e, MDB_txn *txn)
{
	MDB_val k = {4, "conf"}, v;
	int rc = mdb_get(txn, e->e_meta.m_sys, &k, &v);

	if (rc != 0)
		return rc == MDB_NOTFOUND ?
		       err_set(-ST_ECORRUPT, "store %s: configuration "
			       "record missing", e->e_dir) :
		       meta_err(rc, "read configuration");
	if (e->e_conf_loaded) {
		conf_fini(&e->e_conf);
		e->e_conf_loaded = false;
	}
	rc = conf_parse(&e->e_conf, v.mv_data, v.mv_size);
	if (rc != 0)
		return err_set(-ST_ECORRUPT, "store %s: saved configuration "
			       "does not parse: %s", e->e_dir, err_msg());
	e->e_conf_loaded = true;
	return 0;
}

/* Pools from the configuration (device i of the configuration is store
 * device i); the device model where configured. */
static int store_pools_make(struct eng *e)
{
	const struct conf *c = &e->e_conf;

	if (c->c_nr_devs != e->e_nr_devs)
		return err_set(-ST_ECORRUPT, "store %s: configuration lists "
			       "%u devices, the store has %u", e->e_dir,
			       c->c_nr_devs, e->e_nr_devs);
	e->e_pools = calloc(c->c_nr_pools ? c->c_nr_pools : 1,
			    sizeof *e->e_pools);
	if (e->e_pools == NULL)
		return err_set(-ENOMEM, "pools");
	for (uint32_t p = 0; p < c->c_nr_pools; p++) {
		struct eng_pool *ep = &e->e_pools[p];

		snprintf(ep->ep_name, sizeof ep->ep_name, "%s",
			 c->c_pools[p].cp_name);
		ep->ep_nr = c->c_pools[p].cp_nr;
		for (uint32_t i = 0; i < ep->ep_nr; i++) {
			if (c->c_pools[p].cp_devs[i] >= e->e_nr_devs)
				return err_set(-ST_ECORRUPT, "pool %s: device "
					       "%u not in store", ep->ep_name,
					       c->c_pools[p].cp_devs[i]);
			ep->ep_devs[i] = c->c_pools[p].cp_devs[i];
		}
		store_pool_domains(e, ep);
	}
	e->e_nr_pools = c->c_nr_pools;
	for (uint32_t i = 0; i < e->e_nr_devs; i++)
		eng_dev_model_apply(e, i);
	return 0;
}

/* Load identity and devices, rebuild the allocators from the maps. */
/* A store opened without the unit layouts (eng_conf.ec_layout_ops NULL)
 * cannot account for the space of unit records: refuse it if it has any. */
static int store_no_units(struct eng *e, MDB_txn *txn)
{
	MDB_stat st;
	int rc = mdb_stat(txn, eng_meta(e)->m_unit, &st);

	if (rc != 0)
		return meta_err(rc, "unit table");
	if (st.ms_entries > 0)
		return err_set(-EOPNOTSUPP, "store %s: holds %zu unit records "
			       "(pdclust, mirror objects), and this process was "
			       "assembled without the unit layouts (no "
			       "eng_conf.ec_layout_ops)", e->e_dir,
			       (size_t)st.ms_entries);
	return 0;
}

static int store_load(struct eng *e)
{
	MDB_txn *txn;
	int rc;

	rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return meta_err(rc, "begin load");
	rc = meta_sys_get(txn, &e->e_meta, "store", &e->e_store,
			  sizeof e->e_store);
	if (rc == -ENOENT || (rc == 0 && e->e_store.st_magic != STORE_MAGIC))
		rc = err_set(-ST_ECORRUPT, "store %s: identity record "
			     "missing or damaged", e->e_dir);
	else if (rc == 0 && e->e_store.st_version != META_FORMAT_VERSION)
		rc = err_set(-ST_EVERSION, "store %s: format version %u, "
			     "this library reads %u", e->e_dir,
			     e->e_store.st_version, META_FORMAT_VERSION);
	if (rc == 0)
		rc = store_conf_load(e, txn);
	if (rc == 0)
		rc = store_open_devices(e, txn);
	if (rc == 0)
		rc = store_pools_make(e);
	if (rc == 0)
		rc = obj_rebuild_alloc(e, txn);
	if (rc == 0 && e->e_lops != NULL)
		rc = e->e_lops->elo_rebuild_alloc(e, txn);
	if (rc == 0 && e->e_lops == NULL)
		rc = store_no_units(e, txn);
	mdb_txn_abort(txn);
	if (rc == 0)
		rc = eng_smr_recover(e, NULL); /* zones with nothing live */
	for (uint32_t i = 0; rc == 0 && i < e->e_store.st_nr_devs; i++)
		eng_space_gauge(e, i);
	return rc;
}

/* Lock the store directory against other processes. */
static int store_lock(struct eng *e)
{
	char path[LIM_PATH_MAX + 16];

	snprintf(path, sizeof path, "%s/LOCK", e->e_dir);
	e->e_lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (e->e_lockfd < 0)
		return err_set(-errno, "store %s: lock file: %s", e->e_dir,
			       strerror(errno));
	if (flock(e->e_lockfd, LOCK_EX | LOCK_NB) != 0)
		return err_set(errno == EWOULDBLOCK ? -EBUSY : -errno,
			       "store %s is in use by another process",
			       e->e_dir);
	return 0;
}

/*
 * Crash-safe creation.  A create writes DATA_DIR/CREATING (the store's
 * uuid and NVRAM directory, synced with its directory) before anything
 * else, then the metadata environment and the devices, then commits the
 * identity record, the device records and the default container in ONE
 * LMDB transaction, syncs it, and only then removes the marker.  So:
 *   marker, identity record present   the create ended but for the
 *                                      marker's removal: finished at the
 *                                      next open (the record is synced,
 *                                      the marker removed);
 *   no identity record, no other      the create never committed, no
 *   record in table sys                data can exist: an open with
 *                                      ST_CONF_CREATE makes the store
 *                                      again (same uuid, so the same
 *                                      device names; what the first try
 *                                      left is removed first), an open
 *                                      without it fails -ENOENT naming
 *                                      the directory;
 *   no identity record, other sys     damage, never re-created:
 *   records                            -ST_ECORRUPT as before.
 * A store made before the marker existed and killed while being created
 * (an environment with an empty sys table) is handled the same way.
 */
#define STORE_CREATING "CREATING"


/* The error of an open without CREATE of a store whose create never
 * ended. */
static int store_incomplete(const char *dir)
{
	return err_set(-ENOENT, "data directory %s holds a store whose "
		       "creation never completed (the process creating it "
		       "stopped); nothing was stored in it: open it with "
		       "CLOVIS_CONF_CREATE to create it again", dir);
}

/* fsync directory dir (names made or removed in it durable). */
static int dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) != 0)
		rc = err_set(-errno, "directory %s: sync: %s", dir,
			     strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Write the creation marker of e's store (uuid, NVRAM directory). */
static int store_creating_mark(struct eng *e, const struct eng_conf *c)
{
	char path[LIM_PATH_MAX + 32], text[LIM_PATH_MAX + 96];
	int fd, n = 0, rc = 0;

	n += snprintf(text, sizeof text, "strata store being created\nuuid ");
	for (int k = 0; k < 16; k++)
		n += snprintf(text + n, sizeof text - (size_t)n, "%02x",
			      e->e_store.st_uuid[k]);
	n += snprintf(text + n, sizeof text - (size_t)n, "\nnvram_dir %s\n",
		      c->ec_nvram_dir ? c->ec_nvram_dir : "/dev/shm");
	snprintf(path, sizeof path, "%s/%s", c->ec_dir, STORE_CREATING);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "store %s: %s: %s", c->ec_dir, path,
			       strerror(errno));
	if (write(fd, text, (size_t)n) != n || fsync(fd) != 0)
		rc = err_set(errno ? -errno : -EIO, "store %s: %s: %s",
			     c->ec_dir, path, strerror(errno));
	close(fd);
	return rc == 0 ? dir_sync(c->ec_dir) : rc;
}

/* Read the creation marker in dir: the uuid (*have false when the marker
 * names none) and the NVRAM directory (nvdir, "" when none). */
static void store_creating_read(const char *dir, uint8_t uuid[16],
				bool *have, char *nvdir, size_t nvlen)
{
	char path[LIM_PATH_MAX + 32], line[LIM_PATH_MAX + 32];
	FILE *f;

	*have = false;
	nvdir[0] = '\0';
	snprintf(path, sizeof path, "%s/%s", dir, STORE_CREATING);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		size_t len = strcspn(line, "\n");
		unsigned v;

		line[len] = '\0';
		if (strncmp(line, "uuid ", 5) == 0 && len == 5 + 32) {
			*have = true;
			for (int k = 0; k < 16 && *have; k++)
				if (sscanf(line + 5 + 2 * k, "%2x", &v) == 1)
					uuid[k] = (uint8_t)v;
				else
					*have = false;
		} else if (strncmp(line, "nvram_dir ", 10) == 0 &&
			   len - 10 < nvlen) {
			memcpy(nvdir, line + 10, len - 10 + 1);
		}
	}
	fclose(f);
}

/* The create of the store in dir is complete: remove its marker. */
static int store_creating_done(const char *dir)
{
	char path[LIM_PATH_MAX + 32];

	snprintf(path, sizeof path, "%s/%s", dir, STORE_CREATING);
	if (unlink(path) != 0 && errno != ENOENT)
		return err_set(-errno, "store %s: %s: %s", dir, path,
			       strerror(errno));
	return dir_sync(dir);
}

/*
 * What an interrupted create of the store in dir left, before it is made
 * again: its metadata (the environment, or its NVRAM directory and the
 * link), the device files of the data directory, and the NVRAM devices
 * named by its uuid in the NVRAM directory the marker names.  Only for a
 * store whose identity record was never committed (no data can exist).
 */
static void store_creating_clear(const char *dir, const uint8_t uuid[16],
				 bool have_uuid, const char *nvdir)
{
	char path[LIM_PATH_MAX + 300], u[33];
	struct dirent *de;
	DIR *d;

	meta_nv_remove(dir);
	snprintf(path, sizeof path, "%s/meta/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/meta/lock.mdb", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/devices", dir);
	d = opendir(path);
	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n > 4 && strcmp(de->d_name + n - 4, ".dev") == 0) {
			snprintf(path, sizeof path, "%s/devices/%s", dir,
				 de->d_name);
			unlink(path);
		}
	}
	if (d != NULL)
		closedir(d);
	if (!have_uuid || nvdir[0] == '\0')
		return;
	for (int k = 0; k < 16; k++)
		snprintf(u + 2 * k, 3, "%02x", uuid[k]);
	d = opendir(nvdir);
	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "strata-", 7) == 0 &&
		    strncmp(de->d_name + 7, u, 32) == 0 &&
		    de->d_name[39] == '-' && n > 4 &&
		    strcmp(de->d_name + n - 4, ".dev") == 0) {
			snprintf(path, sizeof path, "%s/%s", nvdir, de->d_name);
			unlink(path);
		}
	}
	if (d != NULL)
		closedir(d);
}

/* Whether the store's create was committed: 1 (its identity record is
 * there, or other sys records are: store_load judges them), 0 (table sys
 * is empty: the create never committed), or a negative code. */
static int store_committed(struct eng *e)
{
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin open");
	rc = mdb_cursor_open(txn, e->e_meta.m_sys, &cur);
	if (rc == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(txn);
	if (rc == 0)
		return 1;
	return rc == MDB_NOTFOUND ? 0 : meta_err(rc, "read table sys");
}

/* Check the directory exists (or make it), whether it holds a store, and
 * whether its metadata is on NVRAM (*linked; a dangling link fails), and
 * whether a create of it began and may not have ended (*creating: the
 * marker STORE_CREATING is there). */
static int store_dir_check(const struct eng_conf *c, bool *exists,
			   bool *linked, bool *creating)
{
	char path[LIM_PATH_MAX + 32];
	struct stat st;
	int rc;

	if (stat(c->ec_dir, &st) != 0) {
		if (errno != ENOENT || !c->ec_create)
			return err_set(-errno, "data directory %s: %s",
				       c->ec_dir, strerror(errno));
		if (mkdir(c->ec_dir, 0755) != 0)
			return err_set(-errno, "data directory %s: %s",
				       c->ec_dir, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		return err_set(-ENOTDIR, "data directory %s: not a directory",
			       c->ec_dir);
	}
	if (c->ec_meta_dir != NULL) {
		/* an engine on a shadow (eng_conf.ec_meta_dir): it must exist */
		*linked = false;
		*creating = false;
		if (c->ec_create || c->ec_meta_nvram)
			return err_set(-EINVAL, "store %s on %s: a store on "
				       "another metadata directory is never "
				       "created", c->ec_dir, c->ec_meta_dir);
		snprintf(path, sizeof path, "%s/data.mdb", c->ec_meta_dir);
		*exists = stat(path, &st) == 0;
		return *exists ? 0 : err_set(-ENOENT, "metadata directory %s "
					     "holds no store", c->ec_meta_dir);
	}
	rc = meta_nv_check(c->ec_dir, linked);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof path, "%s/%s", c->ec_dir, STORE_CREATING);
	*creating = lstat(path, &st) == 0;
	snprintf(path, sizeof path, "%s/meta/data.mdb", c->ec_dir);
	*exists = stat(path, &st) == 0;
	if (!*exists && !c->ec_create)
		return *creating ? store_incomplete(c->ec_dir) :
		       err_set(-ENOENT, "data directory %s holds no store "
			       "(create one with CLOVIS_CONF_CREATE)", c->ec_dir);
	return 0;
}

/* A new store: its uuid (uuid, when an interrupted create is made again,
 * else a new one), its creation marker, and its metadata directory on
 * NVRAM when asked (c->ec_meta_nvram: DATA_DIR/meta links to
 * NVDIR/strata-UUID-meta). */
static int store_prepare(struct eng *e, const struct eng_conf *c,
			 const uint8_t *uuid)
{
	int rc;

	if (uuid != NULL)
		memcpy(e->e_store.st_uuid, uuid, 16);
	else if (getrandom(e->e_store.st_uuid, 16, 0) != 16)
		return err_set(-errno, "store uuid: %s", strerror(errno));
	rc = store_creating_mark(e, c);
	if (rc != 0 || FAULT_KILL("store.create.kill"))
		return rc;
	e->e_meta_nv = c->ec_meta_nvram;
	if (!c->ec_meta_nvram)
		return 0;
	return meta_nv_make(c->ec_dir, c->ec_nvram_dir, e->e_store.st_uuid);
}

/*
 * An existing environment, opened: finish a create that committed but
 * kept its marker, or, for one that never committed, fail (no CREATE) or
 * close and clear it for a new create (*exists = false, *redo true).
 */
static int store_resume(struct eng *e, const struct eng_conf *c,
			bool creating, bool *exists, bool *redo)
{
	int rc = store_committed(e);

	if (rc == 1 && creating) {
		/* The create committed: make it durable, drop the marker. */
		rc = mdb_env_sync(e->e_meta.m_env, 1);
		if (rc != 0)
			return meta_err(rc, "sync created store");
		LOG_INFO("store %s: finishing its create (marker left by a "
			 "stopped process)", c->ec_dir);
		return store_creating_done(c->ec_dir);
	}
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (!c->ec_create)
		return store_incomplete(c->ec_dir);
	LOG_WARNING("store %s: its creation never completed; making it again",
		    c->ec_dir);
	meta_close(&e->e_meta);
	*exists = false;
	*redo = true;
	return 0;
}

/* Make the store: marker, metadata, devices, one commit, synced, marker
 * removed (see STORE_CREATING). */
static int store_make(struct eng *e, const struct eng_conf *c, bool redo)
{
	char mdir[LIM_PATH_MAX + 16], nvdir[LIM_PATH_MAX + 1];
	uint8_t uuid[16];
	bool have = false;
	int rc;

	if (redo) {
		store_creating_read(c->ec_dir, uuid, &have, nvdir,
				    sizeof nvdir);
		store_creating_clear(c->ec_dir, uuid, have, nvdir);
	}
	rc = store_prepare(e, c, have ? uuid : NULL);
	if (rc != 0)
		return rc;
	snprintf(mdir, sizeof mdir, "%s/meta", c->ec_dir);
	rc = meta_open(&e->e_meta, mdir,
		       c->ec_meta_size ? c->ec_meta_size : LIM_META_SIZE_DEFAULT,
		       META_CREATE | (e->e_meta_nv ? META_SYNC_META : 0));
	if (rc == 0 && FAULT_KILL("store.create.kill"))
		return 0;
	if (rc == 0)
		rc = store_create(e, c);
	if (rc == 0 && (rc = mdb_env_sync(e->e_meta.m_env, 1)) != 0)
		rc = meta_err(rc, "sync created store");
	if (rc == 0 && FAULT_KILL("store.create.kill"))
		return 0;
	if (rc == 0)
		rc = store_creating_done(c->ec_dir);
	return rc;
}

int eng_store_start(struct eng *e, const struct eng_conf *c)
{
	char mdir[LIM_PATH_MAX + 16];
	bool exists = true, creating = false, redo = false;
	int rc;

	rc = store_dir_check(c, &exists, &e->e_meta_nv, &creating);
	if (rc == 0)
		rc = store_lock(e);
	if (rc != 0)
		return rc;
	if (exists) {
		if (c->ec_meta_dir != NULL)
			snprintf(mdir, sizeof mdir, "%s", c->ec_meta_dir);
		else
			snprintf(mdir, sizeof mdir, "%s/meta", c->ec_dir);
		rc = meta_open(&e->e_meta, mdir,
			       c->ec_meta_size ? c->ec_meta_size :
			       LIM_META_SIZE_DEFAULT,
			       e->e_meta_nv ? META_SYNC_META : 0);
		if (rc == -ST_ECORRUPT && creating && c->ec_meta_dir == NULL) {
			/* killed after its environment was made, before the
			 * transaction that makes the tables committed (crash
			 * test, 260 ms): nothing can be stored in it */
			if (!c->ec_create)
				return store_incomplete(c->ec_dir);
			LOG_WARNING("store %s: its creation never completed "
				    "(%s); making it again", c->ec_dir,
				    err_msg());
			exists = false;
			redo = true;
			rc = 0;
		} else if (rc == 0) {
			rc = store_resume(e, c, creating, &exists, &redo);
		}
	} else if (creating) {
		redo = true; /* stopped before its environment was made */
		LOG_WARNING("store %s: its creation never completed; making it "
			    "again", c->ec_dir);
	}
	if (rc == 0 && !exists)
		rc = store_make(e, c, redo);
	if (rc == 0)
		rc = store_load(e);
	if (rc != 0 && !exists && e->e_meta_nv) {
		meta_close(&e->e_meta); /* a failed create: leave no metadata */
		meta_nv_remove(c->ec_dir);
	}
	if (rc != 0)
		return rc;
	pthread_mutex_init(&e->e_rlock, NULL);
	pthread_cond_init(&e->e_rcond, NULL);
	pthread_cond_init(&e->e_rdone, NULL);
	rc = pthread_create(&e->e_reclaimer, NULL, eng_reclaimer_main, e);
	if (rc != 0)
		return err_set(-rc, "reclaimer thread: %s", strerror(rc));
	e->e_rrunning = true;
	eng_cq_init(&e->e_syncq);
	eng_cq_init(&e->e_commitq);
	pthread_mutex_init(&e->e_cmlock, NULL);
	pthread_mutex_init(&e->e_slock, NULL);
	rc = pthread_create(&e->e_committer, NULL, eng_committer_main, e);
	if (rc != 0)
		return err_set(-rc, "committer thread: %s", strerror(rc));
	pthread_mutex_init(&e->e_rwlock, NULL);
	pthread_cond_init(&e->e_rwcond, NULL);
	rc = pthread_create(&e->e_rwaiter, NULL, eng_rwaiter_main, e);
	if (rc != 0) {
		eng_cq_stop(&e->e_commitq);
		pthread_join(e->e_committer, NULL);
		return err_set(-rc, "replication wait thread: %s",
			       strerror(rc));
	}
	e->e_rwrunning = true;
	rc = pthread_create(&e->e_syncer, NULL, eng_syncer_main, e);
	if (rc != 0) {
		eng_cq_stop(&e->e_commitq);
		pthread_join(e->e_committer, NULL);
		eng_rwaiter_stop(e);
		return err_set(-rc, "syncer thread: %s", strerror(rc));
	}
	e->e_crunning = true;
	return 0;
}

/* Unlink every device recorded in the store. */
static int store_unlink_devices(struct eng *e)
{
	MDB_txn *txn;
	char name[16], path[LIM_PATH_MAX + 64];
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin destroy");
	rc = meta_sys_get(txn, &e->e_meta, "store", &e->e_store,
			  sizeof e->e_store);
	for (uint32_t i = 0; rc == 0 && i < e->e_store.st_nr_devs &&
			     i < LIM_DEV_MAX; i++) {
		struct dev_rec dr;

		snprintf(name, sizeof name, "dev.%u", i);
		if (meta_sys_get(txn, &e->e_meta, name, &dr, sizeof dr) != 0)
			continue;
		dr.dr_path[LIM_PATH_MAX] = '\0';
		if (eng_dev_path_remote(dr.dr_path))
			continue; /* another server's */
		eng_dev_path_open(e, dr.dr_path, path, sizeof path);
		if (unlink(path) != 0 && errno != ENOENT)
			LOG_WARNING("destroy: %s: %s", path, strerror(errno));
	}
	mdb_txn_abort(txn);
	return rc == -ENOENT ? 0 : rc;
}

int eng_destroy(const char *dir)
{
	static const char *const files[] = {"meta/data.mdb", "meta/lock.mdb",
					    "meta", "devices", STORE_CREATING,
					    "LOCK"};
	struct eng_conf c = {.ec_dir = dir};
	char mdir[LIM_PATH_MAX + 16], path[LIM_PATH_MAX + 32];
	char nvdir[LIM_PATH_MAX + 1];
	struct eng *e = calloc(1, sizeof *e);
	bool exists, linked, creating = false, have = false;
	uint8_t uuid[16];
	int rc;

	if (e == NULL)
		return err_set(-ENOMEM, "destroy");
	e->e_lockfd = -1;
	snprintf(e->e_dir, sizeof e->e_dir, "%s", dir);
	/* A store whose create never ended has no device records to go by:
	 * its marker names what to remove (store_creating_clear). */
	c.ec_create = true; /* no mkdir: the directory is checked first */
	rc = access(dir, F_OK) == 0 ? 0 : err_set(-errno, "data directory "
		     "%s: %s", dir, strerror(errno));
	if (rc == 0)
		rc = store_dir_check(&c, &exists, &linked, &creating);
	if (rc == 0 && !exists && !creating)
		rc = err_set(-ENOENT, "data directory %s holds no store", dir);
	if (rc == 0)
		rc = store_lock(e);
	snprintf(mdir, sizeof mdir, "%s/meta", dir);
	if (rc == 0 && exists)
		rc = meta_open(&e->e_meta, mdir, LIM_META_SIZE_MIN, 0);
	if (rc == 0 && exists && (!creating || store_committed(e) == 1))
		rc = store_unlink_devices(e);
	else if (rc == 0) {
		store_creating_read(dir, uuid, &have, nvdir, sizeof nvdir);
		meta_close(&e->e_meta);
		store_creating_clear(dir, uuid, have, nvdir);
	}
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/devices", dir);
		for (uint32_t t = 0; t < ST_TIER_NR; t++) {
			char dev[LIM_PATH_MAX + 48];

			snprintf(dev, sizeof dev, "%s/%s%u.dev", path,
				 tier_name(t), t);
			unlink(dev);
		}
	}
	eng_close(e);
	if (rc == 0)
		meta_nv_remove(dir); /* the metadata on NVRAM, and the link */
	for (size_t i = 0; rc == 0 && i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (remove(path) != 0 && errno != ENOENT)
			LOG_WARNING("destroy: %s: %s", path, strerror(errno));
	}
	if (rc == 0)
		rmdir(dir);
	return rc;
}
