/*
 * hlc.c — the hybrid logical clock and transaction ids (dtm.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/errors.h"
#include "dtm/dtm.h"

/* The last value handed out or observed. */
static uint64_t hlc_last;

static uint64_t hlc_phys(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000ull +
		(uint64_t)ts.tv_nsec / 1000) << DTM_HLC_LOGICAL_BITS;
}

uint64_t dtm_hlc_now(void)
{
	uint64_t phys = hlc_phys();
	uint64_t last = __atomic_load_n(&hlc_last, __ATOMIC_RELAXED), next;

	do {
		next = phys > last ? phys : last + 1;
	} while (!__atomic_compare_exchange_n(&hlc_last, &last, next, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return next;
}

void dtm_hlc_observe(uint64_t remote)
{
	uint64_t last = __atomic_load_n(&hlc_last, __ATOMIC_RELAXED);

	while (remote > last &&
	       !__atomic_compare_exchange_n(&hlc_last, &last, remote, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
}

void dtm_id_make(struct st_dtx_id *id, uint32_t node)
{
	id->di_hlc = dtm_hlc_now();
	id->di_node = node;
	id->di_pad = 0;
}

int dtm_id_cmp(const struct st_dtx_id *a, const struct st_dtx_id *b)
{
	if (a->di_hlc != b->di_hlc)
		return a->di_hlc < b->di_hlc ? -1 : 1;
	if (a->di_node != b->di_node)
		return a->di_node < b->di_node ? -1 : 1;
	return 0;
}

char *dtm_id_format(const struct st_dtx_id *id, char *buf)
{
	snprintf(buf, DTM_ID_STR_LEN, "%" PRIx32 ":%" PRIx64, id->di_node,
		 id->di_hlc);
	return buf;
}

int dtm_id_parse(const char *s, struct st_dtx_id *id)
{
	unsigned long long node, hlc;
	char *end;

	if (s == NULL)
		return err_set(-EINVAL, "dtx id: NULL");
	errno = 0;
	node = strtoull(s, &end, 16);
	if (errno != 0 || end == s || *end != ':' || node > UINT32_MAX)
		return err_set(-EINVAL, "dtx id '%s': expected NODE:HLC in hex",
			       s);
	s = end + 1;
	hlc = strtoull(s, &end, 16);
	if (errno != 0 || end == s || *end != '\0')
		return err_set(-EINVAL, "dtx id '%s': expected NODE:HLC in hex",
			       s);
	id->di_node = (uint32_t)node;
	id->di_hlc = hlc;
	id->di_pad = 0;
	return 0;
}
