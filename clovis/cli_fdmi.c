/*
 * cli_fdmi.c — FDMI in cluster mode: the clovis_fdmi_* calls on every
 * server of the cluster, over the FDMI opcode (fdmi/srv_fdmi.h).  Each
 * server keeps the consumers of its own home's log; a consumer is
 * registered on every server, and a batch holds one part per server that
 * answered (a server that cannot be reached is left out of this batch:
 * its records wait for the next call, nothing is lost).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/server/peers.h"
#include "core/server/strata.pb-c.h"
#include "fdmi/fdmi.pb-c.h"
#include "fdmi/srv_fdmi.h"

/* One FDMI request to server s; *rp the reply (NULL allowed). */
static int fcall(struct clovis *cl, uint32_t s, const FdmiReq *q, Reply **rp)
{
	Reply *r = NULL;
	int rc = cluster_call_server(cl, s, FDMI_OP, &q->base, &r);

	if (rc != 0)
		rc = err_set(rc, "server %s: %s", cluster_server_name(cl, s),
			     err_msg());
	if (rp != NULL)
		*rp = r;
	else if (r != NULL)
		reply__free_unpacked(r, NULL);
	return rc;
}

/* The same request to every server: 0 when each one took it; else the
 * first failure (the others still asked: sub, unsub and reset are
 * idempotent, so a call made again completes the rest). */
static int fall(struct clovis *cl, const FdmiReq *q)
{
	uint32_t n = cluster_nr_servers(cl);
	char msg[512] = "";
	int first = 0;

	for (uint32_t s = 0; s < n; s++) {
		int rc = fcall(cl, s, q, NULL);

		if (rc != 0 && first == 0) {
			first = rc;
			snprintf(msg, sizeof msg, "%s", err_msg());
		}
	}
	if (first != 0)
		err_set(first, "%s", msg);
	return first;
}

int cluster_fdmi_sub(struct clovis *cl, const char *name, const char *filter,
		     uint64_t max_bytes, uint64_t max_age_ms, uint32_t flags)
{
	FdmiReq q = FDMI_REQ__INIT;

	q.kind = FDMK_SUB;
	q.name = (char *)name;
	q.filter = (char *)filter;
	q.max_bytes = max_bytes;
	q.max_age_ms = max_age_ms;
	q.flags = flags;
	return fall(cl, &q);
}

int cluster_fdmi_unsub(struct clovis *cl, const char *name)
{
	FdmiReq q = FDMI_REQ__INIT;
	uint32_t n = cluster_nr_servers(cl), gone = 0;
	int first = 0;
	char msg[512] = "";

	q.kind = FDMK_UNSUB;
	q.name = (char *)name;
	for (uint32_t s = 0; s < n; s++) {
		int rc = fcall(cl, s, &q, NULL);

		gone += rc == -ENOENT;
		if (rc != 0 && rc != -ENOENT && first == 0) {
			first = rc;
			snprintf(msg, sizeof msg, "%s", err_msg());
		}
	}
	if (first != 0)
		return err_set(first, "%s", msg);
	if (gone == n)
		return err_set(-ENOENT, "FDMI consumer %s: not registered",
			       name);
	return 0;
}

int cluster_fdmi_reset(struct clovis *cl, const char *name)
{
	FdmiReq q = FDMI_REQ__INIT;

	q.kind = FDMK_RESET;
	q.name = (char *)name;
	return fall(cl, &q);
}

int cluster_fdmi_list(struct clovis *cl, struct clovis_fdmi_sub *out,
		      uint32_t max, uint32_t *nr)
{
	FdmiReq q = FDMI_REQ__INIT;
	uint32_t n = cluster_nr_servers(cl), k = 0;
	int rc = 0;

	q.kind = FDMK_LIST;
	for (uint32_t s = 0; rc == 0 && s < n; s++) {
		Reply *rp = NULL;
		FdmiList *l;

		rc = fcall(cl, s, &q, &rp);
		if (rc != 0)
			break;
		l = fdmi_list__unpack(NULL, rp->text.len, rp->text.data);
		if (l == NULL)
			rc = err_set(-EPROTO, "server %s: FDMI list: not an "
				     "FdmiList", cluster_server_name(cl, s));
		for (size_t i = 0; l != NULL && i < l->n_subs; i++, k++) {
			struct clovis_fdmi_sub *o = &out[k];
			const FdmiSub *f = l->subs[i];

			if (k >= max)
				continue;
			memset(o, 0, sizeof *o);
			snprintf(o->fs_name, sizeof o->fs_name, "%s", f->name);
			snprintf(o->fs_server, sizeof o->fs_server, "%s",
				 cluster_server_name(cl, s));
			o->fs_state = f->state;
			snprintf(o->fs_filter, sizeof o->fs_filter, "%s",
				 f->filter);
			o->fs_acked = f->acked;
			o->fs_max_bytes = f->max_bytes;
			o->fs_max_age_ms = f->max_age_ms;
			o->fs_lag_records = f->lag_records;
			o->fs_lag_bytes = f->lag_bytes;
			o->fs_lag_ms = f->lag_ms;
			o->fs_lag_count = f->lag_count;
		}
		if (l != NULL)
			fdmi_list__free_unpacked(l, NULL);
		reply__free_unpacked(rp, NULL);
	}
	if (rc == 0)
		*nr = k;
	return rc;
}

