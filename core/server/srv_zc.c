/*
 * srv_zc.c — zero-copy bulk transfers between clients and this server's
 * NVRAM-tier (pmem2) devices (docs/data-path.md "Zero-copy units on
 * NVRAM", tiers/nvram/nvram.h).
 *
 * At start the data area of every local pmem2 device is registered with
 * the endpoint once (rpc_mem_reg); the registration stays with the device
 * until the server stops.  A device whose registration fails is served
 * through the bounce buffers as before (logged once per device).
 * STRATA_SRV_ZC=0 in the environment turns the path off (A/B runs).
 *
 * Writes of plain objects whose device is such a device skip the pull
 * into a pool buffer: srv.c runs the engine with a transfer hook
 * (srv_zc_hook_init), and when the engine writes the request's bytes to
 * the freshly allocated, not yet mapped space, the pmem2 driver hands the
 * hook the map address; the hook pulls the client's bytes straight there
 * (RMA read) and the driver persists them before the engine's commit maps
 * them.  Reads push straight from the mapped extents (RMA write) while the
 * engine holds its read snapshot, so the space cannot be reused meanwhile;
 * holes and extents on other devices still go through the buffer and are
 * pushed after (srv_zc_push_rest).  Remote unit I/O (srv_rdev.c) keeps
 * its buffer: see docs/data-path.md for why.
 *
 * Checks kept: the engine's and tier.c's (the range inside the device's
 * data area, fault points, the device model), and the RPC layer's (the
 * map address inside the registered memory, the bulk range inside the
 * caller's buffer).  Plain objects carry no server-side checksum; unit
 * layouts (whose home computes parity and checksums from the client's
 * bytes) keep the buffer on their home.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_internal.h"
#include "tiers/nvram/nvram.h"

/** Registered pmem2 devices of a server. */
struct srv_zc {
	uint32_t zc_nr;
	struct tier_dev *zc_dev[LIM_DEV_MAX];
	struct rpc_mem *zc_mem[LIM_DEV_MAX];
	/* held writes committed in the pulling thread / queued (atomic;
	 * logged at stop): srv_zc_commit */
	uint64_t zc_here;
	uint64_t zc_queued;
};

/* Register device i if it is a local pmem2 device; failures only log. */
static void srv_zc_dev(struct srv *s, struct srv_zc *z, uint32_t i)
{
	struct eng_dev *ed = eng_dev_get(s->s_eng, i);
	void *addr;
	uint64_t len;
	int rc;

	if (ed == NULL || !nvram_dev_is(ed->ed_dev))
		return;
	rc = nvram_dev_data(ed->ed_dev, &addr, &len);
	if (rc == 0)
		rc = rpc_mem_reg(s->s_ep, addr, len, &z->zc_mem[z->zc_nr]);
	if (rc != 0) {
		LOG_WARNING("server %s: device %u (%s): no zero-copy transfers "
			    "(registration failed: %s); its data goes through "
			    "bounce buffers", s->s_me->cs_name, i,
			    ed->ed_dev->td_path, err_msg());
		return;
	}
	z->zc_dev[z->zc_nr++] = ed->ed_dev;
	LOG_INFO("server %s: device %u (%s): %" PRIu64 " bytes registered for "
		 "zero-copy transfers", s->s_me->cs_name, i,
		 ed->ed_dev->td_path, len);
}

int srv_zc_start(struct srv *s)
{
	const char *env = getenv("STRATA_SRV_ZC");
	struct srv_zc *z;

	if (env != NULL && strcmp(env, "0") == 0) {
		LOG_INFO("server %s: zero-copy transfers off (STRATA_SRV_ZC=0)",
			 s->s_me->cs_name);
		return 0;
	}
	z = calloc(1, sizeof *z);
	if (z == NULL)
		return err_set(-ENOMEM, "server %s: zero-copy table",
			       s->s_me->cs_name);
	for (uint32_t i = 0; i < eng_dev_nr(s->s_eng) && i < LIM_DEV_MAX; i++)
		srv_zc_dev(s, z, i);
	s->s_zc = z;
	return 0;
}

