/*
 * plugin.c — helpers the FDMI plugins share (plugin.h).
 */
#include <stdio.h>

#include "fdmi/plugin/plugin.h"

int plugin_open(const char *prog, const char *dir, const char *cluster,
		struct clovis **cl)
{
	struct clovis_conf cc = {0};

	if (dir != NULL) {
		cc.cc_mode = CLOVIS_MODE_EMBEDDED;
		cc.cc_data_dir = dir;
	} else {
		cc.cc_mode = CLOVIS_MODE_CLUSTER;
		cc.cc_cluster_conf = cluster;
	}
	if (clovis_init(cl, &cc) == 0)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", prog, dir ? dir : cluster,
		clovis_errmsg());
	return 1;
}

int plugin_realm_of(struct clovis *cl, const struct clovis_id *cont,
		    struct clovis_container *c, struct clovis_realm **r)
{
	struct clovis_op *op = NULL;
	int rc;

	if (cont->ci_hi == 0 && cont->ci_lo == 1) {
		*r = clovis_default_realm(cl);
		return 0;
	}
	rc = clovis_container_init(c, cl, cont);
	if (rc == 0)
		rc = clovis_entity_op(&c->co_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op); /* frees op */
	*r = &c->co_realm;
	return rc;
}

int plugin_obj_open(struct clovis *cl, const struct clovis_id *id,
		    const struct clovis_id *cont, struct clovis_container *c,
		    struct clovis_obj *o)
{
	struct clovis_realm *r;
	struct clovis_op *op = NULL;
	int rc = plugin_realm_of(cl, cont, c, &r);

	if (rc == 0)
		rc = clovis_obj_init(o, r, id, NULL);
	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op); /* frees op */
	return rc;
}
