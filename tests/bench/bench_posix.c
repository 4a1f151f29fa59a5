/*
 * bench_posix.c — the C parts of the POSIX view's benchmark (issue 33),
 * driven by tests/bench/bench_posix.py:
 *
 *   strata_bench_posix direct STORE MIB
 *       Direct Clovis figures on a fresh embedded store in STORE (plain
 *       layout on flash, the namespace's default), the baseline of fio
 *       through the mount:
 *         seq-write / seq-read   1 MiB ops, one in flight, MIB MiB of an
 *                                object of 64 KiB blocks (the namespace's
 *                                default block size);
 *         rand-write / rand-read 4 KiB ops at random block offsets, 16 in
 *                                flight, over MIB MiB of an object of
 *                                4 KiB blocks, for as many ops as MIB MiB
 *                                holds.
 *       Prints "direct NAME VALUE UNIT" lines (MiB/s, ops/s).
 *   strata_bench_posix md PATH N NDIRS
 *       mdtest-style metadata rates through system calls on the directory
 *       PATH (a mount, or a directory of the local file system): N files
 *       created (open O_CREAT|O_EXCL + close), stat'ed, unlinked, spread
 *       over NDIRS directories made first (1: all in PATH itself).
 *   strata_bench_posix nsmd STORE N NDIRS
 *       The same through the namespace library (ns.h) on a fresh embedded
 *       store in STORE: no FUSE, no kernel.
 *       Both print "md OP RATE files/s" for create, stat and unlink.
 * Everything it makes is removed at the end (the stores with
 * clovis_store_destroy()).  Exits 0, 1 on an error (message on stderr), 2
 * on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "gateways/posix/ns.h"

#define BP_QD 16u
#define BP_HI 0xbe9051c000000000ull

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "strata_bench_posix: %s: %s (%s)\n", what,
		strerror(rc < 0 ? -rc : rc), clovis_errmsg());
	exit(1);
}

static struct clovis *store_open(const char *dir)
{
	struct clovis_conf cc = {0};
	struct clovis *cl = NULL;
	int rc;

	cc.cc_data_dir = dir;
	cc.cc_flags = CLOVIS_CONF_CREATE;
	if (getenv("BENCH_POSIX_META_NVRAM") != NULL) /* metadata on /dev/shm */
		cc.cc_flags |= CLOVIS_CONF_META_NVRAM;
	cc.cc_dev_size = 1ull << 30;
	rc = clovis_init(&cl, &cc);
	if (rc != 0)
		die("store create", rc);
	return cl;
}

static void store_close(struct clovis *cl, const char *dir)
{
	clovis_fini(cl);
	clovis_store_destroy(dir);
}

static void obj_make(struct clovis *cl, struct clovis_obj *o, uint64_t lo,
		     uint32_t shift)
{
	struct clovis_obj_attr a = {.oa_block_shift = shift,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_id id = {BP_HI, lo};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("object create", rc);
}

/* One op on o of len bytes at block blk, waited STABLE (write) or
 * EXECUTED (read). */
static void io_one(struct clovis_obj *o, enum clovis_obj_opcode oc,
		   uint64_t blk, uint64_t nblk, void *buf, size_t len)
{
	struct clovis_extvec ev = {1, &blk, &nblk};
	struct clovis_bufvec bv = {1, &buf, &len};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, oc, &ev, &bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die(oc == CLOVIS_OC_WRITE ? "write" : "read", rc);
}

/* Sequential 1 MiB ops over mib MiB, one in flight: MiB/s. */
static double seq(struct clovis_obj *o, enum clovis_obj_opcode oc,
		  uint64_t mib, char *buf)
{
	uint64_t per = (1u << 20) >> o->ob_attr.oa_block_shift;
	double t0 = now_s();

	for (uint64_t i = 0; i < mib; i++)
		io_one(o, oc, i * per, per, buf, 1u << 20);
	return (double)mib / (now_s() - t0);
}

struct bp_slot {
	struct clovis_op *op;
	uint64_t blk, nblk;
	void *buf;
	size_t len;
	struct clovis_extvec ev;
	struct clovis_bufvec bv;
};

/* n random 4 KiB ops over blocks [0, nblocks), BP_QD in flight: ops/s. */
static double rnd(struct clovis_obj *o, enum clovis_obj_opcode oc,
		  uint64_t nblocks, uint64_t n, char *bufs)
{
	struct bp_slot s[BP_QD];
	uint64_t seed = 88172645463325252ull, done = 0, started = 0;
	double t0 = now_s();

	memset(s, 0, sizeof s);
	while (done < n) {
		for (uint32_t i = 0; i < BP_QD; i++) {
			int rc;

			if (s[i].op != NULL) {
				rc = clovis_op_wait(s[i].op, oc == CLOVIS_OC_WRITE ?
						    CLOVIS_OS_STABLE :
						    CLOVIS_OS_EXECUTED,
						    CLOVIS_TIME_NEVER);
				if (rc != 0)
					die("random op", rc);
				clovis_op_free(s[i].op);
				s[i].op = NULL;
				done++;
			}
			if (started == n)
				continue;
			seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
			s[i].blk = seed % nblocks;
			s[i].nblk = 1;
			s[i].buf = bufs + (size_t)i * 4096;
			s[i].len = 4096;
			s[i].ev = (struct clovis_extvec){1, &s[i].blk, &s[i].nblk};
			s[i].bv = (struct clovis_bufvec){1, &s[i].buf, &s[i].len};
			rc = clovis_obj_op(o, oc, &s[i].ev, &s[i].bv, 0, &s[i].op);
			if (rc == 0)
				rc = clovis_op_launch(&s[i].op, 1);
			if (rc != 0)
				die("random op launch", rc);
			started++;
		}
	}
	return (double)n / (now_s() - t0);
}

static int direct(const char *dir, uint64_t mib)
{
	struct clovis *cl = store_open(dir);
	struct clovis_obj so, ro;
	char *buf = aligned_alloc(4096, 1u << 20);
	uint64_t nblocks = mib << 8;

	if (buf == NULL)
		die("memory", -ENOMEM);
	for (size_t i = 0; i < (1u << 20); i++)
		buf[i] = (char)(i * 131 + 7);
	obj_make(cl, &so, 1, 16);
	printf("direct seq-write %.1f MiB/s\n", seq(&so, CLOVIS_OC_WRITE, mib, buf));
	printf("direct seq-read %.1f MiB/s\n", seq(&so, CLOVIS_OC_READ, mib, buf));
	obj_make(cl, &ro, 2, 12);
	seq(&ro, CLOVIS_OC_WRITE, mib, buf); /* every block written once */
	printf("direct rand-write %.0f ops/s\n",
	       rnd(&ro, CLOVIS_OC_WRITE, nblocks, nblocks, buf));
	printf("direct rand-read %.0f ops/s\n",
	       rnd(&ro, CLOVIS_OC_READ, nblocks, nblocks, buf));
	free(buf);
	store_close(cl, dir);
	return 0;
}

/* ------------------------------------------------------------ metadata */

static void md_name(char *b, size_t sz, const char *path, uint32_t i,
		    uint32_t ndirs)
{
	if (ndirs > 1)
		snprintf(b, sz, "%s/d%03u/f%07u", path, i % ndirs, i);
	else
		snprintf(b, sz, "%s/f%07u", path, i);
}

static void md_report(const char *op, uint32_t n, double t)
{
	printf("md %s %.0f files/s\n", op, (double)n / t);
}

static int md(const char *path, uint32_t n, uint32_t ndirs)
{
	char b[4096];
	struct stat st;
	double t0;

	for (uint32_t d = 0; ndirs > 1 && d < ndirs; d++) {
		snprintf(b, sizeof b, "%s/d%03u", path, d);
		if (mkdir(b, 0755) != 0)
			die(b, errno);
	}
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		int fd;

		md_name(b, sizeof b, path, i, ndirs);
		fd = open(b, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || close(fd) != 0)
			die(b, errno);
	}
	md_report("create", n, now_s() - t0);
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		md_name(b, sizeof b, path, i, ndirs);
		if (stat(b, &st) != 0)
			die(b, errno);
	}
	md_report("stat", n, now_s() - t0);
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		md_name(b, sizeof b, path, i, ndirs);
		if (unlink(b) != 0)
			die(b, errno);
	}
	md_report("unlink", n, now_s() - t0);
	for (uint32_t d = 0; ndirs > 1 && d < ndirs; d++) {
		snprintf(b, sizeof b, "%s/d%03u", path, d);
		if (rmdir(b) != 0)
			die(b, errno);
	}
	return 0;
}