void srv_zc_stop(struct srv *s)
{
	struct srv_zc *z = s->s_zc;

	if (z == NULL)
		return;
	LOG_INFO("server %s: zero-copy writes: %" PRIu64 " committed in "
		 "their pulling thread, %" PRIu64 " queued to the group commit",
		 s->s_me->cs_name, __atomic_load_n(&z->zc_here, __ATOMIC_RELAXED),
		 __atomic_load_n(&z->zc_queued, __ATOMIC_RELAXED));
	for (uint32_t i = 0; i < z->zc_nr; i++)
		rpc_mem_dereg(z->zc_mem[i]);
	s->s_zc = NULL;
	free(z);
}

struct rpc_mem *srv_zc_mem(struct srv *s, const struct tier_dev *d)
{
	struct srv_zc *z = s->s_zc;

	for (uint32_t i = 0; z != NULL && i < z->zc_nr; i++)
		if (z->zc_dev[i] == d)
			return z->zc_mem[i];
	return NULL;
}

/* Count a finished zero-copy transfer; log one that was abandoned. */
static void srv_zc_count(struct srv *s, bool wr, const struct tier_dev *d,
			 size_t len, int rc)
{
	if (rc == 0) {
		__atomic_add_fetch(wr ? &s->s_cnt.sc_zc_wr_bytes
				      : &s->s_cnt.sc_zc_rd_bytes, len,
				   __ATOMIC_RELAXED);
		return;
	}
	if (rc == -ETIMEDOUT)
		LOG_WARNING("server %s: device %s: a zero-copy %s of %zu bytes "
			    "was abandoned at its deadline", s->s_me->cs_name,
			    d->td_path, wr ? "pull" : "push", len);
}

/* ------------------------------------------------------ the hook */

/* The engine writes request bytes [boff, boff + len) to dst in d's map. */
static int srv_zc_hook_write(void *arg, struct tier_dev *d, uint64_t boff,
			     void *dst, size_t len)
{
	struct srv_zc_xfer *x = arg;
	struct srv *s = x->zx_so->so_srv;
	struct rpc_sreq *req = x->zx_so->so_req;
	int rc;

	if (srv_zc_mem(s, d) == NULL) {
		/* Not registered: fill the buffer; the driver copies. */
		rc = rpc_sreq_bulk_pull(req, boff,
					(char *)x->zx_hook.xh_buf + boff, len);
		x->zx_lost |= rc == -ETIMEDOUT;
		return rc != 0 ? rc : 1;
	}
	if (x->zx_nr < SRV_ZC_RANGES) {
		/* Pulled after eng_exec(), while the item is held: the
		 * engine does not count the transfer as execution, so
		 * other commits do not wait for it (srv_obj_run_zc). */
		x->zx_off[x->zx_nr] = boff;
		x->zx_len[x->zx_nr] = len;
		x->zx_dst[x->zx_nr] = dst;
		x->zx_dev[x->zx_nr++] = d;
		return 2;
	}
	rc = rpc_sreq_bulk_pull_mem(req, boff, srv_zc_mem(s, d), dst, len);
	srv_zc_count(s, true, d, len, rc);
	x->zx_lost |= rc == -ETIMEDOUT;
	if (rc == 0)
		x->zx_bytes += len;
	return rc;
}

void srv_zc_hold(struct eng_citem *ci)
{
	struct srv_op *so = (struct srv_op *)ci;

	so->so_zc->zx_held = true;
}

int srv_zc_pull_held(struct srv_zc_xfer *x)
{
	struct srv *s = x->zx_so->so_srv;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < x->zx_nr; i++) {
		rc = rpc_sreq_bulk_pull_mem(x->zx_so->so_req, x->zx_off[i],
					    srv_zc_mem(s, x->zx_dev[i]),
					    x->zx_dst[i], x->zx_len[i]);
		srv_zc_count(s, true, x->zx_dev[i], x->zx_len[i], rc);
		x->zx_lost |= rc == -ETIMEDOUT;
		if (rc == 0) {
			nvram_dev_persist(x->zx_dev[i], x->zx_dst[i],
					  x->zx_len[i]);
			x->zx_bytes += x->zx_len[i];
		}
	}
	return rc;
}

