/*
 * strata_sim.c — strata-sim, the placement simulation of issue 28 item 5:
 * the real placement code (core/pg.h for metadata groups,
 * layouts/pdclust.h for data units) over maps far larger than a test
 * cluster, with no I/O.
 *
 *   strata-sim [--servers N] [--devices D] [--objects M] [--groups G]
 *              [--layout N+K+S] [--replicas R] [--pgs-per-server P]
 *              [--enclosure E] [--threads T] [--seed S] [--only md|data]
 *              [--json] [--check]
 *
 * The map: N servers "s0".."s<N-1>" of D devices each, E servers per
 * enclosure (server i in enclosure i / E).  Metadata: N * P placement
 * groups, each on R servers by pg_place(); object i (id {seed, 1024 + i})
 * belongs to pg_of(id).  Data: a pdclust pool holds at most PD_POOL_MAX
 * (256) devices, so the servers are dealt round robin into pools of at
 * most (256 - D) / D servers (24 at D = 10: room for one server to join),
 * each pool's failure domains being its servers (pd_group_map_dom(), as
 * in a cluster store, docs/cluster.md).  An object's pool is chosen when
 * it is made and recorded in its layout; the simulation draws it from a
 * hash of the id, weighted by the pool's servers (pools differ by one
 * server when the servers do not divide evenly).  Each object has G parity groups of
 * N + K + S units; a group's data and parity units count as load on their
 * devices, spare slots stay empty until a rebuild.
 *
 * Figures (each beside its goal, or its minimum, as a ratio):
 *   md.balance      replicas of object metadata per server, max / mean
 *                   (and of groups: md.balance_groups), with the
 *                   exceptions of pg_balance() (core/pg.h) at --tol-ppm
 *                   (30,000), weighing each group by its objects (or by 1:
 *                   --balance-by groups); md.balance_hrw: HRW alone;
 *                   md.exceptions: replicas an exception places
 *   md.add, md.rm   object metadata replicas moved when server N joins
 *                   (enclosure 0) and when server N / 2 leaves, over the
 *                   minimum 1/(N+1) and 1/N: the new map balanced again
 *                   from the base map's table and sets, as the map in
 *                   force would be (md.add_hrw, md.rm_hrw: HRW alone)
 *   md.rebuild_src  servers holding the other replicas of the groups of
 *                   the server that left, over the servers outside its
 *                   enclosure (the enclosure rule keeps the others out);
 *                   at most (R - 1) x its groups, so with 128 groups a
 *                   server it reaches about half of 1,000 (no goal: the
 *                   "random" column is the expected count)
 *   data.balance    units per device, max / mean (and per server)
 *   data.rm_spare   units moved when server N / 2 leaves and its units are
 *                   rebuilt into their groups' spare slots (Strata's repair)
 *   data.rm_remap   the same server's pool made again without it
 *   data.add_join   server N joins the smallest pool, made again with it
 *                   (and both remaps as a fraction of their pool's units);
 *                   --placement hrw maps units with pd_group_map_hrw() (the
 *                   keyed placement of growing pools) instead of the
 *                   product's pd_group_map_dom()
 *   data.rebuild_src  devices a rebuild of device 3 of server N / 3 reads
 *                   from, over the devices of its pool on other servers
 * Beside each balance figure, the max / mean that independent random
 * counts of the same mean would give (1 + sqrt(2 ln n) / sqrt(mean), n
 * counters, a normal approximation): what a hash placement cannot beat.
 * The movement figures' minimum is a perfectly balanced server's share,
 * 1/(N+1) or 1/N; the moved fraction is exactly the server's own share
 * (--check), so their ratio is that server's load over the mean.
 *
 * --check asserts what must hold exactly, whatever the sizes: with HRW
 * alone, every group whose set changes on the add holds the new server
 * and changed by one member, and on the removal exactly the groups that
 * held the server changed, by one; every group has R servers in min(R,
 * enclosures) enclosures, balanced or not; every exception the balancer
 * made applies, and no server is over its limit; every pdclust group
 * has its units on distinct servers; the spare rebuild moves exactly the
 * units of the server that left; the device rebuild reads from every
 * device of its pool on other servers; the units counted add up.  It ends
 * with "N passed, N failed".  Runs on T threads (default 2), each with
 * counters of its own, summed at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pg.h"
#include "core/types.h"
#include "layouts/pdclust.h"

#define SIM_THREADS_MAX 16u
#define SIM_POOL_SRV_MAX (PD_POOL_MAX) /* servers of one pool, at most */

/* One pdclust pool: its servers, and per pool device the physical device
 * (server * D + d) and the failure domain (index of its server). */
struct sim_pool {
	uint32_t sp_nr_srv;
	uint32_t sp_srv[SIM_POOL_SRV_MAX];
	uint32_t sp_phys[PD_POOL_MAX];
	uint8_t sp_dom[PD_POOL_MAX];
	/* keys of its servers and devices (pd_group_map_hrw()) */
	uint64_t sp_dkey[SIM_POOL_SRV_MAX], sp_vkey[PD_POOL_MAX];
	struct pd_geom sp_geom;
};

struct sim {
	uint32_t s_servers, s_devs, s_repl, s_pgs_per, s_encl, s_threads;
	uint32_t s_groups, s_n, s_k, s_s;
	uint64_t s_objects, s_seed;
	bool s_json, s_check;
	bool s_hrw; /* --placement hrw: pd_group_map_hrw() */
	bool s_no_md, s_no_data; /* --only data, --only md */
	/* Metadata maps: base (X out), add (X in), rm (X and Y out). */
	struct pg_cand *s_base, *s_add, *s_rm;
	uint32_t s_nr_pgs, s_x, s_y;
	uint32_t *s_pg_objs;
	/* Each map's HRW sets (nr_pgs x R) and balancer exceptions. */
	uint32_t *s_set_b, *s_set_a, *s_set_r;
	uint32_t *s_eff_b; /* the base map's sets with its exceptions */
	struct pg_upmap *s_up_b, *s_up_a, *s_up_r;
	uint32_t s_nup_b, s_nup_a, s_nup_r, s_tol_ppm;
	uint64_t *s_pg_sizes; /* the balancer's group sizes: objects */
	bool s_by_groups;     /* --balance-by groups: every group size 1 */
	double s_secs_bal;
	/* Pools; q_x grows by X, q_y loses Y; F the failed device. */
	uint32_t s_nr_pools, s_q_x, s_q_y, s_q_f, s_f;
	struct sim_pool *s_pools, s_pool_x, s_pool_y;
};

