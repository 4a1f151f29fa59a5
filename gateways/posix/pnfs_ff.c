/*
 * pnfs_ff.c — Strata layouts as pNFS flexfiles layouts, and their XDR
 * (contract: gateways/posix/pnfs_ff.h; design: docs/pnfs.md).
 *
 * Pure: no I/O, no allocation, no state outside the caller's structs.
 * The XDR writer never writes past its buffer and keeps counting, so an
 * encoder that ran out of room still tells how much it needed; the reader
 * keeps the first error (sticky) and every getter after it is a no-op,
 * so a decoder reads straight through and checks once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "core/errors.h"
#include "gateways/posix/pnfs_ff.h"

/* Wire sizes of the fixed parts, checked against the RFC's types. */
#define XDR_UNIT 4u
/* ff_data_server4 with no handle and empty strings: deviceid 16,
 * efficiency 4, stateid 16, three counts / lengths 12. */
#define DS_WIRE_MIN 48u
/* netaddr4 with two empty strings; ff_device_versions4. */
#define NETADDR_WIRE_MIN 8u
#define VERSION_WIRE 20u
_Static_assert(PNFS_FF_DEVICEID_SIZE % XDR_UNIT == 0, "deviceid4 unpadded");
_Static_assert(4 + PNFS_FF_STATEID_OTHER_SIZE == 16, "stateid4 is 16 bytes");
_Static_assert(DS_WIRE_MIN == PNFS_FF_DEVICEID_SIZE + 4 + 16 + 3 * 4,
	       "ff_data_server4 minimum");
_Static_assert(PNFS_FF_FH_SIZE <= 64, "fits an NFSv3 handle");
_Static_assert(PNFS_FF_WIDTH_DEFAULT <= PNFS_FF_WIDTH_MAX, "default width");

/* ---------------------------------------------------------- XDR writer */

struct xw {
	uint8_t *w_buf;   /* NULL: only count */
	size_t w_size;
	size_t w_len;     /* bytes the encoding takes so far */
};

static void xw_raw(struct xw *w, const void *p, size_t n)
{
	if (w->w_buf != NULL && w->w_len <= w->w_size &&
	    n <= w->w_size - w->w_len)
		memcpy(w->w_buf + w->w_len, p, n);
	w->w_len += n;
}

static void xw_u32(struct xw *w, uint32_t v)
{
	uint8_t b[4] = {v >> 24, v >> 16, v >> 8, v};

	xw_raw(w, b, sizeof b);
}

static void xw_u64(struct xw *w, uint64_t v)
{
	xw_u32(w, (uint32_t)(v >> 32));
	xw_u32(w, (uint32_t)v);
}

/* A fixed-length opaque: the bytes, then zeros to a multiple of 4. */
static void xw_fixed(struct xw *w, const void *p, size_t n)
{
	static const uint8_t zero[XDR_UNIT];

	xw_raw(w, p, n);
	xw_raw(w, zero, (XDR_UNIT - n % XDR_UNIT) % XDR_UNIT);
}

/* A variable-length opaque or string: its length, then as fixed. */
static void xw_opaque(struct xw *w, const void *p, size_t n)
{
	xw_u32(w, (uint32_t)n);
	xw_fixed(w, p, n);
}

/* The encoders' common end: -ENOSPC when it did not fit. */
static int xw_end(const struct xw *w, const char *type, size_t *len)
{
	*len = w->w_len;
	if (w->w_len > w->w_size)
		return err_set(-ENOSPC, "%s: needs %zu bytes, buffer has %zu",
			       type, w->w_len, w->w_size);
	return 0;
}

/* ---------------------------------------------------------- XDR reader */

struct xr {
	const uint8_t *r_buf;
	size_t r_len;
	size_t r_pos;
	const char *r_type;   /* "ff_layout4", ... for messages */
	int r_rc;             /* first error, sticky */
	int r_mirror, r_ds;   /* where in ff_layout4, -1 outside */
};

static void xr_init(struct xr *r, const uint8_t *buf, size_t len,
		    const char *type)
{
	*r = (struct xr){buf, len, 0, type, 0, -1, -1};
	if (buf == NULL && len != 0)
		r->r_rc = err_set(-EINVAL, "%s: NULL buffer of %zu bytes",
				  type, len);
}

/* Record the first error at the current position, with the field. */
static void xr_fail(struct xr *r, int rc, const char *field,
		    const char *what)
{
	if (r->r_rc != 0)
		return;
	if (r->r_ds >= 0)
		r->r_rc = err_set(rc, "%s byte %zu of %zu: %s %s (mirror %d, "
				  "data server %d)", r->r_type, r->r_pos,
				  r->r_len, field, what, r->r_mirror,
				  r->r_ds);
	else if (r->r_mirror >= 0)
		r->r_rc = err_set(rc, "%s byte %zu of %zu: %s %s (mirror %d)",
				  r->r_type, r->r_pos, r->r_len, field, what,
				  r->r_mirror);
	else
		r->r_rc = err_set(rc, "%s byte %zu of %zu: %s %s", r->r_type,
				  r->r_pos, r->r_len, field, what);
}

static bool xr_need(struct xr *r, size_t n, const char *field)
{
	if (r->r_rc != 0)
		return false;
	if (n > r->r_len - r->r_pos) {
		xr_fail(r, -EINVAL, field, "truncated");
		return false;
	}
	return true;
}

