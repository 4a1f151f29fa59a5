/*
 * clovis_bad_store_ut.c — store-level faults of the Clovis API: the suite
 * "clovis_bad_store".
 *
 * Unlike "clovis_bad" (clovis_bad_ut.c, whose helpers it shares through
 * clovis_bad_ut.h), this suite opens, locks and damages stores of its own:
 * a second process opening an open store gets -EBUSY ("busy"), and every
 * file of a closed store damaged in turn is refused with a clear error or
 * read back intact ("damaged").  The risky parts run in forked children so
 * that a crash is a failed test.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "clovis/ut/clovis_bad_ut.h"
#include "tests/ut.h"

/* ------------------------------------------------- store-level faults */

/* Blocks and records the "clovis_bad_store" stores hold. */
#define BAD_ST_BLKS 4u
#define BAD_ST_RECS 2u

/* Write the known object and index contents into an open store. */
static int bad_store_fill(struct clovis *cl)
{
	static uint8_t buf[BAD_ST_BLKS * BAD_BLK];
	struct clovis_realm *r = clovis_default_realm(cl);
	struct clovis_obj o;
	struct clovis_idx ix;
	struct bad_recs rec;
	int rc;

	for (uint64_t b = 0; b < BAD_ST_BLKS; b++)
		for (size_t i = 0; i < BAD_BLK; i++)
			buf[b * BAD_BLK + i] = bad_pat(b, i);
	bad_recs(&rec, BAD_ST_RECS, BAD_ST_RECS);
	for (unsigned k = 0; k < BAD_ST_RECS; k++)
		bad_val(k, rec.br_vals[k]);
	rc = bad_obj_make(&o, r, (struct clovis_id){BAD_HI, 1},
			  CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = bad_obj_io(&o, CLOVIS_OC_WRITE, 0, BAD_ST_BLKS, buf);
	if (rc == 0)
		rc = bad_idx_make(&ix, r, (struct clovis_id){BAD_HI, 2},
				  CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = bad_idx_run(&ix, CLOVIS_IC_PUT, &rec.br_kv.bv_vec,
				 &rec.br_vv.bv_vec, rec.br_rcs, 0);
	return rc;
}

/* Make a store with known contents in a fresh directory and close it. */
static const char *bad_store_make(const char *tag)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	const char *dir = ut_tmpdir(tag);
	int rc;

	if (dir == NULL)
		return NULL;
	bad_conf(&conf, dir, CLOVIS_CONF_CREATE);
	rc = clovis_init(&cl, &conf);
	if (rc == 0)
		rc = bad_store_fill(cl);
	clovis_fini(cl);
	if (rc != 0)
		fprintf(stderr, "clovis_bad: store %s: %d %s\n", dir, rc,
			clovis_errmsg());
	return rc == 0 ? dir : NULL;
}

/*
 * 0 when the contents of an open store read back right, 1 when a step
 * fails with a negative code and a message (a clear refusal), 2 when a
 * step succeeds with wrong contents or fails without a message.
 */
static int bad_store_read(struct clovis *cl)
{
	static uint8_t buf[BAD_ST_BLKS * BAD_BLK];
	struct clovis_realm *r = clovis_default_realm(cl);
	struct clovis_obj o;
	struct clovis_idx ix;
	struct bad_recs rec;
	uint8_t want[BAD_VAL_LEN];
	int rc;

	memset(buf, 0, sizeof buf);
	bad_recs(&rec, BAD_ST_RECS, BAD_ST_RECS);
	rc = bad_obj_make(&o, r, (struct clovis_id){BAD_HI, 1}, CLOVIS_EO_OPEN);
	if (rc == 0)
		rc = bad_obj_io(&o, CLOVIS_OC_READ, 0, BAD_ST_BLKS, buf);
	if (rc == 0)
		rc = bad_idx_make(&ix, r, (struct clovis_id){BAD_HI, 2},
				  CLOVIS_EO_OPEN);
	if (rc == 0)
		rc = bad_idx_run(&ix, CLOVIS_IC_GET, &rec.br_kv.bv_vec,
				 &rec.br_vv.bv_vec, rec.br_rcs, 0);
	if (rc < 0)
		return 1;
	for (size_t i = 0; i < sizeof buf; i++)
		if (buf[i] != bad_pat(i / BAD_BLK, i % BAD_BLK))
			return 2;
	for (unsigned k = 0; k < BAD_ST_RECS; k++) {
		bad_val(k, want);
		if (rec.br_rcs[k] == 0 &&
		    memcmp(rec.br_vals[k], want, BAD_VAL_LEN) != 0)
			return 2;
		if (rec.br_rcs[k] != 0 && rec.br_rcs[k] != -CLOVIS_ECHECKSUM)
			return 2;
	}
	return 0;
}

/*
 * In a child: open the store in dir.  With want != 0, clovis_init() must
 * return want with a message.  With want == 0 it must either refuse with a
 * message, or open a store whose contents read back right (or fail loudly).
 * Exits 0 when so.
 */
static void bad_store_child(const char *dir, int want)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	int rc, got;

	alarm(60);
	bad_conf(&conf, dir, 0);
	rc = clovis_init(&cl, &conf);
	if (rc != 0) {
		got = rc < 0 && clovis_errmsg()[0] != '\0' &&
		      (want == 0 || rc == want);
		if (!got)
			fprintf(stderr, "clovis_bad: %s: init %d (%s), want "
				"%d\n", dir, rc, clovis_errmsg(), want);
		_exit(got ? 0 : 1);
	}
	if (want != 0) {
		fprintf(stderr, "clovis_bad: %s: opened, want %d\n", dir, want);
		_exit(1);
	}
	got = bad_store_read(cl);
	if (got == 2)
		fprintf(stderr, "clovis_bad: %s: damage passed unseen\n", dir);
	clovis_fini(cl);
	_exit(got == 2 ? 1 : 0);
}

