/*
 * isc_lua.c — Lua functions (ISC_LUA): Lua 5.4 in a sandbox, a fresh
 * state per run (docs/isc.md "Lua functions").
 *
 * The sandbox:
 *   - libraries base, string, table, math and utf8 only; from them
 *     dofile, loadfile and string.dump are removed, print does nothing,
 *     load takes text chunks only, collectgarbage answers "count",
 *     "collect" and "step" only; no io, os, package, debug, coroutine;
 *   - memory: the state's allocator counts every byte and fails past the
 *     cap (Lua raises "not enough memory": -ENOMEM);
 *   - time: a process-wide watchdog thread installs a hook on a state
 *     whose deadline passed; the hook raises "deadline exceeded" at every
 *     instruction, call and return from then on, so no pcall in the script
 *     can hold it (-ETIMEDOUT).  Before the deadline no hook is set and Lua
 *     runs at full speed.  Host functions check the clock too.  A single
 *     call into C that runs long (a pathological string pattern) is
 *     stopped only when it returns to Lua;
 *   - output: emits go to the run's combining list, capped (-E2BIG, and
 *     the run fails even if the script caught the error).
 * Every entry into Lua is a lua_pcall of a C trampoline with a message
 * handler, so a failure anywhere (the chunk, a callback, a host function)
 * is an error code and a message, never a panic.  The state is closed at
 * the end of the run, with the hook set so that no finalizer runs on.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lua5.4/lauxlib.h>
#include <lua5.4/lua.h>
#include <lua5.4/lualib.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/isc/isc_internal.h"

#define LUA_NEXT_DEFAULT 256    /* records per next() without n */
#define LUA_NEXT_MAX 4096       /* records per next() at most */
#define LUA_KEY_MAX 65536u      /* bytes of an emitted key */

/* A compiled script. */
struct isc_lua {
	char *l_src;
	size_t l_len;
	bool l_whole;      /* granule = "object" */
	bool l_reduce;     /* defines reduce() */
	bool l_finish;     /* defines finish() */
};

/* The watchdog's entry of a state. */
struct lwd {
	struct lwd *w_next, *w_prev;
	lua_State *w_L;
	uint64_t w_deadline;
	bool w_fired;
	bool w_armed;
};

/* One state: a run's, a compile's or a reduce's. */
struct lrun {
	lua_State *lr_L;
	const char *lr_fname;
	const struct isc_lua *lr_lua;
	struct isc_lim lr_lim;
	const void *lr_args;
	size_t lr_alen;
	uint64_t lr_mem;               /* bytes held by the state */
	uint64_t lr_shown;             /* of them, in ADDB_ISC_LUA_BYTES */
	struct lwd lr_wd;
	volatile bool lr_timedout;
	int lr_hostrc;                 /* a host failure to report as is */
	char lr_msg[256];              /* its message */
	int lr_failed;                 /* the run failed: its code */
	/* what the host functions may reach */
	struct isc_comb *lr_out;       /* emits (NULL: none) */
	bool lr_can_emit;
	enum isc_target lr_target;
	bool lr_in_ext;
	const uint8_t *lr_ext;
	uint64_t lr_ext_off;
	size_t lr_ext_len;
	const struct isc_idx_src *lr_src;
	struct isc_rec *lr_recs;       /* LUA_NEXT_MAX, index runs */
	/* reduce: the group [lr_ga, lr_gb) of the list lr_gl */
	const struct isc_out *lr_gl;
	size_t lr_ga, lr_gb;
};

static uint64_t lua_mem_total;     /* every state's bytes (atomic) */

uint64_t isc_lua_mem_in_use(void)
{
	return __atomic_load_n(&lua_mem_total, __ATOMIC_RELAXED);
}

static struct lrun *getlr(lua_State *L)
{
	return *(struct lrun **)lua_getextraspace(L);
}

/* ------------------------------------------------------------ memory */

static void *lalloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct lrun *lr = ud;
	size_t old = ptr != NULL ? osize : 0;
	void *p;

	if (nsize == 0) {
		free(ptr);
		lr->lr_mem -= old;
		__atomic_fetch_sub(&lua_mem_total, old, __ATOMIC_RELAXED);
		return NULL;
	}
	if (nsize > old && nsize - old > lr->lr_lim.l_mem - lr->lr_mem)
		return NULL;
	p = realloc(ptr, nsize);
	if (p == NULL)
		return NULL;
	lr->lr_mem += nsize - old;
	if (nsize >= old)
		__atomic_fetch_add(&lua_mem_total, nsize - old,
				   __ATOMIC_RELAXED);
	else
		__atomic_fetch_sub(&lua_mem_total, old - nsize,
				   __ATOMIC_RELAXED);
	return p;
}

/* ---------------------------------------------------------- deadline */

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static struct lwd *wd_head;
static int wd_state;               /* 0 none, 1 running, -1 cannot */

