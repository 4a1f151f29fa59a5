/*
 * cli_units.c — a cluster client's READ of an object's data units from
 * the servers that hold them (docs/cluster.md "Reads of units by the
 * client").
 *
 * The home answered a READ sent with ObjReq.units by the places of its
 * data units (Reply.units, core/server/srv_units.c).  Each unit is read
 * with one SOP_RDEV_READ from its server into the caller's buffers (the
 * bytes the unit holds; RMA straight into them), all of them in flight at
 * once; holes are zeroed.  Every unit's bytes must match the crc64 the
 * home named: a unit whose space was freed and used again by a later
 * write (the places are a snapshot) fails the check, as does a unit call
 * that failed.  Any failure: the caller sends the READ again without
 * `units` and the home reads it as before.  No update is made here.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/server/msg.h"
#include "core/clu_conf.h"
#include "core/server/peers.h"
#include "core/server/srv_limits.h"
#include "layouts/ec.h"

/* Buffers a unit may span (of the caller's at most CLU_UNITS_IOV). */
#define CLU_UNITS_IOV 16u

struct clu_uwait {
	pthread_mutex_t uw_lock;
	pthread_cond_t uw_cond;
	uint32_t uw_left;
};

struct clu_ucall {
	struct clu_uwait *uc_w;
	struct iovec uc_iov[CLU_UNITS_IOV];
	uint32_t uc_nr;
	int uc_rc;
	char uc_msg[320];
	struct peers_end uc_end;  /* an end not answered (for the table) */
	bool uc_unreachable;
};

/* The iovecs of bytes [off, off + len) of bv: their count, 0 if more
 * than max are needed or the range leaves bv. */
static uint32_t clu_units_iov(const struct st_bufvec *bv, uint64_t off,
			      uint64_t len, struct iovec *iov, uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < bv->bv_nr && len > 0; i++) {
		uint64_t l = bv->bv_len[i];

		if (off >= l) {
			off -= l;
			continue;
		}
		if (n == max)
			return 0;
		iov[n].iov_base = (uint8_t *)bv->bv_buf[i] + off;
		iov[n].iov_len = l - off < len ? l - off : len;
		len -= iov[n].iov_len;
		off = 0;
		n++;
	}
	return len == 0 ? n : 0;
}

static void clu_units_done(void *arg, struct peers_end *e)
{
	struct clu_ucall *uc = arg;
	struct clu_uwait *w = uc->uc_w;

	free(e->pe_body);
	uc->uc_rc = e->pe_rc;
	if (e->pe_rc != 0)
		snprintf(uc->uc_msg, sizeof uc->uc_msg, "%s", e->pe_msg);
	if (e->pe_unreachable) {
		uc->uc_end = *e;
		uc->uc_end.pe_body = NULL;
		uc->uc_unreachable = true;
	}
	pthread_mutex_lock(&w->uw_lock);
	if (--w->uw_left == 0)
		pthread_cond_signal(&w->uw_cond);
	pthread_mutex_unlock(&w->uw_lock);
}

/* Send unit u's read: asynchronously, or (no usable connection yet)
 * the blocking way, ended here. */
static void clu_units_send(struct peers *p, uint32_t call_ms,
			   const ReadUnit *u, struct clu_ucall *uc)
{
	RdevReq q = RDEV_REQ__INIT;
	struct rpc_bulk bulk = {RPC_BULK_IN, uc->uc_iov, uc->uc_nr};
	struct msg_buf b = {0};
	struct peers_end e = {0};
	struct rpc_result res = {0};
	int rc;

	q.home = u->home;
	q.dev = u->dev;
	q.off = u->off;
	q.len = u->len;
	rc = msg_pack(&q.base, &b);
	if (rc == 0) {
		rc = peers_call_async_ms(p, u->server, SOP_RDEV_READ,
					 b.mb_p, b.mb_len, &bulk, call_ms,
					 clu_units_done, uc);
		if (rc == 0) {
			free(b.mb_p);
			return;
		}
		memset(&res, 0, sizeof res);
		rc = peers_call_ms(p, u->server, SOP_RDEV_READ, b.mb_p,
				   b.mb_len, &bulk, call_ms, &res);
		free(res.rr_body);
	}
	free(b.mb_p);
	e.pe_rc = rc;
	if (rc != 0)
		snprintf(e.pe_msg, sizeof e.pe_msg, "%s", res.rr_msg[0] ?
			 res.rr_msg : err_msg());
	clu_units_done(uc, &e);
}

