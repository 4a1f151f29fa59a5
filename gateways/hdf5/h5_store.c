/*
 * h5_store.c — the store side of the HDF5 driver: configuration strings
 * and URLs, the Clovis instances of this process (one per store, shared by
 * the files open on it), opening a file's object and its EOA/EOF record.
 * No HDF5 here (h5_internal.h).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/hdf5/h5_internal.h"

/* ------------------------------------------------------------- errors */

static __thread int sh5_err;
static __thread char sh5_msg[SH5_MSG_MAX];

int sh5_fail(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sh5_msg, sizeof sh5_msg, fmt, ap);
	va_end(ap);
	sh5_err = rc;
	return rc;
}

int sh5_errno_get(void)
{
	return sh5_err;
}

const char *sh5_errmsg_get(void)
{
	return sh5_msg;
}

/* ------------------------------------------------------ configuration */

int sh5_fa_set_path(char *dst, const char *src, const char *what)
{
	if (src == NULL) {
		dst[0] = '\0';
		return 0;
	}
	if (src[0] == '\0')
		return sh5_fail(-EINVAL, "strata h5: %s is empty", what);
	if (strlen(src) >= SH5_PATH_MAX)
		return sh5_fail(-ENAMETOOLONG, "strata h5: %s is longer than "
				"%u bytes", what, SH5_PATH_MAX - 1);
	strcpy(dst, src);
	return 0;
}

/* "4096", "64K", "1M", "2G" -> bytes; -EINVAL for anything else. */
static int sh5_size_parse(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || s[0] == '-')
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

static int sh5_tier_parse(const char *s, uint32_t *out)
{
	static const char *const names[] = {"nvram", "flash", "sas", "smr"};

	for (uint32_t i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = i + 1;
			return 0;
		}
	return -EINVAL;
}

int sh5_fa_check(const struct sh5_fa *fa)
{
	uint32_t b = fa->fa_block_size;

	if (b != 0 && (b < (1u << CLOVIS_BLOCK_SHIFT_MIN) ||
		       b > (1u << CLOVIS_BLOCK_SHIFT_MAX) || (b & (b - 1)) != 0))
		return sh5_fail(-EINVAL, "strata h5: block size %u is not a "
				"power of two from 512 to 64M", b);
	if (fa->fa_tier > CLOVIS_TIER_NR)
		return sh5_fail(-EINVAL, "strata h5: tier %u is not 1..4 "
				"(nvram, flash, sas, smr)", fa->fa_tier);
	if (fa->fa_data[0] != '\0' && fa->fa_cluster[0] != '\0')
		return sh5_fail(-EINVAL, "strata h5: both a data directory "
				"(%s) and a cluster file (%s) given", fa->fa_data,
				fa->fa_cluster);
	return 0;
}

/* One "key=value" item of a configuration string into fa. */
static int sh5_fa_item(struct sh5_fa *fa, const char *key, const char *val)
{
	uint64_t v;

	if (strcmp(key, "data") == 0)
		return sh5_fa_set_path(fa->fa_data, val, "data directory");
	if (strcmp(key, "cluster") == 0)
		return sh5_fa_set_path(fa->fa_cluster, val, "cluster file");
	if (strcmp(key, "nvram") == 0)
		return sh5_fa_set_path(fa->fa_nvram, val, "NVRAM directory");
	if (strcmp(key, "tier") == 0) {
		if (sh5_tier_parse(val, &fa->fa_tier) != 0)
			return sh5_fail(-EINVAL, "strata h5: config: tier "
					"\"%s\" is not nvram, flash, sas or "
					"smr", val);
		return 0;
	}
	if (strcmp(key, "block") == 0 || strcmp(key, "dev_size") == 0) {
		if (sh5_size_parse(val, &v) != 0 ||
		    (key[0] == 'b' && v > UINT32_MAX))
			return sh5_fail(-EINVAL, "strata h5: config: %s \"%s\""
					" is not a size", key, val);
		if (key[0] == 'b')
			fa->fa_block_size = (uint32_t)v;
		else
			fa->fa_dev_size = v;
		return 0;
	}
	return sh5_fail(-EINVAL, "strata h5: config: unknown item \"%s\" "
			"(items: data, cluster, nvram, block, dev_size, tier)",
			key);
}

