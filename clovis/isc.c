/*
 * isc.c — function shipping through the Clovis API (clovis.h, "function
 * shipping"; docs/isc.md).
 *
 * The registry.  Functions are records of an index at the reserved id
 * CLOVIS_ISC_REGISTRY of the default container (made at the first
 * registration), replicated as every index is in a cluster:
 *     "f:" DIGEST (32 bytes) -> kind (1 byte), code
 *     "n:" NAME              -> kind (1 byte), DIGEST
 * A call looks the name up here and sends the code with its digest; each
 * server checks the digest of what it runs (core/isc/isc_fn.c), so every
 * server runs exactly the registered code.
 *
 * A call.  Embedded mode runs core/isc/isc_eng.c on the store in the
 * calling thread; cluster mode sends one SOP_ISC per object (to the server
 * serving its home) or index (its first replica that answers): the home
 * ships the units of its object to the servers that hold them
 * (core/server/srv_isc.c).  A container call runs its members
 * ISC_MEMBERS_PAR at a time and prefixes each member's records with its
 * id.  The client merges what came back and finishes it (MEAN, Lua
 * reduce()).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/clovis.h"
#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "core/isc/isc.h"
#include "core/isc/isc_eng.h"
#include "core/log.h"
#include "core/server/msg.h"

/* Members of a container mapped at once. */
#define ISC_MEMBERS_PAR 4u
/* Member ids listed per clovis_entity_list() call. */
#define ISC_LIST_PAGE 256u

_Static_assert(CLOVIS_ISC_DIGEST_LEN == ISC_DIGEST_LEN, "digest length");
_Static_assert(CLOVIS_ISC_NAME_MAX == ISC_NAME_MAX, "name length");
_Static_assert(CLOVIS_ISC_CODE_MAX == ISC_CODE_MAX, "code length");
_Static_assert(CLOVIS_ISC_ARGS_MAX == ISC_ARGS_MAX, "args length");
_Static_assert((int)CLOVIS_ISC_V_HIST == (int)ISC_V_HIST &&
	       (int)CLOVIS_ISC_V_MATCH == (int)ISC_V_MATCH &&
	       (int)CLOVIS_ISC_V_ISUM == (int)ISC_V_ISUM, "record types");

/* ------------------------------------------------------- native list */

int isc_native_list(const char *s, char ***out)
{
	char **l;
	size_t n = 1, i = 0;
	const char *p;

	*out = NULL;
	if (s == NULL || s[0] == '\0')
		return 0;
	for (p = s; *p; p++)
		n += *p == ':';
	l = calloc(n + 1, sizeof *l);
	if (l == NULL)
		return err_set(-ENOMEM, "clovis_init: cc_isc_native");
	for (p = s; ; ) {
		const char *e = strchr(p, ':');
		size_t len = e != NULL ? (size_t)(e - p) : strlen(p);

		if (len > 0) {
			if (p[0] != '/') {
				isc_native_list_free(l);
				return err_set(-EINVAL, "clovis_init: "
					       "cc_isc_native: \"%.*s\" is not "
					       "an absolute path", (int)len, p);
			}
			l[i] = strndup(p, len);
			if (l[i++] == NULL) {
				isc_native_list_free(l);
				return err_set(-ENOMEM, "cc_isc_native");
			}
		}
		if (e == NULL)
			break;
		p = e + 1;
	}
	*out = l;
	return 0;
}

void isc_native_list_free(char **l)
{
	if (l == NULL)
		return;
	for (char **p = l; *p != NULL; p++)
		free(*p);
	free(l);
}

/* ------------------------------------------------------------ registry */

static int isc_name_check(const char *name)
{
	size_t n;

	if (name == NULL)
		return err_set(-EINVAL, "function name is NULL");
	n = strlen(name);
	if (n == 0 || n > ISC_NAME_MAX)
		return err_set(-EINVAL, "function name \"%.40s\": 1..%u bytes",
			       name, ISC_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_' &&
		    name[i] != '.' && name[i] != '-')
			return err_set(-EINVAL, "function name \"%s\": only "
				       "letters, digits, '_', '.', '-'", name);
	return 0;
}

/* Open the registry index (create it first when create): 0 or -ENOENT. */
static int reg_open(struct clovis *cl, struct clovis_idx *ix, bool create)
{
	struct clovis_id id = CLOVIS_ISC_REGISTRY;
	struct clovis_op *op = NULL;
	int rc;

	idx_init_sys(ix, cl, &id);
	rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != -ENOENT || !create)
		return rc == -ENOENT ?
		       err_set(-ENOENT, "no function registered (no registry "
			       "index)") : rc;
	op = NULL;
	idx_init_sys(ix, cl, &id);
	rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0 && rc != -EEXIST)
		return rc;
	op = NULL;
	idx_init_sys(ix, cl, &id);
	rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc;
}

