/*
 * fdmi.c — the Clovis FDMI interface (clovis.h "FDMI"): consumers of the
 * stores' record logs.  Embedded mode calls the fdmi/ room on the engine;
 * cluster mode asks every server (clovis/cli_cluster.c cluster_fdmi_*).
 * A batch holds one part per store read; this instance remembers, per
 * consumer and server, the last record it gave out, so that the next call
 * continues after it (an ack makes that durable; a new instance starts
 * from the acked cursor: at least once).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "fdmi/fdmi.h"

_Static_assert(CLOVIS_FDMI_OBJ_CREATE == (int)FDMI_OBJ_CREATE &&
	       CLOVIS_FDMI_IDX_PUT == (int)FDMI_IDX_PUT &&
	       CLOVIS_FDMI_LAYER_MOVE == (int)FDMI_LAYER_MOVE &&
	       CLOVIS_FDMI_DTX_COMMIT == (int)FDMI_DTX_COMMIT &&
	       CLOVIS_FDMI_OBJ_READ == (int)FDMI_OBJ_READ,
	       "clovis_fdmi_op mirrors enum fdmi_op");
_Static_assert(CLOVIS_FDMI_NAME_MAX == FDMI_NAME_MAX, "name length");
_Static_assert(CLOVIS_FDMI_ACTIVE == (int)FDMI_ACTIVE &&
	       CLOVIS_FDMI_LAGGING == (int)FDMI_LAGGING, "states");

/* The last record this instance gave consumer fp_name from fp_server. */
struct fdmi_pos {
	struct fdmi_pos *fp_next;
	char fp_name[FDMI_NAME_MAX + 1];
	char fp_server[CLOVIS_FDMI_SERVER_LEN];
	uint64_t fp_last;
};

static const char local_name[] = "local";

const char *clovis_fdmi_op_name(uint32_t op)
{
	return fdmi_op_name(op);
}

static int fdmi_args(struct clovis *cl, const char *name, const char *fn)
{
	if (cl == NULL || name == NULL)
		return err_set(-EINVAL, "%s: NULL %s", fn,
			       cl == NULL ? "instance" : "consumer name");
	if (cl->cl_eng == NULL && cl->cl_backend == NULL)
		return err_set(-EINVAL, "%s: no store", fn);
	return 0;
}

