/*
 * ep.c — RPC endpoints: libfabric objects, the progress thread, sends and
 * memory registration (see rpc.h and core/rpc/README.md).
 *
 * The progress thread is the only reader of the completion queue.  It
 * sleeps in epoll_wait on the CQ's file descriptor (FI_WAIT_FD, after
 * fi_trywait) and an eventfd that other threads write to wake it; with a
 * provider whose CQ has no file descriptor (shm) it polls with a sleep that
 * grows from 20 us to 1 ms while idle; with rc_polling it spins.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/rpc/rpc_internal.h"

static __thread struct rpc_ep *ep_tls_progress;

uint64_t rpc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool rpc_in_progress_thread(struct rpc_ep *ep)
{
	return ep_tls_progress == ep;
}

/* libfabric codes are negative errnos, except its own (FI_ETRUNC ...). */
/*
 * libinfinipath (libfabric's psm provider, loaded with libfabric) installs
 * handlers for SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT when it
 * is loaded; they call exit().  A SIGTERM that lands while libfabric holds
 * its lock then deadlocks in libfabric's own destructor: `strata cluster
 * status` under `timeout 20` hung 30 minutes in a make check, stuck in
 * fi_getinfo -> signal -> exit -> libfabric's fini.  As the program starts
 * (after the libraries' constructors, before main), every signal whose
 * handler lives in that library gets its default back; a handler of
 * anyone else (the program's, a sanitizer's) is kept.
 */
static bool rpc_handler_foreign(const struct sigaction *a)
{
	void *fn = (a->sa_flags & SA_SIGINFO) ? (void *)a->sa_sigaction :
						(void *)a->sa_handler;
	Dl_info di;

	if (a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN)
		return false;
	return dladdr(fn, &di) != 0 && di.dli_fname != NULL &&
	       strstr(di.dli_fname, "libinfinipath") != NULL;
}

int rpc_signals_foreign(bool reset)
{
	int n = 0;

	for (int s = 1; s < NSIG; s++) {
		struct sigaction a;

		if (sigaction(s, NULL, &a) != 0 || !rpc_handler_foreign(&a))
			continue;
		n++;
		if (reset)
			signal(s, SIG_DFL);
	}
	return n;
}

__attribute__((constructor)) static void rpc_signals_init(void)
{
	rpc_signals_foreign(true);
}

/* Every signal's disposition into old[] (SIG_ERR where it cannot be
 * read), and back: only those changed since, e.g. by the constructors of
 * libraries libfabric loads (rpc_fab_open(), rpc_fi_getinfo()). */
static void sig_save(struct sigaction old[NSIG])
{
	for (int s = 1; s < NSIG; s++)
		if (sigaction(s, NULL, &old[s]) != 0)
			old[s].sa_handler = SIG_ERR;
}

static void sig_restore(const struct sigaction old[NSIG])
{
	struct sigaction cur;

	for (int s = 1; s < NSIG; s++) {
		if (old[s].sa_handler == SIG_ERR ||
		    sigaction(s, NULL, &cur) != 0 ||
		    cur.sa_handler == old[s].sa_handler)
			continue;
		sigaction(s, &old[s], NULL);
	}
}

/*
 * Loading libfabric (README "Loading libfabric").  The program is not
 * linked with it (the `strata` CLI: clovis/cli/module.mk); the first call
 * of one of its five exported functions loads it with dlopen(), by its
 * soname.  dlsym() binds each to its default symbol version, as the link
 * editor would.  A process that never opens an endpoint never loads it
 * and does not pay its libraries' constructors (libinfinipath and libpsm2
 * time the CPU with usleep() loops: about 0.2 s a process).  A program
 * linked with it (strata-server, the test runner) gets the same handle.
 */
#define RPC_FABRIC_SONAME "libfabric.so." RPC_STR(FI_MAJOR_VERSION)
#define RPC_STR(x) RPC_STR_(x)
#define RPC_STR_(x) #x

static struct {
	char why[256];			/* dlerror() of a failed load ("":
					   loaded) */
	int (*getinfo)(uint32_t, const char *, const char *, uint64_t,
		       const struct fi_info *, struct fi_info **);
	void (*freeinfo)(struct fi_info *);
	struct fi_info *(*dupinfo)(const struct fi_info *);
	int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
	const char *(*strerror)(int);
} rpc_fab;
static pthread_once_t rpc_fab_once = PTHREAD_ONCE_INIT;

static void rpc_fab_open(void)
{
	struct sigaction old[NSIG];
	const char *e;
	void *h;

	/* the libraries' constructors may install signal handlers (the
	 * constructor above sees only those loaded with the program): put
	 * back every disposition the load changed, as rpc_fi_getinfo() */
	sig_save(old);
	h = dlopen(RPC_FABRIC_SONAME, RTLD_NOW | RTLD_GLOBAL);
	sig_restore(old);
	if (h != NULL) {
		*(void **)&rpc_fab.getinfo = dlsym(h, "fi_getinfo");
		*(void **)&rpc_fab.freeinfo = dlsym(h, "fi_freeinfo");
		*(void **)&rpc_fab.dupinfo = dlsym(h, "fi_dupinfo");
		*(void **)&rpc_fab.fabric = dlsym(h, "fi_fabric");
		*(void **)&rpc_fab.strerror = dlsym(h, "fi_strerror");
		if (rpc_fab.getinfo != NULL && rpc_fab.freeinfo != NULL &&
		    rpc_fab.dupinfo != NULL && rpc_fab.fabric != NULL &&
		    rpc_fab.strerror != NULL)
			return;
	}
	e = dlerror();
	snprintf(rpc_fab.why, sizeof rpc_fab.why, "%s",
		 e != NULL ? e : "a function is missing");
}

/* Load libfabric once (later calls return at once): 0, or -ELIBACC with
 * the error set naming the library.  Signal dispositions its libraries'
 * constructors change are put back. */
static int rpc_fabric_load(void)
{
	pthread_once(&rpc_fab_once, rpc_fab_open);
	if (rpc_fab.why[0] != '\0')
		return err_set(-ELIBACC, "rpc: cannot load %s: %s",
			       RPC_FABRIC_SONAME, rpc_fab.why);
	return 0;
}

int rpc_dl_fi_getinfo(uint32_t version, const char *node,
		      const char *service, uint64_t flags,
		      const struct fi_info *hints, struct fi_info **info)
{
	if (rpc_fabric_load() != 0)
		return -FI_ENOSYS;
	return rpc_fab.getinfo(version, node, service, flags, hints, info);
}

void rpc_dl_fi_freeinfo(struct fi_info *info)
{
	/* an fi_info exists only if libfabric was loaded */
	if (info != NULL && rpc_fabric_load() == 0)
		rpc_fab.freeinfo(info);
}

struct fi_info *rpc_dl_fi_dupinfo(const struct fi_info *info)
{
	return rpc_fabric_load() == 0 ? rpc_fab.dupinfo(info) : NULL;
}

int rpc_dl_fi_fabric(struct fi_fabric_attr *attr,
		     struct fid_fabric **fabric, void *context)
{
	if (rpc_fabric_load() != 0)
		return -FI_ENOSYS;
	return rpc_fab.fabric(attr, fabric, context);
}

const char *rpc_dl_fi_strerror(int errnum)
{
	if (rpc_fabric_load() != 0)
		return "libfabric is not loaded";
	return rpc_fab.strerror(errnum);
}

int rpc_fi_getinfo(const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct fi_info **info)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sigaction old[NSIG];
	int rc;

	/* one at a time: two could each take the other's change for the
	 * process's own */
	pthread_mutex_lock(&lock);
	sig_save(old);
	rc = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, info);
	sig_restore(old);
	pthread_mutex_unlock(&lock);
	return rc;
}

int rpc_fi_err(int fi_rc)
{
	if (fi_rc >= 0)
		return 0;
	if (-fi_rc == FI_ETRUNC || -fi_rc == FI_ETOOSMALL)
		return -EMSGSIZE;
	if (-fi_rc >= FI_ERRNO_OFFSET)
		return -EIO;
	return fi_rc;
}

/* A failed send or RMA: which errno the caller sees. */
int rpc_map_cq_err(int err)
{
	switch (err) {
	case FI_ECONNREFUSED:
	case FI_ECONNRESET:
	case FI_ECONNABORTED:
	case FI_ENOTCONN:
	case FI_EIO:
		return -ECONNRESET;
	case FI_EHOSTUNREACH:
	case FI_ENETUNREACH:
	case FI_EADDRNOTAVAIL:
		return -EHOSTUNREACH;
	case FI_ECANCELED:
		return -ESHUTDOWN;
	case FI_ETIMEDOUT:
		return -ETIMEDOUT;
	default:
		return err > 0 && err < FI_ERRNO_OFFSET ? -err : -ECONNRESET;
	}
}

void rpc_wake(struct rpc_ep *ep)
{
	uint64_t one = 1;

	if (ep->ep_evfd >= 0 && write(ep->ep_evfd, &one, sizeof one) < 0)
		LOG_DEBUG("rpc: eventfd write failed");
}

