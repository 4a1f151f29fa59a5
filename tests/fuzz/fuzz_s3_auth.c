/*
 * fuzz_s3_auth.c — libFuzzer target: the S3 gateway's request
 * authentication, s3_auth_check() (gateways/s3/s3_auth.c): the SigV4
 * Authorization header, presigned query strings (SigV4 X-Amz-*, and SigV2
 * AWSAccessKeyId/Signature/Expires where the gateway takes them), on a
 * request parsed by the gateway's own parse_target() and parse_names().
 *
 * Input: request text (fuzz_s3.h); the body is not read.  The clock is
 * fixed (time() wrapped: FZ_NOW, 2024-01-01T00:00:00Z) so that the signed
 * seeds (mkseeds.py, users of fz_setup()) stay valid and reach the code
 * after the signature check.  The harness aborts when:
 *   - an accepted request has no user, or one not in the credentials file
 *     (but an anonymous one: no signature, or a CORS preflight, OPTIONS,
 *     which is not authenticated), or an anonymous one carried a
 *     signature;
 *   - a refusal has no S3 error code;
 *   - a refused request that carried a signature (Authorization header,
 *     Signature or X-Amz-Signature parameter) is told that anonymous
 *     requests are refused (issue 26 point 2).
 */
#include "tests/fuzz/fuzz_s3.h"

#define FZ_NOW 1704067200 /* 2024-01-01T00:00:00Z */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
time_t __wrap_time(time_t *t);

time_t __wrap_time(time_t *t)
{
	if (t != NULL)
		*t = FZ_NOW;
	return FZ_NOW;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_setup();
	return 0;
}

static void check(struct s3_req *rq, int rc, const char *code,
		  const char *msg)
{
	bool signed_ = s3_hdr(rq, "Authorization") != NULL ||
		       s3_qhas(rq, "Signature") ||
		       s3_qhas(rq, "X-Amz-Signature");

	if (rc == 0) {
		/* anonymous: no signature (s3_anon_ok()), or a CORS
		 * preflight, which is not authenticated */
		if (!rq->rq_authed) {
			if (rq->rq_user.u_name[0] != 0 ||
			    (signed_ && strcmp(rq->rq_method, "OPTIONS") != 0))
				abort();
			return;
		}
		if (strcmp(rq->rq_user.u_name, "fuzz") != 0 &&
		    strcmp(rq->rq_user.u_name, "alice") != 0)
			abort();
		return;
	}
	if (code == NULL || code[0] == 0 || memchr(msg, 0, 256) == NULL)
		abort();
	if (signed_ && strstr(msg, "anonymous") != NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_con f;
	struct s3_req *rq = NULL;
	const char *code = NULL;
	char msg[256];
	int rc;

	if (!fz_con_parse(&f, data, size))
		goto out;
	rq = uri_cb(NULL, f.fc_target, (struct MHD_Connection *)&f);
	if (rq == NULL)
		goto out;
	rq->rq_conn = &f;
	rq->rq_method = f.fc_method;
	if (parse_target(rq) != 0 || parse_names(rq) != 0)
		goto out;
	msg[0] = 0;
	rc = s3_auth_check(rq, &code, msg, sizeof msg);
	if (getenv("FZ_VERBOSE") != NULL) /* seeds: what each one reaches */
		fprintf(stderr, "fz: %s %s: %d %s %s\n", f.fc_method,
			f.fc_target, rc, rc ? code : rq->rq_user.u_name,
			rc ? msg : "");
	check(rq, rc, code, msg);
out:
	if (rq != NULL)
		req_free(rq);
	fz_con_fini(&f);
	return 0;
}
