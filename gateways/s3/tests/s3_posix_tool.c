/*
 * s3_posix_tool.c — the POSIX side of the view-bucket test
 * (s3_posix_test.sh, s3_posix_view.py): files of a namespace
 * (gateways/posix/ns.h) made and read through its API, on an embedded store
 * or a cluster, so that the test compares them with what the S3 gateway
 * serves and stores.
 *
 *   s3_posix_tool (--data DIR [--dev-size N[M|G]] | --cluster FILE) CONT CMD
 *     mkfs [SHIFT]        make a namespace in container CONT (blocks 2^SHIFT)
 *     put PATH SRC        write file SRC as PATH (parents made, 0755), its
 *                         size written back: "SIZE MD5"
 *     get PATH DST        read PATH whole into DST: "SIZE MD5"
 *     stat PATH           "INO SIZE MODE BLKSIZE" (mode in octal)
 *     getxattr PATH NAME  the value
 *     mv A B              rename (B's parents made)
 *     mkdir PATH          a directory (its parents made)
 *     truncate PATH SIZE  the file's size (made when missing)
 *     serve               commands on stdin, one reply line each
 *                         ("ok ..." or "err ERRNO MESSAGE"), for tests that
 *                         interleave POSIX and S3 operations (cluster mode):
 *       open PATH           the file's inode, made (with its parents) when
 *                           missing: "ok INO"
 *       writef INO OFF SRC  ns_write of file SRC's bytes at OFF: "ok N"
 *       readf INO OFF LEN DST  ns_read into DST: "ok N MD5"
 *       getattr INO         "ok SIZE MTIME_NS"
 *       release INO / fsync INO / unlink PATH / mkdir PATH
 *       stat PATH           "ok INO SIZE MODE BLKSIZE"
 *       mv A B              rename
 *       get PATH DST        as above: "ok SIZE MD5"
 *       quit
 * Exit status 0, 1 on a failure (said on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "clovis/clovis.h"
#include "gateways/posix/ns.h"

#define IO_MAX (4u << 20) /* bytes per ns_read/ns_write call */

static struct ns *ns;

static void md5_hex(const void *p, size_t n, EVP_MD_CTX *c, char out[33])
{
	static const char d[] = "0123456789abcdef";
	uint8_t md[16];
	unsigned int ml = 16, i;

	if (p != NULL)
		EVP_DigestUpdate(c, p, n);
	EVP_DigestFinal_ex(c, md, &ml);
	for (i = 0; i < 16; i++) {
		out[2 * i] = d[md[i] >> 4];
		out[2 * i + 1] = d[md[i] & 15];
	}
	out[32] = 0;
}

/* The parent directory of absolute path p (made with its parents when
 * missing) and the last component into name. */
static int parent_of(const char *p, bool make, uint64_t *parent,
		     char name[NS_NAME_MAX + 1])
{
	struct ns_attr a;
	const char *s = p + 1, *e;
	int rc = ns_getattr(ns, NS_ROOT_INO, &a);

	if (p[0] != '/')
		return -EINVAL;
	while (rc == 0 && (e = strchr(s, '/')) != NULL) {
		uint64_t dir = a.ino;

		if (e - s == 0 || e - s > NS_NAME_MAX)
			return -EINVAL;
		memcpy(name, s, (size_t)(e - s));
		name[e - s] = 0;
		rc = ns_lookup(ns, dir, name, &a);
		if (rc == -ENOENT && make)
			rc = ns_mkdir(ns, dir, name, 0755, 0, 0, &a);
		s = e + 1;
	}
	if (rc != 0)
		return rc;
	if (strlen(s) == 0 || strlen(s) > NS_NAME_MAX)
		return -EINVAL;
	strcpy(name, s);
	*parent = a.ino;
	return 0;
}

/* The file at p, made when missing: its inode. */
static int file_open(const char *p, uint64_t *ino)
{
	char name[NS_NAME_MAX + 1];
	struct ns_attr a;
	uint64_t parent;
	int rc = parent_of(p, true, &parent, name);

	if (rc == 0)
		rc = ns_lookup(ns, parent, name, &a);
	if (rc == -ENOENT)
		rc = ns_mknod(ns, parent, name, S_IFREG | 0644, 0, 0, 0, &a);
	if (rc == 0)
		*ino = a.ino;
	return rc;
}