void rpc_name_str(struct rpc_ep *ep, const void *name, size_t len, char *buf,
		  size_t size)
{
	char tmp[RPC_NAME_MAX + 32];
	size_t n = sizeof tmp;
	const char *s;

	(void)len;
	if (fi_av_straddr(ep->ep_av, name, tmp, &n) == NULL) {
		snprintf(buf, size, "?");
		return;
	}
	tmp[sizeof tmp - 1] = '\0';
	s = strstr(tmp, "://");
	snprintf(buf, size, "%s", s != NULL ? s + 3 : tmp);
}

/* shm: a peer name without its "fi_shm://" (or any "x://") prefix: the
 * name of its region in /dev/shm. */
static const char *av_shm_name(const void *name)
{
	const char *n = name, *s = strstr(n, "://");

	return s != NULL ? s + 3 : n;
}

/*
 * shm: may a peer's region be mapped now?  libfabric 1.17's shm provider
 * keeps an AV entry whose region it could not map (the peer not up yet:
 * "shm_open error"; or still setting it up: "peer not initialized") and
 * a later send through it dereferences an unmapped region: every server
 * of a 3-server cluster on provider shm, started together, died of SIGSEGV
 * in fi_inject within seconds (2026-11-28; never with 2 servers, nor when
 * started seconds apart).  So a name this endpoint calls (rpc_connect)
 * goes into the AV only once its region exists (else the connect fails
 * with -ECONNREFUSED and its caller tries again later) and is at least
 * RPC_SHM_REGION_AGE_MS old by its birth time (smr_create() sets it up
 * within microseconds of creating it): a younger one is waited for, and
 * where the file system keeps no birth time every such connect waits that
 * long.  A name that said hello here is checked without a wait (the
 * hello is not authenticated yet: a local process could name a region
 * that does not exist): it must end within RPC_NAME_MAX and its region
 * must exist and not be empty (av_shm_check()).
 */
#define RPC_SHM_REGION_AGE_MS 100

/* shm: /dev/shm/NAME of peer name into path, or -EINVAL when name does
 * not end within RPC_NAME_MAX or is no region name. */
static int av_shm_path(struct rpc_ep *ep, const char *name, char *path,
		       size_t size)
{
	const char *n;

	if (strnlen(name, RPC_NAME_MAX) == RPC_NAME_MAX)
		return err_set(-EINVAL, "rpc %s: shm peer name without an end",
			       ep->ep_self);
	n = av_shm_name(name);
	if (strchr(n, '/') != NULL)
		return err_set(-EINVAL, "rpc %s: shm peer name '%.64s' is not "
			       "a region name", ep->ep_self, n);
	snprintf(path, size, "/dev/shm/%s", n);
	return 0;
}

/* shm: the region at path exists and, unless empty_ok, is not empty
 * (-ECONNREFUSED else); *age_ms its age by birth time, -1 where the file
 * system keeps none, 0 when it is empty (not set up yet). */
static int av_shm_region(struct rpc_ep *ep, const char *path, bool empty_ok,
			 int64_t *age_ms)
{
	struct timespec now;
	struct statx sx;

	*age_ms = -1;
	if (statx(AT_FDCWD, path, 0, STATX_BTIME | STATX_SIZE, &sx) != 0 ||
	    (sx.stx_size == 0 && !empty_ok))
		return err_set(-ECONNREFUSED, "rpc %s: shm peer %s is not up "
			       "(no region, or an empty one)", ep->ep_self,
			       path);
	/* Birth time where the file system keeps it (tmpfs since Linux
	 * 6.x); its change time moves with every write to the region. */
	if (sx.stx_size == 0) {
		*age_ms = 0;
	} else if (sx.stx_mask & STATX_BTIME) {
		clock_gettime(CLOCK_REALTIME, &now);
		*age_ms = (int64_t)(now.tv_sec - sx.stx_btime.tv_sec) * 1000 +
			  ((int64_t)now.tv_nsec - sx.stx_btime.tv_nsec) /
			  1000000;
	}
	return 0;
}

/* shm: may peer name go into the AV now (see above)?  calling: this
 * endpoint connects to it (a young region is waited for); else it said
 * hello here (checked without a wait). */
static int av_shm_check(struct rpc_ep *ep, const char *name, bool calling)
{
	char path[RPC_NAME_MAX + 16];
	int64_t age_ms, wait_ms;
	int rc;

	if ((rc = av_shm_path(ep, name, path, sizeof path)) != 0 ||
	    (rc = av_shm_region(ep, path, calling, &age_ms)) != 0 ||
	    !calling)
		return rc;
	wait_ms = age_ms < 0 ? RPC_SHM_REGION_AGE_MS :
			       RPC_SHM_REGION_AGE_MS - age_ms;
	if (wait_ms <= 0)
		return 0;
	nanosleep(&(struct timespec){0, (long)wait_ms * 1000000L}, NULL);
	return av_shm_region(ep, path, false, &age_ms);
}

static bool ep_is_shm(const struct rpc_ep *ep)
{
	return strcmp(ep->ep_provider, "shm") == 0;
}

/*
 * shm: uses of a peer name.  libfabric 1.17's shm provider unmaps a peer's
 * region at every fi_av_remove of its address, although util_av counts the
 * inserts of one name as uses of one address: an endpoint that holds a
 * peer twice (its client connection to the peer, and the session the peer
 * opened here) lost the mapping under the one when the other went (the
 * peer's hello again drops its older session, auth_sweep()), and a call in
 * flight died of SIGSEGV in fi_inject (shm_cluster_test.sh, about 1 stop
 * in 6).  So each name is inserted once and removed at its last use.  A
 * name whose region is another file than when it was mapped (the peer
 * restarted: the provider maps a name again only after a remove) is
 * removed at once and mapped anew; its old entry stays an orphan until its
 * old users are gone (they talk to a process that is gone), and is never
 * removed again (its provider id may be another peer's by then).  Under
 * ep_av_lock.
 */
static struct rpc_avref *avref_by_name(struct rpc_ep *ep, const char *name)
{
	for (uint32_t i = 0; i < ep->ep_nr_avrefs; i++)
		if (ep->ep_avrefs[i].ar_live &&
		    strncmp(ep->ep_avrefs[i].ar_name, name, RPC_NAME_MAX) == 0)
			return &ep->ep_avrefs[i];
	return NULL;
}

static struct rpc_avref *avref_by_addr(struct rpc_ep *ep, fi_addr_t a)
{
	for (uint32_t i = 0; i < ep->ep_nr_avrefs; i++)
		if (ep->ep_avrefs[i].ar_addr == a)
			return &ep->ep_avrefs[i];
	return NULL;
}

static void avref_drop(struct rpc_ep *ep, struct rpc_avref *r)
{
	*r = ep->ep_avrefs[--ep->ep_nr_avrefs];
}

/* The inode of name's region (0: none, or not an shm name). */
static uint64_t av_shm_ino(struct rpc_ep *ep, const char *name)
{
	char path[RPC_NAME_MAX + 16];
	struct stat st;

	if (av_shm_path(ep, name, path, sizeof path) != 0 ||
	    stat(path, &st) != 0)
		return 0;
	return (uint64_t)st.st_ino;
}

/* shm: name into the AV as one more use (see above). */
static int av_shm_insert(struct rpc_ep *ep, const char *name,
			 fi_addr_t *out)
{
	uint64_t ino = av_shm_ino(ep, name);
	struct rpc_avref *r, *o;
	fi_addr_t a;
	int rc;

	pthread_mutex_lock(&ep->ep_av_lock);
	r = avref_by_name(ep, name);
	if (r != NULL && (ino == 0 || r->ar_ino == 0 || r->ar_ino == ino)) {
		r->ar_uses++;
		*out = r->ar_addr;
		pthread_mutex_unlock(&ep->ep_av_lock);
		return 0;
	}
	if (r != NULL) {
		/* the peer restarted: its old mapping goes now */
		a = r->ar_addr;
		r->ar_live = false;
		fi_av_remove(ep->ep_av, &a, 1, 0);
	}
	if (ep->ep_nr_avrefs == ep->ep_max_avrefs) {
		uint32_t n = ep->ep_max_avrefs ? 2 * ep->ep_max_avrefs : 16;
		struct rpc_avref *t = realloc(ep->ep_avrefs, n * sizeof *t);

		if (t == NULL) {
			pthread_mutex_unlock(&ep->ep_av_lock);
			return err_set(-ENOMEM, "rpc %s: peer table",
				       ep->ep_self);
		}
		ep->ep_avrefs = t;
		ep->ep_max_avrefs = n;
	}
	rc = fi_av_insert(ep->ep_av, name, 1, &a, 0, NULL);
	if (rc != 1) {
		pthread_mutex_unlock(&ep->ep_av_lock);
		return err_set(rc < 0 ? rpc_fi_err(rc) : -EINVAL,
			       "rpc %s: address vector refused a peer name "
			       "(%s)", ep->ep_self,
			       rc < 0 ? fi_strerror(-rc) : "0");
	}
	o = avref_by_addr(ep, a);
	if (o != NULL) {
		/* the provider gave an orphan's address again: its old users
		 * and the new ones share it, all counted */
		o->ar_live = true;
		o->ar_uses++;
		o->ar_ino = ino;
		snprintf(o->ar_name, sizeof o->ar_name, "%s", name);
	} else {
		r = &ep->ep_avrefs[ep->ep_nr_avrefs++];
		r->ar_addr = a;
		r->ar_uses = 1;
		r->ar_live = true;
		r->ar_ino = ino;
		snprintf(r->ar_name, sizeof r->ar_name, "%s", name);
	}
	*out = a;
	pthread_mutex_unlock(&ep->ep_av_lock);
	return 0;
}