static void lhook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	getlr(L)->lr_timedout = true;
	luaL_error(L, "deadline exceeded");
}

/* The fallback when no watchdog thread could start: a count hook that
 * reads the clock every 10000 instructions. */
static void lhook_count(lua_State *L, lua_Debug *ar)
{
	if (isc_now_ns() > getlr(L)->lr_wd.w_deadline)
		lhook(L, ar);
}

static void lhook_set(lua_State *L)
{
	lua_sethook(L, lhook, LUA_MASKCOUNT | LUA_MASKCALL | LUA_MASKRET, 1);
}

/* The watchdog: sleeps to the earliest deadline of the armed states and
 * sets the hook on every state past its own (lua_sethook() is safe to
 * call while the state runs: lua.c calls it from a signal handler). */
static void *wd_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wd_mu);
	for (;;) {
		uint64_t now = isc_now_ns(), next = UINT64_MAX;
		struct timespec ts;

		for (struct lwd *w = wd_head; w != NULL; w = w->w_next) {
			if (w->w_fired)
				continue;
			if (w->w_deadline <= now) {
				lhook_set(w->w_L);
				w->w_fired = true;
			} else if (w->w_deadline < next) {
				next = w->w_deadline;
			}
		}
		if (next == UINT64_MAX) {
			pthread_cond_wait(&wd_cv, &wd_mu);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&wd_cv, &wd_mu, &ts);
	}
	return NULL;
}

/* A child of fork() has no watchdog thread: it starts its own. */
static void wd_atfork_child(void)
{
	pthread_mutex_init(&wd_mu, NULL);
	pthread_cond_init(&wd_cv, NULL);
	wd_head = NULL;
	wd_state = 0;
}

static void wd_arm(struct lrun *lr)
{
	struct lwd *w = &lr->lr_wd;
	pthread_attr_t at;
	pthread_t t;

	w->w_L = lr->lr_L;
	w->w_deadline = lr->lr_lim.l_deadline_ns;
	pthread_mutex_lock(&wd_mu);
	if (wd_state == 0) {
		wd_state = -1;
		if (pthread_attr_init(&at) == 0) {
			pthread_attr_setdetachstate(&at,
						    PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &at, wd_main, NULL) == 0) {
				wd_state = 1;
				pthread_atfork(NULL, NULL, wd_atfork_child);
			}
			pthread_attr_destroy(&at);
		}
	}
	if (wd_state < 0) {
		pthread_mutex_unlock(&wd_mu);
		lua_sethook(lr->lr_L, lhook_count, LUA_MASKCOUNT, 10000);
		return;
	}
	w->w_prev = NULL;
	w->w_next = wd_head;
	if (wd_head != NULL)
		wd_head->w_prev = w;
	wd_head = w;
	w->w_armed = true;
	pthread_cond_signal(&wd_cv);
	pthread_mutex_unlock(&wd_mu);
}

static void wd_disarm(struct lrun *lr)
{
	struct lwd *w = &lr->lr_wd;

	if (!w->w_armed)
		return;
	pthread_mutex_lock(&wd_mu);
	if (w->w_prev != NULL)
		w->w_prev->w_next = w->w_next;
	else
		wd_head = w->w_next;
	if (w->w_next != NULL)
		w->w_next->w_prev = w->w_prev;
	w->w_armed = false;
	pthread_mutex_unlock(&wd_mu);
}

/* In a host function: raise "deadline exceeded" once it passed. */
static void lr_check_time(lua_State *L, struct lrun *lr)
{
	if (isc_now_ns() > lr->lr_lim.l_deadline_ns) {
		lr->lr_timedout = true;
		luaL_error(L, "deadline exceeded");
	}
}

/* ---------------------------------------------------- host functions */

/* read([off [, len]]): bytes of the current extent (object offsets). */
static int l_read(lua_State *L)
{
	struct lrun *lr = getlr(L);
	lua_Integer a, e, off, len;

	lr_check_time(L, lr);
	if (!lr->lr_in_ext)
		return luaL_error(L, "read: no extent here (read works "
				  "inside map() of an object run)");
	a = (lua_Integer)lr->lr_ext_off;
	e = a + (lua_Integer)lr->lr_ext_len;
	off = luaL_optinteger(L, 1, a);
	if (off < a || off > e)
		return luaL_error(L, "read: offset %I outside the extent "
				  "[%I, %I)", (LUAI_UACINT)off, (LUAI_UACINT)a,
				  (LUAI_UACINT)e);
	len = luaL_optinteger(L, 2, e - off);
	if (len < 0)
		return luaL_error(L, "read: negative length %I",
				  (LUAI_UACINT)len);
	if (len > e - off)
		len = e - off;
	lua_pushlstring(L, (const char *)lr->lr_ext + (off - a), (size_t)len);
	return 1;
}

