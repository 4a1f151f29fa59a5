/*
 * isc_fn.c — functions and runs of the executor (isc.h): digests,
 * compiling, and the dispatch of a run to its kind (isc_decl.c,
 * isc_lua.c, isc_native.c).  Limits are filled and capped here once per
 * run (struct isc_lim), so the kinds see only final values.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/engine.h"
#include "addb/addb.h"
#include "core/errors.h"
#include "core/isc/isc_internal.h"

uint64_t isc_now_ns(void)
{
	return eng_now_ns();
}

void isc_lim_init(struct isc_lim *l, const struct isc_limits *lim)
{
	static const struct isc_limits none;
	uint64_t now = isc_now_ns();

	if (lim == NULL)
		lim = &none;
	l->l_mem = lim->il_mem ? lim->il_mem : ISC_MEM_DEFAULT;
	if (l->l_mem > ISC_MEM_MAX)
		l->l_mem = ISC_MEM_MAX;
	l->l_out_max = lim->il_out_max ? lim->il_out_max : ISC_OUT_DEFAULT;
	if (l->l_out_max > ISC_OUT_MAX)
		l->l_out_max = ISC_OUT_MAX;
	l->l_deadline_ns = lim->il_deadline_ns ? lim->il_deadline_ns :
			   now + ISC_DEADLINE_MS_DEFAULT * 1000000ull;
	if (l->l_deadline_ns > now + ISC_DEADLINE_MS_MAX * 1000000ull)
		l->l_deadline_ns = now + ISC_DEADLINE_MS_MAX * 1000000ull;
	l->l_deadline_ms = l->l_deadline_ns > now ?
			   (l->l_deadline_ns - now + 999999) / 1000000 : 0;
	if (lim->il_where != NULL && lim->il_where[0] != '\0')
		snprintf(l->l_where, sizeof l->l_where, " on %s",
			 lim->il_where);
	else
		l->l_where[0] = '\0';
}

/* ------------------------------------------------------------ digests */

/* Hash the file at path into md: 0, or -ENOENT / -EIO with a message. */
static int isc_digest_file(EVP_MD_CTX *md, const char *path)
{
	uint8_t buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return err_set(-errno == -ENOENT ? -ENOENT : -EIO,
			       "native function %s: %s", path,
			       strerror(errno));
	while ((n = read(fd, buf, sizeof buf)) > 0)
		EVP_DigestUpdate(md, buf, (size_t)n);
	if (n < 0) {
		int e = errno;

		close(fd);
		return err_set(-EIO, "native function %s: read: %s", path,
			       strerror(e));
	}
	close(fd);
	return 0;
}

int isc_digest(struct isc_fn_desc *d)
{
	EVP_MD_CTX *md;
	uint8_t kind = (uint8_t)d->fd_kind;
	unsigned int len = 0;
	char path[4096];
	int rc = 0;

	if (d->fd_kind != ISC_DECL && d->fd_kind != ISC_LUA &&
	    d->fd_kind != ISC_NATIVE)
		return err_set(-EINVAL, "function %s: kind %d unknown",
			       d->fd_name ? d->fd_name : "?", (int)d->fd_kind);
	if (d->fd_code == NULL || d->fd_code_len > ISC_CODE_MAX)
		return err_set(-EINVAL, "function %s: code of %zu bytes "
			       "(at most %u)", d->fd_name ? d->fd_name : "?",
			       d->fd_code_len, ISC_CODE_MAX);
	md = EVP_MD_CTX_new();
	if (md == NULL)
		return err_set(-ENOMEM, "digest");
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	EVP_DigestUpdate(md, &kind, 1);
	EVP_DigestUpdate(md, d->fd_code, d->fd_code_len);
	if (d->fd_kind == ISC_NATIVE) {
		/* the path, a NUL, the shared object's bytes */
		if (d->fd_code_len >= sizeof path ||
		    memchr(d->fd_code, '\0', d->fd_code_len) != NULL) {
			rc = err_set(-EINVAL, "native function %s: the path "
				     "must be under %zu bytes, without NUL",
				     d->fd_name ? d->fd_name : "?",
				     sizeof path);
			goto out;
		}
		memcpy(path, d->fd_code, d->fd_code_len);
		path[d->fd_code_len] = '\0';
		EVP_DigestUpdate(md, "", 1);
		rc = isc_digest_file(md, path);
		if (rc != 0)
			goto out;
	}
	EVP_DigestFinal_ex(md, d->fd_digest, &len);
out:
	EVP_MD_CTX_free(md);
	return rc;
}

