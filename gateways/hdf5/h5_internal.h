/*
 * h5_internal.h — the HDF5 driver's store side, shared by h5_store.c
 * (URLs, configuration, the stores of this process, opening an object and
 * its EOA/EOF record) and h5_io.c (byte I/O over whole blocks, flush).
 * Nothing here includes HDF5: these files are compiled once and linked into
 * both builds of the driver (h5fd_strata.c against HDF5 1.10's headers for
 * libstrata_h5, and against h5fd_abi.h for the HDF5 >= 1.14 plugin).
 */
#ifndef STRATA_H5_INTERNAL_H
#define STRATA_H5_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clovis/clovis.h"

#define SH5_HIDDEN __attribute__((visibility("hidden")))

/* ---------------------------------------------------------------- limits */

/** Longest URL and store path with the NUL (strata_h5.h). */
#define SH5_URL_MAX 1024u
#define SH5_PATH_MAX 1024u
/** Longest driver message: a URL, an id and a reason fit. */
#define SH5_MSG_MAX 1536u
/** Bytes of one READ or WRITE op the driver launches: a larger HDF5 request
 *  is cut into ops of this size (CLOVIS_OP_BYTES_MAX is 256 MiB; 16 MiB
 *  keeps the bounce buffers small while a 1 MiB chunk is one op). */
#define SH5_OP_BYTES (16u << 20)
/** Writes applied (EXECUTED) but not yet known durable that one file keeps
 *  in flight, with their bounce buffers, before waiting for the oldest:
 *  enough to keep a sequence of chunk writes from waiting on each commit's
 *  sync, bounded so that memory stays within SH5_PENDING_BYTES. */
#define SH5_PENDING_MAX 64u
#define SH5_PENDING_BYTES (128u << 20)
/** Partial blocks of recent writes kept per file, so that the next write
 *  sharing one reads nothing (sequential chunks share their edge blocks;
 *  HDF5's metadata flush writes pieces of a few blocks). */
#define SH5_EDGE_NR 16u
/** Read-ahead: a read of at least SH5_RA_MIN bytes that continues the
 *  previous one (or that read-ahead served) launches a READ of the range
 *  of the same size that follows it, so that the store works on the next
 *  chunk while HDF5 copies this one.  Two slots: the one being copied
 *  from and the one in flight.  Smaller reads (HDF5's metadata) neither
 *  launch nor break a sequence. */
#define SH5_RA_SLOTS 2u
#define SH5_RA_MIN (64u << 10)
/** Offsets probed for the HDF5 signature besides 0: 512 << k below EOF
 *  (HDF5 places a user block's end at a power of two, at least 512). */
#define SH5_SIG_PROBES 16u
/** How long a driver op may take before the driver gives up on it: the
 *  cluster's own call timeout ends a stuck op first; this only bounds a
 *  wait the store never ends (a bug), so that HDF5 gets an error. */
#define SH5_WAIT_NS (600ll * 1000000000ll)

/* ------------------------------------------------------------ errors */

/** Record rc and a message for this thread (strata_h5_errno/errmsg);
 *  returns rc. */