/* Write file src at off of ino; *n: bytes written. */
static int write_from(uint64_t ino, uint64_t off, const char *src,
		      uint64_t *n)
{
	FILE *f = fopen(src, "rb");
	char *buf = malloc(IO_MAX);
	size_t got;
	int rc = 0;

	*n = 0;
	if (f == NULL || buf == NULL) {
		rc = f == NULL ? -errno : -ENOMEM;
		goto out;
	}
	while (rc == 0 && (got = fread(buf, 1, IO_MAX, f)) > 0) {
		ssize_t w = ns_write(ns, ino, buf, got, off + *n);

		if (w < 0)
			rc = (int)w;
		else
			*n += (uint64_t)w;
	}
out:
	if (f != NULL)
		fclose(f);
	free(buf);
	return rc;
}

/* Read len bytes (UINT64_MAX: to the end) at off of ino into dst. */
static int read_to(uint64_t ino, uint64_t off, uint64_t len, const char *dst,
		   uint64_t *n, char md5[33])
{
	FILE *f = fopen(dst, "wb");
	char *buf = malloc(IO_MAX);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int rc = 0;

	*n = 0;
	if (f == NULL || buf == NULL || c == NULL) {
		rc = f == NULL ? -errno : -ENOMEM;
		goto out;
	}
	EVP_DigestInit_ex(c, EVP_md5(), NULL);
	while (*n < len) {
		size_t want = len - *n < IO_MAX ? (size_t)(len - *n) : IO_MAX;
		ssize_t r = ns_read(ns, ino, buf, want, off + *n);

		if (r <= 0) {
			rc = (int)r;
			break;
		}
		EVP_DigestUpdate(c, buf, (size_t)r);
		if (fwrite(buf, 1, (size_t)r, f) != (size_t)r) {
			rc = -EIO;
			break;
		}
		*n += (uint64_t)r;
	}
	md5_hex(NULL, 0, c, md5);
out:
	if (f != NULL && fclose(f) != 0 && rc == 0)
		rc = -EIO;
	free(buf);
	EVP_MD_CTX_free(c);
	return rc;
}

static int do_put(const char *p, const char *src, char *out, size_t ol)
{
	uint64_t ino, n = 0, rn;
	char md5[33];
	int rc = file_open(p, &ino);
	struct ns_attr a;

	if (rc == 0)
		rc = ns_setattr(ns, ino, &(struct ns_attr){.size = 0},
				NS_SET_SIZE, NULL);
	if (rc == 0)
		rc = write_from(ino, 0, src, &n);
	if (rc == 0)
		rc = ns_release(ns, ino);
	if (rc == 0)
		rc = ns_fsync(ns, ino, false);
	if (rc == 0)
		rc = ns_getattr(ns, ino, &a);
	if (rc == 0 && a.size != n)
		rc = -EIO;
	if (rc == 0)
		rc = read_to(ino, 0, n, "/dev/null", &rn, md5);
	if (rc == 0)
		snprintf(out, ol, "%llu %s", (unsigned long long)rn, md5);
	return rc;
}

static int do_get(const char *p, const char *dst, char *out, size_t ol)
{
	struct ns_attr a;
	uint64_t n;
	char md5[33];
	int rc = ns_resolve(ns, p, &a);

	if (rc == 0)
		rc = read_to(a.ino, 0, UINT64_MAX, dst, &n, md5);
	if (rc == 0)
		snprintf(out, ol, "%llu %s", (unsigned long long)n, md5);
	return rc;
}

static int do_stat(const char *p, char *out, size_t ol)
{
	struct ns_attr a;
	int rc = ns_resolve(ns, p, &a);

	if (rc == 0)
		snprintf(out, ol, "%llu %llu %o %u", (unsigned long long)a.ino,
			 (unsigned long long)a.size, a.mode, a.blksize);
	return rc;
}

/* Rename path a to b (the parents of b made). */
static int do_mv(const char *a, const char *b)
{
	char an[NS_NAME_MAX + 1], bn[NS_NAME_MAX + 1];
	uint64_t ap, bp;
	int rc = parent_of(a, false, &ap, an);

	if (rc == 0)
		rc = parent_of(b, true, &bp, bn);
	return rc != 0 ? rc : ns_rename(ns, ap, an, bp, bn, 0);
}