/* Check and keep the records of one server's reply in part bp. */
static int part_take(struct clovis *cl, uint32_t s, const Reply *rp,
		     struct clovis_fdmi_bpart *bp)
{
	struct fdmi_batch *b = &bp->bp_fb;
	uint32_t nr = (uint32_t)rp->bytes;
	size_t off = 0;

	snprintf(bp->bp_server, sizeof bp->bp_server, "%s",
		 cluster_server_name(cl, s));
	b->fb_last = rp->seq;
	b->fb_head = rp->term;
	if (rp->bytes == 0)
		return 0;
	if (rp->bytes > 65536 || rp->text.len > UINT32_MAX)
		return err_set(-EPROTO, "server %s: FDMI reply of %" PRIu64
			       " records", bp->bp_server, rp->bytes);
	b->fb_buf = malloc(rp->text.len);
	b->fb_at = calloc(nr, sizeof *b->fb_at);
	if (b->fb_buf == NULL || b->fb_at == NULL)
		return err_set(-ENOMEM, "FDMI batch");
	memcpy(b->fb_buf, rp->text.data, rp->text.len);
	b->fb_len = b->fb_cap = rp->text.len;
	b->fb_atcap = nr;
	/* every entry inside the bytes, each a record that decodes */
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t len;
		uint64_t seq;
		struct fdmi_rec r;

		if (off + 12 > b->fb_len)
			return err_set(-EPROTO, "server %s: FDMI reply: record "
				       "%u past the bytes", bp->bp_server, i);
		memcpy(&seq, b->fb_buf + off, 8);
		memcpy(&len, b->fb_buf + off + 8, 4);
		if (len > b->fb_len - off - 12 ||
		    fdmi_rec_decode(seq, b->fb_buf + off + 12, len, &r) != 0)
			return err_set(-EPROTO, "server %s: FDMI reply: record "
				       "%u malformed", bp->bp_server, i);
		b->fb_at[i] = (uint32_t)off;
		off += 12 + len;
		b->fb_nr++;
	}
	return 0;
}

int cluster_fdmi_next(struct clovis *cl, const char *name, uint32_t max,
		      struct clovis_fdmi_batch **out)
{
	uint32_t n = cluster_nr_servers(cl), answered = 0, absent = 0;
	struct clovis_fdmi_batch *b = clovis_fdmi_batch_new(n);
	char msg[512] = "";
	int rc = 0, skip = 0;

	if (b == NULL)
		return err_set(-ENOMEM, "clovis_fdmi_next");
	for (uint32_t s = 0; rc == 0 && s < n; s++) {
		struct clovis_fdmi_bpart *bp = &b->b_part[b->b_nr];
		const char *sn = cluster_server_name(cl, s);
		FdmiReq q = FDMI_REQ__INIT;
		Reply *rp = NULL;
		int r;

		q.kind = FDMK_NEXT;
		q.name = (char *)name;
		q.after = clovis_fdmi_pos_last(cl, name, sn);
		q.max = max;
		r = fcall(cl, s, &q, &rp);
		if (r == -ENOENT) {
			absent++;
			continue;
		}
		if (r != 0 && peers_rc_transport(r)) {
			/* not reached: its records wait for the next call */
			skip = r;
			snprintf(msg, sizeof msg, "%s", err_msg());
			continue;
		}
		if (r != 0) {
			rc = r;
			break;
		}
		b->b_nr++;
		answered++;
		rc = part_take(cl, s, rp, bp);
		reply__free_unpacked(rp, NULL);
	}
	if (rc == 0 && answered == 0) {
		rc = absent > 0 && skip == 0 ?
		     err_set(-ENOENT, "FDMI consumer %s: not registered", name) :
		     err_set(skip ? skip : -EIO, "FDMI next %s: no server "
			     "answered (%s)", name, msg);
	}
	if (rc != 0) {
		clovis_fdmi_batch_free(b);
		return rc;
	}
	for (uint32_t i = 0; i < b->b_nr; i++)
		clovis_fdmi_pos_set(cl, name, b->b_part[i].bp_server,
				    b->b_part[i].bp_fb.fb_last);
	*out = b;
	return 0;
}

int cluster_fdmi_ack(struct clovis *cl, const char *name,
		     const struct clovis_fdmi_batch *b)
{
	uint32_t n = cluster_nr_servers(cl);
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < b->b_nr; i++) {
		FdmiReq q = FDMI_REQ__INIT;

		for (uint32_t s = 0; s < n; s++) {
			if (strcmp(cluster_server_name(cl, s),
				   b->b_part[i].bp_server) != 0)
				continue;
			q.kind = FDMK_ACK;
			q.name = (char *)name;
			q.after = b->b_part[i].bp_fb.fb_last;
			rc = fcall(cl, s, &q, NULL);
			break;
		}
	}
	return rc;
}
