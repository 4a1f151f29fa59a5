/*
 * s3_store.c — the S3 gateway's mapping onto Clovis.
 *
 * System indices in the default container (ids from names, "@s3.*"):
 *   buckets:  bucket name -> {owner, container id, index id, layout, ctime}
 *   inflight: gateway id ":" object id -> {container, bucket, index key,
 *             part key}: objects that must be freed unless a record
 *             references them (written before an object is created or
 *             released; removed once its fate is settled)
 *   uploads:  bucket "\0" key "\0" upload id -> multipart upload
 *   parts:    upload id + be32 part number -> {object id, size, ETag}
 * A bucket is a container holding its objects and its bucket index (S3 key
 * -> object record, s3_orec).  Object data is written out of place into a
 * fresh object; a PUT becomes visible with one index PUT of the record, so
 * readers see the old or the new object, never a mix.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/sha.h>

#include "gateways/s3/s3.h"
#ifdef STRATA_FAULT_INJECT
#include "core/fault.h" /* test builds (strata-s3-test) only */
#endif

struct s3_gw s3g;

static void jan_start(void);
static void jan_stop(void);
static size_t inflight_key(const struct clovis_id *id, uint8_t *out);
static void settle_stop(void);

/* ------------------------------------------------------- index helpers */

int s3_idx_get(struct clovis_idx *i, const void *k, size_t kl, void **v,
	       size_t *vl)
{
	void *kb = (void *)k, *vb = NULL;
	size_t kls = kl, vls = 0;
	struct clovis_bufvec keys = {1, &kb, &kls}, vals = {1, &vb, &vls};
	struct clovis_op *op;
	int32_t rcs = 0;
	int rc = clovis_idx_op(i, CLOVIS_IC_GET, &keys, &vals, &rcs, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = rcs;
	if (rc != 0) {
		free(vb);
		return rc;
	}
	*v = vb;
	*vl = vls;
	return 0;
}

int s3_idx_put(struct clovis_idx *i, const void *k, size_t kl, const void *v,
	       size_t vl, bool overwrite)
{
	void *kb = (void *)k, *vb = (void *)v;
	size_t kls = kl, vls = vl;
	struct clovis_bufvec keys = {1, &kb, &kls}, vals = {1, &vb, &vls};
	struct clovis_op *op;
	int32_t rcs = 0;
	int rc = clovis_idx_op(i, CLOVIS_IC_PUT, &keys, &vals, &rcs,
			       overwrite ? CLOVIS_IF_OVERWRITE : 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc != 0 ? rc : rcs;
}

int s3_idx_del(struct clovis_idx *i, const void *k, size_t kl)
{
	void *kb = (void *)k;
	size_t kls = kl;
	struct clovis_bufvec keys = {1, &kb, &kls};
	struct clovis_op *op;
	int32_t rcs = 0;
	int rc = clovis_idx_op(i, CLOVIS_IC_DEL, &keys, NULL, &rcs, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc != 0 ? rc : rcs;
}

int s3_idx_next(struct clovis_idx *i, const void *start, size_t sl, bool excl,
		void **keys, size_t *klens, void **vals, size_t *vlens,
		uint32_t *nr)
{
	struct clovis_bufvec kv = {*nr, keys, klens}, vv = {*nr, vals, vlens};
	int32_t *rcs = calloc(*nr, sizeof *rcs);
	struct clovis_op *op;
	uint32_t k, n = 0;
	int rc;

	if (rcs == NULL)
		return -ENOMEM;
	memset(keys, 0, *nr * sizeof *keys);
	memset(vals, 0, *nr * sizeof *vals);
	memset(klens, 0, *nr * sizeof *klens);
	memset(vlens, 0, *nr * sizeof *vlens);
	keys[0] = (void *)start;
	klens[0] = start ? sl : 0;
	rc = clovis_idx_op(i, CLOVIS_IC_NEXT, &kv, &vv, rcs,
			   excl && start ? CLOVIS_IF_EXCLUDE_START_KEY : 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0) {
		keys[0] = NULL;
		free(rcs);
		return rc;
	}
	for (k = 0; k < *nr && rcs[k] == 0; k++)
		n++;
	if (n == 0)
		keys[0] = NULL;
	free(rcs);
	*nr = n;
	return 0;
}

/* ---------------------------------------------------------------- ids */

void s3_rand_id(struct clovis_id *id)
{
	do {
		if (getrandom(id, sizeof *id, 0) != sizeof *id)
			id->ci_hi = s3_now_ns();
	} while (id->ci_hi == 0);
}

static void put_id(uint8_t *p, const struct clovis_id *id)
{
	int i;

	for (i = 0; i < 8; i++) {
		p[i] = (uint8_t)(id->ci_hi >> (8 * i));
		p[8 + i] = (uint8_t)(id->ci_lo >> (8 * i));
	}
}

static void get_id(const uint8_t *p, struct clovis_id *id)
{
	id->ci_hi = s3_u64(p);
	id->ci_lo = s3_u64(p + 8);
}

size_t s3_ikey(const char *k, size_t kl, uint8_t *out)
{
	if (kl <= S3_KEY_HASHED_PREFIX) {
		memcpy(out, k, kl);
		return kl;
	}
	memcpy(out, k, S3_KEY_HASHED_PREFIX);
	SHA256((const unsigned char *)k, kl, out + S3_KEY_HASHED_PREFIX);
	return S3_KEY_HASHED_PREFIX + 32;
}

/* ---------------------------------------------------------- open/close */

static int sys_idx(struct clovis_idx *i, const char *name)
{
	struct clovis_id id;
	struct clovis_op *op;
	int rc = clovis_id_parse(name, &id);

	if (rc == 0)
		rc = clovis_idx_init(i, clovis_default_realm(s3g.g_cl), &id);
	if (rc == 0)
		rc = clovis_entity_op(&i->in_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == -ENOENT) {
		rc = clovis_idx_init(i, clovis_default_realm(s3g.g_cl), &id);
		if (rc == 0)
			rc = clovis_entity_op(&i->in_entity, CLOVIS_EO_CREATE,
					      &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
	}
	if (rc != 0)
		fprintf(stderr, "strata-s3: system index %s: %s: %s\n", name,
			clovis_strerror(rc), clovis_errmsg());
	return rc;
}

/*
 * With meta-nvram and a store that already exists, say how it was made:
 * the flag only applies when this run creates the store.  A store made
 * with its metadata on NVRAM has DIR/meta as a symbolic link to it
 * (clovis.h, CLOVIS_CONF_META_NVRAM).
 */
static void meta_nvram_note(const char *dir)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof path, "%s/meta", dir);
	if (lstat(path, &st) != 0 || S_ISLNK(st.st_mode))
		return;
	fprintf(stderr, "strata-s3: the store in '%s' exists with its "
		"metadata in the directory: meta-nvram applies only when a "
		"store is created, the store keeps how it was made\n", dir);
}

int s3_store_open(void)
{
	struct clovis_conf cc = {0};
	int rc, i;

	if (s3g.g_conf.sc_cluster[0]) {
		cc.cc_mode = CLOVIS_MODE_CLUSTER;
		cc.cc_cluster_conf = s3g.g_conf.sc_cluster;
	} else {
		cc.cc_data_dir = s3g.g_conf.sc_data_dir;
		cc.cc_flags = CLOVIS_CONF_CREATE;
		if (s3g.g_conf.sc_meta_nvram) {
			cc.cc_flags |= CLOVIS_CONF_META_NVRAM;
			meta_nvram_note(cc.cc_data_dir);
		}
		cc.cc_dev_size = s3g.g_conf.sc_dev_size;
	}
	cc.cc_nr_workers = s3g.g_conf.sc_threads;
	rc = clovis_init(&s3g.g_cl, &cc);
	if (rc != 0) {
		fprintf(stderr, "strata-s3: cannot open the store: %s: %s\n",
			clovis_strerror(rc), clovis_errmsg());
		return rc;
	}
	pthread_rwlock_init(&s3g.g_bk_lock, NULL);
	pthread_mutex_init(&s3g.g_bk_create_lock, NULL);
	for (i = 0; i < 256; i++)
		pthread_mutex_init(&s3g.g_key_locks[i], NULL);
	rc = sys_idx(&s3g.g_buckets, "@s3.buckets");
	if (rc == 0)
		rc = sys_idx(&s3g.g_inflight, "@s3.inflight");
	if (rc == 0)
		rc = sys_idx(&s3g.g_uploads, "@s3.uploads");
	if (rc == 0)
		rc = sys_idx(&s3g.g_parts, "@s3.parts");
	if (rc != 0) {
		clovis_fini(s3g.g_cl);
		s3g.g_cl = NULL;
		return rc;
	}
	s3_profile = getenv("STRATA_S3_PROFILE") != NULL;
	jan_start();
	return 0;
}

void s3_store_close(void)
{
	jan_stop();
	settle_stop();
	clovis_fini(s3g.g_cl);
	s3g.g_cl = NULL;
}

/* ------------------------------------------------------------- buckets */

/* Copy field tag of the bucket record into b's cache (v NULL: none).  A
 * stored policy that no longer compiles is kept as text and evaluated as
 * denying nothing and allowing nothing (logged). */
static int bucket_conf_set(struct s3_bucket *b, uint8_t tag, const void *v,
			   uint32_t n)
{
	void *copy = NULL;
	struct s3_pol *pol = NULL;
	char msg[160];

	if (tag == T_OWNCTL) {
		b->bk_ownctl = v != NULL && n == 8 ? (uint32_t)s3_u64(v) : 0;
		return 0;
	}
	if (v != NULL) {
		copy = malloc(n + 1);
		if (copy == NULL)
			return -ENOMEM;
		memcpy(copy, v, n);
		((char *)copy)[n] = 0;
	}
	if (tag == T_POLICY && v != NULL &&
	    s3_pol_compile(copy, n, b->bk_name, &pol, msg, sizeof msg) != 0)
		fprintf(stderr, "strata-s3: bucket %s: stored policy: %s\n",
			b->bk_name, msg);
	switch (tag) {
	case T_ACL:
		free(b->bk_acl);
		b->bk_acl = copy;
		b->bk_acl_len = n;
		break;
	case T_TAGS:
		free(b->bk_tags);
		b->bk_tags = copy;
		b->bk_tags_len = n;
		break;
	case T_POLICY:
		free(b->bk_policy);
		s3_pol_free(b->bk_pol);
		b->bk_policy = copy;
		b->bk_policy_len = n;
		b->bk_pol = pol;
		break;
	}
	return 0;
}

/* Free a bucket never published (its cached documents too). */
static void bucket_unload(struct s3_bucket *b)
{
	if (b == NULL)
		return;
	free(b->bk_acl);
	free(b->bk_tags);
	free(b->bk_policy);
	s3_pol_free(b->bk_pol);
	free(b);
}

static int bucket_load(const char *name, const void *v, size_t vl,
		       struct s3_bucket **out)
{
	struct s3_bucket *b = calloc(1, sizeof *b);
	struct clovis_id cid = {0}, iid = {0};
	const uint8_t *val;
	struct clovis_op *op;
	size_t pos = 0;
	uint32_t n;
	uint8_t tag;
	int rc;

	if (b == NULL)
		return -ENOMEM;
	snprintf(b->bk_name, sizeof b->bk_name, "%s", name);
	while ((rc = s3_tlv_next(v, vl, &pos, &tag, &val, &n)) == 1) {
		if (tag == T_OWNER && n < sizeof b->bk_owner)
			memcpy(b->bk_owner, val, n);
		else if (tag == T_CONT && n == 16)
			get_id(val, &cid);
		else if (tag == T_IDX && n == 16)
			get_id(val, &iid);
		else if (tag == T_LAYOUT && n == 8)
			b->bk_layout = (uint32_t)s3_u64(val);
		else if (tag == T_MTIME && n == 8)
			b->bk_ctime_ns = s3_u64(val);
		else if (tag == T_ACL || tag == T_TAGS || tag == T_POLICY ||
			 tag == T_OWNCTL)
			bucket_conf_set(b, tag, val, n);
	}
	pthread_rwlock_init(&b->bk_conf, NULL);
	if (rc == 0 && cid.ci_hi == 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = clovis_container_init(&b->bk_cont, s3g.g_cl, &cid);
	if (rc == 0)
		rc = clovis_idx_init(&b->bk_idx, &b->bk_cont.co_realm, &iid);
	if (rc == 0)
		rc = clovis_entity_op(&b->bk_idx.in_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0) {
		fprintf(stderr, "strata-s3: bucket %s: record or index bad: %s: "
			"%s\n", name, clovis_strerror(rc), clovis_errmsg());
		bucket_unload(b);
		return rc == -ENOENT ? -EIO : rc;
	}
	*out = b;
	return 0;
}

int s3_bucket_get(const char *name, struct s3_bucket **out)
{
	struct s3_bucket *b, *nb;
	void *v;
	size_t vl;
	int rc;

	pthread_rwlock_rdlock(&s3g.g_bk_lock);
	for (b = s3g.g_bk_list; b != NULL; b = b->bk_next)
		if (strcmp(b->bk_name, name) == 0)
			break;
	pthread_rwlock_unlock(&s3g.g_bk_lock);
	if (b != NULL) {
		*out = b;
		return 0;
	}
	rc = s3_idx_get(&s3g.g_buckets, name, strlen(name), &v, &vl);
	if (rc != 0)
		return rc;
	rc = bucket_load(name, v, vl, &nb);
	free(v);
	if (rc != 0)
		return rc;
	pthread_rwlock_wrlock(&s3g.g_bk_lock);
	for (b = s3g.g_bk_list; b != NULL; b = b->bk_next)
		if (strcmp(b->bk_name, name) == 0)
			break;
	if (b == NULL) {
		nb->bk_next = s3g.g_bk_list;
		s3g.g_bk_list = b = nb;
		nb = NULL;
	}
	pthread_rwlock_unlock(&s3g.g_bk_lock);
	bucket_unload(nb);
	*out = b;
	return 0;
}

static int entity_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, oc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

int s3_bucket_create(const char *name, const char *owner,
		     const struct s3_buf *extra)
{
	struct clovis_container c;
	struct clovis_idx i;
	struct clovis_id cid, iid;
	struct s3_buf rec = {0};
	uint8_t raw[16];
	void *v;
	size_t vl;
	int rc;

	pthread_mutex_lock(&s3g.g_bk_create_lock);
	rc = s3_idx_get(&s3g.g_buckets, name, strlen(name), &v, &vl);
	if (rc == 0) {
		free(v);
		rc = -EEXIST;
		goto out;
	}
	if (rc != -ENOENT)
		goto out;
	s3_rand_id(&cid);
	s3_rand_id(&iid);
	rc = clovis_container_init(&c, s3g.g_cl, &cid);
	if (rc == 0)
		rc = entity_sync(&c.co_entity, CLOVIS_EO_CREATE);
	if (rc != 0)
		goto out;
	rc = clovis_idx_init(&i, &c.co_realm, &iid);
	if (rc == 0)
		rc = entity_sync(&i.in_entity, CLOVIS_EO_CREATE);
	if (rc != 0)
		goto out_cont;
	s3_tlv_add(&rec, T_OWNER, owner, (uint32_t)strlen(owner));
	put_id(raw, &cid);
	s3_tlv_add(&rec, T_CONT, raw, 16);
	put_id(raw, &iid);
	s3_tlv_add(&rec, T_IDX, raw, 16);
	s3_tlv_u64(&rec, T_LAYOUT, s3g.g_conf.sc_layout);
	s3_tlv_u64(&rec, T_MTIME, s3_now_ns());
	if (extra != NULL && extra->b_len > 0)
		s3_buf_add(&rec, extra->b_data, extra->b_len);
	rc = rec.b_oom ? -ENOMEM
		       : s3_idx_put(&s3g.g_buckets, name, strlen(name),
				    rec.b_data, rec.b_len, false);
	s3_buf_fini(&rec);
	if (rc == 0)
		goto out;
	entity_sync(&i.in_entity, CLOVIS_EO_DELETE);
out_cont:
	entity_sync(&c.co_entity, CLOVIS_EO_DELETE);
out:
	pthread_mutex_unlock(&s3g.g_bk_create_lock);
	return rc;
}

int s3_bucket_empty(struct s3_bucket *b, bool *empty)
{
	void *k, *v;
	size_t kl, vl;
	uint32_t nr = 1;
	int rc = s3_idx_next(&b->bk_idx, NULL, 0, false, &k, &kl, &v, &vl, &nr);

	if (rc != 0)
		return rc;
	if (nr > 0) {
		free(k);
		free(v);
	}
	*empty = nr == 0;
	return 0;
}

int s3_bucket_set(struct s3_bucket *b, uint8_t tag, const void *v,
		  uint32_t n)
{
	struct s3_buf rec = {0};
	struct s3_pol *pol = NULL;
	const uint8_t *val;
	size_t pos = 0, ol;
	uint32_t fl;
	uint8_t t;
	void *ov;
	char msg[160];
	int rc;

	if (tag == T_POLICY && v != NULL) {
		rc = s3_pol_compile(v, n, b->bk_name, &pol, msg, sizeof msg);
		if (rc != 0)
			return rc;
		s3_pol_free(pol);
	}
	pthread_mutex_lock(&s3g.g_bk_create_lock);
	rc = s3_idx_get(&s3g.g_buckets, b->bk_name, strlen(b->bk_name), &ov,
			&ol);
	if (rc != 0)
		goto out;
	while (s3_tlv_next(ov, ol, &pos, &t, &val, &fl) == 1)
		if (t != tag)
			s3_tlv_add(&rec, t, val, fl);
	free(ov);
	if (v != NULL)
		s3_tlv_add(&rec, tag, v, n);
	rc = rec.b_oom ? -ENOMEM
		       : s3_idx_put(&s3g.g_buckets, b->bk_name,
				    strlen(b->bk_name), rec.b_data, rec.b_len,
				    true);
	if (rc == 0) {
		pthread_rwlock_wrlock(&b->bk_conf);
		rc = bucket_conf_set(b, tag, v, n);
		pthread_rwlock_unlock(&b->bk_conf);
	}
out:
	pthread_mutex_unlock(&s3g.g_bk_create_lock);
	s3_buf_fini(&rec);
	return rc;
}

/* Remove the record first: the bucket disappears atomically; the empty
 * index and container follow. */
int s3_bucket_delete(struct s3_bucket *b)
{
	struct s3_bucket **pp;
	int rc;

	s3_janitor_flush(); /* its objects freed before its container */
	rc = s3_idx_del(&s3g.g_buckets, b->bk_name, strlen(b->bk_name));

	if (rc != 0)
		return rc;
	pthread_rwlock_wrlock(&s3g.g_bk_lock);
	for (pp = &s3g.g_bk_list; *pp != NULL; pp = &(*pp)->bk_next)
		if (*pp == b) {
			*pp = b->bk_next;
			break;
		}
	b->bk_dead = true;
	pthread_rwlock_unlock(&s3g.g_bk_lock);
	rc = entity_sync(&b->bk_idx.in_entity, CLOVIS_EO_DELETE);
	if (rc == 0)
		rc = entity_sync(&b->bk_cont.co_entity, CLOVIS_EO_DELETE);
	if (rc != 0)
		fprintf(stderr, "strata-s3: bucket %s: removing its container: "
			"%s: %s\n", b->bk_name, clovis_strerror(rc),
			clovis_errmsg());
	/* b stays allocated: requests in flight may still hold it. */
	return 0;
}

/* ------------------------------------------------------------- janitor */

/*
 * Work that follows a reply: deleting in-flight records whose object is
 * now referenced, and freeing the objects of replaced or deleted records
 * (then their in-flight records).  One thread, batches of up to JAN_BATCH
 * (object DELETEs launched together, in-flight records removed by one
 * index DEL).  A crash before a job runs leaves in-flight records, which
 * s3_store_recover() settles at the next start.
 */
#define JAN_BATCH 64u

struct jan_job {
	struct jan_job *j_next;
	struct s3_bucket *j_bk;   /* with j_obj: the object's bucket */
	bool j_obj;               /* delete object j_id first */
	bool j_keep;              /* that failed: keep the in-flight record */
	struct clovis_id j_id;
	uint8_t j_rkey[64];       /* the in-flight record */
};

static struct {
	pthread_mutex_t j_lock;
	pthread_cond_t j_cond;    /* work queued, or stop */
	pthread_cond_t j_idle;    /* queue empty and nothing running */
	struct jan_job *j_head, **j_tail;
	bool j_busy, j_stop, j_started;
	pthread_t j_thread;
} jan = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	 PTHREAD_COND_INITIALIZER, NULL, &jan.j_head, false, false, false, 0};

bool s3_profile;

/* Run the jobs of list j (at most JAN_BATCH; all freed). */
static void jan_run(struct jan_job *j)
{
	struct clovis_obj o[JAN_BATCH];
	struct clovis_op *ops[JAN_BATCH];
	struct jan_job *v[JAN_BATCH];
	void *kp[JAN_BATCH];
	size_t kl[JAN_BATCH];
	int32_t rcs[JAN_BATCH];
	uint32_t n = 0, nk = 0, k;
	size_t gl = strlen(s3g.g_conf.sc_gw_id) + 17;

	for (; j != NULL && n < JAN_BATCH; j = j->j_next)
		v[n++] = j;
	for (k = 0; k < n; k++) {
		int rc = 0;

		ops[k] = NULL;
		if (v[k]->j_obj) {
			rc = clovis_obj_init(&o[k], &v[k]->j_bk->bk_cont.co_realm,
					     &v[k]->j_id, NULL);
			if (rc == 0)
				rc = clovis_entity_op(&o[k].ob_entity,
						      CLOVIS_EO_DELETE, &ops[k]);
			if (rc == 0)
				rc = clovis_op_launch(&ops[k], 1);
		}
		if (rc != 0) { /* keep the in-flight record: recovery frees it */
			clovis_op_free(ops[k]);
			ops[k] = NULL;
			v[k]->j_keep = true;
		}
	}
	for (k = 0; k < n; k++) {
		int rc = 0;

		if (ops[k] != NULL) {
			rc = clovis_op_wait(ops[k], CLOVIS_OS_STABLE,
					    CLOVIS_TIME_NEVER);
			if (rc != 0 && rc != -ENOENT)
				fprintf(stderr, "strata-s3: freeing an object "
					"of bucket %s: %s: %s (left to the "
					"next start)\n", v[k]->j_bk->bk_name,
					clovis_strerror(rc),
					clovis_op_errmsg(ops[k]));
			clovis_op_free(ops[k]);
			if (rc == -ENOENT)
				rc = 0;
		}
		if (rc == 0 && !v[k]->j_keep) {
			kp[nk] = v[k]->j_rkey;
			kl[nk++] = gl;
		}
	}
	if (nk > 0) {
		struct clovis_bufvec kv = {nk, kp, kl};
		struct clovis_op *op;

		if (clovis_idx_op(&s3g.g_inflight, CLOVIS_IC_DEL, &kv, NULL, rcs,
				  0, &op) == 0)
			clovis_op_sync(op);
	}
	for (k = 0; k < n; k++)
		free(v[k]);
}

static void *jan_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&jan.j_lock);
	for (;;) {
		struct jan_job *list, *rest, *j;
		uint32_t k;

		while (jan.j_head == NULL && !jan.j_stop)
			pthread_cond_wait(&jan.j_cond, &jan.j_lock);
		if (jan.j_head == NULL)
			break;
		list = jan.j_head;
		for (j = list, k = 1; k < JAN_BATCH && j->j_next != NULL; k++)
			j = j->j_next;
		rest = j->j_next;
		j->j_next = NULL;
		jan.j_head = rest;
		if (rest == NULL)
			jan.j_tail = &jan.j_head;
		jan.j_busy = true;
		pthread_mutex_unlock(&jan.j_lock);
		jan_run(list);
		pthread_mutex_lock(&jan.j_lock);
		jan.j_busy = false;
		if (jan.j_head == NULL)
			pthread_cond_broadcast(&jan.j_idle);
	}
	pthread_cond_broadcast(&jan.j_idle);
	pthread_mutex_unlock(&jan.j_lock);
	return NULL;
}