int clu_units_read(struct peers *p, const struct clu_conf *conf,
		   const struct eng_req *r, const Reply *rp)
{
	uint32_t nr_servers = conf->cc_nr_servers;
	/* as a home's unit calls (cli_rdev.c): a server that does not
	 * answer costs a third of the call timeout, then the home reads */
	uint32_t call_ms = conf->cc_call_ms / 3 > RDEV_CALL_MS_MIN ?
			   conf->cc_call_ms / 3 : RDEV_CALL_MS_MIN;
	const struct st_bufvec *bv = r->er_data;
	uint64_t total = 0;
	struct clu_uwait w;
	struct clu_ucall *uc;
	int rc = 0;

	for (size_t i = 0; i < bv->bv_nr; i++)
		total += bv->bv_len[i];
	if (rp->bytes != total)
		return err_set(-EPROTO, "object %s: places of %" PRIu64
			       " bytes for a read of %" PRIu64,
			       eng_id_str(&r->er_id), rp->bytes, total);
	uc = calloc(rp->n_units, sizeof *uc);
	if (uc == NULL)
		return err_set(-ENOMEM, "object %s: %zu unit reads",
			       eng_id_str(&r->er_id), rp->n_units);
	/* every unit's bytes inside the read, and the read covered once */
	for (size_t i = 0; rc == 0 && i < rp->n_units; i++) {
		const ReadUnit *u = rp->units[i];

		uc[i].uc_nr = u->len == 0 ? 0 :
			      clu_units_iov(bv, u->buf_off, u->len,
					    uc[i].uc_iov, CLU_UNITS_IOV);
		if (uc[i].uc_nr == 0)
			rc = err_set(-EPROTO, "object %s: unit %zu of %zu: "
				     "bytes %" PRIu64 "+%u outside the read "
				     "or over %u buffers",
				     eng_id_str(&r->er_id), i, rp->n_units,
				     u->buf_off, u->len, CLU_UNITS_IOV);
		else if (!u->hole && u->server >= nr_servers)
			rc = err_set(-EPROTO, "object %s: unit %zu on server "
				     "%u of %u", eng_id_str(&r->er_id), i,
				     u->server, nr_servers);
		else if (i > 0 && u->buf_off != rp->units[i - 1]->buf_off +
			 rp->units[i - 1]->len)
			rc = err_set(-EPROTO, "object %s: unit %zu at byte %"
				     PRIu64 ", not after unit %zu",
				     eng_id_str(&r->er_id), i, u->buf_off,
				     i - 1);
	}
	if (rc == 0 && (rp->n_units == 0 || rp->units[0]->buf_off != 0 ||
			rp->units[rp->n_units - 1]->buf_off +
			rp->units[rp->n_units - 1]->len != total))
		rc = err_set(-EPROTO, "object %s: %zu unit places do not "
			     "cover the read of %" PRIu64 " bytes",
			     eng_id_str(&r->er_id), rp->n_units, total);
	if (rc != 0) {
		free(uc);
		return rc;
	}
	pthread_mutex_init(&w.uw_lock, NULL);
	pthread_cond_init(&w.uw_cond, NULL);
	w.uw_left = 1; /* this thread's own, until every call is sent */
	for (size_t i = 0; i < rp->n_units; i++) {
		uc[i].uc_w = &w;
		if (rp->units[i]->hole) {
			for (uint32_t j = 0; j < uc[i].uc_nr; j++)
				memset(uc[i].uc_iov[j].iov_base, 0,
				       uc[i].uc_iov[j].iov_len);
		} else if (!peers_live(p, rp->units[i]->server)) {
			/* known down here (the home may still reach it):
			 * no call, no connect timeout; read through the home */
			uc[i].uc_rc = -EHOSTDOWN;
			snprintf(uc[i].uc_msg, sizeof uc[i].uc_msg, "server %u "
				 "known to be down by this client",
				 rp->units[i]->server);
		} else {
			pthread_mutex_lock(&w.uw_lock);
			w.uw_left++;
			pthread_mutex_unlock(&w.uw_lock);
			clu_units_send(p, call_ms, rp->units[i], &uc[i]);
		}
	}
	pthread_mutex_lock(&w.uw_lock);
	w.uw_left--;
	while (w.uw_left > 0)
		pthread_cond_wait(&w.uw_cond, &w.uw_lock);
	pthread_mutex_unlock(&w.uw_lock);
	/* servers found unreachable: recorded in the table (not on the
	 * progress thread), so later calls connect again, not fail at once */
	for (size_t i = 0; i < rp->n_units; i++)
		if (uc[i].uc_unreachable)
			peers_call_failed(p, &uc[i].uc_end);
	for (size_t i = 0; rc == 0 && i < rp->n_units; i++) {
		const ReadUnit *u = rp->units[i];
		uint64_t crc = 0;

		if (u->hole)
			continue;
		if (uc[i].uc_rc != 0) {
			rc = err_set(uc[i].uc_rc, "object %s: unit %zu: %s",
				     eng_id_str(&r->er_id), i, uc[i].uc_msg);
			break;
		}
		for (uint32_t j = 0; j < uc[i].uc_nr; j++)
			crc = ec_crc_cont(crc, uc[i].uc_iov[j].iov_base,
					  uc[i].uc_iov[j].iov_len);
		if (FAULT_HIT("clu.units.crc"))
			crc = ~crc;
		if (crc != u->crc)
			rc = err_set(-ST_ECORRUPT, "object %s: unit %zu (server "
				     "%u, device %u, offset %" PRIu64 "): "
				     "crc64 %016" PRIx64 ", expected %016"
				     PRIx64, eng_id_str(&r->er_id), i,
				     u->server, u->dev, u->off, crc, u->crc);
	}
	pthread_cond_destroy(&w.uw_cond);
	pthread_mutex_destroy(&w.uw_lock);
	free(uc);
	return rc;
}
