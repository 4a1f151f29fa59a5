/*
 * fdmi.c — FDMI consumers of one store's record log: registration,
 * next/ack, the lag bounds and the trimmer (see fdmi.h).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addb/addb.h"
#include "core/engine.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "core/log.h"
#include "core/meta_txn.h"
#include "fdmi/fdmi.h"

#define SUB_PREFIX "fdmi/sub/"
/* How long an ack waits to ride a batch of other updates before it makes
 * one of its own (sub_store_grouped()). */
#define FDMI_ACK_RIDE_US 2000
#define SUB_VERSION 1u

/* A consumer's stored record (sys table, host order: the store is not
 * moved between machines of other byte orders). */
struct sub_rec {
	uint32_t sr_version;
	uint32_t sr_state;
	uint64_t sr_acked;
	uint64_t sr_max_bytes;
	uint64_t sr_max_age_ns;
	uint64_t sr_created_ns;
	uint64_t sr_lagged_ns;
	uint64_t sr_lag_count;
	struct fdmi_filter sr_filter;
};

struct fsub {
	char s_name[FDMI_NAME_MAX + 1];
	struct sub_rec s_rec;
};

struct fdmi {
	struct eng *f_eng;
	struct fdmi_conf f_conf;
	pthread_mutex_t f_lock; /* f_subs, and every write of a sub record */
	struct fsub *f_subs;
	uint32_t f_nr, f_cap;
	pthread_t f_trimmer;
	bool f_running, f_stop;
	pthread_mutex_t f_tlock;
	pthread_cond_t f_tcond;
};

static uint64_t now_ns(void)
{
	return eng_now_ns();
}

static int name_check(const char *name)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n == 0 || n > FDMI_NAME_MAX)
		return err_set(-EINVAL, "FDMI consumer name \"%s\": 1 to %u "
			       "characters", name != NULL ? name : "",
			       FDMI_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return err_set(-EINVAL, "FDMI consumer name \"%s\": "
				       "character '%c' (letters, digits, '.', "
				       "'_', '-')", name, c);
	}
	return 0;
}

static struct fsub *sub_find(struct fdmi *f, const char *name)
{
	for (uint32_t i = 0; i < f->f_nr; i++)
		if (strcmp(f->f_subs[i].s_name, name) == 0)
			return &f->f_subs[i];
	return NULL;
}

static void sub_key(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, SUB_PREFIX "%s", name);
}

/* Store (rec != NULL) or delete consumer name's record, durably. */
static int sub_store(struct fdmi *f, const char *name,
		     const struct sub_rec *rec)
{
	struct meta *m = eng_meta(f->f_eng);
	char key[sizeof SUB_PREFIX + FDMI_NAME_MAX + 1];
	MDB_txn *txn;
	int rc;

	sub_key(key, sizeof key, name);
	rc = meta_wtxn_begin(m, &txn, "FDMI consumer");
	if (rc != 0)
		return rc;
	rc = rec != NULL ? meta_put(txn, m, META_T_SYS, key, strlen(key), rec,
				    sizeof *rec, "FDMI consumer record")
			 : meta_del(txn, m, META_T_SYS, key, strlen(key),
				    "FDMI consumer record");
	if (rc != 0) {
		meta_txn_abort(txn);
		return rc;
	}
	return meta_wtxn_commit(m, txn, "FDMI consumer");
}

/* An ack's cursor record, written by the engine's group commit: it rides
 * the next batch of the writes committing meanwhile (eng_commit_ride()),
 * in the same LMDB transaction and sync, not one of its own (issue 31's
 * cost goal: an ack of its own cost a commit each); with no other update
 * within FDMI_ACK_RIDE_US it makes a batch of its own.  Durable when
 * sub_store_grouped() returns. */
struct ack_item {
	struct eng_citem ai_ci; /* first */
	pthread_mutex_t ai_lock;
	pthread_cond_t ai_cond;
	bool ai_done;
	int ai_rc;
	char ai_key[sizeof SUB_PREFIX + FDMI_NAME_MAX + 1];
	struct sub_rec ai_rec;
};

static int ack_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct ack_item *a = (struct ack_item *)ci;
	int rc;

	ci->ci_hard = true; /* a failed put may leave the transaction bad */
	rc = meta_put(txn, eng_meta(e), META_T_SYS, a->ai_key,
		      strlen(a->ai_key), &a->ai_rec, sizeof a->ai_rec,
		      "FDMI consumer record");
	if (rc == 0)
		ci->ci_hard = false;
	return rc;
}

static void ack_done(struct eng_citem *ci, int rc)
{
	struct ack_item *a = (struct ack_item *)ci;

	pthread_mutex_lock(&a->ai_lock);
	a->ai_done = true;
	a->ai_rc = rc;
	pthread_cond_broadcast(&a->ai_cond);
	pthread_mutex_unlock(&a->ai_lock);
}