/* Queue a job; run it at once when the thread is not there. */
static void jan_add(struct s3_bucket *b, const struct clovis_id *id,
		    bool obj)
{
	struct jan_job *j = calloc(1, sizeof *j);

	if (j == NULL) {
		uint8_t rkey[64];

		inflight_key(id, rkey); /* left to the next start's recovery */
		fprintf(stderr, "strata-s3: out of memory: an in-flight record "
			"is left to the next start\n");
		return;
	}
	j->j_bk = b;
	j->j_obj = obj;
	j->j_id = *id;
	inflight_key(id, j->j_rkey);
	pthread_mutex_lock(&jan.j_lock);
	if (!jan.j_started) {
		pthread_mutex_unlock(&jan.j_lock);
		jan_run(j);
		return;
	}
	*jan.j_tail = j;
	jan.j_tail = &j->j_next;
	pthread_cond_signal(&jan.j_cond);
	pthread_mutex_unlock(&jan.j_lock);
}

void s3_janitor_flush(void)
{
	pthread_mutex_lock(&jan.j_lock);
	while (jan.j_started && (jan.j_head != NULL || jan.j_busy))
		pthread_cond_wait(&jan.j_idle, &jan.j_lock);
	pthread_mutex_unlock(&jan.j_lock);
}

static void jan_start(void)
{
	jan.j_stop = false;
	jan.j_started = pthread_create(&jan.j_thread, NULL, jan_main,
				       NULL) == 0;
}