int rpc_av_insert(struct rpc_ep *ep, const void *name, bool calling,
		  fi_addr_t *out)
{
	int rc;

	if (ep_is_shm(ep)) {
		rc = av_shm_check(ep, name, calling);
		if (rc == 0)
			rc = av_shm_insert(ep, name, out);
		if (rc != 0)
			*out = FI_ADDR_NOTAVAIL;
		return rc;
	}
	rc = fi_av_insert(ep->ep_av, name, 1, out, 0, NULL);
	if (rc != 1)
		return err_set(rc < 0 ? rpc_fi_err(rc) : -EINVAL,
			       "rpc %s: address vector refused a peer name (%s)",
			       ep->ep_self, rc < 0 ? fi_strerror(-rc) : "0");
	return 0;
}

void rpc_av_remove(struct rpc_ep *ep, fi_addr_t a)
{
	struct rpc_avref *r;

	if (a == FI_ADDR_NOTAVAIL)
		return;
	if (!ep_is_shm(ep)) {
		fi_av_remove(ep->ep_av, &a, 1, 0);
		return;
	}
	pthread_mutex_lock(&ep->ep_av_lock);
	r = avref_by_addr(ep, a);
	if (r != NULL && --r->ar_uses == 0) {
		if (r->ar_live)
			fi_av_remove(ep->ep_av, &a, 1, 0);
		avref_drop(ep, r);
	}
	pthread_mutex_unlock(&ep->ep_av_lock);
}

int rpc_mr_reg(struct rpc_ep *ep, const void *buf, size_t len, uint64_t acc,
	       struct fid_mr **mr)
{
	uint64_t key;
	int rc;

	pthread_mutex_lock(&ep->ep_lock);
	key = ++ep->ep_next_key;
	pthread_mutex_unlock(&ep->ep_lock);
	rc = fi_mr_reg(ep->ep_domain, buf, len, acc, 0,
		       (ep->ep_mr_mode & FI_MR_PROV_KEY) ? 0 : key, 0, mr, NULL);
	if (rc != 0)
		return err_set(rpc_fi_err(rc), "rpc %s: fi_mr_reg of %zu bytes: "
			       "%s", ep->ep_self, len, fi_strerror(-rc));
	if (ep->ep_mr_mode & FI_MR_ENDPOINT) {
		rc = fi_mr_bind(*mr, &ep->ep_ep->fid, 0);
		if (rc == 0)
			rc = fi_mr_enable(*mr);
		if (rc != 0) {
			fi_close(&(*mr)->fid);
			*mr = NULL;
			return err_set(rpc_fi_err(rc), "rpc %s: binding an MR: "
				       "%s", ep->ep_self, fi_strerror(-rc));
		}
	}
	return 0;
}

void rpc_mr_close(struct fid_mr *mr)
{
	if (mr != NULL)
		fi_close(&mr->fid);
}

/* ------------------------------------------------------------ sending */

void rpc_track(struct rpc_ep *ep, struct rpc_ctx *cx)
{
	cx->cx_next = ep->ep_tracked.cx_next;
	cx->cx_prev = &ep->ep_tracked;
	cx->cx_next->cx_prev = cx;
	ep->ep_tracked.cx_next = cx;
}

void rpc_untrack(struct rpc_ep *ep, struct rpc_ctx *cx)
{
	(void)ep;
	cx->cx_prev->cx_next = cx->cx_next;
	cx->cx_next->cx_prev = cx->cx_prev;
	cx->cx_next = cx->cx_prev = cx;
}

/* Free a send buffer that is no longer posted (ep_lock not held). */
static void ep_sbuf_free(struct rpc_ep *ep, struct rpc_sbuf *sb)
{
	pthread_mutex_lock(&ep->ep_lock);
	rpc_untrack(ep, &sb->sb_ctx);
	pthread_mutex_unlock(&ep->ep_lock);
	rpc_mr_close(sb->sb_mr);
	free(sb);
}

/* Post sb (ep_lock held).  A message whose session or call is gone, or
 * that waited past its time, is not sent: -ECANCELED. */
static int ep_post(struct rpc_ep *ep, struct rpc_sbuf *sb)
{
	void *desc = sb->sb_mr != NULL ? fi_mr_desc(sb->sb_mr) : NULL;
	struct rpc_sess *s;

	if (sb->sb_session != 0) {
		s = rpc_sess_find(ep, sb->sb_session);
		if (s == NULL)
			return -ECANCELED;
		sb->sb_dest = s->se_addr;
	} else if (sb->sb_xid != 0 && !rpc_cli_pending(ep, sb->sb_xid)) {
		return -ECANCELED;
	}
	if (rpc_now_ms() > sb->sb_expire_ms)
		return -ECANCELED;
	return (int)fi_send(ep->ep_ep, sb->sb_data, sb->sb_len, desc,
			    sb->sb_dest, &sb->sb_ctx);
}

/* Whether the backlog holds anything (ep_lock held by writers; read
 * without it by the progress loop). */
static void ep_backlog_note(struct rpc_ep *ep)
{
	__atomic_store_n(&ep->ep_has_backlog, ep->ep_backlog != NULL,
			 __ATOMIC_RELEASE);
}

void rpc_backlog_purge(struct rpc_ep *ep, fi_addr_t dest)
{
	struct rpc_sbuf **pp = &ep->ep_backlog, *sb;

	while ((sb = *pp) != NULL) {
		if (sb->sb_session == 0 && sb->sb_dest == dest) {
			*pp = sb->sb_next;
			rpc_untrack(ep, &sb->sb_ctx);
			rpc_mr_close(sb->sb_mr);
			free(sb);
			continue;
		}
		pp = &sb->sb_next;
	}
	ep->ep_backlog_tail = &ep->ep_backlog;
	while (*ep->ep_backlog_tail != NULL)
		ep->ep_backlog_tail = &(*ep->ep_backlog_tail)->sb_next;
	ep_backlog_note(ep);
}

static void ep_backlog_add(struct rpc_ep *ep, struct rpc_sbuf *sb)
{
	sb->sb_next = NULL;
	*ep->ep_backlog_tail = sb;
	ep->ep_backlog_tail = &sb->sb_next;
	ep_backlog_note(ep);
}

/* Which queue of the backlog sb belongs to: its session (server) or its
 * address (client).  Messages to one peer keep their order; a peer that
 * pushes back holds up only its own messages. */
static uint64_t ep_backlog_key(const struct rpc_sbuf *sb)
{
	return sb->sb_session != 0 ? sb->sb_session :
	       (uint64_t)sb->sb_dest ^ (1ull << 63);
}

/* Whether a message to key already waits in the backlog (ep_lock held).
 * The backlog is empty on the fast path; when it is not, it holds at
 * most the calls in flight, so a scan is cheap next to a fi_send. */
static bool ep_backlogged(struct rpc_ep *ep, uint64_t key)
{
	for (struct rpc_sbuf *sb = ep->ep_backlog; sb != NULL; sb = sb->sb_next)
		if (ep_backlog_key(sb) == key)
			return true;
	return false;
}

/* Blocked peers remembered in one flush pass; past this many, the pass
 * stops (the rest waits for the next one). */
#define EP_FLUSH_BLOCKED 32

/* Post what waits in the backlog, oldest first.  A peer that pushes back
 * (-FI_EAGAIN) keeps the rest of its messages in order behind the one
 * refused; messages to other peers go on. */
static void ep_backlog_flush(struct rpc_ep *ep)
{
	uint64_t blocked[EP_FLUSH_BLOCKED], key;
	struct rpc_sbuf **pp, *sb;
	int nb = 0, rc, i;

	pthread_mutex_lock(&ep->ep_lock);
	pp = &ep->ep_backlog;
	while ((sb = *pp) != NULL) {
		key = ep_backlog_key(sb);
		for (i = 0; i < nb && blocked[i] != key; i++)
			;
		if (i < nb) {
			pp = &sb->sb_next;
			continue;
		}
		rc = ep_post(ep, sb);
		if (rc == -FI_EAGAIN) {
			if (nb == EP_FLUSH_BLOCKED)
				break;
			blocked[nb++] = key;
			pp = &sb->sb_next;
			continue;
		}
		*pp = sb->sb_next;
		if (rc != 0) {
			rpc_untrack(ep, &sb->sb_ctx);
			pthread_mutex_unlock(&ep->ep_lock);
			if (sb->sb_xid != 0 && rc != -ECANCELED)
				rpc_cli_send_failed(ep, sb->sb_xid,
						    rpc_fi_err(rc));
			rpc_mr_close(sb->sb_mr);
			free(sb);
			pthread_mutex_lock(&ep->ep_lock);
			/* The list may have changed meanwhile: restart. */
			pp = &ep->ep_backlog;
			nb = 0;
		}
	}
	ep->ep_backlog_tail = &ep->ep_backlog;
	while (*ep->ep_backlog_tail != NULL)
		ep->ep_backlog_tail = &(*ep->ep_backlog_tail)->sb_next;
	ep_backlog_note(ep);
	pthread_mutex_unlock(&ep->ep_lock);
}

