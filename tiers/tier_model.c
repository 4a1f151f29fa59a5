/*
 * tier_model.c — the device model: latency and bandwidth of a device class
 * emulated over any driver (see struct tier_model in tier.h).
 *
 * Each device keeps one timestamp, td_busy_ns: when the transfers it has
 * accepted so far are done.  A request with a transfer moves it forward by
 * len / bw with a compare-and-swap (so concurrent requests share the
 * bandwidth), and completes a latency after its own transfer ends; the
 * caller then waits until that time (sleeps, and spins the last
 * TM_SPIN_NS: see tier_model_wait).  With the model
 * off the cost is one load and a branch per request.
 */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "core/log.h"
#include "tiers/tier_internal.h"

#define TM_NS_PER_S 1000000000ull
/* The last part of a modelled wait is spun, not slept (tier_model_wait):
 * longer than a sleep's overshoot with a 1 ns timer slack on the machines
 * we measured (about 35 us). */
#define TM_SPIN_NS 60000ull

/* A polite busy-wait step. */
static inline void tier_model_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Monotonic time in nanoseconds. */
static uint64_t tier_model_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * TM_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds to move len bytes at bw bytes per second (0 = unlimited),
 * computed in 128 bits so that no length overflows. */
static uint64_t tier_model_xfer(size_t len, uint64_t bw)
{
	if (bw == 0 || len == 0)
		return 0;
	return (uint64_t)((unsigned __int128)len * TM_NS_PER_S / bw);
}

/* Advance the device's busy time by xfer from no earlier than now; return
 * the end of this request's transfer. */
