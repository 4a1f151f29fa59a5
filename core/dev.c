/*
 * dev.c — the store's devices: device model, usability, recorded paths
 * (relative to the data directory), state changes, failure and replacement.
 * See engine.h.
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
#include "core/log.h"

/* ------------------------------------------------ devices and pools */

/* Turn the device model of device i on or off from the configuration (or
 * on with class defaults for every tier when the engine was opened so). */
void eng_dev_model_apply(struct eng *e, uint32_t i)
{
	struct eng_dev *d = &e->e_devs[i];
	const struct conf_model *cm = &e->e_conf.c_model[d->ed_tier];
	struct tier_model m;

	if (!cm->cm_on && !e->e_model) {
		tier_dev_model_set(d->ed_dev, NULL);
		return;
	}
	tier_model_default(d->ed_tier, &m);
	if (cm->cm_on) {
		m.tm_read_lat_ns = cm->cm_read_lat_ns ? cm->cm_read_lat_ns :
				   m.tm_read_lat_ns;
		m.tm_write_lat_ns = cm->cm_write_lat_ns ? cm->cm_write_lat_ns :
				    m.tm_write_lat_ns;
		m.tm_sync_lat_ns = cm->cm_sync_lat_ns ? cm->cm_sync_lat_ns :
				   m.tm_sync_lat_ns;
		m.tm_read_bw = cm->cm_read_bw ? cm->cm_read_bw : m.tm_read_bw;
		m.tm_write_bw = cm->cm_write_bw ? cm->cm_write_bw : m.tm_write_bw;
	}
	tier_dev_model_set(d->ed_dev, &m);
}

bool eng_dev_usable(struct eng *e, uint32_t i)
{
	return i < e->e_nr_devs &&
	       __atomic_load_n(&e->e_devs[i].ed_state, __ATOMIC_ACQUIRE) ==
		       ED_ONLINE &&
	       tier_dev_reachable(e->e_devs[i].ed_dev);
}

bool eng_dev_unreachable(struct eng *e, uint32_t i)
{
	return i < e->e_nr_devs &&
	       __atomic_load_n(&e->e_devs[i].ed_state, __ATOMIC_ACQUIRE) ==
		       ED_ONLINE &&
	       !tier_dev_reachable(e->e_devs[i].ed_dev);
}

bool eng_dev_recheck(struct eng *e, uint32_t i)
{
	return eng_dev_unreachable(e, i) &&
	       tier_dev_recheck(e->e_devs[i].ed_dev) && eng_dev_usable(e, i);
}

bool eng_dev_path_remote(const char *path)
{
	return strncmp(path, ENG_REMOTE_PREFIX,
		       sizeof ENG_REMOTE_PREFIX - 1) == 0;
}

/*
 * Device paths in sys/dev.N (issue 26 point 9).  A device file inside the
 * data directory is recorded relative to it ("devices/flash1.dev", or
 * "strata-UUID-nvram0.dev" when the NVRAM directory is the data directory),
 * so a store whose directory is renamed, moved or copied opens its own
 * files; a device outside it (the NVRAM device in /dev/shm, a configured
 * path elsewhere) is recorded absolute, as it was.  Stores made before
 * recorded every path as made: absolute (or relative to the working
 * directory for a relative data directory); eng_dev_path_open() still finds
 * those (below).
 */

/* The form of path to record for a device of e: relative to the data
 * directory when inside it. */
void eng_dev_path_store(const struct eng *e, const char *path, char *out,
			   size_t len)
{
	size_t n = strlen(e->e_dir);

	while (n > 1 && e->e_dir[n - 1] == '/')
		n--;
	if (strncmp(path, e->e_dir, n) == 0 && path[n] == '/' &&
	    path[n + 1] != '\0' && !eng_dev_path_remote(path))
		snprintf(out, len, "%s", path + n + 1);
	else
		snprintf(out, len, "%s", path);
}