/* Drain the queue, then stop the thread. */
static void jan_stop(void)
{
	if (!jan.j_started)
		return;
	pthread_mutex_lock(&jan.j_lock);
	jan.j_stop = true;
	pthread_cond_signal(&jan.j_cond);
	pthread_mutex_unlock(&jan.j_lock);
	pthread_join(jan.j_thread, NULL);
	jan.j_started = false;
}

/* ------------------------------------------------------------ in-flight */

static size_t inflight_key(const struct clovis_id *id, uint8_t *out)
{
	size_t n = strlen(s3g.g_conf.sc_gw_id);

	memcpy(out, s3g.g_conf.sc_gw_id, n);
	out[n] = ':';
	put_id(out + n + 1, id);
	return n + 17;
}

int s3_inflight_put(struct s3_bucket *b, const struct clovis_id *id,
		    const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
		    size_t pkl, uint8_t *rkey)
{
	struct s3_buf rec = {0};
	uint8_t raw[16];
	size_t kl = inflight_key(id, rkey);
	int rc;

	put_id(raw, &b->bk_cont.co_entity.en_id);
	s3_tlv_add(&rec, T_CONT, raw, 16);
	s3_tlv_add(&rec, T_BUCKET, b->bk_name, (uint32_t)strlen(b->bk_name));
	if (ikey != NULL)
		s3_tlv_add(&rec, T_KEY, ikey, (uint32_t)ikl);
	if (pkey != NULL)
		s3_tlv_add(&rec, T_UPLOAD, pkey, (uint32_t)pkl);
	rc = rec.b_oom ? -ENOMEM
		       : s3_idx_put(&s3g.g_inflight, rkey, kl, rec.b_data,
				    rec.b_len, true);
	s3_buf_fini(&rec);
	return rc;
}

void s3_inflight_del(const uint8_t *rkey)
{
	size_t n = strlen(s3g.g_conf.sc_gw_id) + 17;

	s3_idx_del(&s3g.g_inflight, rkey, n);
}

static int obj_delete(struct clovis_container *c, const struct clovis_id *id)
{
	struct clovis_obj o;
	int rc = clovis_obj_init(&o, &c->co_realm, id, NULL);

	if (rc == 0)
		rc = entity_sync(&o.ob_entity, CLOVIS_EO_DELETE);
	return rc == -ENOENT ? 0 : rc;
}

/* The ids of the objects record r holds. */
static uint32_t orec_ids(const struct s3_orec *r, uint32_t k,
			 struct clovis_id *id)
{
	uint32_t n = (r->or_has_id ? 1 : 0) + r->or_nparts;

	if (k >= n)
		return n;
	if (r->or_has_id && k == 0)
		*id = r->or_id;
	else
		get_id(r->or_parts + S3_PART_STRIDE * (k - (r->or_has_id ? 1 : 0)), id);
	return n;
}

int s3_orec_hold(struct s3_bucket *b, const struct s3_orec *r,
		 const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
		 size_t pkl)
{
	struct clovis_id id;
	uint8_t rkey[64];
	uint32_t k, n = orec_ids(r, UINT32_MAX, &id);
	int rc = 0;

	for (k = 0; k < n && rc == 0; k++) {
		orec_ids(r, k, &id);
		rc = s3_inflight_put(b, &id, ikey, ikl, pkey, pkl, rkey);
	}
	return rc;
}

void s3_orec_unhold(const struct s3_orec *r)
{
	struct clovis_id id;
	uint8_t rkey[64];
	uint32_t k, n = orec_ids(r, UINT32_MAX, &id);

	for (k = 0; k < n; k++) {
		orec_ids(r, k, &id);
		inflight_key(&id, rkey);
		s3_inflight_del(rkey);
	}
}

void s3_orec_free(struct s3_bucket *b, const struct s3_orec *r)
{
	struct clovis_id id;
	uint32_t k, n = orec_ids(r, UINT32_MAX, &id);

	for (k = 0; k < n; k++) {
		orec_ids(r, k, &id);
		jan_add(b, &id, true);
	}
}

void s3_inflight_del_later(const uint8_t *rkey)
{
	size_t gl = strlen(s3g.g_conf.sc_gw_id);
	struct clovis_id id;

	get_id(rkey + gl + 1, &id);
	jan_add(NULL, &id, false);
}

/* ------------------------------------------------------ atomic changes */

enum { TX_PUT, TX_DEL, TX_IFL, TX_OBJ, TX_WOP };

struct tx_m {
	int m_kind;
	struct clovis_idx *m_idx;      /* TX_PUT, TX_DEL, TX_IFL */
	void *m_kp, *m_vp;             /* copies */
	size_t m_kl, m_vl;
	struct clovis_bufvec m_kv, m_vv;
	int32_t m_rc;
	struct s3_bucket *m_bk;        /* TX_OBJ */
	struct clovis_id m_id;
	struct clovis_obj m_o;
	bool m_gone;                   /* TX_OBJ: it does not exist */
	uint8_t *m_ik, *m_pk;          /* TX_OBJ: fallback's hold keys */
	size_t m_ikl, m_pkl;
	struct clovis_op *m_op;
	struct clovis_op *m_wop;       /* TX_WOP: a writer's (not freed) */
};

struct s3_tx {
	struct tx_m **t_m;
	uint32_t t_nr, t_cap;
	int t_rc;                      /* first failure while adding */
};

struct s3_tx *s3_tx_new(void)
{
	return calloc(1, sizeof(struct s3_tx));
}

static void *dup_bytes(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	if (d != NULL && n > 0)
		memcpy(d, p, n);
	return d;
}

static struct tx_m *tx_add(struct s3_tx *t, int kind)
{
	struct tx_m *m;

	if (t->t_rc != 0)
		return NULL;
	if (t->t_nr == t->t_cap) {
		uint32_t cap = t->t_cap ? t->t_cap * 2 : 8;
		struct tx_m **n = realloc(t->t_m, cap * sizeof *n);

		if (n == NULL) {
			t->t_rc = -ENOMEM;
			return NULL;
		}
		t->t_m = n;
		t->t_cap = cap;
	}
	m = calloc(1, sizeof *m);
	if (m == NULL) {
		t->t_rc = -ENOMEM;
		return NULL;
	}
	m->m_kind = kind;
	t->t_m[t->t_nr++] = m;
	return m;
}

static int tx_rec(struct s3_tx *t, int kind, struct clovis_idx *i,
		  const void *k, size_t kl, const void *v, size_t vl)
{
	struct tx_m *m = tx_add(t, kind);

	if (m == NULL)
		return t->t_rc;
	m->m_idx = i;
	m->m_kl = kl;
	m->m_kp = dup_bytes(k, kl);
	if (kind == TX_PUT) {
		m->m_vl = vl;
		m->m_vp = dup_bytes(v, vl);
	}
	if (m->m_kp == NULL || (kind == TX_PUT && m->m_vp == NULL))
		t->t_rc = -ENOMEM;
	return t->t_rc;
}

int s3_tx_put(struct s3_tx *t, struct clovis_idx *i, const void *k,
	      size_t kl, const void *v, size_t vl)
{
	return tx_rec(t, TX_PUT, i, k, kl, v, vl);
}

int s3_tx_del(struct s3_tx *t, struct clovis_idx *i, const void *k,
	      size_t kl)
{
	return tx_rec(t, TX_DEL, i, k, kl, NULL, 0);
}

