/*
 * cli_obj.c — the "strata obj ..." commands: create, write, read, put, get,
 * stat, rm and ls of objects in the default container.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

/* Create object id with the command's attributes; o is left OPEN. */
static int obj_make(struct cli *c, const char *text,
		    const struct clovis_id *id, struct clovis_obj *o)
{
	struct clovis_obj_attr attr;
	int rc;

	rc = cli_obj_attr(c, text, &attr);
	if (rc != 0)
		return rc;
	rc = cli_call(c, clovis_obj_init(o, clovis_default_realm(c->c_cl), id,
					 &attr));
	if (rc == 0)
		rc = cli_entity_run(c, &o->ob_entity, CLOVIS_EO_CREATE);
	if (rc < 0)
		return cli_fail(c, rc, "create object %s", text);
	if (attr.oa_layout == CLOVIS_LAYOUT_COMPOSITE) {
		/* its first layer, plain on --tier: writes go there */
		struct clovis_obj_attr la = {
			.oa_layout = CLOVIS_LAYOUT_PLAIN,
			.oa_tier = c->c_tier >= 0 ? (uint32_t)c->c_tier
						  : CLOVIS_TIER_FLASH,
			.oa_block_shift = attr.oa_block_shift};
		uint32_t layer;

		rc = cli_call(c, clovis_obj_layer_add(o, &la, CLI_TOP_LAYER,
						      &layer));
		if (rc < 0) {
			int r2 = cli_entity_run(c, &o->ob_entity,
						CLOVIS_EO_DELETE);

			(void)r2; /* no half-made object left behind */
			return cli_fail(c, rc, "create object %s: its layer "
					"on %s", text,
					cli_tier_name(la.oa_tier));
		}
	}
	return 0;
}

/* Print the id of o, as text "HI:LO" or as a JSON string. */
static void obj_id_json(const struct clovis_obj *o)
{
	char id[CLOVIS_ID_STR_LEN];

	clovis_id_format(&o->ob_entity.en_id, id);
	printf("\"id\": \"%s\"", id);
}

/* strata obj create ID: make an empty object. */
int cmd_obj_create(struct cli *c)
{
	struct clovis_obj o;
	struct clovis_id id;
	char idbuf[CLOVIS_ID_STR_LEN], where[160];
	int rc;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = obj_make(c, c->c_args[0], &id, &o);
	if (rc != 0)
		return rc;
	if (c->c_json) {
		printf("{");
		obj_id_json(&o);
		printf(", \"block_size\": %u, ",
		       1u << o.ob_attr.oa_block_shift);
		cli_layout_json(c, &o.ob_attr);
		printf("}\n");
	} else if (!c->c_quiet) {
		printf("created object %s (%s): %u-byte blocks%s\n",
		       c->c_args[0], clovis_id_format(&id, idbuf),
		       1u << o.ob_attr.oa_block_shift,
		       cli_layout_text(c, &o.ob_attr, where, sizeof where));
	}
	return CLI_OK;
}

/* Open path for reading ("-" is stdin); reports failure. */
static int open_in(const char *path, int *fd)
{
	if (strcmp(path, "-") == 0) {
		*fd = 0;
		return 0;
	}
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return cli_sys(errno, "open '%s'", path);
	return 0;
}

/* Open path for writing, truncated ("-" or NULL is stdout). */
static int open_out(const char *path, int *fd)
{
	if (path == NULL || strcmp(path, "-") == 0) {
		fflush(stdout);
		*fd = 1;
		return 0;
	}
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (*fd < 0)
		return cli_sys(errno, "create '%s'", path);
	return 0;
}

/* Close fd unless it is stdin/stdout; drop the output file on failure. */
static int close_fd(int fd, const char *path, bool out, int rc)
{
	if (fd <= 2)
		return rc;
	if (close(fd) < 0 && rc == 0)
		rc = cli_sys(errno, "close '%s'", path);
	if (out && rc != 0)
		unlink(path);
	return rc;
}

/* Parse a block number argument; name says which for the message. */
static int arg_block(struct cli *c, const char *s, const char *name,
		     uint64_t *out)
{
	if (!cli_parse_u64(s, out))
		return cli_usage(c, "%s '%s' is not a number", name, s);
	if (*out >= CLOVIS_BLOCK_NR_MAX)
		return cli_usage(c, "%s %s is past the last block (2^48)",
				 name, s);
	return 0;
}

