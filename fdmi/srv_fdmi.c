/*
 * srv_fdmi.c — the FDMI module of a cluster server (see srv_fdmi.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_internal.h"
#include "core/server/strata.pb-c.h"
#include "fdmi/fdmi.h"
#include "fdmi/fdmi.pb-c.h"
#include "fdmi/srv_fdmi.h"

static void answer(struct rpc_sreq *req, int rc, Reply *rp)
{
	size_t len = rc == 0 ? reply__get_packed_size(rp) : 0;
	uint8_t *buf = len > 0 ? malloc(len) : NULL;

	if (rc == 0 && len > 0 && buf == NULL)
		rc = err_set(-ENOMEM, "FDMI reply");
	if (rc != 0) {
		rpc_sreq_reply(req, rc, NULL, 0, err_msg());
		free(buf);
		return;
	}
	if (len > 0)
		reply__pack(rp, buf);
	rpc_sreq_reply(req, 0, buf, len, NULL);
	free(buf);
}

static int list_pack(struct fdmi *f, Reply *rp, uint8_t **out)
{
	struct fdmi_sub_info *v = calloc(FDMI_LIST_MAX, sizeof *v);
	FdmiSub *subs = calloc(FDMI_LIST_MAX, sizeof *subs);
	FdmiSub **ps = calloc(FDMI_LIST_MAX, sizeof *ps);
	char (*flt)[512] = calloc(FDMI_LIST_MAX, sizeof *flt);
	FdmiList l = FDMI_LIST__INIT;
	uint32_t nr = 0;
	int rc;

	*out = NULL;
	if (v == NULL || subs == NULL || ps == NULL || flt == NULL) {
		rc = err_set(-ENOMEM, "FDMI list");
		goto out;
	}
	rc = fdmi_list(f, v, FDMI_LIST_MAX, &nr);
	if (rc != 0)
		goto out;
	if (nr > FDMI_LIST_MAX)
		nr = FDMI_LIST_MAX;
	for (uint32_t i = 0; i < nr; i++) {
		fdmi_sub__init(&subs[i]);
		fdmi_filter_str(&v[i].fs_filter, flt[i], sizeof flt[i]);
		subs[i].name = v[i].fs_name;
		subs[i].state = v[i].fs_state;
		subs[i].filter = flt[i];
		subs[i].acked = v[i].fs_acked;
		subs[i].max_bytes = v[i].fs_max_bytes;
		subs[i].max_age_ms = v[i].fs_max_age_ns / 1000000;
		subs[i].lag_records = v[i].fs_lag_records;
		subs[i].lag_bytes = v[i].fs_lag_bytes;
		subs[i].lag_ms = v[i].fs_lag_ns / 1000000;
		subs[i].lag_count = v[i].fs_lag_count;
		ps[i] = &subs[i];
	}
	l.n_subs = nr;
	l.subs = ps;
	rp->text.len = fdmi_list__get_packed_size(&l);
	*out = malloc(rp->text.len ? rp->text.len : 1);
	if (*out == NULL) {
		rc = err_set(-ENOMEM, "FDMI list");
		goto out;
	}
	fdmi_list__pack(&l, *out);
	rp->text.data = *out;
out:
	free(v);
	free(subs);
	free(ps);
	free(flt);
	return rc;
}

static void fdmi_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	struct fdmi *f;
	struct fdmi_filter flt;
	struct fdmi_batch b = {0};
	Reply rp = REPLY__INIT;
	uint8_t *text = NULL;
	const void *body;
	size_t len;
	FdmiReq *q;
	int rc;

	srv_thread_enter();
	if (!srv_enter(s)) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	f = __atomic_load_n(&s->s_fdmi, __ATOMIC_ACQUIRE);
	if (f == NULL) {
		srv_leave(s);
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "FDMI is not running "
			       "on this server");
		return;
	}
	err_clear();
	body = rpc_sreq_body(req, &len);
	q = fdmi_req__unpack(NULL, len, body);
	if (q == NULL) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		rpc_sreq_reply(req, -EBADMSG, NULL, 0,
			       "FDMI request: not an FdmiReq");
		srv_leave(s);
		return;
	}
	switch (q->kind) {
	case FDMK_SUB:
		rc = fdmi_filter_parse(q->filter, &flt);
		if (rc == 0 && q->max_age_ms > UINT64_MAX / 1000000)
			rc = err_set(-EINVAL, "FDMI consumer %s: max_age_ms "
				     "too large", q->name);
		if (rc == 0 && (q->flags & ~1u))
			rc = err_set(-EINVAL, "FDMI consumer %s: flags 0x%x "
				     "unknown", q->name, q->flags);
		if (rc == 0)
			rc = fdmi_sub(f, q->name, &flt, q->max_bytes,
				      q->max_age_ms * 1000000, q->flags & 1u);
		break;
	case FDMK_UNSUB:
		rc = fdmi_unsub(f, q->name);
		break;
	case FDMK_LIST:
		rc = list_pack(f, &rp, &text);
		break;
	case FDMK_NEXT:
		rc = q->max == 0 || q->max > 65536 ?
		     err_set(-EINVAL, "FDMI next %s: max %u (1 to 65536)",
			     q->name, q->max) :
		     fdmi_next(f, q->name, q->after, q->max, FDMI_NEXT_BYTES,
			       &b);
		if (rc == 0) {
			rp.text.data = b.fb_buf;
			rp.text.len = b.fb_len;
			rp.bytes = b.fb_nr;
			rp.seq = b.fb_last;
			rp.term = b.fb_head;
		}
		break;
	case FDMK_ACK:
		rc = fdmi_ack(f, q->name, q->after);
		break;
	case FDMK_RESET:
		rc = fdmi_reset(f, q->name);
		break;
	default:
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		rc = err_set(-EINVAL, "FDMI request: kind %u unknown",
			     q->kind);
		break;
	}
	fdmi_req__free_unpacked(q, NULL);
	answer(req, rc, &rp);
	fdmi_batch_fini(&b);
	free(text);
	srv_leave(s);
}

static int fdmi_register(struct srv *s)
{
	return rpc_handler_set(s->s_ep, FDMI_OP, fdmi_handle, s);
}

static int fdmi_start(struct srv *s)
{
	struct fdmi_conf fc = {.fc_mode = FDMI_MODE_AUTO};
	struct fdmi *f = NULL;
	int rc = fdmi_open(s->s_eng, &fc, &f);

	if (rc != 0)
		return rc;
	__atomic_store_n(&s->s_fdmi, f, __ATOMIC_RELEASE);
	return 0;
}

static void fdmi_stop(struct srv *s)
{
	struct fdmi *f = __atomic_exchange_n(&s->s_fdmi, NULL,
					     __ATOMIC_ACQ_REL);

	fdmi_close(f);
}

const struct srv_module fdmi_srv_module = {
	.sm_name = "fdmi",
	.sm_register = fdmi_register,
	.sm_start = fdmi_start,
	.sm_stop = fdmi_stop,
};
