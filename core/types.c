/* types.c — the ground floor's id functions (see types.h); the public
 * clovis_id_cmp(), clovis_id_format() and clovis_id_parse() call these. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/types.h"

int st_id_cmp(const struct st_id *a, const struct st_id *b)
{
	if (a->si_hi != b->si_hi)
		return a->si_hi < b->si_hi ? -1 : 1;
	if (a->si_lo != b->si_lo)
		return a->si_lo < b->si_lo ? -1 : 1;
	return 0;
}

char *st_id_format(const struct st_id *id, char *buf)
{
	snprintf(buf, ST_ID_STR_LEN, "%" PRIx64 ":%" PRIx64, id->si_hi,
		 id->si_lo);
	return buf;
}

/* FNV-1a, 64 bits, with a seed: two of them give a name's 128-bit id. */
static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s != '\0'; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Parse one hexadecimal half of an id. */
static int id_half(const char *s, size_t len, uint64_t *out)
{
	char buf[24];
	char *end;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	if (len == 0 || len > 16)
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') ||
		      ((buf[i] | 32) >= 'a' && (buf[i] | 32) <= 'f')))
			return -EINVAL;
	*out = strtoull(buf, &end, 16);
	return 0;
}

int st_id_parse(const char *s, struct st_id *out)
{
	const char *colon;

	if (s == NULL || out == NULL)
		return err_set(-EINVAL, "id: NULL argument");
	if (s[0] == '@') {
		if (s[1] == '\0')
			return err_set(-EINVAL, "id \"%s\": empty name", s);
		out->si_hi = fnv1a(s + 1, 0xcbf29ce484222325ull) | 1ull << 63;
		out->si_lo = fnv1a(s + 1, 0x84222325cbf29ce4ull);
		return 0;
	}
	colon = strchr(s, ':');
	if (colon == NULL || id_half(s, (size_t)(colon - s), &out->si_hi) != 0 ||
	    id_half(colon + 1, strlen(colon + 1), &out->si_lo) != 0)
		return err_set(-EINVAL, "id \"%s\": expected HI:LO in hex or "
			       "@name", s);
	return 0;
}