static uint64_t tier_model_take(struct tier_dev *d, uint64_t now,
				uint64_t xfer)
{
	uint64_t busy = __atomic_load_n(&d->td_busy_ns, __ATOMIC_RELAXED);
	uint64_t end;

	do
		end = (busy > now ? busy : now) + xfer;
	while (!__atomic_compare_exchange_n(&d->td_busy_ns, &busy, end, false,
					    __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
	return end;
}

/* Device time for one request (see tier_internal.h).  A sync waits for
 * every accepted transfer and then its own latency. */
uint64_t tier_model_begin(struct tier_dev *d, enum tier_model_op op,
			  size_t len)
{
	const struct tier_model *m = &d->td_model;
	uint64_t now, busy;

	if (!__atomic_load_n(&d->td_model_on, __ATOMIC_RELAXED))
		return 0;
	now = tier_model_now();
	switch (op) {
	case TM_READ:
		return tier_model_take(d, now,
				       tier_model_xfer(len, m->tm_read_bw)) +
		       m->tm_read_lat_ns;
	case TM_WRITE:
		return tier_model_take(d, now,
				       tier_model_xfer(len, m->tm_write_bw)) +
		       m->tm_write_lat_ns;
	default:
		busy = __atomic_load_n(&d->td_busy_ns, __ATOMIC_RELAXED);
		return (busy > now ? busy : now) + m->tm_sync_lat_ns;
	}
}

/*
 * Wait until done (CLOCK_MONOTONIC ns).  A timed sleep on this kind of
 * machine overshoots by tens of microseconds: 50 us of default timer slack
 * plus the wake-up (a 1 us sleep returned after 96 us on average on the
 * VM of docs/performance.md, 35 us with a 1 ns slack).  So the thread's
 * slack is set to 1 ns once, it sleeps until TM_SPIN_NS before the end,
 * and spins the rest: a modelled 1 us NVRAM op takes about 1 us, not
 * 100.  The spin is bounded by TM_SPIN_NS per op and happens only with
 * the model on (it is off by default).
 */
void tier_model_wait(uint64_t done)
{
	static __thread bool slack_set;
	struct timespec ts;
	uint64_t now;

	if (done == 0)
		return;
	if (!slack_set) {
		(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
		slack_set = true;
	}
	now = tier_model_now();
	if (done > now + TM_SPIN_NS) {
		uint64_t wake = done - TM_SPIN_NS;

		ts.tv_sec = (time_t)(wake / TM_NS_PER_S);
		ts.tv_nsec = (long)(wake % TM_NS_PER_S);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
	}
	while (tier_model_now() < done)
		tier_model_relax();
}

/*
 * Class figures.  Sources and reasoning:
 *
 *  - NVRAM: Intel Optane DC persistent memory as measured by Izraelevitz
 *    et al., "Basic Performance Measurements of the Intel Optane DC
 *    Persistent Memory Module" (2019): random read latency about 300 ns,
 *    a store reaches the persistence domain in about 100 ns; one module
 *    reads about 6.6 GB/s and writes about 2.3 GB/s.  A drain is a fence:
 *    no separate sync cost.
 *  - Flash: a data-centre TLC NVMe drive (vendor data sheets of the class,
 *    e.g. 4 KiB random read around 80 µs at queue depth 1, writes
 *    acknowledged from the power-loss-protected DRAM cache in about 20 µs),
 *    about 2 GB/s read and 1 GB/s sustained write per drive.  A flush is
 *    cheap with power-loss protection: 20 µs.
 *  - SAS: a 10k rpm disk: about 3 ms average seek plus 3 ms half rotation
 *    gives 6 ms per random request; a cache flush costs a rotation and a
 *    seek (8 ms); outer-track sequential transfer about 200 MB/s.
 *  - SMR: a host-managed shingled disk reads like a SAS disk but writes
 *    whole shingled bands sequentially with a wider head; sustained writes
 *    of drive-managed and host-managed parts are measured at 100-180 MB/s,
 *    so 120 MB/s; latency of a 7.2k rpm spindle (8 ms).
 */
void tier_model_default(uint32_t tier, struct tier_model *out)
{
	memset(out, 0, sizeof *out);
	switch (tier) {
	case ST_TIER_NVRAM:
		*out = (struct tier_model){.tm_read_lat_ns = 300,
					   .tm_write_lat_ns = 100,
					   .tm_read_bw = 6600000000ull,
					   .tm_write_bw = 2300000000ull};
		break;
	case ST_TIER_FLASH:
		*out = (struct tier_model){.tm_read_lat_ns = 80000,
					   .tm_write_lat_ns = 20000,
					   .tm_sync_lat_ns = 20000,
					   .tm_read_bw = 2000000000ull,
					   .tm_write_bw = 1000000000ull};
		break;
	case ST_TIER_SAS:
		*out = (struct tier_model){.tm_read_lat_ns = 6000000,
					   .tm_write_lat_ns = 6000000,
					   .tm_sync_lat_ns = 8000000,
					   .tm_read_bw = 200000000ull,
					   .tm_write_bw = 200000000ull};
		break;
	case ST_TIER_SMR:
		*out = (struct tier_model){.tm_read_lat_ns = 8000000,
					   .tm_write_lat_ns = 8000000,
					   .tm_sync_lat_ns = 8000000,
					   .tm_read_bw = 200000000ull,
					   .tm_write_bw = 120000000ull};
		break;
	default:
		break;
	}
}

/* Install m on d, or turn the model off.  Not concurrent with I/O on d
 * (see tier.h): the busy time restarts from now. */
void tier_dev_model_set(struct tier_dev *d, const struct tier_model *m)
{
	PRE(d != NULL);
	__atomic_store_n(&d->td_model_on, false, __ATOMIC_RELAXED);
	if (m == NULL) {
		memset(&d->td_model, 0, sizeof d->td_model);
		return;
	}
	d->td_model = *m;
	__atomic_store_n(&d->td_busy_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&d->td_model_on, true, __ATOMIC_RELEASE);
}

/* True when d runs under a model. */
bool tier_dev_model_on(const struct tier_dev *d)
{
	return __atomic_load_n(&d->td_model_on, __ATOMIC_ACQUIRE);
}
