/*
 * isc_native.c — native functions (ISC_NATIVE): trusted shared objects
 * with the ABI of isc_native.h, loaded with dlopen.
 *
 * Compiling one checks, in order: the path (the function's code) and
 * every path of the allow list resolve (realpath) to the same file, else
 * -EPERM; the file's digest (path and contents) is the registered one,
 * else -EINVAL; it loads (RTLD_NOW | RTLD_LOCAL) and exports
 * strata_isc_abi() answering STRATA_ISC_NATIVE_ABI, else -EINVAL; it
 * exports the entry point of the target, else -ENOTSUP.  The handle is
 * closed with the function (the loader keeps one copy per path).  No
 * sandbox: the code runs in this process (docs/isc.md).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/isc/isc_internal.h"
#include "core/isc/isc_native.h"

#define NATIVE_NEXT_MAX 4096u

_Static_assert(STRATA_ISC_INT == ISC_V_INT && STRATA_ISC_FLOAT == ISC_V_FLOAT &&
	       STRATA_ISC_BYTES == ISC_V_BYTES && STRATA_ISC_SUM == ISC_V_SUM &&
	       STRATA_ISC_MIN == ISC_V_MIN && STRATA_ISC_MAX == ISC_V_MAX &&
	       STRATA_ISC_COUNT == ISC_V_COUNT &&
	       STRATA_ISC_MEAN == ISC_V_MEAN && STRATA_ISC_HIST == ISC_V_HIST &&
	       STRATA_ISC_MATCH == ISC_V_MATCH &&
	       STRATA_ISC_ISUM == ISC_V_ISUM,
	       "isc_native.h record types follow enum isc_vtype");

typedef uint32_t (*native_abi_fn)(void);
typedef int (*native_ext_fn)(const struct strata_isc_host *, uint64_t,
			     const void *, size_t);
typedef int (*native_host_fn)(const struct strata_isc_host *);

struct isc_native {
	void *n_dl;
	char n_path[PATH_MAX];
	native_ext_fn n_ext;
	native_host_fn n_idx;
	native_host_fn n_finish;
};

/* The context of one entry into the shared object. */
struct nctx {
	struct isc_run *nc_r;
	const struct isc_idx_src *nc_src;
	struct isc_rec *nc_recs;
};

/* Is path (resolved) in the allow list (each entry resolved)? */
static bool native_allowed(const char *real, const char *const *allow)
{
	char buf[PATH_MAX];

	for (; allow != NULL && *allow != NULL; allow++)
		if (realpath(*allow, buf) != NULL && strcmp(buf, real) == 0)
			return true;
	return false;
}

/* dlsym without the object-to-function pointer cast warning. */
static void *native_sym(void *dl, const char *name)
{
	return dlsym(dl, name);
}

static int native_load(struct isc_fn *f, struct isc_native *n)
{
	native_abi_fn abi;
	void *p;

	dlerror();
	n->n_dl = dlopen(n->n_path, RTLD_NOW | RTLD_LOCAL);
	if (n->n_dl == NULL)
		return err_set(-EINVAL, "native function %s: cannot load %s: "
			       "%s", f->f_name, n->n_path, dlerror());
	p = native_sym(n->n_dl, "strata_isc_abi");
	if (p == NULL)
		return err_set(-EINVAL, "native function %s: %s exports no "
			       "strata_isc_abi()", f->f_name, n->n_path);
	memcpy(&abi, &p, sizeof abi);
	if (abi() != STRATA_ISC_NATIVE_ABI)
		return err_set(-EINVAL, "native function %s: %s speaks ABI %u; "
			       "this server speaks %u", f->f_name, n->n_path,
			       abi(), STRATA_ISC_NATIVE_ABI);
	p = native_sym(n->n_dl, "strata_isc_map_ext");
	memcpy(&n->n_ext, &p, sizeof p);
	p = native_sym(n->n_dl, "strata_isc_map_idx");
	memcpy(&n->n_idx, &p, sizeof p);
	p = native_sym(n->n_dl, "strata_isc_finish");
	memcpy(&n->n_finish, &p, sizeof p);
	if (f->f_target == ISC_T_OBJ && n->n_ext == NULL)
		return err_set(-ENOTSUP, "native function %s: %s exports no "
			       "strata_isc_map_ext(): it cannot run on objects",
			       f->f_name, n->n_path);
	if (f->f_target == ISC_T_IDX && n->n_idx == NULL)
		return err_set(-ENOTSUP, "native function %s: %s exports no "
			       "strata_isc_map_idx(): it cannot run on indices",
			       f->f_name, n->n_path);
	return 0;
}

