/*
 * plugin.h — what the FDMI plugins (fdmi/hsm/, fdmi/attridx/,
 * fdmi/integrity/) share: opening the entities their records name through
 * the public API.  Room "plugins" (scripts/check_layers.sh).
 */
#ifndef STRATA_FDMI_PLUGIN_PLUGIN_H
#define STRATA_FDMI_PLUGIN_PLUGIN_H

#include "clovis/clovis.h"

/** A plugin's store: the embedded one in dir, or (dir NULL) the cluster
 *  of cluster file cluster, in *cl.  0, or 1 after one stderr line
 *  "PROG: DIR-OR-FILE: MESSAGE". */
int plugin_open(const char *prog, const char *dir, const char *cluster,
		struct clovis **cl);
/** The realm of container cont: the default one for 0:1, else *c
 *  initialised and OPEN (*r its realm).  0 or a negative code. */
int plugin_realm_of(struct clovis *cl, const struct clovis_id *cont,
		    struct clovis_container *c, struct clovis_realm **r);
/** Object id of container cont OPEN in *o (c: the container's handle, as
 *  plugin_realm_of()).  0, -ENOENT (gone) or a negative code. */
int plugin_obj_open(struct clovis *cl, const struct clovis_id *id,
		    const struct clovis_id *cont, struct clovis_container *c,
		    struct clovis_obj *o);

#endif
