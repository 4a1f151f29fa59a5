/*
 * cli_dev.c — the device commands of the strata tool: "devices", "tiers",
 * "pools", "device fail", "device replace" and "smr clean", and finding a
 * device by its index or its name.
 *
 * A device's name is derived from its path (clovis.h gives paths, not the
 * names of the store configuration): the file name without ".dev", and
 * without the "strata-UUID-" prefix NVRAM devices carry in /dev/shm.  For
 * the default store and for configurations without explicit paths it is
 * the configured name (flash3, sas0, smr0).  In cluster mode it is
 * SERVER:NAME ("s1:flash2"), and 'device fail|replace' name a device so
 * (or SERVER:INDEX, its index on its server).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

/* Devices asked for first; a store with more is asked again. */
#define DEV_FIRST 64u

/* Default live percentage of 'smr clean'. */
#define SMR_LIVE_DEFAULT 25u

/* clovis_dev_list() and clovis_pool_list() under one shape. */
static int devs_list(struct clovis *cl, void *info, uint32_t *nr)
{
	return clovis_dev_list(cl, info, nr);
}

static int pools_list(struct clovis *cl, void *info, uint32_t *nr)
{
	return clovis_pool_list(cl, info, nr);
}

/* Fetch a list of elements of size bytes through fn into a malloc()ed
 * array, asking again with a bigger array while the store has more;
 * *nr gets its length. */
static int cli_list_fetch(struct cli *c, size_t size, uint32_t first,
			  const char *what,
			  int (*fn)(struct clovis *, void *, uint32_t *),
			  void **out, uint32_t *nr)
{
	uint32_t want = first;
	void *info;
	int rc;

	for (;;) {
		info = calloc(want, size);
		if (info == NULL) {
			cli_msg(c, "out of memory for %u %s", want, what);
			return -ENOMEM;
		}
		*nr = want;
		rc = cli_call(c, fn(c->c_cl, info, nr));
		if (rc < 0 || *nr <= want)
			break;
		want = *nr;
		free(info);
	}
	if (rc < 0) {
		free(info);
		return rc;
	}
	*out = info;
	return 0;
}

int cli_devs_fetch(struct cli *c, struct clovis_dev_info **out,
		   uint32_t *nr)
{
	return cli_list_fetch(c, sizeof **out, DEV_FIRST, "devices",
			      devs_list, (void **)out, nr);
}

/* Pools asked for first; a store with more is asked again. */
#define POOL_FIRST 16u

int cli_pools_fetch(struct cli *c, struct clovis_pool_info **out,
		    uint32_t *nr)
{
	return cli_list_fetch(c, sizeof **out, POOL_FIRST, "pools",
			      pools_list, (void **)out, nr);
}

/* Strip "strata-HEX-" from an NVRAM device's file name (base, len). */
static void name_strip_uuid(const char **base, size_t *len)
{
	size_t hex;

	if (*len < 7 || strncmp(*base, "strata-", 7) != 0)
		return;
	hex = strspn(*base + 7, "0123456789abcdef");
	if (hex < 8 || 7 + hex + 1 >= *len || (*base)[7 + hex] != '-')
		return;
	*base += 8 + hex;
	*len -= 8 + hex;
}

/* Length of the "SERVER:" a cluster client puts before each device's
 * path (clovis_dev_list() in cluster mode: "s1:/DIR/flash2.dev"), colon
 * included; 0 for a path without it. */
static size_t dev_server_len(const char *path)
{
	size_t n = strcspn(path, ":/");

	return n > 0 && path[n] == ':' && path[n + 1] == '/' ? n + 1 : 0;
}

/* The device's name: its file name without directory, suffix, UUID;
 * "SERVER:NAME" for a device of a cluster. */