int isc_native_compile(struct isc_fn *f, const struct isc_fn_desc *d,
		       const struct isc_limits *lim)
{
	struct isc_fn_desc chk = *d;
	struct isc_native *n;
	char path[PATH_MAX];
	int rc;

	if (d->fd_code_len == 0 || d->fd_code_len >= sizeof path ||
	    memchr(d->fd_code, '\0', d->fd_code_len) != NULL)
		return err_set(-EINVAL, "native function %s: the code must be "
			       "the shared object's path", f->f_name);
	memcpy(path, d->fd_code, d->fd_code_len);
	path[d->fd_code_len] = '\0';
	n = calloc(1, sizeof *n);
	if (n == NULL)
		return err_set(-ENOMEM, "native function %s", f->f_name);
	if (lim == NULL || lim->il_native_allow == NULL ||
	    lim->il_native_allow[0] == NULL) {
		rc = err_set(-EPERM, "native function %s: path %s is not "
			     "allowed by the configuration of %s (isc_native)",
			     f->f_name, path, lim != NULL && lim->il_where &&
			     lim->il_where[0] ? lim->il_where : "this process");
		goto fail;
	}
	if (realpath(path, n->n_path) == NULL) {
		rc = err_set(errno == ENOENT ? -ENOENT : -EPERM,
			     "native function %s: path %s: %s", f->f_name,
			     path, strerror(errno));
		goto fail;
	}
	if (!native_allowed(n->n_path, lim->il_native_allow)) {
		rc = err_set(-EPERM, "native function %s: path %s is not "
			     "allowed by the configuration of %s (isc_native)",
			     f->f_name, path, lim != NULL && lim->il_where &&
			     lim->il_where[0] ? lim->il_where : "this process");
		goto fail;
	}
	rc = isc_digest(&chk);
	if (rc != 0)
		goto fail;
	if (memcmp(chk.fd_digest, d->fd_digest, ISC_DIGEST_LEN) != 0) {
		char was[16];

		snprintf(was, sizeof was, "%s", isc_digest_short(d->fd_digest));
		rc = err_set(-EINVAL, "native function %s: %s changed since "
			     "registration (digest %s, registered %s)",
			     f->f_name, path, isc_digest_short(chk.fd_digest),
			     was);
		goto fail;
	}
	rc = native_load(f, n);
	if (rc != 0)
		goto fail;
	f->f_native = n;
	return 0;
fail:
	isc_native_free(n);
	return rc;
}

void isc_native_free(struct isc_native *n)
{
	if (n == NULL)
		return;
	if (n->n_dl != NULL)
		dlclose(n->n_dl);
	free(n);
}

/* ------------------------------------------------------------ the host */

static int native_late(struct isc_run *r)
{
	if (isc_now_ns() <= r->r_lim.l_deadline_ns)
		return 0;
	return err_set(-ETIMEDOUT, "native function %s: deadline of %" PRIu64
		       " ms exceeded%s", r->r_fn->f_name,
		       r->r_lim.l_deadline_ms, r->r_lim.l_where);
}

static int host_emit(void *ctx, const void *k, size_t kl, uint8_t type,
		     const void *v, size_t vl)
{
	struct nctx *c = ctx;
	struct isc_run *r = c->nc_r;
	int rc = native_late(r);

	if (rc != 0)
		return rc;
	if ((k == NULL && kl != 0) || (v == NULL && vl != 0) ||
	    !isc_val_ok(type, v, vl))
		return err_set(-EINVAL, "native function %s: emit of type %u "
			       "with a value of %zu bytes", r->r_fn->f_name,
			       type, vl);
	return isc_comb_add(&r->r_comb, r->r_fn->f_name, k, kl, type, v, vl);
}

static int host_next(void *ctx, const void *key, size_t klen, uint32_t n,
		     struct strata_isc_kv *recs, uint32_t *got)
{
	struct nctx *c = ctx;
	int rc = native_late(c->nc_r);

	*got = 0;
	if (rc != 0)
		return rc;
	if (c->nc_src == NULL)
		return err_set(-EINVAL, "native function %s: next() on an "
			       "object run", c->nc_r->r_fn->f_name);
	if (n > NATIVE_NEXT_MAX)
		n = NATIVE_NEXT_MAX;
	rc = c->nc_src->is_next(c->nc_src->is_arg, key, klen, n, c->nc_recs,
				got);
	if (rc != 0)
		return rc;
	for (uint32_t i = 0; i < *got; i++)
		recs[i] = (struct strata_isc_kv){
			c->nc_recs[i].r_key, c->nc_recs[i].r_klen,
			c->nc_recs[i].r_val, c->nc_recs[i].r_vlen};
	return 0;
}

static void native_host(struct strata_isc_host *h, struct nctx *c,
			struct isc_run *r)
{
	h->abi = STRATA_ISC_NATIVE_ABI;
	h->args = r->r_args;
	h->alen = r->r_alen;
	h->ctx = c;
	h->emit = host_emit;
	h->next = host_next;
	c->nc_r = r;
}

/* The function's return value as ours. */
static int native_rc(struct isc_run *r, int rc, const char *entry)
{
	if (rc == 0)
		return 0;
	if (rc > 0)
		rc = -EINVAL;
	return err_set(rc, "native function %s failed: %d (%s) in %s%s%s%s",
		       r->r_fn->f_name, rc, err_str(rc), entry,
		       r->r_lim.l_where, err_msg()[0] ? ": " : "", err_msg());
}

int isc_native_ext(struct isc_run *r, uint64_t off, const void *data,
		   size_t len)
{
	struct strata_isc_host h;
	struct nctx c = {0};

	native_host(&h, &c, r);
	err_clear();
	return native_rc(r, r->r_fn->f_native->n_ext(&h, off, data, len),
			 "map_ext");
}

int isc_native_idx(struct isc_run *r, const struct isc_idx_src *src)
{
	struct strata_isc_host h;
	struct nctx c = {0};
	int rc;

	native_host(&h, &c, r);
	c.nc_src = src;
	c.nc_recs = malloc(NATIVE_NEXT_MAX * sizeof *c.nc_recs);
	if (c.nc_recs == NULL)
		return err_set(-ENOMEM, "native function %s: run",
			       r->r_fn->f_name);
	err_clear();
	rc = native_rc(r, r->r_fn->f_native->n_idx(&h), "map_idx");
	free(c.nc_recs);
	return rc;
}

int isc_native_end(struct isc_run *r)
{
	struct strata_isc_host h;
	struct nctx c = {0};

	if (r->r_fn->f_native->n_finish == NULL)
		return 0;
	native_host(&h, &c, r);
	err_clear();
	return native_rc(r, r->r_fn->f_native->n_finish(&h), "finish");
}