static int sub_store_grouped(struct fdmi *f, const char *name,
			     const struct sub_rec *rec)
{
	struct ack_item *a = calloc(1, sizeof *a);
	int rc;

	if (a == NULL)
		return err_set(-ENOMEM, "FDMI ack of %s", name);
	sub_key(a->ai_key, sizeof a->ai_key, name);
	a->ai_rec = *rec;
	pthread_mutex_init(&a->ai_lock, NULL);
	pthread_cond_init(&a->ai_cond, NULL);
	a->ai_ci.ci_apply = ack_apply;
	a->ai_ci.ci_done = ack_done;
	/* it rides the next batch of other updates; with none within
	 * FDMI_ACK_RIDE_US, a batch of its own */
	if (!eng_commit_ride(f->f_eng, &a->ai_ci)) {
		eng_commit_submit(f->f_eng, &a->ai_ci);
	} else {
		struct timespec dl;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += FDMI_ACK_RIDE_US * 1000L;
		while (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&a->ai_lock);
		while (!a->ai_done &&
		       pthread_cond_timedwait(&a->ai_cond, &a->ai_lock,
					      &dl) == 0)
			;
		pthread_mutex_unlock(&a->ai_lock);
		if (eng_commit_unride(f->f_eng, &a->ai_ci))
			eng_commit_submit(f->f_eng, &a->ai_ci);
	}
	pthread_mutex_lock(&a->ai_lock);
	while (!a->ai_done)
		pthread_cond_wait(&a->ai_cond, &a->ai_lock);
	pthread_mutex_unlock(&a->ai_lock);
	rc = a->ai_rc;
	if (rc != 0)
		err_set(rc, "FDMI ack of %s: %s", name, a->ai_ci.ci_msg);
	pthread_mutex_destroy(&a->ai_lock);
	pthread_cond_destroy(&a->ai_cond);
	eng_spacevec_fini(&a->ai_ci.ci_alloc);
	eng_spacevec_fini(&a->ai_ci.ci_freed);
	free(a);
	return rc;
}

static void emission_set(struct fdmi *f)
{
	eng_fdmi_enable(f->f_eng, f->f_conf.fc_mode == FDMI_MODE_ON ||
				  (f->f_conf.fc_mode == FDMI_MODE_AUTO &&
				   f->f_nr > 0));
	addb_set(ADDB_FDMI_CONSUMERS, 0, f->f_nr);
}

/* ------------------------------------------------------------- reading */

static void seq_key(uint8_t kb[8], uint64_t seq)
{
	uint64_t b = htobe64(seq);

	memcpy(kb, &b, 8);
}

struct first_arg {
	bool fa_found;
	struct fdmi_rec fa_rec;
	size_t fa_len;
};

static int first_fn(void *arg, const struct meta_rec *r)
{
	struct first_arg *a = arg;
	uint64_t seq;

	memcpy(&seq, r->mc_key, 8);
	if (fdmi_rec_decode(be64toh(seq), r->mc_val, r->mc_vlen,
			    &a->fa_rec) == 0) {
		a->fa_found = true;
		a->fa_len = r->mc_vlen;
	}
	return META_SCAN_STOP;
}

/* The first record after seq in txn (found false: none). */
static int first_after(struct fdmi *f, MDB_txn *txn, uint64_t seq,
		       struct first_arg *a)
{
	uint8_t kb[8];
	struct meta_scan sc = {0};

	memset(a, 0, sizeof *a);
	seq_key(kb, seq + 1);
	sc.ms_table = META_T_FDMI;
	sc.ms_from = kb;
	sc.ms_flen = 8;
	sc.ms_fn = first_fn;
	sc.ms_arg = a;
	sc.ms_what = "FDMI log";
	return meta_scan(txn, eng_meta(f->f_eng), &sc);
}

/* Lag of a consumer at acked: records, bytes, age of the oldest. */
static int lag_of(struct fdmi *f, MDB_txn *txn, uint64_t acked,
		  uint64_t head, uint64_t head_off, uint64_t now,
		  uint64_t *recs, uint64_t *bytes, uint64_t *age)
{
	struct first_arg a;
	int rc = first_after(f, txn, acked, &a);

	*recs = *bytes = *age = 0;
	if (rc != 0 || !a.fa_found)
		return rc;
	*recs = head > acked ? head - acked : 0;
	*bytes = head_off > a.fa_rec.fr_off ? head_off - a.fa_rec.fr_off : 0;
	*age = now > a.fa_rec.fr_time_ns ? now - a.fa_rec.fr_time_ns : 0;
	return 0;
}

bool fdmi_match(const struct fdmi_filter *flt, const struct fdmi_rec *r)
{
	if (flt->ff_ops != 0 && (flt->ff_ops & (1u << r->fr_op)) == 0)
		return false;
	if (flt->ff_container_set &&
	    st_id_cmp(&flt->ff_container, &r->fr_container) != 0)
		return false;
	if (flt->ff_id_bits > 0) {
		uint32_t b = flt->ff_id_bits > 128 ? 128 : flt->ff_id_bits;
		uint64_t hm = b >= 64 ? UINT64_MAX : ~(UINT64_MAX >> b);
		uint64_t lm = b <= 64 ? 0 : b >= 128 ? UINT64_MAX
					   : ~(UINT64_MAX >> (b - 64));

		if (((flt->ff_id.si_hi ^ r->fr_id.si_hi) & hm) != 0 ||
		    ((flt->ff_id.si_lo ^ r->fr_id.si_lo) & lm) != 0)
			return false;
	}
	if (flt->ff_key_plen > 0 &&
	    (r->fr_klen < flt->ff_key_plen ||
	     (r->fr_op != FDMI_IDX_PUT && r->fr_op != FDMI_IDX_DEL) ||
	     memcmp(r->fr_key, flt->ff_key_prefix, flt->ff_key_plen) != 0))
		return false;
	if (flt->ff_tier >= 0 && (!(r->fr_flags & FDMI_F_TIER) ||
				  (uint32_t)flt->ff_tier != r->fr_tier))
		return false;
	return true;
}