const char *isc_digest_short(const uint8_t d[ISC_DIGEST_LEN])
{
	static __thread char s[13];

	for (int i = 0; i < 6; i++)
		snprintf(s + 2 * i, 3, "%02x", d[i]);
	return s;
}

/* ------------------------------------------------------------ compile */

int isc_fn_compile(struct isc_fn **out, const struct isc_fn_desc *d,
		   enum isc_target t, const struct isc_limits *lim)
{
	struct isc_fn_desc chk = *d;
	struct isc_fn *f;
	int rc;

	*out = NULL;
	if (t != ISC_T_OBJ && t != ISC_T_IDX)
		return err_set(-EINVAL, "function: target %d unknown", (int)t);
	if (d->fd_name != NULL && strlen(d->fd_name) > ISC_NAME_MAX)
		return err_set(-EINVAL, "function: name of %zu bytes (at most "
			       "%u)", strlen(d->fd_name), ISC_NAME_MAX);
	f = calloc(1, sizeof *f);
	if (f == NULL)
		return err_set(-ENOMEM, "function");
	f->f_kind = d->fd_kind;
	f->f_target = t;
	memcpy(f->f_digest, d->fd_digest, ISC_DIGEST_LEN);
	snprintf(f->f_name, sizeof f->f_name, "%s", d->fd_name != NULL ?
		 d->fd_name : isc_digest_short(d->fd_digest));
	if (d->fd_kind == ISC_NATIVE) {
		rc = isc_native_compile(f, d, lim);
		goto out;
	}
	rc = isc_digest(&chk);
	if (rc != 0)
		goto out;
	if (memcmp(chk.fd_digest, d->fd_digest, ISC_DIGEST_LEN) != 0) {
		rc = err_set(-EINVAL, "function %s: its code does not match "
			     "its digest %s", f->f_name,
			     isc_digest_short(d->fd_digest));
		goto out;
	}
	if (d->fd_kind == ISC_DECL)
		rc = isc_decl_compile(f, d->fd_code, d->fd_code_len);
	else
		rc = isc_lua_compile(f, d->fd_code, d->fd_code_len, lim);
out:
	if (rc != 0) {
		isc_fn_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void isc_fn_free(struct isc_fn *f)
{
	if (f == NULL)
		return;
	isc_decl_free(f->f_decl);
	isc_lua_free(f->f_lua);
	isc_native_free(f->f_native);
	free(f);
}

uint32_t isc_fn_record(const struct isc_fn *f)
{
	return f->f_kind == ISC_DECL ? isc_decl_record(f->f_decl) : 1;
}

bool isc_fn_whole_object(const struct isc_fn *f)
{
	return f->f_kind == ISC_LUA && isc_lua_whole(f->f_lua);
}

bool isc_fn_has_reduce(const struct isc_fn *f)
{
	return f->f_kind == ISC_LUA && isc_lua_has_reduce(f->f_lua);
}

/* --------------------------------------------------------------- runs */

int isc_run_start(struct isc_run **out, const struct isc_fn *f,
		  const void *args, size_t alen, const struct isc_limits *lim)
{
	struct isc_run *r;
	int rc = 0;

	*out = NULL;
	if (alen > ISC_ARGS_MAX || (args == NULL && alen != 0))
		return err_set(-EINVAL, "function %s: arguments of %zu bytes "
			       "(at most %u)", f->f_name, alen, ISC_ARGS_MAX);
	r = calloc(1, sizeof *r);
	if (r == NULL)
		return err_set(-ENOMEM, "function %s: run", f->f_name);
	r->r_fn = f;
	r->r_args = args;
	r->r_alen = alen;
	addb_add(ADDB_ISC_RUNS, 0, 1);
	isc_lim_init(&r->r_lim, lim);
	isc_comb_init(&r->r_comb, r->r_lim.l_out_max);
	if (f->f_kind == ISC_DECL)
		rc = isc_decl_start(r);
	else if (f->f_kind == ISC_LUA)
		rc = isc_lua_start(r);
	if (rc != 0) {
		addb_add(ADDB_ISC_FAILED, 0, 1);
		isc_comb_fini(&r->r_comb);
		free(r);
		return rc;
	}
	/* the budget left after the script's top level ran */
	{
		uint64_t now = isc_now_ns();

		r->r_budget_ns = r->r_lim.l_deadline_ns > now ?
				 r->r_lim.l_deadline_ns - now : 0;
	}
	*out = r;
	return 0;
}

/* The run's clock starts again: its deadline is now plus what is left
 * of its budget (the engine's reads between calls do not count). */
static uint64_t run_clock_start(struct isc_run *r)
{
	uint64_t now = isc_now_ns();

	r->r_lim.l_deadline_ns = now + r->r_budget_ns;
	if (r->r_fn->f_kind == ISC_LUA)
		isc_lua_deadline(r);
	return now;
}

/* The run's clock stops: what the call took is spent. */
static void run_clock_stop(struct isc_run *r, uint64_t t0)
{
	uint64_t used = isc_now_ns() - t0;

	r->r_budget_ns = used < r->r_budget_ns ? r->r_budget_ns - used : 0;
}

int isc_run_ext(struct isc_run *r, uint64_t off, const void *data,
		size_t len)
{
	uint64_t t0;
	int rc;

	if (r->r_fn->f_target != ISC_T_OBJ)
		return err_set(-EINVAL, "function %s: compiled for an index, "
			       "fed an object's extent", r->r_fn->f_name);
	t0 = run_clock_start(r);
	switch (r->r_fn->f_kind) {
	case ISC_DECL:
		rc = isc_decl_ext(r, off, data, len);
		break;
	case ISC_LUA:
		rc = isc_lua_ext(r, off, data, len);
		break;
	default:
		rc = isc_native_ext(r, off, data, len);
		break;
	}
	run_clock_stop(r, t0);
	return rc;
}

int isc_run_idx(struct isc_run *r, const struct isc_idx_src *src)
{
	uint64_t t0;
	int rc;

	if (r->r_fn->f_target != ISC_T_IDX)
		return err_set(-EINVAL, "function %s: compiled for an object, "
			       "fed an index", r->r_fn->f_name);
	t0 = run_clock_start(r);
	switch (r->r_fn->f_kind) {
	case ISC_DECL:
		rc = isc_decl_idx(r, src);
		break;
	case ISC_LUA:
		rc = isc_lua_idx(r, src);
		break;
	default:
		rc = isc_native_idx(r, src);
		break;
	}
	run_clock_stop(r, t0);
	return rc;
}

int isc_run_end(struct isc_run *r, struct isc_out *out)
{
	int rc;

	run_clock_start(r);
	switch (r->r_fn->f_kind) {
	case ISC_DECL:
		rc = isc_decl_end(r);
		break;
	case ISC_LUA:
		rc = isc_lua_end(r);
		break;
	default:
		rc = isc_native_end(r);
		break;
	}
	if (rc == 0) {
		rc = isc_out_merge(out, r->r_comb.c_out.o_buf,
				   r->r_comb.c_out.o_len);
		if (rc != 0)
			err_set(rc, "function %s: %s", r->r_fn->f_name,
				err_msg());
	}
	if (rc != 0)
		addb_add(ADDB_ISC_FAILED, 0, 1);
	isc_comb_fini(&r->r_comb);
	free(r);
	return rc;
}

void isc_run_abort(struct isc_run *r)
{
	if (r == NULL)
		return;
	addb_add(ADDB_ISC_FAILED, 0, 1);
	if (r->r_fn->f_kind == ISC_DECL)
		isc_decl_abort(r);
	else if (r->r_fn->f_kind == ISC_LUA)
		isc_lua_abort(r);
	isc_comb_fini(&r->r_comb);
	free(r);
}
