/*
 * tier_ioq.c — tier_io_run: bounded per-device request queues served by
 * small thread pools.
 *
 * Every open device has a ring of LIM_IOQ_DEPTH request slots and, from its
 * first queued request on, LIM_IOQ_THREADS threads that take requests from
 * the ring and run them through tier_dev_read/write/sync (so checks, fault
 * points, model and counters are exactly those of a direct call).  A
 * submitter that finds the ring full waits on it: memory stays bounded
 * whatever the callers do.  A call's requests share a batch on the caller's
 * stack that counts what is left and keeps the message of the failing
 * request with the lowest index (messages are thread-local, so the worker
 * copies its own into the batch and the caller re-raises it).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/log.h"
#include "tiers/tier_internal.h"

/* The requests of one tier_io_run call. */
struct tier_io_batch {
	pthread_mutex_t b_lock;
	pthread_cond_t b_done;    /**< b_left reached 0 */
	struct tier_io *b_ios;    /**< the caller's array */
	uint32_t b_left;          /**< requests not yet finished */
	uint32_t b_err_idx;       /**< lowest failing index, or UINT32_MAX */
	char b_err[LIM_ERRMSG_LEN];
};

/* One queued request. */
struct tier_ioq_item {
	struct tier_io *qi_io;
	struct tier_io_batch *qi_batch;
};

/* A device's queue. */
struct tier_ioq {
	pthread_mutex_t q_lock;
	pthread_cond_t q_nonempty;  /**< an item was queued, or q_stop */
	pthread_cond_t q_nonfull;   /**< a slot was freed */
	struct tier_ioq_item q_ring[LIM_IOQ_DEPTH];
	uint32_t q_head;            /**< oldest item */
	uint32_t q_count;           /**< items queued */
	bool q_started;             /**< threads were started (or tried) */
	bool q_stop;                /**< close: drain and exit */
	uint32_t q_nthreads;
	pthread_t q_threads[LIM_IOQ_THREADS];
	struct tier_dev *q_dev;
};

/* Run one request as tier_dev_read/write/sync would, setting io_rc. */
static void tier_io_one(struct tier_io *io)
{
	switch (io->io_op) {
	case TIO_READ:
		io->io_rc = tier_dev_read(io->io_dev, io->io_off, io->io_buf,
					  io->io_len);
		break;
	case TIO_WRITE:
		io->io_rc = tier_dev_write(io->io_dev, io->io_off, io->io_buf,
					   io->io_len);
		break;
	case TIO_SYNC:
		io->io_rc = tier_dev_sync(io->io_dev);
		break;
	default:
		io->io_rc = err_set(-EINVAL, "device %s: unknown request op %u",
				    io->io_dev->td_path, io->io_op);
		break;
	}
}

/* Count one finished request of b, keeping the calling thread's message
 * when it is the lowest failing index so far. */
static void tier_io_batch_done(struct tier_io_batch *b, struct tier_io *io)
{
	uint32_t idx = (uint32_t)(io - b->b_ios);

	pthread_mutex_lock(&b->b_lock);
	if (io->io_rc != 0 && idx < b->b_err_idx) {
		b->b_err_idx = idx;
		snprintf(b->b_err, sizeof b->b_err, "%s", err_msg());
	}
	if (--b->b_left == 0)
		pthread_cond_broadcast(&b->b_done);
	pthread_mutex_unlock(&b->b_lock);
}

/* A worker: take items until the queue is stopped and empty. */
static void *tier_ioq_worker(void *arg)
{
	struct tier_ioq *q = arg;
	struct tier_ioq_item it;

	for (;;) {
		pthread_mutex_lock(&q->q_lock);
		while (q->q_count == 0 && !q->q_stop)
			pthread_cond_wait(&q->q_nonempty, &q->q_lock);
		if (q->q_count == 0) {
			pthread_mutex_unlock(&q->q_lock);
			break;
		}
		it = q->q_ring[q->q_head];
		q->q_head = (q->q_head + 1) % LIM_IOQ_DEPTH;
		q->q_count--;
		pthread_cond_signal(&q->q_nonfull);
		pthread_mutex_unlock(&q->q_lock);
		tier_io_one(it.qi_io);
		addb_gauge_add(ADDB_DEV_QUEUE, tier_dev_addb(q->q_dev), -1);
		tier_io_batch_done(it.qi_batch, it.qi_io);
	}
	return NULL;
}

/* Start the workers of q (its lock held).  With none started requests run
 * in their submitters instead (see tier_ioq_push). */