/* One command of serve (argv-style words w[0..n)): reply into out. */
static int serve_one(char **w, int n, char *out, size_t ol)
{
	uint64_t ino = n > 1 ? strtoull(w[1], NULL, 0) : 0, x;
	char name[NS_NAME_MAX + 1], md5[33];
	struct ns_attr a;
	uint64_t parent;
	int rc;

	out[0] = 0;
	if (strcmp(w[0], "open") == 0 && n == 2) {
		rc = file_open(w[1], &ino);
		snprintf(out, ol, "%llu", (unsigned long long)ino);
		return rc;
	}
	if (strcmp(w[0], "writef") == 0 && n == 4) {
		rc = write_from(ino, strtoull(w[2], NULL, 0), w[3], &x);
		snprintf(out, ol, "%llu", (unsigned long long)x);
		return rc;
	}
	if (strcmp(w[0], "readf") == 0 && n == 5) {
		rc = read_to(ino, strtoull(w[2], NULL, 0),
			     strtoull(w[3], NULL, 0), w[4], &x, md5);
		snprintf(out, ol, "%llu %s", (unsigned long long)x, md5);
		return rc;
	}
	if (strcmp(w[0], "getattr") == 0 && n == 2) {
		rc = ns_getattr(ns, ino, &a);
		snprintf(out, ol, "%llu %llu", (unsigned long long)a.size,
			 (unsigned long long)a.mtime.tv_sec * 1000000000ull +
			 (unsigned long long)a.mtime.tv_nsec);
		return rc;
	}
	if (strcmp(w[0], "release") == 0 && n == 2)
		return ns_release(ns, ino);
	if (strcmp(w[0], "fsync") == 0 && n == 2)
		return ns_fsync(ns, ino, false);
	if (strcmp(w[0], "unlink") == 0 && n == 2) {
		rc = parent_of(w[1], false, &parent, name);
		return rc != 0 ? rc : ns_unlink(ns, parent, name);
	}
	if (strcmp(w[0], "mkdir") == 0 && n == 2) {
		rc = parent_of(w[1], true, &parent, name);
		return rc != 0 ? rc : ns_mkdir(ns, parent, name, 0755, 0, 0, &a);
	}
	if (strcmp(w[0], "stat") == 0 && n == 2)
		return do_stat(w[1], out, ol);
	if (strcmp(w[0], "mv") == 0 && n == 3)
		return do_mv(w[1], w[2]);
	if (strcmp(w[0], "get") == 0 && n == 3)
		return do_get(w[1], w[2], out, ol);
	return -EINVAL;
}