/* What one thread counts. */
struct sim_cnt {
	/* metadata */
	uint64_t *c_md_objs;   /* object replicas per server (base map) */
	uint64_t *c_md_grps;   /* group replicas per server */
	uint64_t *c_md_grps_hrw; /* the same, HRW alone */
	uint64_t c_md_add_moved, c_md_add_x, c_md_rm_moved, c_md_rm_y;
	uint64_t c_md_add_hrw, c_md_rm_hrw; /* moved, HRW alone */
	uint64_t c_md_ex_b;    /* exceptions that apply to the base map */
	uint8_t *c_md_src;     /* servers holding Y's groups' other replicas */
	uint64_t c_md_bad_add, c_md_bad_rm, c_md_bad_encl, c_md_bad_nr;
	/* data */
	/* data + parity units per device: 32 bits keep a thread's table in
	 * its core's cache at 100,000 devices (at most one unit of a group
	 * per device, and objects x groups < 2^32: sim_args()) */
	uint32_t *c_units;
	uint64_t *c_units_sum; /* the threads' c_units summed (thread 0) */
	uint64_t *c_f_reads;   /* rebuild of F: units read per device */
	uint64_t c_f_groups, c_units_total;
	uint64_t c_rm_spare, c_rm_remap, c_rm_units_y, c_pool_y_units;
	uint64_t c_add_join, c_pool_x_units;
	uint64_t c_bad_distinct, c_bad_spare;
	uint64_t *c_pg_objs;   /* objects per group (first pass) */
};

struct sim_job {
	struct sim *j_sim;
	struct sim_cnt j_cnt;
	uint64_t j_begin, j_end;
	void (*j_fn)(struct sim *, struct sim_cnt *, uint64_t, uint64_t);
};

static double sim_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *sim_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (p == NULL) {
		fprintf(stderr, "strata-sim: out of memory (%zu x %zu)\n", n,
			size);
		exit(2);
	}
	return p;
}

/* splitmix64 finaliser, for the simulation's own draws (the pool of an
 * object); the placement hashes are the product's. */
static uint64_t sim_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static struct st_id sim_id(const struct sim *s, uint64_t i)
{
	return (struct st_id){s->s_seed, ST_ID_USER_MIN + i};
}

/* The pool of an object: drawn with a weight of its servers, as a space
 * aware allocator would (pools differ by one server when the servers do
 * not divide evenly): a server drawn uniformly, and its pool. */
static uint32_t sim_pool_of(const struct sim *s, const struct st_id *id)
{
	uint64_t h = sim_mix(id->si_hi ^ sim_mix(id->si_lo ^ 0x706f6f6cull));

	return (uint32_t)(((unsigned __int128)h * s->s_servers) >> 64) %
	       s->s_nr_pools;
}

/* ------------------------------------------------------------ maps */

/* Fill pool's device tables from its server list (skip: a server left
 * out, UINT32_MAX for none; extra: one joining last, UINT32_MAX none). */
static void sim_pool_make(const struct sim *s, struct sim_pool *dst,
			  const struct sim_pool *src, uint32_t skip,
			  uint32_t extra)
{
	uint32_t nr = 0;

	for (uint32_t j = 0; j < src->sp_nr_srv; j++)
		if (src->sp_srv[j] != skip)
			dst->sp_srv[nr++] = src->sp_srv[j];
	if (extra != UINT32_MAX)
		dst->sp_srv[nr++] = extra;
	dst->sp_nr_srv = nr;
	for (uint32_t j = 0; j < nr; j++) {
		dst->sp_dkey[j] = s->s_base[dst->sp_srv[j]].pc_key;
		for (uint32_t d = 0; d < s->s_devs; d++) {
			dst->sp_phys[j * s->s_devs + d] =
				dst->sp_srv[j] * s->s_devs + d;
			dst->sp_dom[j * s->s_devs + d] = (uint8_t)j;
			/* a device's key: its server's and its number */
			dst->sp_vkey[j * s->s_devs + d] =
				sim_mix(dst->sp_dkey[j] ^ (d + 1));
		}
	}
	dst->sp_geom = (struct pd_geom){s->s_n, s->s_k, s->s_s,
					nr * s->s_devs, 20};
}

static int sim_maps(struct sim *s)
{
	uint32_t n = s->s_servers, per = (PD_POOL_MAX - s->s_devs) / s->s_devs;
	struct sim_pool tmp;

	s->s_base = sim_calloc(n + 1, sizeof *s->s_base);
	s->s_add = sim_calloc(n + 1, sizeof *s->s_add);
	s->s_rm = sim_calloc(n + 1, sizeof *s->s_rm);
	for (uint32_t i = 0; i <= n; i++) {
		char name[24];

		snprintf(name, sizeof name, "s%u", i);
		s->s_base[i].pc_key = pg_key(name);
		s->s_base[i].pc_encl = i < n ? i / s->s_encl : 0;
		s->s_base[i].pc_in = i < n;
	}
	s->s_x = n;
	s->s_y = n / 2;
	memcpy(s->s_add, s->s_base, (n + 1) * sizeof *s->s_add);
	memcpy(s->s_rm, s->s_base, (n + 1) * sizeof *s->s_rm);
	s->s_add[s->s_x].pc_in = true;
	s->s_rm[s->s_y].pc_in = false;
	s->s_nr_pgs = n * s->s_pgs_per;
	s->s_pg_objs = sim_calloc(s->s_nr_pgs, sizeof *s->s_pg_objs);

	s->s_nr_pools = (n + per - 1) / per;
	s->s_pools = sim_calloc(s->s_nr_pools, sizeof *s->s_pools);
	for (uint32_t i = 0; i < n; i++) {
		struct sim_pool *p = &s->s_pools[i % s->s_nr_pools];

		p->sp_srv[p->sp_nr_srv++] = i;
	}
	for (uint32_t q = 0; q < s->s_nr_pools; q++) {
		tmp = s->s_pools[q];
		sim_pool_make(s, &s->s_pools[q], &tmp, UINT32_MAX, UINT32_MAX);
		if (pd_geom_check(&s->s_pools[q].sp_geom) != 0 ||
		    s->s_pools[q].sp_nr_srv < s->s_n + s->s_k + s->s_s) {
			fprintf(stderr, "strata-sim: pool %u: %u servers of %u "
				"devices cannot hold %u+%u+%u on distinct "
				"servers\n", q, s->s_pools[q].sp_nr_srv,
				s->s_devs, s->s_n, s->s_k, s->s_s);
			return -EINVAL;
		}
	}
	s->s_q_x = n % s->s_nr_pools; /* the next in the deal: a smallest */
	s->s_q_y = s->s_y % s->s_nr_pools;
	s->s_f = (n / 3) * s->s_devs + 3 % s->s_devs;
	s->s_q_f = (n / 3) % s->s_nr_pools;
	sim_pool_make(s, &s->s_pool_x, &s->s_pools[s->s_q_x], UINT32_MAX,
		      s->s_x);
	sim_pool_make(s, &s->s_pool_y, &s->s_pools[s->s_q_y], s->s_y,
		      UINT32_MAX);
	return 0;
}

