/*
 * bench_cluster.c — strata_bench_cluster: a 3-server loopback cluster
 * through the Clovis API beside raw baselines (make bench).
 *
 * The bench writes DIR/bench-cluster/cluster.yaml (3 servers on 127.0.0.1,
 * provider tcp;ofi_rxm, four 512 MiB flash devices each, each lent in
 * slices of a third to the other two (phase 2a): files on the disk
 * of DIR, O_DIRECT), starts the three strata-servers found beside this
 * program, runs the figures as one cluster client, stops the servers
 * (SIGTERM, then SIGKILL after 15 s) and removes what it made.
 *
 *   obj 4KiB write/read lat   one op at a time, random blocks of a plain
 *                             flash object (home: one server); p50 and
 *                             p99.  raw: a 4 KiB libfabric ping-pong (same
 *                             provider, two endpoints on 127.0.0.1) plus a
 *                             4 KiB O_DIRECT pwrite + fdatasync (write) or
 *                             pread (read) on the same disk, p50 + p50 and
 *                             p99 + p99: the transport and device floor.
 *   obj 1MiB write/read bw    one client, 4 ops of 1 MiB in flight on one
 *                             object; raw: fi_read (server pulls = client
 *                             write) / fi_write (push = read) of 1 MiB, 4 in
 *                             flight, same provider.  Goal >= 0.8.  The
 *                             same figures beside raw O_DIRECT 1 MiB
 *                             pwrite + fdatasync / pread on the disk of
 *                             DIR, 4 threads: what the devices allow.
 *   ... pdclust 2+1           the same 1 MiB figures on a pdclust 2+1
 *                             object (256 KiB units): a group's three
 *                             units on the three servers, so data goes
 *                             client -> home -> the other two servers.
 *   aggregate T threads       T = 1, 4, 16 client threads, each one op at a
 *                             time on its own object (objects hash to all 3
 *                             servers): 1 MiB writes (MB/s) and 4 KiB
 *                             random writes (IOPS); raw: the same figure
 *                             with 1 thread (the ratio is the scaling).
 *   idx put/get/next          16 ops in flight on one index (R = 3: a PUT
 *                             is applied on 3 servers): PUT and GET of one
 *                             record per op, NEXT of 16 records per op;
 *                             records/s.  PUT's raw column: the disk's
 *                             limit for it, the fdatasyncs a second of the
 *                             disk of DIR at 1 in flight (4 KiB O_DIRECT
 *                             pwrite + fdatasync, p50) x 16 records a
 *                             sync / 3 replicas on this one disk.  GET and
 *                             NEXT: no raw column (the transport floor is
 *                             strata_bench_rpc's).  idx PUT lat, 1 in
 *                             flight: a lone PUT to STABLE (p50, p99)
 *                             beside one round trip + one sync (4 KiB
 *                             ping-pong + O_DIRECT pwrite + fdatasync;
 *                             issue 29: "about one round trip plus one
 *                             sync").
 *
 *   EC 4+2 write/read bw      a pdclust 4+2 object, 1 MiB units, 256 MiB
 *                             of it: 4 MiB full-stripe writes and reads,
 *                             16 in flight, beside the disk's limit for
 *                             them (raw seq write x 4/6, raw seq read:
 *                             1 MiB O_DIRECT, 4 threads; group ec42).
 *                             The reads: the client reads the units
 *                             from their servers (docs/cluster.md "Reads
 *                             of units by the client"); "via home" the
 *                             same reads through the home (the client's
 *                             unit reads off: clu_units_set()).
 *   obj 4MiB write/read bw    the same ops on a plain object, beside raw
 *                             seq write / read (group ec42).
 *
 *   1MiB ..., qd16            the plain 1 MiB write and read with 16 ops
 *                             in flight, beside raw fi_read / fi_write of
 *                             1 MiB with 16 in flight (group bw16).
 *   1MiB ..., tmpfs           a second cluster whose devices are files on
 *                             /dev/shm (2 x 384 MiB per server: no disk,
 *                             an fdatasync costs nothing): the same 1 MiB
 *                             figures with 4 and 16 in flight, each beside
 *                             its raw RMA figure (group shm).  What is left
 *                             there is the transfer path and the server's
 *                             own work, not the disk.
 *   1MiB ..., meta nvram      a third cluster, its devices on the disk as
 *                             in the first, each server's metadata (LMDB)
 *                             on NVRAM (meta_nvram: true, nvram_dir: a
 *                             /dev/shm directory of this run; tmpfs
 *                             emulates NVRAM): the same 1 MiB figures with
 *                             4 and 16 in flight, each beside its raw RMA
 *                             figure (group metanv).  A STABLE write then
 *                             waits for the device sync and a commit to
 *                             memory instead of two more disk syncs.
 *   1MiB ..., nvram           a fourth cluster whose one device per server
 *                             is an NVRAM-tier (pmem2) device on /dev/shm
 *                             (libpmem2 maps the file; tmpfs emulates
 *                             NVRAM), metadata there too: a plain object
 *                             on the NVRAM tier, 1 MiB writes and reads
 *                             with 1, 4 and 16 in flight, each beside its
 *                             raw RMA figure, and the servers' CPU per MiB
 *                             (group nvram).  strata-server moves these
 *                             bytes straight between the client and the
 *                             device map (docs/data-path.md "Zero-copy
 *                             units on NVRAM"); STRATA_SRV_ZC=0 in the
 *                             environment gives the bounce path for A/B.
 *
 * The /dev/shm directory of a run (/dev/shm/strata-bench-PID: the tmpfs
 * cluster's devices, the metanv cluster's metadata) is removed when the
 * run ends, fails (exit) or is stopped by SIGINT, SIGTERM or SIGHUP (a
 * thread of its own waits for those, stops the servers and removes what
 * the run made); only SIGKILL leaves it.
 *
 *   strata_bench_cluster --dir DIR [--json] [--seconds S] [--provider P]
 *                        [--figs G,...]
 * G: lat bw pd thr idx ec42 bw16 shm metanv nvram repl; default all (other options, meant
 * for strata_bench, are ignored).  --provider: the servers' and the raw
 * endpoints' libfabric provider (default tcp;ofi_rxm; shm: one host, the
 * raw side polls as shm has no wait object).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "clovis/clovis_internal.h"
#include "tests/bench/bench_fi.h"

#define BC_SERVERS 3u
#define BC_UP_SECS 600          /* the servers answer within (formatted) */
#define BC_STR_(x) #x
#define BC_STR(x) BC_STR_(x)
/* --provider: the servers' and the raw endpoints' provider */
static const char *bc_prov = "tcp;ofi_rxm";
#define BC_MIB (1u << 20)
#define BC_BLK_SHIFT 12u
#define BC_BLK (1u << BC_BLK_SHIFT)
#define BC_QD_BW 4u             /* 1 MiB ops in flight, ours and raw */
#define BC_QD_BW_DEEP 16u       /* ... in the deep figures */
#define BC_QD_IDX 16u           /* index ops in flight */
#define BC_NEXT_RECS 16u        /* records per NEXT */
#define BC_THREADS_MAX 16u
#define BC_LAT_MAX 200000u
#define BC_FIGS 96u
#define BC_LAT_BLOCKS 4096u     /* 16 MiB region of 4 KiB ops */
#define BC_BW_REGION 64u        /* MiB rewritten by the 1 MiB writers */
#define BC_EC_REGION 256u       /* MiB of the EC 4+2 object (user data) */
#define BC_THR_REGION 16u       /* MiB rewritten by each of the threads
				 * (16 threads: 256 MiB live, with room for
				 * out-of-place copies and redundancy) */
#define BC_KEYS_LOADED 20000u   /* records PUT before GET/NEXT, at most */
#define BC_VAL_LEN 64u
#define BC_EMU "tcp;ofi_rxm, 3 servers on 127.0.0.1, flash = files on " \
	       "one disk (O_DIRECT), servers and client share 2 cores"
#define BC_EMU_SHM "tcp;ofi_rxm, 3 servers on 127.0.0.1, flash = files " \
	       "on tmpfs (/dev/shm: no disk, no real sync), servers and " \
	       "client share 2 cores"
#define BC_EMU_MNV "tcp;ofi_rxm, 3 servers on 127.0.0.1, flash = files " \
	       "on one disk (O_DIRECT), metadata on /dev/shm (tmpfs as " \
	       "NVRAM), servers and client share 2 cores"
#define BC_EMU_NV "tcp;ofi_rxm, 3 servers on 127.0.0.1, NVRAM = " \
	       "/dev/shm files through PMDK (libpmem2), metadata there too, " \
	       "servers and client share 2 cores"
#define BC_SHM_DEV_MB 384u      /* tmpfs cluster: 2 devices of this */
#define BC_NV_DEV_MB 256u       /* nvram cluster: 1 NVRAM device of this */
#define BC_PORTS 66u            /* ports per run: 6 clusters, raw figures */
#define BC_EMU_LEN 256u

struct bc_fig {
	char name[64];
	double ours, raw;       /* raw 0: none */
	const char *unit;
	double goal;            /* 0: none */
	bool lower_better;
	char emu[BC_EMU_LEN];
};

/* Which cluster is up: its devices and where its metadata lives. */
enum bc_kind {
	BC_K_DISK,              /* flash on the disk of DIR, meta there */
	BC_K_SHM,               /* flash on /dev/shm */
	BC_K_METANV,            /* flash on the disk, meta on /dev/shm */
	BC_K_NVRAM,             /* one NVRAM device, meta: all on /dev/shm */
};