/* Pack env into buf (room for n bytes: the packed size, plus
 * RPC_TAG_FIELD with a key) and append its MAC as field 11 when key is
 * set.  Returns the bytes written, or 0 when the MAC failed. */
static size_t ep_pack(const RpcEnvelope *env, const uint8_t *key,
		      uint8_t *buf)
{
	size_t n = rpc_envelope__pack(env, buf);

	if (key == NULL)
		return n;
	buf[n] = 0x5a;           /* field 11, length-delimited */
	buf[n + 1] = RPC_TAG_LEN;
	if (rpc_msg_tag(key, buf, n, buf + n + 2) != 0)
		return 0;
	return n + RPC_TAG_FIELD;
}

/* A message of at most ep_inject_max bytes goes by fi_inject: packed on
 * the stack, no buffer to allocate and no send completion to reap.  1: sent
 * (or dropped: its session or call is gone); 0: take the ordinary path
 * (the provider pushed back, or this peer has a backlog to keep order
 * with).  A failed inject is not reported: the call ends at its deadline
 * or by a transport error on a later message. */
static int ep_inject(struct rpc_ep *ep, fi_addr_t dest, const RpcEnvelope *env,
		     const uint8_t *key)
{
	uint8_t buf[RPC_INJECT_MAX];
	struct rpc_sess *s;
	uint64_t k;
	size_t n;
	ssize_t rc;

	if ((n = ep_pack(env, key, buf)) == 0)
		return 0;
	pthread_mutex_lock(&ep->ep_lock);
	if (dest == FI_ADDR_NOTAVAIL) {
		s = rpc_sess_find(ep, env->session);
		if (s == NULL) {
			pthread_mutex_unlock(&ep->ep_lock);
			return 1;
		}
		dest = s->se_addr;
		k = env->session;
	} else {
		k = (uint64_t)dest ^ (1ull << 63);
	}
	if (ep->ep_backlog != NULL && ep_backlogged(ep, k)) {
		pthread_mutex_unlock(&ep->ep_lock);
		return 0;
	}
	rc = fi_inject(ep->ep_ep, buf, n, dest);
	pthread_mutex_unlock(&ep->ep_lock);
	return rc == 0 ? 1 : 0;
}

/*
 * Whether env, a message about to be sent from this thread, is left to the
 * progress thread to post (through the backlog) instead: a server's reply
 * from a handler or executor thread while other requests are outstanding.
 * The tcp provider posts under its endpoint lock, which the progress
 * thread holds while it copies a 1 MiB push into the socket or a pulled
 * 1 MiB out of it; a handler posting its reply meanwhile sleeps on that
 * lock (a futex wait and a wake-up per reply), and its post makes the
 * provider signal the progress thread's wait set, which wakes it only to
 * wait for the same lock.  Queued, the reply goes out in the progress
 * thread's next turn, after what it is doing, and the handler goes on.
 * With one request outstanding the reply is posted here, at once: a
 * hand-off then only adds the progress thread's wake-up to the round trip
 * (core/rpc/README.md "Who posts").  Not in polling mode (callers reap)
 * nor without a wait object to wake the progress thread by (shm).
 */
static bool ep_reply_queued(struct rpc_ep *ep, const RpcEnvelope *env,
			    fi_addr_t dest)
{
	return env->kind == RPC_K_REPLY && dest == FI_ADDR_NOTAVAIL &&
	       ep->ep_evfd >= 0 && !ep->ep_conf.rc_polling &&
	       __atomic_load_n(&ep->ep_outstanding, __ATOMIC_RELAXED) > 1 &&
	       !rpc_in_progress_thread(ep);
}

int rpc_send_env(struct rpc_ep *ep, fi_addr_t dest, const RpcEnvelope *env,
		 uint64_t xid, const uint8_t *key)
{
	size_t n = rpc_envelope__get_packed_size(env);
	uint8_t skey[RPC_KEY_LEN];
	struct rpc_sbuf *sb;
	struct rpc_sess *s;
	bool queued;
	int rc;

	if (key == NULL && env->kind == RPC_K_REPLY &&
	    dest == FI_ADDR_NOTAVAIL) {
		/* A server's reply: MACed with its session's key. */
		pthread_mutex_lock(&ep->ep_lock);
		s = rpc_sess_find(ep, env->session);
		if (s != NULL && s->se_authed) {
			memcpy(skey, s->se_key, sizeof skey);
			key = skey;
		}
		pthread_mutex_unlock(&ep->ep_lock);
		if (key == NULL)
			return 0; /* the session went away meanwhile */
	}
	if (key != NULL)
		n += RPC_TAG_FIELD;
	if (n > ep->ep_conf.rc_max_msg)
		return err_set(-EMSGSIZE, "rpc %s: message of %zu bytes for "
			       "opcode %u exceeds rc_max_msg %u", ep->ep_self,
			       n, env->opcode, ep->ep_conf.rc_max_msg);
	queued = ep_reply_queued(ep, env, dest);
	if (!queued && n <= ep->ep_inject_max &&
	    ep_inject(ep, dest, env, key) == 1) {
		if (key == skey)
			memset(skey, 0, sizeof skey);
		return 0;
	}
	sb = calloc(1, sizeof *sb + n);
	if (sb == NULL)
		return err_set(-ENOMEM, "rpc %s: no memory for a message",
			       ep->ep_self);
	sb->sb_ctx.cx_type = RPC_CTX_SEND;
	sb->sb_dest = dest;
	sb->sb_xid = xid;
	sb->sb_session = dest == FI_ADDR_NOTAVAIL ? env->session : 0;
	sb->sb_expire_ms = rpc_now_ms() + (env->has_timeout_ms ?
					   env->timeout_ms : 5000u);
	sb->sb_len = ep_pack(env, key, sb->sb_data);
	if (key == skey)
		memset(skey, 0, sizeof skey);
	if (sb->sb_len == 0) {
		free(sb);
		return err_set(-EIO, "rpc %s: MAC of opcode %u failed",
			       ep->ep_self, env->opcode);
	}
	if ((ep->ep_mr_mode & FI_MR_LOCAL) &&
	    (rc = rpc_mr_reg(ep, sb->sb_data, n, FI_SEND, &sb->sb_mr)) != 0) {
		free(sb);
		return rc;
	}
	pthread_mutex_lock(&ep->ep_lock);
	rpc_track(ep, &sb->sb_ctx);
	if (queued)
		ep->ep_stats.rs_replies_queued++;
	rc = queued || (ep->ep_backlog != NULL &&
			ep_backlogged(ep, ep_backlog_key(sb))) ?
		-FI_EAGAIN : ep_post(ep, sb);
	if (rc == -FI_EAGAIN)
		ep_backlog_add(ep, sb);
	pthread_mutex_unlock(&ep->ep_lock);
	if (rc == -FI_EAGAIN) {
		rpc_wake(ep);
		return 0;
	}
	if (rc == -ECANCELED) {
		ep_sbuf_free(ep, sb);
		return 0; /* the session or call went away meanwhile */
	}
	if (rc != 0) {
		ep_sbuf_free(ep, sb);
		return err_set(rpc_fi_err(rc), "rpc %s: fi_send of opcode %u: "
			       "%s", ep->ep_self, env->opcode,
			       fi_strerror(-rc));
	}
	return 0;
}

/* ---------------------------------------------------------- receiving */

static int ep_post_recv(struct rpc_ep *ep, struct rpc_rbuf *rb)
{
	void *desc = ep->ep_rbuf_mr ? fi_mr_desc(ep->ep_rbuf_mr) : NULL;
	int rc;

	for (int i = 0; i < 1000; i++) {
		rc = (int)fi_recv(ep->ep_ep, rb->rb_buf, ep->ep_conf.rc_max_msg,
				  desc, FI_ADDR_UNSPEC, &rb->rb_ctx);
		if (rc != -FI_EAGAIN)
			break;
		usleep(100);
	}
	if (rc != 0)
		LOG_ERROR("rpc %s: cannot repost a receive: %s", ep->ep_self,
			  fi_strerror(-rc));
	return rc;
}

/* A decoded envelope to its side. */
static void ep_route(struct rpc_ep *ep, RpcEnvelope *env)
{
	switch (env->kind) {
	case RPC_K_REQUEST:
		rpc_srv_request(ep, env);
		return;
	case RPC_K_HELLO:
		rpc_srv_hello(ep, env);
		return;
	case RPC_K_AUTH:
		rpc_srv_auth(ep, env);
		return;
	default:
		rpc_cli_reply(ep, env, false);
		return;
	}
}

/* Work a reaping caller found that is not its to do: the progress thread
 * does it (ep_lock held to queue). */