/* ------------------------------------------------------- threads */

static void *sim_thread(void *arg)
{
	struct sim_job *j = arg;

	j->j_fn(j->j_sim, &j->j_cnt, j->j_begin, j->j_end);
	return NULL;
}

/* Run fn over [0, total) in s_threads contiguous slices, each with the
 * counters of jobs[t]. */
static void sim_run(struct sim *s, struct sim_job *jobs, uint64_t total,
		    void (*fn)(struct sim *, struct sim_cnt *, uint64_t,
			       uint64_t))
{
	pthread_t tid[SIM_THREADS_MAX];

	for (uint32_t t = 0; t < s->s_threads; t++) {
		jobs[t].j_sim = s;
		jobs[t].j_fn = fn;
		jobs[t].j_begin = total * t / s->s_threads;
		jobs[t].j_end = total * (t + 1) / s->s_threads;
		if (pthread_create(&tid[t], NULL, sim_thread, &jobs[t]) != 0) {
			fprintf(stderr, "strata-sim: pthread_create failed\n");
			exit(2);
		}
	}
	for (uint32_t t = 0; t < s->s_threads; t++)
		pthread_join(tid[t], NULL);
}

/* ------------------------------------------------------ metadata */

static void sim_count_pgs(struct sim *s, struct sim_cnt *c, uint64_t b,
			  uint64_t e)
{
	for (uint64_t i = b; i < e; i++) {
		struct st_id id = sim_id(s, i);

		c->c_pg_objs[pg_of(&id, s->s_nr_pgs)]++;
	}
}

static bool sim_has(const uint32_t *set, uint32_t r, uint32_t x)
{
	for (uint32_t i = 0; i < r; i++)
		if (set[i] == x)
			return true;
	return false;
}

/* Members of a that b lacks. */
static uint32_t sim_diff(const uint32_t *a, const uint32_t *b, uint32_t r)
{
	uint32_t d = 0;

	for (uint32_t i = 0; i < r; i++)
		d += !sim_has(b, r, a[i]);
	return d;
}

/* set[] spans min(r, enclosures of the map) enclosures. */
static bool sim_encl_ok(const struct sim *s, const struct pg_cand *c,
			const uint32_t *set, uint32_t r)
{
	uint32_t encls = (s->s_servers + s->s_encl - 1) / s->s_encl, seen = 0;

	for (uint32_t a = 0; a < r; a++) {
		bool first = true;

		for (uint32_t b = 0; b < a; b++)
			first &= c[set[a]].pc_encl != c[set[b]].pc_encl;
		seen += first;
	}
	return seen == (r < encls ? r : encls);
}

/* HRW alone: each map's sets kept for the balancer, the exact movement
 * checks, the raw balance. */
static void sim_place_pgs(struct sim *s, struct sim_cnt *c, uint64_t b,
			  uint64_t e)
{
	uint32_t r = s->s_repl, nr = s->s_servers + 1;

	for (uint64_t g = b; g < e; g++) {
		uint64_t objs = s->s_pg_objs[g];
		uint32_t *base = &s->s_set_b[g * r], *add = &s->s_set_a[g * r];
		uint32_t *rm = &s->s_set_r[g * r], d;

		if (pg_place((uint32_t)g, s->s_base, nr, r, base) != (int)r ||
		    pg_place((uint32_t)g, s->s_add, nr, r, add) != (int)r ||
		    pg_place((uint32_t)g, s->s_rm, nr, r, rm) != (int)r) {
			c->c_md_bad_nr++;
			continue;
		}
		if (!sim_encl_ok(s, s->s_base, base, r))
			c->c_md_bad_encl++;
		for (uint32_t i = 0; i < r; i++)
			c->c_md_grps_hrw[base[i]]++;
		d = sim_diff(add, base, r);
		c->c_md_add_hrw += d * objs;
		if (sim_has(add, r, s->s_x)) {
			c->c_md_add_x += objs;
			c->c_md_bad_add += d != 1;
		} else {
			c->c_md_bad_add += d != 0;
		}
		d = sim_diff(base, rm, r);
		c->c_md_rm_hrw += d * objs;
		if (sim_has(base, r, s->s_y)) {
			c->c_md_rm_y += objs;
			c->c_md_bad_rm += d != 1;
		} else {
			c->c_md_bad_rm += d != 0;
		}
	}
}

/* Balanced: each map's sets with its exceptions (pg_upmap_apply()), as
 * every server would compute them. */
static void sim_count_bal(struct sim *s, struct sim_cnt *c, uint64_t b,
			  uint64_t e)
{
	uint32_t r = s->s_repl, nr = s->s_servers + 1;
	uint32_t base[PG_REPLICAS_MAX], add[PG_REPLICAS_MAX];
	uint32_t rm[PG_REPLICAS_MAX];

	for (uint64_t g = b; g < e; g++) {
		uint64_t objs = s->s_pg_objs[g];

		memcpy(base, &s->s_eff_b[g * r], r * sizeof *base);
		pg_upmap_apply((uint32_t)g, s->s_add, nr, s->s_up_a,
			       s->s_nup_a, &s->s_set_a[g * r], r, add);
		pg_upmap_apply((uint32_t)g, s->s_rm, nr, s->s_up_r,
			       s->s_nup_r, &s->s_set_r[g * r], r, rm);
		if (!sim_encl_ok(s, s->s_base, base, r) ||
		    !sim_encl_ok(s, s->s_add, add, r) ||
		    !sim_encl_ok(s, s->s_rm, rm, r))
			c->c_md_bad_encl++;
		for (uint32_t i = 0; i < r; i++) {
			c->c_md_objs[base[i]] += objs;
			c->c_md_grps[base[i]]++;
			c->c_md_ex_b += base[i] != s->s_set_b[g * r + i];
		}
		c->c_md_add_moved += sim_diff(add, base, r) * objs;
		c->c_md_rm_moved += sim_diff(base, rm, r) * objs;
		if (sim_has(base, r, s->s_y))
			for (uint32_t i = 0; i < r; i++)
				if (base[i] != s->s_y)
					c->c_md_src[base[i]] = 1;
	}
}