static void tier_ioq_start_locked(struct tier_ioq *q)
{
	q->q_started = true;
	for (uint32_t i = 0; i < LIM_IOQ_THREADS; i++) {
		int rc = pthread_create(&q->q_threads[i], NULL,
					tier_ioq_worker, q);

		if (rc != 0) {
			LOG_WARNING("device %s: started %u of %u I/O threads: "
				    "%s", q->q_dev->td_path, i,
				    LIM_IOQ_THREADS, strerror(rc));
			break;
		}
		q->q_nthreads++;
	}
}

/* Queue one item, waiting while the ring is full. */
static void tier_ioq_push(struct tier_ioq *q, struct tier_ioq_item it)
{
	pthread_mutex_lock(&q->q_lock);
	if (!q->q_started)
		tier_ioq_start_locked(q);
	if (q->q_nthreads == 0) {
		pthread_mutex_unlock(&q->q_lock);
		tier_io_one(it.qi_io);
		tier_io_batch_done(it.qi_batch, it.qi_io);
		return;
	}
	while (q->q_count == LIM_IOQ_DEPTH)
		pthread_cond_wait(&q->q_nonfull, &q->q_lock);
	q->q_ring[(q->q_head + q->q_count) % LIM_IOQ_DEPTH] = it;
	q->q_count++;
	addb_gauge_add(ADDB_DEV_QUEUE, tier_dev_addb(q->q_dev), 1);
	pthread_cond_signal(&q->q_nonempty);
	pthread_mutex_unlock(&q->q_lock);
}

/* A queue for d, no threads yet. */
struct tier_ioq *tier_ioq_create(struct tier_dev *d)
{
	struct tier_ioq *q = calloc(1, sizeof *q);

	if (q == NULL)
		return NULL;
	q->q_dev = d;
	pthread_mutex_init(&q->q_lock, NULL);
	pthread_cond_init(&q->q_nonempty, NULL);
	pthread_cond_init(&q->q_nonfull, NULL);
	return q;
}

/* Stop the workers once the ring is empty, join them and free q. */
void tier_ioq_destroy(struct tier_ioq *q)
{
	if (q == NULL)
		return;
	pthread_mutex_lock(&q->q_lock);
	q->q_stop = true;
	pthread_cond_broadcast(&q->q_nonempty);
	pthread_mutex_unlock(&q->q_lock);
	for (uint32_t i = 0; i < q->q_nthreads; i++)
		pthread_join(q->q_threads[i], NULL);
	ASSERT(q->q_count == 0);
	pthread_cond_destroy(&q->q_nonfull);
	pthread_cond_destroy(&q->q_nonempty);
	pthread_mutex_destroy(&q->q_lock);
	free(q);
}

/* Queue every request of the batch on its device's queue; a request
 * without a device fails here. */
static void tier_io_submit(struct tier_io_batch *b, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		struct tier_io *io = &b->b_ios[i];

		if (io->io_dev == NULL) {
			io->io_rc = err_set(-EINVAL, "tier_io_run: request %u "
					    "has no device", i);
			tier_io_batch_done(b, io);
			continue;
		}
		tier_ioq_push(io->io_dev->td_ioq,
			      (struct tier_ioq_item){io, b});
	}
}

/* Run nr requests in parallel and wait for all (see tier.h). */
int tier_io_run(struct tier_io *ios, uint32_t nr)
{
	struct tier_io_batch b = {.b_ios = ios, .b_left = nr,
				  .b_err_idx = UINT32_MAX};
	int rc = 0;

	if (nr == 0)
		return 0;
	PRE(ios != NULL);
	if (nr == 1) {
		if (ios[0].io_dev == NULL)
			return ios[0].io_rc = err_set(-EINVAL, "tier_io_run: "
						      "request 0 has no device");
		tier_io_one(&ios[0]);
		return ios[0].io_rc;
	}
	pthread_mutex_init(&b.b_lock, NULL);
	pthread_cond_init(&b.b_done, NULL);
	tier_io_submit(&b, nr);
	pthread_mutex_lock(&b.b_lock);
	while (b.b_left > 0)
		pthread_cond_wait(&b.b_done, &b.b_lock);
	pthread_mutex_unlock(&b.b_lock);
	if (b.b_err_idx != UINT32_MAX)
		rc = err_set(ios[b.b_err_idx].io_rc, "%s", b.b_err);
	pthread_cond_destroy(&b.b_done);
	pthread_mutex_destroy(&b.b_lock);
	return rc;
}