struct rpc_defer {
	struct rpc_defer *df_next;
	RpcEnvelope *df_env;        /* a decoded message, or */
	struct rpc_ctx *df_cx;      /* a completion */
	size_t df_len;
	int df_err;
};

static void ep_defer(struct rpc_ep *ep, RpcEnvelope *env, struct rpc_ctx *cx,
		     size_t len, int err)
{
	struct rpc_defer *d = malloc(sizeof *d);

	if (d == NULL) { /* cannot hand it over: do it here */
		if (env != NULL)
			ep_route(ep, env);
		return;
	}
	*d = (struct rpc_defer){ NULL, env, cx, len, err };
	pthread_mutex_lock(&ep->ep_lock);
	*ep->ep_defer_tail = d;
	ep->ep_defer_tail = &d->df_next;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_signal(&ep->ep_pcv);
	/* A solo reaper's progress thread may sleep in epoll_wait (it
	 * entered before the reaper came): the eventfd reaches it there.
	 * Only reapers defer (ep_poll(ep, true)), and in default mode the
	 * only reaper is a solo one, so this write happens only while a
	 * solo reaper is reading the CQ: never on the ordinary path. */
	if (!ep->ep_conf.rc_polling)
		rpc_wake(ep);
}

static void ep_complete(struct rpc_ep *ep, struct rpc_ctx *cx, size_t len,
			int err, bool reaper);

/* Run what reaping callers handed over (progress thread, or close). */
static int ep_defer_run(struct rpc_ep *ep)
{
	struct rpc_defer *d, *next;
	int n = 0;

	pthread_mutex_lock(&ep->ep_lock);
	d = ep->ep_defer;
	ep->ep_defer = NULL;
	ep->ep_defer_tail = &ep->ep_defer;
	pthread_mutex_unlock(&ep->ep_lock);
	for (; d != NULL; d = next, n++) {
		next = d->df_next;
		if (d->df_env != NULL)
			ep_route(ep, d->df_env);
		else
			ep_complete(ep, d->df_cx, d->df_len, d->df_err, false);
		free(d);
	}
	return n;
}

/* One message arrived: decode, check, hand it to its side.  A reaping
 * caller (reaper) handles only replies to synchronous calls, whose done()
 * just wakes their caller; the rest goes to the progress thread, so that
 * no done() of an asynchronous call and no handler runs on a caller's
 * thread. */
static void ep_dispatch(struct rpc_ep *ep, struct rpc_rbuf *rb, size_t len,
			bool reaper)
{
	RpcEnvelope *env;
	int rc;

	rc = rpc_wire_env_decode(rb->rb_buf, len, ep->ep_conf.rc_max_msg, &env);
	if (rc == 0 && (env->kind == RPC_K_REQUEST ||
			env->kind == RPC_K_REPLY) &&
	    rpc_msg_check(ep, rb->rb_buf, len, env) < 0) {
		ep_post_recv(ep, rb);
		LOG_INFO("rpc %s: dropped a message: %s", ep->ep_self,
			 err_msg());
		rpc_envelope__free_unpacked(env, NULL);
		return;
	}
	ep_post_recv(ep, rb);
	if (rc != 0) {
		pthread_mutex_lock(&ep->ep_lock);
		ep->ep_stats.rs_bad_msgs++;
		pthread_mutex_unlock(&ep->ep_lock);
		LOG_INFO("rpc %s: dropped a message: %s", ep->ep_self,
			 err_msg());
		return;
	}
	if (!reaper)
		ep_route(ep, env);
	else if (env->kind == RPC_K_REQUEST || env->kind == RPC_K_HELLO ||
		 env->kind == RPC_K_AUTH || !rpc_cli_reply(ep, env, true))
		ep_defer(ep, env, NULL, 0, 0);
}

static void ep_complete(struct rpc_ep *ep, struct rpc_ctx *cx, size_t len,
			int err, bool reaper)
{
	struct rpc_sbuf *sb;

	switch (cx->cx_type) {
	case RPC_CTX_RECV:
		if (err == 0) {
			ep_dispatch(ep, (struct rpc_rbuf *)cx, len, reaper);
		} else if (err != FI_ECANCELED) {
			pthread_mutex_lock(&ep->ep_lock);
			ep->ep_stats.rs_bad_msgs++;
			pthread_mutex_unlock(&ep->ep_lock);
			LOG_INFO("rpc %s: receive failed (%s), message dropped",
				 ep->ep_self, fi_strerror(err));
			ep_post_recv(ep, (struct rpc_rbuf *)cx);
		}
		return;
	case RPC_CTX_SEND:
		sb = (struct rpc_sbuf *)cx;
		if (err != 0 && sb->sb_xid != 0) {
			if (reaper)
				return ep_defer(ep, NULL, cx, len, err);
			rpc_cli_send_failed(ep, sb->sb_xid, rpc_map_cq_err(err));
		}
		ep_sbuf_free(ep, sb);
		return;
	case RPC_CTX_RMA:
		rpc_rma_complete(ep, (struct rpc_rma *)cx,
				 err ? rpc_map_cq_err(err) : 0);
		return;
	}
}

/* Read the CQ dry; returns the number of completions handled. */
static int ep_poll(struct rpc_ep *ep, bool reaper)
{
	struct fi_cq_msg_entry e[16];
	struct fi_cq_err_entry ee;
	int total = 0;
	ssize_t n;

	for (;;) {
		n = fi_cq_read(ep->ep_cq, e, 16);
		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				ep_complete(ep, e[i].op_context, e[i].len, 0,
					    reaper);
			total += (int)n;
			continue;
		}
		if (n != -FI_EAVAIL)
			break;
		memset(&ee, 0, sizeof ee);
		if (fi_cq_readerr(ep->ep_cq, &ee, 0) != 1)
			break;
		LOG_DEBUG("rpc %s: completion error %d (%s)", ep->ep_self,
			  ee.err, fi_strerror(ee.err));
		if (ee.op_context != NULL)
			ep_complete(ep, ee.op_context, ee.len,
				    ee.err ? ee.err : FI_EIO, reaper);
		total++;
	}
	return total;
}

bool rpc_reap_begin(struct rpc_ep *ep)
{
	if (!ep->ep_conf.rc_polling || rpc_in_progress_thread(ep))
		return false;
	__atomic_add_fetch(&ep->ep_reapers, 1, __ATOMIC_ACQ_REL);
	return true;
}

void rpc_reap(struct rpc_ep *ep)
{
	if (pthread_mutex_trylock(&ep->ep_cq_lock) != 0)
		return;
	ep_poll(ep, true);
	pthread_mutex_unlock(&ep->ep_cq_lock);
}

/* The progress thread is not woken when the last reaper leaves: it sees
 * that within 1 ms (ep_nap).  Waking it at once made it spin between two
 * calls of a caller, a third spinner on a loaded 2-core host. */
void rpc_reap_end(struct rpc_ep *ep)
{
	__atomic_sub_fetch(&ep->ep_reapers, 1, __ATOMIC_ACQ_REL);
}

/* ------------------------------------------- solo reaper (wait-fd mode) */