/* Run bad_store_child() in a child process; true when it exits 0. */
static bool bad_store_check(const char *dir, int want)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0)
		bad_store_child(dir, want);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	if (WIFSIGNALED(status))
		fprintf(stderr, "clovis_bad: %s: child killed by signal %d\n",
			dir, WTERMSIG(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Files found by bad_store_walk(): relative paths, and the prefix cut. */
static char (*bad_walk_names)[256];
static int bad_walk_nr, bad_walk_max;
static size_t bad_walk_cut;

static int bad_walk_one(const char *p, const struct stat *st, int flag,
			struct FTW *ftw)
{
	if (flag == FTW_F && S_ISREG(st->st_mode) &&
	    bad_walk_nr < bad_walk_max)
		snprintf(bad_walk_names[bad_walk_nr++], 256, "%s",
			 p + bad_walk_cut);
	return 0;
}

static int bad_name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The regular files under dir (paths relative to it) in name order;
 * returns how many (<= max). */
static int bad_store_files(const char *dir, char names[][256], int max)
{
	bad_walk_names = names;
	bad_walk_nr = 0;
	bad_walk_max = max;
	bad_walk_cut = strlen(dir) + 1;
	if (nftw(dir, bad_walk_one, 8, FTW_PHYS) != 0)
		return -1;
	qsort(names, bad_walk_nr, 256, bad_name_cmp);
	return bad_walk_nr;
}

enum bad_damage { BAD_GARBAGE, BAD_TRUNCATE, BAD_REMOVE, BAD_DAMAGE_NR };

/*
 * Damage file path; returns the code clovis_init() must give (0: any clear
 * outcome).  Devices are the files at least as large as a device.
 */
static int bad_damage(const char *path, enum bad_damage how)
{
	static uint8_t junk[4096];
	struct stat st;
	bool dev = stat(path, &st) == 0 &&
		   (uint64_t)st.st_size >= BAD_DEV_SIZE;
	size_t len = st.st_size < 4096 ? (size_t)st.st_size : sizeof junk;
	int fd;

	memset(junk, 0xa5, sizeof junk);
	if (how == BAD_REMOVE) {
		CU_ASSERT_EQUAL(unlink(path), 0);
		return dev ? -ENOENT : 0;
	}
	fd = open(path, O_WRONLY);
	CU_ASSERT_FATAL(fd >= 0);
	if (how == BAD_GARBAGE) {
		CU_ASSERT_EQUAL(pwrite(fd, junk, len, 0), (ssize_t)len);
	} else {
		CU_ASSERT_EQUAL(ftruncate(fd, 0), 0);
	}
	close(fd);
	return dev && how == BAD_GARBAGE ? -CLOVIS_ECORRUPT : 0;
}

/* Files of a store the "damaged" test can list: more than a store has
 * (17: LOCK, metadata, NVRAM and 13 devices), checked. */
#define BAD_ST_FILES_MAX 32

/* True when the n bytes at p are all zero. */
static bool bad_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/*
 * Copy file src to a new file dst of the same size and mode, writing only
 * the non-zero 64 KiB pieces of the ranges where src has data (SEEK_DATA):
 * the rest reads back as zeros, as in src.  A sparse copy of a device
 * fallocated but mostly unwritten costs a few writes, not 32 MiB.
 */
static int bad_file_copy(const char *src, const char *dst)
{
	static uint8_t buf[64 << 10];
	struct stat st;
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	off_t pos = 0, end;
	ssize_t got;

	if (in < 0 || fstat(in, &st) != 0)
		goto out;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		   st.st_mode & 07777);
	if (out < 0 || ftruncate(out, st.st_size) != 0)
		goto out;
	while ((pos = lseek(in, pos, SEEK_DATA)) >= 0) {
		end = lseek(in, pos, SEEK_HOLE);
		if (end < 0)
			goto out;
		for (; pos < end; pos += got) {
			got = pread(in, buf, (size_t)(end - pos) < sizeof buf ?
				    (size_t)(end - pos) : sizeof buf, pos);
			if (got <= 0)
				goto out;
			if (!bad_zero(buf, (size_t)got) &&
			    pwrite(out, buf, (size_t)got, pos) != got)
				goto out;
		}
	}
	rc = errno == ENXIO ? 0 : -1;    /* no data past pos: the end */
out:
	if (rc != 0)
		fprintf(stderr, "clovis_bad: copy %s to %s: %s\n", src, dst,
			strerror(errno));
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	return rc;
}

/*
 * Copy the nr files names[] (paths relative to src, as bad_store_files()
 * gives them) from src to the empty directory dst, making their folders.
 * A store records the paths of its devices and its NVRAM (made in the data
 * directory here) relative to its data directory, so the copy is a store
 * of its own, byte for byte the one made at src.
 */
static int bad_store_copy(const char *src, const char *dst,
			  char names[][256], int nr)
{
	char from[1100], to[1100];

	for (int f = 0; f < nr; f++) {
		if (snprintf(to, sizeof to, "%s/%s", dst, names[f]) >=
		    (int)sizeof to)
			return -1;
		for (char *sl = strchr(to + strlen(dst) + 1, '/'); sl != NULL;
		     sl = strchr(sl + 1, '/')) {
			*sl = '\0';
			if (mkdir(to, 0700) != 0 && errno != EEXIST)
				return -1;
			*sl = '/';
		}
		if (snprintf(from, sizeof from, "%s/%s", src, names[f]) >=
		    (int)sizeof from)
			return -1;
		if (bad_file_copy(from, to) != 0)
			return -1;
	}
	return 0;
}

/*
 * Damage every file of a closed store in turn (a fresh copy of one store
 * made by the library each time): garbage over its head, truncation,
 * removal.  Opening must refuse with a clear error (-CLOVIS_ECORRUPT for a
 * device superblock, -ENOENT for a missing device) or give back intact
 * contents — never crash or hang.  (A store made for each case took about
 * 2 s of device syncs, 100 s for the test.)
 */
static void bad_store_damaged(void)
{
	if (ut_cluster_skip("damaged", "damages the files of a local store"))
		return;
	char names[BAD_ST_FILES_MAX][256], now[BAD_ST_FILES_MAX][256];
	char ref[512], path[1100];
	const char *dir = bad_store_make("clovis_bad_ref");
	int nr, want;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(ref, sizeof ref, "%s", dir);
	nr = bad_store_files(ref, names, BAD_ST_FILES_MAX);
	CU_ASSERT_FATAL(nr >= 3 && nr < BAD_ST_FILES_MAX);
	for (int f = 0; f < nr; f++)
		for (int how = 0; how < BAD_DAMAGE_NR; how++) {
			dir = ut_tmpdir("clovis_bad_dmg");
			CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
			CU_ASSERT_EQUAL_FATAL(bad_store_copy(ref, dir, names,
							     nr), 0);
			CU_ASSERT_EQUAL_FATAL(bad_store_files(dir, now,
						BAD_ST_FILES_MAX), nr);
			CU_ASSERT_STRING_EQUAL_FATAL(now[f], names[f]);
			snprintf(path, sizeof path, "%s/%s", dir, now[f]);
			want = bad_damage(path, (enum bad_damage)how);
			if (!bad_store_check(dir, want)) {
				fprintf(stderr, "clovis_bad: damage %d of %s "
					"not handled\n", how, names[f]);
				CU_FAIL("damaged store not refused");
			}
			ut_rmtree(dir);
		}
	/* the reference itself, never damaged, opens and reads back */
	CU_ASSERT(bad_store_check(ref, 0));
}

/* In a child: wait for the go byte, then clovis_init() must give -EBUSY. */
static void bad_busy_child(const char *dir, int go_fd)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	char c;
	int rc;

	alarm(60);
	if (read(go_fd, &c, 1) != 1)
		_exit(3);
	bad_conf(&conf, dir, CLOVIS_CONF_CREATE);
	rc = clovis_init(&cl, &conf);
	if (rc == 0)
		clovis_fini(cl);
	if (rc != -EBUSY)
		fprintf(stderr, "clovis_bad: second open: %d (%s)\n", rc,
			clovis_errmsg());
	_exit(rc == -EBUSY && clovis_errmsg()[0] != '\0' ? 0 : 1);
}