int sh5_fa_parse(struct sh5_fa *fa, const char *url, const char *config)
{
	char buf[4 * SH5_PATH_MAX], *save = NULL, *it;
	int rc;

	memset(fa, 0, sizeof *fa);
	fa->fa_magic = SH5_FA_MAGIC;
	rc = sh5_fa_set_url(fa, url);
	if (rc != 0 || config == NULL)
		return rc;
	if (strlen(config) >= sizeof buf)
		return sh5_fail(-ENAMETOOLONG, "strata h5: config string "
				"longer than %zu bytes", sizeof buf - 1);
	strcpy(buf, config);
	for (it = strtok_r(buf, ",;", &save); it != NULL;
	     it = strtok_r(NULL, ",;", &save)) {
		char *eq;

		while (*it == ' ' || *it == '\t')
			it++;
		if (*it == '\0')
			continue;
		eq = strchr(it, '=');
		if (eq == NULL || eq == it || eq[1] == '\0')
			return sh5_fail(-EINVAL, "strata h5: config: \"%s\" is "
					"not KEY=VALUE", it);
		*eq = '\0';
		rc = sh5_fa_item(fa, it, eq + 1);
		if (rc != 0)
			return rc;
	}
	return sh5_fa_check(fa);
}

/* ----------------------------------------------------------------- URLs */

#define SH5_SCHEME "strata://"

/*
 * Split url "strata://CONT[/NAME]" into cont and name (name "" when the
 * URL has none).  0, or -EINVAL / -ENAMETOOLONG with a message.
 */
static int sh5_url_split(const char *url, char *cont, char *name)
{
	const char *p, *slash;
	size_t n;

	if (strlen(url) >= SH5_URL_MAX)
		return sh5_fail(-ENAMETOOLONG, "strata h5: URL longer than %u "
				"bytes", SH5_URL_MAX - 1);
	if (strncmp(url, SH5_SCHEME, strlen(SH5_SCHEME)) != 0)
		return sh5_fail(-EINVAL, "strata h5: bad URL \"%s\": it must "
				"be strata://CONTAINER/NAME", url);
	p = url + strlen(SH5_SCHEME);
	slash = strchr(p, '/');
	n = slash != NULL ? (size_t)(slash - p) : strlen(p);
	if (n == 0)
		return sh5_fail(-EINVAL, "strata h5: bad URL \"%s\": no "
				"container (strata://CONTAINER/NAME; CONTAINER "
				"\"default\" for the default one)", url);
	memcpy(cont, p, n);
	cont[n] = '\0';
	strcpy(name, slash != NULL ? slash + 1 : "");
	return 0;
}

int sh5_fa_set_url(struct sh5_fa *fa, const char *url)
{
	char cont[SH5_URL_MAX], name[SH5_URL_MAX];
	int rc;

	fa->fa_url[0] = '\0';
	if (url == NULL)
		return 0;
	rc = sh5_url_split(url, cont, name);
	if (rc == 0)
		strcpy(fa->fa_url, url);
	return rc;
}

/*
 * The id a URL part names: "default" (containers), "@name" or "HI:LO",
 * else the bare text T as "@T".  0 or -EINVAL (message names url).
 */
static int sh5_id_of(const char *text, bool container, const char *url,
		     struct clovis_id *out)
{
	char at[SH5_URL_MAX + 1];
	int rc;

	if (container && strcmp(text, "default") == 0) {
		*out = CLOVIS_ID_DEFAULT_CONTAINER;
		return 0;
	}
	if (text[0] == '@' || strchr(text, ':') != NULL) {
		rc = clovis_id_parse(text, out);
	} else {
		snprintf(at, sizeof at, "@%s", text);
		rc = clovis_id_parse(at, out);
	}
	if (rc != 0)
		return sh5_fail(-EINVAL, "strata h5: bad URL \"%s\": %s \"%s\""
				" is not @name, HI:LO or a name", url,
				container ? "container" : "object", text);
	return 0;
}

/* What a file name resolves to under fa (strata_h5.h, Names). */
struct sh5_where {
	char wh_url[2 * SH5_URL_MAX + 16];
	char wh_cont[SH5_URL_MAX];
	char wh_name[SH5_URL_MAX];
	struct clovis_id wh_cont_id;
	struct clovis_id wh_obj_id;
};

static int sh5_resolve(const char *name, const struct sh5_fa *fa,
		       struct sh5_where *w)
{
	int rc;