int s3_tx_inflight_del(struct s3_tx *t, const uint8_t *rkey)
{
	return tx_rec(t, TX_IFL, &s3g.g_inflight, rkey,
		      strlen(s3g.g_conf.sc_gw_id) + 17, NULL, 0);
}

int s3_tx_write(struct s3_tx *t, const struct s3_wr *w)
{
	struct tx_m *m;

	if (!w->w_held)
		return t->t_rc;
	m = tx_add(t, TX_WOP);
	if (m != NULL)
		m->m_wop = w->w_op[0];
	return t->t_rc;
}

int s3_tx_free(struct s3_tx *t, struct s3_bucket *b, const struct s3_orec *r,
	       const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
	       size_t pkl)
{
	struct clovis_id id;
	uint32_t k, n = orec_ids(r, UINT32_MAX, &id);

	for (k = 0; k < n; k++) {
		struct tx_m *m = tx_add(t, TX_OBJ);

		if (m == NULL)
			break;
		orec_ids(r, k, &m->m_id);
		m->m_bk = b;
		if (ikey != NULL) {
			m->m_ik = dup_bytes(ikey, ikl);
			m->m_ikl = ikl;
		}
		if (pkey != NULL) {
			m->m_pk = dup_bytes(pkey, pkl);
			m->m_pkl = pkl;
		}
		if ((ikey != NULL && m->m_ik == NULL) ||
		    (pkey != NULL && m->m_pk == NULL))
			t->t_rc = -ENOMEM;
	}
	return t->t_rc;
}

void s3_tx_drop(struct s3_tx *t)
{
	uint32_t k;

	if (t == NULL)
		return;
	for (k = 0; k < t->t_nr; k++) {
		struct tx_m *m = t->t_m[k];

		clovis_op_free(m->m_op);
		free(m->m_kp);
		free(m->m_vp);
		free(m->m_ik);
		free(m->m_pk);
		free(m);
	}
	free(t->t_m);
	free(t);
}

bool s3_tx_doubt(int rc)
{
	return rc == -ETIMEDOUT || rc == -EINPROGRESS;
}

/* Test builds: SIGKILL the gateway at a named point of a change. */
static void tx_fault(const char *point)
{
#ifdef STRATA_FAULT_INJECT
	if (FAULT_HIT(point)) {
		fprintf(stderr, "strata-s3: fault point %s: SIGKILL\n", point);
		raise(SIGKILL);
	}
#else
	(void)point;
#endif
}

/* Make (not launch) the op of record member m. */
static int tx_rec_op(struct tx_m *m)
{
	m->m_kv = (struct clovis_bufvec){1, &m->m_kp, &m->m_kl};
	m->m_vv = (struct clovis_bufvec){1, &m->m_vp, &m->m_vl};
	return clovis_idx_op(m->m_idx, m->m_kind == TX_PUT ? CLOVIS_IC_PUT
							   : CLOVIS_IC_DEL,
			     &m->m_kv, m->m_kind == TX_PUT ? &m->m_vv : NULL,
			     &m->m_rc, m->m_kind == TX_PUT ? CLOVIS_IF_OVERWRITE
							   : 0, &m->m_op);
}

/* Run record member m alone; its rc. */
static int tx_rec_sync(struct tx_m *m)
{
	int rc = tx_rec_op(m);

	if (rc == 0) {
		rc = clovis_op_sync(m->m_op);
		m->m_op = NULL;
	}
	return rc != 0 ? rc : m->m_rc;
}

/*
 * OPEN every object member (in parallel): a DELETE in a dtx names the
 * incarnation it deletes (cluster mode checks it).  One that does not
 * exist is left out (m_gone).
 */
static int tx_open_objs(struct s3_tx *t)
{
	uint32_t k;
	int rc = 0;

	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind != TX_OBJ)
			continue;
		rc = clovis_obj_init(&m->m_o, &m->m_bk->bk_cont.co_realm,
				     &m->m_id, NULL);
		if (rc == 0)
			rc = clovis_entity_op(&m->m_o.ob_entity, CLOVIS_EO_OPEN,
					      &m->m_op);
		if (rc == 0)
			rc = clovis_op_launch(&m->m_op, 1);
		if (rc != 0) {
			clovis_op_free(m->m_op);
			m->m_op = NULL;
		}
	}
	for (k = 0; k < t->t_nr; k++) {
		struct tx_m *m = t->t_m[k];
		int r;

		if (m->m_kind != TX_OBJ || m->m_op == NULL)
			continue;
		r = clovis_op_wait(m->m_op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
		clovis_op_free(m->m_op);
		m->m_op = NULL;
		if (r == -ENOENT)
			m->m_gone = true;
		else if (r != 0 && rc == 0)
			rc = r;
	}
	return rc;
}

/* The change as one dtx. */
static int tx_dtx(struct s3_tx *t)
{
	struct clovis_dtx *dx = NULL;
	struct clovis_op *cop = NULL;
	uint32_t k;
	int rc = clovis_dtx_open(&dx, clovis_default_realm(s3g.g_cl));

	/* a writer's held write first, launched: its data I/O starts now,
	 * it is applied with the commit */
	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind != TX_WOP)
			continue;
		rc = clovis_dtx_add(dx, m->m_wop);
		if (rc == 0)
			rc = clovis_op_launch(&m->m_wop, 1);
	}
	if (rc == 0)
		rc = tx_open_objs(t);
	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind == TX_WOP)
			continue;
		if (m->m_kind == TX_OBJ) {
			if (m->m_gone)
				continue;
			rc = clovis_entity_op(&m->m_o.ob_entity,
					      CLOVIS_EO_DELETE, &m->m_op);
		} else {
			rc = tx_rec_op(m);
		}
		if (rc == 0)
			rc = clovis_dtx_add(dx, m->m_op);
	}
	if (rc != 0) {
		clovis_dtx_abort(dx);
		for (k = 0; k < t->t_nr; k++) {
			clovis_op_free(t->t_m[k]->m_op);
			t->t_m[k]->m_op = NULL;
		}
		return rc;
	}
	tx_fault("s3.dtx.before");
	rc = clovis_dtx_commit(dx, &cop);
	if (rc != 0) {
		clovis_dtx_abort(dx);
		for (k = 0; k < t->t_nr; k++) {
			clovis_op_free(t->t_m[k]->m_op);
			t->t_m[k]->m_op = NULL;
		}
		return rc;
	}
	rc = clovis_op_launch(&cop, 1);
	if (rc == 0)
		rc = clovis_op_wait(cop, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc != 0)
		fprintf(stderr, "strata-s3: dtx of %u updates: %s: %s\n",
			t->t_nr, clovis_strerror(rc), clovis_op_errmsg(cop));
	clovis_op_free(cop);
	/* the members go with their dtx's commit op; free them now */
	for (k = 0; k < t->t_nr; k++) {
		clovis_op_free(t->t_m[k]->m_op);
		t->t_m[k]->m_op = NULL;
	}
	if (rc == 0)
		tx_fault("s3.dtx.after");
	return rc;
}

/*
 * The change without a dtx (a dtx too large for the cluster's PREPARE):
 * in-flight records hold the objects to free (a crash after the primary
 * change still frees them at the next start), then the index updates in
 * the order given (the primary first: nothing is visible before it), then
 * the janitor frees the objects and removes those records.
 */
static int tx_plain(struct s3_tx *t)
{
	struct tx_m *p = NULL;   /* the primary change: first PUT, or DEL */
	uint8_t rkey[64];
	uint32_t k;
	int rc = 0;

	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind == TX_OBJ)
			rc = s3_inflight_put(m->m_bk, &m->m_id, m->m_ik,
					     m->m_ikl, m->m_pk, m->m_pkl, rkey);
	}
	for (k = 0; k < t->t_nr && p == NULL; k++)
		if (t->t_m[k]->m_kind == TX_PUT)
			p = t->t_m[k];
	for (k = 0; k < t->t_nr && p == NULL; k++)
		if (t->t_m[k]->m_kind == TX_DEL)
			p = t->t_m[k];
	if (rc == 0 && p != NULL) {
		rc = tx_rec_sync(p);
		if (rc == -ENOENT && p->m_kind == TX_DEL)
			rc = 0;
	}
	for (k = 0; k < t->t_nr && rc == 0; k++) {
		struct tx_m *m = t->t_m[k];
		int r;

		if (m == p || (m->m_kind != TX_PUT && m->m_kind != TX_DEL))
			continue;
		r = tx_rec_sync(m);
		if (r != 0 && r != -ENOENT)
			fprintf(stderr, "strata-s3: a bookkeeping record of a "
				"change: %s (left to the next start)\n",
				clovis_strerror(r));
	}
	for (k = 0; k < t->t_nr; k++) {
		struct tx_m *m = t->t_m[k];

		if (m->m_kind == TX_OBJ && rc == 0) {
			jan_add(m->m_bk, &m->m_id, true);
		} else if (m->m_kind == TX_OBJ && !s3_tx_doubt(rc)) {
			inflight_key(&m->m_id, rkey);  /* not changed: unhold */
			s3_inflight_del(rkey);
		} else if (m->m_kind == TX_IFL && rc == 0) {
			s3_inflight_del_later(m->m_kp);
		}
	}
	return rc;
}

int s3_tx_commit(struct s3_tx *t)
{
	uint32_t k, nrec = 0, nifl = 0, nobj = 0, nwop = 0;
	bool cluster = s3g.g_conf.sc_cluster[0] != 0;
	int rc = t->t_rc;

	for (k = 0; k < t->t_nr; k++) {
		int kd = t->t_m[k]->m_kind;

		nrec += kd == TX_PUT || kd == TX_DEL;
		nifl += kd == TX_IFL;
		nobj += kd == TX_OBJ;
		nwop += kd == TX_WOP;
	}
	if (rc != 0) {
		/* nothing launched */
	} else if (nrec == 1 && nobj == 0 && nwop == 0 &&
		   (cluster || nifl == 0)) {
		struct tx_m *m = NULL;

		for (k = 0; k < t->t_nr; k++)
			if (t->t_m[k]->m_kind != TX_IFL)
				m = t->t_m[k];
		tx_fault("s3.dtx.before");
		rc = tx_rec_sync(m);
		if (rc == 0)
			tx_fault("s3.dtx.after");
		for (k = 0; k < t->t_nr && rc == 0; k++)
			if (t->t_m[k]->m_kind == TX_IFL)
				s3_inflight_del_later(t->t_m[k]->m_kp);
	} else if (nrec + nifl + nobj > 0) {
		rc = tx_dtx(t);
		/* without a dtx a held write would not run: failed then */
		if (rc == -E2BIG && nwop == 0) {
			fprintf(stderr, "strata-s3: a change of %u updates is "
				"too large for one dtx here: done without\n",
				t->t_nr);
			rc = tx_plain(t);
		}
	}
	s3_tx_drop(t);
	return rc;
}