/* Most records examined per fdmi_next() (matching or not), so that a
 * narrow filter over a long log answers in bounded time. */
#define NEXT_SCAN_MAX 65536u

struct next_arg {
	const struct fdmi_filter *na_flt;
	struct fdmi_batch *na_b;
	uint32_t na_max;
	size_t na_max_bytes;
	uint32_t na_seen;
	int na_rc;
};

static int batch_add(struct fdmi_batch *b, uint64_t seq, const void *v,
		     size_t len)
{
	size_t need = b->fb_len + 12 + len;

	if (need > UINT32_MAX)
		return -E2BIG;
	if (need > b->fb_cap) {
		size_t cap = b->fb_cap ? b->fb_cap : 4096;
		uint8_t *p;

		while (cap < need)
			cap *= 2;
		p = realloc(b->fb_buf, cap);
		if (p == NULL)
			return -ENOMEM;
		b->fb_buf = p;
		b->fb_cap = cap;
	}
	if (b->fb_nr == b->fb_atcap) {
		uint32_t cap = b->fb_atcap ? b->fb_atcap * 2 : 64;
		uint32_t *p = realloc(b->fb_at, cap * sizeof *p);

		if (p == NULL)
			return -ENOMEM;
		b->fb_at = p;
		b->fb_atcap = cap;
	}
	uint32_t l32 = (uint32_t)len;

	b->fb_at[b->fb_nr++] = (uint32_t)b->fb_len;
	memcpy(b->fb_buf + b->fb_len, &seq, 8);
	memcpy(b->fb_buf + b->fb_len + 8, &l32, 4);
	memcpy(b->fb_buf + b->fb_len + 12, v, len);
	b->fb_len = need;
	return 0;
}

static int next_fn(void *arg, const struct meta_rec *r)
{
	struct next_arg *a = arg;
	struct fdmi_rec rec;
	uint64_t seq;

	if (a->na_b->fb_nr >= a->na_max ||
	    (a->na_b->fb_nr > 0 && a->na_b->fb_len >= a->na_max_bytes) ||
	    a->na_seen++ >= NEXT_SCAN_MAX)
		return META_SCAN_STOP;
	memcpy(&seq, r->mc_key, 8);
	seq = be64toh(seq);
	a->na_rc = fdmi_rec_decode(seq, r->mc_val, r->mc_vlen, &rec);
	if (a->na_rc != 0)
		return a->na_rc;
	a->na_b->fb_last = seq;
	if (!fdmi_match(a->na_flt, &rec))
		return META_SCAN_NEXT;
	a->na_rc = batch_add(a->na_b, seq, r->mc_val, r->mc_vlen);
	if (a->na_rc != 0)
		return err_set(a->na_rc, "FDMI batch of %u records",
			       a->na_b->fb_nr);
	return META_SCAN_NEXT;
}

int fdmi_next(struct fdmi *f, const char *name, uint64_t after,
	      uint32_t max, size_t max_bytes, struct fdmi_batch *b)
{
	struct fdmi_filter flt;
	struct next_arg a = {&flt, b, max ? max : 1, max_bytes ? max_bytes : 1,
			     0, 0};
	struct meta *m = eng_meta(f->f_eng);
	struct fsub *s;
	uint64_t from, head, hoff;
	uint8_t kb[8];
	struct meta_scan sc = {0};
	MDB_txn *txn;
	int rc;

	b->fb_nr = 0;
	b->fb_len = 0;
	b->fb_last = b->fb_head = 0;
	pthread_mutex_lock(&f->f_lock);
	s = sub_find(f, name);
	if (s == NULL) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ENOENT, "FDMI consumer %s: not registered",
			       name);
	}
	if (s->s_rec.sr_state == FDMI_LAGGING) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ESTALE, "FDMI consumer %s: LAGGING (it passed "
			       "its bound and its records were dropped): "
			       "rescan, then reset it", name);
	}
	flt = s->s_rec.sr_filter;
	from = s->s_rec.sr_acked > after ? s->s_rec.sr_acked : after;
	pthread_mutex_unlock(&f->f_lock);

	rc = meta_rtxn_begin(m, &txn, "FDMI read");
	if (rc != 0)
		return rc;
	rc = eng_fdmi_head(f->f_eng, txn, &head, &hoff);
	b->fb_head = head;
	b->fb_last = from;
	if (rc == 0 && from < head) {
		seq_key(kb, from + 1);
		sc.ms_table = META_T_FDMI;
		sc.ms_from = kb;
		sc.ms_flen = 8;
		sc.ms_fn = next_fn;
		sc.ms_arg = &a;
		sc.ms_what = "FDMI log";
		rc = meta_scan(txn, m, &sc);
	}
	meta_rtxn_put(m, txn);
	return rc;
}

int fdmi_batch_rec(const struct fdmi_batch *b, uint32_t i,
		   struct fdmi_rec *out)
{
	uint64_t seq;
	uint32_t len;
	const uint8_t *p;

	if (i >= b->fb_nr)
		return err_set(-EINVAL, "FDMI batch: no record %u of %u", i,
			       b->fb_nr);
	p = b->fb_buf + b->fb_at[i];
	memcpy(&seq, p, 8);
	memcpy(&len, p + 8, 4);
	return fdmi_rec_decode(seq, p + 12, len, out);
}