	memset(w, 0, sizeof *w);
	if (name == NULL || name[0] == '\0')
		return sh5_fail(-EINVAL, "strata h5: no file name");
	if (strncmp(name, "strata:", 7) == 0) { /* a URL, maybe a bad one */
		rc = sh5_url_split(name, w->wh_cont, w->wh_name);
		snprintf(w->wh_url, sizeof w->wh_url, "%s", name);
	} else if (fa->fa_url[0] != '\0') {
		rc = sh5_url_split(fa->fa_url, w->wh_cont, w->wh_name);
		if (rc == 0 && w->wh_name[0] == '\0') {
			if (strlen(name) >= SH5_URL_MAX)
				return sh5_fail(-ENAMETOOLONG, "strata h5: "
						"name longer than %u bytes",
						SH5_URL_MAX - 1);
			strcpy(w->wh_name, name);
		}
		snprintf(w->wh_url, sizeof w->wh_url, "strata://%s/%s",
			 w->wh_cont, w->wh_name);
	} else {
		if (strlen(name) >= SH5_URL_MAX)
			return sh5_fail(-ENAMETOOLONG, "strata h5: name longer"
					" than %u bytes", SH5_URL_MAX - 1);
		strcpy(w->wh_cont, "default");
		strcpy(w->wh_name, name);
		snprintf(w->wh_url, sizeof w->wh_url, "strata://default/%s",
			 name);
		rc = 0;
	}
	if (rc != 0)
		return rc;
	if (w->wh_name[0] == '\0')
		return sh5_fail(-EINVAL, "strata h5: bad URL \"%s\": it names "
				"no object (strata://CONTAINER/NAME)",
				w->wh_url);
	rc = sh5_id_of(w->wh_cont, true, w->wh_url, &w->wh_cont_id);
	if (rc == 0)
		rc = sh5_id_of(w->wh_name, false, w->wh_url, &w->wh_obj_id);
	return rc;
}

/* --------------------------------------------------------------- stores */

/** A Clovis instance shared by the files open on one store. */
struct sh5_store {
	struct sh5_store *st_next;
	char st_key[PATH_MAX + 16];
	struct clovis *st_cl;
	uint32_t st_refs;
};

static pthread_mutex_t sh5_stores_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sh5_store *sh5_stores;

/* Which store fa (else the environment) names: *cluster and path. */
static int sh5_store_which(const struct sh5_fa *fa, bool *cluster,
			   const char **path)
{
	const char *c = getenv("STRATA_H5_CLUSTER");
	const char *d = getenv("STRATA_H5_DATA");

	if (fa->fa_cluster[0] != '\0' || fa->fa_data[0] != '\0') {
		*cluster = fa->fa_cluster[0] != '\0';
		*path = *cluster ? fa->fa_cluster : fa->fa_data;
		return 0;
	}
	if (c != NULL && c[0] != '\0') {
		*cluster = true;
		*path = c;
	} else if (d != NULL && d[0] != '\0') {
		*cluster = false;
		*path = d;
	} else {
		return sh5_fail(-EINVAL, "strata h5: no store: give a data "
				"directory or a cluster file (conf, the config "
				"string data=DIR or cluster=FILE, or "
				"STRATA_H5_DATA / STRATA_H5_CLUSTER)");
	}
	if (strlen(*path) >= SH5_PATH_MAX)
		return sh5_fail(-ENAMETOOLONG, "strata h5: store path longer "
				"than %u bytes", SH5_PATH_MAX - 1);
	return 0;
}

/* Open a new Clovis instance on the store; create an embedded one when
 * create and it does not exist. */
static int sh5_store_init(const struct sh5_fa *fa, bool cluster,
			  const char *path, bool create, struct clovis **cl)
{
	struct clovis_conf cc;
	int rc;

	memset(&cc, 0, sizeof cc);
	if (cluster) {
		cc.cc_mode = CLOVIS_MODE_CLUSTER;
		cc.cc_cluster_conf = path;
	} else {
		cc.cc_data_dir = path;
		cc.cc_flags = create ? CLOVIS_CONF_CREATE : 0;
		cc.cc_dev_size = fa->fa_dev_size;
		if (fa->fa_nvram[0] != '\0')
			cc.cc_nvram_dir = fa->fa_nvram;
	}
	rc = clovis_init(cl, &cc);
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s %s: %s", cluster ?
				"cluster" : "store", path, clovis_errmsg());
	return 0;
}