/* strata obj write ID START_BLOCK FILE|-: write a file's bytes. */
int cmd_obj_write(struct cli *c)
{
	struct cli_progress p;
	struct clovis_obj o;
	struct clovis_id id;
	uint64_t start, bytes;
	const char *path = c->c_args[2];
	int rc, fd = -1;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = arg_block(c, c->c_args[1], "START_BLOCK", &start);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc == 0)
		rc = open_in(path, &fd);
	if (rc != 0)
		return rc;
	cli_progress_init(&p, c, "write", 0);
	rc = cli_io_write(c, &o, start, fd, &p, &bytes, "obj write");
	rc = close_fd(fd, path, false, rc);
	if (rc != 0)
		return rc;
	if (c->c_json) {
		printf("{");
		obj_id_json(&o);
		printf(", \"bytes\": %llu, \"start_block\": %llu}\n",
		       (unsigned long long)bytes, (unsigned long long)start);
	} else if (!c->c_quiet) {
		printf("wrote %llu bytes to %s at block %llu\n",
		       (unsigned long long)bytes, c->c_args[0],
		       (unsigned long long)start);
	}
	return CLI_OK;
}

/* Print what a read into a file did (not printed for stdout output). */
static void block_summary(const struct cli *c, const char *verb,
			  const struct clovis_obj *o, uint64_t start,
			  uint64_t nr)
{
	uint64_t bytes = nr << o->ob_attr.oa_block_shift;

	if (c->c_json) {
		printf("{");
		obj_id_json(o);
		printf(", \"start_block\": %llu, \"blocks\": %llu, "
		       "\"bytes\": %llu}\n", (unsigned long long)start,
		       (unsigned long long)nr, (unsigned long long)bytes);
	} else if (!c->c_quiet) {
		printf("%s %llu blocks (%llu bytes) of %s from block %llu\n",
		       verb, (unsigned long long)nr, (unsigned long long)bytes,
		       c->c_args[0], (unsigned long long)start);
	}
}

/* strata obj read ID START_BLOCK NR_BLOCKS [FILE|-]: read whole blocks. */
int cmd_obj_read(struct cli *c)
{
	struct cli_progress p;
	struct clovis_obj o;
	struct clovis_id id;
	uint64_t start, nr;
	const char *path = c->c_nargs > 3 ? c->c_args[3] : NULL;
	int rc, fd = -1;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = arg_block(c, c->c_args[1], "START_BLOCK", &start);
	if (rc == 0)
		rc = arg_block(c, c->c_args[2], "NR_BLOCKS", &nr);
	if (rc == 0 && nr == 0)
		rc = cli_usage(c, "NR_BLOCKS must be at least 1");
	if (rc == 0 && start + nr > CLOVIS_BLOCK_NR_MAX)
		rc = cli_usage(c, "blocks %s + %s pass the last block (2^48)",
			       c->c_args[1], c->c_args[2]);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc == 0)
		rc = open_out(path, &fd);
	if (rc != 0)
		return rc;
	cli_progress_init(&p, c, "read", 0);
	rc = cli_io_read(c, &o, start, nr, nr << o.ob_attr.oa_block_shift, fd,
			 &p, "obj read");
	rc = close_fd(fd, path, true, rc);
	if (rc == 0 && fd > 1)
		block_summary(c, "read", &o, start, nr);
	return rc;
}