/* Does the record (object or part) v reference id? */
static bool rec_refs(const void *v, size_t vl, const struct clovis_id *id)
{
	struct s3_orec r;
	uint32_t k;

	if (s3_orec_decode(v, vl, &r) != 0)
		return true; /* unknown: keep the object */
	if (r.or_has_id && clovis_id_cmp(&r.or_id, id) == 0)
		return true;
	for (k = 0; k < r.or_nparts; k++) {
		struct clovis_id p;

		get_id(r.or_parts + S3_PART_STRIDE * k, &p);
		if (clovis_id_cmp(&p, id) == 0)
			return true;
	}
	return false;
}

/* Settle one in-flight record: free its object unless referenced. */
static int recover_one(const uint8_t *k, size_t kl, const void *v, size_t vl,
		       uint64_t *freed)
{
	size_t gl = strlen(s3g.g_conf.sc_gw_id), pos = 0;
	struct clovis_id id, cid = {0};
	const uint8_t *ikey = NULL, *pkey = NULL, *val;
	uint32_t ikl = 0, pkl = 0, n;
	struct s3_bucket *b = NULL;
	char bname[S3_BUCKET_MAX + 1] = "";
	bool refd = false;
	uint8_t tag;
	void *rv;
	size_t rvl;

	if (kl != gl + 17)
		return 0;
	get_id(k + gl + 1, &id);
	while (s3_tlv_next(v, vl, &pos, &tag, &val, &n) == 1) {
		if (tag == T_CONT && n == 16)
			get_id(val, &cid);
		else if (tag == T_KEY)
			ikey = val, ikl = n;
		else if (tag == T_UPLOAD)
			pkey = val, pkl = n;
		else if (tag == T_BUCKET && n <= S3_BUCKET_MAX)
			memcpy(bname, val, n), bname[n] = 0;
	}
	if (s3_bucket_get(bname, &b) == 0 &&
	    clovis_id_cmp(&b->bk_cont.co_entity.en_id, &cid) == 0) {
		if (ikey != NULL &&
		    s3_idx_get(&b->bk_idx, ikey, ikl, &rv, &rvl) == 0) {
			refd = rec_refs(rv, rvl, &id);
			free(rv);
		}
		if (!refd && pkey != NULL &&
		    s3_idx_get(&s3g.g_parts, pkey, pkl, &rv, &rvl) == 0) {
			refd = rec_refs(rv, rvl, &id);
			free(rv);
		}
		if (!refd) {
			if (obj_delete(&b->bk_cont, &id) != 0)
				return 0;
			(*freed)++;
		}
	}
	return s3_idx_del(&s3g.g_inflight, k, kl);
}

/* ------------------------------------------------------------- settle */

/*
 * Cluster mode: a dtx this gateway left in doubt (a change that ended with
 * an s3_tx_doubt() code, or one of an earlier run killed inside its commit)
 * can still commit.  Freeing an object it would reference, or rewriting a
 * key it changes, before it is decided could leave a record naming a freed
 * object or leak one.  One thread (settle_main) settles them: it calls
 * clovis_dtx_settle() (every dtx in doubt when the call started is decided
 * on every server), again with a growing pause while it fails (saying why
 * on stderr), then
 *   - marks every doubt mark taken before that call settled (the key
 *     stripes refused since a change ended in doubt serve again);
 *   - at the first success after a start, reclaims the in-flight records
 *     the earlier run left (the snapshot taken at start, before serving:
 *     records this run makes are not in it), and lets changes of keys run
 *     again (until then s3_settle_held() refuses every one: a dtx of the
 *     earlier run may have applied its in-flight DEL on one server while
 *     its record PUT is still undecided on another, so the in-flight
 *     records do not name every key it may still change).
 * Embedded mode has none of this: a dtx is one local commit, the walk runs
 * before serving.
 */
#define SETTLE_TRY_MS 3000u       /* one clovis_dtx_settle() */
#define SETTLE_PAUSE_MAX_S 8u     /* longest pause between tries */
#define SETTLE_LOG_EVERY_S 30u    /* a failing settle is logged this often */

struct settle_rec {
	void *sr_k, *sr_v;
	size_t sr_kl, sr_vl;
};

static struct {
	pthread_mutex_t s_lock;
	pthread_cond_t s_cond;
	pthread_t s_th;
	bool s_started, s_stop;
	uint64_t s_marked;        /* latest doubt mark */
	uint64_t s_settled;       /* marks up to this one are settled */
	bool s_recovering;        /* the start's snapshot not reclaimed yet */
	struct settle_rec *s_recs; /* that snapshot */
	size_t s_nr, s_cap;
} st = {.s_lock = PTHREAD_MUTEX_INITIALIZER,
	.s_cond = PTHREAD_COND_INITIALIZER};

uint64_t s3_settle_mark(void)
{
	uint64_t m;

	pthread_mutex_lock(&st.s_lock);
	m = ++st.s_marked;
	pthread_cond_broadcast(&st.s_cond);
	pthread_mutex_unlock(&st.s_lock);
	return m;
}

bool s3_settle_pending(uint64_t mark)
{
	uint64_t s = __atomic_load_n(&st.s_settled, __ATOMIC_ACQUIRE);

	return mark > s;
}

bool s3_settle_held(void)
{
	return __atomic_load_n(&st.s_recovering, __ATOMIC_ACQUIRE);
}

/* Keep in-flight record (k, v) of the earlier run for the reclamation. */
static int settle_keep(const void *k, size_t kl, const void *v, size_t vl)
{
	struct settle_rec *r;

	if (st.s_nr == st.s_cap) {
		size_t cap = st.s_cap ? st.s_cap * 2 : 64;

		r = realloc(st.s_recs, cap * sizeof *r);
		if (r == NULL)
			return -ENOMEM;
		st.s_recs = r;
		st.s_cap = cap;
	}
	r = &st.s_recs[st.s_nr];
	r->sr_k = malloc(kl);
	r->sr_v = malloc(vl ? vl : 1);
	if (r->sr_k == NULL || r->sr_v == NULL) {
		free(r->sr_k);
		free(r->sr_v);
		return -ENOMEM;
	}
	memcpy(r->sr_k, k, kl);
	memcpy(r->sr_v, v, vl);
	r->sr_kl = kl;
	r->sr_vl = vl;
	st.s_nr++;
	return 0;
}

static void settle_reclaim(void)
{
	uint64_t freed = 0;

	for (size_t i = 0; i < st.s_nr; i++) {
		recover_one(st.s_recs[i].sr_k, st.s_recs[i].sr_kl,
			    st.s_recs[i].sr_v, st.s_recs[i].sr_vl, &freed);
		free(st.s_recs[i].sr_k);
		free(st.s_recs[i].sr_v);
	}
	fprintf(stderr, "strata-s3: dtxs settled: %zu in-flight records of "
		"the earlier run settled, %lu interrupted upload objects "
		"reclaimed\n", st.s_nr, (unsigned long)freed);
	pthread_mutex_lock(&st.s_lock);
	free(st.s_recs);
	st.s_recs = NULL;
	st.s_nr = st.s_cap = 0;
	__atomic_store_n(&st.s_recovering, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&st.s_lock);
}

