/*
 * ent.c — entities: containers, objects and indices.  CREATE, DELETE and
 * SETATTR go through the group commit; OPEN and GETATTR read.
 *
 * Ids are unique across types.  Every entity but a container has a member
 * record under its container (table member), which listing walks; a
 * container's member record sits under the null id.
 */
#include <errno.h>
#include <string.h>

#include "core/engine.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "core/log.h"

/* "an object", "an index", "a container". */
static const char *type_article(uint32_t t)
{
	return t == ST_ET_CONTAINER ? "a" : "an";
}

static const char *type_name(uint32_t t)
{
	switch (t) {
	case ST_ET_CONTAINER:
		return "container";
	case ST_ET_OBJ:
		return "object";
	case ST_ET_IDX:
		return "index";
	default:
		return "entity";
	}
}

/* Read the entity of r and check its type; -ENOENT with a message. */
static int ent_get_typed(struct eng *e, MDB_txn *txn, struct eng_req *r,
			 struct meta_ent *cur)
{
	int rc = meta_ent_get(txn, eng_meta(e), &r->er_id, cur);

	if (rc == -ENOENT)
		return err_set(-ENOENT, "%s %s does not exist",
			       type_name(r->er_type), eng_id_str(&r->er_id));
	if (rc == 0 && cur->me_type != r->er_type)
		return err_set(-ENOENT, "%s %s does not exist (that id is %s %s)",
			       type_name(r->er_type), eng_id_str(&r->er_id),
			       type_article(cur->me_type),
			       type_name(cur->me_type));
	return rc;
}

int ent_check(struct eng *e, MDB_txn *txn, struct eng_req *r,
	      struct meta_ent *cur)
{
	int rc = ent_get_typed(e, txn, r, cur);

	if (rc == 0 && cur->me_ctime_ns != r->er_ent.me_ctime_ns)
		return err_set(-ENOENT, "%s %s was deleted (and made again) "
			       "since this handle opened it",
			       type_name(r->er_type), eng_id_str(&r->er_id));
	return rc;
}

static int member_put(struct eng *e, MDB_txn *txn,
		      const struct st_id *cont, uint32_t type,
		      const struct st_id *id, bool del)
{
	uint8_t kb[META_MEMBER_KEY_LEN];
	MDB_val k = meta_member_key(kb, cont, type, id), v = {0, ""};
	int rc = del ? meta_mdel(eng_meta(e), txn, eng_meta(e)->m_member, &k,
			       NULL)
		     : meta_mput(eng_meta(e), txn, eng_meta(e)->m_member, &k,
				 &v, 0);

	return rc == 0 ? 0 : meta_err(rc, "member record");
}

/* Does container cont hold anything? */
static int container_empty(struct eng *e, MDB_txn *txn,
			   const struct st_id *cont)
{
	uint8_t kb[META_MEMBER_KEY_LEN];
	struct st_id zero = {0, 0};
	MDB_val k = meta_member_key(kb, cont, 0, &zero), v;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, eng_meta(e)->m_member, &cur);

	if (rc != 0)
		return meta_err(rc, "member cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == 0 && memcmp(k.mv_data, kb, 16) == 0)
		rc = err_set(-ENOTEMPTY, "container %s is not empty",
			     eng_id_str(cont));
	else if (rc == MDB_NOTFOUND || rc == 0)
		rc = 0;
	else
		rc = meta_err(rc, "member walk");
	mdb_cursor_close(cur);
	return rc;
}

static int ent_create_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct st_id root = {0, 0};
	struct meta_ent cur;
	int rc = meta_ent_get(txn, eng_meta(e), &r->er_id, &cur);

	if (rc == 0)
		return err_set(-EEXIST, "%s %s: id already used by %s %s",
			       type_name(r->er_type), eng_id_str(&r->er_id),
			       type_article(cur.me_type), type_name(cur.me_type));
	if (rc != -ENOENT)
		return rc;
	if (r->er_type != ST_ET_CONTAINER) {
		rc = meta_ent_get(txn, eng_meta(e), &r->er_container, &cur);
		if (rc == -ENOENT || (rc == 0 && cur.me_type != ST_ET_CONTAINER))
			return err_set(-ENOENT, "%s %s: container %s does not "
				       "exist", type_name(r->er_type),
				       eng_id_str(&r->er_id),
				       eng_id_str(&r->er_container));
		if (rc != 0)
			return rc;
	}
	ci->ci_hard = true;
	rc = meta_ent_put(txn, eng_meta(e), &r->er_id, &r->er_ent);
	if (rc == 0)
		rc = member_put(e, txn, r->er_type == ST_ET_CONTAINER ?
				&root : &r->er_container, r->er_type,
				&r->er_id, false);
	if (rc == 0)
		rc = eng_fdmi_req(e, txn, r, FDMI_OBJ_CREATE, &r->er_ent);
	ci->ci_hard = rc != 0;
	return rc;
}

/* Remove what the entity owns: maps, records, or nothing (containers). */
static int ent_delete_contents(struct eng *e, MDB_txn *txn, struct eng_req *r)
{
	switch (r->er_type) {
	case ST_ET_OBJ:
		return obj_delete_maps(e, txn, &r->er_id, &r->er_ci.ci_freed);
	case ST_ET_IDX:
		return idx_delete_records(e, txn, &r->er_id);
	default:
		return 0;
	}
}