/* read_f64(off, n): n little-endian doubles of the current extent from
 * object byte off (default: its start; n default: to its end, clipped to
 * it) as an array of numbers: one C loop instead of a string.unpack per
 * value (docs/isc.md "What a script sees"). */
static int l_read_f64(lua_State *L)
{
	struct lrun *lr = getlr(L);
	lua_Integer a, e, off, n, have;
	const uint8_t *p;

	lr_check_time(L, lr);
	if (!lr->lr_in_ext)
		return luaL_error(L, "read_f64: no extent here (it works "
				  "inside map() of an object run)");
	a = (lua_Integer)lr->lr_ext_off;
	e = a + (lua_Integer)lr->lr_ext_len;
	off = luaL_optinteger(L, 1, a);
	if (off < a || off > e)
		return luaL_error(L, "read_f64: offset %I outside the extent "
				  "[%I, %I)", (LUAI_UACINT)off, (LUAI_UACINT)a,
				  (LUAI_UACINT)e);
	have = (e - off) / 8;
	n = luaL_optinteger(L, 2, have);
	if (n < 0)
		return luaL_error(L, "read_f64: negative count %I",
				  (LUAI_UACINT)n);
	if (n > have)
		n = have;
	if (n > INT_MAX)
		return luaL_error(L, "read_f64: count %I too large",
				  (LUAI_UACINT)n);
	p = (const uint8_t *)lr->lr_ext + (off - a);
	lua_createtable(L, (int)n, 0);
	for (lua_Integer i = 0; i < n; i++) {
		double x;

		memcpy(&x, p + 8 * i, 8);
		lua_pushnumber(L, x);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

/* Raise the host failure rc (message in err_msg()) as a Lua error,
 * remembered so that the run ends with rc even if the script caught it. */
static int lr_host_fail(lua_State *L, struct lrun *lr, int rc)
{
	lr->lr_hostrc = rc;
	snprintf(lr->lr_msg, sizeof lr->lr_msg, "%s", err_msg());
	return luaL_error(L, "%s", lr->lr_msg);
}

/* emit(key, value [, how]) */
static int l_emit(lua_State *L)
{
	static const char *const hows[] = {"sum", "min", "max", "count",
					   NULL};
	struct lrun *lr = getlr(L);
	const char *k, *sv = NULL;
	size_t kl, vl = 8;
	uint8_t type;
	uint64_t u;
	double d;
	int how, rc;

	lr_check_time(L, lr);
	lua_settop(L, 3);
	if (!lr->lr_can_emit || lr->lr_out == NULL)
		return luaL_error(L, "emit: only inside map() or finish()");
	if (lua_type(L, 1) != LUA_TSTRING && lua_type(L, 1) != LUA_TNUMBER)
		return luaL_error(L, "emit: the key must be a string or a "
				  "number, not %s", luaL_typename(L, 1));
	lua_pushvalue(L, 1);
	k = lua_tolstring(L, -1, &kl);  /* a copy: numbers become strings */
	if (kl > LUA_KEY_MAX)
		return luaL_error(L, "emit: key of %d bytes (at most %d)",
				  (int)kl, (int)LUA_KEY_MAX);
	how = lua_isnoneornil(L, 3) ? -1 :
	      luaL_checkoption(L, 3, NULL, hows);
	if (lua_type(L, 2) == LUA_TSTRING) {
		if (how != -1)
			return luaL_error(L, "emit: a string value cannot be "
					  "combined by '%s'", hows[how]);
		sv = lua_tolstring(L, 2, &vl);
		type = ISC_V_BYTES;
	} else if (lua_type(L, 2) == LUA_TNUMBER) {
		bool isint = lua_isinteger(L, 2);

		if (how == 3 && !isint) {
			lua_Integer i;

			if (!lua_numbertointeger(lua_tonumber(L, 2), &i))
				return luaL_error(L, "emit: count needs an "
						  "integer");
			u = (uint64_t)i;
			type = ISC_V_COUNT;
		} else if (isint && (how == -1 || how == 0 || how == 3)) {
			u = (uint64_t)lua_tointeger(L, 2);
			type = how == -1 ? ISC_V_INT : how == 0 ? ISC_V_ISUM :
			       ISC_V_COUNT;
		} else {
			d = lua_tonumber(L, 2);
			memcpy(&u, &d, 8);
			type = how == -1 ? ISC_V_FLOAT : how == 0 ? ISC_V_SUM :
			       how == 1 ? ISC_V_MIN : ISC_V_MAX;
		}
		u = htole64(u);
		sv = (const char *)&u;
	} else {
		return luaL_error(L, "emit: the value must be a number or a "
				  "string, not %s", luaL_typename(L, 2));
	}
	rc = isc_comb_add(lr->lr_out, lr->lr_fname, k, kl, type, sv, vl);
	if (rc != 0)
		return lr_host_fail(L, lr, rc);
	return 0;
}

/* next(key, n) on an index run; next(table [, k]) is Lua's own. */
static int l_next(lua_State *L)
{
	struct lrun *lr = getlr(L);
	const char *kp = NULL;
	size_t kl = 0;
	lua_Integer n, have = 0;
	uint32_t got;
	int rc;

	if (lua_type(L, 1) == LUA_TTABLE) {
		lua_pushvalue(L, lua_upvalueindex(1));
		lua_insert(L, 1);
		lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
		return lua_gettop(L);
	}
	lr_check_time(L, lr);
	if (lr->lr_src == NULL)
		return luaL_error(L, "next: no index here (next(key, n) works "
				  "inside map() of an index run)");
	if (!lua_isnoneornil(L, 1))
		kp = luaL_checklstring(L, 1, &kl);
	n = luaL_optinteger(L, 2, LUA_NEXT_DEFAULT);
	if (n < 1 || n > LUA_NEXT_MAX)
		return luaL_error(L, "next: n = %I (1..%d)", (LUAI_UACINT)n,
				  LUA_NEXT_MAX);
	lua_settop(L, 2);
	lua_createtable(L, (int)n, 0);          /* 3: keys */
	lua_createtable(L, (int)n, 0);          /* 4: values */
	while (have < n) {
		rc = lr->lr_src->is_next(lr->lr_src->is_arg, kp, kl,
					 (uint32_t)(n - have), lr->lr_recs,
					 &got);
		if (rc != 0)
			return lr_host_fail(L, lr, rc);
		if (got == 0)
			break;
		if (got > n - have)
			got = (uint32_t)(n - have);
		for (uint32_t i = 0; i < got; i++) {
			lua_pushlstring(L, (const char *)lr->lr_recs[i].r_key,
					lr->lr_recs[i].r_klen);
			lua_rawseti(L, 3, have + i + 1);
			lua_pushlstring(L, (const char *)lr->lr_recs[i].r_val,
					lr->lr_recs[i].r_vlen);
			lua_rawseti(L, 4, have + i + 1);
		}
		have += got;
		/* the last key, held by the table while the source looks */
		lua_rawgeti(L, 3, have);
		kp = lua_tolstring(L, -1, &kl);
		lua_pop(L, 1);
		lr_check_time(L, lr);
	}
	return 2;
}

static int l_print(lua_State *L)
{
	(void)L;
	return 0;
}

/* load(chunk [, name [, mode [, env]]]): text chunks only. */
static int l_load(lua_State *L)
{
	const char *mode = luaL_optstring(L, 3, "t");
	int nargs = lua_gettop(L);

	if (strchr(mode, 'b') != NULL)
		return luaL_error(L, "load: binary chunks are not allowed");
	if (nargs < 3)
		lua_settop(L, 3);
	lua_pushliteral(L, "t");
	lua_replace(L, 3);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, nargs < 3 ? 3 : nargs, LUA_MULTRET);
	return lua_gettop(L);
}

/* collectgarbage(["count" | "collect" | "step"]) */
static int l_collectgarbage(lua_State *L)
{
	static const char *const opts[] = {"collect", "count", "step", NULL};
	int o = luaL_checkoption(L, 1, "collect", opts);

	if (o == 1) {
		lua_pushnumber(L, lua_gc(L, LUA_GCCOUNT, 0) +
			       lua_gc(L, LUA_GCCOUNTB, 0) / 1024.0);
		return 1;
	}
	if (o == 2) {
		lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, 0));
		return 1;
	}
	lua_gc(L, LUA_GCCOLLECT, 0);
	lua_pushinteger(L, 0);
	return 1;
}