/* Size of the file behind fd when it is a regular file, else 0. */
static uint64_t fd_size(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

/* Store the object's byte size with SETATTR. */
static int obj_set_size(struct cli *c, struct clovis_obj *o, uint64_t bytes,
			const char *text)
{
	int rc;

	o->ob_attr.oa_size_bytes = bytes;
	rc = cli_entity_run(c, &o->ob_entity, CLOVIS_EO_SETATTR);
	if (rc < 0)
		return cli_fail(c, rc, "obj put %s: set size %llu", text,
				(unsigned long long)bytes);
	return 0;
}

/* Print the summary of a put or get. */
static void io_summary(struct cli *c, const char *verb,
		       const struct clovis_obj *o, uint64_t bytes,
		       uint64_t start_ns)
{
	double sec = (double)(cli_now_ns() - start_ns) / 1e9;
	double mbs = sec > 0 ? (double)bytes / sec / 1048576.0 : 0;
	char human[32], where[160];

	if (c->c_json) {
		printf("{");
		obj_id_json(o);
		printf(", \"bytes\": %llu, \"block_size\": %u, ",
		       (unsigned long long)bytes,
		       1u << o->ob_attr.oa_block_shift);
		cli_layout_json(c, &o->ob_attr);
		printf(", \"seconds\": %.3f, \"mib_per_s\": %.1f}\n", sec, mbs);
	} else if (!c->c_quiet) {
		printf("%s %s: %llu bytes (%s), %u-byte blocks%s, "
		       "%.2f s, %.1f MiB/s\n", verb, c->c_args[0],
		       (unsigned long long)bytes,
		       cli_human(bytes, human, sizeof human),
		       1u << o->ob_attr.oa_block_shift,
		       cli_layout_text(c, &o->ob_attr, where, sizeof where),
		       sec, mbs);
	}
}

/* Delete a half-made object so a failed put leaves the store unchanged. */
static void obj_undo(struct cli *c, struct clovis_obj *o)
{
	char keep[CLI_MSG_MAX];

	memcpy(keep, c->c_msg, sizeof keep);
	cli_entity_run(c, &o->ob_entity, CLOVIS_EO_DELETE);
	memcpy(c->c_msg, keep, sizeof keep);
}

/* strata obj put ID FILE: store a whole file as a new object. */
int cmd_obj_put(struct cli *c)
{
	struct cli_progress p;
	struct clovis_obj o;
	struct clovis_id id;
	const char *path = c->c_args[1];
	uint64_t bytes, t0 = cli_now_ns();
	int rc, fd = -1;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = open_in(path, &fd);
	if (rc != 0)
		return rc;
	rc = obj_make(c, c->c_args[0], &id, &o);
	if (rc == 0) {
		cli_progress_init(&p, c, "put", fd_size(fd));
		rc = cli_io_write(c, &o, 0, fd, &p, &bytes, "obj put");
		if (rc == 0)
			rc = obj_set_size(c, &o, bytes, c->c_args[0]);
		cli_progress_end(&p, rc == 0);
		if (rc != 0)
			obj_undo(c, &o);
	}
	rc = close_fd(fd, path, false, rc);
	if (rc == 0)
		io_summary(c, "put", &o, bytes, t0);
	return rc;
}

/* strata obj get ID FILE: read a whole object, cut to its byte size. */
int cmd_obj_get(struct cli *c)
{
	struct cli_progress p;
	struct clovis_obj o;
	struct clovis_id id;
	const char *path = c->c_args[1];
	uint64_t size, nr, t0 = cli_now_ns();
	uint32_t shift;
	int rc, fd = -1;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc == 0)
		rc = open_out(path, &fd);
	if (rc != 0)
		return rc;
	size = o.ob_attr.oa_size_bytes;
	shift = o.ob_attr.oa_block_shift;
	nr = (size + (1ull << shift) - 1) >> shift;
	cli_progress_init(&p, c, "get", size);
	if (nr > 0)
		rc = cli_io_read(c, &o, 0, nr, size, fd, &p, "obj get");
	cli_progress_end(&p, rc == 0);
	rc = close_fd(fd, path, true, rc);
	if (rc == 0 && fd > 1)
		io_summary(c, "got", &o, size, t0);
	return rc;
}

/* Format ns since the epoch as local "YYYY-MM-DD HH:MM:SS". */
static const char *time_text(uint64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, size, "%llu ns", (unsigned long long)ns);
	return buf;
}

/* The layers of composite o, as stat lines or a JSON member. */
static void stat_layers(struct cli *c, struct clovis_obj *o, bool json)
{
	struct clovis_layer_info li[CLI_LAYERS_MAX];
	uint32_t nr = CLI_LAYERS_MAX;
	char name[24], where[160];

	if (o->ob_attr.oa_layout != CLOVIS_LAYOUT_COMPOSITE)
		return;
	if (clovis_obj_layer_list(o, li, &nr) != 0)
		nr = 0;
	if (nr > CLI_LAYERS_MAX)
		nr = CLI_LAYERS_MAX;
	if (json)
		printf(", \"layers\": [");
	for (uint32_t i = 0; i < nr; i++) {
		if (json) {
			printf("%s{\"layer\": %u, \"priority\": %u, ",
			       i ? ", " : "", li[i].li_layer,
			       li[i].li_priority);
			cli_layout_json(c, &li[i].li_attr);
			printf(", \"blocks\": %llu}",
			       (unsigned long long)li[i].li_blocks);
			continue;
		}
		printf("layer %-6u priority %u, %s%s, %llu blocks\n",
		       li[i].li_layer, li[i].li_priority,
		       cli_layout_name(li[i].li_attr.oa_layout, name,
				       sizeof name),
		       cli_layout_text(c, &li[i].li_attr, where, sizeof where),
		       (unsigned long long)li[i].li_blocks);
	}
	if (json)
		printf("]");
}

