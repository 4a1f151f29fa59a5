/*
 * fuzz_s3_mhd.c — the fake connection's reply for a gateway that does not
 * define MHD_queue_response() itself (fuzz_s3.h): weak, so that the
 * gateway's own definition, when it has one, is the one linked.
 */
#include <microhttpd.h>

enum MHD_Result fz_queue(struct MHD_Connection *c, unsigned int status,
			 struct MHD_Response *resp);

__attribute__((weak))
enum MHD_Result MHD_queue_response(struct MHD_Connection *c,
				   unsigned int status,
				   struct MHD_Response *resp)
{
	return fz_queue(c, status, resp);
}