/* The three maps' exception tables: the base map balanced from none, the
 * add and rm maps from the base map's (as the map in force would be). */
static void sim_balance(struct sim *s)
{
	uint32_t nr = s->s_servers + 1, r = s->s_repl;
	uint32_t *eff_b = sim_calloc((size_t)s->s_nr_pgs * r, sizeof *eff_b);
	double t0 = sim_now();
	int rc;

	s->s_eff_b = eff_b; /* kept: sim_count_bal() counts from it */

	if (!s->s_by_groups) {
		s->s_pg_sizes = sim_calloc(s->s_nr_pgs, sizeof *s->s_pg_sizes);
		for (uint32_t g = 0; g < s->s_nr_pgs; g++)
			s->s_pg_sizes[g] = s->s_pg_objs[g];
	}
	rc = pg_balance(s->s_base, nr, s->s_nr_pgs, r, s->s_set_b, NULL,
			s->s_pg_sizes, s->s_tol_ppm, NULL, 0, &s->s_up_b, &s->s_nup_b);
	/* What holds each group under the base map: where the add and rm
	 * maps' balancer gives replicas back to when it can. */
	for (uint32_t g = 0; rc == 0 && g < s->s_nr_pgs; g++)
		pg_upmap_apply(g, s->s_base, nr, s->s_up_b, s->s_nup_b,
			       &s->s_set_b[(size_t)g * r], r,
			       &eff_b[(size_t)g * r]);
	if (rc == 0)
		rc = pg_balance(s->s_add, nr, s->s_nr_pgs, r, s->s_set_a,
				eff_b, s->s_pg_sizes, s->s_tol_ppm, s->s_up_b,
				s->s_nup_b,
				&s->s_up_a, &s->s_nup_a);
	if (rc == 0)
		rc = pg_balance(s->s_rm, nr, s->s_nr_pgs, r, s->s_set_r,
				eff_b, s->s_pg_sizes, s->s_tol_ppm, s->s_up_b,
				s->s_nup_b,
				&s->s_up_r, &s->s_nup_r);
	if (rc != 0) {
		fprintf(stderr, "strata-sim: pg_balance failed: %d\n", rc);
		exit(2);
	}
	s->s_secs_bal = sim_now() - t0;
}

/* ---------------------------------------------------------- data */

/* The pool devices of group g of id: the product's placement, or with
 * --placement hrw the keyed one. */
static void sim_map(const struct sim *s, const struct sim_pool *p,
		    const struct st_id *id, uint64_t g, uint32_t *devs)
{
	if (s->s_hrw)
		pd_group_map_hrw(&p->sp_geom, p->sp_dom, p->sp_nr_srv,
				 p->sp_dkey, p->sp_vkey, id, g, devs);
	else
		pd_group_map_dom(&p->sp_geom, p->sp_dom, p->sp_nr_srv, id, g,
				 devs);
}

/* Units of group g of id whose device differs between pools a and b
 * (data and parity slots only). */
static uint32_t sim_moved(const struct sim *s, const struct sim_pool *a,
			  const struct sim_pool *b, const struct st_id *id,
			  uint64_t g, const uint32_t *devs_a)
{
	uint32_t devs_b[ST_LAYOUT_UNITS_MAX], m = 0;

	sim_map(s, b, id, g, devs_b);
	for (uint32_t i = 0; i < s->s_n + s->s_k; i++)
		m += a->sp_phys[devs_a[i]] != b->sp_phys[devs_b[i]];
	return m;
}

/* Whether the units of a group lie on distinct servers. */
static bool sim_distinct(const struct sim *s, const struct sim_pool *p,
			 const uint32_t *devs, uint32_t w)
{
	for (uint32_t a = 0; a < w; a++)
		for (uint32_t b = a + 1; b < w; b++)
			if (p->sp_dom[devs[a]] == p->sp_dom[devs[b]])
				return false;
	return true;
}

/* Device F fails: the groups holding a data or parity unit on it are read
 * from their other data and parity units, rebuilt into the spare slot. */
static void sim_rebuild_f(struct sim *s, struct sim_cnt *c,
			  const struct sim_pool *p, const uint32_t *devs)
{
	uint32_t nk = s->s_n + s->s_k, hit = nk;

	for (uint32_t i = 0; i < nk; i++)
		if (p->sp_phys[devs[i]] == s->s_f)
			hit = i;
	if (hit == nk)
		return;
	c->c_f_groups++;
	for (uint32_t i = 0; i < nk; i++)
		if (i != hit)
			c->c_f_reads[p->sp_phys[devs[i]]]++;
}

/* Server Y leaves: its units are rebuilt into their groups' spare slots
 * (the first spare slot on a surviving server). */
static void sim_rm_spare(struct sim *s, struct sim_cnt *c,
			 const struct sim_pool *p, const uint32_t *devs)
{
	uint32_t nk = s->s_n + s->s_k, w = nk + s->s_s, lost = 0, spare = 0;

	for (uint32_t i = 0; i < nk; i++)
		lost += p->sp_phys[devs[i]] / s->s_devs == s->s_y;
	for (uint32_t i = nk; i < w; i++)
		spare += p->sp_phys[devs[i]] / s->s_devs != s->s_y;
	c->c_rm_units_y += lost;
	if (lost == 0)
		return;
	if (lost > spare)
		c->c_bad_spare++;
	else
		c->c_rm_spare += lost;
}