void fdmi_batch_fini(struct fdmi_batch *b)
{
	free(b->fb_buf);
	free(b->fb_at);
	memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------ consumers */

static bool filter_eq(const struct fdmi_filter *a, const struct fdmi_filter *b)
{
	return a->ff_ops == b->ff_ops &&
	       a->ff_container_set == b->ff_container_set &&
	       (!a->ff_container_set ||
		st_id_cmp(&a->ff_container, &b->ff_container) == 0) &&
	       a->ff_id_bits == b->ff_id_bits &&
	       (a->ff_id_bits == 0 || st_id_cmp(&a->ff_id, &b->ff_id) == 0) &&
	       a->ff_key_plen == b->ff_key_plen &&
	       memcmp(a->ff_key_prefix, b->ff_key_prefix, a->ff_key_plen) == 0 &&
	       a->ff_tier == b->ff_tier;
}

static int filter_check(const struct fdmi_filter *flt)
{
	if ((flt->ff_ops & ~(((2u << FDMI_OP_MAX) - 1) & ~1u)) != 0)
		return err_set(-EINVAL, "FDMI filter: op mask 0x%x names no "
			       "op", flt->ff_ops);
	if (flt->ff_id_bits > 128)
		return err_set(-EINVAL, "FDMI filter: id prefix of %u bits "
			       "(at most 128)", flt->ff_id_bits);
	if (flt->ff_key_plen > FDMI_KEY_PREFIX_MAX)
		return err_set(-EINVAL, "FDMI filter: key prefix of %u bytes "
			       "(at most %u)", flt->ff_key_plen,
			       FDMI_KEY_PREFIX_MAX);
	if (flt->ff_tier < -1)
		return err_set(-EINVAL, "FDMI filter: tier %d", flt->ff_tier);
	return 0;
}

int fdmi_sub(struct fdmi *f, const char *name, const struct fdmi_filter *flt,
	     uint64_t max_bytes, uint64_t max_age_ns, bool from_start)
{
	struct meta *m = eng_meta(f->f_eng);
	struct fsub *s, ns;
	uint64_t head = 0, hoff;
	MDB_txn *txn;
	int rc = name_check(name);

	if (rc == 0)
		rc = filter_check(flt);
	if (rc != 0)
		return rc;
	if (f->f_conf.fc_mode == FDMI_MODE_OFF)
		return err_set(-ENOTSUP, "FDMI consumer %s: FDMI is off in "
			       "this store (fdmi: off)", name);
	pthread_mutex_lock(&f->f_lock);
	s = sub_find(f, name);
	if (s != NULL) {
		rc = filter_eq(&s->s_rec.sr_filter, flt) ? 0 :
		     err_set(-EEXIST, "FDMI consumer %s: already registered "
			     "with another filter", name);
		pthread_mutex_unlock(&f->f_lock);
		return rc;
	}
	if (f->f_nr >= FDMI_SUBS_MAX) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ENOSPC, "FDMI consumer %s: this store has %u "
			       "consumers already (the most)", name,
			       FDMI_SUBS_MAX);
	}
	if (f->f_nr == f->f_cap) {
		uint32_t cap = f->f_cap ? f->f_cap * 2 : 8;
		struct fsub *v = realloc(f->f_subs, cap * sizeof *v);

		if (v == NULL) {
			pthread_mutex_unlock(&f->f_lock);
			return err_set(-ENOMEM, "FDMI consumers");
		}
		f->f_subs = v;
		f->f_cap = cap;
	}
	/* Emission on first, then the head: every change committed after
	 * the head is in the log. */
	eng_fdmi_enable(f->f_eng, f->f_conf.fc_mode != FDMI_MODE_OFF);
	rc = meta_rtxn_begin(m, &txn, "FDMI head");
	if (rc == 0) {
		rc = eng_fdmi_head(f->f_eng, txn, &head, &hoff);
		meta_rtxn_put(m, txn);
	}
	memset(&ns, 0, sizeof ns);
	snprintf(ns.s_name, sizeof ns.s_name, "%s", name);
	ns.s_rec.sr_version = SUB_VERSION;
	ns.s_rec.sr_state = FDMI_ACTIVE;
	ns.s_rec.sr_acked = from_start ? 0 : head;
	ns.s_rec.sr_max_bytes = max_bytes ? max_bytes : FDMI_DEF_MAX_BYTES;
	ns.s_rec.sr_max_age_ns = max_age_ns ? max_age_ns : FDMI_DEF_MAX_AGE_NS;
	ns.s_rec.sr_created_ns = now_ns();
	ns.s_rec.sr_filter = *flt;
	if (rc == 0)
		rc = sub_store(f, name, &ns.s_rec);
	if (rc == 0) {
		f->f_subs[f->f_nr++] = ns;
		LOG_INFO("FDMI consumer %s registered (from record %" PRIu64 ")",
			 name, ns.s_rec.sr_acked + 1);
	}
	emission_set(f);
	pthread_mutex_unlock(&f->f_lock);
	return rc;
}