/* The message handler: the error as a string. */
static int l_msgh(lua_State *L)
{
	if (lua_type(L, 1) == LUA_TSTRING)
		return 1;
	if (luaL_callmeta(L, 1, "__tostring") &&
	    lua_type(L, -1) == LUA_TSTRING)
		return 1;
	lua_pushfstring(L, "(error object is a %s value)",
			luaL_typename(L, 1));
	return 1;
}

/* ------------------------------------------------------------ states */

/* In the new state, protected: libraries, sandbox, host functions. */
static int l_setup(lua_State *L)
{
	static const luaL_Reg libs[] = {
		{LUA_GNAME, luaopen_base}, {LUA_STRLIBNAME, luaopen_string},
		{LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
		{LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL},
	};
	struct lrun *lr = getlr(L);

	for (const luaL_Reg *l = libs; l->name != NULL; l++) {
		luaL_requiref(L, l->name, l->func, 1);
		lua_pop(L, 1);
	}
	lua_pushnil(L);
	lua_setglobal(L, "dofile");
	lua_pushnil(L);
	lua_setglobal(L, "loadfile");
	lua_pushnil(L);
	lua_setglobal(L, "require");
	lua_getglobal(L, LUA_STRLIBNAME);
	lua_pushnil(L);
	lua_setfield(L, -2, "dump");
	lua_pop(L, 1);
	lua_pushcfunction(L, l_print);
	lua_setglobal(L, "print");
	lua_pushcfunction(L, l_collectgarbage);
	lua_setglobal(L, "collectgarbage");
	lua_getglobal(L, "load");
	lua_pushcclosure(L, l_load, 1);
	lua_setglobal(L, "load");
	lua_pushlstring(L, lr->lr_args ? lr->lr_args : "", lr->lr_alen);
	lua_setglobal(L, "ARGS");
	/* read, next, emit: globals and the table strata */
	lua_createtable(L, 0, 3);
	lua_pushcfunction(L, l_read);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "read");
	lua_setfield(L, -2, "read");
	lua_pushcfunction(L, l_read_f64);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "read_f64");
	lua_setfield(L, -2, "read_f64");
	lua_pushcfunction(L, l_emit);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "emit");
	lua_setfield(L, -2, "emit");
	lua_getglobal(L, "next");
	lua_pushcclosure(L, l_next, 1);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "next");
	lua_setfield(L, -2, "next");
	lua_setglobal(L, "strata");
	return 0;
}