static void sim_place_units(struct sim *s, struct sim_cnt *c, uint64_t b,
			    uint64_t e)
{
	uint32_t nk = s->s_n + s->s_k, w = nk + s->s_s;
	uint32_t devs[ST_LAYOUT_UNITS_MAX];

	for (uint64_t i = b; i < e; i++) {
		struct st_id id = sim_id(s, i);
		uint32_t q = sim_pool_of(s, &id);
		const struct sim_pool *p = &s->s_pools[q];

		for (uint64_t g = 0; g < s->s_groups; g++) {
			sim_map(s, p, &id, g, devs);
			for (uint32_t u = 0; u < nk; u++)
				c->c_units[p->sp_phys[devs[u]]]++;
			c->c_units_total += nk;
			if (s->s_check && !sim_distinct(s, p, devs, w))
				c->c_bad_distinct++;
			if (q == s->s_q_f)
				sim_rebuild_f(s, c, p, devs);
			if (q == s->s_q_y) {
				sim_rm_spare(s, c, p, devs);
				c->c_rm_remap += sim_moved(s, p, &s->s_pool_y,
							   &id, g, devs);
				c->c_pool_y_units += nk;
			}
			if (q == s->s_q_x) {
				c->c_add_join += sim_moved(s, p, &s->s_pool_x,
							   &id, g, devs);
				c->c_pool_x_units += nk;
			}
		}
	}
}

/* ------------------------------------------------------- figures */

#define SIM_FIGS_MAX 24u

/* How a figure meets its goal. */
enum sim_kind {
	SIM_MAX,  /* value <= goal */
	SIM_MIN,  /* value >= goal */
	SIM_MOVE, /* value <= 1.1 x goal, goal the minimum movement */
	SIM_INFO, /* no goal */
};

struct sim_fig {
	const char *f_name, *f_what;
	double f_value, f_goal; /* goal: a bound, or the minimum */
	double f_floor;         /* random placement's expected, 0: none */
	enum sim_kind f_kind;
};

struct sim_out {
	struct sim_fig o_figs[SIM_FIGS_MAX];
	uint32_t o_nr;
	uint32_t o_passed, o_failed;
	double o_secs_md, o_secs_data;
};

static void sim_fig(struct sim_out *o, const char *name, const char *what,
		    double value, double goal, double floor_, enum sim_kind kind)
{
	o->o_figs[o->o_nr++] = (struct sim_fig){name, what, value, goal,
						floor_, kind};
}

static bool sim_met(const struct sim_fig *f)
{
	switch (f->f_kind) {
	case SIM_MAX:
		return f->f_value <= f->f_goal;
	case SIM_MIN:
		return f->f_value >= f->f_goal;
	case SIM_MOVE:
		return f->f_value <= 1.1 * f->f_goal;
	default:
		return true;
	}
}

/* Max / mean of v[0..n-1], and the random floor for that mean. */
static double sim_maxmean(const uint64_t *v, uint32_t n, double *floor_)
{
	uint64_t max = 0, sum = 0;
	double mean;

	for (uint32_t i = 0; i < n; i++) {
		sum += v[i];
		max = v[i] > max ? v[i] : max;
	}
	mean = (double)sum / n;
	*floor_ = mean > 0 ? 1 + sqrt(2 * log((double)n)) / sqrt(mean) : 0;
	return mean > 0 ? (double)max / mean : 0;
}

static void sim_assert(struct sim_out *o, bool ok, const char *what,
		       uint64_t bad)
{
	if (ok) {
		o->o_passed++;
		return;
	}
	o->o_failed++;
	fprintf(stderr, "strata-sim: check failed: %s (%" PRIu64 ")\n", what,
		bad);
}

/* Sum thread t's counters into jobs[0]'s. */
static void sim_sum(struct sim *s, struct sim_job *jobs)
{
	struct sim_cnt *a = &jobs[0].j_cnt;
	uint32_t n = s->s_servers + 1, nd = n * s->s_devs;

	for (uint32_t i = 0; i < nd; i++)
		a->c_units_sum[i] = a->c_units[i];
	for (uint32_t t = 1; t < s->s_threads; t++) {
		struct sim_cnt *b = &jobs[t].j_cnt;

		for (uint32_t i = 0; i < n; i++) {
			a->c_md_objs[i] += b->c_md_objs[i];
			a->c_md_grps[i] += b->c_md_grps[i];
			a->c_md_grps_hrw[i] += b->c_md_grps_hrw[i];
			a->c_md_src[i] |= b->c_md_src[i];
		}
		for (uint32_t i = 0; i < nd; i++) {
			a->c_units_sum[i] += b->c_units[i];
			a->c_f_reads[i] += b->c_f_reads[i];
		}
		a->c_md_add_moved += b->c_md_add_moved;
		a->c_md_add_x += b->c_md_add_x;
		a->c_md_rm_moved += b->c_md_rm_moved;
		a->c_md_rm_y += b->c_md_rm_y;
		a->c_md_add_hrw += b->c_md_add_hrw;
		a->c_md_rm_hrw += b->c_md_rm_hrw;
		a->c_md_ex_b += b->c_md_ex_b;
		a->c_md_bad_add += b->c_md_bad_add;
		a->c_md_bad_rm += b->c_md_bad_rm;
		a->c_md_bad_encl += b->c_md_bad_encl;
		a->c_md_bad_nr += b->c_md_bad_nr;
		a->c_f_groups += b->c_f_groups;
		a->c_units_total += b->c_units_total;
		a->c_rm_spare += b->c_rm_spare;
		a->c_rm_remap += b->c_rm_remap;
		a->c_rm_units_y += b->c_rm_units_y;
		a->c_pool_y_units += b->c_pool_y_units;
		a->c_add_join += b->c_add_join;
		a->c_pool_x_units += b->c_pool_x_units;
		a->c_bad_distinct += b->c_bad_distinct;
		a->c_bad_spare += b->c_bad_spare;
	}
}