static uint32_t xr_u32(struct xr *r, const char *field)
{
	const uint8_t *p;

	if (!xr_need(r, 4, field))
		return 0;
	p = r->r_buf + r->r_pos;
	r->r_pos += 4;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t xr_u64(struct xr *r, const char *field)
{
	uint64_t hi = xr_u32(r, field);

	return hi << 32 | xr_u32(r, field);
}

/* n bytes into out (NULL: skip), then the padding, which must be zero. */
static void xr_fixed(struct xr *r, void *out, size_t n, const char *field)
{
	size_t pad = (XDR_UNIT - n % XDR_UNIT) % XDR_UNIT;

	if (!xr_need(r, n + pad, field))
		return;
	if (out != NULL)
		memcpy(out, r->r_buf + r->r_pos, n);
	r->r_pos += n;
	for (size_t i = 0; i < pad; i++)
		if (r->r_buf[r->r_pos + i] != 0) {
			xr_fail(r, -EINVAL, field, "has non-zero padding");
			return;
		}
	r->r_pos += pad;
}

/*
 * An array count or opaque length: each element takes at least elem_min
 * bytes, so a count the rest of the buffer cannot hold is malformed
 * (-EINVAL, and no loop ever runs long on a forged count); one above max
 * is valid but more than we hold (-EOVERFLOW).
 */
static uint32_t xr_count(struct xr *r, size_t elem_min, uint32_t max,
			 const char *field)
{
	uint32_t n = xr_u32(r, field);

	if (r->r_rc != 0)
		return 0;
	if (elem_min != 0 && n > (r->r_len - r->r_pos) / elem_min) {
		xr_fail(r, -EINVAL, field, "count larger than the bytes left");
		return 0;
	}
	if (n > max) {
		xr_fail(r, -EOVERFLOW, field, "count above this decoder's "
			"limit");
		return 0;
	}
	return n;
}

/* A variable opaque of at most max bytes into out; *n its length.
 * proto_max: the type's own bound (longer is malformed), 0 = none. */
static void xr_opaque(struct xr *r, uint8_t *out, uint32_t max,
		      uint32_t proto_max, uint32_t *n, const char *field)
{
	uint32_t len = xr_u32(r, field);

	*n = 0;
	if (r->r_rc != 0)
		return;
	if ((proto_max != 0 && len > proto_max) ||
	    len > r->r_len - r->r_pos) {
		xr_fail(r, -EINVAL, field, "length invalid or past the end");
		return;
	}
	if (len > max) {
		xr_fail(r, -EOVERFLOW, field, "longer than this decoder's "
			"limit");
		return;
	}
	xr_fixed(r, out, len, field);
	if (r->r_rc == 0)
		*n = len;
}

/* A string into out[0..max], NUL-terminated; a NUL inside is refused. */
static void xr_string(struct xr *r, char *out, uint32_t max,
		      const char *field)
{
	uint32_t n;

	xr_opaque(r, (uint8_t *)out, max, 0, &n, field);
	out[n] = '\0';
	if (r->r_rc == 0 && memchr(out, '\0', n) != NULL)
		xr_fail(r, -EINVAL, field, "holds a NUL byte");
}

static bool xr_bool(struct xr *r, const char *field)
{
	uint32_t v = xr_u32(r, field);

	if (r->r_rc == 0 && v > 1)
		xr_fail(r, -EINVAL, field, "is a bool other than 0 or 1");
	return v == 1;
}

/* The decoders' common end: every byte consumed. */
static int xr_end(struct xr *r)
{
	r->r_mirror = r->r_ds = -1;
	if (r->r_rc == 0 && r->r_pos != r->r_len)
		xr_fail(r, -EINVAL, "end", "followed by trailing bytes");
	return r->r_rc;
}

/* ------------------------------------------------------------ strings */

/* A C string of 1..max bytes (min 0 allows empty); -EINVAL naming it. */
static int str_check(const char *s, size_t min, size_t max,
		     const char *field)
{
	size_t n;

	if (s == NULL)
		return err_set(-EINVAL, "%s: NULL", field);
	n = strnlen(s, max + 1);
	if (n < min || n > max)
		return err_set(-EINVAL, "%s: %zu bytes, not %zu..%zu", field,
			       n, min, max);
	return 0;
}

/* A decimal of 1..digits digits, value <= max, the whole of s[0..n). */
static bool dec_parse(const char *s, size_t n, size_t digits, uint32_t max,
		      uint32_t *v)
{
	uint32_t x = 0;

	if (n == 0 || n > digits)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (uint32_t)(s[i] - '0');
	}
	*v = x;
	return x <= max;
}

/* ------------------------------------------------------------ addresses */

static bool netid_is(const struct pnfs_ff_addr *a, const char *id)
{
	return strcmp(a->fa_netid, id) == 0;
}

/* Split "host.p1.p2" at its last two dots: host length and port. */
static bool uaddr_split(const char *u, size_t *host_len, uint16_t *port)
{
	const char *d2 = strrchr(u, '.'), *d1;
	uint32_t p1, p2;

	if (d2 == NULL || d2 == u)
		return false;
	for (d1 = d2 - 1; d1 > u && *d1 != '.'; d1--)
		;
	if (*d1 != '.' || d1 == u)
		return false;
	if (!dec_parse(d1 + 1, (size_t)(d2 - d1 - 1), 3, 255, &p1) ||
	    !dec_parse(d2 + 1, strlen(d2 + 1), 3, 255, &p2))
		return false;
	*host_len = (size_t)(d1 - u);
	*port = (uint16_t)(p1 << 8 | p2);
	return true;
}

int pnfs_ff_addr_check(const struct pnfs_ff_addr *a, uint16_t *port)
{
	char host[PNFS_FF_UADDR_MAX];
	struct in6_addr bin;
	size_t hl;
	uint16_t p;
	int af;

	if (a == NULL)
		return err_set(-EINVAL, "netaddr4: NULL");
	if (memchr(a->fa_netid, '\0', sizeof a->fa_netid) == NULL ||
	    memchr(a->fa_uaddr, '\0', sizeof a->fa_uaddr) == NULL)
		return err_set(-EINVAL, "netaddr4: netid or uaddr not "
			       "terminated");
	if (netid_is(a, "tcp"))
		af = AF_INET;
	else if (netid_is(a, "tcp6"))
		af = AF_INET6;
	else
		return err_set(a->fa_netid[0] ? -ENOTSUP : -EINVAL,
			       "netaddr4: na_r_netid \"%s\" (only tcp and "
			       "tcp6)", a->fa_netid);
	if (!uaddr_split(a->fa_uaddr, &hl, &p) || p == 0)
		return err_set(-EINVAL, "netaddr4: na_r_addr \"%s\" is not "
			       "host.p1.p2 with a port 1..65535", a->fa_uaddr);
	memcpy(host, a->fa_uaddr, hl);
	host[hl] = '\0';
	if (inet_pton(af, host, &bin) != 1)
		return err_set(-EINVAL, "netaddr4: na_r_addr \"%s\": \"%s\" is "
			       "not an %s address", a->fa_uaddr, host,
			       af == AF_INET ? "IPv4" : "IPv6");
	if (port != NULL)
		*port = p;
	return 0;
}

