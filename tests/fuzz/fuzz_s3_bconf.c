/*
 * fuzz_s3_bconf.c — libFuzzer target: the S3 gateway's bucket
 * configuration bodies (gateways/s3/s3_bconf.c, s3_bconf_check()): the
 * walks that validate a VersioningConfiguration, a CORSConfiguration and a
 * LifecycleConfiguration and write the document that is stored.
 *
 * Input: one byte choosing the kind (its value modulo 3: versioning, cors,
 * lifecycle), then the XML body.  Checked, else the harness aborts: a
 * refusal has a status of 400, 500 or 501 (501 only for versioning), an
 * error code and a message; an accepted CORS or lifecycle body yields a
 * document, which is accepted again and normalises to itself (what GET
 * returns is what a PUT of it stores).  fuzz_s3.h brings the rest of the
 * gateway (s3_main.c) that the linked objects call; the check itself
 * touches no request and no store.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_s3.h"
#include "gateways/s3/s3_bconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const subs[] = {"versioning", "cors", "lifecycle"};
	struct s3_buf a = {0}, b = {0};
	const char *sub, *code = NULL;
	uint32_t status = 0;
	char msg[320] = "";
	int rc;

	if (size < 1)
		return 0;
	sub = subs[data[0] % 3];
	rc = s3_bconf_check(sub, (const char *)data + 1, size - 1, &a, &status,
			    &code, msg, sizeof msg);
	if (rc != 0) {
		if (rc != -EINVAL || code == NULL || msg[0] == 0 ||
		    (status != 400 && status != 500 && status != 501) ||
		    (status == 501 && data[0] % 3 != 0) || a.b_len != 0)
			abort();
		goto out;
	}
	if (a.b_oom || (data[0] % 3 != 0 && a.b_len == 0))
		abort();
	if (a.b_len == 0)
		goto out;
	rc = s3_bconf_check(sub, a.b_data, a.b_len, &b, &status, &code, msg,
			    sizeof msg);
	if (rc != 0 || b.b_len != a.b_len ||
	    memcmp(a.b_data, b.b_data, a.b_len) != 0)
		abort();
out:
	s3_buf_fini(&a);
	s3_buf_fini(&b);
	return 0;
}