int fdmi_unsub(struct fdmi *f, const char *name)
{
	struct fsub *s;
	int rc;

	pthread_mutex_lock(&f->f_lock);
	s = sub_find(f, name);
	if (s == NULL) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ENOENT, "FDMI consumer %s: not registered",
			       name);
	}
	rc = sub_store(f, name, NULL);
	if (rc == 0) {
		*s = f->f_subs[--f->f_nr];
		emission_set(f);
	}
	pthread_mutex_unlock(&f->f_lock);
	if (rc == 0)
		fdmi_trim_now(f);
	return rc;
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fdmi_sub_info *)a)->fs_name,
		      ((const struct fdmi_sub_info *)b)->fs_name);
}

int fdmi_list(struct fdmi *f, struct fdmi_sub_info *out, uint32_t max,
	      uint32_t *nr)
{
	struct meta *m = eng_meta(f->f_eng);
	struct fdmi_sub_info *all;
	uint64_t head, hoff, now = now_ns();
	MDB_txn *txn;
	uint32_t n;
	int rc;

	pthread_mutex_lock(&f->f_lock);
	n = f->f_nr;
	all = calloc(n ? n : 1, sizeof *all);
	if (all == NULL) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ENOMEM, "FDMI consumer list");
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct sub_rec *r = &f->f_subs[i].s_rec;

		memcpy(all[i].fs_name, f->f_subs[i].s_name,
		       sizeof all[i].fs_name);
		all[i].fs_state = r->sr_state;
		all[i].fs_filter = r->sr_filter;
		all[i].fs_acked = r->sr_acked;
		all[i].fs_max_bytes = r->sr_max_bytes;
		all[i].fs_max_age_ns = r->sr_max_age_ns;
		all[i].fs_created_ns = r->sr_created_ns;
		all[i].fs_lagged_ns = r->sr_lagged_ns;
		all[i].fs_lag_count = r->sr_lag_count;
	}
	pthread_mutex_unlock(&f->f_lock);
	rc = meta_rtxn_begin(m, &txn, "FDMI list");
	if (rc == 0) {
		rc = eng_fdmi_head(f->f_eng, txn, &head, &hoff);
		for (uint32_t i = 0; rc == 0 && i < n; i++)
			rc = lag_of(f, txn, all[i].fs_acked, head, hoff, now,
				    &all[i].fs_lag_records,
				    &all[i].fs_lag_bytes, &all[i].fs_lag_ns);
		meta_rtxn_put(m, txn);
	}
	qsort(all, n, sizeof *all, info_cmp);
	for (uint32_t i = 0; rc == 0 && i < n && i < max; i++)
		out[i] = all[i];
	*nr = n;
	free(all);
	return rc;
}

int fdmi_ack(struct fdmi *f, const char *name, uint64_t seq)
{
	struct meta *m = eng_meta(f->f_eng);
	struct sub_rec nr;
	struct fsub *s;
	uint64_t head, hoff;
	MDB_txn *txn;
	int rc;

	rc = meta_rtxn_begin(m, &txn, "FDMI head");
	if (rc != 0)
		return rc;
	rc = eng_fdmi_head(f->f_eng, txn, &head, &hoff);
	meta_rtxn_put(m, txn);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&f->f_lock);
	s = sub_find(f, name);
	if (s == NULL) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ENOENT, "FDMI consumer %s: not registered",
			       name);
	}
	if (s->s_rec.sr_state == FDMI_LAGGING) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ESTALE, "FDMI consumer %s: LAGGING: rescan, "
			       "then reset it", name);
	}
	if (seq > head)
		seq = head;
	if (seq <= s->s_rec.sr_acked) {
		pthread_mutex_unlock(&f->f_lock);
		return 0;
	}
	nr = s->s_rec;
	nr.sr_acked = seq;
	rc = sub_store_grouped(f, name, &nr);
	if (rc == 0)
		s->s_rec = nr;
	pthread_mutex_unlock(&f->f_lock);
	return rc;
}

int fdmi_reset(struct fdmi *f, const char *name)
{
	struct meta *m = eng_meta(f->f_eng);
	struct sub_rec nr;
	struct fsub *s;
	uint64_t head, hoff;
	MDB_txn *txn;
	int rc;

	rc = meta_rtxn_begin(m, &txn, "FDMI head");
	if (rc != 0)
		return rc;
	rc = eng_fdmi_head(f->f_eng, txn, &head, &hoff);
	meta_rtxn_put(m, txn);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&f->f_lock);
	s = sub_find(f, name);
	if (s == NULL) {
		pthread_mutex_unlock(&f->f_lock);
		return err_set(-ENOENT, "FDMI consumer %s: not registered",
			       name);
	}
	nr = s->s_rec;
	nr.sr_state = FDMI_ACTIVE;
	nr.sr_acked = head > nr.sr_acked ? head : nr.sr_acked;
	rc = sub_store(f, name, &nr);
	if (rc == 0)
		s->s_rec = nr;
	pthread_mutex_unlock(&f->f_lock);
	return rc;
}

/* -------------------------------------------------------------- trimmer */

struct trim_arg {
	uint64_t ta_upto;   /* delete records <= this */
	uint32_t ta_n;
};

static int trim_fn(void *arg, const struct meta_rec *r)
{
	struct trim_arg *a = arg;
	uint64_t seq;

	memcpy(&seq, r->mc_key, 8);
	if (be64toh(seq) > a->ta_upto || a->ta_n >= FDMI_TRIM_BATCH)
		return META_SCAN_STOP;
	a->ta_n++;
	return META_SCAN_DEL;
}