static int sh5_store_get(const struct sh5_fa *fa, bool create,
			 struct sh5_store **out)
{
	char key[PATH_MAX + 16], real[PATH_MAX];
	struct sh5_store *st;
	const char *path = NULL;
	bool cluster = false;
	int rc = sh5_store_which(fa, &cluster, &path);

	if (rc != 0)
		return rc;
	snprintf(key, sizeof key, "%s:%s", cluster ? "cluster" : "data",
		 realpath(path, real) != NULL ? real : path);
	pthread_mutex_lock(&sh5_stores_lock);
	for (st = sh5_stores; st != NULL; st = st->st_next)
		if (strcmp(st->st_key, key) == 0)
			break;
	if (st != NULL) {
		st->st_refs++;
		goto out;
	}
	st = calloc(1, sizeof *st);
	if (st == NULL) {
		rc = sh5_fail(-ENOMEM, "strata h5: out of memory");
		goto out;
	}
	rc = sh5_store_init(fa, cluster, path, create, &st->st_cl);
	if (rc != 0) {
		free(st);
		st = NULL;
		goto out;
	}
	snprintf(st->st_key, sizeof st->st_key, "%s", key);
	st->st_refs = 1;
	st->st_next = sh5_stores;
	sh5_stores = st;
out:
	pthread_mutex_unlock(&sh5_stores_lock);
	*out = st;
	return rc;
}

static void sh5_store_put(struct sh5_store *st)
{
	struct sh5_store **pp;

	pthread_mutex_lock(&sh5_stores_lock);
	if (--st->st_refs > 0) {
		pthread_mutex_unlock(&sh5_stores_lock);
		return;
	}
	for (pp = &sh5_stores; *pp != st; pp = &(*pp)->st_next)
		;
	*pp = st->st_next;
	pthread_mutex_unlock(&sh5_stores_lock);
	clovis_fini(st->st_cl);
	free(st);
}

/* ----------------------------------------------------- ops and records */

int sh5_wait(struct clovis_op *op, uint32_t states)
{
	return clovis_op_wait(op, states, SH5_WAIT_NS);
}

/* An entity op launched and waited STABLE; rc, message kept. */
static int sh5_entity_sync(struct clovis_entity *e,
			   enum clovis_entity_opcode oc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, oc, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc;
}

/** The driver record of one file: little-endian, 32 bytes. */
struct sh5_rec {
	uint32_t rc_magic;
	uint32_t rc_version;
	uint64_t rc_eoa;
	uint64_t rc_eof;
	uint32_t rc_block_size;
	uint32_t rc_pad;
};
_Static_assert(sizeof(struct sh5_rec) == 32, "driver record size");
#define SH5_REC_MAGIC 0x35484853u /* "SHH5" */
#define SH5_REC_VERSION 1u

static void sh5_key(const struct sh5_file *f, uint8_t key[16])
{
	const struct clovis_id *id = &f->fi_obj.ob_entity.en_id;

	for (int i = 0; i < 8; i++) {
		key[i] = (uint8_t)(id->ci_hi >> (56 - 8 * i));
		key[8 + i] = (uint8_t)(id->ci_lo >> (56 - 8 * i));
	}
}

/* The container's driver index: "@strata.h5.meta/HI:LO" (ids are one
 * space for the whole store, so each container gets its own). */
static int sh5_meta_init(struct sh5_file *f, bool create)
{
	char cs[CLOVIS_ID_STR_LEN], name[64];
	struct clovis_id id;
	int rc;

	snprintf(name, sizeof name, "@strata.h5.meta/%s",
		 clovis_id_format(&f->fi_cont.co_entity.en_id, cs));
	rc = clovis_id_parse(name, &id);
	if (rc == 0)
		rc = clovis_idx_init(&f->fi_meta, f->fi_realm, &id);
	if (rc == 0)
		rc = sh5_entity_sync(&f->fi_meta.in_entity, CLOVIS_EO_OPEN);
	if (rc == -ENOENT && create) {
		rc = sh5_entity_sync(&f->fi_meta.in_entity, CLOVIS_EO_CREATE);
		if (rc == -EEXIST)
			rc = sh5_entity_sync(&f->fi_meta.in_entity,
					     CLOVIS_EO_OPEN);
	}
	if (rc == -ENOENT && !create)
		return 0; /* no record anywhere in this container */
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s: driver index %s: %s",
				f->fi_name, name, clovis_errmsg());
	f->fi_meta_open = true;
	return 0;
}