/* Protected: load the script (text only) and run its top level. */
static int l_toplevel(lua_State *L)
{
	struct lrun *lr = getlr(L);
	char name[ISC_NAME_MAX + 2];

	snprintf(name, sizeof name, "=%s", lr->lr_fname);
	if (luaL_loadbufferx(L, lr->lr_lua->l_src, lr->lr_lua->l_len, name,
			     "t") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, 0);
	return 0;
}

/* The error of a failed lua_pcall (status st; message on the top) as a
 * code and a message; the run fails with it. */
static int lr_fail(struct lrun *lr, int st, const char *when)
{
	lua_State *L = lr->lr_L;
	const char *m = lua_tostring(L, -1);
	int rc;

	if (m == NULL)
		m = "(no message)";
	if (lr->lr_timedout)
		rc = err_set(-ETIMEDOUT, "function %s: deadline of %" PRIu64
			     " ms exceeded%s", lr->lr_fname,
			     lr->lr_lim.l_deadline_ms, lr->lr_lim.l_where);
	else if (st == LUA_ERRMEM)
		rc = err_set(-ENOMEM, "function %s: out of memory (cap %"
			     PRIu64 " MiB)%s", lr->lr_fname,
			     lr->lr_lim.l_mem >> 20, lr->lr_lim.l_where);
	else if (lr->lr_hostrc != 0)
		rc = err_set(lr->lr_hostrc, "%s", lr->lr_msg);
	else
		rc = err_set(-ECANCELED, "function %s: %s%s: %s",
			     lr->lr_fname, when, lr->lr_lim.l_where, m);
	lua_settop(L, 0);
	lr->lr_failed = rc;
	return rc;
}

/* Call the trampoline fn protected, with the message handler; nres
 * results left on the stack on success.  Errors as lr_fail(). */
static int lr_call(struct lrun *lr, lua_CFunction fn, int nres,
		   const char *when)
{
	lua_State *L = lr->lr_L;
	int st;

	if (lr->lr_failed != 0)
		return err_set(lr->lr_failed, "function %s: the run failed "
			       "already", lr->lr_fname);
	lua_settop(L, 0);
	lua_pushcfunction(L, l_msgh);
	lua_pushcfunction(L, fn);
	st = lua_pcall(L, 0, nres, 1);
	/* the state's bytes, as of this call's end, in the gauge */
	addb_gauge_add(ADDB_ISC_LUA_BYTES, 0,
		       (int64_t)lr->lr_mem - (int64_t)lr->lr_shown);
	lr->lr_shown = lr->lr_mem;
	if (st != LUA_OK)
		return lr_fail(lr, st, when);
	/* a host failure the script caught still fails the run */
	if (lr->lr_hostrc != 0 || lr->lr_timedout) {
		lua_pushstring(L, "caught");
		return lr_fail(lr, LUA_ERRRUN, when);
	}
	lua_remove(L, 1);
	return 0;
}

static void lr_close(struct lrun *lr)
{
	if (lr->lr_L != NULL) {
		/* no finalizer of the script runs on at close */
		lhook_set(lr->lr_L);
		wd_disarm(lr);
		lua_close(lr->lr_L);
		addb_gauge_add(ADDB_ISC_LUA_BYTES, 0, -(int64_t)lr->lr_shown);
		lr->lr_shown = 0;
		lr->lr_L = NULL;
	}
	free(lr->lr_recs);
	free(lr);
}

