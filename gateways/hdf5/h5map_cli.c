/*
 * gateways/hdf5/h5map_cli.c — the "strata h5 ..." commands over the HDF5
 * object view (h5map.h): import, export, ls, rm.
 *
 * They live here, in the gateway, rather than in clovis/cli/: the CLI's
 * room (clovis) may not include a gateway's header (scripts/check_layers.sh:
 * arrows go gateways -> clovis), while a gateway may include the CLI's
 * cli.h.  cli.h declares them like every other command.
 *
 * None of them needs the store before its arguments are checked: import
 * checks the whole HDF5 file first (h5m_check()) and export refuses an
 * existing output file, both before the store is opened, so bad input
 * never touches the store.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/cli/cli.h"
#include "gateways/hdf5/h5map.h"

/* Report a failure of the library with its message. */
static int h5_fail(struct cli *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int h5_fail(struct cli *c, int rc, const char *fmt, ...)
{
	char what[CLI_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	cli_msg(c, "%s", h5m_errmsg());
	return cli_fail(c, rc, "%s", what);
}

/* Parse argument text as a target; a bad one is a usage error. */
static int h5_target(struct cli *c, const char *text, struct h5m_target *t)
{
	if (h5m_target_parse(text, t) == 0)
		return 0;
	return cli_usage(c, "%s", h5m_errmsg());
}

/* Print what an import or export moved. */
static void h5_stats(const struct cli *c, const char *verb, const char *from,
		     const char *to, const struct h5m_stats *s, double secs)
{
	char hb[32];

	if (c->c_json) {
		printf("{\"%s\": ", verb);
		cli_json_str(stdout, from, strlen(from));
		printf(", \"to\": ");
		cli_json_str(stdout, to, strlen(to));
		printf(", \"groups\": %llu, \"datasets\": %llu, "
		       "\"attributes\": %llu, \"hard_links\": %llu, "
		       "\"soft_links\": %llu, \"chunks\": %llu, \"bytes\": %llu, "
		       "\"seconds\": %.3f}\n",
		       (unsigned long long)s->hs_groups,
		       (unsigned long long)s->hs_datasets,
		       (unsigned long long)s->hs_attrs,
		       (unsigned long long)s->hs_hard,
		       (unsigned long long)s->hs_soft,
		       (unsigned long long)s->hs_chunks,
		       (unsigned long long)s->hs_bytes, secs);
		return;
	}
	if (c->c_quiet)
		return;
	printf("%s %s as %s: %llu groups, %llu datasets (%llu chunks), "
	       "%llu attributes, %llu more hard links, %llu soft links, "
	       "%s of data, %.2f s\n", verb, from, to,
	       (unsigned long long)s->hs_groups,
	       (unsigned long long)s->hs_datasets,
	       (unsigned long long)s->hs_chunks,
	       (unsigned long long)s->hs_attrs,
	       (unsigned long long)s->hs_hard,
	       (unsigned long long)s->hs_soft,
	       cli_human(s->hs_bytes, hb, sizeof hb), secs);
}

/* strata h5 import FILE CONTAINER[/NAME] [--tier T] */
int cmd_h5_import(struct cli *c)
{
	const char *file = c->c_args[0];
	char name[H5M_NAME_MAX + 64];
	struct h5m_target t;
	struct h5m_stats st;
	uint64_t t0 = cli_now_ns();
	int rc;

	rc = h5_target(c, c->c_args[1], &t);
	if (rc != 0)
		return rc;
	rc = h5m_check(file, NULL);
	if (rc < 0)
		return h5_fail(c, rc, "h5 import %s", file);
	rc = cli_store_open(c);
	if (rc != 0)
		return rc;
	rc = h5m_import(c->c_cl, file, &t,
			c->c_tier >= 0 ? (uint32_t)c->c_tier : CLOVIS_TIER_FLASH,
			&st);
	if (rc < 0)
		return h5_fail(c, rc, "h5 import %s %s", file, c->c_args[1]);
	if (t.ht_name[0] == '\0') {
		const char *b = strrchr(file, '/');

		snprintf(name, sizeof name, "%s/%s", c->c_args[1],
			 b ? b + 1 : file);
	} else {
		snprintf(name, sizeof name, "%s", c->c_args[1]);
	}
	h5_stats(c, "imported", file, name, &st,
		 (double)(cli_now_ns() - t0) / 1e9);
	return CLI_OK;
}

/* strata h5 export CONTAINER[/NAME] OUT.h5 */
int cmd_h5_export(struct cli *c)
{
	const char *out = c->c_args[1];
	struct h5m_target t;
	struct h5m_stats st;
	uint64_t t0 = cli_now_ns();
	int rc;

	rc = h5_target(c, c->c_args[0], &t);
	if (rc != 0)
		return rc;
	if (access(out, F_OK) == 0) {
		cli_msg(c, "%s exists: export makes a new file", out);
		return cli_fail(c, -EEXIST, "h5 export %s %s", c->c_args[0],
				out);
	}
	rc = cli_store_open(c);
	if (rc != 0)
		return rc;
	rc = h5m_export(c->c_cl, &t, out, &st);
	if (rc < 0)
		return h5_fail(c, rc, "h5 export %s %s", c->c_args[0], out);
	h5_stats(c, "exported", c->c_args[0], out, &st,
		 (double)(cli_now_ns() - t0) / 1e9);
	return CLI_OK;
}

/* ------------------------------------------------------------ ls */

struct ls {
	struct cli *l_c;
	uint32_t l_nr;
};

/* One file of a container's catalogue. */
static int ls_file(void *arg, const char *name, const struct h5m_cat *cat)
{
	struct ls *l = arg;
	const struct h5m_stats *s = &cat->hc_stats;
	const char *state = cat->hc_state == H5M_COMPLETE ? "complete"
							  : "building";
	char id[CLOVIS_ID_STR_LEN], hb[32], when[32];
	time_t secs = (time_t)(cat->hc_ctime_ns / 1000000000ull);
	struct tm tm;

	clovis_id_format(&cat->hc_root, id);
	if (l->l_c->c_json) {
		printf("%s{\"name\": ", l->l_nr ? ", " : "[");
		cli_json_str(stdout, name, strlen(name));
		printf(", \"state\": \"%s\", \"source\": ", state);
		cli_json_str(stdout, cat->hc_source, strlen(cat->hc_source));
		printf(", \"root\": \"%s\", \"groups\": %llu, \"datasets\": "
		       "%llu, \"bytes\": %llu, \"ctime_ns\": %llu}", id,
		       (unsigned long long)s->hs_groups,
		       (unsigned long long)s->hs_datasets,
		       (unsigned long long)s->hs_bytes,
		       (unsigned long long)cat->hc_ctime_ns);
	} else {
		localtime_r(&secs, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-24s %-8s %6llu groups %6llu datasets %10s  %s  "
		       "root %s  from %s\n", name, state,
		       (unsigned long long)s->hs_groups,
		       (unsigned long long)s->hs_datasets,
		       cli_human(s->hs_bytes, hb, sizeof hb), when, id,
		       cat->hc_source);
	}
	l->l_nr++;
	return 0;
}

/* "4x4" of n dims. */
static const char *dims_text(const uint64_t *d, uint32_t n, char *buf,
			     size_t size)
{
	size_t used = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%llu",
					 i ? "x" : "", (unsigned long long)d[i]);
	return buf;
}

static void ls_entry_json(const struct h5m_entry *e, bool first)
{
	char idx[CLOVIS_ID_STR_LEN], obj[CLOVIS_ID_STR_LEN], ch[512];

	printf("%s{\"path\": ", first ? "[" : ", ");
	cli_json_str(stdout, e->he_path, strlen(e->he_path));
	switch (e->he_kind) {
	case H5M_SOFT:
	case H5M_HARD:
		printf(", \"kind\": \"%s\", \"target\": ", e->he_kind == H5M_SOFT
		       ? "soft" : "hard");
		cli_json_str(stdout, e->he_target, strlen(e->he_target));
		break;
	case H5M_GROUP:
		printf(", \"kind\": \"group\", \"index\": \"%s\", \"attributes\""
		       ": %u, \"links\": %u", clovis_id_format(&e->he_idx, idx),
		       e->he_attrs, e->he_links);
		break;
	default:
		printf(", \"kind\": \"dataset\", \"index\": \"%s\", \"object\": "
		       "\"%s\", \"attributes\": %u, \"layout\": \"%s\", "
		       "\"chunk\": \"%s\", \"block_size\": %llu, "
		       "\"slot_blocks\": %u, \"chunk_bytes\": %llu, "
		       "\"chunks\": %llu, \"chunks_stored\": %llu, \"bytes\": "
		       "%llu, \"vlen_strings\": %s, \"filters\": \"%s\"",
		       clovis_id_format(&e->he_idx, idx),
		       clovis_id_format(&e->he_obj, obj), e->he_attrs,
		       e->he_layout, dims_text(e->he_chunk, e->he_rank, ch,
					       sizeof ch),
		       1ull << e->he_block_shift, e->he_slot_blocks,
		       (unsigned long long)e->he_chunk_bytes,
		       (unsigned long long)e->he_chunks,
		       (unsigned long long)e->he_chunks_stored,
		       (unsigned long long)e->he_bytes,
		       e->he_vlen ? "true" : "false", e->he_filters);
	}
	printf("}");
}

/* One entry of an import's mapping: a line "KIND PATH key=value ...". */
static int ls_entry(void *arg, const struct h5m_entry *e)
{
	struct ls *l = arg;
	char idx[CLOVIS_ID_STR_LEN], obj[CLOVIS_ID_STR_LEN], ch[512];

	if (l->l_c->c_json) {
		ls_entry_json(e, l->l_nr++ == 0);
		return 0;
	}
	l->l_nr++;
	if (e->he_kind == H5M_SOFT || e->he_kind == H5M_HARD) {
		printf("%-7s %s -> %s\n", e->he_kind == H5M_SOFT ? "soft" :
		       "hard", e->he_path, e->he_target);
		return 0;
	}
	clovis_id_format(&e->he_idx, idx);
	if (e->he_kind == H5M_GROUP) {
		printf("group   %s idx=%s attrs=%u links=%u\n", e->he_path, idx,
		       e->he_attrs, e->he_links);
		return 0;
	}
	printf("dataset %s idx=%s obj=%s attrs=%u layout=%s block=%llu "
	       "bytes=%llu", e->he_path, idx, clovis_id_format(&e->he_obj, obj),
	       e->he_attrs, e->he_layout, 1ull << e->he_block_shift,
	       (unsigned long long)e->he_bytes);
	if (e->he_rank > 0 && strcmp(e->he_layout, "chunked") == 0)
		printf(" chunk=%s", dims_text(e->he_chunk, e->he_rank, ch,
					     sizeof ch));
	if (e->he_rank > 0 && strcmp(e->he_layout, "chunked") == 0 &&
	    !e->he_vlen) /* a string stream has no chunk extents */
		printf(" chunk_bytes=%llu slot=%u",
		       (unsigned long long)e->he_chunk_bytes, e->he_slot_blocks);
	if (e->he_rank > 0 && strcmp(e->he_layout, "chunked") == 0)
		printf(" chunks=%llu/%llu",
		       (unsigned long long)e->he_chunks_stored,
		       (unsigned long long)e->he_chunks);
	if (e->he_filters[0] != '\0')
		printf(" filters=%s", e->he_filters);
	printf("%s\n", e->he_vlen ? " vlen-strings" : "");
	return 0;
}

/* strata h5 ls CONTAINER[/NAME] */
int cmd_h5_ls(struct cli *c)
{
	struct h5m_target t;
	struct ls l = { c, 0 };
	int rc;

	rc = h5_target(c, c->c_args[0], &t);
	if (rc == 0)
		rc = cli_store_open(c);
	if (rc != 0)
		return rc;
	if (t.ht_name[0] == '\0')
		rc = h5m_list(c->c_cl, &t.ht_cont, ls_file, &l);
	else
		rc = h5m_walk(c->c_cl, &t, ls_entry, &l);
	if (c->c_json && rc == 0)
		printf("%s\n", l.l_nr ? "]" : "[]");
	else if (c->c_json && l.l_nr > 0)
		printf("]\n");
	if (rc < 0)
		return h5_fail(c, rc, "h5 ls %s", c->c_args[0]);
	return CLI_OK;
}

/* strata h5 rm CONTAINER/NAME */
int cmd_h5_rm(struct cli *c)
{
	struct h5m_target t;
	struct h5m_stats st;
	int rc;

	rc = h5_target(c, c->c_args[0], &t);
	if (rc == 0 && t.ht_name[0] == '\0')
		rc = cli_usage(c, "name the file: CONTAINER/NAME");
	if (rc == 0)
		rc = cli_store_open(c);
	if (rc != 0)
		return rc;
	rc = h5m_remove(c->c_cl, &t, &st);
	if (rc < 0)
		return h5_fail(c, rc, "h5 rm %s", c->c_args[0]);
	if (c->c_json) {
		printf("{\"removed\": ");
		cli_json_str(stdout, c->c_args[0], strlen(c->c_args[0]));
		printf(", \"groups\": %llu, \"datasets\": %llu}\n",
		       (unsigned long long)st.hs_groups,
		       (unsigned long long)st.hs_datasets);
	} else if (!c->c_quiet)
		printf("removed %s: %llu groups, %llu datasets\n", c->c_args[0],
		       (unsigned long long)st.hs_groups,
		       (unsigned long long)st.hs_datasets);
	return CLI_OK;
}
