/*
 * gateways/posix/ns_xattr.c — extended attributes of the POSIX namespace
 * (ns.h): the xattr index (ino + name -> value), the block-size attribute
 * kept in the inode record (NS_XATTR_BLOCK_SIZE), and statfs.  Split out
 * of ns.c, whose helpers (index reads, walks, locks, dtx) it shares
 * through ns_internal.h.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/posix/ns_internal.h"

/* --------------------------------------------------------------- xattrs */

static int ns_xattr_name_check(const char *name)
{
	size_t n;

	if (name == NULL || name[0] == '\0')
		return ns_err(-EINVAL, "xattr: %s name",
			      name ? "empty" : "NULL");
	n = strnlen(name, NS_XATTR_NAME_MAX + 1);
	if (n > NS_XATTR_NAME_MAX)
		return ns_err(-ENAMETOOLONG, "xattr \"%.40s...\": name longer "
			      "than %u bytes", name, NS_XATTR_NAME_MAX);
	return 0;
}

static size_t ns_xattr_key(uint64_t ino, const char *name, uint8_t *key)
{
	size_t n = strlen(name);

	ns_ino_key(ino, key);
	memcpy(key + NS_INO_KEY, name, n);
	return NS_INO_KEY + n;
}

/* Call fn for each xattr key of ino, in name order. */
static int ns_xattr_walk(struct ns *ns, uint64_t ino,
			 int (*fn)(void *arg, const uint8_t *key, size_t kl),
			 void *arg)
{
	uint8_t prefix[NS_INO_KEY];
	struct ns_walk w;
	bool excl = false, more = true;
	int rc = ns_walk_init(&w, NS_XATTR_PAGE, 0);

	if (rc != 0) {
		ns_walk_fini(&w);
		return rc;
	}
	ns_ino_key(ino, prefix);
	memcpy(w.w_keys, prefix, sizeof prefix);
	w.w_kl[0] = sizeof prefix;
	while (rc == 0 && more) {
		uint32_t k;

		rc = ns_walk_next(&ns->ns_xattrs, &w, w.w_nr, excl);
		if (rc != 0)
			rc = ns_err(rc, "inode %#" PRIx64 ": xattrs: NEXT: %s",
				    ino, clovis_errmsg());
		for (k = 0; rc == 0 && more && k < w.w_nr; k++) {
			more = (w.w_rcs[k] == 0 || w.w_rcs[k] == -ENOBUFS) &&
			       w.w_kl[k] > NS_INO_KEY &&
			       memcmp(w.w_kp[k], prefix, NS_INO_KEY) == 0;
			if (more)
				rc = fn(arg, w.w_kp[k], w.w_kl[k]);
		}
		if (rc == 0 && more)
			ns_walk_restart(&w, w.w_nr - 1);
		excl = true;
	}
	ns_walk_fini(&w);
	return rc;
}

/* Keys gathered for a DEL. */
struct ns_keys {
	uint32_t k_nr, k_cap;
	void **k_p;
	size_t *k_l;
};

static int ns_keys_add(void *arg, const uint8_t *key, size_t kl)
{
	struct ns_keys *ks = arg;

	if (ks->k_nr == ks->k_cap) {
		uint32_t cap = ks->k_cap ? ks->k_cap * 2 : 16;
		void **p = realloc(ks->k_p, cap * sizeof *p);
		size_t *l = p ? realloc(ks->k_l, cap * sizeof *l) : NULL;

		if (p != NULL)
			ks->k_p = p;
		if (l == NULL)
			return ns_err(-ENOMEM, "xattr keys: no memory");
		ks->k_l = l;
		ks->k_cap = cap;
	}
	ks->k_p[ks->k_nr] = malloc(kl);
	if (ks->k_p[ks->k_nr] == NULL)
		return ns_err(-ENOMEM, "xattr keys: no memory");
	memcpy(ks->k_p[ks->k_nr], key, kl);
	ks->k_l[ks->k_nr++] = kl;
	return 0;
}

int ns_tx_xattrs_drop(struct ns_tx *t, uint64_t ino)
{
	struct ns_keys ks = {0};
	int rc = ns_xattr_walk(t->t_ns, ino, ns_keys_add, &ks);

	/* members of at most CLOVIS_VEC_MAX keys and, in cluster mode,
	 * CLOVIS_DTX_MEMBER_RECS_MAX bytes of them (a file with many long
	 * names was not removable: one member of 50 KB refused) */
	for (uint32_t i = 0, n; rc >= 0 && i < ks.k_nr; i += n) {
		size_t bytes = 0;

		for (n = 0; i + n < ks.k_nr && n < CLOVIS_VEC_MAX &&
		     (n == 0 ||
		      bytes + ks.k_l[i + n] <= CLOVIS_DTX_MEMBER_RECS_MAX);
		     n++)
			bytes += ks.k_l[i + n];
		rc = ns_tx_del(t, &t->t_ns->ns_xattrs, ks.k_p + i, ks.k_l + i,
			       n);
	}
	for (uint32_t i = 0; i < ks.k_nr; i++)
		free(ks.k_p[i]);
	free(ks.k_p);
	free(ks.k_l);
	if (rc < 0 && t->t_rc == 0)
		t->t_rc = rc;
	return rc < 0 ? rc : 0;
}

