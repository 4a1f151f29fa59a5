/*
 * fuzz_s3_policy.c — libFuzzer target: the S3 gateway's bucket-policy
 * compiler s3_pol_compile() (gateways/s3/s3_policy.c, json-c) and its
 * evaluator s3_pol_eval(), as PUT /bucket?policy and every request on a
 * bucket with a policy run them.
 *
 * Input: the policy JSON, compiled for bucket "fzb".  A refused policy
 * must say why (a non-empty message, -EINVAL); an accepted one is
 * evaluated for anonymous, a user and another user on the object and
 * bucket actions the gateway asks about, and every answer must be one of
 * NONE, ALLOW, DENY, the same when asked twice.  The harness aborts
 * otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *users[] = {NULL, "", "alice", "bob"};
static const char *acts[] = {"s3:GetObject", "s3:PutObject",
			     "s3:DeleteObject", "s3:ListBucket",
			     "s3:GetBucketPolicy"};
static const char *ress[] = {"fzb", "fzb/k", "fzb/a/b/c", "other/k"};

static void eval_all(const struct s3_pol *p, const struct s3_pol_cx *cx)
{
	for (size_t u = 0; u < sizeof users / sizeof users[0]; u++)
		for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
			for (size_t r = 0; r < sizeof ress / sizeof ress[0];
			     r++) {
				size_t rl = strlen(ress[r]);
				int v = s3_pol_eval(p, cx, users[u],
						    acts[a], ress[r], rl);

				if (v != S3_POL_NONE && v != S3_POL_ALLOW &&
				    v != S3_POL_DENY)
					abort();
				if (s3_pol_eval(p, cx, users[u], acts[a],
						ress[r], rl) != v)
					abort();
			}
}

static const uint8_t tags[] = "security\0public\0k\0\0x";
static const struct s3_orec obj = {.or_tags = tags,
				   .or_tags_len = sizeof tags - 1};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_pol *p = NULL;
	char msg[256];
	int rc;

	msg[0] = 0;
	rc = s3_pol_compile((const char *)data, size, "fzb", &p, msg,
			    sizeof msg);
	if (rc != 0) {
		if (rc != -EINVAL || p != NULL || msg[0] == 0)
			abort();
		return 0;
	}
	if (p == NULL)
		abort();
	/* without a request, and with an object whose tags are read by
	 * s3:ExistingObjectTag/ conditions */
	eval_all(p, NULL);
	eval_all(p, &(struct s3_pol_cx){.pc_obj = &obj});
	s3_pol_free(p);
	return 0;
}