/* Print the attributes of o as one JSON object. */
static void stat_json(struct cli *c, const struct clovis_obj *o)
{
	const struct clovis_obj_attr *a = &o->ob_attr;

	printf("{");
	obj_id_json(o);
	printf(", \"block_size\": %u, \"block_shift\": %u, ",
	       1u << a->oa_block_shift, a->oa_block_shift);
	cli_layout_json(c, a);
	stat_layers(c, (struct clovis_obj *)o, true);
	printf(", \"size_blocks\": %llu, \"size_bytes\": %llu, "
	       "\"ctime_ns\": %llu, \"mtime_ns\": %llu}\n",
	       (unsigned long long)a->oa_size_blocks,
	       (unsigned long long)a->oa_size_bytes,
	       (unsigned long long)a->oa_ctime_ns,
	       (unsigned long long)a->oa_mtime_ns);
}

/* Print the layout lines of stat: tier and device, or pool, geometry
 * and unit size. */
static void stat_layout_text(struct cli *c, const struct clovis_obj_attr *a)
{
	char name[24], pool[40], unit[32];

	printf("layout       %s\n",
	       cli_layout_name(a->oa_layout, name, sizeof name));
	if (a->oa_layout == CLOVIS_LAYOUT_PLAIN) {
		printf("tier         %s (device %u)\n",
		       cli_tier_name(a->oa_tier), a->oa_dev);
		return;
	}
	if (a->oa_layout == CLOVIS_LAYOUT_PDCLUST)
		printf("geometry     %u+%u+%u (data + parity + spare units "
		       "per group)\n", a->oa_data_units, a->oa_parity_units,
		       a->oa_spare_units);
	else if (a->oa_layout == CLOVIS_LAYOUT_MIRROR)
		printf("geometry     %u copies, %u spare\n", a->oa_data_units,
		       a->oa_spare_units);
	else
		return;
	printf("unit size    %llu (%s)\n", 1ull << a->oa_unit_shift,
	       cli_human(1ull << a->oa_unit_shift, unit, sizeof unit));
	printf("pool         %s (index %u)\n",
	       cli_pool_name(c, a->oa_pool, pool, sizeof pool), a->oa_pool);
}

/* Print the attributes of o as aligned text. */
static void stat_text(struct cli *c, const struct clovis_obj *o)
{
	const struct clovis_obj_attr *a = &o->ob_attr;
	char id[CLOVIS_ID_STR_LEN], t[64], human[32];

	printf("id           %s\n", clovis_id_format(&o->ob_entity.en_id, id));
	printf("block size   %u (shift %u)\n", 1u << a->oa_block_shift,
	       a->oa_block_shift);
	stat_layout_text(c, a);
	stat_layers(c, (struct clovis_obj *)o, false);
	printf("size         %llu bytes (%s), %llu blocks\n",
	       (unsigned long long)a->oa_size_bytes,
	       cli_human(a->oa_size_bytes, human, sizeof human),
	       (unsigned long long)a->oa_size_blocks);
	printf("created      %s\n", time_text(a->oa_ctime_ns, t, sizeof t));
	printf("modified     %s\n", time_text(a->oa_mtime_ns, t, sizeof t));
}

/* strata obj stat ID: show an object's attributes. */
int cmd_obj_stat(struct cli *c)
{
	struct clovis_obj o;
	struct clovis_id id;
	int rc;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc != 0)
		return rc;
	if (c->c_json)
		stat_json(c, &o);
	else
		stat_text(c, &o);
	return CLI_OK;
}