static int ns_xattr_args(struct ns *ns, const char *name, const void *val,
			 size_t size, uint32_t flags)
{
	if (ns == NULL || (val == NULL && size > 0))
		return ns_err(-EINVAL, "setxattr: NULL argument");
	if ((flags & ~(NS_XATTR_CREATE | NS_XATTR_REPLACE)) ||
	    flags == (NS_XATTR_CREATE | NS_XATTR_REPLACE))
		return ns_err(-EINVAL, "setxattr: flags %#x", flags);
	if (size > NS_XATTR_VAL_MAX)
		return ns_err(-E2BIG, "setxattr \"%s\": value of %zu bytes "
			      "(NS_XATTR_VAL_MAX %u)", name ? name : "", size,
			      NS_XATTR_VAL_MAX);
	return ns_xattr_name_check(name);
}

/* Does xattr key exist?  0 yes, -ENODATA (message names it), or error. */
static int ns_xattr_exists(struct ns *ns, uint64_t ino, const char *name,
			   const uint8_t *key, size_t kl)
{
	uint8_t dummy;
	size_t vl = 0;
	int rc = ns_idx_get(&ns->ns_xattrs, key, kl, &dummy, &vl);

	if (rc == -ENOENT)
		return ns_err(-ENODATA, "inode %#" PRIx64 ": no xattr \"%s\"",
			      ino, name);
	return rc == -ENOBUFS ? 0 : rc;
}

/*
 * NS_XATTR_BLOCK_SIZE, kept in the inode record (it_block_shift), not in
 * the xattr index: a directory's is the block size of the files and
 * directories made in it from then on; a regular file's is its data
 * object's, and can change only before its first write (-EBUSY after).
 */
static int ns_bsize_parse(uint64_t ino, const void *val, size_t size,
			  uint32_t *shift)
{
	char b[16];
	unsigned long long v;
	char *end;

	if (size == 0 || size >= sizeof b)
		goto bad;
	memcpy(b, val, size);
	b[size] = 0;
	if (b[size - 1] == '\n')
		b[size - 1] = 0;
	v = strtoull(b, &end, 10);
	if (*end != 0 || v == 0 || (v & (v - 1)) != 0 ||
	    v < (1ull << CLOVIS_UNIT_SHIFT_MIN) ||
	    v > (1ull << CLOVIS_UNIT_SHIFT_MAX))
		goto bad;
	*shift = (uint32_t)__builtin_ctzll(v);
	return 0;
bad:
	return ns_err(-EINVAL, "inode %#" PRIx64 ": xattr \"%s\": a block "
		      "size is a power of two from %u to %u bytes, in decimal",
		      ino, NS_XATTR_BLOCK_SIZE, 1u << CLOVIS_UNIT_SHIFT_MIN,
		      1u << CLOVIS_UNIT_SHIFT_MAX);
}

/* Set (shift) or drop (0) the block size of ino; flags as setxattr's. */
static int ns_bsize_set(struct ns *ns, uint64_t ino, uint32_t shift,
			uint32_t flags)
{
	struct ns_inode_rec r;
	struct ns_lockset ls;
	struct ns_tx t;
	int rc = ns_rw_check(ns, "setxattr");

	if (rc != 0)
		return rc;
	ns_ls_lock_one(ns, &ls, ino, true);
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0 && !S_ISDIR(r.it_mode) && !S_ISREG(r.it_mode))
		rc = ns_err(-EINVAL, "inode %#" PRIx64 ": \"%s\" is for "
			    "directories and regular files", ino,
			    NS_XATTR_BLOCK_SIZE);
	else if (rc == 0 && (flags & NS_XATTR_CREATE) && r.it_block_shift)
		rc = ns_err(-EEXIST, "inode %#" PRIx64 ": xattr \"%s\" "
			    "exists", ino, NS_XATTR_BLOCK_SIZE);
	else if (rc == 0 && (flags & NS_XATTR_REPLACE) && !r.it_block_shift)
		rc = ns_err(-ENODATA, "inode %#" PRIx64 ": no xattr \"%s\"",
			    ino, NS_XATTR_BLOCK_SIZE);
	else if (rc == 0 && S_ISREG(r.it_mode) && (r.it_flags & NS_IF_DATA) &&
		 r.it_block_shift != shift)
		rc = ns_err(-EBUSY, "inode %#" PRIx64 ": a file's block size "
			    "is fixed at its first write (%u bytes)", ino,
			    1u << r.it_block_shift);
	if (rc == 0 && r.it_block_shift != shift) {
		r.it_block_shift = shift;
		r.it_ctime_ns = ns_now_ns();
		ns_tx_init(ns, &t);
		ns_tx_inode_put(&t, ino, &r, NULL, true);
		rc = ns_tx_commit(&t, "setxattr");
	}
	ns_ls_unlock(ns, &ls);
	return rc;
}