static struct bc_fig bc_figs[BC_FIGS];
static uint32_t bc_nr;
static double bc_secs = 2.0;
static bool bc_json;
static char bc_dir[PATH_MAX];   /* DIR/bench-cluster */
static struct clovis *bc_cl;
static uint16_t bc_port0;       /* the first of the run's BC_PORTS */
static uint16_t bc_port;        /* the cluster up: its 3 servers' first */
static uint16_t bc_raw_port;
static const char *bc_only;     /* --figs: groups to run, NULL: all */
static enum bc_kind bc_kind;    /* the cluster up */
/* cluster.meta_replicas of the disk cluster (0: the file has none) */
static uint32_t bc_meta_r;
static char bc_shm_dir[64];     /* /dev/shm/strata-bench-PID, "": none */
/* Held while servers are started or stopped and while the directories
 * are removed, so the signal thread sees every server this run made. */
static pthread_mutex_t bc_lock = PTHREAD_MUTEX_INITIALIZER;

/* Is figure group g selected (--figs a,b,...; none given: all)? */
static bool bc_want(const char *g)
{
	size_t n = strlen(g);

	for (const char *p = bc_only; p != NULL && *p != '\0';) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == n && strncmp(p, g, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return bc_only == NULL;
}

/* ---------------------------------------------------------- helpers */

static double bc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bc_servers_stop(void);

/* Stop with a message (servers stopped, directory removed) on error. */
static void bc_die(int rc, const char *what)
{
	if (rc == 0)
		return;
	fprintf(stderr, "strata_bench_cluster: %s: %d (%s) (last Clovis "
		"message: %s)\n", what, rc, clovis_strerror(rc),
		clovis_errmsg());
	bc_servers_stop();
	exit(1);
}

static void bc_fig(const char *name, double ours, double raw,
		   const char *unit, double goal, bool lower_better,
		   const char *emu)
{
	struct bc_fig *f;

	if (bc_nr >= BC_FIGS)
		return;
	f = &bc_figs[bc_nr++];
	snprintf(f->name, sizeof f->name, "%s", name);
	f->ours = ours;
	f->raw = raw;
	f->unit = unit;
	f->goal = goal;
	f->lower_better = lower_better;
	/* The emulation strings name the default provider: the one run. */
	if (strncmp(emu, "tcp;ofi_rxm", 11) == 0)
		snprintf(f->emu, sizeof f->emu, "%s%s", bc_prov, emu + 11);
	else
		snprintf(f->emu, sizeof f->emu, "%s", emu);
	if (!bc_json)
		fprintf(stderr, "# %s: %.1f %s\n", name, ours, unit);
}

static int bc_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Percentile pct (0..100) of v[0..n-1] (sorts v); 0 when n is 0. */
static double bc_pct(double *v, uint32_t n, double pct)
{
	uint32_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, bc_cmp);
	i = (uint32_t)(pct / 100.0 * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static uint64_t bc_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *bc_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len) != 0)
		bc_die(-ENOMEM, "buffer");
	for (size_t i = 0; i < len; i++)
		((uint8_t *)p)[i] = (uint8_t)(i * 31 + 7);
	return p;
}

/* ---------------------------------------------------------- servers */

/* cluster.yaml of the NVRAM cluster: one pmem2 device per server and its
 * metadata, both in bc_shm_dir. */
static int bc_write_conf_nv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -errno;
	fprintf(f, "cluster:\n  name: bench\n  secret_file: secret\n"
		"  provider: \"%s\"\n  index_replicas: 3\n"
		"  connect_timeout: 2s\n  call_timeout: 30s\n"
		"device_size: %uMiB\n"
		"layouts:\n  default: { type: plain, tier: nvram }\n"
		"servers:\n", bc_prov, BC_NV_DEV_MB);
	for (uint32_t i = 0; i < BC_SERVERS; i++)
		fprintf(f, "  - name: s%u\n    address: 127.0.0.1\n"
			"    port: %u\n    data_dir: s%u\n"
			"    nvram_dir: %s\n    meta_nvram: true\n"
			"    devices:\n      - { tier: nvram, local: true }\n",
			i, bc_port + i, i, bc_shm_dir);
	return fclose(f) == 0 ? 0 : -errno;
}

/* cluster.yaml of the cluster of kind bc_kind.  tmpfs: two devices per
 * server (RAM: 3 x 2 x 384 MiB); metanv: the metadata of every server in
 * bc_shm_dir (each store's own strata-UUID-meta there). */
static int bc_write_conf(const char *path)
{
	bool shm = bc_kind == BC_K_SHM;
	FILE *f;

	if (bc_kind == BC_K_NVRAM)
		return bc_write_conf_nv(path);
	f = fopen(path, "w");

	if (f == NULL)
		return -errno;
	fprintf(f, "cluster:\n  name: bench\n  secret_file: secret\n"
		"  provider: \"%s\"\n  index_replicas: 3\n"
		"  connect_timeout: 2s\n  call_timeout: 30s\n", bc_prov);
	if (bc_meta_r != 0)
		fprintf(f, "  meta_replicas: %u\n", bc_meta_r);
	fprintf(f, "device_size: %uMiB\nservers:\n",
		shm ? BC_SHM_DEV_MB : 512u);
	for (uint32_t i = 0; i < BC_SERVERS; i++) {
		fprintf(f, "  - name: s%u\n    address: 127.0.0.1\n"
			"    port: %u\n    data_dir: s%u\n", i, bc_port + i, i);
		if (bc_kind == BC_K_METANV)
			fprintf(f, "    nvram_dir: %s\n    meta_nvram: true\n",
				bc_shm_dir);
		fprintf(f, "    devices:\n      - { tier: flash }\n"
			"      - { tier: flash }\n%s", shm ? "" :
			"      - { tier: flash }\n      - { tier: flash }\n");
	}
	return fclose(f) == 0 ? 0 : -errno;
}

static int bc_write_secret(const char *path)
{
	FILE *f = fopen(path, "w");
	uint64_t s = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)(bc_now() * 1e9);

	if (f == NULL)
		return -errno;
	fchmod(fileno(f), 0600);
	for (int i = 0; i < 4; i++)
		fprintf(f, "%016" PRIx64, bc_rand(&s));
	fprintf(f, "\n");
	return fclose(f) == 0 ? 0 : -errno;
}

/* strata-server beside this program, started for server i (it
 * daemonizes; its first process is reaped here). */
static int bc_server_start(uint32_t i)
{
	char self[PATH_MAX], bin[PATH_MAX + 32], conf[PATH_MAX + 32];
	char name[16], pidf[PATH_MAX + 32], logf[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	pid_t pid;
	int st;

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	snprintf(bin, sizeof bin, "%s/strata-server", dirname(self));
	snprintf(conf, sizeof conf, "%s/cluster.yaml", bc_dir);
	snprintf(name, sizeof name, "s%u", i);
	snprintf(pidf, sizeof pidf, "%s/s%u.pid", bc_dir, i);
	snprintf(logf, sizeof logf, "%s/s%u.log", bc_dir, i);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none;

		/* The bench blocks its stop signals (bc_sig_run() waits
		 * for them); exec keeps the mask: the server needs them. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(bin, "strata-server", "--config", conf, "--name", name,
		      "--pid-file", pidf, "--log-file", logf, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return -ECHILD;
	return 0;
}

static pid_t bc_server_pid(uint32_t i)
{
	char path[PATH_MAX + 32];
	FILE *f;
	long pid = 0;

	snprintf(path, sizeof path, "%s/s%u.pid", bc_dir, i);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

static int bc_rm(const char *p, const struct stat *s, int flag,
		 struct FTW *ftw)
{
	(void)s;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* SIGTERM each server of the cluster in bc_dir, SIGKILL after 15 s;
 * remove bc_dir.  Under bc_lock. */
static void bc_servers_kill(void)
{
	pid_t pids[BC_SERVERS];
	double end = bc_now() + 15;
	bool alive = true;

	if (bc_dir[0] == '\0')
		return;
	for (uint32_t i = 0; i < BC_SERVERS; i++) {
		pids[i] = bc_server_pid(i);
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	}
	while (alive && bc_now() < end) {
		alive = false;
		for (uint32_t i = 0; i < BC_SERVERS; i++)
			if (pids[i] > 0 && kill(pids[i], 0) == 0)
				alive = true;
		if (alive)
			usleep(50000);
	}
	for (uint32_t i = 0; i < BC_SERVERS; i++)
		if (pids[i] > 0 && kill(pids[i], 0) == 0)
			kill(pids[i], SIGKILL);
	usleep(100000);
	nftw(bc_dir, bc_rm, 16, FTW_DEPTH | FTW_PHYS);
	bc_dir[0] = '\0';
}

/* Make bc_shm_dir, /dev/shm/strata-bench-PID (tmpfs: the tmpfs
 * cluster's devices or the metanv cluster's metadata). */
static void bc_shm_make(void)
{
	pthread_mutex_lock(&bc_lock);
	snprintf(bc_shm_dir, sizeof bc_shm_dir, "/dev/shm/strata-bench-%d",
		 (int)getpid());
	pthread_mutex_unlock(&bc_lock);
	if (mkdir(bc_shm_dir, 0700) != 0 && errno != EEXIST)
		bc_die(-errno, bc_shm_dir);
}

/* Remove bc_shm_dir and everything in it (the servers' stores there are
 * not destroyed: their servers are gone).  Under bc_lock. */
static void bc_shm_remove(void)
{
	if (bc_shm_dir[0] == '\0')
		return;
	nftw(bc_shm_dir, bc_rm, 16, FTW_DEPTH | FTW_PHYS);
	bc_shm_dir[0] = '\0';
}

/* Close the client, stop the servers, remove the cluster directory and
 * the run's /dev/shm directory. */
static void bc_servers_stop(void)
{
	if (bc_cl != NULL) {
		clovis_fini(bc_cl);
		bc_cl = NULL;
	}
	pthread_mutex_lock(&bc_lock);
	bc_servers_kill();
	bc_shm_remove();
	pthread_mutex_unlock(&bc_lock);
}

static void bc_at_exit(void)
{
	bc_servers_stop();
}

/* Waits for SIGINT, SIGTERM or SIGHUP (blocked in every other thread):
 * stops the servers, removes what the run made and ends the process with
 * status 128 + the signal.  The client is left open: the main thread may
 * be in it. */
static void *bc_sig_run(void *arg)
{
	const sigset_t *set = arg;
	int sig = 0;

	if (sigwait(set, &sig) != 0)
		return NULL;
	fprintf(stderr, "strata_bench_cluster: signal %d: stopping the "
		"servers, removing the run's directories\n", sig);
	pthread_mutex_lock(&bc_lock);
	bc_servers_kill();
	bc_shm_remove();
	_exit(128 + sig);
}

/* Block the stop signals in this thread (every thread started later
 * inherits that) and start bc_sig_run() to take them. */
static void bc_sig_start(void)
{
	static sigset_t set;
	pthread_t th;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&th, NULL, bc_sig_run, &set) != 0) {
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		return;
	}
	pthread_detach(th);
}