bool rpc_solo_begin(struct rpc_ep *ep)
{
	uint32_t free_ = 0;

	if (ep->ep_conf.rc_polling || !ep->ep_wait_fd || ep->ep_revfd < 0 ||
	    rpc_in_progress_thread(ep))
		return false;
	if (!__atomic_compare_exchange_n(&ep->ep_solo, &free_, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return false;
	__atomic_add_fetch(&ep->ep_reapers, 1, __ATOMIC_ACQ_REL);
	return true;
}

void rpc_solo_kick(struct rpc_ep *ep)
{
	uint64_t one = 1;

	if (write(ep->ep_revfd, &one, sizeof one) < 0)
		LOG_DEBUG("rpc: eventfd write failed");
}

/* Read the CQ; when nothing of ours came, fi_trywait() and sleep in
 * poll() on the CQ's descriptor and ep_revfd, at most 1 s at a time.
 * The progress thread stands aside meanwhile (ep_reapers > 0) but still
 * expires deadlines and runs what we defer; it kicks ep_revfd when it
 * completes our call (a deadline, close, a failed send). */
void rpc_solo_reap(struct rpc_ep *ep, pthread_mutex_t *lock, bool *done,
		   bool *sleeping, uint64_t until_ms)
{
	struct pollfd pf[2] = { { .fd = ep->ep_cq_fd, .events = POLLIN },
				{ .fd = ep->ep_revfd, .events = POLLIN } };
	struct fid *f = &ep->ep_cq->fid;
	uint64_t now, v;
	bool sleep, first = true;

	for (;; first = false) {
		/* Just after the send the CQ is almost always empty and
		 * fi_trywait() finds out as well: the first read is left to
		 * it (one fi_cq_read, i.e. provider progress, less). */
		if (!first) {
			pthread_mutex_lock(&ep->ep_cq_lock);
			ep_poll(ep, true);
			pthread_mutex_unlock(&ep->ep_cq_lock);
		}
		now = rpc_now_ms();
		pthread_mutex_lock(lock);
		sleep = !*done && now < until_ms;
		*sleeping = sleep;
		pthread_mutex_unlock(lock);
		if (!sleep)
			return;
		pf[1].revents = 0;
		if (fi_trywait(ep->ep_fabric, &f, 1) == FI_SUCCESS &&
		    poll(pf, 2, until_ms - now > 1000 ? 1000 :
			 (int)(until_ms - now)) < 0)
			pf[1].revents = 0;
		pthread_mutex_lock(lock);
		*sleeping = false;
		pthread_mutex_unlock(lock);
		if ((pf[1].revents & POLLIN) &&
		    read(ep->ep_revfd, &v, sizeof v) < 0)
			LOG_DEBUG("rpc: eventfd read failed");
	}
}

/* The last solo reaper leaves.  With other calls in flight the progress
 * thread takes the CQ back at once (else it would within 1 ms). */
void rpc_solo_end(struct rpc_ep *ep)
{
	bool others;

	__atomic_store_n(&ep->ep_solo, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&ep->ep_lock);
	__atomic_sub_fetch(&ep->ep_reapers, 1, __ATOMIC_ACQ_REL);
	others = ep->ep_nr_calls > 0;
	if (others)
		pthread_cond_signal(&ep->ep_pcv);
	pthread_mutex_unlock(&ep->ep_lock);
	if (others)
		rpc_wake(ep);
}

/* Sleep until the CQ has something, a wake, or wait_ms passes. */
static void ep_sleep(struct rpc_ep *ep, int wait_ms, unsigned *idle)
{
	struct epoll_event ev[2];
	struct fid *f = &ep->ep_cq->fid;
	struct timespec ts;
	uint64_t v;
	int n;

	if (ep->ep_conf.rc_polling)
		return;
	if (!ep->ep_wait_fd) {
		unsigned us = 20u << (*idle < 6 ? *idle : 6);

		if (us > 1000)
			us = 1000;
		if ((int)(us / 1000) > wait_ms)
			us = (unsigned)wait_ms * 1000u;
		(*idle)++;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)us * 1000;
		nanosleep(&ts, NULL);
		return;
	}
	if (fi_trywait(ep->ep_fabric, &f, 1) != FI_SUCCESS)
		return;
	n = epoll_wait(ep->ep_epfd, ev, 2, wait_ms);
	if (n > 0)
		__atomic_add_fetch(&ep->ep_stats.rs_wakeups, 1,
				   __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		if (ev[i].data.fd == ep->ep_evfd &&
		    read(ep->ep_evfd, &v, sizeof v) < 0)
			LOG_DEBUG("rpc: eventfd read failed");
}

/* While callers reap: wait for work they hand over, for the last of them
 * to leave, or 1 ms (deadlines); with a backlog, 1 ms at most too. */
static void ep_nap(struct rpc_ep *ep, bool backlog)
{
	struct timespec ts;

	(void)backlog;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ep->ep_lock);
	if (ep->ep_defer == NULL && ep->ep_reapers > 0 && !ep->ep_stop)
		pthread_cond_timedwait(&ep->ep_pcv, &ep->ep_lock, &ts);
	pthread_mutex_unlock(&ep->ep_lock);
}

static void *ep_progress_main(void *arg)
{
	struct rpc_ep *ep = arg;
	unsigned idle = 0;
	uint64_t now, at;
	bool backlog;
	int wait_ms, bo_ms = 0, n;

	ep_tls_progress = ep;
	/* The loop reads its flags without ep_lock: a spinning progress
	 * thread that took the lock at every turn slowed every caller. */
	while (!__atomic_load_n(&ep->ep_stop, __ATOMIC_ACQUIRE)) {
		backlog = __atomic_load_n(&ep->ep_has_backlog,
					  __ATOMIC_ACQUIRE);
		if (backlog) {
			ep_backlog_flush(ep);
			/* Still there: pushed back, retry soon (below). */
			backlog = __atomic_load_n(&ep->ep_has_backlog,
						  __ATOMIC_ACQUIRE);
		}
		if (__atomic_load_n(&ep->ep_has_rq, __ATOMIC_ACQUIRE) &&
		    rpc_rma_flush(ep))
			backlog = true; /* pushed back: retry soon */
		if (__atomic_load_n(&ep->ep_reapers, __ATOMIC_ACQUIRE) > 0) {
			/* A synchronous caller polls the CQ itself (polling
			 * mode): no second spinner; run what it hands over,
			 * deadlines and the backlog. */
			ep_defer_run(ep);
			ep_nap(ep, backlog);
			if (__atomic_load_n(&ep->ep_reapers,
					    __ATOMIC_ACQUIRE) > 0)
				goto expire;
		}
		pthread_mutex_lock(&ep->ep_cq_lock);
		n = ep_poll(ep, false);
		pthread_mutex_unlock(&ep->ep_cq_lock);
		if (n + ep_defer_run(ep) > 0) {
			idle = 0;
			continue;
		}
expire:
		/* Scan the call table only when the nearest deadline has
		 * come (cli.c keeps ep_wake_at_ms at or before it). */
		now = rpc_now_ms();
		at = __atomic_load_n(&ep->ep_wake_at_ms, __ATOMIC_ACQUIRE);
		if (now >= at)
			wait_ms = rpc_cli_expire(ep, 200);
		else
			wait_ms = at - now > 200 ? 200 : (int)(at - now);
		/* The provider pushed back (e.g. connecting to a peer that
		 * refuses): retry after 1, 2, 4 ... 32 ms, not in a spin. */
		if (backlog) {
			bo_ms = bo_ms ? (bo_ms < 32 ? bo_ms * 2 : 32) : 1;
			if (wait_ms > bo_ms)
				wait_ms = bo_ms;
		} else {
			bo_ms = 0;
		}
		if (__atomic_load_n(&ep->ep_reapers, __ATOMIC_ACQUIRE) == 0)
			ep_sleep(ep, wait_ms, &idle);
	}
	return NULL;
}

/* ------------------------------------------------------------ opening */

static int ep_conf_check(struct rpc_conf *c)
{
	if (c->rc_secret == NULL || c->rc_secret_len < 16 ||
	    c->rc_secret_len > 1024)
		return err_set(-EINVAL, "rpc: rc_secret of %zu bytes (16 to "
			       "1024 needed)", c->rc_secret_len);
	if (c->rc_max_inflight == 0)
		c->rc_max_inflight = RPC_DEF_MAX_INFLIGHT;
	if (c->rc_queue_depth == 0)
		c->rc_queue_depth = RPC_DEF_QUEUE_DEPTH;
	if (c->rc_nr_handlers == 0)
		c->rc_nr_handlers = RPC_DEF_NR_HANDLERS;
	if (c->rc_inline_max == 0)
		c->rc_inline_max = RPC_DEF_INLINE_MAX;
	if (c->rc_max_msg == 0)
		c->rc_max_msg = RPC_DEF_BODY_MAX + c->rc_inline_max +
				RPC_ENV_OVERHEAD;
	if (c->rc_max_inflight > 65536 || c->rc_queue_depth > (1u << 20) ||
	    c->rc_nr_handlers > RPC_MAX_HANDLERS)
		return err_set(-EINVAL, "rpc: rc_max_inflight %u (<= 65536), "
			       "rc_queue_depth %u (<= 1M), rc_nr_handlers %u "
			       "(<= %u)", c->rc_max_inflight, c->rc_queue_depth,
			       c->rc_nr_handlers, RPC_MAX_HANDLERS);
	if (c->rc_max_msg > RPC_MAX_MSG_LIMIT ||
	    c->rc_max_msg < c->rc_inline_max + 2 * RPC_ENV_OVERHEAD)
		return err_set(-EINVAL, "rpc: rc_max_msg %u must hold "
			       "rc_inline_max %u plus %u and be <= %u",
			       c->rc_max_msg, c->rc_inline_max,
			       2 * RPC_ENV_OVERHEAD, RPC_MAX_MSG_LIMIT);
	return 0;
}

static int ep_provider(struct rpc_ep *ep, const char *p)
{
	if (p == NULL || strcmp(p, "tcp") == 0)
		p = "tcp;ofi_rxm";
	else if (strcmp(p, "verbs") == 0)
		p = "verbs;ofi_rxm";
	if (strlen(p) >= sizeof ep->ep_provider)
		return err_set(-EINVAL, "rpc: provider name too long");
	snprintf(ep->ep_provider, sizeof ep->ep_provider, "%s", p);
	return 0;
}

int rpc_node_numeric(const char *node, char *buf, size_t len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	unsigned char a[sizeof(struct in6_addr)];
	int rc;

	if (inet_pton(AF_INET, node, a) == 1 ||
	    inet_pton(AF_INET6, node, a) == 1) {
		snprintf(buf, len, "%s", node);
		return 0;
	}
	rc = getaddrinfo(node, NULL, &hints, &ai);
	if (rc != 0)
		return err_set(-EHOSTUNREACH, "rpc: address '%s' does not "
			       "resolve: %s", node, rc == EAI_SYSTEM ?
			       strerror(errno) : gai_strerror(rc));
	rc = getnameinfo(ai->ai_addr, ai->ai_addrlen, buf, (socklen_t)len,
			 NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	if (rc != 0)
		return err_set(-EHOSTUNREACH, "rpc: address '%s': no numeric "
			       "form: %s", node, gai_strerror(rc));
	return 0;
}

static int ep_getinfo(struct rpc_ep *ep, const char *addr, uint16_t port)
{
	struct fi_info *h;
	const char *node = NULL;
	char svc[16], num[INET6_ADDRSTRLEN];
	uint64_t flags = 0;
	int rc;

	/* a name is bound at the address clients connect to: the first one
	 * it resolves to, as core/clu_conf.c picks (shm: only a name) */
	if (addr != NULL && strcmp(ep->ep_provider, "shm") != 0) {
		rc = rpc_node_numeric(addr, num, sizeof num);
		if (rc != 0)
			return rc;
		addr = num;
	}
	h = fi_allocinfo();
	if (h == NULL)
		return err_set(-ENOMEM, "rpc: fi_allocinfo");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				  FI_MR_ENDPOINT;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->fabric_attr->prov_name = strdup(ep->ep_provider);
	snprintf(svc, sizeof svc, "%u", port);
	if (port != 0 || strcmp(ep->ep_provider, "shm") != 0) {
		node = addr != NULL ? addr : "127.0.0.1";
		flags = FI_SOURCE;
	}
	rc = rpc_fi_getinfo(node, port ? svc : NULL, flags, h, &ep->ep_info);
	fi_freeinfo(h);
	if (rc == -FI_ENODATA || rc == -FI_ENOSYS)
		return err_set(-ENODEV, "rpc: provider \"%s\" is not available "
			       "on this host for %s:%u (no such device or "
			       "library)", ep->ep_provider, node ? node : "-",
			       port);
	if (rc != 0)
		return err_set(rpc_fi_err(rc), "rpc: fi_getinfo(%s, %s:%u): %s",
			       ep->ep_provider, node ? node : "-", port,
			       fi_strerror(-rc));
	return 0;
}

static int ep_cq_open(struct rpc_ep *ep)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .size = 4096 };
	struct epoll_event ev = { .events = EPOLLIN };
	int rc = -FI_ENOSYS;

	if (!ep->ep_conf.rc_polling) {
		ca.wait_obj = FI_WAIT_FD;
		rc = fi_cq_open(ep->ep_domain, &ca, &ep->ep_cq, NULL);
		if (rc == 0 && fi_control(&ep->ep_cq->fid, FI_GETWAIT,
					  &ep->ep_cq_fd) != 0) {
			fi_close(&ep->ep_cq->fid);
			rc = -FI_ENOSYS;
		}
	}
	if (rc == 0) {
		ep->ep_wait_fd = true;
		ep->ep_epfd = epoll_create1(EPOLL_CLOEXEC);
		ep->ep_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ep->ep_revfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ep->ep_epfd < 0 || ep->ep_evfd < 0 || ep->ep_revfd < 0)
			return err_set(-errno, "rpc: epoll/eventfd: %s",
				       strerror(errno));
		ev.data.fd = ep->ep_cq_fd;
		epoll_ctl(ep->ep_epfd, EPOLL_CTL_ADD, ep->ep_cq_fd, &ev);
		ev.data.fd = ep->ep_evfd;
		epoll_ctl(ep->ep_epfd, EPOLL_CTL_ADD, ep->ep_evfd, &ev);
		return 0;
	}
	ca.wait_obj = FI_WAIT_NONE;
	rc = fi_cq_open(ep->ep_domain, &ca, &ep->ep_cq, NULL);
	if (rc != 0)
		return err_set(rpc_fi_err(rc), "rpc: fi_cq_open: %s",
			       fi_strerror(-rc));
	return 0;
}