/* Load the file's record into fi_saved_*: 0 (fi_saved says whether one
 * exists) or an error. */
static int sh5_meta_load(struct sh5_file *f)
{
	uint8_t key[16];
	struct sh5_rec r;
	void *kb = key, *vb = &r;
	size_t kl = sizeof key, vl = sizeof r;
	struct clovis_bufvec kv = {1, &kb, &kl}, vv = {1, &vb, &vl};
	struct clovis_op *op = NULL;
	int32_t rcs = 0;
	int rc;

	f->fi_saved = false;
	if (!f->fi_meta_open)
		return 0;
	sh5_key(f, key);
	rc = clovis_idx_op(&f->fi_meta, CLOVIS_IC_GET, &kv, &vv, &rcs, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0 && rcs == -ENOENT)
		return 0;
	if (rc == 0 && rcs != 0)
		rc = rcs;
	if (rc == 0 && (vl != sizeof r || r.rc_magic != SH5_REC_MAGIC ||
			r.rc_version != SH5_REC_VERSION || r.rc_eoa > (1ull << 62)
			|| r.rc_eof > (1ull << 62)))
		return sh5_fail(-CLOVIS_ECORRUPT, "strata h5: %s: its driver "
				"record is damaged (%zu bytes)", f->fi_name, vl);
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s: reading its driver record:"
				" %s", f->fi_name, clovis_errmsg());
	f->fi_saved = true;
	f->fi_saved_eoa = r.rc_eoa;
	f->fi_saved_eof = r.rc_eof;
	return 0;
}

/*
 * Store EOA and EOF: the record (PUT, overwrite) and the object's byte
 * size (SETATTR), launched together and waited STABLE.
 */
int sh5_meta_save(struct sh5_file *f)
{
	uint8_t key[16];
	struct sh5_rec r = {SH5_REC_MAGIC, SH5_REC_VERSION, f->fi_eoa,
			    f->fi_eof, (uint32_t)f->fi_bsize, 0};
	void *kb = key, *vb = &r;
	size_t kl = sizeof key, vl = sizeof r;
	struct clovis_bufvec kv = {1, &kb, &kl}, vv = {1, &vb, &vl};
	struct clovis_op *ops[2] = {NULL, NULL};
	int32_t rcs = 0;
	int rc, rc2;

	if (!f->fi_meta_open) {
		rc = sh5_meta_init(f, true);
		if (rc != 0)
			return rc;
	}
	sh5_key(f, key);
	f->fi_obj.ob_attr.oa_size_bytes = f->fi_eof;
	rc = clovis_idx_op(&f->fi_meta, CLOVIS_IC_PUT, &kv, &vv, &rcs,
			   CLOVIS_IF_OVERWRITE, &ops[0]);
	if (rc == 0)
		rc = clovis_entity_op(&f->fi_obj.ob_entity, CLOVIS_EO_SETATTR,
				      &ops[1]);
	if (rc == 0)
		rc = clovis_op_launch(ops, 2);
	if (rc == 0) {
		rc = sh5_wait(ops[0], CLOVIS_OS_STABLE);
		rc2 = sh5_wait(ops[1], CLOVIS_OS_STABLE);
		if (rc == 0)
			rc = rc2 != 0 ? rc2 : rcs;
		if (rc != 0)
			rc = sh5_fail(rc, "strata h5: %s: saving EOA/EOF: %s",
				      f->fi_name, clovis_op_errmsg(
				      clovis_op_rc(ops[0]) != 0 ? ops[0] :
				      ops[1]));
	} else {
		rc = sh5_fail(rc, "strata h5: %s: saving EOA/EOF: %s",
			      f->fi_name, clovis_errmsg());
	}
	clovis_op_free(ops[0]);
	clovis_op_free(ops[1]);
	if (rc == 0) {
		f->fi_saved = true;
		f->fi_saved_eoa = f->fi_eoa;
		f->fi_saved_eof = f->fi_eof;
	}
	return rc;
}

static int sh5_meta_del(struct sh5_file *f)
{
	uint8_t key[16];
	void *kb = key;
	size_t kl = sizeof key;
	struct clovis_bufvec kv = {1, &kb, &kl};
	struct clovis_op *op = NULL;
	int32_t rcs = 0;
	int rc;

	if (!f->fi_meta_open)
		return 0;
	sh5_key(f, key);
	rc = clovis_idx_op(&f->fi_meta, CLOVIS_IC_DEL, &kv, NULL, &rcs, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s: deleting its driver "
				"record: %s", f->fi_name, clovis_errmsg());
	return 0;
}