/* Make the cluster, start it, open bc_cl and wait until all 3 servers
 * answer: BC_UP_SECS at most (each server writes zeros over its devices
 * first, 2 GiB: seconds on a fast disk, a minute or more on a slow or
 * busy one). */
static void bc_cluster_up(const char *dir)
{
	struct clovis_conf c = { .cc_mode = CLOVIS_MODE_CLUSTER };
	struct clovis_server_info si[BC_SERVERS];
	char conf[PATH_MAX + 32], sec[PATH_MAX + 32];
	double end;
	uint32_t up = 0;
	int rc = 0;

	pthread_mutex_lock(&bc_lock);
	snprintf(bc_dir, sizeof bc_dir, "%s/bench-cluster", dir);
	pthread_mutex_unlock(&bc_lock);
	nftw(bc_dir, bc_rm, 16, FTW_DEPTH | FTW_PHYS);
	if (mkdir(bc_dir, 0700) != 0)
		bc_die(-errno, bc_dir);
	snprintf(conf, sizeof conf, "%s/cluster.yaml", bc_dir);
	snprintf(sec, sizeof sec, "%s/secret", bc_dir);
	bc_die(bc_write_conf(conf), "write cluster.yaml");
	bc_die(bc_write_secret(sec), "write secret");
	/* Under the lock: a stop signal meanwhile finds every pid file. */
	pthread_mutex_lock(&bc_lock);
	for (uint32_t i = 0; i < BC_SERVERS && rc == 0; i++)
		rc = bc_server_start(i);
	pthread_mutex_unlock(&bc_lock);
	bc_die(rc, "start strata-server");
	c.cc_cluster_conf = conf;
	bc_die(clovis_init(&bc_cl, &c), "clovis_init (cluster)");
	end = bc_now() + BC_UP_SECS;
	while (up < BC_SERVERS && bc_now() < end) {
		uint32_t nr = BC_SERVERS;

		up = 0;
		if (clovis_server_list(bc_cl, si, &nr) == 0)
			for (uint32_t i = 0; i < nr && i < BC_SERVERS; i++)
				up += si[i].si_up;
		if (up < BC_SERVERS)
			usleep(200000);
	}
	if (up < BC_SERVERS)
		bc_die(-ETIMEDOUT, "servers up within " BC_STR(BC_UP_SECS)
		       " s");
}

/* ------------------------------------------------------ our side */

/* Object n with attributes a (layout, tier). */
static void bc_obj_create_attr(struct clovis_obj *o, uint64_t n,
			       struct clovis_obj_attr *a);

/* Object n with the plain layout on flash: its units stay on its home
 * server. */
static void bc_obj_create(struct clovis_obj *o, uint64_t n)
{
	struct clovis_obj_attr a = { .oa_block_shift = BC_BLK_SHIFT,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH };

	bc_obj_create_attr(o, n, &a);
}

/* Object n with pdclust N+K, units of 1 << shift bytes. */
static void bc_obj_create_pdk(struct clovis_obj *o, uint64_t n, uint32_t N,
			      uint32_t K, uint32_t shift)
{
	struct clovis_obj_attr a = { .oa_block_shift = BC_BLK_SHIFT,
				     .oa_layout = CLOVIS_LAYOUT_PDCLUST,
				     .oa_tier = CLOVIS_TIER_FLASH,
				     .oa_data_units = N,
				     .oa_parity_units = K,
				     .oa_unit_shift = shift };

	bc_obj_create_attr(o, n, &a);
}

/* Object n with pdclust 2+1, 256 KiB units: the three units of a group
 * on the three servers (docs/cluster.md, phase 2a). */
static void bc_obj_create_pd(struct clovis_obj *o, uint64_t n)
{
	bc_obj_create_pdk(o, n, 2, 1, 18);
}

static void bc_obj_create_attr(struct clovis_obj *o, uint64_t n,
			       struct clovis_obj_attr *a)
{
	struct clovis_id id = { .ci_hi = 0xbc00000000000000ull |
				(uint64_t)getpid() << 20, .ci_lo = n };
	struct clovis_op *op = NULL;
	int rc;

	rc = clovis_obj_init(o, clovis_default_realm(bc_cl), &id, a);
	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	bc_die(rc == 0 ? clovis_op_sync(op) : rc, "create object");
}