/* Split "host:port" / "[v6]:port"; host copied to host[], *af set. */
static int hostport_split(const char *hp, char *host, size_t size, int *af,
			  uint32_t *port)
{
	const char *colon, *h = hp, *he;

	if (hp[0] == '[') {
		h = hp + 1;
		he = strchr(h, ']');
		if (he == NULL || he[1] != ':')
			return -EINVAL;
		colon = he + 1;
		*af = AF_INET6;
	} else {
		colon = strrchr(hp, ':');
		if (colon == NULL || memchr(hp, ':', (size_t)(colon - hp)))
			return -EINVAL; /* no port, or IPv6 without [] */
		he = colon;
		*af = AF_INET;
	}
	if (he == h || (size_t)(he - h) >= size ||
	    !dec_parse(colon + 1, strlen(colon + 1), 5, 65535, port) ||
	    *port == 0)
		return -EINVAL;
	memcpy(host, h, (size_t)(he - h));
	host[he - h] = '\0';
	return 0;
}

int pnfs_ff_addr_from_hostport(const char *hp, struct pnfs_ff_addr *out)
{
	char host[PNFS_FF_UADDR_MAX], text[INET6_ADDRSTRLEN];
	struct in6_addr bin;
	uint32_t port;
	int af;

	if (str_check(hp, 1, PNFS_FF_UADDR_MAX, "host:port") != 0)
		return -EINVAL;
	if (hostport_split(hp, host, sizeof host, &af, &port) != 0)
		return err_set(-EINVAL, "host:port \"%s\": not a numeric "
			       "IPv4:port or [IPv6]:port with a port "
			       "1..65535", hp);
	if (inet_pton(af, host, &bin) != 1 ||
	    inet_ntop(af, &bin, text, sizeof text) == NULL)
		return err_set(-EINVAL, "host:port \"%s\": \"%s\" is not a "
			       "numeric %s address (no name lookup here)", hp,
			       host, af == AF_INET ? "IPv4" : "IPv6");
	memset(out, 0, sizeof *out);
	strcpy(out->fa_netid, af == AF_INET ? "tcp" : "tcp6");
	snprintf(out->fa_uaddr, sizeof out->fa_uaddr, "%s.%u.%u", text,
		 port >> 8, port & 0xff);
	return 0;
}

int pnfs_ff_server_addr(const struct pnfs_ff_server *sv,
			struct pnfs_ff_addr *out)
{
	if (sv == NULL)
		return err_set(-EINVAL, "server: NULL");
	if (sv->sv_hostport != NULL) {
		if (sv->sv_netid != NULL || sv->sv_uaddr != NULL)
			return err_set(-EINVAL, "server %s: sv_hostport and "
				       "sv_netid/sv_uaddr both given",
				       sv->sv_name ? sv->sv_name : "?");
		return pnfs_ff_addr_from_hostport(sv->sv_hostport, out);
	}
	if (str_check(sv->sv_netid, 1, PNFS_FF_NETID_MAX - 1,
		      "sv_netid") != 0 ||
	    str_check(sv->sv_uaddr, 1, PNFS_FF_UADDR_MAX - 1,
		      "sv_uaddr") != 0)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	strcpy(out->fa_netid, sv->sv_netid);
	strcpy(out->fa_uaddr, sv->sv_uaddr);
	return pnfs_ff_addr_check(out, NULL);
}

/* FNV-1a, 64 bits, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV1A_INIT 0xcbf29ce484222325ull

static void be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

int pnfs_ff_deviceid(const struct pnfs_ff_server *sv,
		     uint8_t id[PNFS_FF_DEVICEID_SIZE])
{
	struct pnfs_ff_addr a;
	uint64_t h;

	if (sv == NULL || id == NULL)
		return err_set(-EINVAL, "deviceid: NULL server or id");
	if (str_check(sv->sv_name, 1, PNFS_FF_NAME_MAX, "sv_name") != 0)
		return -EINVAL;
	if (pnfs_ff_server_addr(sv, &a) != 0)
		return err_set(-EINVAL, "server %s: %s", sv->sv_name,
			       err_msg());
	be64_put(id, fnv1a(FNV1A_INIT, sv->sv_name, strlen(sv->sv_name)));
	h = fnv1a(FNV1A_INIT, a.fa_netid, strlen(a.fa_netid));
	h = fnv1a(h, " ", 1);
	h = fnv1a(h, a.fa_uaddr, strlen(a.fa_uaddr));
	be64_put(id + 8, fnv1a(h, "\n", 1));
	return 0;
}

int pnfs_ff_devaddr_make(const struct pnfs_ff_server *sv,
			 struct pnfs_ff_devaddr *out)
{
	uint8_t id[PNFS_FF_DEVICEID_SIZE];

	if (out == NULL)
		return err_set(-EINVAL, "devaddr: NULL");
	if (pnfs_ff_deviceid(sv, id) != 0) /* checks name and address */
		return -EINVAL;
	memset(out, 0, sizeof *out);
	out->fd_addrs_nr = 1;
	pnfs_ff_server_addr(sv, &out->fd_addrs[0]);
	out->fd_versions_nr = 1;
	out->fd_versions[0] = (struct pnfs_ff_version){
		.fv_version = 3,
		.fv_minor = 0,
		.fv_rsize = sv->sv_rsize ? sv->sv_rsize : PNFS_FF_IOSIZE_DEFAULT,
		.fv_wsize = sv->sv_wsize ? sv->sv_wsize : PNFS_FF_IOSIZE_DEFAULT,
		.fv_tightly_coupled = false,
	};
	return 0;
}

/* ---------------------------------------------------------------- handles */

static bool layout_is_unit(uint32_t layout)
{
	return layout == CLOVIS_LAYOUT_PLAIN ||
	       layout == CLOVIS_LAYOUT_PDCLUST ||
	       layout == CLOVIS_LAYOUT_MIRROR;
}

