/* ha.c — names of the HA states, event and decision kinds (ha/ha.h). */
#include <errno.h>
#include <strings.h>

#include "ha/ha.h"

static const char *const state_names[HA_STATE_NR] = {
	"ONLINE", "TRANSIENT", "FAILED", "REPAIRING", "REPAIRED",
	"REBALANCING", "OUT", "QUARANTINED",
};

static const char *const ev_names[HA_EV_KIND_NR] = {
	"SRV_UNREACHABLE", "SRV_REACHABLE", "SRV_EXIT", "SRV_LEASE_EXPIRED",
	"SRV_JOINED", "DEV_IOERR", "DEV_FAILED", "OP_FAIL", "OP_REPLACE",
	"OP_DRAIN", "OP_REMOVE", "OP_ADD", "OP_THAW", "JOB_DONE",
	"JOB_FAILED", "HOME_READY", "HOME_FROZEN", "HOME_INSYNC",
	"SRV_STOPPED",
};

static const char *const dec_names[HA_DEC_KIND_NR] = {
	"SET_STATE", "JOB_REPAIR", "JOB_REBALANCE", "JOB_PAUSE",
	"JOB_ABORT", "FREEZE", "THAW", "ALERT", "HOME_MOVE",
};

/* The index of name in names[nr] (case-insensitive), or -EINVAL. */
static int name_find(const char *const *names, int nr, const char *name)
{
	for (int i = 0; i < nr; i++)
		if (strcasecmp(names[i], name) == 0)
			return i;
	return -EINVAL;
}

const char *ha_state_name(enum ha_state s)
{
	return (unsigned)s < HA_STATE_NR ? state_names[s] : "?";
}

int ha_state_parse(const char *name)
{
	return name_find(state_names, HA_STATE_NR, name);
}

const char *ha_ev_kind_name(enum ha_ev_kind k)
{
	return (unsigned)k < HA_EV_KIND_NR ? ev_names[k] : "?";
}

int ha_ev_kind_parse(const char *name)
{
	return name_find(ev_names, HA_EV_KIND_NR, name);
}

const char *ha_dec_kind_name(enum ha_dec_kind k)
{
	return (unsigned)k < HA_DEC_KIND_NR ? dec_names[k] : "?";
}

int ha_dec_kind_parse(const char *name)
{
	return name_find(dec_names, HA_DEC_KIND_NR, name);
}
