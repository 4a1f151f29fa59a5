/*
 * strata_h5.h — the Strata HDF5 virtual file driver (VFD): an HDF5 file
 * stored as one Strata object (issue 34; docs/hdf5.md).
 *
 * HDF5 keeps a file as a byte address space: the driver maps it onto the
 * blocks of one Clovis object, so every HDF5 feature keeps working and the
 * object holds the native file format byte for byte (`strata obj get`
 * exports a file any HDF5 tool reads).  This header is the driver's
 * contract for C programs built against HDF5 1.10 (Debian's libhdf5-dev:
 * -I/usr/include/hdf5/serial, -L/usr/lib/x86_64-linux-gnu/hdf5/serial
 * -lhdf5).  The same driver is also built as a plugin that HDF5 >= 1.14
 * loads by name (HDF5_DRIVER=strata, HDF5_PLUGIN_PATH=BUILD/hdf5-plugin),
 * for programs that cannot call H5Pset_fapl_strata(), h5py among them:
 * see docs/hdf5.md.
 *
 * Link: libstrata_h5.a (this driver) with libstrata.a (or -lstrata) and
 * HDF5; or libstrata_h5.so, which needs libstrata.so.0 and HDF5.
 *
 * Names
 * -----
 * A file is named by a URL
 *
 *     strata://CONTAINER/NAME
 *
 *   CONTAINER  "default" (the store's default container, where the
 *              `strata obj` commands work), "@name" or "HI:LO" (a
 *              container id as clovis_id_parse() reads it), or a bare
 *              word W, meaning "@W".  The container must exist: the
 *              driver never creates containers.
 *   NAME       the object: "@name" or "HI:LO" as clovis_id_parse() reads
 *              them (the same ids `strata obj get @name` takes), or any
 *              other non-empty text T (it may hold '/'), meaning "@T";
 *              text with ':' and no leading '@' is read as HI:LO.
 *
 * The name given to H5Fcreate()/H5Fopen() with a strata fapl is either
 * such a URL, or a bare NAME, which is then an object of the container of
 * the fapl's url (the default container when that url is NULL or has no
 * container).  When the H5F name is not a URL and the fapl's url names an
 * object too, the fapl's url names the file (the H5F name is then only
 * HDF5's label for it).
 *
 * The store
 * ---------
 * A file's store is an embedded store (a data directory; the driver opens
 * it in this process, and no other process may have it open meanwhile) or
 * a cluster (a cluster file, docs/cluster.md).  It comes from the conf of
 * H5Pset_fapl_strata(), else (NULL conf, or one naming no store) from the
 * environment at open: STRATA_H5_CLUSTER (a cluster file), else
 * STRATA_H5_DATA (a data directory).  Files of one store opened together
 * share one Clovis instance; it is closed with the last of them.  An
 * embedded store that does not exist is created when a file is created
 * (H5F_ACC_CREAT or H5F_ACC_TRUNC), with the devices of the conf
 * (nvram_dir, dev_size).
 *
 * What the object holds
 * ---------------------
 * The object's bytes 0..EOF are the HDF5 file.  The driver keeps the
 * file's end of address (EOA) and end of file (EOF) in a record of the
 * container's driver index (an index of the container whose id is
 * "@strata.h5.meta/CONTAINER-HI:LO", key: the object's 16-byte id,
 * big-endian), because Clovis objects carry no attributes of their own
 * but a byte size (clovis.h); the byte size (oa_size_bytes) is set to EOF
 * too, so `strata obj get` exports exactly the file.  An object without a
 * record (stored by `strata obj put`) is opened with EOF = its byte size.
 * I/O moves whole blocks: a write that starts or ends inside a block reads
 * that block first (the last few partial blocks written are kept in
 * memory, so sequential writes read nothing); bytes at and past EOF always
 * read as zeros, as in a POSIX file.
 *
 * Durability
 * ----------
 * A write returns once the store has applied it (EXECUTED: every later
 * read sees it); H5Fflush() and H5Fclose() return once every write before
 * them and the EOA/EOF record are durable (STABLE, clovis.h): a process
 * killed after H5Fflush() returned finds the flushed file on reopen.
 * Between flushes a crash may leave any subset of the writes since the
 * last flush (HDF5's own rule for every driver).
 *
 * Errors
 * ------
 * HDF5 calls fail as HDF5 calls do (negative hid_t or herr_t), with the
 * driver's message pushed on the HDF5 error stack.  strata_h5_errno() and
 * strata_h5_errmsg() then give the driver's negative errno and message
 * (naming the URL, the object or the container) for the calling thread:
 *   -EINVAL        a bad URL or configuration (the message names the
 *                  text), or no store configured;
 *   -ENAMETOOLONG  a URL or path past its limit (STRATA_H5_URL_MAX,
 *                  STRATA_H5_PATH_MAX);
 *   -ENOENT        no such container, or no such object and no
 *                  H5F_ACC_CREAT; no embedded store at the directory when
 *                  opening (not creating) a file;
 *   -EEXIST        H5F_ACC_EXCL and the object exists;
 *   -EILSEQ        the object is not an HDF5 file (no HDF5 signature at
 *                  byte 0 nor at 512, 1024, 2048 ... below its EOF);
 *   -EBUSY         the embedded store is open in another process;
 *   -EFBIG         an address past the driver's or the file's maximum;
 *   -EBADF         a write to a file opened read-only, or to a file whose
 *                  earlier write failed (the handle refuses further
 *                  writes: close it);
 *   and every code of clovis.h (-EIO, -ENOSPC, -ETIMEDOUT, -EHOSTDOWN ...).
 * A failed open changes nothing in the store.
 */