/*
 * A second process opening an open store gets -EBUSY, and the first one's
 * store is unharmed; once closed, the store opens again.
 */
static void bad_store_busy(void)
{
	if (ut_cluster_skip("busy", "locking of a local store directory"))
		return;
	const char *made = bad_store_make("clovis_bad_busy");
	char dir[512];
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	int pfd[2], status = 0;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(made);
	snprintf(dir, sizeof dir, "%s", made);
	CU_ASSERT_EQUAL_FATAL(pipe(pfd), 0);
	pid = fork();
	if (pid == 0) {
		close(pfd[1]);
		bad_busy_child(dir, pfd[0]);
	}
	close(pfd[0]);
	bad_conf(&conf, dir, 0);
	CU_ASSERT_EQUAL(clovis_init(&cl, &conf), 0);
	CU_ASSERT_EQUAL(write(pfd[1], "g", 1), 1);
	close(pfd[1]);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (cl != NULL)
		CU_ASSERT_EQUAL(bad_store_read(cl), 0);
	clovis_fini(cl);
	CU_ASSERT(bad_store_check(dir, 0));
}

/* ------------------------------------------------------------ register */

int clovis_bad_store_ut_add(void)
{
	CU_pSuite st = CU_add_suite("clovis_bad_store", NULL, NULL);

	if (st == NULL)
		return -1;
	if (CU_add_test(st, "busy", bad_store_busy) == NULL ||
	    CU_add_test(st, "damaged", bad_store_damaged) == NULL)
		return -1;
	return 0;
}
