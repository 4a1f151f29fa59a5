/*
 * fuzz_ha_replay.c — libFuzzer target: the replay file reader of
 * `strata ha replay` (ha_history_read(), ha/ha_json.c) and the analyzer
 * over what it accepts (ha_replay(), ha/analyzer.c).
 *
 * Input: the file's bytes.  An accepted history must survive: every event
 * formatted as JSON parses back to the same event; the replay ends (0);
 * a second replay over the same input takes the same number of decisions
 * and leaves the same map epoch.  Otherwise the harness aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/analyzer.h"
#include "ha/ha_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *arg, const struct ha_decision *d)
{
	char buf[1024];
	struct ha_decision d2;

	if (ha_decision_format(d, buf, sizeof buf) < 0 ||
	    ha_decision_parse(buf, &d2) != 0 || d2.hd_seq != d->hd_seq ||
	    d2.hd_kind != d->hd_kind || d2.hd_state != d->hd_state ||
	    strcmp(d2.hd_reason, d->hd_reason) != 0)
		abort(); /* a decision we wrote we cannot read back */
	(*(uint32_t *)arg)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ha_history h;
	struct ha_map *m;
	uint32_t n1 = 0, n2 = 0;
	char buf[1024];
	FILE *f;

	if (size > 64 * 1024)
		return 0; /* the replay is quadratic in events: keep it quick */
	f = fmemopen((void *)data, size, "r");
	if (f == NULL)
		return 0;
	if (ha_history_read(f, "fuzz", &h) != 0) {
		fclose(f);
		return 0;
	}
	fclose(f);
	for (uint32_t i = 0; i < h.hh_nr; i++) {
		struct ha_event e;
		if (ha_event_format(&h.hh_ev[i], buf, sizeof buf) < 0 ||
		    ha_event_parse(buf, &e) != 0 ||
		    e.he_seq != h.hh_ev[i].he_seq ||
		    e.he_time_ms != h.hh_ev[i].he_time_ms ||
		    e.he_kind != h.hh_ev[i].he_kind ||
		    strcmp(e.he_target, h.hh_ev[i].he_target) != 0 ||
		    strcmp(e.he_dev, h.hh_ev[i].he_dev) != 0)
			abort(); /* an event we wrote we cannot read back */
	}
	m = malloc(sizeof *m);
	if (m == NULL)
		abort();
	*m = *h.hh_map;
	if (ha_replay(&h.hh_rules, h.hh_ev, h.hh_nr, m, 0, count, &n1) != 0)
		abort(); /* a rule that would not end */
	*m = *h.hh_map;
	if (ha_replay(&h.hh_rules, h.hh_ev, h.hh_nr, m, 0, count, &n2) != 0 ||
	    n1 != n2)
		abort(); /* the same input, other decisions */
	free(m);
	ha_history_fini(&h);
	return 0;
}