const char *cli_dev_name(const struct clovis_dev_info *d, char *buf,
			 size_t size)
{
	char path[sizeof d->di_path + 1];
	const char *base;
	size_t len;

	size_t srv;

	snprintf(path, sizeof path, "%.*s",
		 (int)strnlen(d->di_path, sizeof d->di_path), d->di_path);
	srv = dev_server_len(path);
	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	len = strlen(base);
	if (len > 4 && strcmp(base + len - 4, ".dev") == 0)
		len -= 4;
	name_strip_uuid(&base, &len);
	snprintf(buf, size, "%.*s%.*s", (int)srv, path, (int)len, base);
	return buf;
}

const char *cli_dev_state(uint32_t s)
{
	switch (s) {
	case CLOVIS_DEV_ONLINE:
		return "online";
	case CLOVIS_DEV_FAILED:
		return "failed";
	case CLOVIS_DEV_REPAIRED:
		return "repaired";
	}
	return "unknown";
}

/*
 * Look text up in the device list: a decimal index, else a name that one
 * device has.  Returns the index, or -1 with the message set.
 */
static int dev_lookup(struct cli *c, const char *text,
		      const struct clovis_dev_info *info, uint32_t nr)
{
	char name[DEV_NAME_MAX];
	int found = -1;
	uint32_t i;
	uint64_t v;

	if (cli_parse_u64(text, &v)) {
		if (v < nr)
			return (int)v;
		cli_msg(c, "device %s: no such device (the store has %u, "
			"0..%u)", text, nr, nr - 1);
		return -1;
	}
	for (i = 0; i < nr; i++) {
		if (strcmp(cli_dev_name(&info[i], name, sizeof name), text))
			continue;
		if (found >= 0) {
			cli_msg(c, "devices %d and %u are both named '%s'; "
				"give the index", found, i, text);
			return -1;
		}
		found = (int)i;
	}
	if (found < 0)
		cli_msg(c, "no device named '%s' (see 'strata devices')", text);
	return found;
}

/* Find a device by index or name; reports failure as "WHAT TEXT". */
int cli_dev_find(struct cli *c, const char *text, const char *what,
		 uint32_t *dev)
{
	struct clovis_dev_info *info = NULL;
	uint32_t nr = 0;
	int rc, i;

	rc = cli_devs_fetch(c, &info, &nr);
	if (rc < 0)
		return cli_fail(c, rc, "%s %s", what, text);
	i = dev_lookup(c, text, info, nr);
	free(info);
	if (i < 0)
		return cli_fail(c, -ENODEV, "%s %s", what, text);
	*dev = (uint32_t)i;
	return 0;
}

/* Fetch one device's description after a change. */
static int dev_get(struct cli *c, uint32_t dev, struct clovis_dev_info *out)
{
	struct clovis_dev_info *info = NULL;
	uint32_t nr = 0;
	int rc;

	rc = cli_devs_fetch(c, &info, &nr);
	if (rc == 0 && dev >= nr) {
		cli_msg(c, "device %u is gone from the list", dev);
		rc = -ENODEV;
	}
	if (rc == 0)
		*out = info[dev];
	free(info);
	return rc;
}

/* Print one device as a JSON object. */
static void dev_json(const struct clovis_dev_info *d, bool first)
{
	char name[DEV_NAME_MAX];

	cli_dev_name(d, name, sizeof name);
	printf("%s{\"index\": %u, \"name\": ", first ? "" : ",\n ",
	       d->di_index);
	cli_json_str(stdout, name, strlen(name));
	printf(", \"tier\": \"%s\", \"driver\": ", cli_tier_name(d->di_tier));
	cli_json_str(stdout, d->di_driver, strnlen(d->di_driver,
						   sizeof d->di_driver));
	printf(", \"path\": ");
	cli_json_str(stdout, d->di_path, strnlen(d->di_path,
						 sizeof d->di_path));
	printf(", \"size_bytes\": %llu, \"free_bytes\": %llu, "
	       "\"direct_io\": %s, \"state\": \"%s\", \"errors\": %llu, "
	       "\"rebalance\": %s, \"model\": %s, \"zone_size\": %llu, "
	       "\"zones\": %u, \"zones_empty\": %u, \"reads\": %llu, "
	       "\"writes\": %llu}",
	       (unsigned long long)d->di_size_bytes,
	       (unsigned long long)d->di_free_bytes,
	       d->di_direct_io ? "true" : "false", cli_dev_state(d->di_state),
	       (unsigned long long)d->di_errors,
	       d->di_rebalance ? "true" : "false",
	       d->di_model ? "true" : "false",
	       (unsigned long long)d->di_zone_size, d->di_zones,
	       d->di_zones_empty, (unsigned long long)d->di_reads,
	       (unsigned long long)d->di_writes);
}