/* strata obj rm ID: delete an object and its data. */
int cmd_obj_rm(struct cli *c)
{
	struct clovis_obj o;
	struct clovis_id id;
	int rc;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc != 0)
		return rc;
	rc = cli_entity_run(c, &o.ob_entity, CLOVIS_EO_DELETE);
	if (rc < 0)
		return cli_fail(c, rc, "delete object %s", c->c_args[0]);
	if (c->c_json) {
		printf("{");
		obj_id_json(&o);
		printf(", \"deleted\": true}\n");
	} else if (!c->c_quiet) {
		printf("deleted object %s\n", c->c_args[0]);
	}
	return CLI_OK;
}

/* strata obj ls: list object ids. */
int cmd_obj_ls(struct cli *c)
{
	return cli_list(c, CLOVIS_ET_OBJ, "objects");
}

/* Print one page of listed ids; first says whether any came before. */
static void list_page(const struct cli *c, const struct clovis_id *ids,
		      uint32_t nr, bool first)
{
	char buf[CLOVIS_ID_STR_LEN];
	uint32_t i;

	for (i = 0; i < nr; i++) {
		clovis_id_format(&ids[i], buf);
		if (c->c_json)
			printf("%s\"%s\"", first && i == 0 ? "" : ", ", buf);
		else
			printf("%s\n", buf);
	}
}

/* List every id of one type in the default container, in id order. */
int cli_list(struct cli *c, enum clovis_entity_type type, const char *what)
{
	struct clovis_id ids[256], after;
	bool first = true;
	uint32_t nr;
	int rc;

	if (c->c_json)
		printf("[");
	do {
		nr = 256;
		rc = cli_call(c, clovis_entity_list(c->c_cl,
						    clovis_default_realm(c->c_cl),
						    type, first ? NULL : &after,
						    ids, &nr));
		if (rc < 0)
			break;
		list_page(c, ids, nr, first);
		if (nr > 0) {
			after = ids[nr - 1];
			first = false;
		}
	} while (nr == 256);
	if (c->c_json)
		printf("]\n");
	if (rc < 0)
		return cli_fail(c, rc, "list %s", what);
	return CLI_OK;
}

/* The runs of composite o's blocks per layer (clovis_obj_layer_map, 256
 * at a time), as lines or a JSON member "runs"; each run names its layer
 * and that layer's tier (plain layers) or layout.  0, or the map's code
 * (the message printed by the caller). */
static int layer_runs(struct clovis_obj *o, bool json)
{
	struct clovis_layer_info li[CLI_LAYERS_MAX];
	struct clovis_layer_ext *x = calloc(256, sizeof *x);
	uint32_t nl = CLI_LAYERS_MAX, k = 0;
	uint64_t pos = 0, end = o->ob_attr.oa_size_blocks;
	int rc = x == NULL ? -ENOMEM : clovis_obj_layer_list(o, li, &nl);

	if (json)
		printf(", \"runs\": [");
	while (rc == 0 && pos < end) {
		uint32_t n = 256;
		uint64_t next = end;

		rc = clovis_obj_layer_map(o, pos, end - pos, x, &n, &next);
		for (uint32_t i = 0; rc == 0 && i < n; i++, k++) {
			const char *where = "?";

			for (uint32_t j = 0; j < nl && j < CLI_LAYERS_MAX; j++)
				if (li[j].li_layer == x[i].le_layer)
					where = li[j].li_attr.oa_layout ==
						CLOVIS_LAYOUT_PLAIN ?
						cli_tier_name(li[j].li_attr.oa_tier) :
						li[j].li_attr.oa_layout ==
						CLOVIS_LAYOUT_PDCLUST ? "pdclust" :
						"mirror";
			if (json)
				printf("%s{\"start\": %llu, \"blocks\": %llu, "
				       "\"layer\": %u, \"on\": \"%s\"}",
				       k ? ", " : "",
				       (unsigned long long)x[i].le_start,
				       (unsigned long long)x[i].le_blocks,
				       x[i].le_layer, where);
			else
				printf("blocks %llu..%llu on layer %u (%s)\n",
				       (unsigned long long)x[i].le_start,
				       (unsigned long long)(x[i].le_start +
							    x[i].le_blocks - 1),
				       x[i].le_layer, where);
		}
		if (rc == 0 && next <= pos)
			break;
		pos = next;
	}
	if (json)
		printf("]");
	free(x);
	return rc;
}