/* Bounds of the log itself (FDMI_MODE_ON, no consumer holding it): the
 * last record to trim, in txn. */
struct bound_arg {
	uint64_t ba_head_off, ba_now, ba_max_bytes, ba_max_age;
	uint64_t ba_upto;
};

static int bound_fn(void *arg, const struct meta_rec *r)
{
	struct bound_arg *a = arg;
	struct fdmi_rec rec;
	uint64_t seq;

	memcpy(&seq, r->mc_key, 8);
	seq = be64toh(seq);
	if (fdmi_rec_decode(seq, r->mc_val, r->mc_vlen, &rec) != 0)
		return META_SCAN_STOP;
	if (a->ba_head_off - rec.fr_off <= a->ba_max_bytes &&
	    a->ba_now - rec.fr_time_ns <= a->ba_max_age)
		return META_SCAN_STOP;
	a->ba_upto = seq;
	return META_SCAN_NEXT;
}

/* Mark consumers past a bound LAGGING; the trim point (records <= it may
 * go) in *upto. */
static int trim_plan(struct fdmi *f, uint64_t *upto)
{
	struct meta *m = eng_meta(f->f_eng);
	uint64_t head, hoff, now = now_ns(), worst = 0;
	bool held = false;
	MDB_txn *txn;
	int rc;

	*upto = 0;
	rc = meta_rtxn_begin(m, &txn, "FDMI trim");
	if (rc != 0)
		return rc;
	rc = eng_fdmi_head(f->f_eng, txn, &head, &hoff);
	pthread_mutex_lock(&f->f_lock);
	*upto = head > 0 ? head - 1 : 0; /* the newest is always kept */
	for (uint32_t i = 0; rc == 0 && i < f->f_nr; i++) {
		struct fsub *s = &f->f_subs[i];
		uint64_t recs, bytes, age;

		if (s->s_rec.sr_state != FDMI_ACTIVE)
			continue;
		rc = lag_of(f, txn, s->s_rec.sr_acked, head, hoff, now, &recs,
			    &bytes, &age);
		if (rc != 0)
			break;
		if (bytes > s->s_rec.sr_max_bytes ||
		    age > s->s_rec.sr_max_age_ns) {
			struct sub_rec nr = s->s_rec;

			nr.sr_state = FDMI_LAGGING;
			nr.sr_acked = head;
			nr.sr_lagged_ns = now;
			nr.sr_lag_count++;
			if (sub_store(f, s->s_name, &nr) == 0) {
				s->s_rec = nr;
				addb_add(ADDB_FDMI_LAGGING, 0, 1);
				LOG_WARNING("FDMI consumer %s: LAGGING (%" PRIu64
					    " bytes, %" PRIu64 " records, oldest "
					    "%.1f s old, past its bounds %" PRIu64
					    " bytes, %.0f s): its cursor is "
					    "dropped; it must rescan", s->s_name,
					    bytes, recs, age / 1e9,
					    nr.sr_max_bytes,
					    nr.sr_max_age_ns / 1e9);
				continue;
			}
		}
		worst = bytes > worst ? bytes : worst;
		held = true;
		if (s->s_rec.sr_acked < *upto)
			*upto = s->s_rec.sr_acked;
	}
	addb_set(ADDB_FDMI_LAG_BYTES, 0, worst);
	addb_set(ADDB_FDMI_HEAD, 0, head);
	if (rc == 0 && !held && f->f_conf.fc_mode == FDMI_MODE_ON) {
		struct bound_arg ba = {hoff, now,
			f->f_conf.fc_max_bytes ? f->f_conf.fc_max_bytes
					       : FDMI_DEF_MAX_BYTES,
			f->f_conf.fc_max_age_ns ? f->f_conf.fc_max_age_ns
						: FDMI_DEF_MAX_AGE_NS, 0};
		struct meta_scan sc = {0};

		sc.ms_table = META_T_FDMI;
		sc.ms_fn = bound_fn;
		sc.ms_arg = &ba;
		sc.ms_what = "FDMI log";
		rc = meta_scan(txn, m, &sc);
		if (ba.ba_upto < *upto)
			*upto = ba.ba_upto;
	}
	pthread_mutex_unlock(&f->f_lock);
	meta_rtxn_put(m, txn);
	return rc;
}

int fdmi_trim_now(struct fdmi *f)
{
	struct meta *m = eng_meta(f->f_eng);
	uint64_t upto;
	int rc = trim_plan(f, &upto);

	/* at most 64 batches a round: the rest waits for the next one */
	for (uint32_t round = 0; rc == 0 && upto > 0 && round < 64; round++) {
		struct trim_arg ta = {upto, 0};
		struct meta_scan sc = {0};
		MDB_txn *txn;

		rc = meta_wtxn_begin(m, &txn, "FDMI trim");
		if (rc != 0)
			break;
		sc.ms_table = META_T_FDMI;
		sc.ms_write = true;
		sc.ms_fn = trim_fn;
		sc.ms_arg = &ta;
		sc.ms_what = "FDMI trim";
		rc = meta_scan(txn, m, &sc);
		if (rc != 0 || ta.ta_n == 0) {
			meta_txn_abort(txn);
			break;
		}
		rc = meta_wtxn_commit(m, txn, "FDMI trim");
		if (ta.ta_n < FDMI_TRIM_BATCH)
			break;
	}
	return rc;
}