/* Percentage of a device or group in use. */
static double used_pct(uint64_t size, uint64_t free_bytes)
{
	return size == 0 ? 0.0 :
	       100.0 * (double)(size - free_bytes) / (double)size;
}

/* Print one device as a table row; SMR devices show their zones. */
static void dev_text(const struct clovis_dev_info *d, int w)
{
	char size[32], avail[32], zone[32] = "-", zones[16] = "-",
	     empty[16] = "-", name[DEV_NAME_MAX];

	if (d->di_zone_size != 0) {
		cli_human(d->di_zone_size, zone, sizeof zone);
		snprintf(zones, sizeof zones, "%u", d->di_zones);
		snprintf(empty, sizeof empty, "%u", d->di_zones_empty);
	}
	printf("%-3u %-*s %-5s %-6.16s %10s %10s %5.1f%% %-8s %6llu %-5s "
	       "%-5s %-6s %10s %5s %5s %.256s\n", d->di_index, w,
	       cli_dev_name(d, name, sizeof name), cli_tier_name(d->di_tier),
	       d->di_driver, cli_human(d->di_size_bytes, size, sizeof size),
	       cli_human(d->di_free_bytes, avail, sizeof avail),
	       used_pct(d->di_size_bytes, d->di_free_bytes),
	       cli_dev_state(d->di_state), (unsigned long long)d->di_errors,
	       d->di_rebalance ? "yes" : "no", d->di_model ? "on" : "off",
	       d->di_direct_io ? "yes" : "no", zone, zones, empty,
	       d->di_path);
}

/* strata devices: every device with capacity, state and zones. */
int cmd_devices(struct cli *c)
{
	struct clovis_dev_info *info = NULL;
	uint32_t nr = 0, i;
	int rc;

	rc = cli_devs_fetch(c, &info, &nr);
	if (rc < 0)
		return cli_fail(c, rc, "list devices");
	if (c->c_json) {
		printf("[");
		for (i = 0; i < nr; i++)
			dev_json(&info[i], i == 0);
		printf("]\n");
	} else {
		char name[DEV_NAME_MAX];
		int w = 8;

		/* names of a cluster's devices carry their server */
		for (i = 0; i < nr; i++)
			if ((int)strlen(cli_dev_name(&info[i], name,
						     sizeof name)) > w)
				w = (int)strlen(name);
		printf("%-3s %-*s %-5s %-6s %10s %10s %6s %-8s %6s %-5s %-5s "
		       "%-6s %10s %5s %5s %s\n", "dev", w, "name", "tier",
		       "driver", "size", "free", "used", "state", "errors",
		       "rebal", "model", "direct", "zone", "zones", "empty",
		       "path");
		for (i = 0; i < nr; i++)
			dev_text(&info[i], w);
	}
	free(info);
	return CLI_OK;
}

/* Sums over the devices of one tier. */
struct tier_sum {
	uint32_t ts_devs;
	uint32_t ts_offline;
	uint64_t ts_size;
	uint64_t ts_free;
};

/* Add up the devices of every tier. */
static void tiers_sum(const struct clovis_dev_info *info, uint32_t nr,
		      struct tier_sum sum[CLOVIS_TIER_NR])
{
	uint32_t i;