/* A fresh sandboxed state for script l, its top level run; *out is
 * closed with lr_close(). */
static int lr_open(struct lrun **out, const struct isc_lua *l,
		   const char *fname, const struct isc_limits *lim,
		   const struct isc_lim *ready, const void *args, size_t alen)
{
	struct lrun *lr = calloc(1, sizeof *lr);
	int rc;

	*out = NULL;
	if (lr == NULL)
		return err_set(-ENOMEM, "function %s: state", fname);
	lr->lr_fname = fname;
	lr->lr_lua = l;
	if (ready != NULL)
		lr->lr_lim = *ready;
	else
		isc_lim_init(&lr->lr_lim, lim);
	lr->lr_args = args;
	lr->lr_alen = alen;
	lr->lr_L = lua_newstate(lalloc, lr);
	if (lr->lr_L == NULL) {
		uint64_t cap = lr->lr_lim.l_mem;

		free(lr);
		return err_set(-ENOMEM, "function %s: out of memory (cap %"
			       PRIu64 " MiB) for a new state", fname,
			       cap >> 20);
	}
	*(struct lrun **)lua_getextraspace(lr->lr_L) = lr;
	wd_arm(lr);
	rc = lr_call(lr, l_setup, 0, "sandbox");
	if (rc == 0)
		rc = lr_call(lr, l_toplevel, 0, "top level");
	if (rc != 0) {
		lr_close(lr);
		return rc;
	}
	*out = lr;
	return 0;
}

/* Is global name a function (type t) in lr's state? */
static int lr_global_type(struct lrun *lr, const char *name)
{
	int t = lua_getglobal(lr->lr_L, name);

	lua_pop(lr->lr_L, 1);
	return t;
}

/* ----------------------------------------------------------- compile */

/* Load (not run) the chunk on a throwaway state with the memory cap: a
 * syntax error is -EINVAL with Lua's message. */
static int lua_syntax(const char *fname, const struct isc_lua *l,
		      const struct isc_limits *lim)
{
	struct lrun *lr = calloc(1, sizeof *lr);
	char name[ISC_NAME_MAX + 2];
	int st, rc = 0;

	if (lr == NULL)
		return err_set(-ENOMEM, "function %s", fname);
	isc_lim_init(&lr->lr_lim, lim);
	lr->lr_L = lua_newstate(lalloc, lr);
	if (lr->lr_L == NULL) {
		uint64_t cap = lr->lr_lim.l_mem;

		free(lr);
		return err_set(-ENOMEM, "function %s: out of memory (cap %"
			       PRIu64 " MiB)", fname, cap >> 20);
	}
	*(struct lrun **)lua_getextraspace(lr->lr_L) = lr;
	snprintf(name, sizeof name, "=%s", fname);
	st = luaL_loadbufferx(lr->lr_L, l->l_src, l->l_len, name, "t");
	if (st == LUA_ERRMEM)
		rc = err_set(-ENOMEM, "function %s: out of memory (cap %"
			     PRIu64 " MiB) loading the script", fname,
			     lr->lr_lim.l_mem >> 20);
	else if (st != LUA_OK)
		rc = err_set(-EINVAL, "function %s: %s", fname,
			     lua_tostring(lr->lr_L, -1));
	lua_close(lr->lr_L);
	free(lr);
	return rc;
}

int isc_lua_compile(struct isc_fn *f, const char *src, size_t len,
		    const struct isc_limits *lim)
{
	struct isc_lua *l;
	struct lrun *lr = NULL;
	const char *g;
	int rc;

	if (len >= 4 && memcmp(src, LUA_SIGNATURE, 4) == 0)
		return err_set(-EINVAL, "function %s: a precompiled (binary) "
			       "chunk: only Lua source is accepted",
			       f->f_name);
	l = calloc(1, sizeof *l);
	if (l == NULL || (l->l_src = malloc(len + 1)) == NULL) {
		free(l);
		return err_set(-ENOMEM, "function %s", f->f_name);
	}
	memcpy(l->l_src, src, len);
	l->l_src[len] = '\0';
	l->l_len = len;
	rc = lua_syntax(f->f_name, l, lim);
	if (rc == 0)
		rc = lr_open(&lr, l, f->f_name, lim, NULL, NULL, 0);
	if (rc != 0)
		goto fail;
	if (lr_global_type(lr, "map") != LUA_TFUNCTION) {
		rc = err_set(-EINVAL, "function %s: the script defines no "
			     "function map(ext)", f->f_name);
		goto fail;
	}
	l->l_reduce = lr_global_type(lr, "reduce") == LUA_TFUNCTION;
	l->l_finish = lr_global_type(lr, "finish") == LUA_TFUNCTION;
	lua_getglobal(lr->lr_L, "granule");
	g = lua_tostring(lr->lr_L, -1);
	if (!lua_isnil(lr->lr_L, -1) &&
	    (lua_type(lr->lr_L, -1) != LUA_TSTRING || strcmp(g, "object") != 0)) {
		rc = err_set(-EINVAL, "function %s: granule must be \"object\" "
			     "or not set", f->f_name);
		goto fail;
	}
	l->l_whole = g != NULL;
	lr_close(lr);
	f->f_lua = l;
	return 0;
fail:
	if (lr != NULL)
		lr_close(lr);
	isc_lua_free(l);
	return rc;
}