/* GET one record: 0 and *val (malloc'd), -ENOENT, or a code. */
static int reg_get(struct clovis_idx *ix, const void *k, size_t kl,
		   void **val, size_t *vl)
{
	void *kb[1] = {(void *)k}, *vb[1] = {NULL};
	size_t kls[1] = {kl}, vls[1] = {0};
	struct clovis_bufvec keys = {1, kb, kls}, vals = {1, vb, vls};
	struct clovis_op *op = NULL;
	int32_t rcs[1] = {0};
	int rc = clovis_idx_op(ix, CLOVIS_IC_GET, &keys, &vals, rcs, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = rcs[0];
	if (rc != 0) {
		free(vb[0]);
		return rc;
	}
	*val = vb[0];
	*vl = vls[0];
	return 0;
}

static int reg_put(struct clovis_idx *ix, const void *k, size_t kl,
		   const void *v, size_t vl)
{
	void *kb[1] = {(void *)k}, *vb[1] = {(void *)v};
	size_t kls[1] = {kl}, vls[1] = {vl};
	struct clovis_bufvec keys = {1, kb, kls}, vals = {1, vb, vls};
	struct clovis_op *op = NULL;
	int32_t rcs[1] = {0};
	int rc = clovis_idx_op(ix, CLOVIS_IC_PUT, &keys, &vals, rcs,
			       CLOVIS_IF_OVERWRITE, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc != 0 ? rc : rcs[0];
}

int clovis_isc_register(struct clovis *cl, const char *name,
			enum clovis_isc_kind kind, const void *code,
			size_t len, uint8_t digest[CLOVIS_ISC_DIGEST_LEN])
{
	struct isc_fn_desc d = {0};
	struct clovis_idx ix;
	uint8_t *fv, nv[1 + ISC_DIGEST_LEN];
	char nk[2 + ISC_NAME_MAX + 1];
	uint8_t fk[2 + ISC_DIGEST_LEN];
	int rc;

	if (cl == NULL)
		return err_set(-EINVAL, "isc_register: NULL client");
	rc = isc_name_check(name);
	if (rc != 0)
		return rc;
	if (kind < CLOVIS_ISC_DECL || kind > CLOVIS_ISC_NATIVE)
		return err_set(-EINVAL, "function %s: kind %d unknown (1 "
			       "declarative, 2 Lua, 3 native)", name,
			       (int)kind);
	if (code == NULL || len == 0 || len > ISC_CODE_MAX)
		return err_set(-EINVAL, "function %s: code of %zu bytes (1..%u)",
			       name, code == NULL ? 0 : len, ISC_CODE_MAX);
	if (kind == CLOVIS_ISC_NATIVE &&
	    (memchr(code, '\0', len) != NULL || ((const char *)code)[0] != '/'))
		return err_set(-EINVAL, "function %s: a native function's code "
			       "is the absolute path of its shared object",
			       name);
	d.fd_kind = (enum isc_kind)kind;
	d.fd_name = name;
	d.fd_code = code;
	d.fd_code_len = len;
	rc = isc_digest(&d);
	if (rc != 0)
		return rc;
	if (kind != CLOVIS_ISC_NATIVE) {
		struct isc_fn *f = NULL;
		struct isc_limits lim = {0};

		/* syntax checked here, once, before it is stored */
		rc = isc_fn_compile(&f, &d, ISC_T_OBJ, &lim);
		if (rc == -ENOTSUP)
			rc = isc_fn_compile(&f, &d, ISC_T_IDX, &lim);
		if (rc != 0)
			return rc;
		isc_fn_free(f);
	}
	rc = reg_open(cl, &ix, true);
	if (rc != 0)
		return err_set(rc, "function %s: registry: %s", name,
			       err_msg());
	fv = malloc(1 + len);
	if (fv == NULL)
		return err_set(-ENOMEM, "function %s", name);
	fv[0] = (uint8_t)kind;
	memcpy(fv + 1, code, len);
	memcpy(fk, "f:", 2);
	memcpy(fk + 2, d.fd_digest, ISC_DIGEST_LEN);
	rc = reg_put(&ix, fk, sizeof fk, fv, 1 + len);
	free(fv);
	if (rc == 0) {
		nv[0] = (uint8_t)kind;
		memcpy(nv + 1, d.fd_digest, ISC_DIGEST_LEN);
		snprintf(nk, sizeof nk, "n:%s", name);
		rc = reg_put(&ix, nk, strlen(nk), nv, sizeof nv);
	}
	if (rc != 0)
		return err_set(rc, "function %s: registry: %s", name,
			       err_msg());
	if (digest != NULL)
		memcpy(digest, d.fd_digest, ISC_DIGEST_LEN);
	return 0;
}

int clovis_isc_unregister(struct clovis *cl, const char *name)
{
	struct clovis_idx ix;
	char nk[2 + ISC_NAME_MAX + 1];
	void *kb[1] = {nk};
	size_t kls[1];
	struct clovis_bufvec keys = {1, kb, kls};
	struct clovis_op *op = NULL;
	int32_t rcs[1] = {0};
	int rc;

	if (cl == NULL)
		return err_set(-EINVAL, "isc_unregister: NULL client");
	rc = isc_name_check(name);
	if (rc == 0)
		rc = reg_open(cl, &ix, false);
	if (rc != 0)
		return rc == -ENOENT ? err_set(-ENOENT, "function %s is not "
					       "registered", name) : rc;
	snprintf(nk, sizeof nk, "n:%s", name);
	kls[0] = strlen(nk);
	rc = clovis_idx_op(&ix, CLOVIS_IC_DEL, &keys, NULL, rcs, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = rcs[0];
	if (rc == -ENOENT)
		rc = err_set(-ENOENT, "function %s is not registered", name);
	return rc;
}

/* The name's record and code: *kind, digest, *code (malloc'd). */
static int reg_lookup(struct clovis *cl, const char *name,
		      enum clovis_isc_kind *kind, uint8_t *digest,
		      void **code, size_t *code_len)
{
	struct clovis_idx ix;
	char nk[2 + ISC_NAME_MAX + 1];
	uint8_t fk[2 + ISC_DIGEST_LEN];
	void *v = NULL, *f = NULL;
	size_t vl = 0, fl = 0;
	int rc = isc_name_check(name);

	if (rc == 0)
		rc = reg_open(cl, &ix, false);
	if (rc == -ENOENT)
		return err_set(-ENOENT, "function %s is not registered", name);
	if (rc != 0)
		return rc;
	snprintf(nk, sizeof nk, "n:%s", name);
	rc = reg_get(&ix, nk, strlen(nk), &v, &vl);
	if (rc == -ENOENT)
		return err_set(-ENOENT, "function %s is not registered", name);
	if (rc != 0)
		return rc;
	if (vl != 1 + ISC_DIGEST_LEN || ((uint8_t *)v)[0] < ISC_DECL ||
	    ((uint8_t *)v)[0] > ISC_NATIVE) {
		free(v);
		return err_set(-CLOVIS_ECORRUPT, "function %s: registry "
			       "record of %zu bytes", name, vl);
	}
	*kind = (enum clovis_isc_kind)((uint8_t *)v)[0];
	memcpy(digest, (uint8_t *)v + 1, ISC_DIGEST_LEN);
	free(v);
	memcpy(fk, "f:", 2);
	memcpy(fk + 2, digest, ISC_DIGEST_LEN);
	rc = reg_get(&ix, fk, sizeof fk, &f, &fl);
	if (rc != 0)
		return err_set(rc == -ENOENT ? -CLOVIS_ECORRUPT : rc,
			       "function %s: code %s missing from the "
			       "registry", name, isc_digest_short(digest));
	if (fl < 2 || ((uint8_t *)f)[0] != (uint8_t)*kind) {
		free(f);
		return err_set(-CLOVIS_ECORRUPT, "function %s: code record "
			       "damaged", name);
	}
	memmove(f, (uint8_t *)f + 1, fl - 1);
	*code = f;
	*code_len = fl - 1;
	return 0;
}

int clovis_isc_lookup(struct clovis *cl, const char *name,
		      struct clovis_isc_fn *out, void **code, size_t *code_len)
{
	enum clovis_isc_kind kind;
	uint8_t dg[ISC_DIGEST_LEN];
	void *c = NULL;
	size_t cl_len = 0;
	int rc;

	if (cl == NULL || out == NULL)
		return err_set(-EINVAL, "isc_lookup: NULL argument");
	rc = reg_lookup(cl, name, &kind, dg, &c, &cl_len);
	if (rc != 0)
		return rc;
	memset(out, 0, sizeof *out);
	snprintf(out->if_name, sizeof out->if_name, "%s", name);
	out->if_kind = kind;
	memcpy(out->if_digest, dg, sizeof dg);
	out->if_code_len = (uint32_t)cl_len;
	if (code != NULL) {
		*code = c;
		if (code_len != NULL)
			*code_len = cl_len;
	} else {
		free(c);
	}
	return 0;
}

int clovis_isc_list(struct clovis *cl, const char *after,
		    struct clovis_isc_fn *out, uint32_t *nr)
{
	struct clovis_idx ix;
	uint32_t want, got = 0;
	char start[2 + ISC_NAME_MAX + 1];
	int rc;

	if (cl == NULL || out == NULL || nr == NULL || *nr == 0)
		return err_set(-EINVAL, "isc_list: NULL argument or *nr 0");
	want = *nr;
	*nr = 0;
	rc = reg_open(cl, &ix, false);
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	snprintf(start, sizeof start, "n:%s", after != NULL ? after : "");
	while (got < want) {
		uint32_t n = want - got < 64 ? want - got : 64;
		void *kb[64] = {0}, *vb[64] = {0};
		size_t kl[64] = {0}, vl[64] = {0};
		struct clovis_bufvec keys = {n, kb, kl}, vals = {n, vb, vl};
		struct clovis_op *op = NULL;
		int32_t rcs[64];
		uint32_t i;
		bool end = false;

		kb[0] = start;
		kl[0] = strlen(start);
		rc = clovis_idx_op(&ix, CLOVIS_IC_NEXT, &keys, &vals, rcs,
				   after != NULL || got > 0 ?
				   CLOVIS_IF_EXCLUDE_START_KEY : 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc != 0)
			return rc;
		for (i = 0; i < n; i++) {
			if (rcs[i] != 0) {
				end = true;
				break;
			}
			if (end || kl[i] < 3 || memcmp(kb[i], "n:", 2) != 0 ||
			    vl[i] != 1 + ISC_DIGEST_LEN) {
				end = true;
			} else {
				struct clovis_isc_fn *f = &out[got++];

				memset(f, 0, sizeof *f);
				snprintf(f->if_name, sizeof f->if_name, "%.*s",
					 (int)(kl[i] - 2), (char *)kb[i] + 2);
				f->if_kind = ((uint8_t *)vb[i])[0];
				memcpy(f->if_digest, (uint8_t *)vb[i] + 1,
				       ISC_DIGEST_LEN);
				snprintf(start, sizeof start, "%.*s",
					 (int)kl[i], (char *)kb[i]);
			}
			free(kb[i]);
			free(vb[i]);
		}
		for (; i < n; i++) {
			if (kb[i] != start)
				free(kb[i]);
			free(vb[i]);
		}
		if (end || i < n)
			break;
	}
	*nr = got;
	return 0;
}

/* --------------------------------------------------------------- calls */

/* One call being made. */
struct isc_inv {
	struct clovis *iv_cl;
	const struct clovis_isc_call *iv_call;
	struct isc_fn_desc iv_desc;
	struct isc_fn *iv_fn_obj, *iv_fn_idx; /* compiled here (not native) */
	struct isc_limits iv_lim;
	size_t iv_out_max;
	pthread_mutex_t iv_lock;
	struct isc_out iv_out;      /* merged (under iv_lock) */
	struct clovis_isc_stats iv_st;
	uint64_t iv_where[ISC_WHERE_WORDS]; /* is_servers: its bits */
	int iv_rc;
	char iv_msg[LIM_ERRMSG_LEN];
	/* container members */
	struct clovis_id *iv_ids;
	uint8_t *iv_kinds;          /* CLOVIS_ISC_OBJ / _IDX */
	uint32_t iv_nr, iv_next;
};

/* Cluster mode: one SOP_ISC call for the entity, its IscReply's output
 * into out (checked) and figures into st. */
static int isc_cluster_one(struct isc_inv *iv, enum clovis_isc_target t,
			   const struct clovis_id *id, bool prefix,
			   struct isc_out *out, struct isc_stats *st)
{
	const struct clovis_isc_call *ca = iv->iv_call;
	IscReq q = ISC_REQ__INIT;
	IscFn fn = ISC_FN__INIT;
	SId sid;
	IscReply *rp = NULL;
	uint32_t nr;
	int rc;

	fn.kind = iv->iv_desc.fd_kind;
	fn.name = (char *)iv->iv_desc.fd_name;
	fn.code.data = (uint8_t *)iv->iv_desc.fd_code;
	fn.code.len = iv->iv_desc.fd_code_len;
	fn.digest.data = iv->iv_desc.fd_digest;
	fn.digest.len = ISC_DIGEST_LEN;
	q.fn = &fn;
	q.target = t == CLOVIS_ISC_OBJ ? ISC_T_OBJ : ISC_T_IDX;
	msg_id_out(&sid, st_of(id));
	q.id = &sid;
	if (!prefix && t == CLOVIS_ISC_OBJ) {
		q.start = ca->ic_start_blk;
		q.end = ca->ic_nr_blks;
	}
	if (!prefix && t == CLOVIS_ISC_IDX) {
		q.has_lo = ca->ic_key_lo != NULL;
		q.lo.data = (uint8_t *)ca->ic_key_lo;
		q.lo.len = ca->ic_key_lo != NULL ? ca->ic_key_lo_len : 0;
		q.has_hi = ca->ic_key_hi != NULL;
		q.hi.data = (uint8_t *)ca->ic_key_hi;
		q.hi.len = ca->ic_key_hi != NULL ? ca->ic_key_hi_len : 0;
	}
	q.args.data = (uint8_t *)ca->ic_args;
	q.args.len = ca->ic_args != NULL ? ca->ic_args_len : 0;
	q.deadline_ms = ca->ic_deadline_ms;
	q.mem = ca->ic_mem;
	q.out_max = iv->iv_out_max;
	rc = cluster_isc_call(iv->iv_cl, t == CLOVIS_ISC_OBJ, st_of(id), &q,
			      &rp);
	if (rc != 0)
		return rc;
	rc = isc_out_check(rp->out.data, rp->out.len, &nr);
	if (rc == 0)
		rc = isc_out_merge(out, rp->out.data, rp->out.len);
	st->st_runs += rp->runs;
	st->st_where[0] |= rp->where;
	st->st_bytes += rp->bytes;
	st->st_degraded += rp->degraded;
	isc_reply__free_unpacked(rp, NULL);
	return rc;
}

/* Run on one entity: 0 and its output merged (prefixed with its id for
 * a container), or a negative code with a message. */
static int isc_one(struct isc_inv *iv, enum clovis_isc_target t,
		   const struct clovis_id *id, bool prefix)
{
	const struct clovis_isc_call *ca = iv->iv_call;
	struct clovis *cl = iv->iv_cl;
	struct isc_out out;
	struct isc_stats st = {0};
	int rc;

	isc_out_init(&out, iv->iv_out_max);
	if (cl->cl_eng != NULL) {
		struct isc_call c = {
			.ic_fn = t == CLOVIS_ISC_OBJ ? iv->iv_fn_obj :
						       iv->iv_fn_idx,
			.ic_desc = &iv->iv_desc,
			.ic_target = t == CLOVIS_ISC_OBJ ? ISC_T_OBJ : ISC_T_IDX,
			.ic_id = *st_of(id),
			.ic_args = ca->ic_args,
			.ic_alen = ca->ic_args_len,
			.ic_lim = iv->iv_lim,
			.ic_deadline_ms = ca->ic_deadline_ms,
			.ic_self = ISC_WHERE_STORE,
		};
		if (c.ic_fn == NULL) {
			rc = err_set(-EINVAL, "function %s: not compiled for "
				     "this target", iv->iv_desc.fd_name);
			goto out;
		}
		if (t == CLOVIS_ISC_OBJ) {
			if (!prefix) {
				c.ic_start_blk = ca->ic_start_blk;
				c.ic_nr_blks = ca->ic_nr_blks;
			}
			rc = isc_eng_obj(cl->cl_eng, &c, NULL, &out, &st);
		} else {
			if (!prefix) {
				c.ic_lo = ca->ic_key_lo;
				c.ic_lo_len = ca->ic_key_lo_len;
				c.ic_hi = ca->ic_key_hi;
				c.ic_hi_len = ca->ic_key_hi_len;
			}
			rc = isc_eng_idx(cl->cl_eng, &c, &out, &st);
		}
	} else {
		rc = isc_cluster_one(iv, t, id, prefix, &out, &st);
	}
	if (rc != 0)
		goto out;
	if (prefix) {
		uint8_t p[16];

		for (int i = 0; i < 8; i++) {
			p[i] = (uint8_t)(id->ci_hi >> (56 - 8 * i));
			p[8 + i] = (uint8_t)(id->ci_lo >> (56 - 8 * i));
		}
		rc = isc_out_prefix(&out, p, sizeof p);
		if (rc != 0)
			goto out;
	}
	pthread_mutex_lock(&iv->iv_lock);
	rc = isc_out_merge(&iv->iv_out, out.o_buf, out.o_len);
	iv->iv_st.is_runs += st.st_runs;
	for (uint32_t i = 0; i < ISC_WHERE_WORDS; i++)
		iv->iv_where[i] |= st.st_where[i];
	iv->iv_st.is_bytes_mapped += st.st_bytes;
	iv->iv_st.is_degraded += st.st_degraded;
	if (cl->cl_eng == NULL)
		iv->iv_st.is_bytes_result += out.o_len;
	iv->iv_st.is_members += prefix ? 1 : 0;
	pthread_mutex_unlock(&iv->iv_lock);
out:
	isc_out_fini(&out);
	return rc;
}

/* Container members, ISC_MEMBERS_PAR at a time: each thread takes the
 * next member until none is left or one failed. */
static void *isc_member_main(void *arg)
{
	struct isc_inv *iv = arg;

	for (;;) {
		uint32_t i;
		int rc;

		pthread_mutex_lock(&iv->iv_lock);
		if (iv->iv_rc != 0 || iv->iv_next == iv->iv_nr) {
			pthread_mutex_unlock(&iv->iv_lock);
			return NULL;
		}
		i = iv->iv_next++;
		pthread_mutex_unlock(&iv->iv_lock);
		err_clear();
		rc = isc_one(iv, iv->iv_kinds[i], &iv->iv_ids[i], true);
		/* a member deleted meanwhile is not an error of the call */
		if (rc == -ENOENT && strstr(err_msg(), "does not exist"))
			rc = 0;
		if (rc != 0) {
			pthread_mutex_lock(&iv->iv_lock);
			if (iv->iv_rc == 0) {
				iv->iv_rc = rc;
				snprintf(iv->iv_msg, sizeof iv->iv_msg, "%s",
					 err_msg());
			}
			pthread_mutex_unlock(&iv->iv_lock);
		}
	}
}

/* List the container's objects and indices into iv. */
static int isc_members(struct isc_inv *iv, const struct clovis_id *cid)
{
	struct clovis_container co;
	static const enum clovis_entity_type types[2] = {CLOVIS_ET_OBJ,
							 CLOVIS_ET_IDX};
	uint32_t cap = 0;
	int rc = clovis_container_init(&co, iv->iv_cl, cid);

	if (rc != 0)
		return rc;
	for (int t = 0; t < 2; t++) {
		struct clovis_id after, ids[ISC_LIST_PAGE];
		bool first = true;

		for (;;) {
			uint32_t n = ISC_LIST_PAGE;

			if (iv->iv_cl->cl_eng != NULL)
				rc = clovis_entity_list(iv->iv_cl, &co.co_realm,
							types[t], first ? NULL :
							&after, ids, &n);
			else
				rc = cluster_entity_list_all(
					iv->iv_cl, &co.co_realm,
					(uint32_t)types[t],
					first ? NULL : st_of(&after),
					st_of(ids), &n);
			if (rc != 0)
				return rc == -ENOENT ?
				       err_set(-ENOENT, "container %s does not "
					       "exist", eng_id_str(st_of(cid))) :
				       rc;
			if (n == 0)
				break;
			if (iv->iv_nr + n > cap) {
				uint32_t nc = (iv->iv_nr + n) * 2;
				void *a = realloc(iv->iv_ids,
						  nc * sizeof *iv->iv_ids);
				void *b;

				if (a == NULL)
					return err_set(-ENOMEM, "members");
				iv->iv_ids = a;
				b = realloc(iv->iv_kinds, nc);
				if (b == NULL)
					return err_set(-ENOMEM, "members");
				iv->iv_kinds = b;
				cap = nc;
			}
			for (uint32_t i = 0; i < n; i++) {
				/* the registry itself is no member */
				if (ids[i].ci_hi == 0 && ids[i].ci_lo < 1024)
					continue;
				iv->iv_ids[iv->iv_nr] = ids[i];
				iv->iv_kinds[iv->iv_nr++] = t == 0 ?
					CLOVIS_ISC_OBJ : CLOVIS_ISC_IDX;
			}
			after = ids[n - 1];
			first = false;
		}
	}
	return 0;
}

static int isc_call_check(const struct clovis_isc_call *c)
{
	if (c->ic_target < CLOVIS_ISC_OBJ || c->ic_target > CLOVIS_ISC_CONTAINER)
		return err_set(-EINVAL, "function %s: target %d unknown (1 "
			       "object, 2 index, 3 container)", c->ic_fn,
			       (int)c->ic_target);
	if (c->ic_args_len > ISC_ARGS_MAX || (c->ic_args == NULL &&
					       c->ic_args_len != 0))
		return err_set(-EINVAL, "function %s: arguments of %zu bytes "
			       "(at most %u)", c->ic_fn, c->ic_args_len,
			       ISC_ARGS_MAX);
	if (c->ic_deadline_ms > ISC_DEADLINE_MS_MAX)
		return err_set(-EINVAL, "function %s: deadline %u ms (at most "
			       "%u)", c->ic_fn, c->ic_deadline_ms,
			       ISC_DEADLINE_MS_MAX);
	if (c->ic_mem > ISC_MEM_MAX)
		return err_set(-EINVAL, "function %s: memory cap %" PRIu64
			       " (at most %llu)", c->ic_fn, c->ic_mem,
			       ISC_MEM_MAX);
	if (c->ic_out_max > ISC_OUT_MAX)
		return err_set(-EINVAL, "function %s: output cap %" PRIu64
			       " (at most %u)", c->ic_fn, c->ic_out_max,
			       ISC_OUT_MAX);
	if ((c->ic_key_lo_len > CLOVIS_KEY_MAX && c->ic_key_lo != NULL) ||
	    (c->ic_key_hi_len > CLOVIS_KEY_MAX && c->ic_key_hi != NULL))
		return err_set(-EINVAL, "function %s: key range bound over %u "
			       "bytes", c->ic_fn, CLOVIS_KEY_MAX);
	if (c->ic_target != CLOVIS_ISC_OBJ &&
	    (c->ic_start_blk != 0 || c->ic_nr_blks != 0))
		return err_set(-EINVAL, "function %s: a block range is for an "
			       "object", c->ic_fn);
	if (c->ic_target != CLOVIS_ISC_IDX &&
	    (c->ic_key_lo != NULL || c->ic_key_hi != NULL))
		return err_set(-EINVAL, "function %s: a key range is for an "
			       "index", c->ic_fn);
	return 0;
}

int clovis_isc_invoke(struct clovis *cl, const struct clovis_isc_call *c,
		      struct clovis_isc_result *res)
{
	struct isc_inv *iv;
	enum clovis_isc_kind kind;
	void *code = NULL;
	size_t code_len = 0;
	int rc;

	if (res != NULL)
		memset(res, 0, sizeof *res);
	if (cl == NULL || c == NULL || res == NULL)
		return err_set(-EINVAL, "isc_invoke: NULL argument");
	rc = isc_name_check(c->ic_fn);
	if (rc == 0)
		rc = isc_call_check(c);
	if (rc != 0)
		return rc;
	iv = calloc(1, sizeof *iv);
	if (iv == NULL)
		return err_set(-ENOMEM, "function %s", c->ic_fn);
	pthread_mutex_init(&iv->iv_lock, NULL);
	iv->iv_cl = cl;
	iv->iv_call = c;
	iv->iv_out_max = c->ic_out_max ? c->ic_out_max : ISC_OUT_DEFAULT;
	isc_out_init(&iv->iv_out, iv->iv_out_max);
	rc = reg_lookup(cl, c->ic_fn, &kind, iv->iv_desc.fd_digest, &code,
			&code_len);
	if (rc != 0)
		goto out;
	iv->iv_desc.fd_kind = (enum isc_kind)kind;
	iv->iv_desc.fd_name = c->ic_fn;
	iv->iv_desc.fd_code = code;
	iv->iv_desc.fd_code_len = code_len;
	iv->iv_lim.il_mem = c->ic_mem;
	iv->iv_lim.il_out_max = iv->iv_out_max;
	iv->iv_lim.il_native_allow = (const char *const *)cl->cl_isc_native;
	iv->iv_lim.il_where = cl->cl_eng != NULL ? "embedded store" : "client";
	/* compiled here: embedded runs, a reduce at the end, and early
	 * errors (a native function is compiled where it runs) */
	if (kind != CLOVIS_ISC_NATIVE || cl->cl_eng != NULL) {
		if (c->ic_target != CLOVIS_ISC_IDX) {
			rc = isc_fn_compile(&iv->iv_fn_obj, &iv->iv_desc,
					    ISC_T_OBJ, &iv->iv_lim);
			if (rc == -ENOTSUP && c->ic_target ==
			    CLOVIS_ISC_CONTAINER)
				rc = 0;
		}
		if (rc == 0 && c->ic_target != CLOVIS_ISC_OBJ) {
			rc = isc_fn_compile(&iv->iv_fn_idx, &iv->iv_desc,
					    ISC_T_IDX, &iv->iv_lim);
			if (rc == -ENOTSUP && c->ic_target ==
			    CLOVIS_ISC_CONTAINER && iv->iv_fn_obj != NULL)
				rc = 0;
		}
		if (rc != 0)
			goto out;
	}
	if (c->ic_target != CLOVIS_ISC_CONTAINER) {
		rc = isc_one(iv, c->ic_target, &c->ic_id, false);
	} else {
		pthread_t th[ISC_MEMBERS_PAR];
		uint32_t nth = 0;

		rc = isc_members(iv, &c->ic_id);
		if (rc != 0)
			goto out;
		/* members of a kind the function cannot run on are left
		 * out (a record size: objects only) */
		for (uint32_t i = 0, j = 0; i < iv->iv_nr; i++) {
			bool ok = iv->iv_kinds[i] == CLOVIS_ISC_OBJ ?
				  (iv->iv_fn_obj != NULL ||
				   kind == CLOVIS_ISC_NATIVE) :
				  (iv->iv_fn_idx != NULL ||
				   kind == CLOVIS_ISC_NATIVE);

			if (ok) {
				iv->iv_ids[j] = iv->iv_ids[i];
				iv->iv_kinds[j++] = iv->iv_kinds[i];
			}
			if (i + 1 == iv->iv_nr)
				iv->iv_nr = j;
		}
		for (; nth < ISC_MEMBERS_PAR && nth < iv->iv_nr; nth++)
			if (pthread_create(&th[nth], NULL, isc_member_main,
					   iv) != 0)
				break;
		if (nth == 0 && iv->iv_nr > 0)
			isc_member_main(iv);
		for (uint32_t i = 0; i < nth; i++)
			pthread_join(th[i], NULL);
		rc = iv->iv_rc;
		if (rc != 0)
			err_set(rc, "%s", iv->iv_msg);
	}
	if (rc == 0) {
		const struct isc_fn *fin = iv->iv_fn_obj != NULL ?
					   iv->iv_fn_obj : iv->iv_fn_idx;
		struct isc_limits lim = iv->iv_lim;
		uint32_t ms = c->ic_deadline_ms ? c->ic_deadline_ms :
			      ISC_DEADLINE_MS_DEFAULT;

		lim.il_deadline_ns = eng_now_ns() + (uint64_t)ms * 1000000ull;
		rc = isc_out_final(&iv->iv_out, fin, &lim);
	}
	if (rc == 0) {
		if (cl->cl_eng != NULL)
			iv->iv_st.is_bytes_result = 0; /* nothing travelled */
		res->ir_buf = iv->iv_out.o_buf;
		res->ir_len = iv->iv_out.o_len;
		res->ir_nr = iv->iv_out.o_nr;
		for (uint32_t i = 0; i < ISC_WHERE_WORDS; i++)
			iv->iv_st.is_servers +=
				(uint64_t)__builtin_popcountll(iv->iv_where[i]);
		res->ir_stats = iv->iv_st;
		iv->iv_out.o_buf = NULL;
		iv->iv_out.o_len = 0;
	}
out:
	isc_out_fini(&iv->iv_out);
	isc_fn_free(iv->iv_fn_obj);
	isc_fn_free(iv->iv_fn_idx);
	free(code);
	free(iv->iv_ids);
	free(iv->iv_kinds);
	pthread_mutex_destroy(&iv->iv_lock);
	free(iv);
	return rc;
}

int clovis_isc_result_next(const struct clovis_isc_result *res, size_t *pos,
			   struct clovis_isc_rec *rec)
{
	struct isc_rec r;
	int rc;

	if (res == NULL || pos == NULL || rec == NULL)
		return err_set(-EINVAL, "isc_result_next: NULL argument");
	if (res->ir_buf == NULL)
		return 0;
	rc = isc_out_next(res->ir_buf, res->ir_len, pos, &r);
	if (rc <= 0)
		return rc;
	memset(rec, 0, sizeof *rec);
	rec->ir_key = r.r_key;
	rec->ir_klen = r.r_klen;
	rec->ir_type = r.r_type;
	rec->ir_val = r.r_val;
	rec->ir_vlen = r.r_vlen;
	switch (r.r_type) {
	case ISC_V_INT: case ISC_V_COUNT: case ISC_V_ISUM:
		if (r.r_vlen == 8)
			memcpy(&rec->ir_int, r.r_val, 8);
		rec->ir_float = (double)rec->ir_int;
		break;
	case ISC_V_FLOAT: case ISC_V_SUM: case ISC_V_MIN: case ISC_V_MAX:
		if (r.r_vlen == 8)
			memcpy(&rec->ir_float, r.r_val, 8);
		break;
	default:
		break;
	}
	return 1;
}

void clovis_isc_result_free(struct clovis_isc_result *res)
{
	if (res == NULL)
		return;
	free(res->ir_buf);
	memset(res, 0, sizeof *res);
}

int clovis_isc_hist(const struct clovis_isc_rec *rec, double *lo, double *hi,
		    uint32_t *nb, const void **counts)
{
	const uint8_t *v;
	uint32_t n;

	if (rec == NULL || lo == NULL || hi == NULL || nb == NULL ||
	    counts == NULL || rec->ir_type != CLOVIS_ISC_V_HIST ||
	    rec->ir_vlen < 20)
		return err_set(-EINVAL, "isc_hist: not a histogram record");
	v = rec->ir_val;
	memcpy(lo, v, 8);
	memcpy(hi, v + 8, 8);
	memcpy(&n, v + 16, 4);
	if (rec->ir_vlen != 20 + (size_t)n * 8)
		return err_set(-EINVAL, "isc_hist: %zu bytes for %u buckets",
			       rec->ir_vlen, n);
	*nb = n;
	*counts = v + 20;
	return 0;
}