	memset(sum, 0, CLOVIS_TIER_NR * sizeof sum[0]);
	for (i = 0; i < nr; i++) {
		struct tier_sum *s;

		if (info[i].di_tier >= CLOVIS_TIER_NR)
			continue;
		s = &sum[info[i].di_tier];
		s->ts_devs++;
		s->ts_offline += info[i].di_state != CLOVIS_DEV_ONLINE;
		s->ts_size += info[i].di_size_bytes;
		s->ts_free += info[i].di_free_bytes;
	}
}

/* strata tiers: devices, capacity and free space of every tier. */
int cmd_tiers(struct cli *c)
{
	struct clovis_dev_info *info = NULL;
	struct tier_sum sum[CLOVIS_TIER_NR];
	char size[32], avail[32];
	uint32_t nr = 0, t;
	int rc;

	rc = cli_devs_fetch(c, &info, &nr);
	if (rc < 0)
		return cli_fail(c, rc, "list devices");
	tiers_sum(info, nr, sum);
	free(info);
	if (!c->c_json)
		printf("%-6s %7s %7s %10s %10s %6s\n", "tier", "devices",
		       "offline", "size", "free", "used");
	else
		printf("[");
	for (t = 0; t < CLOVIS_TIER_NR; t++) {
		const struct tier_sum *s = &sum[t];

		if (c->c_json)
			printf("%s{\"tier\": \"%s\", \"devices\": %u, "
			       "\"offline\": %u, \"size_bytes\": %llu, "
			       "\"free_bytes\": %llu}", t == 0 ? "" : ",\n ",
			       cli_tier_name(t), s->ts_devs, s->ts_offline,
			       (unsigned long long)s->ts_size,
			       (unsigned long long)s->ts_free);
		else
			printf("%-6s %7u %7u %10s %10s %5.1f%%\n",
			       cli_tier_name(t), s->ts_devs, s->ts_offline,
			       cli_human(s->ts_size, size, sizeof size),
			       cli_human(s->ts_free, avail, sizeof avail),
			       used_pct(s->ts_size, s->ts_free));
	}
	if (c->c_json)
		printf("]\n");
	return CLI_OK;
}

/* Name of device i of the list, or its number if the list lacks it. */
static const char *member_name(const struct clovis_dev_info *info,
			       uint32_t nr, uint32_t i, char *buf,
			       size_t size)
{
	if (i < nr)
		return cli_dev_name(&info[i], buf, size);
	snprintf(buf, size, "dev%u", i);
	return buf;
}

/* Print one pool as a JSON object with its members. */
static void pool_json(const struct clovis_pool_info *p,
		      const struct clovis_dev_info *info, uint32_t nr,
		      bool first)
{
	char name[DEV_NAME_MAX];
	uint32_t i;

	printf("%s{\"index\": %u, \"name\": ", first ? "" : ",\n ",
	       p->pi_index);
	cli_json_str(stdout, p->pi_name, strnlen(p->pi_name,
						 sizeof p->pi_name));
	printf(", \"size_bytes\": %llu, \"free_bytes\": %llu, \"devices\": [",
	       (unsigned long long)p->pi_size_bytes,
	       (unsigned long long)p->pi_free_bytes);
	for (i = 0; i < p->pi_nr_devs && i < 256; i++) {
		member_name(info, nr, p->pi_devs[i], name, sizeof name);
		printf("%s{\"index\": %u, \"name\": ", i == 0 ? "" : ", ",
		       p->pi_devs[i]);
		cli_json_str(stdout, name, strlen(name));
		printf("}");
	}
	printf("]}");
}

/* Print one pool as a table row: members as NAME(INDEX). */
static void pool_text(const struct clovis_pool_info *p,
		      const struct clovis_dev_info *info, uint32_t nr)
{
	char size[32], avail[32], name[DEV_NAME_MAX];
	uint32_t i;

	printf("%-5u %-10.32s %7u %10s %10s %5.1f%% ", p->pi_index, p->pi_name,
	       p->pi_nr_devs, cli_human(p->pi_size_bytes, size, sizeof size),
	       cli_human(p->pi_free_bytes, avail, sizeof avail),
	       used_pct(p->pi_size_bytes, p->pi_free_bytes));
	for (i = 0; i < p->pi_nr_devs && i < 256; i++)
		printf("%s%s(%u)", i == 0 ? "" : " ",
		       member_name(info, nr, p->pi_devs[i], name, sizeof name),
		       p->pi_devs[i]);
	printf("\n");
}