void isc_lua_free(struct isc_lua *l)
{
	if (l == NULL)
		return;
	free(l->l_src);
	free(l);
}

bool isc_lua_whole(const struct isc_lua *l)
{
	return l->l_whole;
}

bool isc_lua_has_reduce(const struct isc_lua *l)
{
	return l->l_reduce;
}

/* --------------------------------------------------------------- runs */

int isc_lua_start(struct isc_run *r)
{
	struct lrun *lr;
	int rc = lr_open(&lr, r->r_fn->f_lua, r->r_fn->f_name, NULL,
			 &r->r_lim, r->r_args, r->r_alen);

	if (rc != 0)
		return rc;
	lr->lr_out = &r->r_comb;
	lr->lr_target = r->r_fn->f_target;
	r->r_priv = lr;
	return 0;
}

/* Protected: map(ext) with ext = {offset=, length=} (objects) or {}. */
static int l_callmap(lua_State *L)
{
	struct lrun *lr = getlr(L);

	lua_getglobal(L, "map");
	lua_createtable(L, 0, 2);
	if (lr->lr_in_ext) {
		lua_pushinteger(L, (lua_Integer)lr->lr_ext_off);
		lua_setfield(L, -2, "offset");
		lua_pushinteger(L, (lua_Integer)lr->lr_ext_len);
		lua_setfield(L, -2, "length");
	}
	lua_call(L, 1, 0);
	return 0;
}

int isc_lua_ext(struct isc_run *r, uint64_t off, const void *data,
		size_t len)
{
	struct lrun *lr = r->r_priv;
	int rc;

	lr->lr_ext = data;
	lr->lr_ext_off = off;
	lr->lr_ext_len = len;
	lr->lr_in_ext = true;
	lr->lr_can_emit = true;
	rc = lr_call(lr, l_callmap, 0, "map");
	lr->lr_in_ext = false;
	lr->lr_can_emit = false;
	lr->lr_ext = NULL;
	return rc;
}

int isc_lua_idx(struct isc_run *r, const struct isc_idx_src *src)
{
	struct lrun *lr = r->r_priv;
	int rc;

	if (lr->lr_recs == NULL) {
		lr->lr_recs = malloc(LUA_NEXT_MAX * sizeof *lr->lr_recs);
		if (lr->lr_recs == NULL)
			return err_set(-ENOMEM, "function %s: run",
				       lr->lr_fname);
	}
	lr->lr_src = src;
	lr->lr_can_emit = true;
	rc = lr_call(lr, l_callmap, 0, "map");
	lr->lr_src = NULL;
	lr->lr_can_emit = false;
	return rc;
}

static int l_callfinish(lua_State *L)
{
	lua_getglobal(L, "finish");
	lua_call(L, 0, 0);
	return 0;
}

int isc_lua_end(struct isc_run *r)
{
	struct lrun *lr = r->r_priv;
	int rc = lr->lr_failed;

	if (rc != 0) {
		err_set(rc, "function %s: the run failed already",
			lr->lr_fname);
	} else if (lr->lr_lua->l_finish) {
		lr->lr_can_emit = true;
		rc = lr_call(lr, l_callfinish, 0, "finish");
	}
	lr_close(lr);
	r->r_priv = NULL;
	return rc;
}

void isc_lua_deadline(struct isc_run *r)
{
	struct lrun *lr = r->r_priv;

	if (lr == NULL)
		return;
	pthread_mutex_lock(&wd_mu);
	lr->lr_lim.l_deadline_ns = r->r_lim.l_deadline_ns;
	if (lr->lr_wd.w_armed) {
		/* the watchdog may have fired while the state was idle
		 * between calls (the budget was not spent then): the state
		 * does not run now, so its hook is cleared here, under the
		 * lock the watchdog sets hooks under */
		if (lr->lr_wd.w_fired && !lr->lr_timedout &&
		    r->r_lim.l_deadline_ns > isc_now_ns()) {
			lua_sethook(lr->lr_L, NULL, 0, 0);
			lr->lr_wd.w_fired = false;
		}
		pthread_cond_signal(&wd_cv);
	}
	/* (without a watchdog thread the count hook reads it) */
	lr->lr_wd.w_deadline = r->r_lim.l_deadline_ns;
	pthread_mutex_unlock(&wd_mu);
}