/* The path to open for a device recorded as rec: a relative record inside
 * the data directory; an absolute one as recorded, but when it is outside
 * the data directory and names X/devices/NAME while DIR/devices/NAME
 * exists (or X/NAME while DIR/NAME exists: an NVRAM device kept in the
 * data directory), that one (a store of the old format, moved or copied:
 * the superblock's uuid and index are checked at open all the same); a
 * relative record that is not in the data directory but exists from the
 * working directory, as recorded (old format, relative data directory). */
void eng_dev_path_open(const struct eng *e, const char *rec, char *out,
			  size_t len)
{
	const char *base;
	size_t n = strlen(e->e_dir);
	int k;

	while (n > 1 && e->e_dir[n - 1] == '/')
		n--;
	if (eng_dev_path_remote(rec)) {
		snprintf(out, len, "%s", rec);
		return;
	}
	if (rec[0] != '/') {
		snprintf(out, len, "%.*s/%s", (int)n, e->e_dir, rec);
		if (access(out, F_OK) != 0 && access(rec, F_OK) == 0)
			snprintf(out, len, "%s", rec);
		return;
	}
	snprintf(out, len, "%s", rec);
	if (strncmp(rec, e->e_dir, n) == 0 && rec[n] == '/')
		return;
	if (access(rec, F_OK) == 0 && strncmp(rec, "/dev/shm/", 9) == 0)
		return; /* the NVRAM device of a store on /dev/shm */
	base = strrchr(rec, '/');
	if (base - rec >= 8 && strncmp(base - 8, "/devices", 8) == 0)
		k = snprintf(out, len, "%.*s/devices%s", (int)n, e->e_dir,
			     base);
	else
		k = snprintf(out, len, "%.*s%s", (int)n, e->e_dir, base);
	if (k < 0 || (size_t)k >= len || access(out, F_OK) != 0)
		snprintf(out, len, "%s", rec);
	else
		LOG_INFO("store %s: device recorded as %s opened as %s (the "
			 "store was moved or copied)", e->e_dir, rec, out);
}

/* Write device i's record with its state (caller holds e_dev_lock). */
static int dev_rec_save(struct eng *e, uint32_t i)
{
	struct eng_dev *d = &e->e_devs[i];
	struct dev_rec dr = {.dr_tier = d->ed_tier,
			     .dr_state = d->ed_state | d->ed_flags << 16,
			     .dr_size = tier_dev_size(d->ed_dev)};
	char name[16];

	/* the recorded path, not the one the opener attached it under
	 * (a takeover engine's must not end up in the home's store) */
	if (d->ed_rec_path != NULL)
		snprintf(dr.dr_path, sizeof dr.dr_path, "%s", d->ed_rec_path);
	else
		eng_dev_path_store(e, d->ed_dev->td_path, dr.dr_path,
				   sizeof dr.dr_path);
	snprintf(name, sizeof name, "dev.%u", i);
	return eng_sys_save(e, name, &dr, sizeof dr);
}

int eng_dev_state_set(struct eng *e, uint32_t i, uint32_t state,
		      uint32_t flags)
{
	int rc;

	if (i >= e->e_nr_devs)
		return err_set(-EINVAL, "device %u: no such device (the store "
			       "has %u)", i, e->e_nr_devs);
	pthread_mutex_lock(&e->e_dev_lock);
	__atomic_store_n(&e->e_devs[i].ed_state, state, __ATOMIC_RELEASE);
	e->e_devs[i].ed_flags = flags;
	rc = dev_rec_save(e, i);
	pthread_mutex_unlock(&e->e_dev_lock);
	return rc;
}

