/* meta.c — the LMDB metadata store (see meta.h). */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/meta.h"

int meta_err(int mdb_rc, const char *what)
{
	int rc;

	switch (mdb_rc) {
	case 0:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
		rc = -ENOSPC;
		break;
	case MDB_INVALID:
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
		rc = -CLOVIS_ECORRUPT;
		break;
	case MDB_VERSION_MISMATCH:
		rc = -CLOVIS_EVERSION;
		break;
	case MDB_READERS_FULL:
	case MDB_TXN_FULL:
	case MDB_CURSOR_FULL:
		rc = -EAGAIN;
		break;
	case MDB_BAD_VALSIZE:
		rc = -E2BIG;
		break;
	default:
		rc = mdb_rc > 0 ? -mdb_rc : -EIO;
		break;
	}
	LOG_ERROR("metadata: %s: %s", what, mdb_strerror(mdb_rc));
	return err_set(rc, "metadata %s: %s", what, mdb_strerror(mdb_rc));
}

/* Open the five tables in one write transaction. */
static int meta_tables_open(struct meta *m, bool create)
{
	MDB_txn *txn;
	unsigned fl = create ? MDB_CREATE : 0;
	int rc;

	rc = mdb_txn_begin(m->m_env, NULL, 0, &txn);
	if (rc != 0)
		return meta_err(rc, "begin");
	if ((rc = mdb_dbi_open(txn, "sys", fl, &m->m_sys)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ent", fl, &m->m_ent)) != 0 ||
	    (rc = mdb_dbi_open(txn, "member", fl, &m->m_member)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ext", fl, &m->m_ext)) != 0 ||
	    (rc = mdb_dbi_open(txn, "idx", fl, &m->m_idx)) != 0 ||
	    (rc = mdb_dbi_open(txn, "unit", fl, &m->m_unit)) != 0 ||
	    (rc = mdb_dbi_open(txn, "layer", fl, &m->m_layer)) != 0) {
		mdb_txn_abort(txn);
		if (rc == MDB_NOTFOUND)
			return err_set(-CLOVIS_ECORRUPT,
				       "metadata: a table is missing");
		return meta_err(rc, "open tables");
	}
	rc = mdb_txn_commit(txn);
	return rc == 0 ? 0 : meta_err(rc, "commit table creation");
}

int meta_open(struct meta *m, const char *dir, uint64_t map_size, bool create)
{
	char path[4096];
	struct stat st;
	int rc;

	memset(m, 0, sizeof *m);
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	if (stat(path, &st) != 0 && !create)
		return err_set(-ENOENT, "metadata %s: no such file", path);
	if (create && mkdir(dir, 0755) != 0 && errno != EEXIST)
		return err_set(-errno, "metadata directory %s: %s", dir,
			       strerror(errno));
	rc = mdb_env_create(&m->m_env);
	if (rc != 0)
		return meta_err(rc, "create environment");
	mdb_env_set_maxdbs(m->m_env, 8);
	mdb_env_set_maxreaders(m->m_env, 256);
	mdb_env_set_mapsize(m->m_env, map_size);
	/* NOMETASYNC: a commit syncs its data pages but not its meta page;
	 * the next commit's sync (or mdb_env_sync) makes it durable.  The
	 * engine reports STABLE only then (engine.c, commit_make_stable). */
	rc = mdb_env_open(m->m_env, dir,
			  MDB_NOTLS | MDB_NORDAHEAD | MDB_NOMETASYNC, 0644);
	if (rc != 0) {
		rc = meta_err(rc, dir);
		goto out_close;
	}
	m->m_maxkey = (uint32_t)mdb_env_get_maxkeysize(m->m_env);
	rc = meta_tables_open(m, create);
	if (rc != 0)
		goto out_close;
	pthread_mutex_init(&m->m_rlock, NULL);
	return 0;
out_close:
	mdb_env_close(m->m_env);
	m->m_env = NULL;
	return rc;
}

void meta_close(struct meta *m)
{
	if (m->m_env == NULL)
		return;
	for (uint32_t i = 0; i < m->m_rnr; i++)
		mdb_txn_abort(m->m_rtxn[i]);
	m->m_rnr = 0;
	pthread_mutex_destroy(&m->m_rlock);
	mdb_env_close(m->m_env);
	m->m_env = NULL;
}

int meta_rtxn_get(struct meta *m, MDB_txn **txn)
{
	MDB_txn *t = NULL;
	int rc;

	pthread_mutex_lock(&m->m_rlock);
	if (m->m_rnr > 0)
		t = m->m_rtxn[--m->m_rnr];
	pthread_mutex_unlock(&m->m_rlock);
	if (t != NULL) {
		rc = mdb_txn_renew(t);
		if (rc == 0) {
			*txn = t;
			return 0;
		}
		mdb_txn_abort(t);
	}
	rc = mdb_txn_begin(m->m_env, NULL, MDB_RDONLY, txn);
	return rc == 0 ? 0 : meta_err(rc, "begin read");
}

void meta_rtxn_put(struct meta *m, MDB_txn *txn)
{
	mdb_txn_reset(txn);
	pthread_mutex_lock(&m->m_rlock);
	if (m->m_rnr < META_RTXN_CACHE) {
		m->m_rtxn[m->m_rnr++] = txn;
		txn = NULL;
	}
	pthread_mutex_unlock(&m->m_rlock);
	if (txn != NULL)
		mdb_txn_abort(txn);
}

void meta_id_enc(uint8_t out[16], const struct clovis_id *id)
{
	uint64_t hi = htobe64(id->ci_hi), lo = htobe64(id->ci_lo);

	memcpy(out, &hi, 8);
	memcpy(out + 8, &lo, 8);
}

void meta_id_dec(const uint8_t in[16], struct clovis_id *id)
{
	uint64_t hi, lo;

	memcpy(&hi, in, 8);
	memcpy(&lo, in + 8, 8);
	id->ci_hi = be64toh(hi);
	id->ci_lo = be64toh(lo);
}

MDB_val meta_ent_key(uint8_t buf[16], const struct clovis_id *id)
{
	meta_id_enc(buf, id);
	return (MDB_val){.mv_size = META_ID_LEN, .mv_data = buf};
}

MDB_val meta_member_key(uint8_t buf[33], const struct clovis_id *cont,
			uint32_t type, const struct clovis_id *id)
{
	meta_id_enc(buf, cont);
	buf[16] = (uint8_t)type;
	meta_id_enc(buf + 17, id);
	return (MDB_val){.mv_size = META_MEMBER_KEY_LEN, .mv_data = buf};
}

MDB_val meta_ext_key(uint8_t buf[24], const struct clovis_id *obj,
		     uint64_t blk)
{
	uint64_t b = htobe64(blk);

	meta_id_enc(buf, obj);
	memcpy(buf + 16, &b, 8);
	return (MDB_val){.mv_size = META_EXT_KEY_LEN, .mv_data = buf};
}

uint64_t meta_ext_key_blk(const MDB_val *key)
{
	uint64_t b;

	memcpy(&b, (const uint8_t *)key->mv_data + 16, 8);
	return be64toh(b);
}

MDB_val meta_idx_key(uint8_t *buf, const struct clovis_id *idx,
		     const void *key, size_t klen)
{
	meta_id_enc(buf, idx);
	if (klen > 0)
		memcpy(buf + 16, key, klen);
	return (MDB_val){.mv_size = 16 + klen, .mv_data = buf};
}

int meta_ent_get(MDB_txn *txn, struct meta *m, const struct clovis_id *id,
		 struct meta_ent *out)
{
	uint8_t kb[16];
	MDB_val k = meta_ent_key(kb, id), v;
	int rc = mdb_get(txn, m->m_ent, &k, &v);

	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc != 0)
		return meta_err(rc, "read entity");
	if (v.mv_size != sizeof *out)
		return err_set(-CLOVIS_ECORRUPT,
			       "entity %016llx:%016llx: record of %zu bytes",
			       (unsigned long long)id->ci_hi,
			       (unsigned long long)id->ci_lo, v.mv_size);
	memcpy(out, v.mv_data, sizeof *out);
	return 0;
}

int meta_ent_put(MDB_txn *txn, struct meta *m, const struct clovis_id *id,
		 const struct meta_ent *me)
{
	uint8_t kb[16];
	MDB_val k = meta_ent_key(kb, id);
	MDB_val v = {.mv_size = sizeof *me, .mv_data = (void *)me};
	int rc = mdb_put(txn, m->m_ent, &k, &v, 0);

	return rc == 0 ? 0 : meta_err(rc, "write entity");
}

int meta_sys_get(MDB_txn *txn, struct meta *m, const char *name, void *buf,
		 size_t len)
{
	MDB_val k = {.mv_size = strlen(name), .mv_data = (void *)name}, v;
	int rc = mdb_get(txn, m->m_sys, &k, &v);

	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc != 0)
		return meta_err(rc, name);
	if (v.mv_size != len)
		return err_set(-CLOVIS_ECORRUPT, "metadata sys/%s: %zu bytes, "
			       "expected %zu", name, v.mv_size, len);
	memcpy(buf, v.mv_data, len);
	return 0;
}

int meta_sys_put(MDB_txn *txn, struct meta *m, const char *name,
		 const void *buf, size_t len)
{
	MDB_val k = {.mv_size = strlen(name), .mv_data = (void *)name};
	MDB_val v = {.mv_size = len, .mv_data = (void *)buf};
	int rc = mdb_put(txn, m->m_sys, &k, &v, 0);

	return rc == 0 ? 0 : meta_err(rc, name);
}