void pnfs_ff_fh_make(const struct pnfs_ff_fh *fh,
		     uint8_t out[PNFS_FF_FH_SIZE])
{
	out[0] = 'S';
	out[1] = 'F';
	out[2] = PNFS_FF_FH_VERSION;
	out[3] = (uint8_t)fh->fh_layout;
	out[4] = (uint8_t)(fh->fh_epoch >> 24);
	out[5] = (uint8_t)(fh->fh_epoch >> 16);
	out[6] = (uint8_t)(fh->fh_epoch >> 8);
	out[7] = (uint8_t)fh->fh_epoch;
	be64_put(out + 8, fh->fh_id.ci_hi);
	be64_put(out + 16, fh->fh_id.ci_lo);
	be64_put(out + 24, fh->fh_unit);
}

int pnfs_ff_fh_parse(const uint8_t *buf, size_t len, struct pnfs_ff_fh *fh)
{
	if (buf == NULL || fh == NULL || len != PNFS_FF_FH_SIZE)
		return err_set(-EINVAL, "data server handle: %zu bytes, not "
			       "%u", buf ? len : 0, PNFS_FF_FH_SIZE);
	if (buf[0] != 'S' || buf[1] != 'F')
		return err_set(-EINVAL, "data server handle: bad magic "
			       "%02x%02x", buf[0], buf[1]);
	if (buf[2] != PNFS_FF_FH_VERSION)
		return err_set(-EINVAL, "data server handle: version %u, not "
			       "%u", buf[2], PNFS_FF_FH_VERSION);
	if (!layout_is_unit(buf[3]))
		return err_set(-EINVAL, "data server handle: layout %u",
			       buf[3]);
	fh->fh_layout = buf[3];
	fh->fh_epoch = (uint32_t)buf[4] << 24 | (uint32_t)buf[5] << 16 |
		       (uint32_t)buf[6] << 8 | buf[7];
	fh->fh_id.ci_hi = be64_get(buf + 8);
	fh->fh_id.ci_lo = be64_get(buf + 16);
	fh->fh_unit = be64_get(buf + 24);
	return 0;
}

/* ---------------------------------------------------------------- mapping */

/* Copies of a unit the layout lists: MIRROR its copies, else one. */
static uint32_t file_copies(const struct pnfs_ff_file *f)
{
	return f->fi_layout == CLOVIS_LAYOUT_MIRROR ? f->fi_copies : 1;
}

static int geom_unit_check(const struct pnfs_ff_file *f)
{
	if (f->fi_unit_shift < CLOVIS_UNIT_SHIFT_MIN ||
	    f->fi_unit_shift > CLOVIS_UNIT_SHIFT_MAX)
		return err_set(-EINVAL, "fi_unit_shift %u: not %u..%u",
			       f->fi_unit_shift, CLOVIS_UNIT_SHIFT_MIN,
			       CLOVIS_UNIT_SHIFT_MAX);
	if (f->fi_width > PNFS_FF_WIDTH_MAX)
		return err_set(-EINVAL, "fi_width %u: above %u", f->fi_width,
			       PNFS_FF_WIDTH_MAX);
	return 0;
}

/* The geometry of f; *w: units (data servers) per segment. */
static int geom_check(const struct pnfs_ff_file *f, uint32_t *w)
{
	uint32_t want, n = f->fi_data_units, k = f->fi_parity_units;

	if (f->fi_layout == CLOVIS_LAYOUT_PLAIN) {
		*w = 1;
		return 0;
	}
	if (f->fi_layout == CLOVIS_LAYOUT_COMPOSITE)
		return err_set(-ENOTSUP, "fi_layout: a composite layout "
			       "resolves each block to a layer at read time; "
			       "flexfiles cannot express it");
	if (!layout_is_unit(f->fi_layout))
		return err_set(-EINVAL, "fi_layout %u: not a layout type",
			       f->fi_layout);
	if (geom_unit_check(f) != 0)
		return -EINVAL;
	want = f->fi_width ? f->fi_width : PNFS_FF_WIDTH_DEFAULT;
	if (f->fi_layout == CLOVIS_LAYOUT_MIRROR) {
		if (f->fi_copies < 2 || f->fi_copies > PNFS_FF_MIRRORS_MAX)
			return err_set(-EINVAL, "fi_copies %u: not 2..%u",
				       f->fi_copies, PNFS_FF_MIRRORS_MAX);
		*w = want;
		return 0;
	}
	if (n < 1 || n > CLOVIS_LAYOUT_UNITS_MAX || k > CLOVIS_LAYOUT_UNITS_MAX
	    || n + k > CLOVIS_LAYOUT_UNITS_MAX)
		return err_set(-EINVAL, "fi_data_units %u, fi_parity_units %u: "
			       "need 1 <= N and N + K <= %u", n, k,
			       CLOVIS_LAYOUT_UNITS_MAX);
	*w = want < n ? n : want / n * n;
	return 0;
}

int pnfs_ff_span(const struct pnfs_ff_file *f, uint64_t offset,
		 uint64_t length, uint32_t segs_max, uint64_t *first_unit,
		 uint32_t *units_nr)
{
	uint64_t seg_bytes, first, last, total;
	uint32_t w;
	int rc;

	if (f == NULL || first_unit == NULL || units_nr == NULL)
		return err_set(-EINVAL, "span: NULL argument");
	if ((rc = geom_check(f, &w)) != 0)
		return rc;
	if (length == 0 || segs_max < 1 || segs_max > PNFS_FF_SEGS_MAX)
		return err_set(-EINVAL, "span: length %" PRIu64 ", segs_max "
			       "%u (need length > 0, 1..%u segments)", length,
			       segs_max, PNFS_FF_SEGS_MAX);
	if (length != PNFS_FF_LENGTH_EOF && length - 1 > UINT64_MAX - offset)
		return err_set(-EINVAL, "span: offset %" PRIu64 " + length %"
			       PRIu64 " passes 2^64", offset, length);
	if (f->fi_layout == CLOVIS_LAYOUT_PLAIN) {
		*first_unit = 0;
		*units_nr = 1;
		return 0;
	}
	seg_bytes = (uint64_t)w << f->fi_unit_shift;
	total = UINT64_MAX / seg_bytes; /* whole segments below 2^64 */
	first = offset / seg_bytes;
	if (first >= total)
		return err_set(-EOVERFLOW, "span: offset %" PRIu64 " is in the "
			       "last, partial segment below 2^64", offset);
	last = length == PNFS_FF_LENGTH_EOF ? UINT64_MAX :
	       (offset + length - 1) / seg_bytes;
	if (last - first >= segs_max)
		last = first + segs_max - 1;
	if (last >= total)
		last = total - 1;
	*first_unit = first * w;
	*units_nr = (uint32_t)(last - first + 1) * w;
	return 0;
}