/* The figures of the metadata groups. */
static void sim_figs_md(struct sim *s, struct sim_cnt *c, struct sim_out *o)
{
	uint32_t n = s->s_servers, src = 0, want = 0;
	double total = (double)s->s_objects * s->s_repl, fl, flg, v, vg;
	double cells = (double)s->s_nr_pgs * s->s_repl, vgb;

	/* Objects come in groups: the random floor of both is the groups'. */
	vg = sim_maxmean(c->c_md_grps, n, &flg);
	v = sim_maxmean(c->c_md_objs, n, &fl);
	vgb = s->s_by_groups ? vg : v; /* what the balancer bounds */
	/* The goal is on what the balancer weighs (objects by default);
	 * the other count is shown beside it. */
	sim_fig(o, "md.balance", "object metadata replicas per server, "
		"max/mean (balanced)", v, 1.05, fl,
		s->s_by_groups ? SIM_INFO : SIM_MAX);
	sim_fig(o, "md.balance_groups", "group replicas per server, max/mean "
		"(balanced)", vg, 1.05, flg,
		s->s_by_groups ? SIM_MAX : SIM_INFO);
	sim_fig(o, "md.balance_hrw", "group replicas per server, max/mean, "
		"HRW alone", sim_maxmean(c->c_md_grps_hrw, n, &fl), 1.05, flg,
		SIM_INFO);
	sim_fig(o, "md.exceptions", "replicas placed by an exception, "
		"fraction", s->s_nup_b / cells, 0, 0, SIM_INFO);
	sim_fig(o, "md.add", "metadata moved when a server joins, fraction "
		"(balanced)", c->c_md_add_moved / total, 1.0 / (n + 1), 0,
		SIM_MOVE);
	sim_fig(o, "md.rm", "metadata moved when a server leaves, fraction "
		"(balanced)", c->c_md_rm_moved / total, 1.0 / n, 0, SIM_MOVE);
	sim_fig(o, "md.add_hrw", "the same, HRW alone", c->c_md_add_hrw / total,
		1.0 / (n + 1), 0, SIM_INFO);
	sim_fig(o, "md.rm_hrw", "the same, HRW alone", c->c_md_rm_hrw / total,
		1.0 / n, 0, SIM_INFO);
	for (uint32_t i = 0; i < n; i++) {
		src += c->c_md_src[i];
		want += s->s_base[i].pc_encl != s->s_base[s->s_y].pc_encl;
	}
	/* Y's groups have (R - 1) * groups(Y) other replicas to spread over
	 * the servers outside its enclosure: beside the count, what random
	 * choices would reach. */
	vg = (double)(s->s_repl - 1) * c->c_md_grps[s->s_y];
	sim_fig(o, "md.rebuild_src", "servers holding the lost server's "
		"groups' other replicas (of those outside its enclosure)", src,
		want, want * (1 - exp(-vg / want)), SIM_INFO);
	if (!s->s_check)
		return;
	sim_assert(o, c->c_md_bad_nr == 0, "every group gets R servers",
		   c->c_md_bad_nr);
	sim_assert(o, c->c_md_bad_encl == 0, "R servers in min(R, enclosures) "
		   "enclosures (HRW and balanced)", c->c_md_bad_encl);
	sim_assert(o, c->c_md_bad_add == 0, "add, HRW: changed groups hold "
		   "the new server and changed by one member", c->c_md_bad_add);
	sim_assert(o, c->c_md_add_hrw == c->c_md_add_x, "add, HRW: moved "
		   "metadata = the new server's share", c->c_md_add_hrw);
	sim_assert(o, c->c_md_bad_rm == 0, "remove, HRW: exactly the groups "
		   "of the server changed, by one member", c->c_md_bad_rm);
	sim_assert(o, c->c_md_rm_hrw == c->c_md_rm_y, "remove, HRW: moved "
		   "metadata = the server's share", c->c_md_rm_hrw);
	sim_assert(o, c->c_md_ex_b == s->s_nup_b, "every exception the "
		   "balancer made applies", c->c_md_ex_b);
	sim_assert(o, vgb <= 1.0 + s->s_tol_ppm / 1e6 + 1e-9, "balanced: no "
		   "server over its share x (1 + tolerance) of what the "
		   "balancer weighs (objects, or groups)",
		   (uint64_t)(vgb * 1e6));
}

/* The figures of the data units. */
static void sim_figs_data(struct sim *s, struct sim_cnt *c,
			  struct sim_out *o)
{
	uint32_t n = s->s_servers, nd = n * s->s_devs, src = 0, want;
	double total = (double)c->c_units_total, fl, v;
	uint64_t *per_srv = sim_calloc(n, sizeof *per_srv), rmax = 0, rsum = 0;
	const struct sim_pool *pf = &s->s_pools[s->s_q_f];

	v = sim_maxmean(c->c_units_sum, nd, &fl);
	sim_fig(o, "data.balance", "units per device, max/mean", v, 1.05, fl,
		SIM_MAX);
	for (uint32_t i = 0; i < nd; i++)
		per_srv[i / s->s_devs] += c->c_units_sum[i];
	v = sim_maxmean(per_srv, n, &fl);
	sim_fig(o, "data.balance_srv", "units per server, max/mean", v, 1.05,
		fl, SIM_MAX);
	free(per_srv);
	sim_fig(o, "data.rm_spare", "units moved when a server leaves "
		"(rebuilt into spares), fraction", c->c_rm_spare / total,
		1.0 / n, 0, SIM_MOVE);
	sim_fig(o, "data.rm_remap", "units moved when a server leaves "
		"(its pool made again), fraction", c->c_rm_remap / total,
		1.0 / n, 0, SIM_MOVE);
	sim_fig(o, "data.add_join", "units moved when a server joins a pool "
		"(made again), fraction", c->c_add_join / total,
		1.0 / (n + 1), 0, SIM_MOVE);
	sim_fig(o, "data.rm_remap_pool", "of that pool's units, fraction",
		(double)c->c_rm_remap / c->c_pool_y_units, 0, 0, SIM_INFO);
	sim_fig(o, "data.add_join_pool", "of that pool's units, fraction",
		(double)c->c_add_join / c->c_pool_x_units, 0, 0, SIM_INFO);
	for (uint32_t i = 0; i < nd; i++)
		if (c->c_f_reads[i]) {
			src++;
			rmax = c->c_f_reads[i] > rmax ? c->c_f_reads[i] : rmax;
			rsum += c->c_f_reads[i];
		}
	want = (pf->sp_nr_srv - 1) * s->s_devs;
	sim_fig(o, "data.rebuild_src", "devices a failed device's rebuild "
		"reads from (of its pool's devices on other servers)", src,
		want, 0, SIM_MIN);
	sim_fig(o, "data.rebuild_spread", "units read per source device, "
		"max/mean", src ? (double)rmax * src / rsum : 0, 0, 0, SIM_INFO);
	if (!s->s_check)
		return;
	sim_assert(o, c->c_bad_distinct == 0, "every group's units on distinct "
		   "servers", c->c_bad_distinct);
	sim_assert(o, c->c_bad_spare == 0, "every unit of the server that left "
		   "has a spare slot on a survivor", c->c_bad_spare);
	sim_assert(o, c->c_rm_spare == c->c_rm_units_y, "spare rebuild moves "
		   "exactly the units of the server that left", c->c_rm_spare);
	sim_assert(o, src == want, "the rebuild reads from every device of "
		   "the pool on other servers", src);
	sim_assert(o, c->c_units_total == s->s_objects * s->s_groups *
		   (s->s_n + s->s_k), "units counted add up",
		   c->c_units_total);
}

