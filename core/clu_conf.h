/*
 * clu_conf.h — the cluster configuration: one YAML file naming the cluster,
 * its secret, its servers (address, port, data directory, devices) and the
 * pools and default layouts every server's store is made with.
 *
 * Format (every key in docs/cluster.md):
 *
 *   cluster:
 *     name: dev                    # required, 1..31 of [A-Za-z0-9_.-]
 *     secret: "at least 16 bytes"  # or secret_file: PATH (one of the two)
 *     provider: "tcp;ofi_rxm"      # libfabric provider (default)
 *     index_replicas: 3            # R, default min(3, servers)
 *     meta_replicas: 3             # copies of each home's metadata store
 *                                  # (the home + standbys), default
 *                                  # CLU_META_REPLICAS_DEFAULT with etcd,
 *                                  # 1 without; capped at the servers;
 *                                  # 1 = not replicated
 *     connect_timeout: 2s          # default 2 s
 *     call_timeout: 30s            # default 30 s
 *     etcd: [ "http://127.0.0.1:23790" ]  # optional: the HA cluster map
 *     ha_lease: 5s                 # HA membership lease (2s..60s, whole s)
 *     ha_rules: default            # the analyzer's presets: default, test
 *     ha_down_out: 600s            # FAILED -> OUT delay (else the preset's)
 *     ha_start_grace: 300s         # a server of the map that has not
 *                                  # registered by then (after a whole-
 *                                  # cluster stop) is taken as gone
 *                                  # (default 300 s, 20 s with ha_rules test)
 *   servers:                       # 1..CLU_SERVERS_MAX
 *     - name: s0
 *       address: 127.0.0.1         # IPv4, IPv6 ("::1", quoted) or a host name
 *       port: 21000
 *       data_dir: /var/lib/strata/s0
 *       nvram_dir: /dev/shm        # optional
 *       meta_nvram: true           # optional: metadata on nvram_dir
 *       enclosure: rack1           # optional failure domain (HA)
 *       device_size: 64MiB         # optional (else the top-level one)
 *       devices: [ ... ]           # the store syntax (docs/configuration.md)
 *   device_size: 256MiB            # optional default for every server
 *   device_fill: reserve           # optional: zero (default) or reserve
 *   pools: [ ... ]                 # the store syntax, applied per server
 *   layouts: { ... }               # the store syntax
 *   device_model: { ... }          # the store syntax
 *
 * Each server's store configuration (cs_store_yaml) is made from its own
 * devices plus the shared pools, layouts, device model and device_fill, and
 * checked with conf_parse() (core/conf.h), so the device, pool and layout
 * rules are the store's own.  Errors name the file line and key ("cluster
 * line 7: servers[1].port: 70000 is not a port (1..65535)").
 *
 * Ownership: a struct clu_conf owns everything it points to; clu_conf_fini()
 * frees it.  Parsing fills a caller's struct only on success.
 */
#ifndef STRATA_CORE_CLU_CONF_H
#define STRATA_CORE_CLU_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

/* Servers in one cluster: placement hashes over the list, and a client keeps
 * one connection per server; 64 is far beyond what loopback tests run and
 * keeps the per-client tables small. */
#define CLU_SERVERS_MAX 64u
/** Longest server address or host name (RFC 1123: 253 characters). */
#define CLU_HOST_MAX 253u
/** Longest host name label (RFC 1123: 63 characters). */
#define CLU_LABEL_MAX 63u
/** A numeric address as text, IPv4 or IPv6 (INET6_ADDRSTRLEN, with its
 *  terminating NUL). */
#define CLU_IP_MAX 46u
/* Cluster and server names: shown in tables and used as directory names. */
#define CLU_NAME_MAX 31u
/* Secret: at least 16 bytes (128 bits) for HMAC-SHA256; at most 1 KiB. */
#define CLU_SECRET_MIN 16u
#define CLU_SECRET_MAX 1024u
/* Index replicas R: at most this many (and at most the servers). */
#define CLU_REPLICAS_MAX 8u
/** cluster.meta_replicas when the file has none and names etcd
 *  (docs/cluster.md "Replicated homes"): the home and two standbys, so
 *  that a dead server's home is taken over (capped at the servers).
 *  Without etcd (no HA map, nothing can move a home) the default is 1. */