/* Flags, user, group and every server of f. */
static int file_meta_check(const struct pnfs_ff_file *f)
{
	uint8_t id[PNFS_FF_DEVICEID_SIZE];

	if (f->fi_flags & ~PNFS_FF_FLAGS_KNOWN)
		return err_set(-EINVAL, "fi_flags %#x: unknown bits",
			       f->fi_flags);
	if (f->fi_flags & PNFS_FF_FLAGS_NO_IO_THRU_MDS)
		return err_set(-EINVAL, "fi_flags: NO_IO_THRU_MDS, but a unit "
			       "without a readable copy is read through the "
			       "MDS");
	if (str_check(f->fi_user, 1, PNFS_FF_OWNER_MAX, "fi_user") != 0 ||
	    str_check(f->fi_group, 1, PNFS_FF_OWNER_MAX, "fi_group") != 0)
		return -EINVAL;
	if (f->fi_servers == NULL && f->fi_servers_nr != 0)
		return err_set(-EINVAL, "fi_servers: NULL");
	for (uint32_t i = 0; i < f->fi_servers_nr; i++)
		if (pnfs_ff_deviceid(&f->fi_servers[i], id) != 0)
			return err_set(-EINVAL, "fi_servers[%u]: %s", i,
				       err_msg());
	return 0;
}

/* The units: whole aligned segments of w, consecutive, server indices in
 * range for every copy the layout lists. */
static int file_units_check(const struct pnfs_ff_file *f, uint32_t w)
{
	const struct pnfs_ff_unit *u = f->fi_units;
	uint32_t c, copies = file_copies(f);

	if (u == NULL || f->fi_units_nr == 0 || f->fi_units_nr % w != 0 ||
	    u[0].un_index % w != 0)
		return err_set(-EINVAL, "fi_units: %u units from %" PRIu64
			       " are not whole segments of %u (pnfs_ff_span)",
			       f->fi_units_nr, u ? u[0].un_index : 0, w);
	if (f->fi_layout == CLOVIS_LAYOUT_PLAIN &&
	    (f->fi_units_nr != 1 || u[0].un_index != 0))
		return err_set(-EINVAL, "fi_units: %u units from %" PRIu64 ": "
			       "a PLAIN object has unit 0 only",
			       f->fi_units_nr, u[0].un_index);
	for (uint32_t i = 0; i < f->fi_units_nr; i++) {
		if (u[i].un_index != u[0].un_index + i)
			return err_set(-EINVAL, "fi_units[%u].un_index %" PRIu64
				       ": not %" PRIu64, i, u[i].un_index,
				       u[0].un_index + i);
		for (c = 0; c < copies; c++)
			if (u[i].un_server[c] != PNFS_FF_NO_SERVER &&
			    u[i].un_server[c] >= f->fi_servers_nr)
				return err_set(-EINVAL, "fi_units[%u].un_server"
					       "[%u] %u: only %u servers", i,
					       c, u[i].un_server[c],
					       f->fi_servers_nr);
	}
	return 0;
}

/* Readable copies of unit u; *srv[m] the server of the m-th of them. */
static uint32_t unit_readable(const struct pnfs_ff_file *f,
			      const struct pnfs_ff_unit *u, uint32_t *srv)
{
	uint32_t m = 0;

	for (uint32_t c = 0; c < file_copies(f); c++)
		if (u->un_server[c] != PNFS_FF_NO_SERVER)
			srv[m++] = u->un_server[c];
	return m;
}

/* Mirrors of the segment of units u[0..w): the fewest readable copies. */
static int seg_mirrors(const struct pnfs_ff_file *f,
		       const struct pnfs_ff_unit *u, uint32_t w,
		       uint32_t *mirrors)
{
	uint32_t srv[PNFS_FF_MIRRORS_MAX], m = PNFS_FF_MIRRORS_MAX;

	for (uint32_t i = 0; i < w; i++) {
		uint32_t r = unit_readable(f, &u[i], srv);

		if (r == 0 && f->fi_layout == CLOVIS_LAYOUT_PLAIN)
			return err_set(-ENOTSUP, "object %" PRIx64 ":%" PRIx64
				       ": PLAIN on an unknown server",
				       f->fi_id.ci_hi, f->fi_id.ci_lo);
		if (r == 0)
			return err_set(-ENODEV, "unit %" PRIu64 " has no "
				       "readable copy: its segment is read "
				       "through the MDS", u[i].un_index);
		m = r < m ? r : m;
	}
	*mirrors = m;
	return 0;
}

/* Fill one data server entry: server s holding unit `unit`. */
static void ds_fill(const struct pnfs_ff_file *f, uint32_t s, uint64_t unit,
		    struct pnfs_ff_ds *ds)
{
	const struct pnfs_ff_server *sv = &f->fi_servers[s];
	struct pnfs_ff_fh fh = {f->fi_layout, f->fi_epoch, f->fi_id, unit};

	memset(ds, 0, sizeof *ds);
	pnfs_ff_deviceid(sv, ds->ds_deviceid); /* checked in file_meta_check */
	ds->ds_efficiency = sv->sv_efficiency;
	ds->ds_fh_nr = 1;
	ds->ds_fh_len[0] = PNFS_FF_FH_SIZE;
	pnfs_ff_fh_make(&fh, ds->ds_fh[0]);
	strcpy(ds->ds_user, f->fi_user);
	strcpy(ds->ds_group, f->fi_group);
}

/* Segment of units u[0..w) into s, its data servers into ds. */
static void seg_fill(const struct pnfs_ff_file *f,
		     const struct pnfs_ff_unit *u, uint32_t w,
		     uint32_t mirrors, struct pnfs_ff_seg *s,
		     struct pnfs_ff_ds *ds)
{
	uint32_t srv[PNFS_FF_MIRRORS_MAX];
	bool plain = f->fi_layout == CLOVIS_LAYOUT_PLAIN;