static void *trimmer_main(void *arg)
{
	struct fdmi *f = arg;
	uint32_t ms = f->f_conf.fc_trim_period_ms ? f->f_conf.fc_trim_period_ms
						  : FDMI_TRIM_PERIOD_MS;

	eng_thread_enter();
	pthread_mutex_lock(&f->f_tlock);
	while (!f->f_stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->f_tcond, &f->f_tlock, &ts);
		if (f->f_stop)
			break;
		pthread_mutex_unlock(&f->f_tlock);
		if (eng_fdmi_on(f->f_eng)) {
			uint64_t dropped = 0;

			if (eng_fdmi_read_flush(f->f_eng, &dropped) != 0)
				LOG_WARNING("FDMI reads: %s", err_msg());
			if (dropped > 0)
				LOG_INFO("FDMI reads: %" PRIu64 " reads of objects"
					 " past the table's %u not recorded",
					 dropped, FDMI_HEAT_SLOTS);
			if (fdmi_trim_now(f) != 0)
				LOG_WARNING("FDMI trim: %s", err_msg());
		}
		pthread_mutex_lock(&f->f_tlock);
	}
	pthread_mutex_unlock(&f->f_tlock);
	eng_thread_leave();
	return NULL;
}

/* ----------------------------------------------------------- open/close */

struct load_arg {
	struct fdmi *la_f;
	int la_rc;
};

static int load_fn(void *arg, const struct meta_rec *r)
{
	struct load_arg *a = arg;
	struct fdmi *f = a->la_f;
	size_t plen = strlen(SUB_PREFIX), nlen = r->mc_klen - plen;
	struct fsub s;

	memset(&s, 0, sizeof s);
	if (nlen == 0 || nlen > FDMI_NAME_MAX ||
	    r->mc_vlen != sizeof s.s_rec) {
		LOG_WARNING("FDMI: a consumer record of %zu bytes under a key "
			    "of %zu left out (not this version's)", r->mc_vlen,
			    r->mc_klen);
		return META_SCAN_NEXT;
	}
	memcpy(s.s_name, (const char *)r->mc_key + plen, nlen);
	memcpy(&s.s_rec, r->mc_val, sizeof s.s_rec);
	if (s.s_rec.sr_version != SUB_VERSION)
		return META_SCAN_NEXT;
	if (f->f_nr == f->f_cap) {
		uint32_t cap = f->f_cap ? f->f_cap * 2 : 8;
		struct fsub *v = realloc(f->f_subs, cap * sizeof *v);

		if (v == NULL)
			return err_set(-ENOMEM, "FDMI consumers");
		f->f_subs = v;
		f->f_cap = cap;
	}
	f->f_subs[f->f_nr++] = s;
	return META_SCAN_NEXT;
}

int fdmi_open(struct eng *e, const struct fdmi_conf *c, struct fdmi **out)
{
	struct fdmi *f = calloc(1, sizeof *f);
	struct load_arg la = {f, 0};
	struct meta_scan sc = {0};
	MDB_txn *txn;
	int rc;

	if (f == NULL)
		return err_set(-ENOMEM, "FDMI");
	f->f_eng = e;
	if (c != NULL)
		f->f_conf = *c;
	if (f->f_conf.fc_mode > FDMI_MODE_OFF) {
		free(f);
		return err_set(-EINVAL, "FDMI mode %u", c->fc_mode);
	}
	pthread_mutex_init(&f->f_lock, NULL);
	pthread_mutex_init(&f->f_tlock, NULL);
	pthread_cond_init(&f->f_tcond, NULL);
	/* a read transaction of its own: the opening thread keeps no
	 * cached reader (meta_rtxn_begin) past the open */
	rc = meta_rtxn_once(eng_meta(e), &txn, "FDMI consumers");
	if (rc == 0) {
		sc.ms_table = META_T_SYS;
		sc.ms_from = SUB_PREFIX;
		sc.ms_flen = strlen(SUB_PREFIX);
		sc.ms_prefix = SUB_PREFIX;
		sc.ms_plen = strlen(SUB_PREFIX);
		sc.ms_fn = load_fn;
		sc.ms_arg = &la;
		sc.ms_what = "FDMI consumers";
		rc = meta_scan(txn, eng_meta(e), &sc);
		meta_txn_abort(txn);
	}
	if (rc == 0 && pthread_create(&f->f_trimmer, NULL, trimmer_main, f) != 0)
		rc = err_set(-EAGAIN, "FDMI trimmer thread");
	if (rc != 0) {
		free(f->f_subs);
		free(f);
		return rc;
	}
	f->f_running = true;
	pthread_mutex_lock(&f->f_lock);
	emission_set(f);
	pthread_mutex_unlock(&f->f_lock);
	*out = f;
	return 0;
}

void fdmi_close(struct fdmi *f)
{
	if (f == NULL)
		return;
	if (f->f_running) {
		pthread_mutex_lock(&f->f_tlock);
		f->f_stop = true;
		pthread_cond_signal(&f->f_tcond);
		pthread_mutex_unlock(&f->f_tlock);
		pthread_join(f->f_trimmer, NULL);
	}
	if (eng_fdmi_on(f->f_eng)) {
		uint64_t dropped = 0;

		/* the reads since the trimmer's last round (a short-lived
		 * process's would otherwise be lost) */
		if (eng_fdmi_read_flush(f->f_eng, &dropped) != 0)
			LOG_WARNING("FDMI reads at close: %s", err_msg());
	}
	eng_fdmi_enable(f->f_eng, false);
	pthread_mutex_destroy(&f->f_lock);
	pthread_mutex_destroy(&f->f_tlock);
	pthread_cond_destroy(&f->f_tcond);
	free(f->f_subs);
	free(f);
}