/* strata pools: every pool with its devices, capacity and free space. */
int cmd_pools(struct cli *c)
{
	struct clovis_dev_info *info = NULL;
	struct clovis_pool_info *pools = NULL;
	uint32_t nr = 0, np = 0, i;
	int rc;

	rc = cli_devs_fetch(c, &info, &nr);
	if (rc == 0)
		rc = cli_pools_fetch(c, &pools, &np);
	if (rc < 0) {
		free(info);
		return cli_fail(c, rc, "list pools");
	}
	if (c->c_json) {
		printf("[");
		for (i = 0; i < np; i++)
			pool_json(&pools[i], info, nr, i == 0);
		printf("]\n");
	} else {
		printf("%-5s %-10s %7s %10s %10s %6s %s\n", "pool", "name",
		       "devices", "size", "free", "used", "members");
		for (i = 0; i < np; i++)
			pool_text(&pools[i], info, nr);
	}
	free(pools);
	free(info);
	return CLI_OK;
}

/* Print what a device command left: the device's index, name, state. */
static void dev_report(const struct clovis_dev_info *d, bool changed)
{
	char name[DEV_NAME_MAX];

	cli_dev_name(d, name, sizeof name);
	printf("{\"device\": %u, \"name\": ", d->di_index);
	cli_json_str(stdout, name, strlen(name));
	printf(", \"path\": ");
	cli_json_str(stdout, d->di_path, strnlen(d->di_path,
						 sizeof d->di_path));
	printf(", \"state\": \"%s\", \"rebalance\": %s, \"changed\": %s}\n",
	       cli_dev_state(d->di_state), d->di_rebalance ? "true" : "false",
	       changed ? "true" : "false");
}

/* ------------------------------------------------ devices of a cluster */

/*
 * In cluster mode a device is named by its server: SERVER:NAME (the name
 * 'strata devices' shows, "s1:flash2") or SERVER:INDEX (its index in that
 * server's store); a bare INDEX is the cluster-wide number 'strata
 * devices' shows.  A device named by its server goes to
 * clovis_server_dev_fail() or _replace() with the server and its own
 * index, so a server before it that is down does not matter; a bare INDEX
 * goes to clovis_dev_fail() or _replace() with that number.
 */
struct cdev {
	char cd_server[DEV_NAME_MAX];
	uint32_t cd_dev;   /* index in its server's store */
	int64_t cd_global; /* named by its cluster-wide number; else -1 */
};

static bool cli_is_cluster(const struct cli *c)
{
	return c->c_cluster != NULL || c->c_server != NULL;
}

/* Is name a server of the cluster that answers?  0; -ENOENT (no such
 * server) or -EHOSTDOWN (it does not answer), the message set. */
static int cdev_server_check(struct cli *c, const char *name)
{
	struct clovis_server_info *si = calloc(64, sizeof *si);
	char names[256] = "";
	uint32_t nr = 64, i;
	int rc = -ENOMEM;

	if (si == NULL) {
		cli_msg(c, "out of memory for the server list");
		return rc;
	}
	rc = cli_call(c, clovis_server_list(c->c_cl, si, &nr));
	for (i = 0; rc == 0 && i < nr && i < 64; i++) {
		size_t n = strcspn(si[i].si_name, " ");

		if (strlen(name) == n && strncmp(si[i].si_name, name, n) == 0)
			break;
		snprintf(names + strlen(names), sizeof names - strlen(names),
			 "%s%.*s", i == 0 ? "" : " ", (int)n, si[i].si_name);
	}
	if (rc == 0 && (i >= nr || i >= 64)) {
		cli_msg(c, "no server called '%s' in the cluster (servers: "
			"%s)", name, names);
		rc = -ENOENT;
	} else if (rc == 0 && !si[i].si_up) {
		cli_msg(c, "server %.63s does not answer: its devices are not "
			"known now", si[i].si_name);
		rc = -EHOSTDOWN;
	}
	free(si);
	return rc;
}