/* strata obj layers ID: a composite object's layers. */
int cmd_obj_layers(struct cli *c)
{
	struct clovis_obj o;
	struct clovis_id id;
	char name[24];
	int rc;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc != 0)
		return rc;
	if (o.ob_attr.oa_layout != CLOVIS_LAYOUT_COMPOSITE)
		return cli_fail(c, -EINVAL, "object %s: layout %s, not "
				"composite: it has no layers", c->c_args[0],
				cli_layout_name(o.ob_attr.oa_layout, name,
						sizeof name));
	if (c->c_json) {
		printf("{");
		obj_id_json(&o);
		stat_layers(c, &o, true);
		rc = layer_runs(&o, true);
		printf("}\n");
	} else {
		stat_layers(c, &o, false);
		rc = layer_runs(&o, false);
	}
	if (rc != 0)
		return cli_fail(c, rc, "map the layers of object %s",
				c->c_args[0]);
	return CLI_OK;
}

/* The layer of composite o to move to tier t (see obj move's help);
 * *top: o's top layer after it. */
static int move_target(struct cli *c, struct clovis_obj *o, uint32_t t,
		       uint32_t *layer, uint32_t *top)
{
	struct clovis_layer_info li[CLI_LAYERS_MAX];
	struct clovis_obj_attr a = {.oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = t,
				    .oa_block_shift = o->ob_attr.oa_block_shift};
	uint32_t nr = CLI_LAYERS_MAX, low = UINT32_MAX, prio;
	int rc = cli_call(c, clovis_obj_layer_list(o, li, &nr));

	if (rc < 0)
		return rc;
	nr = nr < CLI_LAYERS_MAX ? nr : CLI_LAYERS_MAX;
	*top = nr > 0 ? li[0].li_layer : 0;
	if (nr > 0 && li[0].li_attr.oa_layout == CLOVIS_LAYOUT_PLAIN &&
	    li[0].li_attr.oa_tier == t) {
		*layer = li[0].li_layer;
		return 0;
	}
	if (nr > 0 && li[0].li_attr.oa_layout == CLOVIS_LAYOUT_PLAIN &&
	    t < li[0].li_attr.oa_tier && li[0].li_priority < UINT32_MAX) {
		rc = cli_call(c, clovis_obj_layer_add(o, &a,
						      li[0].li_priority + 1,
						      layer));
		if (rc == 0)
			*top = *layer;
		return rc;
	}
	for (uint32_t i = 0; i < nr; i++) {
		if (li[i].li_attr.oa_layout == CLOVIS_LAYOUT_PLAIN &&
		    li[i].li_attr.oa_tier == t) {
			*layer = li[i].li_layer;
			return 0;
		}
		low = li[i].li_priority < low ? li[i].li_priority : low;
	}
	if (low == 0)
		return cli_fail(c, -ENOSPC, "move object %s: no layer "
				"priority left below the lowest (0)",
				c->c_args[0]);
	prio = low == UINT32_MAX ? CLI_TOP_LAYER : low - 1;
	return cli_call(c, clovis_obj_layer_add(o, &a, prio, layer));
}

/* Blocks of [a, b) of o held by a layer other than `layer` into *n: from
 * the layer list when the range is the whole object, else block by block
 * (one call each: bounded by the object's size, which the caller cut b
 * to). */
static int range_elsewhere(struct cli *c, struct clovis_obj *o, uint64_t a,
			   uint64_t b, uint32_t layer, uint64_t *n)
{
	struct clovis_layer_info li[CLI_LAYERS_MAX];
	uint32_t nr = CLI_LAYERS_MAX;
	int rc;

	*n = 0;
	if (a == 0 && b >= o->ob_attr.oa_size_blocks) {
		rc = cli_call(c, clovis_obj_layer_list(o, li, &nr));
		nr = nr < CLI_LAYERS_MAX ? nr : CLI_LAYERS_MAX;
		for (uint32_t i = 0; rc == 0 && i < nr; i++)
			if (li[i].li_layer != layer)
				*n += li[i].li_blocks;
		return rc;
	}
	for (uint64_t k = a; k < b; k++) {
		uint32_t l;

		rc = clovis_obj_layer_of(o, k, &l);
		if (rc == -ENOENT)
			continue; /* a hole */
		if (rc != 0)
			return cli_call(c, rc);
		*n += l != layer;
	}
	return 0;
}