void srv_zc_commit(struct srv_zc_xfer *x)
{
	struct srv *s = x->zx_so->so_srv;
	struct eng_citem *ci = &x->zx_so->so_m.mr_req.er_ci;
	struct st_id id = x->zx_so->so_m.mr_req.er_id;
	struct srv_zc *z = s->s_zc;
	bool here;

	here = eng_commit_release(s->s_eng, ci); /* so may be freed now */
	__atomic_add_fetch(here ? &z->zc_here : &z->zc_queued, 1,
			   __ATOMIC_RELAXED);
	LOG_INFO("server %s: zero-copy write %s: %" PRIu64 " bytes pulled, "
		 "%s", s->s_me->cs_name, eng_id_str(&id), x->zx_bytes,
		 here ? "committed in its pulling thread" :
		 "queued to the group commit");
}

/* The engine reads len bytes at src of d's map into the buffer at boff:
 * push them to the client instead, and note the range as sent. */
static int srv_zc_hook_read(void *arg, struct tier_dev *d, uint64_t boff,
			    const void *src, size_t len)
{
	struct srv_zc_xfer *x = arg;
	struct srv *s = x->zx_so->so_srv;
	int rc;

	if (srv_zc_mem(s, d) == NULL || x->zx_nr == SRV_ZC_RANGES ||
	    (x->zx_nr > 0 && x->zx_off[x->zx_nr - 1] + x->zx_len[x->zx_nr - 1]
			     > boff))
		return 1;
	rc = rpc_sreq_bulk_push_mem(x->zx_so->so_req, boff, srv_zc_mem(s, d),
				    src, len);
	srv_zc_count(s, false, d, len, rc);
	if (rc != 0) {
		x->zx_lost |= rc == -ETIMEDOUT;
		return rc;
	}
	x->zx_off[x->zx_nr] = boff;
	x->zx_len[x->zx_nr++] = len;
	x->zx_bytes += len;
	return 0;
}

void srv_zc_hook_init(struct srv_zc_xfer *x, struct srv_op *so)
{
	memset(x, 0, sizeof *x);
	x->zx_so = so;
	x->zx_hook.xh_buf = so->so_m.mr_data;
	x->zx_hook.xh_len = so->so_m.mr_data_len;
	x->zx_hook.xh_write = srv_zc_hook_write;
	x->zx_hook.xh_read = srv_zc_hook_read;
	x->zx_hook.xh_arg = x;
}

bool srv_zc_obj_ok(struct srv *s, const struct srv_op *so)
{
	const struct eng_req *r = &so->so_m.mr_req;
	struct eng_dev *ed;

	/* Plain objects only: unit layouts verify checksums and compute
	 * parity from the buffer itself (layouts/stripe.c). */
	if (s->s_zc == NULL || s->s_zc->zc_nr == 0 ||
	    r->er_ent.me_layout != ST_LAYOUT_PLAIN)
		return false;
	if (r->er_kind == ER_OBJ_READ)
		return true; /* the hook only sees registered devices */
	/* A plain object's bytes go to its one device (core/plain.c):
	 * every byte of a write must reach a registered one. */
	if (r->er_kind != ER_OBJ_WRITE)
		return false;
	ed = eng_dev_get(s->s_eng, r->er_ent.me_dev);
	return ed != NULL && !tier_dev_zoned(ed->ed_dev) &&
	       srv_zc_mem(s, ed->ed_dev) != NULL;
}

int srv_zc_push_rest(struct srv_zc_xfer *x)
{
	struct srv_op *so = x->zx_so;
	const char *buf = so->so_m.mr_data;
	uint64_t pos = 0, end = so->so_m.mr_data_len;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i <= x->zx_nr; i++) {
		uint64_t upto = i < x->zx_nr ? x->zx_off[i] : end;

		if (upto > pos)
			rc = rpc_sreq_bulk_push(so->so_req, pos, buf + pos,
						upto - pos);
		if (i < x->zx_nr)
			pos = x->zx_off[i] + x->zx_len[i];
	}
	x->zx_lost |= rc == -ETIMEDOUT;
	return rc;
}