#define CLU_META_REPLICAS_DEFAULT 3u
/* Largest cluster file (read whole, and sent whole by CONF_GET). */
#define CLU_TEXT_MAX (256u << 10)
/* etcd endpoints of the HA cluster map: etcd advises at most 7 members
 * (ETCD_ENDPOINTS_MAX, ha/ha_limits.h, is the same). */
#define CLU_ETCD_MAX 7u
/* One endpoint: "http://" + an IPv6 address in brackets or a host name
 * (CLU_HOST_MAX) + ":65535". */
#define CLU_URL_MAX (7u + 2u + CLU_HOST_MAX + 6u)
/* The HA membership lease: etcd grants no TTL below about 1.5 election
 * timeouts (1.5 s with its defaults), and a server is fenced after one TTL
 * without renewal, so 2 s is the shortest that works; a minute is the
 * longest anyone should wait to see a dead server. */
#define CLU_HA_LEASE_MIN_S 2u
#define CLU_HA_LEASE_MAX_S 60u
#define CLU_HA_LEASE_S_DEFAULT 5u

/** One server of the cluster. */
struct clu_server {
	char cs_name[CLU_NAME_MAX + 1];
	char cs_addr[CLU_HOST_MAX + 1]; /**< as written: IPv4, IPv6 or a
					 *   host name */
	/** The numeric address cs_addr resolved to (clu_conf_resolve()),
	 *  "" until then and with provider "shm". */
	char cs_ip[CLU_IP_MAX];
	uint16_t cs_port;
	char cs_data_dir[256];     /**< absolute */
	char cs_nvram_dir[256];    /**< "" = the store's default */
	/** meta_nvram: its store is created with the metadata on
	 *  cs_nvram_dir (ST_CONF_META_NVRAM) */
	bool cs_meta_nvram;
	char *cs_store_yaml;       /**< its store configuration (owned) */
	/** Failure domain (servers[].enclosure); "" = its own (the HA map
	 *  takes the server's name). */
	char cs_enclosure[CLU_NAME_MAX + 1];
	uint32_t cs_line;          /**< line of its entry in the file */
};

/** A whole cluster configuration. */
#define CLU_ISC_NATIVE_MAX 8u
#ifndef CLU_PATH_MAX
#define CLU_PATH_MAX 255u
#endif

struct clu_conf {
	char cc_name[CLU_NAME_MAX + 1];
	uint8_t cc_secret[CLU_SECRET_MAX];
	size_t cc_secret_len;
	char cc_provider[64];       /**< "tcp;ofi_rxm" unless set */
	uint32_t cc_replicas;       /**< index replicas R, 1..servers */
	/** Copies of each home's metadata store: the home and
	 *  cc_meta_replicas - 1 standbys (core/server/srv_repl.h), 1..servers
	 *  (the file's value capped at the servers); 1 = off. */
	uint32_t cc_meta_replicas;
	uint32_t cc_connect_ms;
	uint32_t cc_call_ms;
	uint32_t cc_nr_servers;
	struct clu_server *cc_servers; /**< owned */
	/** cluster.etcd: the endpoints of the etcd that holds the HA cluster
	 *  map ("http://HOST:PORT"); cc_nr_etcd 0 = no HA (no etcd key). */
	uint32_t cc_nr_etcd;
	/** HA (docs/ha.md): the membership lease (s), the analyzer's test
	 *  presets (ha/analyzer.h ha_rules_init_test), and the FAILED -> OUT
	 *  delay overriding the preset's (0: the preset's). */
	uint32_t cc_ha_lease_s;
	bool cc_ha_test_rules;
	uint32_t cc_ha_down_out_ms;
	uint32_t cc_ha_start_grace_ms; /* 0: the preset's (ha_start_grace_ms()) */
	char cc_etcd[CLU_ETCD_MAX][CLU_URL_MAX + 1];
	/** Function shipping: the native functions' shared objects every
	 *  server may load (cluster.isc_native: absolute paths; none: every
	 *  native function refused; docs/isc.md). */
	char cc_isc_native[CLU_ISC_NATIVE_MAX][CLU_PATH_MAX + 1];
	uint32_t cc_nr_isc_native;
	char *cc_text;              /**< the file's text (owned; CONF_GET) */
	size_t cc_text_len;
};