static int serve(void)
{
	char line[8192], out[256];

	while (fgets(line, sizeof line, stdin) != NULL) {
		char *w[8], *save = NULL, *t;
		int n = 0, rc;

		for (t = strtok_r(line, " \t\r\n", &save); t != NULL && n < 8;
		     t = strtok_r(NULL, " \t\r\n", &save))
			w[n++] = t;
		if (n == 0)
			continue;
		if (strcmp(w[0], "quit") == 0)
			break;
		rc = serve_one(w, n, out, sizeof out);
		if (rc == 0)
			printf("ok %s\n", out);
		else
			printf("err %d %s\n", -rc, ns_errmsg());
		fflush(stdout);
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: s3_posix_tool (--data DIR [--dev-size BYTES] "
		"| --cluster FILE) CONT mkfs [SHIFT] | put PATH SRC | get PATH "
		"DST | stat PATH | getxattr PATH NAME | mv A B | mkdir PATH | "
		"truncate PATH SIZE | serve\n");
	return 2;
}

/* The command argv[0..argc) on the mounted namespace. */
static int run(int argc, char **argv)
{
	char out[256], val[NS_XATTR_VAL_MAX + 1];
	struct ns_attr a;
	ssize_t vn;
	int rc;

	if (strcmp(argv[0], "put") == 0 && argc == 3)
		rc = do_put(argv[1], argv[2], out, sizeof out);
	else if (strcmp(argv[0], "get") == 0 && argc == 3)
		rc = do_get(argv[1], argv[2], out, sizeof out);
	else if (strcmp(argv[0], "stat") == 0 && argc == 2)
		rc = do_stat(argv[1], out, sizeof out);
	else if (strcmp(argv[0], "serve") == 0 && argc == 1)
		return serve();
	else if (strcmp(argv[0], "mv") == 0 && argc == 3) {
		rc = do_mv(argv[1], argv[2]);
		snprintf(out, sizeof out, "%s", argv[2]);
	} else if (strcmp(argv[0], "mkdir") == 0 && argc == 2) {
		char name[NS_NAME_MAX + 1];
		uint64_t parent;

		rc = parent_of(argv[1], true, &parent, name);
		if (rc == 0)
			rc = ns_mkdir(ns, parent, name, 0755, 0, 0, &a);
		snprintf(out, sizeof out, "%s", argv[1]);
	} else if (strcmp(argv[0], "truncate") == 0 && argc == 3) {
		uint64_t ino;

		rc = file_open(argv[1], &ino);
		if (rc == 0)
			rc = ns_setattr(ns, ino, &(struct ns_attr){
					.size = strtoull(argv[2], NULL, 0)},
					NS_SET_SIZE, NULL);
		snprintf(out, sizeof out, "%s", argv[2]);
	}
	else if (strcmp(argv[0], "getxattr") == 0 && argc == 3) {
		rc = ns_resolve(ns, argv[1], &a);
		vn = rc == 0 ? ns_getxattr(ns, a.ino, argv[2], val,
					   sizeof val - 1) : rc;
		rc = vn < 0 ? (int)vn : 0;
		if (rc == 0)
			snprintf(out, sizeof out, "%.*s", (int)vn, val);
	} else
		return usage();
	if (rc != 0) {
		fprintf(stderr, "s3_posix_tool: %s %s: %s: %s\n", argv[0],
			argv[1], strerror(-rc), ns_errmsg());
		return 1;
	}
	printf("%s\n", out);
	return 0;
}

int main(int argc, char **argv)
{
	struct clovis_conf cc = {0};
	struct ns_mkfs_opts mo = {0};
	struct clovis_id cont;
	struct clovis *cl;
	int rc, i = 1, st;

	if (argc < 5)
		return usage();
	if (strcmp(argv[i], "--data") == 0) {
		cc.cc_data_dir = argv[++i];
		cc.cc_flags = CLOVIS_CONF_CREATE;
		if (strcmp(argv[i + 1], "--dev-size") == 0) {
			char *e;

			cc.cc_dev_size = strtoull(argv[i + 2], &e, 0);
			if (*e == 'M')
				cc.cc_dev_size <<= 20;
			else if (*e == 'G')
				cc.cc_dev_size <<= 30;
			i += 2;
		}
	} else if (strcmp(argv[i], "--cluster") == 0) {
		cc.cc_mode = CLOVIS_MODE_CLUSTER;
		cc.cc_cluster_conf = argv[++i];
	} else {
		return usage();
	}
	i++;
	if (i + 1 >= argc || clovis_id_parse(argv[i], &cont) != 0)
		return usage();
	i++;
	rc = clovis_init(&cl, &cc);
	if (rc != 0) {
		fprintf(stderr, "s3_posix_tool: store: %s: %s\n",
			clovis_strerror(rc), clovis_errmsg());
		return 1;
	}
	if (strcmp(argv[i], "mkfs") == 0) {
		if (i + 1 < argc)
			mo.block_shift = (uint32_t)atoi(argv[i + 1]);
		rc = ns_mkfs(cl, &cont, &mo);
		if (rc != 0)
			fprintf(stderr, "s3_posix_tool: mkfs: %s: %s\n",
				clovis_strerror(rc), ns_errmsg());
		clovis_fini(cl);
		return rc == 0 ? 0 : 1;
	}
	rc = ns_mount(cl, &cont, NULL, &ns);
	if (rc != 0) {
		fprintf(stderr, "s3_posix_tool: mount: %s: %s\n",
			clovis_strerror(rc), ns_errmsg());
		clovis_fini(cl);
		return 1;
	}
	st = run(argc - i, argv + i);
	rc = ns_umount(ns);
	if (rc != 0 && st == 0) {
		fprintf(stderr, "s3_posix_tool: umount: %s: %s\n",
			clovis_strerror(rc), ns_errmsg());
		st = 1;
	}
	clovis_fini(cl);
	return st;
}