static int ent_delete_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct st_id root = {0, 0}, dflt = ST_ID_DEFAULT_CONTAINER;
	struct meta_ent cur;
	uint8_t kb[16];
	MDB_val k = meta_ent_key(kb, &r->er_id);
	int rc = ent_get_typed(e, txn, r, &cur);

	if (rc == 0 && r->er_type == ST_ET_CONTAINER &&
	    st_id_cmp(&r->er_id, &dflt) == 0)
		rc = err_set(-EPERM, "the default container cannot be deleted");
	if (rc == 0 && r->er_type == ST_ET_CONTAINER)
		rc = container_empty(e, txn, &r->er_id);
	if (rc != 0)
		return rc;
	ci->ci_hard = true;
	rc = ent_delete_contents(e, txn, r);
	if (rc == 0)
		rc = member_put(e, txn, r->er_type == ST_ET_CONTAINER ?
				&root : &cur.me_container, r->er_type,
				&r->er_id, true);
	if (rc == 0) {
		rc = meta_mdel(eng_meta(e), txn, eng_meta(e)->m_ent, &k, NULL);
		rc = rc == 0 ? 0 : meta_err(rc, "delete entity");
	}
	if (rc == 0)
		rc = eng_fdmi_req(e, txn, r, FDMI_OBJ_DELETE, &cur);
	ci->ci_hard = rc != 0;
	return rc;
}

static int ent_setattr_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct meta_ent cur;
	int rc = ent_check(e, txn, r, &cur);

	if (rc != 0)
		return rc;
	cur.me_size_bytes = r->er_ent.me_size_bytes;
	cur.me_flags |= ME_SIZE_BYTES_SET;
	cur.me_mtime_ns = eng_now_ns();
	r->er_ent = cur;
	rc = meta_ent_put(txn, eng_meta(e), &r->er_id, &cur);
	if (rc == 0)
		rc = eng_fdmi_req(e, txn, r, FDMI_SETATTR, &cur);
	ci->ci_hard = rc != 0;
	return rc;
}

/* Fill the new entity's record: times, and placement for objects. */
static int ent_create_prepare(struct eng *e, struct eng_req *r)
{
	struct meta_ent *me = &r->er_ent;

	me->me_version = META_FORMAT_VERSION;
	me->me_type = r->er_type;
	me->me_container = r->er_container;
	me->me_ctime_ns = me->me_mtime_ns = eng_now_ns();
	me->me_size_blocks = me->me_size_bytes = me->me_nr_records = 0;
	me->me_flags = 0;
	if (r->er_type == ST_ET_OBJ) {
		struct layout l;
		int rc;

		if (me->me_layout == 0) {
			uint32_t tier = me->me_tier;

			eng_default_layout(e, &r->er_container, me);
			if (me->me_layout == ST_LAYOUT_PLAIN)
				me->me_tier = tier; /* the caller's tier */
		}
		if (me->me_layout == ST_LAYOUT_COMPOSITE) {
			me->me_tier = me->me_dev = me->me_pool = 0;
			me->me_n = me->me_k = me->me_s = me->me_unit_shift = 0;
			return 0;
		}
		if (stripe_layout(me->me_layout)) {
			me->me_tier = 0;
			me->me_dev = 0;
			return eng_unit_attr_check(e, &r->er_id, me);
		}
		me->me_pool = me->me_n = me->me_k = me->me_s = 0;
		me->me_unit_shift = 0;
		const struct st_id sid = st_id_of(&r->er_id);

		rc = layout_place(&l, me->me_layout, me->me_tier, eng_pool(e),
				  &sid);
		if (rc != 0)
			return err_set(rc, "object %s: %s", eng_id_str(&r->er_id),
				       err_msg());
		me->me_dev = l.ly_dev;
	}
	return 0;
}

/* OPEN, GETATTR: read the record into r->er_ent. */
static int ent_read(struct eng *e, struct eng_req *r)
{
	MDB_txn *txn;
	struct meta_ent cur;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = r->er_kind == ER_ENT_OPEN ? ent_get_typed(e, txn, r, &cur)
				       : ent_check(e, txn, r, &cur);
	mdb_txn_abort(txn);
	if (rc == 0)
		r->er_ent = cur;
	return rc;
}

int ent_exec(struct eng *e, struct eng_req *r)
{
	int rc = 0;

	switch (r->er_kind) {
	case ER_ENT_OPEN:
	case ER_ENT_GETATTR:
		return ent_read(e, r);
	case ER_ENT_CREATE:
		r->er_ci.ci_apply = ent_create_apply;
		rc = ent_create_prepare(e, r);
		break;
	case ER_ENT_DELETE:
		r->er_ci.ci_apply = ent_delete_apply;
		break;
	case ER_ENT_SETATTR:
		r->er_ci.ci_apply = ent_setattr_apply;
		break;
	default:
		return err_set(-EINVAL, "unknown request kind %u", r->er_kind);
	}
	if (rc != 0)
		return rc;
	eng_commit_submit(e, &r->er_ci);
	return ENG_PENDING;
}