/** clu_conf_parse() flags. */
enum clu_parse_flags {
	/** The secret comes from the caller (a client that fetched the text
	 *  from a server it already authenticated to): secret and
	 *  secret_file are not read. */
	CLU_PARSE_NO_SECRET = 1u << 0,
};

/**
 * Parse len bytes of cluster YAML into *c.  base_dir resolves relative
 * data_dir and secret_file paths (NULL: the current directory).  Returns 0,
 * -EINVAL with a message naming the line and key, or -ENOMEM.  On error *c
 * is untouched.
 */
int clu_conf_parse(struct clu_conf *c, const char *text, size_t len,
		   const char *base_dir, uint32_t flags);

/** Read and parse the file at path (relative paths resolve against its
 *  directory).  Adds -ENOENT/-EACCES/-EFBIG... naming the path. */
int clu_conf_load(struct clu_conf *c, const char *path);

/** Free what c owns and zero it (a zeroed or NULL c is fine). */
void clu_conf_fini(struct clu_conf *c);

/** Index of the server called name, or -ENOENT (message). */
int clu_server_find(const struct clu_conf *c, const char *name);

/**
 * The home server of an entity: a stable hash of its 128-bit id over the
 * server list (the same on every machine and version).  Replica i (0..R-1)
 * of an index is server (home + i) % nr_servers: ring order.
 */
uint32_t clu_home(const struct clu_conf *c, const struct st_id *id);

/** Is addr a dotted IPv4 address, an IPv6 address (inet_pton(AF_INET6):
 *  no brackets, no zone "%eth0") or a well-formed host name (RFC 1123:
 *  labels of 1..63 letters, digits and '-', not starting or ending with
 *  '-', the last one not all digits; at most CLU_HOST_MAX characters)?
 *  Any address is accepted: which hosts a cluster runs on is its user's
 *  choice (the test scripts' own ranges are in tests/README.md). */
bool clu_addr_valid(const char *addr);

/**
 * Parse "ADDR:PORT" (cc_server, strata --server): ADDR an IPv4 address or
 * a host name, or an IPv6 address in brackets ("[::1]:21000"; without
 * them the port could not be told from the address, so "::1:21000" is
 * refused); PORT a number in 1..65535.  Returns 0 with addr (len >
 * CLU_HOST_MAX) and *port filled, or -EINVAL with a message quoting s and
 * saying what is expected.
 */
int clu_hostport_parse(const char *s, char *addr, size_t len,
		       uint16_t *port);

/**
 * Resolve server s's address (getaddrinfo, AF_UNSPEC: IPv4 or IPv6; the
 * first address it returns) into ip (len >= CLU_IP_MAX) as a numeric
 * address.  A numeric cs_addr is taken as it is (no look-up).
 * Returns 0, or -EHOSTUNREACH with a message naming the server, the name
 * and the resolver's reason ("server s1: address 'db.invalid' does not
 * resolve: Name or service not known").
 */
int clu_server_resolve(const struct clu_server *s, char *ip, size_t len);

/**
 * The address to reach server s of cluster c at, into ip (len >
 * CLU_HOST_MAX): with provider "shm" cs_addr as written (it only names the
 * server's shared-memory region, on this host: nothing to look up); else
 * its cs_ip once resolved, or clu_server_resolve() now.  Returns 0 or its
 * error.
 */
int clu_addr_resolve(const struct clu_conf *c, const struct clu_server *s,
		     char *ip, size_t len);

/**
 * Resolve every server's address once, at start, into its cs_ip
 * (clu_server_resolve(); with provider "shm" nothing is looked up and
 * cs_ip stays "").  Returns 0, or the first server's error, or -EINVAL
 * when two servers resolve to one address with one port ("::1" and
 * "0::1"); then no cs_ip is changed.  A server process calls it before it serves; a
 * client's peer table (core/server/peers.h) resolves the servers whose
 * cs_ip is "" when it is made.
 */
int clu_conf_resolve(struct clu_conf *c);

/** "ADDR:PORT" of server s as written in its file, an IPv6 address in
 *  brackets ("[::1]:21000"), into buf; returns buf. */
const char *clu_server_where(const struct clu_server *s, char *buf,
			     size_t len);

#endif
