/*
 * pool.c — an endpoint's bulk buffer pool (rpc.h, "bulk buffers").
 *
 * One arena of RPC_BUF_SLOTS slots of RPC_BUF_SLOT bytes, page-aligned and
 * registered once for local RMA access; a bitmap of free slots under
 * ep_pool_lock.  Buffers that do not fit a slot, or come when every slot is
 * taken, are plain page-aligned allocations that srv.c registers per
 * transfer as before.  A buffer whose transfer was abandoned may still be
 * written by the provider: it is never handed out again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/rpc/rpc_internal.h"

_Static_assert(RPC_BUF_SLOTS <= 32, "free-slot bitmap is 32 bits");

#define POOL_BYTES ((size_t)RPC_BUF_SLOTS * RPC_BUF_SLOT)

/* Make and register the arena (under ep_pool_lock, once).  On failure the pool
 * stays empty and every buffer is a fallback one. */
static void pool_make(struct rpc_ep *ep)
{
	void *mem = NULL;

	ep->ep_pool_tried = true;
	if (posix_memalign(&mem, 4096, POOL_BYTES) != 0)
		return;
	if ((ep->ep_mr_mode & FI_MR_LOCAL) &&
	    rpc_mr_reg(ep, mem, POOL_BYTES, FI_READ | FI_WRITE,
		       &ep->ep_pool_mr) != 0) {
		free(mem);
		return;
	}
	ep->ep_pool_free = RPC_BUF_SLOTS == 32 ? UINT32_MAX
					       : (1u << RPC_BUF_SLOTS) - 1;
	/* Read unlocked by rpc_pool_desc(). */
	__atomic_store_n(&ep->ep_pool, (unsigned char *)mem, __ATOMIC_RELEASE);
}

static bool pool_has(const struct rpc_ep *ep, const void *buf)
{
	const unsigned char *p = buf;

	return ep->ep_pool != NULL && p >= ep->ep_pool &&
	       p < ep->ep_pool + POOL_BYTES;
}

void *rpc_buf_get(struct rpc_ep *ep, size_t len)
{
	void *p = NULL;

	if (ep == NULL || len == 0) {
		err_set(-EINVAL, "rpc_buf_get: %s", ep == NULL ? "no endpoint"
							       : "0 bytes");
		return NULL;
	}
	pthread_mutex_lock(&ep->ep_pool_lock);
	if (!ep->ep_pool_tried)
		pool_make(ep);
	if (len <= RPC_BUF_SLOT && ep->ep_pool_free != 0) {
		int i = __builtin_ctz(ep->ep_pool_free);

		ep->ep_pool_free &= ~(1u << i);
		p = ep->ep_pool + (size_t)i * RPC_BUF_SLOT;
		ep->ep_pool_pooled++;
	} else {
		ep->ep_pool_fallback++;
	}
	pthread_mutex_unlock(&ep->ep_pool_lock);
	if (p == NULL && posix_memalign(&p, 4096, len) != 0) {
		err_set(-ENOMEM, "rpc %s: bulk buffer of %zu bytes",
			ep->ep_self, len);
		return NULL;
	}
	return p;
}

void rpc_buf_put(struct rpc_ep *ep, void *buf, bool lost)
{
	bool in;

	if (ep == NULL || buf == NULL)
		return;
	pthread_mutex_lock(&ep->ep_pool_lock);
	in = pool_has(ep, buf);
	if (lost)
		ep->ep_pool_lost++;
	else if (in)
		ep->ep_pool_free |= 1u << (((unsigned char *)buf - ep->ep_pool) /
					   RPC_BUF_SLOT);
	pthread_mutex_unlock(&ep->ep_pool_lock);
	if (!in && !lost)
		free(buf);
}

bool rpc_buf_pooled(struct rpc_ep *ep, const void *buf)
{
	bool in;

	if (ep == NULL)
		return false;
	pthread_mutex_lock(&ep->ep_pool_lock);
	in = pool_has(ep, buf);
	pthread_mutex_unlock(&ep->ep_pool_lock);
	return in;
}

void *rpc_pool_desc(struct rpc_ep *ep, const void *buf, size_t len, bool *in)
{
	const unsigned char *p = buf;
	/* The arena never moves once made: no lock needed to read it, and
	 * a buffer of it can only be known to a caller after it was made. */
	const unsigned char *a = __atomic_load_n(&ep->ep_pool,
						 __ATOMIC_ACQUIRE);

	*in = a != NULL && p >= a && p < a + POOL_BYTES &&
	      len <= POOL_BYTES - (size_t)(p - a);
	return *in && ep->ep_pool_mr != NULL ? fi_mr_desc(ep->ep_pool_mr)
					     : NULL;
}

void rpc_pool_stats(struct rpc_ep *ep, struct rpc_stats *st)
{
	pthread_mutex_lock(&ep->ep_pool_lock);
	st->rs_buf_pooled = ep->ep_pool_pooled;
	st->rs_buf_fallback = ep->ep_pool_fallback;
	st->rs_buf_lost = ep->ep_pool_lost;
	pthread_mutex_unlock(&ep->ep_pool_lock);
}

/* At close, after the endpoint and its CQ are gone: nothing can land. */
void rpc_pool_free(struct rpc_ep *ep)
{
	rpc_mr_close(ep->ep_pool_mr);
	ep->ep_pool_mr = NULL;
	free(ep->ep_pool);
	ep->ep_pool = NULL;
	pthread_mutex_destroy(&ep->ep_pool_lock);
}