void isc_lua_abort(struct isc_run *r)
{
	if (r->r_priv != NULL)
		lr_close(r->r_priv);
	r->r_priv = NULL;
}

/* ------------------------------------------------------------- reduce */

static bool is_list(uint8_t t)
{
	return t == ISC_V_INT || t == ISC_V_FLOAT || t == ISC_V_BYTES;
}

/* Protected: reduce(key, values) of the group; one result. */
static int l_callreduce(lua_State *L)
{
	struct lrun *lr = getlr(L);
	const struct isc_out *o = lr->lr_gl;
	struct isc_rec rec;
	size_t pos = lr->lr_ga;
	lua_Integer i = 0;

	lua_getglobal(L, "reduce");
	lua_newtable(L);                                /* values, for now */
	while (pos < lr->lr_gb &&
	       isc_out_next(o->o_buf, o->o_len, &pos, &rec) == 1) {
		uint64_t u;
		double d;

		if (i == 0) {
			lua_pushlstring(L, (const char *)rec.r_key,
					rec.r_klen);
			lua_insert(L, -2);              /* key below values */
		}
		if (rec.r_type == ISC_V_BYTES) {
			lua_pushlstring(L, (const char *)rec.r_val,
					rec.r_vlen);
		} else {
			memcpy(&u, rec.r_val, 8);
			u = le64toh(u);
			if (rec.r_type == ISC_V_INT) {
				lua_pushinteger(L, (lua_Integer)u);
			} else {
				memcpy(&d, &u, 8);
				lua_pushnumber(L, d);
			}
		}
		lua_rawseti(L, -2, ++i);
		if ((i & 1023) == 0)
			lr_check_time(L, lr);
	}
	lua_call(L, 2, 1);
	return 1;
}

/* Append reduce's result (on the top of lr's stack) for the group's key
 * to dst. */
static int reduce_out(struct lrun *lr, struct isc_out *dst,
		      const struct isc_rec *first)
{
	lua_State *L = lr->lr_L;
	const char *s;
	size_t sl;
	uint64_t u;
	double d;
	int rc;

	switch (lua_type(L, -1)) {
	case LUA_TNIL:
		rc = 0;
		break;
	case LUA_TSTRING:
		s = lua_tolstring(L, -1, &sl);
		rc = isc_out_add(dst, first->r_key, first->r_klen,
				 ISC_V_BYTES, s, sl);
		break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, -1)) {
			u = htole64((uint64_t)lua_tointeger(L, -1));
			rc = isc_out_add(dst, first->r_key, first->r_klen,
					 ISC_V_INT, &u, 8);
		} else {
			d = lua_tonumber(L, -1);
			memcpy(&u, &d, 8);
			u = htole64(u);
			rc = isc_out_add(dst, first->r_key, first->r_klen,
					 ISC_V_FLOAT, &u, 8);
		}
		break;
	default:
		rc = err_set(-ECANCELED, "function %s: reduce of key '%.*s' "
			     "returned a %s (a number, a string or nil)",
			     lr->lr_fname,
			     (int)(first->r_klen < 64 ? first->r_klen : 64),
			     (const char *)first->r_key,
			     luaL_typename(L, -1));
		break;
	}
	lua_settop(L, 0);
	if (rc == -E2BIG)
		err_set(rc, "function %s: reduce: output over %zu bytes",
			lr->lr_fname, dst->o_max);
	return rc;
}

int isc_lua_reduce(const struct isc_fn *f, const struct isc_limits *lim,
		   const struct isc_out *src, struct isc_out *dst)
{
	struct isc_rec rec, nx;
	struct lrun *lr;
	size_t pos = 0, at;
	int rc = lr_open(&lr, f->f_lua, f->f_name, lim, NULL, NULL, 0);

	if (rc != 0)
		return rc;
	lr->lr_gl = src;
	while (rc == 0) {
		at = pos;
		rc = isc_out_next(src->o_buf, src->o_len, &pos, &rec);
		if (rc <= 0)
			break;
		rc = 0;
		if (!is_list(rec.r_type)) {
			rc = isc_out_add(dst, rec.r_key, rec.r_klen, rec.r_type,
					 rec.r_val, rec.r_vlen);
			continue;
		}
		/* the group: following LIST records of the same key */
		for (size_t p2 = pos;
		     isc_out_next(src->o_buf, src->o_len, &p2, &nx) == 1 &&
		     is_list(nx.r_type) && nx.r_klen == rec.r_klen &&
		     memcmp(nx.r_key, rec.r_key, rec.r_klen) == 0;)
			pos = p2;
		lr->lr_ga = at;
		lr->lr_gb = pos;
		rc = lr_call(lr, l_callreduce, 1, "reduce");
		if (rc == 0)
			rc = reduce_out(lr, dst, &rec);
	}
	lr_close(lr);
	return rc;
}