/* The devices of server (name, len) in info: first index and count. */
static uint32_t cdev_run(const struct clovis_dev_info *info, uint32_t nr,
			 const char *server, size_t len, uint32_t *first)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < nr; i++) {
		if (strncmp(info[i].di_path, server, len) != 0 ||
		    info[i].di_path[len] != ':')
			continue;
		if (k++ == 0)
			*first = i;
	}
	return k;
}

/* Find text (SERVER:NAME, SERVER:INDEX, INDEX) in the list info: *cd and
 * *d (its entry).  0, or a negative code with the message set. */
static int cdev_lookup(struct cli *c, const char *text,
		       const struct clovis_dev_info *info, uint32_t nr,
		       struct cdev *cd, struct clovis_dev_info *d)
{
	char name[DEV_NAME_MAX];
	const char *colon = strchr(text, ':');
	uint32_t first = 0, k, i;
	uint64_t v;
	int rc;

	if (cli_parse_u64(text, &v)) {
		if (v >= nr) {
			cli_msg(c, "no such device (the servers that answered "
				"have %u)", nr);
			return -EINVAL;
		}
		*d = info[v];
		cd->cd_global = (int64_t)v;
		k = (uint32_t)strcspn(d->di_path, ":");
		snprintf(cd->cd_server, sizeof cd->cd_server, "%.*s", (int)k,
			 d->di_path);
		cdev_run(info, nr, cd->cd_server, k, &first);
		cd->cd_dev = (uint32_t)v - first;
		return 0;
	}
	cd->cd_global = -1;
	if (colon == NULL || colon == text || colon[1] == '\0' ||
	    (size_t)(colon - text) >= sizeof cd->cd_server) {
		cli_msg(c, "name a device of a cluster SERVER:NAME or "
			"SERVER:INDEX (see 'strata devices')");
		return -EINVAL;
	}
	snprintf(cd->cd_server, sizeof cd->cd_server, "%.*s",
		 (int)(colon - text), text);
	k = cdev_run(info, nr, cd->cd_server, strlen(cd->cd_server), &first);
	if (k == 0) {
		rc = cdev_server_check(c, cd->cd_server);
		if (rc == 0) {
			cli_msg(c, "server %s lists no device", cd->cd_server);
			rc = -ENOENT;
		}
		return rc;
	}
	if (cli_parse_u64(colon + 1, &v)) {
		if (v >= k) {
			cli_msg(c, "server %s has devices 0..%u", cd->cd_server,
				k - 1);
			return -EINVAL;
		}
		i = first + (uint32_t)v;
	} else {
		for (i = first; i < first + k; i++)
			if (strcmp(cli_dev_name(&info[i], name, sizeof name),
				   text) == 0)
				break;
		if (i == first + k) {
			cli_msg(c, "server %s has no device named '%s' (see "
				"'strata devices')", cd->cd_server, colon + 1);
			return -ENOENT;
		}
	}
	cd->cd_dev = i - first;
	*d = info[i];
	return 0;
}

/* cdev_lookup() over a fresh device list. */
static int cdev_find(struct cli *c, const char *text, struct cdev *cd,
		     struct clovis_dev_info *d)
{
	struct clovis_dev_info *info = NULL;
	uint32_t nr = 0;
	int rc;

	rc = cli_devs_fetch(c, &info, &nr);
	if (rc == 0)
		rc = cdev_lookup(c, text, info, nr, cd, d);
	free(info);
	return rc;
}

/* The entry of cd in a fresh list, after a change. */
static int cdev_get(struct cli *c, const struct cdev *cd,
		    struct clovis_dev_info *d)
{
	char text[DEV_NAME_MAX + 16];

