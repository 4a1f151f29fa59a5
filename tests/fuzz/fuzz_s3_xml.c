/*
 * fuzz_s3_xml.c — libFuzzer target: the S3 gateway's XML reader
 * s3_xml_parse() (gateways/s3/s3_util.c), which every request body goes
 * through before its own walk (CompleteMultipartUpload, DeleteObjects,
 * and the configuration bodies; those walks are fuzzed through the
 * gateway in s3_route).
 *
 * Input: the XML text.  An accepted document must be a tree whose every
 * element has a name of the characters the reader takes and a text that is
 * NUL-terminated at its length (the walks use it as a C string), at most
 * 32 levels deep; s3_xml_child() must find each child by its name.  The
 * harness aborts otherwise.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/s3/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(struct s3_xel *x, int depth)
{
	for (; x != NULL; x = x->x_next) {
		const char *c;

		if (depth > 32 || x->x_name == NULL || x->x_name[0] == 0 ||
		    x->x_text == NULL || x->x_text[x->x_text_len] != 0)
			abort();
		for (c = x->x_name; *c; c++)
			if (!isalnum((unsigned char)*c) && strchr(":_-.", *c)
			    == NULL)
				abort();
		for (struct s3_xel *k = x->x_child; k != NULL; k = k->x_next) {
			struct s3_xel *f = s3_xml_child(x, k->x_name);

			if (f == NULL || strcmp(f->x_name, k->x_name) != 0)
				abort();
		}
		walk(x->x_child, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_xel *x = s3_xml_parse((const char *)data, size);

	if (x == NULL)
		return 0;
	if (x->x_next != NULL)
		abort(); /* one root */
	walk(x, 1);
	s3_xml_free(x);
	return 0;
}