	s->sg_offset = plain ? 0 : u[0].un_index << f->fi_unit_shift;
	s->sg_length = plain ? PNFS_FF_LENGTH_EOF :
		       (uint64_t)w << f->fi_unit_shift;
	s->sg_layout = (struct pnfs_ff_layout){
		.fl_stripe_unit = w > 1 ? 1ull << f->fi_unit_shift : 0,
		.fl_mirrors = mirrors,
		.fl_width = w,
		.fl_ds = ds,
		.fl_flags = f->fi_flags,
		.fl_stats_hint = f->fi_stats_hint,
	};
	/* the stripe index of unit u is u mod w (RFC 8435 section 6) */
	for (uint32_t i = 0; i < w; i++) {
		uint32_t at = (uint32_t)(u[i].un_index % w);

		unit_readable(f, &u[i], srv);
		for (uint32_t m = 0; m < mirrors; m++)
			ds_fill(f, srv[m], u[i].un_index, &ds[m * w + at]);
	}
}

/* Do units first .. first + nr - 1 of 2^shift bytes end below 2^64? */
static bool units_below_2_64(uint64_t first, uint32_t nr, uint32_t shift)
{
	uint64_t lim = UINT64_MAX >> shift;

	return first < lim && nr <= lim - first;
}

int pnfs_ff_map(const struct pnfs_ff_file *f, struct pnfs_ff_seg *segs,
		uint32_t segs_max, uint32_t *segs_nr, struct pnfs_ff_ds *ds,
		uint32_t ds_max)
{
	uint32_t w = 1, nsegs, mirrors = 0, used = 0;
	int rc;

	if (segs_nr == NULL || f == NULL || segs == NULL || ds == NULL)
		return err_set(-EINVAL, "map: NULL argument");
	*segs_nr = 0;
	if ((rc = geom_check(f, &w)) != 0 || (rc = file_meta_check(f)) != 0 ||
	    (rc = file_units_check(f, w)) != 0)
		return rc;
	if (f->fi_layout != CLOVIS_LAYOUT_PLAIN &&
	    !units_below_2_64(f->fi_units[0].un_index, f->fi_units_nr,
			      f->fi_unit_shift))
		return err_set(-EOVERFLOW, "fi_units: %u units from %" PRIu64
			       " pass 2^64 bytes", f->fi_units_nr,
			       f->fi_units[0].un_index);
	nsegs = f->fi_units_nr / w;
	if (nsegs > segs_max)
		return err_set(-EOVERFLOW, "map: %u segments, segs_max %u",
			       nsegs, segs_max);
	for (uint32_t s = 0; s < nsegs; s++) {
		const struct pnfs_ff_unit *u = &f->fi_units[s * w];

		if ((rc = seg_mirrors(f, u, w, &mirrors)) != 0)
			return rc;
		if (mirrors * w > ds_max - used)
			return err_set(-EOVERFLOW, "map: segment %u needs %u "
				       "data servers, %u of ds_max %u left", s,
				       mirrors * w, ds_max - used, ds_max);
		seg_fill(f, u, w, mirrors, &segs[s], &ds[used]);
		used += mirrors * w;
	}
	*segs_nr = nsegs;
	return 0;
}

/* ------------------------------------------------------------- ff_layout4 */

/* The rules of struct pnfs_ff_layout, for the encoder and the decoder. */
static int ds_check(const struct pnfs_ff_ds *ds, uint32_t m, uint32_t i)
{
	if (ds->ds_fh_nr < 1 || ds->ds_fh_nr > PNFS_FF_FH_VERS_MAX)
		return err_set(-EINVAL, "ffl_mirrors[%u] data server %u: "
			       "ffds_fh_vers has %u handles, not 1..%u", m, i,
			       ds->ds_fh_nr, PNFS_FF_FH_VERS_MAX);
	for (uint32_t v = 0; v < ds->ds_fh_nr; v++)
		if (ds->ds_fh_len[v] < 1 || ds->ds_fh_len[v] > PNFS_FF_FH_MAX)
			return err_set(-EINVAL, "ffl_mirrors[%u] data server "
				       "%u: ffds_fh_vers[%u] of %u bytes, not "
				       "1..%u", m, i, v, ds->ds_fh_len[v],
				       PNFS_FF_FH_MAX);
	if (memchr(ds->ds_user, '\0', sizeof ds->ds_user) == NULL ||
	    memchr(ds->ds_group, '\0', sizeof ds->ds_group) == NULL)
		return err_set(-EINVAL, "ffl_mirrors[%u] data server %u: "
			       "ffds_user or ffds_group not terminated", m, i);
	return 0;
}

static int layout_check(const struct pnfs_ff_layout *l)
{
	if (l == NULL || l->fl_ds == NULL)
		return err_set(-EINVAL, "ff_layout4: NULL layout or fl_ds");
	if (l->fl_mirrors < 1 || l->fl_mirrors > PNFS_FF_MIRRORS_MAX)
		return err_set(-EINVAL, "ff_layout4: ffl_mirrors count %u, not "
			       "1..%u", l->fl_mirrors, PNFS_FF_MIRRORS_MAX);
	if (l->fl_width < 1 || l->fl_width > PNFS_FF_WIDTH_MAX)
		return err_set(-EINVAL, "ff_layout4: ffm_data_servers count "
			       "%u, not 1..%u", l->fl_width, PNFS_FF_WIDTH_MAX);
	if ((l->fl_width == 1) != (l->fl_stripe_unit == 0))
		return err_set(-EINVAL, "ff_layout4: ffl_stripe_unit %" PRIu64
			       " with %u data servers (0 exactly when one)",
			       l->fl_stripe_unit, l->fl_width);
	for (uint32_t m = 0; m < l->fl_mirrors; m++)
		for (uint32_t i = 0; i < l->fl_width; i++)
			if (ds_check(&l->fl_ds[m * l->fl_width + i], m, i))
				return -EINVAL;
	return 0;
}

static void ds_encode(struct xw *w, const struct pnfs_ff_ds *ds)
{
	xw_fixed(w, ds->ds_deviceid, PNFS_FF_DEVICEID_SIZE);
	xw_u32(w, ds->ds_efficiency);
	xw_u32(w, ds->ds_stateid_seqid);
	xw_fixed(w, ds->ds_stateid_other, PNFS_FF_STATEID_OTHER_SIZE);
	xw_u32(w, ds->ds_fh_nr);
	for (uint32_t v = 0; v < ds->ds_fh_nr; v++)
		xw_opaque(w, ds->ds_fh[v], ds->ds_fh_len[v]);
	xw_opaque(w, ds->ds_user, strlen(ds->ds_user));
	xw_opaque(w, ds->ds_group, strlen(ds->ds_group));
}