void eng_dev_home_back(struct eng *e)
{
	for (uint32_t i = 0; i < e->e_nr_devs; i++) {
		struct eng_dev *d = &e->e_devs[i];
		uint32_t st = d->ed_state;

		if (!(d->ed_flags & EDF_HOME_LOST) ||
		    strcmp(d->ed_dev->td_ops->to_name, ENG_REMOTE_DRIVER) == 0)
			continue;
		LOG_WARNING("store %s: device %u (%s) was %s while its server "
			    "was lost (its home served elsewhere): back online%s",
			    e->e_dir, i, d->ed_dev->td_path,
			    st == ED_REPAIRED ? "repaired" : "failed",
			    st == ED_REPAIRED ? ", to be rebalanced (its units "
			    "were rebuilt elsewhere)" : " (its units not "
			    "rebuilt elsewhere are still on it)");
		if (eng_dev_state_set(e, i, ED_ONLINE, st == ED_REPAIRED ?
				      EDF_REBALANCE : 0) != 0)
			LOG_WARNING("store %s: device %u: %s", e->e_dir, i,
				    err_msg());
	}
}

int eng_dev_fail(struct eng *e, uint32_t i, const char *reason)
{
	if (i >= e->e_nr_devs)
		return err_set(-EINVAL, "device %u: no such device (the store "
			       "has %u)", i, e->e_nr_devs);
	if (e->e_devs[i].ed_state != ED_ONLINE)
		return 0;
	LOG_ERROR("device %u (%s) failed: %s", i, e->e_devs[i].ed_dev->td_path,
		  reason);
	return eng_dev_state_set(e, i, ED_FAILED, 0);
}

void eng_dev_io_error(struct eng *e, uint32_t i)
{
	struct eng_dev *d = eng_dev_get(e, i);
	char why[64];

	if (d == NULL || tier_dev_errors(d->ed_dev) < LIM_DEV_ERRORS_MAX)
		return;
	snprintf(why, sizeof why, "%" PRIu64 " I/O errors",
		 tier_dev_errors(d->ed_dev));
	eng_dev_fail(e, i, why);
}

int eng_dev_replace(struct eng *e, uint32_t i, const char *path)
{
	struct tier_format_opts fo = {.tf_fill = e->e_conf.c_dev_fill};
	struct tier_dev *nd = NULL, *od;
	struct eng_dev *d;
	int rc;

	if (i >= e->e_nr_devs)
		return err_set(-EINVAL, "device %u: no such device (the store "
			       "has %u)", i, e->e_nr_devs);
	d = &e->e_devs[i];
	if (path == NULL || path[0] == '\0' || strlen(path) > LIM_PATH_MAX)
		return err_set(-EINVAL, "device %u: replacement path empty or "
			       "longer than %u", i, LIM_PATH_MAX);
	if (d->ed_state != ED_REPAIRED)
		return err_set(-EBUSY, "device %u (%s) is %s: only a failed and "
			       "repaired device can be replaced (strata device "
			       "fail, then strata repair)", i,
			       d->ed_dev->td_path,
			       d->ed_state == ED_ONLINE ? "online" :
			       "failed but not repaired");
	if (tier_dev_zoned(d->ed_dev))
		fo.tf_zone_size = tier_dev_zone_size(d->ed_dev);
	rc = tier_dev_format_opts(path, d->ed_tier, e->e_store.st_uuid, i,
				  tier_dev_size(d->ed_dev), &fo);
	if (rc == 0)
		rc = tier_dev_open(&nd, path, d->ed_tier, e->e_store.st_uuid, i);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&e->e_dev_lock);
	od = d->ed_dev;
	/* The old device holds no mapped unit (repaired); plain extents
	 * still on it are lost with it and read as errors. */
	d->ed_dev = nd;
	d->ed_flags = EDF_REBALANCE;
	__atomic_store_n(&d->ed_state, ED_ONLINE, __ATOMIC_RELEASE);
	rc = dev_rec_save(e, i);
	pthread_mutex_unlock(&e->e_dev_lock);
	eng_dev_model_apply(e, i);
	eng_space_gauge(e, i); /* the new device's label */
	synchronize_rcu(); /* no reader still uses the old handle */
	tier_dev_close(od);
	return rc;
}