static int nsmd(const char *dir, uint32_t n, uint32_t ndirs)
{
	struct clovis *cl = store_open(dir);
	struct clovis_id c = CLOVIS_ID_DEFAULT_CONTAINER;
	uint64_t *parent = calloc(ndirs, sizeof *parent);
	struct ns_attr a;
	struct ns *ns = NULL;
	char name[32];
	double t0;
	int rc;

	if (parent == NULL)
		die("memory", -ENOMEM);
	if ((rc = ns_mkfs(cl, &c, NULL)) != 0 ||
	    (rc = ns_mount(cl, &c, NULL, &ns)) != 0)
		die(ns_errmsg(), rc);
	for (uint32_t d = 0; d < ndirs; d++) {
		parent[d] = NS_ROOT_INO;
		if (ndirs == 1)
			break;
		snprintf(name, sizeof name, "d%03u", d);
		if ((rc = ns_mkdir(ns, NS_ROOT_INO, name, 0755, 0, 0, &a)) != 0)
			die(ns_errmsg(), rc);
		parent[d] = a.ino;
	}
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, "f%07u", i);
		rc = ns_mknod(ns, parent[i % ndirs], name, S_IFREG | 0644, 0, 0,
			      0, &a);
		if (rc != 0)
			die(ns_errmsg(), rc);
	}
	md_report("create", n, now_s() - t0);
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, "f%07u", i);
		if ((rc = ns_lookup(ns, parent[i % ndirs], name, &a)) != 0)
			die(ns_errmsg(), rc);
	}
	md_report("stat", n, now_s() - t0);
	t0 = now_s();
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, "f%07u", i);
		if ((rc = ns_unlink(ns, parent[i % ndirs], name)) != 0)
			die(ns_errmsg(), rc);
	}
	md_report("unlink", n, now_s() - t0);
	if ((rc = ns_umount(ns)) != 0)
		die("umount", rc);
	free(parent);
	store_close(cl, dir);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && atoi(argv[4]) <= 0) {
		fprintf(stderr, "strata_bench_posix: NDIRS must be 1 or more\n");
		return 2;
	}
	if (argc == 4 && strcmp(argv[1], "direct") == 0)
		return direct(argv[2], strtoull(argv[3], NULL, 10));
	if (argc == 5 && strcmp(argv[1], "md") == 0)
		return md(argv[2], (uint32_t)atoi(argv[3]),
			  (uint32_t)atoi(argv[4]));
	if (argc == 5 && strcmp(argv[1], "nsmd") == 0)
		return nsmd(argv[2], (uint32_t)atoi(argv[3]),
			    (uint32_t)atoi(argv[4]));
	fprintf(stderr, "usage: strata_bench_posix direct STORE MIB | "
		"md PATH N NDIRS | nsmd STORE N NDIRS\n");
	return 2;
}