/* strata obj move ID --to TIER [--range A:B]. */
int cmd_obj_move(struct cli *c)
{
	struct clovis_layer_info li[CLI_LAYERS_MAX];
	struct clovis_obj o;
	struct clovis_id id;
	uint32_t layer = 0, top = 0, nr = CLI_LAYERS_MAX, dropped = 0;
	uint64_t a, b, moved = 0, left = 0, after = 0;
	char name[24];
	int rc;

	if (c->c_to < 0)
		return cli_usage(c, "obj move needs --to TIER");
	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = cli_obj_open(c, c->c_args[0], &id, &o);
	if (rc != 0)
		return rc;
	if (o.ob_attr.oa_layout != CLOVIS_LAYOUT_COMPOSITE)
		return cli_fail(c, -EINVAL, "move object %s: layout %s, not "
				"composite: its blocks cannot move between "
				"layers", c->c_args[0],
				cli_layout_name(o.ob_attr.oa_layout, name,
						sizeof name));
	a = c->c_range_set ? c->c_range_a : 0;
	b = c->c_range_set ? c->c_range_b : o.ob_attr.oa_size_blocks;
	if (b > CLOVIS_BLOCK_NR_MAX)
		return cli_fail(c, -EINVAL, "move object %s: blocks %llu to "
				"%llu: out of range (an object has at most "
				"2^48 blocks)", c->c_args[0],
				(unsigned long long)a,
				(unsigned long long)(b - 1));
	b = b < o.ob_attr.oa_size_blocks ? b : o.ob_attr.oa_size_blocks;
	rc = move_target(c, &o, (uint32_t)c->c_to, &layer, &top);
	if (rc > 0)
		return rc; /* reported */
	/* the blocks of the range held elsewhere after the move were
	 * written meanwhile (whole object: from the layer list; a range of
	 * at most CLI_LEFT_COUNT_MAX blocks: block by block; else not
	 * counted) */
	if (rc == 0 && b > a && ((a == 0 && b >= o.ob_attr.oa_size_blocks) ||
				 b - a <= CLI_LEFT_COUNT_MAX))
		rc = cli_call(c, clovis_obj_layer_move(&o, a, b - a, layer,
						       &moved));
	if (rc == 0 && b > a)
		rc = range_elsewhere(c, &o, a, b, layer, &after);
	left = rc == 0 ? after : 0;
	if (rc == 0)
		rc = cli_call(c, clovis_obj_layer_list(&o, li, &nr));
	nr = nr < CLI_LAYERS_MAX ? nr : CLI_LAYERS_MAX;
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		if (li[i].li_layer == layer)
			continue;
		if (li[i].li_blocks > 0) {
			continue;
		} else if (li[i].li_layer != top) {
			rc = cli_call(c, clovis_obj_layer_drop(&o,
							       li[i].li_layer));
			dropped += rc == 0;
		}
	}
	if (rc < 0)
		return cli_fail(c, rc, "move object %s to %s", c->c_args[0],
				cli_tier_name((uint32_t)c->c_to));
	if (c->c_json) {
		printf("{");
		obj_id_json(&o);
		printf(", \"to\": \"%s\", \"layer\": %u, \"start\": %llu, "
		       "\"end\": %llu, \"moved_blocks\": %llu, "
		       "\"left_blocks\": %llu, \"dropped_layers\": %u}\n",
		       cli_tier_name((uint32_t)c->c_to), layer,
		       (unsigned long long)a, (unsigned long long)b,
		       (unsigned long long)moved, (unsigned long long)left,
		       dropped);
	} else if (!c->c_quiet) {
		printf("moved %llu blocks of %s (of blocks %llu to %llu) to "
		       "layer %u on %s", (unsigned long long)moved,
		       c->c_args[0], (unsigned long long)a,
		       (unsigned long long)(b > a ? b - 1 : a),
		       layer, cli_tier_name((uint32_t)c->c_to));
		if (left > 0)
			printf("; %llu blocks written meanwhile stayed with "
			       "their newer data", (unsigned long long)left);
		if (dropped > 0)
			printf("; %u empty layer%s dropped", dropped,
			       dropped > 1 ? "s" : "");
		printf("\n");
	}
	return CLI_OK;
}