/* One synchronous op of blks blocks at blk: 0 or its error. */
static int bc_obj_io_rc(struct clovis_obj *o, enum clovis_obj_opcode opc,
			uint64_t blk, uint64_t blks, void *buf)
{
	uint64_t start = blk, nr = blks;
	size_t len = blks << BC_BLK_SHIFT;
	struct clovis_extvec ev = { 1, &start, &nr };
	struct clovis_bufvec bv = { 1, &buf, &len };
	struct clovis_op *op = NULL;
	int rc;

	rc = clovis_obj_op(o, opc, &ev, &bv, 0, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* bc_obj_io_rc() from the main thread, which dies on an error; the
 * op's latency in us. */
static double bc_obj_io(struct clovis_obj *o, enum clovis_obj_opcode opc,
			uint64_t blk, uint64_t blks, void *buf)
{
	double t = bc_now();

	bc_die(bc_obj_io_rc(o, opc, blk, blks, buf), "object I/O");
	return (bc_now() - t) * 1e6;
}

/* p50 and p99 of 4 KiB ops on random blocks of o, one at a time. */
static void bc_lat(struct clovis_obj *o, enum clovis_obj_opcode opc,
		   double *p50, double *p99)
{
	static double lat[BC_LAT_MAX];
	void *buf = bc_alloc(BC_BLK);
	uint64_t rnd = 88172645463325252ull;
	uint32_t n = 0;
	double end = bc_now() + bc_secs;

	while (bc_now() < end && n < BC_LAT_MAX)
		lat[n++] = bc_obj_io(o, opc, bc_rand(&rnd) % BC_LAT_BLOCKS, 1,
				     buf);
	*p99 = bc_pct(lat, n, 99);
	*p50 = bc_pct(lat, n, 50);
	free(buf);
}

/* MB/s of ops of mib MiB, qd in flight (at most BC_QD_BW_DEEP), cycling
 * over region MiB of o (a multiple of mib). */
static double bc_bw_sz(struct clovis_obj *o, enum clovis_obj_opcode opc,
		       uint32_t qd, uint32_t mib, uint32_t region)
{
	const uint64_t per = (uint64_t)mib * (BC_MIB >> BC_BLK_SHIFT);
	struct clovis_op *ops[BC_QD_BW_DEEP] = { NULL };
	uint64_t starts[BC_QD_BW_DEEP], nrs[BC_QD_BW_DEEP];
	size_t lens[BC_QD_BW_DEEP];
	void *bufs[BC_QD_BW_DEEP];
	struct clovis_extvec ev[BC_QD_BW_DEEP];
	struct clovis_bufvec bv[BC_QD_BW_DEEP];
	uint64_t done = 0, next = 0;
	double t0 = bc_now(), end = t0 + bc_secs;

	for (uint32_t k = 0; k < qd; k++) {
		bufs[k] = bc_alloc((size_t)mib * BC_MIB);
		memset(bufs[k], 0x5a + (int)k, (size_t)mib * BC_MIB);
		lens[k] = (size_t)mib * BC_MIB;
		nrs[k] = per;
		ev[k] = (struct clovis_extvec){ 1, &starts[k], &nrs[k] };
		bv[k] = (struct clovis_bufvec){ 1, &bufs[k], &lens[k] };
	}
	for (uint32_t k = 0; bc_now() < end || k % qd != 0; k++) {
		uint32_t s = k % qd;

		if (ops[s] != NULL) {
			bc_die(clovis_op_wait(ops[s], CLOVIS_OS_STABLE,
					      CLOVIS_TIME_NEVER), "bw op");
			clovis_op_free(ops[s]);
			ops[s] = NULL;
			done++;
		}
		if (bc_now() >= end)
			continue;
		starts[s] = (next++ % (region / mib)) * per;
		bc_die(clovis_obj_op(o, opc, &ev[s], &bv[s], 0, &ops[s]),
		       "bw op");
		bc_die(clovis_op_launch(&ops[s], 1), "launch");
	}
	t0 = bc_now() - t0;
	for (uint32_t k = 0; k < qd; k++) {
		if (ops[k] != NULL) {
			clovis_op_wait(ops[k], CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER);
			clovis_op_free(ops[k]);
			done++;
		}
		free(bufs[k]);
	}
	return done * mib * (BC_MIB / 1e6) / t0;
}

/* MB/s of 1 MiB ops, qd in flight, cycling over BC_BW_REGION MiB of o. */
static double bc_bw_qd(struct clovis_obj *o, enum clovis_obj_opcode opc,
		       uint32_t qd)
{
	return bc_bw_sz(o, opc, qd, 1, BC_BW_REGION);
}

/* Writes of per blocks to STABLE per second, qd in flight (at most
 * BC_QD_BW_DEEP): 1 MiB ones cycling over BC_BW_REGION MiB of o, smaller
 * ones at random blocks of its first BC_LAT_BLOCKS. */
static double bc_wr_qd(struct clovis_obj *o, uint64_t per, uint32_t qd)
{
	struct clovis_op *ops[BC_QD_BW_DEEP] = { NULL };
	uint64_t starts[BC_QD_BW_DEEP], nrs[BC_QD_BW_DEEP];
	size_t lens[BC_QD_BW_DEEP];
	void *bufs[BC_QD_BW_DEEP];
	struct clovis_extvec ev[BC_QD_BW_DEEP];
	struct clovis_bufvec bv[BC_QD_BW_DEEP];
	uint64_t done = 0, next = 0, rnd = 88172645463325252ull;
	double t0 = bc_now(), end = t0 + bc_secs;

	for (uint32_t k = 0; k < qd; k++) {
		bufs[k] = bc_alloc(per << BC_BLK_SHIFT);
		lens[k] = per << BC_BLK_SHIFT;
		nrs[k] = per;
		ev[k] = (struct clovis_extvec){ 1, &starts[k], &nrs[k] };
		bv[k] = (struct clovis_bufvec){ 1, &bufs[k], &lens[k] };
	}
	for (uint32_t k = 0; bc_now() < end || k % qd != 0; k++) {
		uint32_t s = k % qd;

		if (ops[s] != NULL) {
			bc_die(clovis_op_wait(ops[s], CLOVIS_OS_STABLE,
					      CLOVIS_TIME_NEVER), "write");
			clovis_op_free(ops[s]);
			ops[s] = NULL;
			done++;
		}
		if (bc_now() >= end)
			continue;
		starts[s] = per == 1 ? bc_rand(&rnd) % BC_LAT_BLOCKS :
			    (next++ % BC_BW_REGION) * per;
		bc_die(clovis_obj_op(o, CLOVIS_OC_WRITE, &ev[s], &bv[s], 0,
				     &ops[s]), "write");
		bc_die(clovis_op_launch(&ops[s], 1), "launch");
	}
	t0 = bc_now() - t0;
	for (uint32_t k = 0; k < qd; k++) {
		if (ops[k] != NULL) {
			clovis_op_wait(ops[k], CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER);
			clovis_op_free(ops[k]);
			done++;
		}
		free(bufs[k]);
	}
	return done / t0;
}

static double bc_bw(struct clovis_obj *o, enum clovis_obj_opcode opc)
{
	return bc_bw_qd(o, opc, BC_QD_BW);
}

/* CPU time (user + system) the three servers used so far, in us. */
static double bc_srv_cpu_us(void)
{
	double us = 0;

	for (uint32_t i = 0; i < BC_SERVERS; i++) {
		char path[64], line[1024], *p;
		unsigned long ut = 0, st = 0;
		FILE *f;

		snprintf(path, sizeof path, "/proc/%d/stat",
			 (int)bc_server_pid(i));
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		/* Fields 14 and 15, after the ")" that ends the name. */
		if (fgets(line, sizeof line, f) != NULL &&
		    (p = strrchr(line, ')')) != NULL &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			   "%*u %lu %lu", &ut, &st) == 2)
			us += (ut + st) * 1e6 / sysconf(_SC_CLK_TCK);
		fclose(f);
	}
	return us;
}

/* The client's CPU time per MiB of the last bc_bw_cpu() (us). */
static double bc_cli_cpu;

/* bc_bw_qd(), and the servers' CPU time per MiB moved in *cpu (us); the
 * client's (this process: nothing else runs meanwhile) in bc_cli_cpu. */
static double bc_bw_cpu(struct clovis_obj *o, enum clovis_obj_opcode opc,
			uint32_t qd, double *cpu)
{
	double c0 = bc_srv_cpu_us(), k0 = bfi_cpu_us(), t0 = bc_now();
	double mbs = bc_bw_qd(o, opc, qd);
	double mib = mbs * (bc_now() - t0) * 1e6 / BC_MIB;

	*cpu = mib > 0 ? (bc_srv_cpu_us() - c0) / mib : 0;
	bc_cli_cpu = mib > 0 ? (bfi_cpu_us() - k0) / mib : 0;
	return mbs;
}

struct bc_thr {
	pthread_t t_th;
	struct clovis_obj *t_obj;
	bool t_big;             /* 1 MiB writes, else 4 KiB random */
	double t_end;
	uint64_t t_ops;
	int t_rc;               /* first error: the thread stops */
	char t_msg[256];        /* its Clovis message */
};

static void *bc_thr_run(void *arg)
{
	struct bc_thr *t = arg;
	uint64_t per = t->t_big ? BC_MIB >> BC_BLK_SHIFT : 1;
	void *buf = bc_alloc(per << BC_BLK_SHIFT);
	uint64_t rnd = (uint64_t)(uintptr_t)t | 1, i = 0;

	while (bc_now() < t->t_end) {
		uint64_t blk = t->t_big ? (i++ % BC_THR_REGION) * per :
					  bc_rand(&rnd) % BC_LAT_BLOCKS;

		t->t_rc = bc_obj_io_rc(t->t_obj, CLOVIS_OC_WRITE, blk, per,
				       buf);
		if (t->t_rc != 0) {
			/* Never exit() here: the other threads still run. */
			snprintf(t->t_msg, sizeof t->t_msg, "%s",
				 clovis_errmsg());
			break;
		}
		t->t_ops++;
	}
	free(buf);
	return NULL;
}

/* Ops per second of nthr threads, each on its own object of objs. */
static double bc_threads(struct clovis_obj *objs, uint32_t nthr, bool big)
{
	struct bc_thr t[BC_THREADS_MAX];
	double t0 = bc_now();
	uint64_t ops = 0;

	for (uint32_t i = 0; i < nthr; i++) {
		t[i] = (struct bc_thr){ .t_obj = &objs[i], .t_big = big,
					.t_end = t0 + bc_secs };
		pthread_create(&t[i].t_th, NULL, bc_thr_run, &t[i]);
	}
	for (uint32_t i = 0; i < nthr; i++) {
		pthread_join(t[i].t_th, NULL);
		ops += t[i].t_ops;
	}
	/* Every thread has stopped: now an error may end the run. */
	for (uint32_t i = 0; i < nthr; i++)
		if (t[i].t_rc != 0) {
			fprintf(stderr, "strata_bench_cluster: thread %u of %u "
				"(%s): %s\n", i, nthr, big ? "1 MiB" : "4 KiB",
				t[i].t_msg);
			bc_die(t[i].t_rc, "object I/O in a thread");
		}
	return ops / (bc_now() - t0);
}

/* ---------------------------------------------------- index figures */

struct bc_islot {
	struct clovis_op *s_op;
	char s_key[BC_NEXT_RECS][24];
	uint8_t s_val[BC_VAL_LEN];
	void *s_kb[BC_NEXT_RECS], *s_vb[BC_NEXT_RECS];
	size_t s_kl[BC_NEXT_RECS], s_vl[BC_NEXT_RECS];
	int32_t s_rcs[BC_NEXT_RECS];
	struct clovis_bufvec s_kv, s_vv;
	uint32_t s_nr;
	bool s_next;
};

/* Make the op of slot s: PUT key n, GET key n, or NEXT from key n. */
static void bc_idx_make(struct clovis_idx *ix, struct bc_islot *s,
			enum clovis_idx_opcode opc, uint64_t n)
{
	s->s_nr = opc == CLOVIS_IC_NEXT ? BC_NEXT_RECS : 1;
	s->s_next = opc == CLOVIS_IC_NEXT;
	for (uint32_t r = 0; r < s->s_nr; r++) {
		s->s_kb[r] = s->s_key[r];
		s->s_kl[r] = (size_t)snprintf(s->s_key[r], sizeof s->s_key[r],
					      "k%012" PRIu64, n);
		s->s_vb[r] = opc == CLOVIS_IC_PUT ? s->s_val : NULL;
		s->s_vl[r] = opc == CLOVIS_IC_PUT ? BC_VAL_LEN : 0;
	}
	s->s_kv = (struct clovis_bufvec){ s->s_nr, s->s_kb, s->s_kl };
	s->s_vv = (struct clovis_bufvec){ s->s_nr, s->s_vb, s->s_vl };
	bc_die(clovis_idx_op(ix, opc, &s->s_kv, &s->s_vv, s->s_rcs,
			     opc == CLOVIS_IC_PUT ? CLOVIS_IF_OVERWRITE : 0,
			     &s->s_op), "index op");
	bc_die(clovis_op_launch(&s->s_op, 1), "launch");
}

/* Wait for slot s; records it returned or stored; frees what the library
 * allocated. */
static uint32_t bc_idx_reap(struct bc_islot *s, enum clovis_idx_opcode opc)
{
	uint32_t recs = 0;

	bc_die(clovis_op_wait(s->s_op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER),
	       "index op");
	clovis_op_free(s->s_op);
	s->s_op = NULL;
	for (uint32_t r = 0; r < s->s_nr; r++) {
		if (s->s_rcs[r] == 0)
			recs++;
		if (opc == CLOVIS_IC_GET && s->s_vb[r] != NULL)
			free(s->s_vb[r]);
		if (opc == CLOVIS_IC_NEXT && s->s_rcs[r] == 0) {
			free(s->s_kb[r]);
			free(s->s_vb[r]);
		}
	}
	return recs;
}

/* Records per second of opc with BC_QD_IDX ops in flight; PUT stores keys
 * 0.. (*loaded grows), GET and NEXT pick keys below *loaded. */
static double bc_idx_run(struct clovis_idx *ix, enum clovis_idx_opcode opc,
			 uint64_t *loaded)
{
	static struct bc_islot sl[BC_QD_IDX];
	uint64_t rnd = 0x2545f4914f6cdd1dull, recs = 0, put = *loaded;
	double t0 = bc_now(), end = t0 + bc_secs;
	uint32_t k;

	for (k = 0; bc_now() < end || k % BC_QD_IDX != 0; k++) {
		struct bc_islot *s = &sl[k % BC_QD_IDX];
		uint64_t n;

		if (s->s_op != NULL)
			recs += bc_idx_reap(s, opc);
		if (bc_now() >= end)
			continue;
		if (opc == CLOVIS_IC_PUT)
			n = put < BC_KEYS_LOADED ? put++ : bc_rand(&rnd) % put;
		else
			n = bc_rand(&rnd) % (*loaded > BC_NEXT_RECS ?
					     *loaded - BC_NEXT_RECS : 1);
		bc_idx_make(ix, s, opc, n);
	}
	for (k = 0; k < BC_QD_IDX; k++)
		if (sl[k].s_op != NULL)
			recs += bc_idx_reap(&sl[k], opc);
	if (opc == CLOVIS_IC_PUT)
		*loaded = put;
	return recs / (bc_now() - t0);
}

/* A lone PUT (one in flight, one record, to STABLE) for the run's time
 * (at most BC_LAT_MAX): p50 and p99 in us; keys from *loaded on. */
static void bc_idx_lone(struct clovis_idx *ix, uint64_t *loaded,
			double *p50, double *p99)
{
	static double lat[BC_LAT_MAX];
	static struct bc_islot sl;
	double end = bc_now() + bc_secs;
	uint32_t n = 0;

	while (bc_now() < end && n < BC_LAT_MAX) {
		double t0 = bc_now();

		bc_idx_make(ix, &sl, CLOVIS_IC_PUT, (*loaded)++);
		(void)bc_idx_reap(&sl, CLOVIS_IC_PUT);
		lat[n++] = (bc_now() - t0) * 1e6;
	}
	*p99 = bc_pct(lat, n, 99);
	*p50 = bc_pct(lat, n, 50);
}

/* ------------------------------------------------------ raw side */

/* Raw 4 KiB ping-pong, both sides sleeping in fi_cq_sread (bench_fi.c):
 * p50 and p99 in us. */
static void bc_raw_rtt(double *p50, double *p99)
{
	static double lat[BC_LAT_MAX];
	uint32_t n = bfi_rtt(bc_prov, &bc_raw_port, BC_BLK, bfi_can_sleep(bc_prov), bc_secs,
			     lat, BC_LAT_MAX);

	*p99 = bc_pct(lat, n, 99);
	*p50 = bc_pct(lat, n, 50);
}

/* Raw 1 MiB fi_read (or fi_write) bandwidth, BC_QD_BW in flight, MB/s. */
static double bc_raw_bw(bool wr)
{
	return bfi_rma_bw(bc_prov, &bc_raw_port, wr, BC_QD_BW, BC_MIB, bfi_can_sleep(bc_prov),
			  bc_secs);
}

/* The same with qd in flight. */
static double bc_raw_bw_qd(bool wr, uint32_t qd)
{
	return bfi_rma_bw(bc_prov, &bc_raw_port, wr, qd, BC_MIB, bfi_can_sleep(bc_prov),
			  bc_secs);
}

/* Raw 4 KiB O_DIRECT pwrite + fdatasync (or pread) on a file of DIR:
 * p50 and p99 in us. */
static void bc_raw_disk(const char *dir, bool wr, double *p50, double *p99)
{
	static double lat[BC_LAT_MAX];
	char path[PATH_MAX + 32];
	void *buf = bc_alloc(BC_BLK);
	uint64_t rnd = 0x9e3779b97f4a7c15ull;
	uint32_t n = 0;
	double end;
	int fd;

	snprintf(path, sizeof path, "%s/bench-cluster-raw.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0)
		bc_die(-errno, path);
	for (uint32_t i = 0; i < BC_LAT_BLOCKS; i += 256) {
		void *mib = bc_alloc(BC_MIB);
		ssize_t r = pwrite(fd, mib, BC_MIB, (off_t)i * BC_BLK);

		free(mib);
		if (r != BC_MIB)
			bc_die(-EIO, "raw prefill");
	}
	fdatasync(fd);
	end = bc_now() + bc_secs;
	while (bc_now() < end && n < BC_LAT_MAX) {
		off_t off = (off_t)(bc_rand(&rnd) % BC_LAT_BLOCKS) * BC_BLK;
		double t = bc_now();
		ssize_t r = wr ? pwrite(fd, buf, BC_BLK, off) :
				 pread(fd, buf, BC_BLK, off);

		if (r != BC_BLK || (wr && fdatasync(fd) != 0))
			bc_die(-EIO, "raw disk I/O");
		lat[n++] = (bc_now() - t) * 1e6;
	}
	close(fd);
	unlink(path);
	free(buf);
	*p99 = bc_pct(lat, n, 99);
	*p50 = bc_pct(lat, n, 50);
}

struct bc_dthr {
	pthread_t d_th;
	int d_fd;
	bool d_wr;
	uint32_t d_i;
	double d_end;
	uint64_t d_ops;
};

static void *bc_dthr_run(void *arg)
{
	struct bc_dthr *d = arg;
	void *buf = bc_alloc(BC_MIB);
	uint64_t i = d->d_i;

	while (bc_now() < d->d_end) {
		off_t off = (off_t)(i++ % BC_BW_REGION) * BC_MIB;
		ssize_t r = d->d_wr ? pwrite(d->d_fd, buf, BC_MIB, off) :
				      pread(d->d_fd, buf, BC_MIB, off);

		if (r != BC_MIB || (d->d_wr && fdatasync(d->d_fd) != 0))
			break;
		d->d_ops++;
	}
	free(buf);
	return NULL;
}

/* Raw 1 MiB O_DIRECT pwrite + fdatasync (or pread) on a file of DIR,
 * BC_QD_BW threads, over BC_BW_REGION MiB: MB/s. */
static double bc_raw_disk_bw(const char *dir, bool wr)
{
	struct bc_dthr d[BC_QD_BW];
	char path[PATH_MAX + 32];
	void *mib = bc_alloc(BC_MIB);
	uint64_t ops = 0;
	double t0;
	int fd;

	snprintf(path, sizeof path, "%s/bench-cluster-raw-bw.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0)
		bc_die(-errno, path);
	for (uint32_t i = 0; i < BC_BW_REGION; i++)
		if (pwrite(fd, mib, BC_MIB, (off_t)i * BC_MIB) != BC_MIB)
			bc_die(-EIO, "raw prefill");
	fdatasync(fd);
	free(mib);
	t0 = bc_now();
	for (uint32_t k = 0; k < BC_QD_BW; k++) {
		d[k] = (struct bc_dthr){ .d_fd = fd, .d_wr = wr,
					 .d_i = k * (BC_BW_REGION / BC_QD_BW),
					 .d_end = t0 + bc_secs };
		pthread_create(&d[k].d_th, NULL, bc_dthr_run, &d[k]);
	}
	for (uint32_t k = 0; k < BC_QD_BW; k++) {
		pthread_join(d[k].d_th, NULL);
		ops += d[k].d_ops;
	}
	t0 = bc_now() - t0;
	close(fd);
	unlink(path);
	return ops * (BC_MIB / 1e6) / t0;
}

/* ---------------------------------------------------------- figures */

static void bc_figs_lat(const char *dir, struct clovis_obj *o, bool figs)
{
	void *buf = bc_alloc(BC_MIB);
	double rt50, rt99, d50, d99, o50, o99;

	for (uint64_t b = 0; b < BC_LAT_BLOCKS; b += 256)
		bc_obj_io(o, CLOVIS_OC_WRITE, b, 256, buf);
	free(buf);
	if (!figs)
		return;
	bc_raw_rtt(&rt50, &rt99);
	bc_raw_disk(dir, true, &d50, &d99);
	bc_lat(o, CLOVIS_OC_WRITE, &o50, &o99);
	bc_fig("obj 4KiB write lat p50", o50, rt50 + d50, "us", 0, true,
	       BC_EMU "; raw: 4 KiB ping-pong + O_DIRECT pwrite+fdatasync");
	bc_fig("obj 4KiB write lat p99", o99, rt99 + d99, "us", 0, true,
	       BC_EMU "; raw: 4 KiB ping-pong + O_DIRECT pwrite+fdatasync");
	bc_raw_disk(dir, false, &d50, &d99);
	bc_lat(o, CLOVIS_OC_READ, &o50, &o99);
	bc_fig("obj 4KiB read lat p50", o50, rt50 + d50, "us", 0, true,
	       BC_EMU "; raw: 4 KiB ping-pong + O_DIRECT pread");
	bc_fig("obj 4KiB read lat p99", o99, rt99 + d99, "us", 0, true,
	       BC_EMU "; raw: 4 KiB ping-pong + O_DIRECT pread");
}

static void bc_figs_bw(const char *dir, struct clovis_obj *o)
{
	double cw, cr;
	double ow = bc_bw_cpu(o, CLOVIS_OC_WRITE, BC_QD_BW, &cw);
	double orr = bc_bw_cpu(o, CLOVIS_OC_READ, BC_QD_BW, &cr);
	double rr = bc_raw_bw(false), rw = bc_raw_bw(true);
	double dw = bc_raw_disk_bw(dir, true), dr = bc_raw_disk_bw(dir, false);

	bc_fig("obj 1MiB write bw, 1 client", ow, rr, "MB/s", 0.8, false,
	       BC_EMU "; 4 x 1 MiB in flight; raw: fi_read 1 MiB x 4");
	bc_fig("obj 1MiB read bw, 1 client", orr, rw, "MB/s", 0.8, false,
	       BC_EMU "; 4 x 1 MiB in flight; raw: fi_write 1 MiB x 4");
	bc_fig("obj 1MiB write bw vs disk", ow, dw, "MB/s", 0, false,
	       BC_EMU "; raw: O_DIRECT pwrite+fdatasync 1 MiB, 4 threads");
	bc_fig("obj 1MiB read bw vs disk", orr, dr, "MB/s", 0, false,
	       BC_EMU "; raw: O_DIRECT pread 1 MiB, 4 threads");
	bc_fig("srv CPU/MiB write, qd4", cw, 0, "us/MiB", 0, true,
	       BC_EMU "; user+sys of the 3 servers per MiB written (/proc)");
	bc_fig("srv CPU/MiB read, qd4", cr, 0, "us/MiB", 0, true,
	       BC_EMU "; user+sys of the 3 servers per MiB read (/proc)");
}

/* The same 1 MiB figures on a pdclust 2+1 object: data crosses the
 * network twice (client -> home -> the other servers' devices) and a
 * third more is written (parity). */
static void bc_figs_bw_pd(void)
{
	struct clovis_obj o;
	double ow, orr, rr, rw;

	bc_obj_create_pd(&o, 2);
	ow = bc_bw(&o, CLOVIS_OC_WRITE);
	orr = bc_bw(&o, CLOVIS_OC_READ);
	rr = bc_raw_bw(false);
	rw = bc_raw_bw(true);
	bc_fig("obj 1MiB write bw, pdclust 2+1", ow, rr, "MB/s", 0.8, false,
	       BC_EMU "; units on all 3 servers, 256 KiB units; 4 x 1 MiB "
	       "in flight; raw: fi_read 1 MiB x 4");
	bc_fig("obj 1MiB read bw, pdclust 2+1", orr, rw, "MB/s", 0.8, false,
	       BC_EMU "; units on all 3 servers, 256 KiB units; 4 x 1 MiB "
	       "in flight; raw: fi_write 1 MiB x 4");
}

/* Issue 29's erasure-coded figures: a pdclust 4+2 object with 1 MiB
 * units (a full stripe is 4 MiB of data), BC_EC_REGION MiB written once
 * in full stripes, then full-stripe writes and reads of 4 MiB with
 * BC_QD_BW_DEEP in flight cycling over it, beside the disk's limit for
 * that work measured in the same run on the disk of DIR: raw sequential
 * 1 MiB O_DIRECT pwrite + fdatasync (4 threads) x 4/6 for the writes
 * (each byte of user data costs 6/4 bytes on the one disk every
 * server's devices share), raw 1 MiB O_DIRECT pread for the reads
 * (a healthy read fetches the data units only).  Goals: 0.7 and 0.8.
 * The table's 4 MiB figures too: the same ops on BC_BW_REGION MiB of a
 * plain object (one copy, on one device of its home: 512 MiB), beside
 * raw seq write and read (no goal). */
static void bc_figs_ec42(const char *dir)
{
	const uint64_t per = 4 * (BC_MIB >> BC_BLK_SHIFT);
	void *buf = bc_alloc(4 * BC_MIB);
	struct clovis_obj o, p;
	double ow, orr, ohr, dw, dr, pw, pr;

	memset(buf, 0xa5, 4 * BC_MIB);
	bc_obj_create_pdk(&o, 9, 4, 2, 20);
	bc_obj_create(&p, 10);
	for (uint64_t g = 0; g < BC_EC_REGION / 4; g++)
		bc_obj_io(&o, CLOVIS_OC_WRITE, g * per, per, buf);
	for (uint64_t g = 0; g < BC_BW_REGION / 4; g++)
		bc_obj_io(&p, CLOVIS_OC_WRITE, g * per, per, buf);
	free(buf);
	ow = bc_bw_sz(&o, CLOVIS_OC_WRITE, BC_QD_BW_DEEP, 4, BC_EC_REGION);
	orr = bc_bw_sz(&o, CLOVIS_OC_READ, BC_QD_BW_DEEP, 4, BC_EC_REGION);
	clu_units_set(bc_cl, false);
	ohr = bc_bw_sz(&o, CLOVIS_OC_READ, BC_QD_BW_DEEP, 4, BC_EC_REGION);
	clu_units_set(bc_cl, true);
	pw = bc_bw_sz(&p, CLOVIS_OC_WRITE, BC_QD_BW_DEEP, 4, BC_BW_REGION);
	pr = bc_bw_sz(&p, CLOVIS_OC_READ, BC_QD_BW_DEEP, 4, BC_BW_REGION);
	dw = bc_raw_disk_bw(dir, true);
	dr = bc_raw_disk_bw(dir, false);
	bc_fig("raw disk seq write 1MiB", dw, 0, "MB/s", 0, false,
	       "O_DIRECT pwrite + fdatasync 1 MiB, 4 threads, on the disk of "
	       "DIR (the servers' devices)");
	bc_fig("raw disk seq read 1MiB", dr, 0, "MB/s", 0, false,
	       "O_DIRECT pread 1 MiB, 4 threads, on the disk of DIR");
	bc_fig("EC 4+2 write bw, qd16", ow, dw * 4.0 / 6.0, "MB/s", 0.7,
	       false, BC_EMU "; pdclust 4+2, 1 MiB units, 16 x 4 MiB "
	       "full-stripe writes in flight; limit: raw seq write x 4/6");
	bc_fig("EC 4+2 read bw, qd16", orr, dr, "MB/s", 0.8, false,
	       BC_EMU "; pdclust 4+2, 1 MiB units, 16 x 4 MiB reads in "
	       "flight; limit: raw seq read");
	bc_fig("EC 4+2 read bw via home, qd16", ohr, dr, "MB/s", 0, false,
	       BC_EMU "; the same reads, every byte through the object's "
	       "home (unit reads off: how they ran before the client read "
	       "units itself); raw: raw seq read");
	bc_fig("EC 4+2 read, units / via home", orr, ohr, "MB/s", 0, false,
	       BC_EMU "; the client reading the units from their servers "
	       "against every byte through the home, same run");
	bc_fig("obj 4MiB write bw, qd16", pw, dw, "MB/s", 0, false,
	       BC_EMU "; plain object, 16 x 4 MiB writes in flight; raw: "
	       "raw seq write");
	bc_fig("obj 4MiB read bw, qd16", pr, dr, "MB/s", 0, false,
	       BC_EMU "; plain object, 16 x 4 MiB reads in flight; raw: raw "
	       "seq read");
}

/* A CPU-per-MiB row: "WHO CPU/MiB WHAT, qdQD WHERE", emulation "EMU; HOW". */
static void bc_cpu_fig(const char *who, const char *what, uint32_t qd,
		       const char *where, const char *emu, double v,
		       const char *how)
{
	char name[64], e[2 * BC_EMU_LEN];

	snprintf(name, sizeof name, "%s CPU/MiB %s, qd%u%s", who, what, qd,
		 where);
	snprintf(e, sizeof e, "%s; %s", emu, how);
	bc_fig(name, v, 0, "us/MiB", 0, true, e);
}

/* The protocol's floor (bench_fi.h, bfi_floor_bw()) at qd in flight, in
 * the same run: raw request + RMA + reply between two processes with no
 * code of ours, beside raw RMA (what the goal compares with), and ours
 * beside it: how much of the gap to raw the protocol itself costs on this
 * machine and how much our server and client add. */
static void bc_figs_floor(double ow, double orr, double rr, double rw,
			  uint32_t qd, const char *emu, const char *where)
{
	bool sl = bfi_can_sleep(bc_prov);
	double fw = bfi_floor_bw(bc_prov, &bc_raw_port, true, qd, BC_MIB, sl,
				 bc_secs);
	double cw = bfi_floor_cpu_per_mib();
	double fr = bfi_floor_bw(bc_prov, &bc_raw_port, false, qd, BC_MIB, sl,
				 bc_secs);
	double cr = bfi_floor_cpu_per_mib();
	char name[64], e[BC_EMU_LEN];

	snprintf(name, sizeof name, "floor 1MiB write, qd%u%s", qd, where);
	snprintf(e, sizeof e, "%s; raw request + fi_read 1 MiB + 8-byte reply, "
		 "%u in flight, two processes, one server thread, no code of "
		 "ours; raw: fi_read 1 MiB x %u", emu, qd, qd);
	bc_fig(name, fw, rr, "MB/s", 0, false, e);
	snprintf(name, sizeof name, "floor 1MiB read, qd%u%s", qd, where);
	snprintf(e, sizeof e, "%s; raw request + fi_write 1 MiB + 8-byte reply,"
		 " %u in flight, two processes, one server thread, no code of "
		 "ours; raw: fi_write 1 MiB x %u", emu, qd, qd);
	bc_fig(name, fr, rw, "MB/s", 0, false, e);
	bc_cpu_fig("floor", "write", qd, where, emu, cw,
		   "user+sys of both floor processes per MiB written");
	bc_cpu_fig("floor", "read", qd, where, emu, cr,
		   "user+sys of both floor processes per MiB read");
	snprintf(name, sizeof name, "obj write vs floor, qd%u%s", qd, where);
	snprintf(e, sizeof e, "%s; ours (obj 1MiB write bw) against the floor "
		 "of the same run", emu);
	bc_fig(name, ow, fw, "MB/s", 0, false, e);
	snprintf(name, sizeof name, "obj read vs floor, qd%u%s", qd, where);
	snprintf(e, sizeof e, "%s; ours (obj 1MiB read bw) against the floor "
		 "of the same run", emu);
	bc_fig(name, orr, fr, "MB/s", 0, false, e);
}

/* 1 MiB write and read of a plain object with qd in flight, each beside
 * raw fi_read / fi_write of 1 MiB with qd in flight in the same run.  On
 * the tmpfs cluster (BC_K_SHM) the devices cost memory copies only: what
 * is left is the transfer path and the server's own work; on the metanv
 * cluster the devices are on the disk and the metadata in memory. */
static void bc_figs_bw_more(struct clovis_obj *o, uint32_t qd)
{
	static const char *const emus[] = { BC_EMU, BC_EMU_SHM, BC_EMU_MNV,
					    BC_EMU_NV };
	static const char *const wheres[] = { "", ", tmpfs", ", meta nvram",
					      ", nvram" };
	const char *emu = emus[bc_kind], *where = wheres[bc_kind];
	char name[64], e[BC_EMU_LEN];
	double ow, orr, rr, rw, cw, cr, kw, kr, xr, xw;

	ow = bc_bw_cpu(o, CLOVIS_OC_WRITE, qd, &cw);
	kw = bc_cli_cpu;
	orr = bc_bw_cpu(o, CLOVIS_OC_READ, qd, &cr);
	kr = bc_cli_cpu;
	rr = bc_raw_bw_qd(false, qd);
	xr = bfi_rma_cpu_per_mib();
	rw = bc_raw_bw_qd(true, qd);
	xw = bfi_rma_cpu_per_mib();
	snprintf(name, sizeof name, "obj 1MiB write bw, qd%u%s", qd, where);
	snprintf(e, sizeof e, "%s; %u x 1 MiB in flight; raw: fi_read 1 MiB "
		 "x %u", emu, qd, qd);
	bc_fig(name, ow, rr, "MB/s", 0.8, false, e);
	snprintf(name, sizeof name, "obj 1MiB read bw, qd%u%s", qd, where);
	snprintf(e, sizeof e, "%s; %u x 1 MiB in flight; raw: fi_write 1 MiB "
		 "x %u", emu, qd, qd);
	bc_fig(name, orr, rw, "MB/s", 0.8, false, e);
	if (bc_kind == BC_K_NVRAM)
		bc_figs_floor(ow, orr, rr, rw, qd, emu, where);
	bc_cpu_fig("srv", "write", qd, where, emu, cw,
		   "user+sys of the 3 servers per MiB written (/proc)");
	bc_cpu_fig("srv", "read", qd, where, emu, cr,
		   "user+sys of the 3 servers per MiB read (/proc)");
	/* Client and raw CPU: with the servers', the CPU a MiB costs on
	 * each side against raw RMA's two sides (docs/performance.md). */
	bc_cpu_fig("cli", "write", qd, where, emu, kw,
		   "user+sys of the client per MiB written (getrusage)");
	bc_cpu_fig("cli", "read", qd, where, emu, kr,
		   "user+sys of the client per MiB read (getrusage)");
	for (int w = 0; w < 2; w++) {
		const char *op = w ? "fi_write" : "fi_read";
		char how[128];

		snprintf(how, sizeof how, "user+sys of both raw endpoints (one "
			 "process) per MiB, %s 1 MiB x %u", op, qd);
		bc_cpu_fig("raw", op, qd, where, emu, w ? xw : xr, how);
	}
}

/* Object n, plain, its BC_BW_REGION MiB written once (reads then read
 * data, as in bc_figs_bw()). */
static void bc_obj_filled(struct clovis_obj *o, uint64_t n)
{
	void *buf = bc_alloc(BC_MIB);

	if (bc_kind == BC_K_NVRAM) {
		struct clovis_obj_attr a = { .oa_block_shift = BC_BLK_SHIFT,
					     .oa_layout = CLOVIS_LAYOUT_PLAIN,
					     .oa_tier = CLOVIS_TIER_NVRAM };

		bc_obj_create_attr(o, n, &a);
	} else {
		bc_obj_create(o, n);
	}
	for (uint64_t b = 0; b < BC_BW_REGION; b++)
		bc_obj_io(o, CLOVIS_OC_WRITE, b * (BC_MIB >> BC_BLK_SHIFT),
			  BC_MIB >> BC_BLK_SHIFT, buf);
	free(buf);
}

static void bc_figs_threads(void)
{
	static const uint32_t nthr[] = { 1, 4, 16 };
	struct clovis_obj objs[BC_THREADS_MAX];
	double bw1 = 0, iops1 = 0;
	char name[64];

	for (uint32_t i = 0; i < BC_THREADS_MAX; i++)
		bc_obj_create(&objs[i], 100 + i);
	for (uint32_t k = 0; k < 3; k++) {
		double bw = bc_threads(objs, nthr[k], true) * (BC_MIB / 1e6);
		double iops = bc_threads(objs, nthr[k], false);

		if (k == 0) {
			bw1 = bw;
			iops1 = iops;
		}
		snprintf(name, sizeof name, "agg 1MiB write, %u thr", nthr[k]);
		bc_fig(name, bw, bw1, "MB/s", 0, false,
		       BC_EMU "; one op per thread; raw: ours, 1 thread");
		snprintf(name, sizeof name, "agg 4KiB write, %u thr", nthr[k]);
		bc_fig(name, iops, iops1, "IOPS", 0, false,
		       BC_EMU "; one op per thread; raw: ours, 1 thread");
	}
}

/*
 * The index figures.  PUT beside the disk's limit for that work (issue 29):
 * the fdatasyncs a second the disk of dir allows one at a time (raw 4 KiB
 * O_DIRECT pwrite + fdatasync, p50, as for the latency figures) x the 16
 * records in flight one sync could carry / the 3 replicas whose syncs
 * share this one disk: what group commit on every replica could reach.
 */
static void bc_figs_idx(const char *dir)
{
	struct clovis_idx ix;
	struct clovis_id id = { .ci_hi = 0xbc1d000000000000ull |
				(uint64_t)getpid() << 20, .ci_lo = 1 };
	struct clovis_op *op = NULL;
	uint64_t loaded = 0;
	double put, get, next, p50, p99, limit, l50, l99, rt50, rt99;
	int rc;

	rc = clovis_idx_init(&ix, clovis_default_realm(bc_cl), &id);
	if (rc == 0)
		rc = clovis_entity_op(&ix.in_entity, CLOVIS_EO_CREATE, &op);
	bc_die(rc == 0 ? clovis_op_sync(op) : rc, "create index");
	put = bc_idx_run(&ix, CLOVIS_IC_PUT, &loaded);
	get = bc_idx_run(&ix, CLOVIS_IC_GET, &loaded);
	next = bc_idx_run(&ix, CLOVIS_IC_NEXT, &loaded);
	bc_idx_lone(&ix, &loaded, &l50, &l99);
	bc_raw_rtt(&rt50, &rt99);
	bc_raw_disk(dir, true, &p50, &p99);
	limit = p50 > 0 ? 1e6 / p50 * BC_QD_IDX / BC_SERVERS : 0;
	if (!bc_json)
		fprintf(stderr, "# raw 4 KiB write+fdatasync, 1 in flight: "
			"p50 %.0f us (%.0f syncs/s); limit %.0f records/s\n",
			p50, p50 > 0 ? 1e6 / p50 : 0, limit);
	bc_fig("idx PUT, 16 in flight", put, limit, "records/s", 0, false,
	       BC_EMU "; R = 3 replicas; 1 record per op; raw: the disk's "
	       "limit, fdatasync/s at 1 in flight x 16 records a sync / 3 "
	       "replicas on this disk");
	bc_fig("idx PUT lat p50, 1 in flight", l50, rt50 + p50, "us", 0, true,
	       BC_EMU "; R = 3 replicas; 1 record, to STABLE; raw: one round "
	       "trip (4 KiB ping-pong) + one O_DIRECT pwrite+fdatasync");
	bc_fig("idx PUT lat p99, 1 in flight", l99, rt99 + p99, "us", 0, true,
	       BC_EMU "; R = 3 replicas; 1 record, to STABLE; raw: one round "
	       "trip (4 KiB ping-pong) + one O_DIRECT pwrite+fdatasync");
	bc_fig("idx GET, 16 in flight", get, 0, "records/s", 0, false,
	       BC_EMU "; 1 record per op, first replica");
	bc_fig("idx NEXT, 16 in flight", next, 0, "records/s", 0, false,
	       BC_EMU "; 16 records per op, first replica");
}

static void bc_print(void)
{
	FILE *o = stdout;

	if (bc_json) {
		fprintf(o, "[\n");
		for (uint32_t i = 0; i < bc_nr; i++) {
			struct bc_fig *f = &bc_figs[i];
			double r = f->raw > 0 ? f->ours / f->raw : 0;

			fprintf(o, "  {\"name\": \"%s\", \"ours\": %.1f, "
				"\"raw\": ", f->name, f->ours);
			if (f->raw > 0)
				fprintf(o, "%.1f, \"ratio\": %.3f", f->raw, r);
			else
				fprintf(o, "null, \"ratio\": null");
			fprintf(o, ", \"unit\": \"%s\", \"provider\": \"%s\", "
				"\"emulation\": \"%s\", \"lower_is_better\": "
				"%s, \"goal\": ", f->unit, bc_prov, f->emu,
				f->lower_better ? "true" : "false");
			if (f->goal > 0)
				fprintf(o, "%.2f, \"met\": %s}", f->goal,
					r >= f->goal ? "true" : "false");
			else
				fprintf(o, "null, \"met\": null}");
			fprintf(o, "%s\n", i + 1 < bc_nr ? "," : "");
		}
		fprintf(o, "]\n");
		return;
	}
	fprintf(o, "%-36s %11s %11s %7s  %-9s %-10s %s\n", "name", "ours",
		"raw", "ratio", "unit", "goal", "provider + emulation");
	for (uint32_t i = 0; i < bc_nr; i++) {
		struct bc_fig *f = &bc_figs[i];
		char raw[16] = "-", ratio[16] = "-", goal[24] = "";

		if (f->raw > 0) {
			snprintf(raw, sizeof raw, "%.1f", f->raw);
			snprintf(ratio, sizeof ratio, "%.2f",
				 f->ours / f->raw);
		}
		if (f->goal > 0)
			snprintf(goal, sizeof goal, ">=%.2f %s", f->goal,
				 f->ours / f->raw >= f->goal ? "met" : "NOT");
		fprintf(o, "%-36s %11.1f %11s %7s  %-9s %-10s %s\n", f->name,
			f->ours, raw, ratio, f->unit, goal, f->emu);
	}
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	struct clovis_obj o;
	double t0 = bc_now();

	bfi_floor_main(argc, argv);     /* the floor's server: never returns */

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			bc_json = true;
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			bc_secs = atof(argv[++i]);
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--figs") == 0 && i + 1 < argc)
			bc_only = argv[++i];
		else if (strcmp(argv[i], "--provider") == 0 && i + 1 < argc)
			bc_prov = argv[++i];
		/* Other options are strata_bench's: ignored. */
	}
	if (dir == NULL) {
		fprintf(stderr, "usage: strata_bench_cluster --dir DIR "
			"[--json] [--seconds S] [--provider P] [--figs G,...]\n"
			"groups: lat bw pd thr idx (the disk cluster), bw16 "
			"(1 MiB, 16 in flight), shm (1 MiB, 4 and 16 in "
			"flight, devices on /dev/shm), metanv (1 MiB, 4 and "
			"16 in flight, devices on the disk, metadata on "
			"/dev/shm), nvram (1 MiB, 1, 4 and 16 in flight, a "
			"plain object on NVRAM devices on /dev/shm), repl "
			"(4 KiB and 1 MiB writes, 16 in flight, meta_replicas "
			"1 against 3); default all\n");
		return 2;
	}
	if (bc_secs <= 0)
		bc_secs = 2.0;
	signal(SIGPIPE, SIG_IGN);
	bc_sig_start();
	/* bench_fi.c exits on its own errors: stop the servers then too. */
	atexit(bc_at_exit);
	/* BC_PORTS ports per run: the disk cluster's 3, the tmpfs
	 * cluster's 3, the metanv cluster's 3, the nvram cluster's 3, the
	 * two repl clusters' 3 each, then
	 * 2 per raw figure (bfi_*: 21 figures at most, 42 ports).  All
	 * below 32768, the start of the kernel's ephemeral range: a fixed
	 * port inside it can already be the local end of one of the run's
	 * own connections (a raw endpoint failed with EADDRINUSE so). */
	bc_port0 = (uint16_t)(24000 + (getpid() % 130) * BC_PORTS);
	bc_port = bc_port0;
	bc_raw_port = (uint16_t)(bc_port0 + 6 * BC_SERVERS);
	fprintf(bc_json ? stderr : stdout, "# strata_bench_cluster: %u "
		"servers on 127.0.0.1:%u.., provider %s, %.1f s per figure\n",
		BC_SERVERS, bc_port, bc_prov, bc_secs);
	if (bc_want("lat") || bc_want("bw") || bc_want("pd") ||
	    bc_want("thr") || bc_want("idx") || bc_want("bw16") ||
	    bc_want("ec42")) {
		bc_cluster_up(dir);
		bc_obj_create(&o, 1);
		/* bw reads what lat wrote: lat's prefill runs for either. */
		if (bc_want("lat") || bc_want("bw"))
			bc_figs_lat(dir, &o, bc_want("lat"));
		if (bc_want("bw"))
			bc_figs_bw(dir, &o);
		if (bc_want("pd"))
			bc_figs_bw_pd();
		if (bc_want("bw16")) {
			struct clovis_obj o3;

			bc_obj_filled(&o3, 3);
			bc_figs_bw_more(&o3, BC_QD_BW_DEEP);
		}
		if (bc_want("thr"))
			bc_figs_threads();
		if (bc_want("idx"))
			bc_figs_idx(dir);
		if (bc_want("ec42"))
			bc_figs_ec42(dir);
		bc_servers_stop();
	}
	if (bc_want("shm")) {
		/* A second cluster, its devices on tmpfs. */
		bc_shm_make();
		bc_kind = BC_K_SHM;
		bc_port = (uint16_t)(bc_port0 + BC_SERVERS);
		bc_cluster_up(bc_shm_dir);
		/* One object for both (the tmpfs devices are small). */
		bc_obj_filled(&o, 4);
		bc_figs_bw_more(&o, BC_QD_BW);
		bc_figs_bw_more(&o, BC_QD_BW_DEEP);
		bc_servers_stop();      /* removes bc_shm_dir too */
	}
	if (bc_want("metanv")) {
		/* A third: devices on the disk, metadata on tmpfs. */
		bc_shm_make();
		bc_kind = BC_K_METANV;
		bc_port = (uint16_t)(bc_port0 + 2 * BC_SERVERS);
		bc_cluster_up(dir);
		bc_obj_filled(&o, 5);
		bc_figs_bw_more(&o, BC_QD_BW);
		bc_figs_bw_more(&o, BC_QD_BW_DEEP);
		bc_servers_stop();
	}
	if (bc_want("nvram")) {
		/* A fourth: NVRAM devices and metadata, all on tmpfs. */
		bc_shm_make();
		bc_kind = BC_K_NVRAM;
		bc_port = (uint16_t)(bc_port0 + 3 * BC_SERVERS);
		bc_cluster_up(dir);
		bc_obj_filled(&o, 6);
		bc_figs_bw_more(&o, 1);
		bc_figs_bw_more(&o, BC_QD_BW);
		bc_figs_bw_more(&o, BC_QD_BW_DEEP);
		bc_servers_stop();
	}
	if (bc_want("repl")) {
		/* Replicated homes: the disk cluster with meta_replicas 1,
		 * then 3; writes to STABLE, 16 in flight, on one object (one
		 * home, its two standbys). */
		double w4[2], w1m[2];

		for (uint32_t k = 0; k < 2; k++) {
			bc_kind = BC_K_DISK;
			bc_meta_r = k == 0 ? 1 : 3;
			bc_port = (uint16_t)(bc_port0 + (4 + k) * BC_SERVERS);
			bc_cluster_up(dir);
			bc_obj_filled(&o, 7 + k);
			w4[k] = bc_wr_qd(&o, 1, BC_QD_BW_DEEP);
			w1m[k] = bc_wr_qd(&o, BC_MIB >> BC_BLK_SHIFT,
					  BC_QD_BW_DEEP) * (BC_MIB / 1e6);
			bc_servers_stop();
		}
		bc_meta_r = 0;
		bc_fig("repl 4KiB write, qd16, R=1", w4[0], 0, "IOPS", 0,
		       false, BC_EMU "; meta_replicas 1; to STABLE");
		bc_fig("repl 4KiB write, qd16, R=3", w4[1], w4[0], "IOPS", 0.85,
		       false, BC_EMU "; meta_replicas 3; raw: R=1 (goal: at "
		       "most 15 % slower)");
		bc_fig("repl 1MiB write, qd16, R=1", w1m[0], 0, "MB/s", 0,
		       false, BC_EMU "; meta_replicas 1; to STABLE");
		bc_fig("repl 1MiB write, qd16, R=3", w1m[1], w1m[0], "MB/s",
		       0.95, false, BC_EMU "; meta_replicas 3; raw: R=1 (goal: "
		       "at most 5 % slower)");
	}
	bc_print();
	fprintf(bc_json ? stderr : stdout, "# elapsed %.1f s\n",
		bc_now() - t0);
	return 0;
}
