/*
 * cluster_none.c — the cluster-mode backend when the RPC layer (core/rpc)
 * is not part of the build: every entry point refuses with -ENOTSUP and a
 * message, so embedded mode builds and works alone.  clovis/module.mk
 * picks clovis/cluster.c instead as soon as core/rpc has sources.
 */
#include <errno.h>

#include "clovis/clovis_internal.h"
#include "core/errors.h"

static int none(void)
{
	return err_set(-ENOTSUP, "cluster mode: this library was built "
		       "without the RPC layer (core/rpc)");
}

int cluster_open(struct clovis *cl, const struct clovis_conf *conf,
		 const char *file)
{
	return none();
}

void cluster_close(struct clovis *cl)
{
}

int exec_cluster(struct clovis *cl, struct eng_req *r)
{
	return none();
}

int cluster_entity_list(struct clovis *cl, struct clovis_realm *r,
			uint32_t type, const struct clovis_id *after,
			struct clovis_id *ids, uint32_t *nr)
{
	return none();
}

int cluster_dev_list(struct clovis *cl, struct clovis_dev_info *info,
		     uint32_t *nr)
{
	return none();
}

int cluster_pool_list(struct clovis *cl, struct clovis_pool_info *info,
		      uint32_t *nr)
{
	return none();
}

int cluster_status(struct clovis *cl, uint32_t s, char *name, size_t nlen,
		   bool *up, uint64_t *uptime_ms, uint64_t *requests,
		   uint64_t *bad)
{
	return none();
}

uint32_t cluster_nr_servers(struct clovis *cl)
{
	return 0;
}
