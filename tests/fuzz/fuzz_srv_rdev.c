/*
 * fuzz_srv_rdev.c — libFuzzer target: the server-to-server messages of
 * cluster phase 2a (core/server/msg.c), as srv_rdev.c runs them.
 *
 * Input: byte 0 picks the opcode (SOP_RDEV_WRITE + byte % 6: WRITE, READ,
 * SYNC, one past the range, SOP_WALK and SOP_DEV), bytes 1..4 the bulk length
 * (little endian, cut to 2 MiB), byte 5 this server's index, byte 6 the
 * number of servers (0..255), bytes 7..14 the device's size; the rest is
 * the body.
 *
 * RDEV: msg_rdev_decode() (shape; an accepted WRITE carries its fence,
 * deadline_ns and epoch), then, as the handler does,
 * msg_rdev_range() (home a server of the cluster, range inside that
 * home's slice).  An accepted request must address bytes inside the
 * device and inside the slice of its home, never another's: anything
 * else abort()s (the bug the bounds exist to stop).  A home equal to the
 * receiver passes here (the server acting for its home uses its slice);
 * the handler admits its writes only while the slice is lent.
 * WALK: msg_walk_decode(); an accepted kind must be 1..3.  The reply's
 * WalkStats decoder runs on the same body as Reply.text.
 * DEV: msg_dev_decode() with byte 5 as the receiving server; an accepted
 * request must have op 1..3, owner and dev in range, and a path exactly
 * when it is a replace sent to the owner (1..LIM_PATH_MAX bytes).  The
 * reply's SDev decoder runs on the same body as Reply.text: an accepted
 * device has index and state in range and a path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clu_conf.h"
#include "core/conf.h"
#include "core/server/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_rdev(uint32_t op, const RdevReq *q,
		       uint32_t nr, uint64_t size, size_t bulk)
{
	uint64_t base = 0, slice;

	/* the shape the decoder promises */
	if (q->home >= CLU_SERVERS_MAX || q->off % LIM_ALLOC_UNIT != 0 ||
	    q->len % LIM_ALLOC_UNIT != 0 || q->off > UINT64_MAX - q->len)
		abort();
	if (op == SOP_RDEV_SYNC ? (q->len != 0 || bulk != 0)
				: (q->len == 0 || q->len > MSG_RDEV_MAX ||
				   q->len != bulk))
		abort();
	/* a WRITE always carries its fence (deadline and incarnation) */
	if (op == SOP_RDEV_WRITE && (q->deadline_ns == 0 || q->epoch == 0))
		abort();
	if (msg_rdev_range(q, nr, size, &base) != 0)
		return;
	slice = conf_slice_size(size, nr);
	if (q->home >= nr || base != slice * q->home ||
	    base + q->off + q->len > base + slice ||
	    base + q->off + q->len > size)
		abort();
}

/* SOP_DEV: the request's shape, and the reply's SDev decoder. */
static void check_dev(const uint8_t *body, size_t len, uint32_t self)
{
	Reply rp = REPLY__INIT;
	DevReq *q = NULL;
	SDev *d = NULL;
	size_t plen;

	if (msg_dev_decode(body, len, self, &q) == 0) {
		plen = q->path != NULL ? strlen(q->path) : 0;
		if (q->op < SDV_FAIL || q->op > SDV_STATE ||
		    q->owner >= CLU_SERVERS_MAX || q->dev >= LIM_DEV_MAX)
			abort();
		if (q->op == SDV_REPLACE && q->owner == self ?
		    plen == 0 || plen > LIM_PATH_MAX : plen != 0)
			abort();
		dev_req__free_unpacked(q, NULL);
	} else if (q != NULL) {
		abort(); /* refused but handed out */
	}
	rp.text.data = (uint8_t *)body;
	rp.text.len = len;
	if (msg_dev_info_decode(&rp, &d) == 0) {
		if (d->index >= LIM_DEV_MAX || d->state > 2 || d->path == NULL)
			abort();
		sdev__free_unpacked(d, NULL);
	} else if (d != NULL) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t op, self, nr, kind;
	uint64_t dsize;
	size_t bulk, len;
	const uint8_t *body;
	RdevReq *q = NULL;
	WalkStats *ws = NULL;
	Reply rp = REPLY__INIT;

	if (size < 15)
		return 0;
	op = data[0] % 6u;
	op = op == 4 ? SOP_WALK : op == 5 ? SOP_DEV : SOP_RDEV_WRITE + op;
	bulk = (size_t)data[1] | (size_t)data[2] << 8 |
	       (size_t)data[3] << 16 | (size_t)data[4] << 24;
	bulk &= (2u << 20) - 1;
	self = data[5];
	nr = data[6];
	dsize = le64(data + 7);
	body = data + 15;
	len = size - 15;
	if (op == SOP_DEV) {
		check_dev(body, len, self);
		return 0;
	}
	if (op == SOP_WALK) {
		if (msg_walk_decode(body, len, &kind) == 0 &&
		    (kind < SWK_REPAIR || kind > SWK_SCRUB))
			abort();
		rp.text.data = (uint8_t *)body;
		rp.text.len = len;
		if (msg_walk_stats_decode(&rp, &ws) == 0) {
			if (ws->resumed > 1 || ws->devices > LIM_DEV_MAX)
				abort();
			walk_stats__free_unpacked(ws, NULL);
		}
		return 0;
	}
	if (msg_rdev_decode(op, body, len, bulk, &q) == 0) {
		check_rdev(op, q, nr, dsize, bulk);
		rdev_req__free_unpacked(q, NULL);
	} else if (q != NULL) {
		abort(); /* refused but handed out */
	}
	return 0;
}