/* ---------------------------------------------------------------- open */

/* The container of w (opened unless it is the default one). */
static int sh5_cont_open(struct sh5_file *f, const struct sh5_where *w)
{
	struct clovis *cl = f->fi_store->st_cl;
	char cs[CLOVIS_ID_STR_LEN];
	int rc;

	if (clovis_id_cmp(&w->wh_cont_id, &CLOVIS_ID_DEFAULT_CONTAINER) == 0) {
		f->fi_realm = clovis_default_realm(cl);
		f->fi_cont.co_entity.en_id = w->wh_cont_id;
		return 0;
	}
	rc = clovis_container_init(&f->fi_cont, cl, &w->wh_cont_id);
	if (rc == 0)
		rc = sh5_entity_sync(&f->fi_cont.co_entity, CLOVIS_EO_OPEN);
	if (rc == -ENOENT)
		return sh5_fail(rc, "strata h5: %s: container %s (%s) does not"
				" exist", w->wh_url, w->wh_cont,
				clovis_id_format(&w->wh_cont_id, cs));
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s: container %s: %s",
				w->wh_url, w->wh_cont, clovis_errmsg());
	f->fi_realm = &f->fi_cont.co_realm;
	return 0;
}

/* Make the object anew (after deleting it when it exists). */
static int sh5_obj_make(struct sh5_file *f, const struct sh5_fa *fa,
			bool exists)
{
	struct clovis_id id = f->fi_obj.ob_entity.en_id;
	struct clovis_obj_attr a;
	uint32_t b = fa->fa_block_size != 0 ? fa->fa_block_size : 4096;
	int rc = 0;

	if (exists)
		rc = sh5_entity_sync(&f->fi_obj.ob_entity, CLOVIS_EO_DELETE);
	memset(&a, 0, sizeof a);
	a.oa_block_shift = (uint32_t)__builtin_ctz(b);
	a.oa_tier = fa->fa_tier != 0 ? fa->fa_tier - 1 : CLOVIS_TIER_FLASH;
	if (rc == 0)
		rc = clovis_obj_init(&f->fi_obj, f->fi_realm, &id, &a);
	if (rc == 0)
		rc = sh5_entity_sync(&f->fi_obj.ob_entity, CLOVIS_EO_CREATE);
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s: %s the object: %s",
				f->fi_name, exists ? "truncating" : "creating",
				clovis_errmsg());
	f->fi_shift = f->fi_obj.ob_attr.oa_block_shift;
	f->fi_bsize = 1ull << f->fi_shift;
	f->fi_eoa = f->fi_eof = 0;
	f->fi_blocks = 0;
	return sh5_meta_save(f);
}

/* An existing object: its EOA/EOF, its signature, stale bytes past EOF. */
static int sh5_obj_load(struct sh5_file *f)
{
	int rc = sh5_meta_load(f);

	if (rc != 0)
		return rc;
	f->fi_blocks = f->fi_obj.ob_attr.oa_size_blocks;
	f->fi_eof = f->fi_saved ? f->fi_saved_eof :
		f->fi_obj.ob_attr.oa_size_bytes;
	f->fi_eoa = f->fi_saved ? f->fi_saved_eoa : f->fi_eof;
	rc = sh5_is_hdf5(f);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return sh5_fail(-EILSEQ, "strata h5: %s is not an HDF5 file: "
				"no HDF5 signature in its %llu bytes",
				f->fi_name, (unsigned long long)f->fi_eof);
	/* writes after the last flush of a process that died: dropped */
	if (f->fi_rdwr && (f->fi_blocks << f->fi_shift) > f->fi_eof)
		return sh5_zero_past(f, f->fi_eof);
	return 0;
}