static void layout_encode(struct xw *w, const struct pnfs_ff_layout *l)
{
	xw_u64(w, l->fl_stripe_unit);
	xw_u32(w, l->fl_mirrors);
	for (uint32_t m = 0; m < l->fl_mirrors; m++) {
		xw_u32(w, l->fl_width);
		for (uint32_t i = 0; i < l->fl_width; i++)
			ds_encode(w, &l->fl_ds[m * l->fl_width + i]);
	}
	xw_u32(w, l->fl_flags);
	xw_u32(w, l->fl_stats_hint);
}

int pnfs_ff_layout_encode(const struct pnfs_ff_layout *l, uint8_t *buf,
			  size_t size, size_t *len)
{
	struct xw w = {buf, buf ? size : 0, 0};

	if (len == NULL)
		return err_set(-EINVAL, "ff_layout4: NULL len");
	*len = 0;
	if (layout_check(l) != 0)
		return -EINVAL;
	layout_encode(&w, l);
	return xw_end(&w, "ff_layout4", len);
}

static void ds_decode(struct xr *r, struct pnfs_ff_ds *ds)
{
	memset(ds, 0, sizeof *ds);
	xr_fixed(r, ds->ds_deviceid, PNFS_FF_DEVICEID_SIZE, "ffds_deviceid");
	ds->ds_efficiency = xr_u32(r, "ffds_efficiency");
	ds->ds_stateid_seqid = xr_u32(r, "ffds_stateid");
	xr_fixed(r, ds->ds_stateid_other, PNFS_FF_STATEID_OTHER_SIZE,
		 "ffds_stateid");
	ds->ds_fh_nr = xr_count(r, XDR_UNIT, PNFS_FF_FH_VERS_MAX,
				"ffds_fh_vers");
	for (uint32_t v = 0; v < ds->ds_fh_nr; v++)
		xr_opaque(r, ds->ds_fh[v], PNFS_FF_FH_MAX, PNFS_FF_FH_MAX,
			  &ds->ds_fh_len[v], "ffds_fh_vers");
	xr_string(r, ds->ds_user, PNFS_FF_OWNER_MAX, "ffds_user");
	xr_string(r, ds->ds_group, PNFS_FF_OWNER_MAX, "ffds_group");
}

/* One mirror: its count must be the first mirror's (l->fl_width). */
static void mirror_decode(struct xr *r, struct pnfs_ff_layout *l,
			  uint32_t m, uint32_t ds_max)
{
	uint32_t n = xr_count(r, DS_WIRE_MIN, PNFS_FF_WIDTH_MAX,
			      "ffm_data_servers");

	if (r->r_rc != 0)
		return;
	if (m == 0) {
		l->fl_width = n;
		if (n != 0 && l->fl_mirrors > ds_max / n) {
			xr_fail(r, -EOVERFLOW, "ffm_data_servers", "more "
				"than the caller's ds_max");
			return;
		}
	} else if (n != l->fl_width) {
		xr_fail(r, -EINVAL, "ffm_data_servers", "count differs from "
			"mirror 0's");
		return;
	}
	for (uint32_t i = 0; i < n && r->r_rc == 0; i++) {
		r->r_ds = (int)i;
		ds_decode(r, &l->fl_ds[m * n + i]);
	}
}

static void layout_decode(struct xr *r, struct pnfs_ff_layout *l,
			  struct pnfs_ff_ds *ds, uint32_t ds_max)
{
	memset(l, 0, sizeof *l);
	l->fl_ds = ds;
	l->fl_stripe_unit = xr_u64(r, "ffl_stripe_unit");
	l->fl_mirrors = xr_count(r, XDR_UNIT, PNFS_FF_MIRRORS_MAX,
				 "ffl_mirrors");
	for (uint32_t m = 0; m < l->fl_mirrors && r->r_rc == 0; m++) {
		r->r_mirror = (int)m;
		r->r_ds = -1;
		mirror_decode(r, l, m, ds_max);
	}
	r->r_mirror = r->r_ds = -1;
	l->fl_flags = xr_u32(r, "ffl_flags");
	l->fl_stats_hint = xr_u32(r, "ffl_stats_collect_hint");
}

int pnfs_ff_layout_decode(const uint8_t *buf, size_t len,
			  struct pnfs_ff_layout *l, struct pnfs_ff_ds *ds,
			  uint32_t ds_max)
{
	struct xr r;

	if (l == NULL || (ds == NULL && ds_max != 0))
		return err_set(-EINVAL, "ff_layout4: NULL layout or ds");
	xr_init(&r, buf, len, "ff_layout4");
	layout_decode(&r, l, ds, ds_max);
	if (xr_end(&r) != 0)
		return r.r_rc;
	return layout_check(l);
}

/* -------------------------------------------------------- ff_device_addr4 */

static int devaddr_check(const struct pnfs_ff_devaddr *d)
{
	int rc;

	if (d == NULL)
		return err_set(-EINVAL, "ff_device_addr4: NULL");
	if (d->fd_addrs_nr < 1 || d->fd_addrs_nr > PNFS_FF_ADDRS_MAX ||
	    d->fd_versions_nr < 1 || d->fd_versions_nr > PNFS_FF_VERSIONS_MAX)
		return err_set(-EINVAL, "ff_device_addr4: %u addresses, %u "
			       "versions (need 1..%u, 1..%u)", d->fd_addrs_nr,
			       d->fd_versions_nr, PNFS_FF_ADDRS_MAX,
			       PNFS_FF_VERSIONS_MAX);
	for (uint32_t i = 0; i < d->fd_addrs_nr; i++)
		if ((rc = pnfs_ff_addr_check(&d->fd_addrs[i], NULL)) != 0)
			return err_set(rc, "ffda_netaddrs[%u]: %s", i,
				       err_msg());
	return 0;
}