static int ep_fabric_open(struct rpc_ep *ep, const char *addr, uint16_t port)
{
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	const char *what;
	int rc;

	what = "fi_fabric";
	rc = fi_fabric(ep->ep_info->fabric_attr, &ep->ep_fabric, NULL);
	if (rc == 0 && (what = "fi_domain") != NULL)
		rc = fi_domain(ep->ep_fabric, ep->ep_info, &ep->ep_domain, NULL);
	if (rc == 0 && (what = "fi_av_open") != NULL)
		rc = fi_av_open(ep->ep_domain, &aa, &ep->ep_av, NULL);
	if (rc != 0)
		return err_set(rpc_fi_err(rc), "rpc %s: %s: %s", ep->ep_self,
			       what, fi_strerror(-rc));
	ep->ep_mr_mode = ep->ep_info->domain_attr->mr_mode;
	ep->ep_rma_max = ep->ep_info->ep_attr->max_msg_size;
	ep->ep_inject_max = ep->ep_info->tx_attr->inject_size;
	if (ep->ep_inject_max > RPC_INJECT_MAX)
		ep->ep_inject_max = RPC_INJECT_MAX;
	if (ep->ep_rma_max == 0 || ep->ep_rma_max > RPC_RMA_CHUNK)
		ep->ep_rma_max = RPC_RMA_CHUNK;
	if ((rc = ep_cq_open(ep)) != 0)
		return rc;
	what = "fi_endpoint";
	rc = fi_endpoint(ep->ep_domain, ep->ep_info, &ep->ep_ep, NULL);
	if (rc == 0 && (what = "fi_ep_bind(av)") != NULL)
		rc = fi_ep_bind(ep->ep_ep, &ep->ep_av->fid, 0);
	if (rc == 0 && (what = "fi_ep_bind(cq)") != NULL)
		rc = fi_ep_bind(ep->ep_ep, &ep->ep_cq->fid,
				FI_TRANSMIT | FI_RECV);
	if (rc == 0 && (what = "fi_enable") != NULL)
		rc = fi_enable(ep->ep_ep);
	if (rc != 0)
		return err_set(rpc_fi_err(rc), "rpc %s:%u: %s: %s",
			       addr ? addr : "-", port, what, fi_strerror(-rc));
	ep->ep_name_len = sizeof ep->ep_name;
	rc = fi_getname(&ep->ep_ep->fid, ep->ep_name, &ep->ep_name_len);
	if (rc != 0)
		return err_set(rpc_fi_err(rc), "rpc: fi_getname: %s",
			       fi_strerror(-rc));
	rpc_name_str(ep, ep->ep_name, ep->ep_name_len, ep->ep_self,
		     sizeof ep->ep_self);
	return 0;
}

static int ep_recv_setup(struct rpc_ep *ep)
{
	size_t sz = ep->ep_conf.rc_max_msg;
	int rc;

	ep->ep_rbufs = calloc(RPC_RECV_BUFS, sizeof *ep->ep_rbufs);
	ep->ep_rbuf_mem = malloc(sz * RPC_RECV_BUFS);
	if (ep->ep_rbufs == NULL || ep->ep_rbuf_mem == NULL)
		return err_set(-ENOMEM, "rpc: receive buffers");
	if ((ep->ep_mr_mode & FI_MR_LOCAL) &&
	    (rc = rpc_mr_reg(ep, ep->ep_rbuf_mem, sz * RPC_RECV_BUFS, FI_RECV,
			     &ep->ep_rbuf_mr)) != 0)
		return rc;
	for (unsigned i = 0; i < RPC_RECV_BUFS; i++) {
		ep->ep_rbufs[i].rb_ctx.cx_type = RPC_CTX_RECV;
		ep->ep_rbufs[i].rb_buf = ep->ep_rbuf_mem + i * sz;
		if ((rc = ep_post_recv(ep, &ep->ep_rbufs[i])) != 0)
			return err_set(rpc_fi_err(rc), "rpc %s: fi_recv: %s",
				       ep->ep_self, fi_strerror(-rc));
	}
	return 0;
}

/* After the endpoint is closed nothing completes: free what never did. */
static void ep_tracked_free(struct rpc_ep *ep)
{
	struct rpc_ctx *cx;

	while ((cx = ep->ep_tracked.cx_next) != &ep->ep_tracked) {
		rpc_untrack(ep, cx);
		if (cx->cx_type == RPC_CTX_SEND) {
			rpc_mr_close(((struct rpc_sbuf *)cx)->sb_mr);
		} else if (cx->cx_type == RPC_CTX_RMA) {
			rpc_mr_close(((struct rpc_rma *)cx)->ra_mr);
			if (!((struct rpc_rma *)cx)->ra_abandoned)
				continue; /* its waiter owns it */
		}
		free(cx);
	}
	ep->ep_backlog = NULL;
}

