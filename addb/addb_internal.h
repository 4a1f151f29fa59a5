/*
 * addb_internal.h — what addb.c and trace.c share: the region's header
 * (its layout on /dev/shm) and the helpers around it.  Not for other rooms.
 */
#ifndef STRATA_ADDB_INTERNAL_H
#define STRATA_ADDB_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#define ADDB_MAGIC "STRADDB"
#define ADDB_VERSION 2u
/* Rows of a region: row 0 and one per thread for the first 63 threads
 * that update (a server's RPC, executor and I/O threads, an application's
 * workers); later threads share rows 1..63 (still exact: atomic adds).
 * A thread's trace ring is the one of its row. */
#define ADDB_ROWS 64u
#define ADDB_SHM_DIR "/dev/shm"
#define ADDB_SHM_PREFIX "strata-addb."

/** The metrics region's header (/dev/shm/strata-addb.PID). */
struct addb_hdr {
	char ah_magic[8];
	uint32_t ah_version;
	uint32_t ah_hdr_size;
	uint64_t ah_catalog;     /**< addb_catalog_hash() of the writer */
	uint64_t ah_pid;
	uint64_t ah_start_ns;    /**< CLOCK_REALTIME */
	char ah_kind[32];
	uint32_t ah_nr_rows;
	uint32_t ah_row_words;
	uint32_t ah_dev_slots;
	uint32_t ah_peer_slots;
	uint32_t ah_label_max;
	uint32_t ah_rows_used;   /**< rows taken (atomic), row 0 included */
	uint64_t ah_dev_off;
	uint64_t ah_peer_off;
	uint64_t ah_rows_off;
	uint64_t ah_size;        /**< bytes of the region */
	/** The trace switch, written by the process (addb_trace_set()) or
	 *  by a tool through the file (`strata addb trace`): 0 off, N one op
	 *  in N traced.  Read by the process at each op it starts. */
	uint32_t ah_trace_sample;
	/** The bound of the trace file in MiB (0: the default), read when
	 *  the trace file is made. */
	uint32_t ah_trace_mib;
};
_Static_assert(sizeof(struct addb_hdr) == 136, "addb_hdr is on disk");

/** The region's header, made at the first call (NULL: no memory). */
struct addb_hdr *addb_hdr_get(void);
/** The calling thread's row index (its trace ring). */
uint32_t addb_thread_index(void);
/** 64-bit words of a row. */
uint32_t addb_row_words(void);
/** Whether a running process holds the region file open as fd (its
 *  shared flock). */
bool addb_region_owned(int fd);
/** A new region file at path, made exclusively (a file left there by a
 *  process that no longer runs is removed first); fd or -errno. */
int addb_region_create(const char *path);
/** trace.c: the region's switch is h's (once the region is made). */
void addb_trace_attach(struct addb_hdr *h);
/** trace.c: a forked child has neither switch nor trace file. */
void addb_trace_atfork_child(void);

#endif
