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
 * The store's other files: s3_store_tx.c (atomic changes, recovery, the
 * settle thread) and s3_store_io.c (the object writer and reader); what
 * the three share is declared in s3_store_internal.h.  Here: the index
 * helpers, ids, opening and closing the store, bucket records, the
 * janitor thread and the in-flight records.
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
#include "gateways/s3/s3_store_internal.h"
#include "gateways/s3/s3_view.h"

struct s3_gw s3g;

static void jan_start(void);
static void jan_stop(void);

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

void s3_put_id(uint8_t *p, const struct clovis_id *id)
{
	int i;

	for (i = 0; i < 8; i++) {
		p[i] = (uint8_t)(id->ci_hi >> (8 * i));
		p[8 + i] = (uint8_t)(id->ci_lo >> (8 * i));
	}
}

void s3_get_id(const uint8_t *p, struct clovis_id *id)
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
	s3_settle_stop();
	s3_views_close();
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
			s3_get_id(val, &cid);
		else if (tag == T_IDX && n == 16)
			s3_get_id(val, &iid);
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

	b = s3_view_bucket(name); /* a view bucket: no record (s3_view.h) */
	if (b != NULL) {
		*out = b;
		return 0;
	}
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

int s3_entity_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
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
		rc = s3_entity_sync(&c.co_entity, CLOVIS_EO_CREATE);
	if (rc != 0)
		goto out;
	rc = clovis_idx_init(&i, &c.co_realm, &iid);
	if (rc == 0)
		rc = s3_entity_sync(&i.in_entity, CLOVIS_EO_CREATE);
	if (rc != 0)
		goto out_cont;
	s3_tlv_add(&rec, T_OWNER, owner, (uint32_t)strlen(owner));
	s3_put_id(raw, &cid);
	s3_tlv_add(&rec, T_CONT, raw, 16);
	s3_put_id(raw, &iid);
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
	s3_entity_sync(&i.in_entity, CLOVIS_EO_DELETE);
out_cont:
	s3_entity_sync(&c.co_entity, CLOVIS_EO_DELETE);
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
	rc = s3_entity_sync(&b->bk_idx.in_entity, CLOVIS_EO_DELETE);
	if (rc == 0)
		rc = s3_entity_sync(&b->bk_cont.co_entity, CLOVIS_EO_DELETE);
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
void s3_jan_add(struct s3_bucket *b, const struct clovis_id *id,
		bool obj)
{
	struct jan_job *j = calloc(1, sizeof *j);

	if (j == NULL) {
		uint8_t rkey[64];

		/* left to the next start's recovery */
		s3_inflight_key(id, rkey);
		fprintf(stderr, "strata-s3: out of memory: an in-flight record "
			"is left to the next start\n");
		return;
	}
	j->j_bk = b;
	j->j_obj = obj;
	j->j_id = *id;
	s3_inflight_key(id, j->j_rkey);
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

size_t s3_inflight_key(const struct clovis_id *id, uint8_t *out)
{
	size_t n = strlen(s3g.g_conf.sc_gw_id);

	memcpy(out, s3g.g_conf.sc_gw_id, n);
	out[n] = ':';
	s3_put_id(out + n + 1, id);
	return n + 17;
}

int s3_inflight_put(struct s3_bucket *b, const struct clovis_id *id,
		    const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
		    size_t pkl, uint8_t *rkey)
{
	struct s3_buf rec = {0};
	uint8_t raw[16];
	size_t kl = s3_inflight_key(id, rkey);
	int rc;

	s3_put_id(raw, &b->bk_cont.co_entity.en_id);
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

int s3_obj_delete(struct clovis_container *c, const struct clovis_id *id)
{
	struct clovis_obj o;
	int rc = clovis_obj_init(&o, &c->co_realm, id, NULL);

	if (rc == 0)
		rc = s3_entity_sync(&o.ob_entity, CLOVIS_EO_DELETE);
	return rc == -ENOENT ? 0 : rc;
}

/* The ids of the objects record r holds. */
uint32_t s3_orec_ids(const struct s3_orec *r, uint32_t k,
		     struct clovis_id *id)
{
	uint32_t n = (r->or_has_id ? 1 : 0) + r->or_nparts;

	if (k >= n)
		return n;
	if (r->or_has_id && k == 0)
		*id = r->or_id;
	else
		s3_get_id(r->or_parts + S3_PART_STRIDE * (k - (r->or_has_id ? 1 : 0)), id);
	return n;
}

int s3_orec_hold(struct s3_bucket *b, const struct s3_orec *r,
		 const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
		 size_t pkl)
{
	struct clovis_id id;
	uint8_t rkey[64];
	uint32_t k, n = s3_orec_ids(r, UINT32_MAX, &id);
	int rc = 0;

	for (k = 0; k < n && rc == 0; k++) {
		s3_orec_ids(r, k, &id);
		rc = s3_inflight_put(b, &id, ikey, ikl, pkey, pkl, rkey);
	}
	return rc;
}

void s3_orec_unhold(const struct s3_orec *r)
{
	struct clovis_id id;
	uint8_t rkey[64];
	uint32_t k, n = s3_orec_ids(r, UINT32_MAX, &id);

	for (k = 0; k < n; k++) {
		s3_orec_ids(r, k, &id);
		s3_inflight_key(&id, rkey);
		s3_inflight_del(rkey);
	}
}

void s3_orec_free(struct s3_bucket *b, const struct s3_orec *r)
{
	struct clovis_id id;
	uint32_t k, n = s3_orec_ids(r, UINT32_MAX, &id);

	for (k = 0; k < n; k++) {
		s3_orec_ids(r, k, &id);
		s3_jan_add(b, &id, true);
	}
}

void s3_inflight_del_later(const uint8_t *rkey)
{
	size_t gl = strlen(s3g.g_conf.sc_gw_id);
	struct clovis_id id;

	s3_get_id(rkey + gl + 1, &id);
	s3_jan_add(NULL, &id, false);
}