int ns_setxattr(struct ns *ns, uint64_t ino, const char *name,
		const void *val, size_t size, uint32_t flags)
{
	uint8_t key[NS_INO_KEY + NS_XATTR_NAME_MAX];
	struct ns_inode_rec r;
	struct ns_lockset ls;
	struct ns_tx t;
	size_t kl;
	int rc = ns_xattr_args(ns, name, val, size, flags);
	uint32_t shift = 0;

	if (rc == 0 && strcmp(name, NS_XATTR_BLOCK_SIZE) == 0) {
		rc = ns_bsize_parse(ino, val, size, &shift);
		return rc != 0 ? rc : ns_bsize_set(ns, ino, shift, flags);
	}
	if (rc == 0)
		rc = ns_rw_check(ns, "setxattr");
	if (rc != 0)
		return rc;
	kl = ns_xattr_key(ino, name, key);
	ns_ls_lock_one(ns, &ls, ino, true);
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0 && (flags & NS_XATTR_REPLACE))
		rc = ns_xattr_exists(ns, ino, name, key, kl);
	if (rc == 0) {
		ns_tx_init(ns, &t);
		ns_tx_put(&t, &ns->ns_xattrs, key, kl, size ? val : "", size,
			  !(flags & NS_XATTR_CREATE));
		rc = ns_tx_commit(&t, "setxattr");
		if (rc == -EEXIST)
			rc = ns_err(-EEXIST, "inode %#" PRIx64 ": xattr \"%s\" "
				    "exists", ino, name);
	}
	if (rc == 0)
		ns_file_touch(ns, ino, false);
	ns_ls_unlock(ns, &ls);
	return rc;
}

ssize_t ns_getxattr(struct ns *ns, uint64_t ino, const char *name, void *buf,
		    size_t size)
{
	uint8_t key[NS_INO_KEY + NS_XATTR_NAME_MAX], dummy;
	struct ns_inode_rec r;
	size_t kl, vl = size;
	int rc;

	if (ns == NULL || (buf == NULL && size > 0))
		return ns_err(-EINVAL, "getxattr: NULL argument");
	rc = ns_xattr_name_check(name);
	if (rc != 0)
		return rc;
	if (strcmp(name, NS_XATTR_BLOCK_SIZE) == 0) {
		char v[16];
		int n;

		rc = ns_inode_get(ns, ino, &r, NULL);
		if (rc != 0)
			return rc;
		if (r.it_block_shift == 0 ||
		    !(S_ISDIR(r.it_mode) || S_ISREG(r.it_mode)))
			return ns_err(-ENODATA, "inode %#" PRIx64 ": no xattr "
				      "\"%s\"", ino, name);
		n = snprintf(v, sizeof v, "%u", 1u << r.it_block_shift);
		if (size == 0)
			return n;
		if (size < (size_t)n)
			return ns_err(-ERANGE, "inode %#" PRIx64 ": xattr "
				      "\"%s\" does not fit %zu bytes", ino,
				      name, size);
		memcpy(buf, v, (size_t)n);
		return n;
	}
	kl = ns_xattr_key(ino, name, key);
	rc = ns_idx_get(&ns->ns_xattrs, key, kl, size ? buf : &dummy, &vl);
	if (rc == -ENOENT) {
		rc = ns_inode_get(ns, ino, &r, NULL);
		return rc != 0 ? rc : ns_err(-ENODATA, "inode %#" PRIx64
					     ": no xattr \"%s\"", ino, name);
	}
	if (rc == -ENOBUFS && size == 0)
		return (ssize_t)vl;
	if (rc == -ENOBUFS)
		return ns_err(-ERANGE, "inode %#" PRIx64 ": xattr \"%s\" of "
			      "%zu bytes does not fit %zu", ino, name, vl,
			      size);
	return rc != 0 ? rc : (ssize_t)vl;
}

/* listxattr's buffer as names are found. */
struct ns_xlist {
	char *xl_buf;
	size_t xl_size, xl_len;
};