#ifndef STRATA_H5_H
#define STRATA_H5_H

#include <stdint.h>

#include <hdf5.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_H5_API __attribute__((visibility("default")))

/** The driver's name (HDF5_DRIVER=strata for the plugin). */
#define STRATA_H5_NAME "strata"
/** Its H5FD_class_value_t in HDF5 >= 1.14 (the plugin): a value of HDF5's
 *  range for unregistered drivers (256..511). */
#define STRATA_H5_VALUE 501
/** Longest URL, with its NUL. */
#define STRATA_H5_URL_MAX 1024u
/** Longest store path (data directory, cluster file, NVRAM directory),
 *  with its NUL. */
#define STRATA_H5_PATH_MAX 1024u

/**
 * Where a file's store is and how new objects are made.  Zero-initialise,
 * then set what you need; a zero field takes the default beside it.
 * Strings are copied by H5Pset_fapl_strata().
 */
struct strata_h5_conf {
	/** Embedded store directory; NULL: see cluster_file. */
	const char *data_dir;
	/** Cluster file (docs/cluster.md); NULL: see data_dir.  Giving both
	 *  is -EINVAL; giving neither takes the environment (above). */
	const char *cluster_file;
	/** Embedded store created by the driver: its NVRAM device directory
	 *  (clovis_conf.cc_nvram_dir); NULL: /dev/shm. */
	const char *nvram_dir;
	/** Embedded store created by the driver: each device's size in bytes
	 *  (clovis_conf.cc_dev_size); 0: the Clovis default. */
	uint64_t dev_size;
	/** Block size of objects the driver creates, a power of two from
	 *  512 B to 64 MiB; 0: 4096. */
	uint32_t block_size;
	/** Tier of objects the driver creates when their container's default
	 *  layout is plain (enum clovis_tier + 1: 1 nvram, 2 flash, 3 sas,
	 *  4 smr); 0: flash. */
	uint32_t tier;
};

/**
 * The driver's id, registering it with HDF5 on first use (HDF5 1.10 has no
 * driver plugins: a program registers the driver itself).  Returns the id,
 * or H5I_INVALID_HID (-1) when HDF5 refuses the registration.
 */
STRATA_H5_API hid_t H5FD_strata_init(void);
#define H5FD_STRATA (H5FD_strata_init())

/**
 * Make fapl (a file access property list) use the Strata driver.
 *
 * url: NULL, or "strata://CONTAINER" or "strata://CONTAINER/NAME" (above):
 * the container of bare names given to H5Fcreate()/H5Fopen(), or the file
 * itself.  conf: the store and the creation defaults; NULL: every default,
 * the store from the environment at open.  Both are checked and copied
 * here.  The ids of the URL (containers and objects) are looked up only at
 * open.
 *
 * Returns a non-negative value, or a negative one with strata_h5_errno()
 * -EINVAL (bad fapl, URL or conf: the message names it) or -ENAMETOOLONG;
 * fapl is then unchanged.
 */
STRATA_H5_API herr_t H5Pset_fapl_strata(hid_t fapl, const char *url,
					const struct strata_h5_conf *conf);

/** The negative errno of this thread's last failed driver call (0 if
 *  none). */
STRATA_H5_API int strata_h5_errno(void);

/** The message of this thread's last failed driver call ("" if none),
 *  naming the URL, container or object at fault.  Valid until the
 *  thread's next failing driver call. */
STRATA_H5_API const char *strata_h5_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif /* STRATA_H5_H */
