/*
 * cli_fdmi.c — FDMI in cluster mode: the clovis_fdmi_* calls on every
 * server of the cluster (see clovis/fdmi.c).
 */
#include <errno.h>

#include "clovis/clovis_internal.h"
#include "core/errors.h"

static int not_yet(const char *fn)
{
	return err_set(-ENOTSUP, "%s: FDMI in cluster mode is not built yet",
		       fn);
}

int cluster_fdmi_sub(struct clovis *cl, const char *name, const char *filter,
		     uint64_t max_bytes, uint64_t max_age_ms, uint32_t flags)
{
	return not_yet("clovis_fdmi_sub");
}

int cluster_fdmi_unsub(struct clovis *cl, const char *name)
{
	return not_yet("clovis_fdmi_unsub");
}

int cluster_fdmi_list(struct clovis *cl, struct clovis_fdmi_sub *out,
		      uint32_t max, uint32_t *nr)
{
	return not_yet("clovis_fdmi_list");
}

int cluster_fdmi_next(struct clovis *cl, const char *name, uint32_t max,
		      struct clovis_fdmi_batch **out)
{
	return not_yet("clovis_fdmi_next");
}

int cluster_fdmi_ack(struct clovis *cl, const char *name,
		     const struct clovis_fdmi_batch *b)
{
	return not_yet("clovis_fdmi_ack");
}

int cluster_fdmi_reset(struct clovis *cl, const char *name)
{
	return not_yet("clovis_fdmi_reset");
}