	snprintf(text, sizeof text, "%s:%u", cd->cd_server, cd->cd_dev);
	return cdev_find(c, text, (struct cdev[1]){*cd}, d);
}

/* strata --cluster F device fail SERVER:DEV */
static int cmd_dev_fail_cluster(struct cli *c)
{
	struct clovis_dev_info d;
	char name[DEV_NAME_MAX];
	struct cdev cd;
	bool changed;
	int rc;

	rc = cdev_find(c, c->c_args[0], &cd, &d);
	changed = rc == 0 && d.di_state == CLOVIS_DEV_ONLINE;
	/* Also when already failed: every server's image is marked again
	 * (one that did not answer last time). */
	if (rc == 0 && cd.cd_global >= 0)
		rc = cli_call(c, clovis_dev_fail(c->c_cl,
						 (uint32_t)cd.cd_global));
	else if (rc == 0)
		rc = cli_call(c, clovis_server_dev_fail(c->c_cl, cd.cd_server,
							cd.cd_dev));
	if (rc == 0)
		rc = cdev_get(c, &cd, &d);
	if (rc < 0)
		return cli_fail(c, rc, "device fail %s", c->c_args[0]);
	cli_dev_name(&d, name, sizeof name);
	if (c->c_json)
		dev_report(&d, changed);
	else if (!c->c_quiet && changed)
		printf("device %s (device %u of server %s) failed, and every "
		       "other server's image of it: its units are read "
		       "degraded until 'strata repair' rebuilds them\n", name,
		       cd.cd_dev, cd.cd_server);
	else if (!c->c_quiet)
		printf("device %s is already %s\n", name,
		       cli_dev_state(d.di_state));
	return CLI_OK;
}

/* strata --cluster F device replace SERVER:DEV NEWPATH (on the server's
 * host; relative: from its data directory) */
static int cmd_dev_replace_cluster(struct cli *c)
{
	struct clovis_dev_info d;
	char name[DEV_NAME_MAX];
	struct cdev cd;
	int rc;

	rc = cdev_find(c, c->c_args[0], &cd, &d);
	if (rc == 0 && cd.cd_global >= 0)
		rc = cli_call(c, clovis_dev_replace(c->c_cl,
						    (uint32_t)cd.cd_global,
						    c->c_args[1]));
	else if (rc == 0)
		rc = cli_call(c, clovis_server_dev_replace(c->c_cl,
							   cd.cd_server,
							   cd.cd_dev,
							   c->c_args[1]));
	if (rc == 0)
		rc = cdev_get(c, &cd, &d);
	if (rc < 0)
		return cli_fail(c, rc, "device replace %s", c->c_args[0]);
	if (c->c_json)
		dev_report(&d, true);
	else if (!c->c_quiet)
		printf("device %s replaced by %s on server %s (now %s), and "
		       "every other server's image of it back online; 'strata "
		       "rebalance' moves its units back\n",
		       cli_dev_name(&d, name, sizeof name), c->c_args[1],
		       cd.cd_server, cli_dev_state(d.di_state));
	return CLI_OK;
}

/* strata device fail DEV: mark a device failed. */
int cmd_dev_fail(struct cli *c)
{
	struct clovis_dev_info d;
	char name[DEV_NAME_MAX];
	uint32_t dev;
	bool changed;
	int rc;

	if (cli_is_cluster(c))
		return cmd_dev_fail_cluster(c);
	rc = cli_dev_find(c, c->c_args[0], "device fail", &dev);
	if (rc != 0)
		return rc;
	rc = dev_get(c, dev, &d);
	changed = rc == 0 && d.di_state == CLOVIS_DEV_ONLINE;
	if (changed)
		rc = cli_call(c, clovis_dev_fail(c->c_cl, dev));
	if (rc == 0)
		rc = dev_get(c, dev, &d);
	if (rc < 0)
		return cli_fail(c, rc, "device fail %s", c->c_args[0]);
	cli_dev_name(&d, name, sizeof name);
	if (c->c_json)
		dev_report(&d, changed);
	else if (!c->c_quiet && changed)
		printf("device %u (%s) failed: its units are read degraded "
		       "until 'strata repair' rebuilds them\n", dev, name);
	else if (!c->c_quiet)
		printf("device %u (%s) is already %s\n", dev, name,
		       cli_dev_state(d.di_state));
	return CLI_OK;
}

