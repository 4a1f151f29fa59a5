/*
 * cli_dtx.c — strata dtx ls / dtx resolve: the distributed transactions
 * the servers of a cluster know (dtm/README.md).
 *
 *   dtx ls        each server's in-doubt and recent dtx records (newest
 *                 first): id, state, participants, age; --json
 *   dtx resolve dead|alive SERVER
 *                 mark SERVER gone for good (or back) on every server that
 *                 answers: the termination rule then takes its answer as
 *                 UNKNOWN unless a live participant holds COMMITTED
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"
#include "clovis/clovis_internal.h"
#include "dtm/dtm_msg.h"

static const char *state_name(uint32_t st)
{
	static const char *n[] = {"UNKNOWN", "PREPARED", "COMMITTED",
				  "ABORTED"};

	return st <= DTM_ABORTED ? n[st] : "?";
}

static int dtx_open(struct cli *c)
{
	static char conf[PATH_MAX + 64];

	if (c->c_cluster == NULL && c->c_server == NULL) {
		snprintf(conf, sizeof conf, "%s/cluster.yaml", c->c_dir);
		c->c_cluster = conf;
	}
	return cli_cluster_open(c);
}

/* Call server s with a DtxReq; *rp on success. */
static int dtx_call(struct cli *c, uint32_t s, const DtxReq *q, DtxReply **rp)
{
	uint8_t *b;
	size_t bl, rl = 0;
	void *rb = NULL;
	int rc = dtm_pack(&q->base, &b, &bl);

	*rp = NULL;
	if (rc == 0)
		rc = cluster_dtx_call(c->c_cl, s, DTM_OP, b, bl, NULL, 0, DTX_CLI_MS,
				      &rb, &rl);
	if (rc == 0)
		rc = dtm_reply_decode(rb, rl, rp);
	free(rb);
	free(b);
	return rc;
}

int cmd_dtx_ls(struct cli *c)
{
	uint32_t n;
	uint64_t now = dtm_hlc_us(dtm_hlc_now()), doubt = 0, down = 0;
	bool first = true;
	int rc = dtx_open(c);

	if (rc != 0)
		return rc;
	n = cluster_nr_servers(c->c_cl);
	if (c->c_json)
		printf("{\"servers\": [");
	for (uint32_t s = 0; s < n; s++) {
		DtxReq q = DTX_REQ__INIT;
		DtxReply *rp;
		const char *name = cluster_server_name(c->c_cl, s);

		q.kind = DTM_MSG_LIST;
		q.clock = dtm_hlc_now();
		q.limit = DTM_LIST_MAX;
		q.home = s + 1; /* home s, where the map has it served */
		rc = dtx_call(c, s, &q, &rp);
		if (rc != 0) {
			down++;
			if (c->c_json)
				printf("%s{\"server\": \"%s\", \"up\": false}",
				       s ? ", " : "", name);
			else
				printf("%s: DOWN (%s)\n", name, clovis_errmsg());
			continue;
		}
		if (c->c_json)
			printf("%s{\"server\": \"%s\", \"up\": true, \"dead\": "
			       "%" PRIu64 ", \"in_doubt\": %" PRIu64 ", "
			       "\"dtx\": [", s ? ", " : "", name, rp->dead,
			       rp->in_doubt);
		else
			printf("%s: %zu records shown, %" PRIu64 " in doubt%s\n",
			       name, rp->n_list, rp->in_doubt,
			       rp->dead ? " (servers marked dead)" : "");
		doubt += rp->in_doubt;
		first = true;
		for (size_t i = 0; i < rp->n_list; i++) {
			const DtxInfo *e = rp->list[i];
			struct st_dtx_id id = {.di_hlc = e->hlc,
						   .di_node = e->node};
			char ids[DTM_ID_STR_LEN], parts[512] = "";
			size_t pl = 0;
			double age = now > e->time_us ?
				     (double)(now - e->time_us) / 1e6 : 0;

			for (size_t k = 0; k < e->n_parts && pl < 400; k++)
				pl += (size_t)snprintf(parts + pl,
						       sizeof parts - pl,
						       c->c_json ? "%s\"%s\"" :
						       "%s%s", k ? "," : "",
						       e->parts[k] < n ?
						       cluster_server_name(
							 c->c_cl, e->parts[k]) :
						       "?");
			dtm_id_format(&id, ids);
			if (c->c_json)
				printf("%s{\"id\": \"%s\", \"state\": \"%s\", "
				       "\"participants\": [%s], \"age_s\": "
				       "%.1f, \"members\": %u}",
				       first ? "" : ", ", ids,
				       state_name(e->state), parts, age,
				       e->members);
			else
				printf("  %-28s %-9s parts %-20s %8.1f s ago"
				       "%s\n", ids, state_name(e->state),
				       parts, age,
				       e->state == DTM_PREPARED ? "  IN DOUBT"
								: "");
			first = false;
		}
		if (c->c_json)
			printf("]}");
		dtx_reply__free_unpacked(rp, NULL);
	}
	if (c->c_json)
		printf("], \"in_doubt\": %" PRIu64 ", \"down\": %" PRIu64
		       "}\n", doubt, down);
	else
		printf("in doubt: %" PRIu64 ", servers down: %" PRIu64 "\n",
		       doubt, down);
	return 0;
}

int cmd_dtx_resolve(struct cli *c)
{
	uint32_t n, who = UINT32_MAX, done = 0;
	bool dead;
	int rc;

	if (strcmp(c->c_args[0], "dead") != 0 &&
	    strcmp(c->c_args[0], "alive") != 0)
		return cli_usage(c, "dtx resolve: %s: say dead or alive",
				 c->c_args[0]);
	dead = strcmp(c->c_args[0], "dead") == 0;
	rc = dtx_open(c);
	if (rc != 0)
		return rc;
	n = cluster_nr_servers(c->c_cl);
	for (uint32_t s = 0; s < n; s++)
		if (strcmp(cluster_server_name(c->c_cl, s), c->c_args[1]) == 0)
			who = s;
	if (who == UINT32_MAX)
		return cli_usage(c, "dtx resolve: no server %s in the cluster",
				 c->c_args[1]);
	for (uint32_t s = 0; s < n; s++) {
		DtxReq q = DTX_REQ__INIT;
		DtxReply *rp;

		if (s == who)
			continue;
		q.kind = DTM_MSG_DEAD;
		q.clock = dtm_hlc_now();
		q.server = who;
		q.decision = dead ? 0 : 1; /* 1: alive again */
		if (dtx_call(c, s, &q, &rp) == 0) {
			done++;
			dtx_reply__free_unpacked(rp, NULL);
		} else {
			fprintf(stderr, "strata: dtx resolve: server %s: %s\n",
				cluster_server_name(c->c_cl, s),
				clovis_errmsg());
		}
	}
	printf("server %s marked %s on %u of %u servers\n", c->c_args[1],
	       dead ? "dead" : "alive", done, n - 1);
	return done == n - 1 ? 0 : CLI_FAIL;
}
