/*
 * gateways/s3/s3_store_internal.h — what the files of the gateway's store
 * share, and only they: s3_store.c, s3_store_tx.c and s3_store_io.c.  Each
 * function is described above its definition.
 */
#ifndef STRATA_S3_STORE_INTERNAL_H
#define STRATA_S3_STORE_INTERNAL_H

#include "gateways/s3/s3.h"

/* s3_store.c: ids in records, entity ops, the janitor, in-flight keys. */
void s3_put_id(uint8_t *p, const struct clovis_id *id);
void s3_get_id(const uint8_t *p, struct clovis_id *id);
int s3_entity_sync(struct clovis_entity *e, enum clovis_entity_opcode oc);
void s3_jan_add(struct s3_bucket *b, const struct clovis_id *id,
		bool obj);
size_t s3_inflight_key(const struct clovis_id *id, uint8_t *out);
int s3_obj_delete(struct clovis_container *c, const struct clovis_id *id);
uint32_t s3_orec_ids(const struct s3_orec *r, uint32_t k,
		     struct clovis_id *id);

/* s3_store_tx.c: the settle thread. */
void s3_settle_stop(void);

#endif