/* The object of f: opened, made or remade as flags say. */
static int sh5_obj_open(struct sh5_file *f, const struct sh5_where *w,
			const struct sh5_fa *fa, uint32_t flags)
{
	struct clovis_obj_attr a;
	bool exists;
	int rc;

	memset(&a, 0, sizeof a);
	a.oa_tier = CLOVIS_TIER_FLASH;
	rc = clovis_obj_init(&f->fi_obj, f->fi_realm, &w->wh_obj_id, &a);
	if (rc != 0)
		return sh5_fail(rc, "strata h5: %s: %s", f->fi_name,
				clovis_errmsg());
	rc = sh5_entity_sync(&f->fi_obj.ob_entity, CLOVIS_EO_OPEN);
	if (rc != 0 && rc != -ENOENT)
		return sh5_fail(rc, "strata h5: %s: %s", f->fi_name,
				clovis_errmsg());
	exists = rc == 0;
	if (exists && (flags & SH5_O_EXCL))
		return sh5_fail(-EEXIST, "strata h5: %s exists (H5F_ACC_EXCL)",
				f->fi_name);
	if (!exists && !(flags & SH5_O_CREAT))
		return sh5_fail(-ENOENT, "strata h5: %s: no such object",
				f->fi_name);
	rc = sh5_meta_init(f, false);
	if (rc != 0)
		return rc;
	if (!exists || (flags & SH5_O_TRUNC))
		return sh5_obj_make(f, fa, exists);
	f->fi_shift = f->fi_obj.ob_attr.oa_block_shift;
	f->fi_bsize = 1ull << f->fi_shift;
	return sh5_obj_load(f);
}

static void sh5_file_free(struct sh5_file *f)
{
	for (uint32_t i = 0; i < SH5_EDGE_NR; i++)
		free(f->fi_edge[i].eg_data);
	sh5_ra_fini(f);
	free(f->fi_rbuf);
	if (f->fi_store != NULL)
		sh5_store_put(f->fi_store);
	free(f);
}

int sh5_open(const char *name, const struct sh5_fa *fa, uint32_t flags,
	     struct sh5_file **out)
{
	struct sh5_where w;
	struct sh5_file *f;
	char cs[CLOVIS_ID_STR_LEN];
	int rc = sh5_resolve(name, fa, &w);

	if (rc != 0)
		return rc;
	if (flags & (SH5_O_TRUNC | SH5_O_CREAT | SH5_O_EXCL))
		flags |= SH5_O_RDWR;
	f = calloc(1, sizeof *f);
	if (f == NULL)
		return sh5_fail(-ENOMEM, "strata h5: out of memory");
	f->fi_rdwr = (flags & SH5_O_RDWR) != 0;
	snprintf(f->fi_name, sizeof f->fi_name, "%s (object %s)", w.wh_url,
		 clovis_id_format(&w.wh_obj_id, cs));
	rc = sh5_store_get(fa, (flags & (SH5_O_CREAT | SH5_O_TRUNC)) != 0,
			   &f->fi_store);
	if (rc == 0)
		rc = sh5_cont_open(f, &w);
	if (rc == 0)
		rc = sh5_obj_open(f, &w, fa, flags);
	if (rc != 0) {
		sh5_file_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

int sh5_close(struct sh5_file *f)
{
	int rc = f->fi_rdwr ? sh5_flush(f) : 0;
	int rc2 = sh5_drain(f);

	sh5_file_free(f);
	return rc != 0 ? rc : rc2;
}

int sh5_delete(const char *name, const struct sh5_fa *fa)
{
	struct sh5_file *f = NULL;
	int rc = sh5_open(name, fa, SH5_O_RDWR, &f);

	if (rc != 0)
		return rc;
	rc = sh5_drain(f);
	if (rc == 0)
		rc = sh5_meta_del(f);
	if (rc == 0)
		rc = sh5_entity_sync(&f->fi_obj.ob_entity, CLOVIS_EO_DELETE);
	if (rc != 0 && sh5_errno_get() != rc)
		rc = sh5_fail(rc, "strata h5: deleting %s: %s", f->fi_name,
			      clovis_errmsg());
	f->fi_rdwr = false; /* nothing to flush: it is gone */
	sh5_file_free(f);
	return rc;
}

int sh5_cmp(const struct sh5_file *a, const struct sh5_file *b)
{
	int c;

	if (a->fi_store != b->fi_store)
		return a->fi_store < b->fi_store ? -1 : 1;
	c = clovis_id_cmp(&a->fi_cont.co_entity.en_id,
			  &b->fi_cont.co_entity.en_id);
	if (c != 0)
		return c;
	return clovis_id_cmp(&a->fi_obj.ob_entity.en_id,
			     &b->fi_obj.ob_entity.en_id);
}