int pnfs_ff_devaddr_encode(const struct pnfs_ff_devaddr *d, uint8_t *buf,
			   size_t size, size_t *len)
{
	struct xw w = {buf, buf ? size : 0, 0};
	int rc;

	if (len == NULL)
		return err_set(-EINVAL, "ff_device_addr4: NULL len");
	*len = 0;
	if ((rc = devaddr_check(d)) != 0)
		return rc;
	xw_u32(&w, d->fd_addrs_nr);
	for (uint32_t i = 0; i < d->fd_addrs_nr; i++) {
		xw_opaque(&w, d->fd_addrs[i].fa_netid,
			  strlen(d->fd_addrs[i].fa_netid));
		xw_opaque(&w, d->fd_addrs[i].fa_uaddr,
			  strlen(d->fd_addrs[i].fa_uaddr));
	}
	xw_u32(&w, d->fd_versions_nr);
	for (uint32_t i = 0; i < d->fd_versions_nr; i++) {
		const struct pnfs_ff_version *v = &d->fd_versions[i];

		xw_u32(&w, v->fv_version);
		xw_u32(&w, v->fv_minor);
		xw_u32(&w, v->fv_rsize);
		xw_u32(&w, v->fv_wsize);
		xw_u32(&w, v->fv_tightly_coupled ? 1 : 0);
	}
	return xw_end(&w, "ff_device_addr4", len);
}

int pnfs_ff_devaddr_decode(const uint8_t *buf, size_t len,
			   struct pnfs_ff_devaddr *d)
{
	struct xr r;

	if (d == NULL)
		return err_set(-EINVAL, "ff_device_addr4: NULL");
	memset(d, 0, sizeof *d);
	xr_init(&r, buf, len, "ff_device_addr4");
	d->fd_addrs_nr = xr_count(&r, NETADDR_WIRE_MIN, PNFS_FF_ADDRS_MAX,
				  "ffda_netaddrs");
	for (uint32_t i = 0; i < d->fd_addrs_nr && r.r_rc == 0; i++) {
		xr_string(&r, d->fd_addrs[i].fa_netid, PNFS_FF_NETID_MAX - 1,
			  "na_r_netid");
		xr_string(&r, d->fd_addrs[i].fa_uaddr, PNFS_FF_UADDR_MAX - 1,
			  "na_r_addr");
	}
	d->fd_versions_nr = xr_count(&r, VERSION_WIRE, PNFS_FF_VERSIONS_MAX,
				     "ffda_versions");
	for (uint32_t i = 0; i < d->fd_versions_nr && r.r_rc == 0; i++) {
		struct pnfs_ff_version *v = &d->fd_versions[i];

		v->fv_version = xr_u32(&r, "ffdv_version");
		v->fv_minor = xr_u32(&r, "ffdv_minorversion");
		v->fv_rsize = xr_u32(&r, "ffdv_rsize");
		v->fv_wsize = xr_u32(&r, "ffdv_wsize");
		v->fv_tightly_coupled = xr_bool(&r, "ffdv_tightly_coupled");
	}
	if (xr_end(&r) != 0)
		return r.r_rc;
	return devaddr_check(d);
}

/* ---------------------------------------------------------------- layout4 */

static int seg_check(const struct pnfs_ff_seg *s, uint32_t iomode)
{
	if (s == NULL)
		return err_set(-EINVAL, "layout4: NULL segment");
	if (iomode != PNFS_FF_IOMODE_READ && iomode != PNFS_FF_IOMODE_RW)
		return err_set(-EINVAL, "layout4: lo_iomode %u, not READ (1) "
			       "or RW (2)", iomode);
	if (s->sg_length == 0 || (s->sg_length != PNFS_FF_LENGTH_EOF &&
				  s->sg_length - 1 > UINT64_MAX - s->sg_offset))
		return err_set(-EINVAL, "layout4: lo_offset %" PRIu64 ", "
			       "lo_length %" PRIu64 ": empty or past 2^64",
			       s->sg_offset, s->sg_length);
	return 0;
}

int pnfs_ff_seg_encode(const struct pnfs_ff_seg *s, uint32_t iomode,
		       uint8_t *buf, size_t size, size_t *len)
{
	struct xw w = {buf, buf ? size : 0, 0}, body = {NULL, 0, 0};

	if (len == NULL)
		return err_set(-EINVAL, "layout4: NULL len");
	*len = 0;
	if (seg_check(s, iomode) != 0 || layout_check(&s->sg_layout) != 0)
		return -EINVAL;
	layout_encode(&body, &s->sg_layout); /* counts loc_body's length */
	xw_u64(&w, s->sg_offset);
	xw_u64(&w, s->sg_length);
	xw_u32(&w, iomode);
	xw_u32(&w, PNFS_FF_LAYOUT4_FLEX_FILES);
	xw_u32(&w, (uint32_t)body.w_len);
	layout_encode(&w, &s->sg_layout); /* a multiple of 4: no padding */
	return xw_end(&w, "layout4", len);
}

int pnfs_ff_seg_decode(const uint8_t *buf, size_t len, struct pnfs_ff_seg *s,
		       uint32_t *iomode, struct pnfs_ff_ds *ds, uint32_t ds_max)
{
	struct xr r;
	uint32_t type, body;
	int rc;

	if (s == NULL || iomode == NULL)
		return err_set(-EINVAL, "layout4: NULL segment or iomode");
	memset(s, 0, sizeof *s);
	xr_init(&r, buf, len, "layout4");
	s->sg_offset = xr_u64(&r, "lo_offset");
	s->sg_length = xr_u64(&r, "lo_length");
	*iomode = xr_u32(&r, "lo_iomode");
	type = xr_u32(&r, "loc_type");
	if (r.r_rc == 0 && type != PNFS_FF_LAYOUT4_FLEX_FILES)
		xr_fail(&r, -ENOTSUP, "loc_type", "is not flexfiles (4)");
	body = xr_count(&r, 1, UINT32_MAX, "loc_body");
	if (r.r_rc != 0)
		return r.r_rc;
	rc = pnfs_ff_layout_decode(buf + r.r_pos, body, &s->sg_layout, ds,
				   ds_max);
	if (rc != 0)
		return err_set(rc, "layout4 loc_body: %s", err_msg());
	xr_fixed(&r, NULL, body, "loc_body");
	if (xr_end(&r) != 0)
		return r.r_rc;
	return seg_check(s, *iomode);
}