/* Make path absolute against the working directory into buf (a leading
 * "./" dropped), so the store finds the device from any directory. */
static int path_absolute(const char *path, char *buf, size_t size)
{
	char cwd[4096];

	if (path[0] == '/') {
		snprintf(buf, size, "%s", path);
		return 0;
	}
	if (getcwd(cwd, sizeof cwd) == NULL)
		return cli_sys(errno, "find the working directory");
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	if ((size_t)snprintf(buf, size, "%s/%s", cwd, path) >= size)
		return cli_sys(ENAMETOOLONG, "replacement path '%s'", path);
	return 0;
}

/* strata device replace DEV NEWPATH: a new device for a repaired one. */
int cmd_dev_replace(struct cli *c)
{
	struct clovis_dev_info d;
	char path[4096], name[DEV_NAME_MAX];
	uint32_t dev;
	int rc;

	if (c->c_args[1][0] == '\0')
		return cli_usage(c, "NEWPATH is empty");
	if (cli_is_cluster(c))
		return cmd_dev_replace_cluster(c);
	rc = cli_dev_find(c, c->c_args[0], "device replace", &dev);
	if (rc == 0)
		rc = path_absolute(c->c_args[1], path, sizeof path);
	if (rc != 0)
		return rc;
	rc = cli_call(c, clovis_dev_replace(c->c_cl, dev, path));
	if (rc == 0)
		rc = dev_get(c, dev, &d);
	if (rc < 0)
		return cli_fail(c, rc, "device replace %s", c->c_args[0]);
	if (c->c_json)
		dev_report(&d, true);
	else if (!c->c_quiet)
		printf("device %u replaced by %s (now %s, named %s); "
		       "'strata rebalance' moves its units back\n", dev, path,
		       cli_dev_state(d.di_state),
		       cli_dev_name(&d, name, sizeof name));
	return CLI_OK;
}

/* strata smr clean [DEV] [--live PCT]: reclaim mostly dead SMR zones. */
int cmd_smr_clean(struct cli *c)
{
	struct clovis_clean_stats st;
	uint32_t dev = UINT32_MAX, live;
	char moved[32];
	int rc;

	live = c->c_live_set ? c->c_live : SMR_LIVE_DEFAULT;
	if (c->c_nargs > 0) {
		rc = cli_dev_find(c, c->c_args[0], "smr clean", &dev);
		if (rc != 0)
			return rc;
	}
	memset(&st, 0, sizeof st);
	rc = cli_call(c, clovis_smr_clean(c->c_cl, dev, live, &st));
	if (rc < 0)
		return cli_fail(c, rc, "smr clean%s%s", c->c_nargs ? " " : "",
				c->c_nargs ? c->c_args[0] : "");
	if (c->c_json) {
		if (dev == UINT32_MAX)
			printf("{\"device\": null");
		else
			printf("{\"device\": %u", dev);
		printf(", \"live_pct\": %u, \"zones_reset\": %u, "
		       "\"bytes_moved\": %llu, \"records_moved\": %llu}\n",
		       live, st.cs_zones_reset,
		       (unsigned long long)st.cs_bytes_moved,
		       (unsigned long long)st.cs_records_moved);
	} else if (!c->c_quiet) {
		printf("smr clean: %u zones reset, %s of live data moved, %llu "
		       "records re-pointed (zones at most %u%% live)\n",
		       st.cs_zones_reset,
		       cli_human(st.cs_bytes_moved, moved, sizeof moved),
		       (unsigned long long)st.cs_records_moved, live);
	}
	return CLI_OK;
}