static void ep_free(struct rpc_ep *ep)
{
	if (ep->ep_ep != NULL)
		fi_close(&ep->ep_ep->fid);
	ep_tracked_free(ep);
	rpc_srv_fini(ep);
	rpc_mr_close(ep->ep_rbuf_mr);
	rpc_pool_free(ep);
	if (ep->ep_cq != NULL)
		fi_close(&ep->ep_cq->fid);
	if (ep->ep_av != NULL)
		fi_close(&ep->ep_av->fid);
	if (ep->ep_domain != NULL)
		fi_close(&ep->ep_domain->fid);
	if (ep->ep_fabric != NULL)
		fi_close(&ep->ep_fabric->fid);
	if (ep->ep_info != NULL)
		fi_freeinfo(ep->ep_info);
	if (ep->ep_epfd >= 0)
		close(ep->ep_epfd);
	if (ep->ep_evfd >= 0)
		close(ep->ep_evfd);
	if (ep->ep_revfd >= 0)
		close(ep->ep_revfd);
	free(ep->ep_rbufs);
	free(ep->ep_rbuf_mem);
	free(ep->ep_calls);
	free(ep->ep_handlers);
	free(ep->ep_secret);
	pthread_mutex_destroy(&ep->ep_lock);
	pthread_mutex_destroy(&ep->ep_av_lock);
	free(ep->ep_avrefs);
	pthread_cond_destroy(&ep->ep_cv);
	pthread_cond_destroy(&ep->ep_pcv);
	pthread_mutex_destroy(&ep->ep_cq_lock);
	free(ep);
}

static int ep_alloc(struct rpc_ep **out, const struct rpc_conf *c)
{
	struct rpc_ep *ep = calloc(1, sizeof *ep);

	*out = ep;
	if (ep == NULL)
		return err_set(-ENOMEM, "rpc: no memory for an endpoint");
	ep->ep_epfd = ep->ep_evfd = ep->ep_revfd = ep->ep_cq_fd = -1;
	pthread_mutex_init(&ep->ep_lock, NULL);
	pthread_mutex_init(&ep->ep_av_lock, NULL);
	pthread_mutex_init(&ep->ep_pool_lock, NULL);
	pthread_cond_init(&ep->ep_cv, NULL);
	pthread_cond_init(&ep->ep_pcv, NULL);
	pthread_mutex_init(&ep->ep_cq_lock, NULL);
	ep->ep_defer_tail = &ep->ep_defer;
	ep->ep_backlog_tail = &ep->ep_backlog;
	ep->ep_rq_tail = &ep->ep_rq;
	ep->ep_tracked.cx_next = ep->ep_tracked.cx_prev = &ep->ep_tracked;
	ep->ep_conf = *c;
	ep->ep_calls = calloc(RPC_CALL_BUCKETS, sizeof *ep->ep_calls);
	ep->ep_handlers = calloc(RPC_OP_MAX, sizeof *ep->ep_handlers);
	ep->ep_secret = malloc(c->rc_secret_len);
	if (ep->ep_calls == NULL || ep->ep_handlers == NULL ||
	    ep->ep_secret == NULL)
		return err_set(-ENOMEM, "rpc: no memory for an endpoint");
	memcpy(ep->ep_secret, c->rc_secret, c->rc_secret_len);
	ep->ep_conf.rc_secret = ep->ep_secret;
	ep->ep_max_body = ep->ep_conf.rc_max_msg - ep->ep_conf.rc_inline_max -
			  RPC_ENV_OVERHEAD;
	snprintf(ep->ep_self, sizeof ep->ep_self, "endpoint");
	return 0;
}

/*
 * shm: remove the regions a killed process left in /dev/shm.  An endpoint
 * opened without a name gets the region "PID:X:N" (16 MiB, sparse; X is 0
 * here, its meaning varies with the libfabric version), which libfabric
 * unlinks when the endpoint closes, and never if its process is SIGKILLed.
 * Only this user's files named exactly so whose PID no process has now go
 * (kill(PID, 0) says ESRCH); a server's named region ("ADDR:PORT") is
 * taken back by the server itself when it starts again.  Returns how many
 * went.
 */
static unsigned ep_shm_sweep(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;
	unsigned gone = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		unsigned long pid, a, b;
		char path[300], tail;
		struct stat st;

		if (sscanf(de->d_name, "%lu:%lu:%lu%c", &pid, &a, &b,
			   &tail) != 3 || pid == 0 || pid > INT32_MAX ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof path, "/dev/shm/%s", de->d_name);
		/* Only this user's: root would reach every user's files. */
		if (stat(path, &st) == 0 && st.st_uid == geteuid() &&
		    unlink(path) == 0)
			gone++;
	}
	closedir(d);
	return gone;
}

int rpc_ep_open(struct rpc_ep **out, const struct rpc_conf *c,
		const char *addr, uint16_t port)
{
	struct rpc_conf conf;
	struct rpc_ep *ep = NULL;
	int rc;

	if (out == NULL || c == NULL)
		return err_set(-EINVAL, "rpc_ep_open: NULL %s",
			       out == NULL ? "out" : "conf");
	*out = NULL;
	conf = *c;
	if ((rc = ep_conf_check(&conf)) != 0)
		return rc;
	if ((rc = ep_alloc(&ep, &conf)) != 0)
		goto out_free;
	ep->ep_server = port != 0;
	/* A server's incarnation (RpcWelcome): random, odd so never 0. */
	if (ep->ep_server && (rc = rpc_random(&ep->ep_incarnation,
					      sizeof ep->ep_incarnation)) != 0)
		goto out_free;
	ep->ep_incarnation |= ep->ep_server ? 1 : 0;
	if ((rc = ep_provider(ep, c->rc_provider)) != 0)
		goto out_free;
	if (ep_is_shm(ep)) {
		unsigned gone = ep_shm_sweep();

		if (gone > 0)
			LOG_INFO("rpc: removed %u shm region(s) of processes "
				 "that are gone", gone);
	}
	if ((rc = ep_getinfo(ep, addr, port)) != 0 ||
	    (rc = ep_fabric_open(ep, addr, port)) != 0 ||
	    (rc = ep_recv_setup(ep)) != 0 ||
	    (rc = rpc_srv_start(ep)) != 0)
		goto out_free;
	rc = pthread_create(&ep->ep_progress, NULL, ep_progress_main, ep);
	if (rc != 0) {
		rc = err_set(-rc, "rpc %s: progress thread: %s", ep->ep_self,
			     strerror(rc));
		goto out_free;
	}
	ep->ep_progress_started = true;
	LOG_INFO("rpc: endpoint %s open (provider %s, %s)", ep->ep_self,
		 ep->ep_provider, ep->ep_conf.rc_polling ? "polling" :
		 ep->ep_wait_fd ? "wait fd" : "sleep-poll");
	*out = ep;
	return 0;
out_free:
	if (ep != NULL) {
		char m[LIM_ERRMSG_LEN];

		snprintf(m, sizeof m, "%s", err_msg());
		pthread_mutex_lock(&ep->ep_lock);
		ep->ep_closing = true;
		__atomic_store_n(&ep->ep_stop, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ep->ep_lock);
		pthread_cond_broadcast(&ep->ep_cv);
		rpc_srv_drain(ep);
		ep_free(ep);
		err_set(rc, "%s", m);
	}
	return rc;
}

void rpc_ep_close(struct rpc_ep *ep)
{
	uint64_t until;

	if (ep == NULL)
		return;
	pthread_mutex_lock(&ep->ep_lock);
	ep->ep_closing = true;
	pthread_mutex_unlock(&ep->ep_lock);
	pthread_cond_broadcast(&ep->ep_cv);
	rpc_cli_fini(ep);
	rpc_srv_drain(ep);
	/* Let replies already posted leave (bounded: 1 s). */
	until = rpc_now_ms() + 1000;
	pthread_mutex_lock(&ep->ep_lock);
	while (ep->ep_backlog != NULL && rpc_now_ms() < until) {
		pthread_mutex_unlock(&ep->ep_lock);
		usleep(1000);
		pthread_mutex_lock(&ep->ep_lock);
	}
	__atomic_store_n(&ep->ep_stop, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ep->ep_lock);
	rpc_wake(ep);
	if (ep->ep_progress_started)
		pthread_join(ep->ep_progress, NULL);
	rpc_rma_purge(ep);
	ep_poll(ep, false);
	ep_defer_run(ep);
	ep_free(ep);
}

uint64_t rpc_ep_incarnation(const struct rpc_ep *ep)
{
	return ep != NULL ? ep->ep_incarnation : 0;
}

void rpc_ep_stats(struct rpc_ep *ep, struct rpc_stats *out)
{
	if (ep == NULL || out == NULL)
		return;
	pthread_mutex_lock(&ep->ep_lock);
	*out = ep->ep_stats;
	pthread_mutex_unlock(&ep->ep_lock);
	rpc_pool_stats(ep, out);
}

/* The process's map epoch and the highest one a reply carried (rpc.h). */
static uint64_t epoch_own, epoch_seen;

void rpc_epoch_set(uint64_t epoch)
{
	__atomic_store_n(&epoch_own, epoch, __ATOMIC_RELEASE);
}

uint64_t rpc_epoch_get(void)
{
	return __atomic_load_n(&epoch_own, __ATOMIC_ACQUIRE);
}

uint64_t rpc_epoch_seen(void)
{
	return __atomic_load_n(&epoch_seen, __ATOMIC_ACQUIRE);
}

void rpc_epoch_note(uint64_t epoch)
{
	uint64_t cur = __atomic_load_n(&epoch_seen, __ATOMIC_ACQUIRE);

	while (epoch > cur &&
	       !__atomic_compare_exchange_n(&epoch_seen, &cur, epoch, false,
					    __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
}