/* ------------------------------------------------------- output */

static void sim_print(const struct sim *s, const struct sim_out *o)
{
	printf("# strata-sim: %u servers x %u devices (%u per enclosure), "
	       "%" PRIu64 " objects of %u groups of pdclust %u+%u+%u, %u "
	       "pools of <= %u devices (placement %s), %u metadata groups x "
	       "%u replicas, "
	       "%u threads: metadata %.1f s (balancer %.1f s, %u + %u + %u "
	       "exceptions, tolerance %u ppm), units %.1f s\n",
	       s->s_servers, s->s_devs, s->s_encl, s->s_objects, s->s_groups,
	       s->s_n, s->s_k, s->s_s, s->s_nr_pools, PD_POOL_MAX,
	       s->s_hrw ? "hrw" : "dom", s->s_nr_pgs,
	       s->s_repl, s->s_threads, o->o_secs_md, s->s_secs_bal,
	       s->s_nup_b, s->s_nup_a, s->s_nup_r, s->s_tol_ppm,
	       o->o_secs_data);
	printf("%-20s %12s %12s %7s %10s  %s\n", "figure", "measured",
	       "goal/min", "ratio", "random", "what");
	for (uint32_t i = 0; i < o->o_nr; i++) {
		const struct sim_fig *f = &o->o_figs[i];
		double ratio = f->f_goal ? f->f_value / f->f_goal : 0;
		bool met = sim_met(f);

		printf("%-20s %12.6g %12.6g %7.3f %10.4g  %s%s\n", f->f_name,
		       f->f_value, f->f_goal, ratio, f->f_floor, f->f_what,
		       met ? "" : "  [goal missed]");
	}
}

static void sim_print_json(const struct sim *s, const struct sim_out *o)
{
	printf("{\"servers\": %u, \"devices_per_server\": %u, \"enclosure\": "
	       "%u, \"objects\": %" PRIu64 ", \"groups_per_object\": %u, "
	       "\"layout\": \"%u+%u+%u\", \"pools\": %u, \"placement\": "
	       "\"%s\", \"pgs\": %u, "
	       "\"replicas\": %u, \"threads\": %u, \"secs_metadata\": %.2f, "
	       "\"secs_units\": %.2f, \"figures\": [", s->s_servers,
	       s->s_devs, s->s_encl, s->s_objects, s->s_groups, s->s_n,
	       s->s_k, s->s_s, s->s_nr_pools, s->s_hrw ? "hrw" : "dom",
	       s->s_nr_pgs, s->s_repl,
	       s->s_threads, o->o_secs_md, o->o_secs_data);
	for (uint32_t i = 0; i < o->o_nr; i++) {
		const struct sim_fig *f = &o->o_figs[i];

		printf("%s{\"name\": \"%s\", \"what\": \"%s\", \"value\": %.6g, "
		       "\"goal\": %.6g, \"ratio\": %.4f, \"random\": %.4g, "
		       "\"met\": %s}", i ? ", " : "", f->f_name, f->f_what,
		       f->f_value, f->f_goal,
		       f->f_goal ? f->f_value / f->f_goal : 0, f->f_floor,
		       sim_met(f) ? "true" : "false");
	}
	printf("]%s", s->s_check ? ", " : "}\n");
	if (s->s_check)
		printf("\"passed\": %u, \"failed\": %u}\n", o->o_passed,
		       o->o_failed);
}

/* ---------------------------------------------------------- main */

static void sim_usage(void)
{
	fprintf(stderr, "usage: strata-sim [--servers N] [--devices D] "
		"[--objects M] [--groups G] [--layout N+K+S] [--replicas R] "
		"[--pgs-per-server P] [--enclosure E] [--threads T] "
		"[--tol-ppm T] [--balance-by objects|groups] "
		"[--placement dom|hrw] [--seed S] [--only md|data] [--json] "
		"[--check]\n");
	exit(2);
}

static uint64_t sim_num(const char *a, uint64_t lo, uint64_t hi,
			const char *what)
{
	char *end;
	unsigned long long v = strtoull(a, &end, 0);

	if (*a == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "strata-sim: %s: '%s' is not in %" PRIu64
			"..%" PRIu64 "\n", what, a, lo, hi);
		exit(2);
	}
	return v;
}