SH5_HIDDEN int sh5_fail(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
SH5_HIDDEN int sh5_errno_get(void);
SH5_HIDDEN const char *sh5_errmsg_get(void);

/* ------------------------------------------------------ configuration */

/**
 * A file access configuration as the fapl keeps it: a flat, copyable
 * struct (HDF5 copies driver info with memcpy or fapl_copy).
 */
struct sh5_fa {
	uint32_t fa_magic;
	uint32_t fa_block_size;        /**< 0: 4096 */
	uint32_t fa_tier;              /**< clovis tier + 1; 0: flash */
	uint32_t fa_pad;
	uint64_t fa_dev_size;
	char fa_url[SH5_URL_MAX];      /**< "" or a strata:// URL */
	char fa_data[SH5_PATH_MAX];    /**< "" or a data directory */
	char fa_cluster[SH5_PATH_MAX]; /**< "" or a cluster file */
	char fa_nvram[SH5_PATH_MAX];   /**< "" or the NVRAM directory */
};
#define SH5_FA_MAGIC 0x53483546u /* "SH5F" */

/** Fill fa from a configuration string "data=DIR", "cluster=FILE",
 *  "block=SIZE", "nvram=DIR", "dev_size=SIZE", "tier=T" (items separated
 *  by ',' or ';'; SIZE with K, M or G); url may be NULL.  0, -EINVAL,
 *  -ENAMETOOLONG (message names the item). */
SH5_HIDDEN int sh5_fa_parse(struct sh5_fa *fa, const char *url,
			    const char *config);
/** Check url (NULL or a strata:// URL, container and optional name) and
 *  copy it into fa.  0, -EINVAL, -ENAMETOOLONG. */
SH5_HIDDEN int sh5_fa_set_url(struct sh5_fa *fa, const char *url);
/** Copy a path into one of fa's fields; NULL leaves it "". */
SH5_HIDDEN int sh5_fa_set_path(char *dst, const char *src, const char *what);
/** Check block size and tier.  0 or -EINVAL. */
SH5_HIDDEN int sh5_fa_check(const struct sh5_fa *fa);

/* -------------------------------------------------------------- files */

/** Open flags of sh5_open() (HDF5's H5F_ACC_* meanings). */
enum sh5_open_flags {
	SH5_O_RDWR = 1u << 0,
	SH5_O_TRUNC = 1u << 1,
	SH5_O_EXCL = 1u << 2,
	SH5_O_CREAT = 1u << 3,
};

struct sh5_store;

/** One cached block: a partial block of a recent write. */
struct sh5_edge {
	uint64_t eg_blk;
	uint64_t eg_used;  /**< LRU clock; 0: free */
	char *eg_data;
};

/** A write applied and not yet known durable. */
struct sh5_pending {
	struct clovis_op *pd_op;
	void *pd_buf;
	size_t pd_len;
	uint64_t pd_blk, pd_nblk;
	struct clovis_extvec pd_ev;
	struct clovis_bufvec pd_bv;
};

/** A read-ahead slot: a READ of blocks [ra_blk, ra_blk + ra_nblk) into
 *  ra_buf, in flight or done; ra_op NULL when the slot is empty. */
struct sh5_ra {
	struct clovis_op *ra_op;
	void *ra_buf;
	size_t ra_cap, ra_len;
	uint64_t ra_blk, ra_nblk;
	struct clovis_extvec ra_ev;
	struct clovis_bufvec ra_bv;
};

/**
 * An open file: one object of one container of one store.  Used by one
 * HDF5 file at a time (HDF5 serialises a file's driver calls).
 */
struct sh5_file {
	struct sh5_store *fi_store;
	struct clovis_container fi_cont;
	struct clovis_realm *fi_realm;
	struct clovis_obj fi_obj;
	struct clovis_idx fi_meta;     /**< the container's driver index */
	bool fi_meta_open;
	bool fi_rdwr;
	int fi_failed;                 /**< first failed write's rc, sticky */
	char fi_name[2 * SH5_URL_MAX + 64]; /**< for messages: URL (HI:LO) */
	uint32_t fi_shift;
	uint64_t fi_bsize;
	uint64_t fi_eoa, fi_eof;       /**< now */
	uint64_t fi_saved_eoa, fi_saved_eof; /**< in the record */
	bool fi_saved;                 /**< a record exists */
	uint64_t fi_blocks;            /**< blocks that may hold data */
	uint64_t fi_clock;
	struct sh5_edge fi_edge[SH5_EDGE_NR];
	struct sh5_pending fi_pend[SH5_PENDING_MAX];
	uint32_t fi_pend_head, fi_pend_nr;
	uint64_t fi_pend_bytes;
	char *fi_rbuf;                 /**< a read's bounce buffer */
	size_t fi_rbuf_len;
	struct sh5_ra fi_ra[SH5_RA_SLOTS];
	uint64_t fi_rd_end;            /**< end of the last read >= RA_MIN */
};

/**
 * Open (or create) the file named by name under fa: the URL rules of
 * strata_h5.h, the store from fa or the environment.  flags: SH5_O_*.
 * Returns 0 and *out, or a negative errno with the thread's message set;
 * nothing in the store changed then.
 */
SH5_HIDDEN int sh5_open(const char *name, const struct sh5_fa *fa,
			uint32_t flags, struct sh5_file **out);
/** Flush (as sh5_flush), then release everything; 0 or the first error
 *  (the file is closed either way). */
SH5_HIDDEN int sh5_close(struct sh5_file *f);
/** Delete the object named by name (and its record).  0, -ENOENT, ... */
SH5_HIDDEN int sh5_delete(const char *name, const struct sh5_fa *fa);
/** Whether a and b are the same object of the same store: <0, 0, >0. */
SH5_HIDDEN int sh5_cmp(const struct sh5_file *a, const struct sh5_file *b);

/* h5_store.c, used by h5_io.c */
SH5_HIDDEN int sh5_meta_save(struct sh5_file *f);
SH5_HIDDEN int sh5_wait(struct clovis_op *op, uint32_t states);

/* ----------------------------------------------------------------- I/O */

SH5_HIDDEN int sh5_read(struct sh5_file *f, uint64_t addr, size_t size,
			void *buf);
SH5_HIDDEN int sh5_write(struct sh5_file *f, uint64_t addr, size_t size,
			 const void *buf);
/** Every write durable, then the EOA/EOF record when it changed. */
SH5_HIDDEN int sh5_flush(struct sh5_file *f);
/** Make EOF = EOA (HDF5's truncate: grows or shrinks the file; bytes past
 *  the new EOF read as zeros). */
SH5_HIDDEN int sh5_truncate(struct sh5_file *f);
/** Blocks [from, blocks) punched and the block holding eof zeroed past
 *  it, so that bytes at and past eof read as zeros. */
SH5_HIDDEN int sh5_zero_past(struct sh5_file *f, uint64_t eof);
/** Wait for every pending write to be durable and free it. */
SH5_HIDDEN int sh5_drain(struct sh5_file *f);
/** Drop the cached blocks (before the object is deleted or remade). */
SH5_HIDDEN void sh5_edge_clear(struct sh5_file *f);
/** Wait for the read-ahead in flight and drop it (before anything changes
 *  the object's blocks); fini also frees its buffers. */
SH5_HIDDEN void sh5_ra_clear(struct sh5_file *f);
SH5_HIDDEN void sh5_ra_fini(struct sh5_file *f);
/** Whether the HDF5 signature is at one of the offsets HDF5 looks at. */
SH5_HIDDEN int sh5_is_hdf5(struct sh5_file *f);

#endif /* STRATA_H5_INTERNAL_H */
