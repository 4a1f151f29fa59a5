/*
 * fuzz_clu_yaml.c — libFuzzer target: the cluster file parser
 * clu_conf_parse() (core/clu_conf.c), with the store configuration it
 * makes for each server (parsed by conf_parse() inside it).
 *
 * Input: byte 0 bit 0 set: parse with CLU_PARSE_NO_SECRET (a client's
 * view, no secret read); clear: the secret is read, and a relative
 * secret_file resolves against a directory made in LLVMFuzzerInitialize
 * that holds one valid secret file, "secret".  The rest is the YAML text.
 * An accepted cluster must have servers, each with its store text, and a
 * home for an id inside the server list, or the harness aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clu_conf.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[300];
	FILE *f;

	const char *scratch = getenv("FUZZ_SCRATCH");

	snprintf(base, sizeof base, "%s/strata-fuzz-clu-XXXXXX",
		 scratch != NULL ? scratch : "/tmp");
	if (mkdtemp(base) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/secret", base);
	f = fopen(path, "w");
	if (f == NULL)
		abort();
	fputs("0123456789abcdef0123456789abcdef\n", f);
	fclose(f);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clu_conf c = {0};
	struct st_id id = {.si_hi = 1, .si_lo = 2};
	uint32_t flags;

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? CLU_PARSE_NO_SECRET : 0;
	if (clu_conf_parse(&c, (const char *)data + 1, size - 1, base,
			   flags) != 0)
		return 0;
	if (c.cc_nr_servers == 0 || clu_home(&c, &id) >= c.cc_nr_servers)
		abort();
	for (uint32_t i = 0; i < c.cc_nr_servers; i++)
		if (c.cc_servers[i].cs_store_yaml == NULL)
			abort();
	clu_conf_fini(&c);
	return 0;
}