static int ns_xlist_add(void *arg, const uint8_t *key, size_t kl)
{
	struct ns_xlist *xl = arg;
	size_t n = kl - NS_INO_KEY;

	if (xl->xl_size > 0 && xl->xl_len + n + 1 <= xl->xl_size) {
		memcpy(xl->xl_buf + xl->xl_len, key + NS_INO_KEY, n);
		xl->xl_buf[xl->xl_len + n] = '\0';
	}
	xl->xl_len += n + 1;
	return 0;
}

ssize_t ns_listxattr(struct ns *ns, uint64_t ino, char *buf, size_t size)
{
	struct ns_xlist xl = {buf, size, 0};
	struct ns_inode_rec r;
	int rc;

	if (ns == NULL || (buf == NULL && size > 0))
		return ns_err(-EINVAL, "listxattr: NULL argument");
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0)
		rc = ns_xattr_walk(ns, ino, ns_xlist_add, &xl);
	if (rc != 0)
		return rc;
	if (size > 0 && xl.xl_len > size)
		return ns_err(-ERANGE, "inode %#" PRIx64 ": xattr names of %zu "
			      "bytes do not fit %zu", ino, xl.xl_len, size);
	return (ssize_t)xl.xl_len;
}

int ns_removexattr(struct ns *ns, uint64_t ino, const char *name)
{
	uint8_t key[NS_INO_KEY + NS_XATTR_NAME_MAX];
	void *kp = key;
	struct ns_inode_rec r;
	struct ns_lockset ls;
	struct ns_tx t;
	size_t kl;
	int rc = ns == NULL ? ns_err(-EINVAL, "removexattr: NULL namespace")
			    : ns_xattr_name_check(name);

	if (rc == 0 && strcmp(name, NS_XATTR_BLOCK_SIZE) == 0)
		return ns_bsize_set(ns, ino, 0, NS_XATTR_REPLACE);

	if (rc == 0)
		rc = ns_rw_check(ns, "removexattr");
	if (rc != 0)
		return rc;
	kl = ns_xattr_key(ino, name, key);
	ns_ls_lock_one(ns, &ls, ino, true);
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0) {
		ns_tx_init(ns, &t);
		ns_tx_del(&t, &ns->ns_xattrs, &kp, &kl, 1);
		rc = ns_tx_commit(&t, "removexattr");
		if (rc == -ENOENT)
			rc = ns_err(-ENODATA, "inode %#" PRIx64 ": no xattr "
				    "\"%s\"", ino, name);
	}
	if (rc == 0)
		ns_file_touch(ns, ino, false);
	ns_ls_unlock(ns, &ls);
	return rc;
}

/* --------------------------------------------------------------- statfs */

/* Capacity and free bytes of the store's devices. */
static int ns_space(struct ns *ns, uint64_t *size, uint64_t *avail)
{
	struct clovis_dev_info *di;
	uint32_t nr = 0, n;
	int rc = clovis_dev_list(ns->ns_cl, NULL, &nr);

	*size = *avail = 0;
	if (rc != 0 || nr == 0)
		return rc != 0 ? ns_err(rc, "statfs: devices: %s",
					clovis_errmsg()) : 0;
	di = calloc(nr, sizeof *di);
	if (di == NULL)
		return ns_err(-ENOMEM, "statfs: no memory");
	n = nr;
	rc = clovis_dev_list(ns->ns_cl, di, &n);
	for (uint32_t i = 0; rc == 0 && i < n && i < nr; i++) {
		*size += di[i].di_size_bytes;
		*avail += di[i].di_free_bytes;
	}
	free(di);
	return rc != 0 ? ns_err(rc, "statfs: devices: %s", clovis_errmsg()) : 0;
}

int ns_statfs(struct ns *ns, struct statvfs *out)
{
	struct clovis_id iid = NS_ID_INODES;
	struct clovis_idx ix;
	uint64_t size, avail;
	uint32_t shift;
	int rc;

	if (ns == NULL || out == NULL)
		return ns_err(-EINVAL, "statfs: NULL argument");
	shift = ns->ns_sb.sb_block_shift;
	rc = ns_space(ns, &size, &avail);
	if (rc == 0)
		rc = ns_idx_open(ns, &iid, &ix); /* its attributes: a count */
	if (rc != 0)
		return rc == -ENOENT ? ns_err(-EIO, "statfs: no inode index")
				     : rc;
	memset(out, 0, sizeof *out);
	out->f_bsize = out->f_frsize = 1ul << shift;
	out->f_blocks = size >> shift;
	out->f_bfree = out->f_bavail = avail >> shift;
	out->f_ffree = out->f_favail = out->f_bfree;
	out->f_files = ix.in_attr.ia_nr_records + out->f_ffree;
	out->f_fsid = (unsigned long)ns->ns_sb.sb_fsid;
	out->f_namemax = NS_NAME_MAX;
	out->f_flag = ST_NOSUID | (ns->ns_ro ? ST_RDONLY : 0);
	return 0;
}
