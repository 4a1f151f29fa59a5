/* fault.c — fault-injection points for test builds (see fault.h). */
#ifdef STRATA_FAULT_INJECT
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "core/limits.h"

struct fault_point {
	char fp_name[48];
	uint32_t fp_skip;
	uint32_t fp_count;
	uint32_t fp_fired;
	bool fp_armed;
};

static struct fault_point fault_tab[FAULT_MAX];
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static volatile int fault_any;

static struct fault_point *fault_find(const char *name, bool make)
{
	struct fault_point *free_slot = NULL;

	for (int i = 0; i < FAULT_MAX; i++) {
		if (fault_tab[i].fp_name[0] == '\0') {
			if (free_slot == NULL)
				free_slot = &fault_tab[i];
		} else if (strcmp(fault_tab[i].fp_name, name) == 0) {
			return &fault_tab[i];
		}
	}
	if (make && free_slot != NULL) {
		strncpy(free_slot->fp_name, name, sizeof free_slot->fp_name - 1);
		return free_slot;
	}
	return NULL;
}

static void fault_arm_locked(const char *name, uint32_t skip, uint32_t count)
{
	struct fault_point *fp = fault_find(name, true);

	if (fp == NULL)
		return;
	fp->fp_skip = skip;
	fp->fp_count = count;
	fp->fp_fired = 0;
	fp->fp_armed = true;
	fault_any = 1;
}

/* Parse STRATA_FAULT once, at the first hit. */
static void fault_env(void)
{
	const char *env = getenv("STRATA_FAULT");
	char buf[512], *save = NULL;

	if (env == NULL)
		return;
	strncpy(buf, env, sizeof buf - 1);
	buf[sizeof buf - 1] = '\0';
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		char *c1 = strchr(tok, ':');
		uint32_t skip = 0, count = 0;

		if (c1 != NULL) {
			char *c2;
			*c1++ = '\0';
			skip = (uint32_t)strtoul(c1, &c2, 10);
			if (*c2 == ':')
				count = (uint32_t)strtoul(c2 + 1, NULL, 10);
		}
		pthread_mutex_lock(&fault_lock);
		fault_arm_locked(tok, skip, count);
		pthread_mutex_unlock(&fault_lock);
	}
}

bool fault_hit(const char *name)
{
	struct fault_point *fp;
	bool fire = false;

	pthread_once(&fault_once, fault_env);
	if (!fault_any)
		return false;
	pthread_mutex_lock(&fault_lock);
	fp = fault_find(name, false);
	if (fp != NULL && fp->fp_armed) {
		if (fp->fp_skip > 0) {
			fp->fp_skip--;
		} else {
			fire = true;
			fp->fp_fired++;
			if (fp->fp_count != 0 && fp->fp_fired >= fp->fp_count)
				fp->fp_armed = false;
		}
	}
	pthread_mutex_unlock(&fault_lock);
	return fire;
}

void fault_arm(const char *name, uint32_t skip, uint32_t count)
{
	pthread_once(&fault_once, fault_env);
	pthread_mutex_lock(&fault_lock);
	fault_arm_locked(name, skip, count);
	pthread_mutex_unlock(&fault_lock);
}

void fault_reset(void)
{
	pthread_mutex_lock(&fault_lock);
	for (int i = 0; i < FAULT_MAX; i++)
		fault_tab[i].fp_armed = false;
	fault_any = 0;
	pthread_mutex_unlock(&fault_lock);
}

uint32_t fault_fired(const char *name)
{
	struct fault_point *fp;
	uint32_t n = 0;

	pthread_mutex_lock(&fault_lock);
	fp = fault_find(name, false);
	if (fp != NULL)
		n = fp->fp_fired;
	pthread_mutex_unlock(&fault_lock);
	return n;
}
#else
/* Release builds carry no fault points; keep the unit non-empty for ISO C. */
typedef int fault_release_build;
#endif