static struct fdmi_pos *pos_get(struct clovis *cl, const char *name,
				const char *server, bool make)
{
	struct fdmi_pos *p;

	for (p = cl->cl_fdmi_pos; p != NULL; p = p->fp_next)
		if (strcmp(p->fp_name, name) == 0 &&
		    strcmp(p->fp_server, server) == 0)
			return p;
	if (!make || (p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	snprintf(p->fp_name, sizeof p->fp_name, "%s", name);
	snprintf(p->fp_server, sizeof p->fp_server, "%s", server);
	p->fp_next = cl->cl_fdmi_pos;
	cl->cl_fdmi_pos = p;
	return p;
}

uint64_t clovis_fdmi_pos_last(struct clovis *cl, const char *name,
			      const char *server)
{
	struct fdmi_pos *p;
	uint64_t v;

	pthread_mutex_lock(&cl->cl_fdmi_lock);
	p = pos_get(cl, name, server, false);
	v = p != NULL ? p->fp_last : 0;
	pthread_mutex_unlock(&cl->cl_fdmi_lock);
	return v;
}

void clovis_fdmi_pos_set(struct clovis *cl, const char *name,
			 const char *server, uint64_t last)
{
	struct fdmi_pos *p;

	pthread_mutex_lock(&cl->cl_fdmi_lock);
	p = pos_get(cl, name, server, true);
	if (p != NULL && last > p->fp_last)
		p->fp_last = last;
	pthread_mutex_unlock(&cl->cl_fdmi_lock);
}

/* Forget what this instance gave name (every server): after an unsub or
 * a reset, the next call starts from the consumer's cursor again. */
static void pos_forget(struct clovis *cl, const char *name)
{
	struct fdmi_pos **pp = &cl->cl_fdmi_pos, *p;

	pthread_mutex_lock(&cl->cl_fdmi_lock);
	while ((p = *pp) != NULL) {
		if (strcmp(p->fp_name, name) == 0) {
			*pp = p->fp_next;
			free(p);
		} else {
			pp = &p->fp_next;
		}
	}
	pthread_mutex_unlock(&cl->cl_fdmi_lock);
}

void fdmi_pos_free(struct clovis *cl)
{
	struct fdmi_pos *p, *n;

	for (p = cl->cl_fdmi_pos; p != NULL; p = n) {
		n = p->fp_next;
		free(p);
	}
	cl->cl_fdmi_pos = NULL;
}

int clovis_fdmi_sub(struct clovis *cl, const char *name, const char *filter,
		    uint64_t max_bytes, uint64_t max_age_ms, uint32_t flags)
{
	struct fdmi_filter flt;
	int rc = fdmi_args(cl, name, "clovis_fdmi_sub");

	if (rc != 0)
		return rc;
	if (flags & ~CLOVIS_FDMI_FROM_START)
		return err_set(-EINVAL, "clovis_fdmi_sub: flags 0x%x unknown",
			       flags);
	if (max_age_ms > UINT64_MAX / 1000000)
		return err_set(-EINVAL, "clovis_fdmi_sub: max_age_ms %" PRIu64
			       " too large", max_age_ms);
	rc = fdmi_filter_parse(filter, &flt);
	if (rc != 0)
		return rc;
	if (cl->cl_eng == NULL)
		return cluster_fdmi_sub(cl, name, filter != NULL ? filter : "",
					max_bytes, max_age_ms, flags);
	return fdmi_sub(cl->cl_fdmi, name, &flt, max_bytes,
			max_age_ms * 1000000, flags & CLOVIS_FDMI_FROM_START);
}

int clovis_fdmi_unsub(struct clovis *cl, const char *name)
{
	int rc = fdmi_args(cl, name, "clovis_fdmi_unsub");

	if (rc != 0)
		return rc;
	rc = cl->cl_eng == NULL ? cluster_fdmi_unsub(cl, name) :
				  fdmi_unsub(cl->cl_fdmi, name);
	if (rc == 0)
		pos_forget(cl, name);
	return rc;
}

void clovis_fdmi_sub_from(struct clovis_fdmi_sub *o,
			  const struct fdmi_sub_info *i, const char *server)
{
	memset(o, 0, sizeof *o);
	snprintf(o->fs_name, sizeof o->fs_name, "%s", i->fs_name);
	snprintf(o->fs_server, sizeof o->fs_server, "%s", server);
	o->fs_state = i->fs_state;
	fdmi_filter_str(&i->fs_filter, o->fs_filter, sizeof o->fs_filter);
	o->fs_acked = i->fs_acked;
	o->fs_max_bytes = i->fs_max_bytes;
	o->fs_max_age_ms = i->fs_max_age_ns / 1000000;
	o->fs_lag_records = i->fs_lag_records;
	o->fs_lag_bytes = i->fs_lag_bytes;
	o->fs_lag_ms = i->fs_lag_ns / 1000000;
	o->fs_lag_count = i->fs_lag_count;
}

int clovis_fdmi_list(struct clovis *cl, struct clovis_fdmi_sub *out,
		     uint32_t max, uint32_t *nr)
{
	struct fdmi_sub_info *v;
	uint32_t n = 0;
	int rc;

	if (cl == NULL || nr == NULL || (out == NULL && max > 0))
		return err_set(-EINVAL, "clovis_fdmi_list: NULL argument");
	if (cl->cl_eng == NULL)
		return cluster_fdmi_list(cl, out, max, nr);
	v = calloc(max ? max : 1, sizeof *v);
	if (v == NULL)
		return err_set(-ENOMEM, "clovis_fdmi_list");
	rc = fdmi_list(cl->cl_fdmi, v, max, &n);
	for (uint32_t i = 0; rc == 0 && i < n && i < max; i++)
		clovis_fdmi_sub_from(&out[i], &v[i], local_name);
	free(v);
	if (rc == 0)
		*nr = n;
	return rc;
}

/* ------------------------------------------------------------- batches */

struct clovis_fdmi_batch *clovis_fdmi_batch_new(uint32_t parts)
{
	struct clovis_fdmi_batch *b = calloc(1, sizeof *b);

	if (b == NULL)
		return NULL;
	b->b_part = calloc(parts ? parts : 1, sizeof *b->b_part);
	if (b->b_part == NULL) {
		free(b);
		return NULL;
	}
	b->b_cap = parts ? parts : 1;
	return b;
}

uint32_t clovis_fdmi_batch_nr(const struct clovis_fdmi_batch *b)
{
	uint32_t n = 0;

	for (uint32_t i = 0; b != NULL && i < b->b_nr; i++)
		n += b->b_part[i].bp_fb.fb_nr;
	return n;
}

int clovis_fdmi_batch_rec(const struct clovis_fdmi_batch *b, uint32_t i,
			  struct clovis_fdmi_rec *out)
{
	struct fdmi_rec r;
	int rc;

	if (b == NULL || out == NULL)
		return err_set(-EINVAL, "clovis_fdmi_batch_rec: NULL argument");
	for (uint32_t p = 0; p < b->b_nr; p++) {
		const struct clovis_fdmi_bpart *bp = &b->b_part[p];

		if (i >= bp->bp_fb.fb_nr) {
			i -= bp->bp_fb.fb_nr;
			continue;
		}
		rc = fdmi_batch_rec(&bp->bp_fb, i, &r);
		if (rc != 0)
			return rc;
		memset(out, 0, sizeof *out);
		out->fr_server = bp->bp_server;
		out->fr_seq = r.fr_seq;
		out->fr_op = r.fr_op;
		out->fr_flags = r.fr_flags;
		out->fr_time_ns = r.fr_time_ns;
		out->fr_dtx = *clovis_of(&r.fr_dtx);
		out->fr_type = r.fr_type;
		out->fr_tier = r.fr_tier;
		out->fr_id = *clovis_of(&r.fr_id);
		out->fr_container = *clovis_of(&r.fr_container);
		out->fr_layer = r.fr_layer;
		out->fr_nr_ext = r.fr_nr_ext;
		out->fr_size = r.fr_size;
		out->fr_digest = r.fr_digest;
		out->fr_key = r.fr_key;
		out->fr_klen = r.fr_klen;
		out->fr_priv = r.fr_ext;
		return 0;
	}
	return err_set(-EINVAL, "clovis_fdmi_batch_rec: no record %u", i);
}

void clovis_fdmi_rec_ext(const struct clovis_fdmi_rec *r, uint32_t i,
			 uint64_t *start, uint64_t *blocks)
{
	struct fdmi_rec fr = {.fr_ext = r->fr_priv, .fr_nr_ext = r->fr_nr_ext};

	*start = *blocks = 0;
	if (i < r->fr_nr_ext)
		fdmi_rec_ext(&fr, i, start, blocks);
}

void clovis_fdmi_batch_free(struct clovis_fdmi_batch *b)
{
	if (b == NULL)
		return;
	for (uint32_t i = 0; i < b->b_nr; i++)
		fdmi_batch_fini(&b->b_part[i].bp_fb);
	free(b->b_part);
	free(b);
}

int clovis_fdmi_next(struct clovis *cl, const char *name, uint32_t max,
		     struct clovis_fdmi_batch **out)
{
	struct clovis_fdmi_batch *b;
	struct clovis_fdmi_bpart *bp;
	int rc = fdmi_args(cl, name, "clovis_fdmi_next");

	if (rc != 0)
		return rc;
	if (out == NULL)
		return err_set(-EINVAL, "clovis_fdmi_next: out is NULL");
	if (max > 65536)
		return err_set(-EINVAL, "clovis_fdmi_next: max %u (at most "
			       "65536)", max);
	if (max == 0)
		max = 1024;
	if (cl->cl_eng == NULL)
		return cluster_fdmi_next(cl, name, max, out);
	b = clovis_fdmi_batch_new(1);
	if (b == NULL)
		return err_set(-ENOMEM, "clovis_fdmi_next");
	bp = &b->b_part[0];
	snprintf(bp->bp_server, sizeof bp->bp_server, "%s", local_name);
	rc = fdmi_next(cl->cl_fdmi, name,
		       clovis_fdmi_pos_last(cl, name, local_name), max,
		       CLOVIS_FDMI_BATCH_BYTES, &bp->bp_fb);
	b->b_nr = 1;
	if (rc != 0) {
		clovis_fdmi_batch_free(b);
		return rc;
	}
	clovis_fdmi_pos_set(cl, name, local_name, bp->bp_fb.fb_last);
	*out = b;
	return 0;
}

int clovis_fdmi_ack(struct clovis *cl, const char *name,
		    const struct clovis_fdmi_batch *b)
{
	int rc = fdmi_args(cl, name, "clovis_fdmi_ack");

	if (rc != 0)
		return rc;
	if (b == NULL)
		return err_set(-EINVAL, "clovis_fdmi_ack: NULL batch");
	if (cl->cl_eng == NULL)
		return cluster_fdmi_ack(cl, name, b);
	for (uint32_t i = 0; rc == 0 && i < b->b_nr; i++)
		rc = fdmi_ack(cl->cl_fdmi, name, b->b_part[i].bp_fb.fb_last);
	return rc;
}

int clovis_fdmi_reset(struct clovis *cl, const char *name)
{
	int rc = fdmi_args(cl, name, "clovis_fdmi_reset");

	if (rc != 0)
		return rc;
	rc = cl->cl_eng == NULL ? cluster_fdmi_reset(cl, name) :
				  fdmi_reset(cl->cl_fdmi, name);
	if (rc == 0)
		pos_forget(cl, name);
	return rc;
}

int clovis_fdmi_rewind(struct clovis *cl, const char *name)
{
	if (cl == NULL || name == NULL)
		return err_set(-EINVAL, "fdmi rewind: no instance or name");
	pos_forget(cl, name);
	return 0;
}