/* ---------------------------------------------------------------- text */

int fdmi_filter_parse(const char *text, struct fdmi_filter *out)
{
	char *copy = strdup(text != NULL ? text : ""), *save = NULL, *tok;
	int rc = 0;

	if (copy == NULL)
		return err_set(-ENOMEM, "FDMI filter");
	memset(out, 0, sizeof *out);
	out->ff_tier = -1;
	for (tok = strtok_r(copy, " \t", &save); rc == 0 && tok != NULL;
	     tok = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(tok, '='), *v;

		if (eq == NULL) {
			rc = err_set(-EINVAL, "FDMI filter: \"%s\" is not "
				     "FIELD=VALUE (fields: op, container, id, "
				     "key, tier)", tok);
			break;
		}
		*eq = '\0';
		v = eq + 1;
		if (strcmp(tok, "op") == 0) {
			char *s2 = NULL, *o;

			for (o = strtok_r(v, ",", &s2); o != NULL;
			     o = strtok_r(NULL, ",", &s2)) {
				uint32_t op = fdmi_op_parse(o);

				if (op == 0) {
					rc = err_set(-EINVAL, "FDMI filter: "
						     "field op: unknown op "
						     "\"%s\"", o);
					break;
				}
				out->ff_ops |= 1u << op;
			}
			if (rc == 0 && out->ff_ops == 0)
				rc = err_set(-EINVAL, "FDMI filter: field op: "
					     "no op named (op=OP[,OP...])");
		} else if (strcmp(tok, "container") == 0) {
			rc = st_id_parse(v, &out->ff_container);
			if (rc != 0)
				rc = err_set(rc, "FDMI filter: field container:"
					     " %s", err_msg());
			out->ff_container_set = rc == 0;
		} else if (strcmp(tok, "id") == 0) {
			char *sl = strchr(v, '/');
			unsigned long bits = 128;

			if (sl != NULL) {
				char *end;

				*sl = '\0';
				bits = strtoul(sl + 1, &end, 10);
				if (*end != '\0' || bits == 0 || bits > 128)
					rc = err_set(-EINVAL, "FDMI filter: "
						     "field id: prefix bits "
						     "\"%s\" (1 to 128)",
						     sl + 1);
			}
			if (rc == 0 && st_id_parse(v, &out->ff_id) != 0)
				rc = err_set(-EINVAL, "FDMI filter: field id: "
					     "%s", err_msg());
			out->ff_id_bits = (uint32_t)bits;
		} else if (strcmp(tok, "key") == 0) {
			size_t n = strlen(v);

			if (n == 0 || n > FDMI_KEY_PREFIX_MAX)
				rc = err_set(-EINVAL, "FDMI filter: field key: "
					     "a prefix of 1 to %u bytes",
					     FDMI_KEY_PREFIX_MAX);
			else {
				memcpy(out->ff_key_prefix, v, n);
				out->ff_key_plen = (uint32_t)n;
			}
		} else if (strcmp(tok, "tier") == 0) {
			char *end;
			long t = strtol(v, &end, 10);

			if (*v == '\0' || *end != '\0' || t < 0 || t > 255)
				rc = err_set(-EINVAL, "FDMI filter: field tier: "
					     "\"%s\" (a tier number)", v);
			out->ff_tier = (int32_t)t;
		} else {
			rc = err_set(-EINVAL, "FDMI filter: unknown field "
				     "\"%s\" (fields: op, container, id, key, "
				     "tier)", tok);
		}
	}
	free(copy);
	if (rc != 0)
		memset(out, 0, sizeof *out);
	return rc;
}

void fdmi_filter_str(const struct fdmi_filter *flt, char *buf, size_t len)
{
	size_t n = 0;
	char ids[ST_ID_STR_LEN];

	buf[0] = '\0';
#define APPEND(...)                                                          \
	do {                                                                 \
		int w_ = snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__); \
		if (w_ > 0)                                                  \
			n += (size_t)w_;                                     \
	} while (0)
	if (flt->ff_ops != 0) {
		const char *sep = "op=";

		for (uint32_t op = 1; op <= FDMI_OP_MAX; op++)
			if (flt->ff_ops & (1u << op)) {
				APPEND("%s%s", sep, fdmi_op_name(op));
				sep = ",";
			}
	}
	if (flt->ff_container_set)
		APPEND("%scontainer=%s", n ? " " : "",
		       st_id_format(&flt->ff_container, ids));
	if (flt->ff_id_bits > 0)
		APPEND("%sid=%s/%u", n ? " " : "", st_id_format(&flt->ff_id, ids),
		       flt->ff_id_bits);
	if (flt->ff_key_plen > 0)
		APPEND("%skey=%.*s", n ? " " : "", (int)flt->ff_key_plen,
		       (const char *)flt->ff_key_prefix);
	if (flt->ff_tier >= 0)
		APPEND("%stier=%d", n ? " " : "", flt->ff_tier);
#undef APPEND
	if (n >= len && len > 0)
		buf[len - 1] = '\0';
}