static void sim_args(struct sim *s, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--json") == 0) {
			s->s_json = true;
			continue;
		}
		if (strcmp(a, "--check") == 0) {
			s->s_check = true;
			continue;
		}
		if (v == NULL)
			sim_usage();
		i++;
		if (strcmp(a, "--servers") == 0)
			s->s_servers = (uint32_t)sim_num(v, 8, PG_CANDS_MAX - 1,
							 a);
		else if (strcmp(a, "--devices") == 0)
			s->s_devs = (uint32_t)sim_num(v, 1, PD_POOL_MAX / 8, a);
		else if (strcmp(a, "--objects") == 0)
			s->s_objects = sim_num(v, 1, 1ull << 40, a);
		else if (strcmp(a, "--groups") == 0)
			s->s_groups = (uint32_t)sim_num(v, 1, 1u << 20, a);
		else if (strcmp(a, "--replicas") == 0)
			s->s_repl = (uint32_t)sim_num(v, 1, PG_REPLICAS_MAX, a);
		else if (strcmp(a, "--pgs-per-server") == 0)
			s->s_pgs_per = (uint32_t)sim_num(v, 1, 1u << 16, a);
		else if (strcmp(a, "--enclosure") == 0)
			s->s_encl = (uint32_t)sim_num(v, 1, 1u << 20, a);
		else if (strcmp(a, "--threads") == 0)
			s->s_threads = (uint32_t)sim_num(v, 1, SIM_THREADS_MAX,
							 a);
		else if (strcmp(a, "--only") == 0 && strcmp(v, "md") == 0)
			s->s_no_data = true;
		else if (strcmp(a, "--only") == 0 && strcmp(v, "data") == 0)
			s->s_no_md = true;
		else if (strcmp(a, "--balance-by") == 0 &&
			 (strcmp(v, "groups") == 0 ||
			  strcmp(v, "objects") == 0))
			s->s_by_groups = strcmp(v, "groups") == 0;
		else if (strcmp(a, "--placement") == 0 &&
			 (strcmp(v, "hrw") == 0 || strcmp(v, "dom") == 0))
			s->s_hrw = strcmp(v, "hrw") == 0;
		else if (strcmp(a, "--tol-ppm") == 0)
			s->s_tol_ppm = (uint32_t)sim_num(v, 0, 1000000, a);
		else if (strcmp(a, "--seed") == 0)
			s->s_seed = sim_num(v, 1, UINT64_MAX, a);
		else if (strcmp(a, "--layout") == 0) {
			if (sscanf(v, "%u+%u+%u", &s->s_n, &s->s_k,
				   &s->s_s) != 3 || s->s_n < 1 || s->s_s < 1 ||
			    s->s_n + s->s_k + s->s_s > ST_LAYOUT_UNITS_MAX) {
				fprintf(stderr, "strata-sim: --layout '%s': "
					"want N+K+S, S >= 1\n", v);
				exit(2);
			}
		} else
			sim_usage();
	}
	if (s->s_objects * s->s_groups > UINT32_MAX) {
		fprintf(stderr, "strata-sim: %" PRIu64 " objects x %u groups "
			"is over 2^32 (32-bit unit counters)\n", s->s_objects,
			s->s_groups);
		exit(2);
	}
	if ((uint64_t)s->s_servers * s->s_pgs_per > PG_NR_MAX) {
		fprintf(stderr, "strata-sim: %u servers x %u groups is over "
			"PG_NR_MAX (%u)\n", s->s_servers, s->s_pgs_per,
			PG_NR_MAX);
		exit(2);
	}
}

static void sim_cnt_init(struct sim *s, struct sim_cnt *c)
{
	uint32_t n = s->s_servers + 1;

	memset(c, 0, sizeof *c);
	c->c_md_objs = sim_calloc(n, sizeof *c->c_md_objs);
	c->c_md_grps = sim_calloc(n, sizeof *c->c_md_grps);
	c->c_md_grps_hrw = sim_calloc(n, sizeof *c->c_md_grps_hrw);
	c->c_md_src = sim_calloc(n, 1);
	c->c_units = sim_calloc((size_t)n * s->s_devs, sizeof *c->c_units);
	c->c_units_sum = sim_calloc((size_t)n * s->s_devs,
				    sizeof *c->c_units_sum);
	c->c_f_reads = sim_calloc((size_t)n * s->s_devs,
				  sizeof *c->c_f_reads);
	c->c_pg_objs = sim_calloc(s->s_nr_pgs, sizeof *c->c_pg_objs);
}

static void sim_cnt_fini(struct sim_cnt *c)
{
	free(c->c_md_objs);
	free(c->c_md_grps);
	free(c->c_md_grps_hrw);
	free(c->c_md_src);
	free(c->c_units);
	free(c->c_units_sum);
	free(c->c_f_reads);
	free(c->c_pg_objs);
}

int main(int argc, char **argv)
{
	struct sim s = {.s_servers = 1000, .s_devs = 10, .s_repl = 3,
			.s_pgs_per = 128, .s_encl = 10, .s_threads = 2,
			.s_groups = 4, .s_n = 4, .s_k = 2, .s_s = 1,
			.s_objects = 10000000, .s_seed = 0x5157a7a,
			.s_tol_ppm = 30000};
	struct sim_job jobs[SIM_THREADS_MAX];
	struct sim_out o = {0};
	double t0;

	sim_args(&s, argc, argv);
	if (sim_maps(&s) != 0)
		return 2;
	for (uint32_t t = 0; t < s.s_threads; t++)
		sim_cnt_init(&s, &jobs[t].j_cnt);
	t0 = sim_now();
	if (!s.s_no_md) {
		sim_run(&s, jobs, s.s_objects, sim_count_pgs);
		for (uint32_t t = 0; t < s.s_threads; t++)
			for (uint32_t g = 0; g < s.s_nr_pgs; g++)
				s.s_pg_objs[g] +=
					(uint32_t)jobs[t].j_cnt.c_pg_objs[g];
		s.s_set_b = sim_calloc((size_t)s.s_nr_pgs * s.s_repl,
				       sizeof *s.s_set_b);
		s.s_set_a = sim_calloc((size_t)s.s_nr_pgs * s.s_repl,
				       sizeof *s.s_set_a);
		s.s_set_r = sim_calloc((size_t)s.s_nr_pgs * s.s_repl,
				       sizeof *s.s_set_r);
		sim_run(&s, jobs, s.s_nr_pgs, sim_place_pgs);
		sim_balance(&s);
		sim_run(&s, jobs, s.s_nr_pgs, sim_count_bal);
	}
	o.o_secs_md = sim_now() - t0;
	t0 = sim_now();
	if (!s.s_no_data)
		sim_run(&s, jobs, s.s_objects, sim_place_units);
	o.o_secs_data = sim_now() - t0;
	sim_sum(&s, jobs);
	if (!s.s_no_md)
		sim_figs_md(&s, &jobs[0].j_cnt, &o);
	if (!s.s_no_data)
		sim_figs_data(&s, &jobs[0].j_cnt, &o);
	if (s.s_json)
		sim_print_json(&s, &o);
	else
		sim_print(&s, &o);
	if (s.s_check)
		printf("%u passed, %u failed\n", o.o_passed, o.o_failed);
	for (uint32_t t = 0; t < s.s_threads; t++)
		sim_cnt_fini(&jobs[t].j_cnt);
	free(s.s_base);
	free(s.s_add);
	free(s.s_rm);
	free(s.s_pg_objs);
	free(s.s_set_b);
	free(s.s_set_a);
	free(s.s_set_r);
	free(s.s_eff_b);
	free(s.s_up_b);
	free(s.s_up_a);
	free(s.s_up_r);
	free(s.s_pg_sizes);
	free(s.s_pools);
	return o.o_failed == 0 ? 0 : 1;
}