static void *settle_main(void *arg)
{
	uint32_t pause = 1, fails = 0;
	uint64_t t_log = 0;

	(void)arg;
	pthread_mutex_lock(&st.s_lock);
	while (!st.s_stop) {
		uint64_t target = st.s_marked;
		bool recovering = st.s_recovering;
		struct timespec ts;
		int rc;

		if (!recovering && st.s_settled >= target) {
			pthread_cond_wait(&st.s_cond, &st.s_lock);
			continue;
		}
		pthread_mutex_unlock(&st.s_lock);
		rc = clovis_dtx_settle(s3g.g_cl, 0, SETTLE_TRY_MS);
		if (rc == 0) {
			if (fails > 0)
				fprintf(stderr, "strata-s3: dtxs settled after "
					"%u tries\n", fails + 1);
			fails = 0;
			pause = 1;
			__atomic_store_n(&st.s_settled, target,
					 __ATOMIC_RELEASE);
			if (recovering)
				settle_reclaim();
			pthread_mutex_lock(&st.s_lock);
			continue;
		}
		if (fails++ == 0 || s3_now_ns() / 1000000000ull >=
				    t_log + SETTLE_LOG_EVERY_S) {
			t_log = s3_now_ns() / 1000000000ull;
			fprintf(stderr, "strata-s3: waiting for dtxs in doubt "
				"(%s): %s: %s\n", recovering ? "the earlier "
				"run's in-flight records and their keys wait"
				: "keys whose change ended in doubt wait",
				clovis_strerror(rc), clovis_errmsg());
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += pause;
		pause = pause * 2 > SETTLE_PAUSE_MAX_S ? SETTLE_PAUSE_MAX_S
						       : pause * 2;
		pthread_mutex_lock(&st.s_lock);
		if (!st.s_stop)
			pthread_cond_timedwait(&st.s_cond, &st.s_lock, &ts);
	}
	pthread_mutex_unlock(&st.s_lock);
	return NULL;
}

static int settle_start(void)
{
	int rc = pthread_create(&st.s_th, NULL, settle_main, NULL);

	if (rc != 0)
		return -rc;
	st.s_started = true;
	return 0;
}

static void settle_stop(void)
{
	if (!st.s_started)
		return;
	pthread_mutex_lock(&st.s_lock);
	st.s_stop = true;
	pthread_cond_broadcast(&st.s_cond);
	pthread_mutex_unlock(&st.s_lock);
	pthread_join(st.s_th, NULL);
	st.s_started = false;
	for (size_t i = 0; i < st.s_nr; i++) {
		free(st.s_recs[i].sr_k);
		free(st.s_recs[i].sr_v);
	}
	free(st.s_recs);
	st.s_recs = NULL;
	st.s_nr = st.s_cap = 0;
}

int s3_store_recover(uint64_t *freed, uint64_t *queued)
{
	uint8_t start[64];
	size_t sl = strlen(s3g.g_conf.sc_gw_id);
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	uint32_t nr, k, rounds = 0;
	bool cluster = s3g.g_conf.sc_cluster[0] != 0;
	int rc = 0;

	*freed = 0;
	*queued = 0;
	memcpy(start, s3g.g_conf.sc_gw_id, sl);
	start[sl++] = ':';
	do {
		bool more;

		nr = 64;
		rc = s3_idx_next(&s3g.g_inflight, start, sl, false, keys, kls,
				 vals, vls, &nr);
		if (rc != 0)
			break;
		more = nr == 64;
		for (k = 0; k < nr; k++) {
			if (kls[k] > 0 && kls[k] < sizeof start &&
			    memcmp(keys[k], s3g.g_conf.sc_gw_id,
				   strlen(s3g.g_conf.sc_gw_id)) == 0) {
				if (!cluster)
					recover_one(keys[k], kls[k], vals[k],
						    vls[k], freed);
				else if (rc == 0)
					rc = settle_keep(keys[k], kls[k],
							 vals[k], vls[k]);
				memcpy(start, keys[k], kls[k]);
				sl = kls[k];
			} else {
				more = false;
			}
			free(keys[k]);
			free(vals[k]);
		}
		if (nr > 0 && more) {
			/* continue after the last key: append a 0 byte */
			if (sl < sizeof start)
				start[sl++] = 0;
		}
		if (!more || rc != 0)
			break;
	} while (++rounds < 1000000);
	if (!cluster)
		return rc;
	*queued = st.s_nr;
	/* reclaimed after the settle, even when the walk failed part way
	 * (the rest waits for the next start) */
	st.s_recovering = true;
	if (settle_start() != 0) {
		/* no thread: settle here, before serving */
		while (clovis_dtx_settle(s3g.g_cl, 0, SETTLE_TRY_MS) != 0)
			fprintf(stderr, "strata-s3: waiting for dtxs in doubt "
				"before the reclamation: %s\n",
				clovis_errmsg());
		settle_reclaim();
	}
	return rc;
}

/* -------------------------------------------------------------- writer */

/*
 * Stream buffers: two sizes, S3_CHUNK (every write op of at most S3_CHUNK
 * bytes) and S3_BIG_CHUNK, mapped page-aligned (O_DIRECT takes them as
 * they are), the big ones on 2 MiB boundaries with MADV_HUGEPAGE (a fresh
 * 4 MiB buffer is then two page faults, not 1,024).  A buffer an upload
 * is done with goes on a LIFO list of its size (the most recently used
 * first: likely still in cache) while the lists hold at most
 * S3_WBUF_IDLE_MAX bytes; the next upload takes it from there.  Its
 * first word is the list link while it is idle.
 */
static struct {
	pthread_mutex_t wp_lock;
	void *wp_free[2];       /* S3_CHUNK, S3_BIG_CHUNK */
	uint64_t wp_idle;       /* bytes on the lists */
} wpool = {.wp_lock = PTHREAD_MUTEX_INITIALIZER};

static uint32_t wbuf_class(uint32_t chunk)
{
	return chunk <= S3_CHUNK ? 0 : 1;
}

static size_t wbuf_bytes(uint32_t cls)
{
	return cls == 0 ? S3_CHUNK : S3_BIG_CHUNK;
}

/* A fresh buffer of class cls, or NULL. */
static void *wbuf_map(uint32_t cls)
{
	size_t sz = wbuf_bytes(cls), al = cls == 0 ? 0 : 2u << 20;
	uint8_t *p, *a;

	p = mmap(NULL, sz + al, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (al == 0)
		return p;
	a = (uint8_t *)(((uintptr_t)p + al - 1) & ~(uintptr_t)(al - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + sz + al > a + sz)
		munmap(a + sz, (size_t)(p + sz + al - (a + sz)));
	madvise(a, sz, MADV_HUGEPAGE); /* a hint: no THP is no error */
	return a;
}

/* A stream buffer of at least chunk bytes (chunk <= S3_BIG_CHUNK). */
static void *wbuf_get(uint32_t chunk)
{
	uint32_t cls = wbuf_class(chunk);
	void *p;

	pthread_mutex_lock(&wpool.wp_lock);
	p = wpool.wp_free[cls];
	if (p != NULL) {
		memcpy(&wpool.wp_free[cls], p, sizeof(void *));
		wpool.wp_idle -= wbuf_bytes(cls);
	}
	pthread_mutex_unlock(&wpool.wp_lock);
	return p != NULL ? p : wbuf_map(cls);
}

/* Give back a buffer of wbuf_get(chunk) (NULL: nothing). */
static void wbuf_put(void *p, uint32_t chunk)
{
	uint32_t cls = wbuf_class(chunk);
	size_t sz = wbuf_bytes(cls);

	if (p == NULL)
		return;
	pthread_mutex_lock(&wpool.wp_lock);
	if (wpool.wp_idle + sz <= S3_WBUF_IDLE_MAX) {
		memcpy(p, &wpool.wp_free[cls], sizeof(void *));
		wpool.wp_free[cls] = p;
		wpool.wp_idle += sz;
		p = NULL;
	}
	pthread_mutex_unlock(&wpool.wp_lock);
	if (p != NULL)
		munmap(p, sz);
}

static void *wr_hash_main(void *arg)
{
	struct s3_wr *w = arg;

	pthread_mutex_lock(&w->w_hlock);
	for (;;) {
		uint64_t at, n;
		uint32_t i;

		while (w->w_hdone == w->w_hposted && !w->w_hstop)
			pthread_cond_wait(&w->w_hcond, &w->w_hlock);
		if (w->w_hdone == w->w_hposted)
			break;
		/* the stream bytes posted, up to the end of their buffer */
		at = w->w_hdone % w->w_chunk;
		n = w->w_hposted - w->w_hdone;
		if (n > w->w_chunk - at)
			n = w->w_chunk - at;
		i = (uint32_t)(w->w_hdone / w->w_chunk % S3_NBUF);
		pthread_mutex_unlock(&w->w_hlock);
		s3_sums_update(&w->w_sums, w->w_buf[i] + at, n);
		pthread_mutex_lock(&w->w_hlock);
		w->w_hdone += n;
		pthread_cond_broadcast(&w->w_hcond);
	}
	pthread_mutex_unlock(&w->w_hlock);
	return NULL;
}

/* Start the hashing thread; without it the receive thread hashes. */
static void wr_hash_start(struct s3_wr *w)
{
	pthread_mutex_init(&w->w_hlock, NULL);
	pthread_cond_init(&w->w_hcond, NULL);
	w->w_hasher = pthread_create(&w->w_hth, NULL, wr_hash_main, w) == 0;
	if (!w->w_hasher) {
		pthread_mutex_destroy(&w->w_hlock);
		pthread_cond_destroy(&w->w_hcond);
	}
}

/* Hand the stream bytes up to pos (in the buffers, in order) to the
 * hasher. */
static void wr_hash_post(struct s3_wr *w, uint64_t pos)
{
	pthread_mutex_lock(&w->w_hlock);
	w->w_hposted = pos;
	pthread_cond_broadcast(&w->w_hcond);
	pthread_mutex_unlock(&w->w_hlock);
	w->w_hmark = pos;
}

/* Wait until at most `left` posted bytes are still to be hashed. */
static void wr_hash_wait(struct s3_wr *w, uint64_t left)
{
	pthread_mutex_lock(&w->w_hlock);
	while (w->w_hposted - w->w_hdone > left)
		pthread_cond_wait(&w->w_hcond, &w->w_hlock);
	pthread_mutex_unlock(&w->w_hlock);
}

/* Hash what was posted, then end the thread. */
static void wr_hash_stop(struct s3_wr *w)
{
	if (!w->w_hasher)
		return;
	pthread_mutex_lock(&w->w_hlock);
	w->w_hstop = true;
	pthread_cond_broadcast(&w->w_hcond);
	pthread_mutex_unlock(&w->w_hlock);
	pthread_join(w->w_hth, NULL);
	pthread_mutex_destroy(&w->w_hlock);
	pthread_cond_destroy(&w->w_hcond);
	w->w_hasher = false;
}

/*
 * Ordered durability (embedded mode): one engine applies every update of
 * the store in one sequence of LMDB commits, each durable only with all
 * before it, and an update's data is durable before its commit (clovis.h,
 * "Durability order").  So an op launched after another op is EXECUTED
 * never survives a crash without it: the writer starts the data writes once
 * the in-flight record and the CREATE are EXECUTED, and the change that
 * records the object is launched once the writes are EXECUTED; each waits
 * for STABLE only before its buffers are reused or freed.  Cluster mode
 * gives no order across ops (other servers): every step waits for STABLE.
 */
static bool wr_ordered(void)
{
	return s3g.g_conf.sc_cluster[0] == 0;
}

/* The state a step waits for before the next one starts. */
static uint32_t wr_step_state(void)
{
	return wr_ordered() ? CLOVIS_OS_EXECUTED : CLOVIS_OS_STABLE;
}

/* Note the first failure of the writer (op's message, or msg). */
static void wr_fail(struct s3_wr *w, int rc, const char *msg)
{
	if (rc != 0 && w->w_rc == 0) {
		w->w_rc = rc;
		snprintf(w->w_msg, sizeof w->w_msg, "%s", msg);
	}
}

/* Free the write w holds (op i, made, never launched): no data written. */
static void wr_drop_held(struct s3_wr *w, uint32_t i)
{
	clovis_op_free(w->w_op[i]);
	w->w_op[i] = NULL;
	w->w_held = false;
}

/* Wait until write op i is STABLE (its buffer may be reused) and free it. */
static int wr_wait(struct s3_wr *w, uint32_t i)
{
	int rc;

	if (w->w_op[i] == NULL)
		return 0;
	if (w->w_held && clovis_op_state(w->w_op[i]) == CLOVIS_OS_INIT) {
		wr_drop_held(w, i); /* held for a change that did not run */
		return w->w_rc;
	}
	rc = clovis_op_wait(w->w_op[i], CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc != 0 && w->w_rc == 0 && w->w_committed)
		fprintf(stderr, "strata-s3: a write of a recorded object did "
			"not become durable: %s\n",
			clovis_op_errmsg(w->w_op[i]));
	wr_fail(w, rc, clovis_op_errmsg(w->w_op[i]));
	clovis_op_free(w->w_op[i]);
	w->w_op[i] = NULL;
	return w->w_rc;
}

/* Wait until write op i is applied (wr_step_state()); it stays in w_op. */
static int wr_wait_step(struct s3_wr *w, uint32_t i)
{
	int rc;

	if (w->w_op[i] == NULL || w->w_held)
		return w->w_rc;   /* a held write is applied with the change */
	rc = clovis_op_wait(w->w_op[i], wr_step_state(), CLOVIS_TIME_NEVER);
	wr_fail(w, rc, clovis_op_errmsg(w->w_op[i]));
	return w->w_rc;
}

/* Wait until the in-flight PUT and the CREATE are STABLE (or FAILED) and
 * free them with the record's value (ordered mode keeps them after
 * wr_created() until the object is done with). */
static void wr_cops_free(struct s3_wr *w)
{
	int k;

	for (k = 0; k < 2; k++) {
		if (w->w_cop[k] != NULL && clovis_op_wait(w->w_cop[k],
		    CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER) != 0 && w->w_obj)
			fprintf(stderr, "strata-s3: %s of a new object did not "
				"become durable: %s\n", k ? "the CREATE" :
				"the in-flight record",
				clovis_op_errmsg(w->w_cop[k]));
		clovis_op_free(w->w_cop[k]);
		w->w_cop[k] = NULL;
	}
	s3_buf_fini(&w->w_irec);
}

/*
 * Wait for the in-flight record PUT and the object CREATE launched by
 * wr_create(): applied (wr_step_state()) before any data is written, so the
 * record is durable before any data can be.  On failure, undo whichever of
 * the two succeeded.
 */
static int wr_created(struct s3_wr *w)
{
	int rc[2] = {0, 0}, k;

	if (w->w_cwaited)
		return w->w_rc;
	w->w_cwaited = true;
	for (k = 0; k < 2; k++) {
		if (w->w_cop[k] == NULL)
			continue;
		rc[k] = clovis_op_wait(w->w_cop[k], wr_step_state(),
				       CLOVIS_TIME_NEVER);
		if (rc[k] == 0 && k == 0)
			rc[k] = w->w_irc;
		wr_fail(w, rc[k], clovis_op_errmsg(w->w_cop[k]));
	}
	if (rc[0] != 0 || rc[1] != 0 || !wr_ordered())
		wr_cops_free(w);
	if (rc[1] != 0) {          /* no object: drop the record */
		w->w_obj = false;
		if (rc[0] == 0)
			s3_inflight_del(w->w_ikey);
	} else if (rc[0] != 0) {   /* an object nothing names: delete it */
		entity_sync(&w->w_o.ob_entity, CLOVIS_EO_DELETE);
		w->w_obj = false;
	}
	w->w_t[1] = s3_now_ns();
	return w->w_rc;
}

static int wr_submit(struct s3_wr *w, uint32_t i, size_t len)
{
	uint64_t bs = 1ull << w->w_bshift;
	size_t pad = (size_t)((len + bs - 1) & ~(bs - 1));
	bool hold;
	int rc;

	if (wr_created(w) != 0)
		return w->w_rc;
	memset(w->w_buf[i] + len, 0, pad - len);
	w->w_blk[i] = w->w_off >> w->w_bshift;
	w->w_nblk[i] = pad >> w->w_bshift;
	w->w_ev[i] = (struct clovis_extvec){1, &w->w_blk[i], &w->w_nblk[i]};
	w->w_bv[i] = w->w_buf[i];
	w->w_bl[i] = pad;
	w->w_bvec[i] = (struct clovis_bufvec){1, &w->w_bv[i], &w->w_bl[i]};
	/* the only write of the object: held for the change's dtx (the
	 * CREATE is EXECUTED: the dtx may write the object); the thread
	 * that launches it (tx_dtx(), this one) waits for the dtx next, so
	 * its data I/O runs there (CLOVIS_OF_HERE: no hand-off to a worker
	 * and back) */
	hold = w->w_hold && wr_ordered() && w->w_off == 0 &&
	       w->w_expect != UINT64_MAX && w->w_expect <= w->w_chunk;
	rc = clovis_obj_op(&w->w_o, CLOVIS_OC_WRITE, &w->w_ev[i], &w->w_bvec[i],
			   hold ? CLOVIS_OF_HERE : 0, &w->w_op[i]);
	if (rc == 0 && hold)
		w->w_held = true;
	else if (rc == 0)
		rc = clovis_op_launch(&w->w_op[i], 1);
	if (rc != 0) {
		clovis_op_free(w->w_op[i]);
		w->w_op[i] = NULL;
		w->w_rc = rc;
		snprintf(w->w_msg, sizeof w->w_msg, "%s", clovis_errmsg());
	}
	w->w_off += w->w_chunk;
	return rc;
}

/*
 * Bytes per write op for an object of `expect` bytes (UINT64_MAX:
 * unknown): S3_BIG_CHUNK for big objects (fewer commits per byte),
 * S3_CHUNK by default and for an object of at most S3_CHUNK (one op: four
 * ops of a quarter cost ~36 more syscalls, 25 of them futex, and a third
 * more gateway CPU per 1 MiB PUT than one, docs/performance.md "one write
 * op per 1 MiB object"), and for an object between S3_CHUNK and
 * S3_NBUF * S3_CHUNK a quarter of it (a multiple of 64 KiB): its first
 * write is launched after a quarter of the body has arrived, not after
 * all of it, and its writes run S3_NBUF in parallel.
 */
static uint32_t wr_chunk(uint64_t expect)
{
	uint64_t c;

	if (expect == UINT64_MAX || expect <= S3_CHUNK)
		return S3_CHUNK;
	if (expect >= S3_BIG)
		return S3_BIG_CHUNK;
	c = (expect / S3_NBUF + 0xffff) & ~(uint64_t)0xffff;
	return c > S3_CHUNK ? S3_CHUNK : (uint32_t)c; /* > 256 KiB here */
}

/*
 * Create the object and its in-flight record: both ops are launched
 * together (one group commit instead of two in series) and waited for in
 * wr_created(), before the first write, so that the first buffer of the
 * body is received meanwhile.  The record names the object before the
 * object can hold data: a crash after the CREATE committed and before the
 * record did can leave only an empty object (no space).
 */
static int wr_create(struct s3_wr *w)
{
	struct clovis_obj_attr a = {0};
	struct clovis_id id;
	uint8_t raw[16];
	int rc;

	w->w_bshift = w->w_expect != UINT64_MAX && w->w_expect < (1u << 20)
			      ? 12 : 16;
	w->w_chunk = wr_chunk(w->w_expect);
	a.oa_block_shift = w->w_bshift;
	a.oa_layout = w->w_bk->bk_layout;
	a.oa_tier = CLOVIS_TIER_FLASH;
	s3_rand_id(&id);
	w->w_ikl = inflight_key(&id, w->w_ikey);
	put_id(raw, &w->w_bk->bk_cont.co_entity.en_id);
	s3_tlv_add(&w->w_irec, T_CONT, raw, 16);
	s3_tlv_add(&w->w_irec, T_BUCKET, w->w_bk->bk_name,
		   (uint32_t)strlen(w->w_bk->bk_name));
	if (w->w_rk != NULL)
		s3_tlv_add(&w->w_irec, T_KEY, w->w_rk, (uint32_t)w->w_rkl);
	if (w->w_pk != NULL)
		s3_tlv_add(&w->w_irec, T_UPLOAD, w->w_pk, (uint32_t)w->w_pkl);
	rc = w->w_irec.b_oom ? -ENOMEM : 0;
	w->w_ikp = w->w_ikey;
	w->w_ivp = w->w_irec.b_data;
	w->w_ivl = w->w_irec.b_len;
	w->w_ikv = (struct clovis_bufvec){1, &w->w_ikp, &w->w_ikl};
	w->w_ivv = (struct clovis_bufvec){1, &w->w_ivp, &w->w_ivl};
	if (rc == 0)
		rc = clovis_idx_op(&s3g.g_inflight, CLOVIS_IC_PUT, &w->w_ikv,
				   &w->w_ivv, &w->w_irc, CLOVIS_IF_OVERWRITE,
				   &w->w_cop[0]);
	if (rc == 0)
		rc = clovis_obj_init(&w->w_o, &w->w_bk->bk_cont.co_realm, &id,
				     &a);
	if (rc == 0)
		rc = clovis_entity_op(&w->w_o.ob_entity, CLOVIS_EO_CREATE,
				      &w->w_cop[1]);
	if (rc == 0)
		rc = clovis_op_launch(w->w_cop, 2);
	if (rc != 0) {
		int k;

		snprintf(w->w_msg, sizeof w->w_msg, "%s", clovis_errmsg());
		for (k = 0; k < 2; k++) { /* launched ones run to the end */
			if (w->w_cop[k] != NULL &&
			    clovis_op_state(w->w_cop[k]) != CLOVIS_OS_INIT)
				clovis_op_wait(w->w_cop[k], CLOVIS_OS_STABLE,
					       CLOVIS_TIME_NEVER);
			clovis_op_free(w->w_cop[k]);
			w->w_cop[k] = NULL;
		}
		s3_buf_fini(&w->w_irec);
		obj_delete(&w->w_bk->bk_cont, &id);
		s3_inflight_del(w->w_ikey);
		return w->w_rc = rc;
	}
	w->w_obj = true;
	w->w_inline = false;
	/* an object of S3_CHUNK or more whose sums include MD5: the sums on
	 * a thread of its own, overlapped with the receive and the writes
	 * (smaller ones, bodies of unknown size, and sums of CRCs only, at
	 * several GiB/s on one core, are computed by the receive thread: a
	 * thread and its hand-offs cost more than they save then) */
	if (w->w_len == 0 && w->w_expect != UINT64_MAX &&
	    w->w_expect >= S3_CHUNK && (w->w_sums.s_algs & S3_SUM_MD5))
		wr_hash_start(w);
	return 0;
}

int s3_wr_begin(struct s3_wr *w, struct s3_bucket *b, uint64_t expect,
		uint32_t algs, const uint8_t *ikey, size_t ikl,
		const uint8_t *pkey, size_t pkl)
{
	memset(w, 0, sizeof *w);
	w->w_t[0] = s3_now_ns();
	w->w_bk = b;
	w->w_rk = ikey;
	w->w_rkl = ikl;
	w->w_pk = pkey;
	w->w_pkl = pkl;
	w->w_expect = expect;
	w->w_chunk = S3_CHUNK;
	if (s3_sums_init(&w->w_sums, algs) != 0)
		return -ENOMEM;
	w->w_inline = true;
	if (pkey != NULL ||
	    (expect != UINT64_MAX && expect > s3g.g_conf.sc_inline_max))
		return wr_create(w); /* parts are always objects */
	return 0;
}

static int wr_stream(struct s3_wr *w, const char *p, size_t n)
{
	while (n > 0 && w->w_rc == 0) {
		size_t c;

		if (w->w_buf[w->w_cur] == NULL &&
		    (w->w_buf[w->w_cur] = wbuf_get(w->w_chunk)) == NULL)
			return w->w_rc = -ENOMEM;
		c = w->w_chunk - w->w_fill;
		if (c > n)
			c = n;
		memcpy(w->w_buf[w->w_cur] + w->w_fill, p, c);
		w->w_fill += c;
		w->w_spos += c;
		p += c;
		n -= c;
		/* the hasher follows the receive within S3_HASH_STEP */
		if (w->w_hasher && (w->w_fill == w->w_chunk ||
				    w->w_spos - w->w_hmark >= S3_HASH_STEP))
			wr_hash_post(w, w->w_spos);
		if (w->w_fill == w->w_chunk) {
			if (wr_submit(w, w->w_cur, w->w_chunk) != 0)
				break;
			w->w_cur = (w->w_cur + 1) % S3_NBUF;
			w->w_fill = 0;
			if (w->w_hasher) /* buffer w_cur hashed */
				wr_hash_wait(w, (uint64_t)(S3_NBUF - 1) *
						w->w_chunk);
			wr_wait(w, w->w_cur);
		}
	}
	return w->w_rc;
}

int s3_wr_data(struct s3_wr *w, const void *p, size_t n)
{
	if (w->w_rc != 0)
		return w->w_rc;
	w->w_len += n;
	if (!w->w_hasher)
		s3_sums_update(&w->w_sums, p, n);
	if (w->w_inline) {
		if (w->w_len <= s3g.g_conf.sc_inline_max) {
			s3_buf_add(&w->w_ibuf, p, n);
			return w->w_ibuf.b_oom ? (w->w_rc = -ENOMEM) : 0;
		}
		if (wr_create(w) != 0)
			return w->w_rc;
		if (wr_stream(w, w->w_ibuf.b_data ? w->w_ibuf.b_data : "",
			      w->w_ibuf.b_len) != 0)
			return w->w_rc;
		s3_buf_fini(&w->w_ibuf);
	}
	return wr_stream(w, p, n);
}

int s3_wr_finish(struct s3_wr *w)
{
	uint32_t i;

	w->w_t[2] = s3_now_ns();
	if (!w->w_inline && w->w_rc == 0 && w->w_fill > 0)
		wr_submit(w, w->w_cur, w->w_fill);
	if (w->w_hasher && w->w_rc == 0)
		wr_hash_post(w, w->w_spos);
	wr_hash_stop(w);
	wr_created(w);
	/* a failed writer, or a body not of the announced length (the PUT is
	 * refused, IncompleteBody): the held write is dropped unlaunched */
	if (w->w_held && (w->w_rc != 0 || w->w_len != w->w_expect))
		wr_drop_held(w, 0);
	for (i = 0; i < S3_NBUF; i++)
		wr_wait_step(w, i);
	w->w_t[3] = s3_now_ns();
	s3_sums_final(&w->w_sums);
	return w->w_rc;
}

static void wr_release(struct s3_wr *w)
{
	uint32_t i;

	wr_hash_stop(w);
	wr_created(w);
	for (i = 0; i < S3_NBUF; i++) {
		wr_wait(w, i);
		wbuf_put(w->w_buf[i], w->w_chunk);
		w->w_buf[i] = NULL;
	}
	wr_cops_free(w);
	s3_buf_fini(&w->w_ibuf);
	s3_sums_fini(&w->w_sums);
}

void s3_wr_abort(struct s3_wr *w)
{
	if (w->w_bk == NULL)
		return;
	wr_release(w);
	if (w->w_obj && !w->w_committed &&
	    obj_delete(&w->w_bk->bk_cont, &w->w_o.ob_entity.en_id) == 0)
		s3_inflight_del(w->w_ikey);
	w->w_bk = NULL;
}

/* The record naming the object is durable: its in-flight record went
 * with it, or goes after the reply (janitor). */
void s3_wr_done(struct s3_wr *w, bool ifl_gone)
{
	w->w_committed = true;
	if (w->w_obj && !ifl_gone)
		s3_inflight_del_later(w->w_ikey);
	wr_release(w);
	w->w_bk = NULL;
}

/* Outcome unknown: the object may be referenced; its in-flight record
 * (gone if the change committed) leaves it to the restart rule. */
void s3_wr_keep(struct s3_wr *w)
{
	w->w_committed = true;
	wr_release(w);
	w->w_bk = NULL;
}

/* -------------------------------------------------------------- reader */

int s3_rd_open(struct s3_rd *r, struct s3_bucket *b, void *rec, size_t len)
{
	int rc;

	memset(r, 0, sizeof *r);
	r->r_bk = b;
	r->r_rec = rec;
	r->r_rec_len = len;
	r->r_part = -1;
	rc = s3_orec_decode(rec, len, &r->r_or);
	r->r_end = r->r_or.or_size;
	r->r_chunk = r->r_or.or_size >= S3_BIG ? S3_BIG_CHUNK : S3_CHUNK;
	return rc;
}

/* The segment of the object holding byte off: id, start, size. */
static int rd_segment(struct s3_rd *r, uint64_t off, int *part,
		      struct clovis_id *id, uint64_t *sstart, uint64_t *ssize)
{
	uint64_t s = 0;
	uint32_t k;

	if (r->r_or.or_has_id) {
		*part = 0;
		*id = r->r_or.or_id;
		*sstart = 0;
		*ssize = r->r_or.or_size;
		return 0;
	}
	for (k = 0; k < r->r_or.or_nparts; k++) {
		uint64_t sz = s3_u64(r->r_or.or_parts + S3_PART_STRIDE * k + 16);

		if (off < s + sz) {
			*part = (int)k;
			get_id(r->r_or.or_parts + S3_PART_STRIDE * k, id);
			*sstart = s;
			*ssize = sz;
			return 0;
		}
		s += sz;
	}
	return -EINVAL;
}

/*
 * Make (not launch) a READ of the chunk holding object byte off into buf:
 * the op's vectors in *blk.. *bvec (kept by the caller while it runs);
 * *start and *len: the object bytes it will hold.  Opens the segment's
 * object when it is not the open one, unless same_part (read-ahead stays
 * in the open object: -EAGAIN).
 */
static int rd_make(struct s3_rd *r, uint64_t off, char *buf, bool same_part,
		   uint64_t *blk, uint64_t *nblk, void **bv, size_t *bl,
		   struct clovis_extvec *ev, struct clovis_bufvec *bvec,
		   uint64_t *start, uint64_t *len, struct clovis_op **op)
{
	struct clovis_id id;
	uint64_t ss, sz, rel, bs;
	int part, rc = rd_segment(r, off, &part, &id, &ss, &sz);

	if (rc != 0)
		return rc;
	if (r->r_part != part) {
		if (same_part)
			return -EAGAIN;
		rc = clovis_obj_init(&r->r_o, &r->r_bk->bk_cont.co_realm, &id,
				     NULL);
		if (rc == 0)
			rc = entity_sync(&r->r_o.ob_entity, CLOVIS_EO_OPEN);
		if (rc != 0)
			return rc;
		r->r_part = part;
	}
	bs = 1ull << r->r_o.ob_attr.oa_block_shift;
	if (bs > r->r_chunk)
		return -EINVAL;
	rel = (off - ss) / r->r_chunk * r->r_chunk;
	*len = sz - rel < r->r_chunk ? sz - rel : r->r_chunk;
	*blk = rel / bs;
	*nblk = (*len + bs - 1) / bs;
	*bv = buf;
	*bl = *nblk * bs;
	*ev = (struct clovis_extvec){1, blk, nblk};
	*bvec = (struct clovis_bufvec){1, bv, bl};
	*start = ss + rel;
	return clovis_obj_op(&r->r_o, CLOVIS_OC_READ, ev, bvec, 0, op);
}

int s3_rd_first(struct s3_rd *r, uint64_t off)
{
	struct clovis_id id;
	uint64_t ss, sz;
	int part, rc;

	if ((!r->r_or.or_has_id && r->r_or.or_nparts == 0) ||
	    off >= r->r_or.or_size || r->r_part >= 0)
		return 0;
	rc = rd_segment(r, off, &part, &id, &ss, &sz);
	if (rc == 0)
		rc = clovis_obj_init(&r->r_o, &r->r_bk->bk_cont.co_realm, &id,
				     NULL);
	if (rc == 0)
		rc = entity_sync(&r->r_o.ob_entity, CLOVIS_EO_OPEN);
	if (rc == 0)
		r->r_part = part;
	return rc;
}

static int rd_alloc(struct s3_rd *r, char **buf)
{
	if (*buf == NULL &&
	    posix_memalign((void **)buf, 4096, r->r_chunk) != 0) {
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Wait for the read-ahead; 0 when it holds its bytes, -ENOENT: none. */
static int rd_ahead_wait(struct s3_rd *r)
{
	int rc;

	if (r->r_pop == NULL)
		return -ENOENT;
	rc = clovis_op_wait(r->r_pop, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	clovis_op_free(r->r_pop);
	r->r_pop = NULL;
	return rc;
}

/* Start reading the chunk after r_buf's when the range goes on in the
 * same object; errors are left to the synchronous read that follows. */
static void rd_ahead(struct s3_rd *r)
{
	uint64_t next = r->r_bstart + r->r_blen;

	if (r->r_pop != NULL || next >= r->r_end || r->r_blen < r->r_chunk ||
	    rd_alloc(r, &r->r_pbuf) != 0)
		return;
	if (rd_make(r, next, r->r_pbuf, true, &r->r_pblk, &r->r_pnblk,
		    &r->r_pbv, &r->r_pbl, &r->r_pev, &r->r_pbvec, &r->r_pstart,
		    &r->r_plen, &r->r_pop) != 0 ||
	    clovis_op_launch(&r->r_pop, 1) != 0) {
		clovis_op_free(r->r_pop);
		r->r_pop = NULL;
	}
}

/* Make r_buf hold the chunk of byte off: the read-ahead when it is that
 * chunk, else a synchronous read. */
static int rd_load(struct s3_rd *r, uint64_t off)
{
	uint64_t blk, nblk, start, len;
	struct clovis_extvec ev;
	struct clovis_bufvec bvec;
	struct clovis_op *op = NULL;
	void *bv;
	size_t bl;
	bool hit = r->r_pop != NULL && off >= r->r_pstart &&
		   off < r->r_pstart + r->r_plen;
	int rc = rd_ahead_wait(r);

	if (hit && rc == 0) {
		char *t = r->r_buf;

		r->r_buf = r->r_pbuf;
		r->r_pbuf = t;
		r->r_bstart = r->r_pstart;
		r->r_blen = r->r_plen;
		return 0;
	}
	rc = rd_alloc(r, &r->r_buf);
	if (rc == 0)
		rc = rd_make(r, off, r->r_buf, false, &blk, &nblk, &bv, &bl,
			     &ev, &bvec, &start, &len, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return rc;
	r->r_bstart = start;
	r->r_blen = len;
	return 0;
}

/*
 * A range that one read op holds (an object of one segment, the range
 * inside one chunk: a GET of an object up to S3_CHUNK): read it into r_buf
 * and point *p at its first byte, so that the reply is sent from the read
 * buffer (no copy into libmicrohttpd's, header and body in one writev).
 * -EAGAIN: the range needs several reads and is streamed (s3_rd_read()).
 */
int s3_rd_span(struct s3_rd *r, uint64_t off, uint64_t n, const char **p)
{
	int rc;

	if (r->r_or.or_is_inline || !r->r_or.or_has_id || n == 0 ||
	    off + n > r->r_or.or_size ||
	    off / r->r_chunk != (off + n - 1) / r->r_chunk)
		return -EAGAIN;
	rc = rd_load(r, off);
	if (rc != 0)
		return rc;
	*p = r->r_buf + (off - r->r_bstart);
	return 0;
}

long s3_rd_read(struct s3_rd *r, uint64_t off, char *out, size_t n)
{
	uint64_t avail;
	int rc;

	if (off >= r->r_or.or_size)
		return 0;
	if (n > r->r_or.or_size - off)
		n = (size_t)(r->r_or.or_size - off);
	if (r->r_or.or_is_inline) {
		memcpy(out, r->r_or.or_inline + off, n);
		return (long)n;
	}
	if (r->r_buf == NULL || off < r->r_bstart ||
	    off >= r->r_bstart + r->r_blen) {
		rc = rd_load(r, off);
		if (rc != 0)
			return rc;
		rd_ahead(r);
	}
	avail = r->r_bstart + r->r_blen - off;
	if (n > avail)
		n = (size_t)avail;
	memcpy(out, r->r_buf + (off - r->r_bstart), n);
	return (long)n;
}

void s3_rd_close(struct s3_rd *r)
{
	rd_ahead_wait(r);
	free(r->r_pbuf);
	r->r_pbuf = NULL;
	free(r->r_buf);
	free(r->r_rec);
	r->r_buf = NULL;
	r->r_rec = NULL;
}
