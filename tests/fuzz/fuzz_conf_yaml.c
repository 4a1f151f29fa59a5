/*
 * fuzz_conf_yaml.c — libFuzzer target: the store configuration parser
 * conf_parse() (core/conf.c), the YAML a user writes for `strata`.
 *
 * Input: the YAML text.  An accepted configuration must survive the round
 * trip conf.h promises: conf_emit() of it parses again, and emitting that
 * gives the same text; otherwise the harness aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf c = {0}, c2 = {0};
	char *t1 = NULL, *t2 = NULL;

	if (conf_parse(&c, (const char *)data, size) != 0)
		return 0;
	if (conf_emit(&c, &t1) != 0)
		goto out;
	if (conf_parse(&c2, t1, strlen(t1)) != 0)
		abort(); /* what we wrote we cannot read back */
	if (conf_emit(&c2, &t2) != 0)
		goto out;
	if (strcmp(t1, t2) != 0)
		abort(); /* the round trip changed the configuration */
out:
	free(t1);
	free(t2);
	conf_fini(&c);
	conf_fini(&c2);
	return 0;
}
