/*
 * cli_s3.c — `strata s3 user add|ls|rm`: the users of the S3 gateway.
 *
 *   strata s3 user add NAME [FILE]   new user with fresh keys (printed once)
 *   strata s3 user ls [FILE]         names and access keys (no secrets)
 *   strata s3 user rm NAME [FILE]    remove a user
 *
 * FILE is the gateway's credentials file (lines "NAME ACCESS_KEY
 * SECRET_KEY"); default $STRATA_S3_CREDS, else ./s3-credentials.  The file
 * is rewritten through a temporary file and rename(), mode 0600, so the
 * running gateway (which re-reads it when it changes) never sees half of
 * it.  The store is not opened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

struct s3u {
	char name[64], akey[64], skey[128];
};

static const char *creds_path(struct cli *c, int pos)
{
	const char *e = getenv("STRATA_S3_CREDS");

	if (c->c_nargs > pos)
		return c->c_args[pos];
	return e != NULL && *e ? e : "./s3-credentials";
}

/* Read the users of path (a missing file has none). */
static int users_read(const char *path, struct s3u *u, int *n)
{
	char line[S3U_LINE];
	FILE *f = fopen(path, "r");

	*n = 0;
	if (f == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof line, f) != NULL && *n < S3U_MAX) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%63s %63s %127s", u[*n].name, u[*n].akey,
			   u[*n].skey) == 3)
			(*n)++;
	}
	fclose(f);
	return 0;
}

static int users_write(const char *path, const struct s3u *u, int n)
{
	char tmp[4096];
	FILE *f;
	int i, fd;

	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		return -errno;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s %s %s\n", u[i].name, u[i].akey, u[i].skey);
	if (fflush(f) != 0 || fsync(fd) != 0 || fclose(f) != 0) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path) != 0) {
		int rc = -errno;

		unlink(tmp);
		return rc;
	}
	return 0;
}

static void rand_str(char *out, size_t n, const char *alphabet)
{
	size_t al = strlen(alphabet), i;
	unsigned char r[128];

	if (getrandom(r, n, 0) != (ssize_t)n)
		for (i = 0; i < n; i++)
			r[i] = (unsigned char)rand();
	for (i = 0; i < n; i++)
		out[i] = alphabet[r[i] % al];
	out[n] = 0;
}

static bool name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 63)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
			return false;
	return true;
}

static int user_add(struct cli *c, struct s3u *u, int n)
{
	const char *name = c->c_args[1], *path = creds_path(c, 2);
	struct s3u *nu;
	int i, rc;

	if (!name_ok(name))
		return cli_usage(c, "s3 user add: name '%s': 1..63 characters "
				 "of A-Z a-z 0-9 . _ -", name);
	for (i = 0; i < n; i++)
		if (strcmp(u[i].name, name) == 0)
			return cli_fail(c, -EEXIST, "s3 user add %s: the user "
					"exists in %s", name, path);
	nu = &u[n];
	snprintf(nu->name, sizeof nu->name, "%s", name);
	memcpy(nu->akey, "AKST", 4);
	rand_str(nu->akey + 4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
	rand_str(nu->skey, 40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
		 "rstuvwxyz0123456789");
	rc = users_write(path, u, n + 1);
	if (rc != 0)
		return cli_fail(c, rc, "s3 user add %s: writing %s", name, path);
	if (c->c_json)
		printf("{\"user\":\"%s\",\"access_key\":\"%s\",\"secret_key\":"
		       "\"%s\"}\n", nu->name, nu->akey, nu->skey);
	else
		printf("user        %s\naccess_key  %s\nsecret_key  %s\n",
		       nu->name, nu->akey, nu->skey);
	return CLI_OK;
}

static int user_rm(struct cli *c, struct s3u *u, int n)
{
	const char *name = c->c_args[1], *path = creds_path(c, 2);
	int i, rc;

	for (i = 0; i < n; i++)
		if (strcmp(u[i].name, name) == 0)
			break;
	if (i == n)
		return cli_fail(c, -ENOENT, "s3 user rm %s: no such user in %s",
				name, path);
	memmove(&u[i], &u[i + 1], (size_t)(n - i - 1) * sizeof u[0]);
	rc = users_write(path, u, n - 1);
	if (rc != 0)
		return cli_fail(c, rc, "s3 user rm %s: writing %s", name, path);
	return CLI_OK;
}

int cmd_s3_user(struct cli *c)
{
	const char *verb = c->c_args[0];
	bool ls = strcmp(verb, "ls") == 0;
	struct s3u *u;
	const char *path;
	int n, i, rc;

	if (!ls && strcmp(verb, "add") != 0 && strcmp(verb, "rm") != 0)
		return cli_usage(c, "s3 user: unknown verb '%s' (add, ls, rm)",
				 verb);
	if (!ls && c->c_nargs < 2)
		return cli_usage(c, "s3 user %s: NAME is missing", verb);
	if (ls && c->c_nargs > 2)
		return cli_usage(c, "s3 user ls: too many arguments");
	path = creds_path(c, ls ? 1 : 2);
	u = calloc(S3U_MAX + 1, sizeof *u);
	if (u == NULL)
		return cli_fail(c, -ENOMEM, "s3 user");
	rc = users_read(path, u, &n);
	if (rc != 0) {
		free(u);
		return cli_fail(c, rc, "s3 user %s: reading %s", verb, path);
	}
	if (ls) {
		for (i = 0; i < n; i++)
			printf(c->c_json ? "{\"user\":\"%s\",\"access_key\":"
			       "\"%s\"}\n" : "%-20s %s\n", u[i].name, u[i].akey);
		rc = CLI_OK;
	} else if (verb[0] == 'a') {
		rc = n >= S3U_MAX ? cli_fail(c, -ENOSPC, "s3 user add: %d users "
					     "already", n) : user_add(c, u, n);
	} else {
		rc = user_rm(c, u, n);
	}
	free(u);
	return rc;
}
