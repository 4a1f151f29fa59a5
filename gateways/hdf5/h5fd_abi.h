/*
 * h5fd_abi.h — our own declarations of what a virtual file driver plugin
 * of HDF5 1.14 and 2.0 sees of HDF5: its basic types, the driver class
 * H5FD_class_t in its "version 1" layout (H5FD_CLASS_VERSION 1, the same
 * in 1.14.x and 2.0.0), the file struct H5FD_t, the open flags and driver
 * feature bits the Strata driver uses, and the plugin entry points HDF5
 * looks up in every library of HDF5_PLUGIN_PATH.
 *
 * No HDF5 >= 1.12 headers can be installed on our machines (Debian 12 has
 * 1.10 only; PyPI's h5py wheels bundle the library without headers,
 * docs/hdf5.md), so they are written here from HDF5's published driver
 * documentation (H5FDdevelop.h, H5FDpublic.h, H5PLextern.h of 1.14 and
 * 2.0) and checked by running the plugin under h5py's bundled
 * libhdf5 2.0.0 (tests/integ/hdf5_h5py_test.sh).  Only the plugin build of
 * h5fd_strata.c includes this file; it is never used with HDF5's own
 * headers.
 *
 * Differences from 1.10's H5FD_class_t (used by the static build): the
 * fields version and value come first, and read_vector, write_vector,
 * read_selection, write_selection (after write), del and ctl (after
 * unlock) are added.  H5FD_t is unchanged.
 */
#ifndef STRATA_H5FD_ABI_H
#define STRATA_H5FD_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------ basic types */

typedef int64_t hid_t;          /* 64-bit since 1.10 */
typedef int herr_t;
typedef int htri_t;
typedef bool hbool_t;           /* <stdbool.h> bool since 1.14 */
typedef unsigned long long hsize_t;
typedef uint64_t haddr_t;
#define HADDR_UNDEF ((haddr_t)(int64_t)(-1))
#define H5I_INVALID_HID ((hid_t)-1)
#define H5E_DEFAULT ((hid_t)0)

/* ------------------------------------------------- files and drivers */

#define H5F_ACC_RDONLY 0x0000u
#define H5F_ACC_RDWR 0x0001u
#define H5F_ACC_TRUNC 0x0002u
#define H5F_ACC_EXCL 0x0004u
#define H5F_ACC_CREAT 0x0010u

typedef enum H5F_close_degree_t {
	H5F_CLOSE_DEFAULT = 0,
	H5F_CLOSE_WEAK = 1,
	H5F_CLOSE_SEMI = 2,
	H5F_CLOSE_STRONG = 3,
} H5F_close_degree_t;

/** Kinds of file memory; a driver's free-list map names one per kind. */
typedef enum H5F_mem_t {
	H5FD_MEM_NOLIST = -1,
	H5FD_MEM_DEFAULT = 0,
	H5FD_MEM_SUPER = 1,
	H5FD_MEM_BTREE = 2,
	H5FD_MEM_DRAW = 3,
	H5FD_MEM_GHEAP = 4,
	H5FD_MEM_LHEAP = 5,
	H5FD_MEM_OHDR = 6,
	H5FD_MEM_NTYPES
} H5F_mem_t;
typedef H5F_mem_t H5FD_mem_t;

/** Raw data apart from every kind of metadata (as the sec2 driver). */
#define H5FD_FLMAP_DICHOTOMY                                              \
	{H5FD_MEM_SUPER, H5FD_MEM_SUPER, H5FD_MEM_SUPER, H5FD_MEM_DRAW,   \
	 H5FD_MEM_DRAW, H5FD_MEM_SUPER, H5FD_MEM_SUPER}

/* Feature bits a driver's query callback returns. */
#define H5FD_FEAT_AGGREGATE_METADATA 0x00000001
#define H5FD_FEAT_ACCUMULATE_METADATA_WRITE 0x00000002
#define H5FD_FEAT_ACCUMULATE_METADATA_READ 0x00000004
#define H5FD_FEAT_ACCUMULATE_METADATA                                     \
	(H5FD_FEAT_ACCUMULATE_METADATA_WRITE |                            \
	 H5FD_FEAT_ACCUMULATE_METADATA_READ)
#define H5FD_FEAT_DATA_SIEVE 0x00000008
#define H5FD_FEAT_AGGREGATE_SMALLDATA 0x00000010

/** The class struct version this layout is. */
#define H5FD_CLASS_VERSION 0x01
typedef int H5FD_class_value_t;

typedef struct H5FD_t H5FD_t;

/** A driver class, "version 1" (HDF5 1.14.0 .. 2.0.0). */
typedef struct H5FD_class_t {
	unsigned version;
	H5FD_class_value_t value;
	const char *name;
	haddr_t maxaddr;
	H5F_close_degree_t fc_degree;
	herr_t (*terminate)(void);
	hsize_t (*sb_size)(H5FD_t *file);
	herr_t (*sb_encode)(H5FD_t *file, char *name, unsigned char *p);
	herr_t (*sb_decode)(H5FD_t *f, const char *name,
			    const unsigned char *p);
	size_t fapl_size;
	void *(*fapl_get)(H5FD_t *file);
	void *(*fapl_copy)(const void *fapl);
	herr_t (*fapl_free)(void *fapl);
	size_t dxpl_size;
	void *(*dxpl_copy)(const void *dxpl);
	herr_t (*dxpl_free)(void *dxpl);
	H5FD_t *(*open)(const char *name, unsigned flags, hid_t fapl,
			haddr_t maxaddr);
	herr_t (*close)(H5FD_t *file);
	int (*cmp)(const H5FD_t *f1, const H5FD_t *f2);
	herr_t (*query)(const H5FD_t *f1, unsigned long *flags);
	herr_t (*get_type_map)(const H5FD_t *file, H5FD_mem_t *type_map);
	haddr_t (*alloc)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl_id,
			 hsize_t size);
	herr_t (*free)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl_id,
		       haddr_t addr, hsize_t size);
	haddr_t (*get_eoa)(const H5FD_t *file, H5FD_mem_t type);
	herr_t (*set_eoa)(H5FD_t *file, H5FD_mem_t type, haddr_t addr);
	haddr_t (*get_eof)(const H5FD_t *file, H5FD_mem_t type);
	herr_t (*get_handle)(H5FD_t *file, hid_t fapl, void **file_handle);
	herr_t (*read)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
		       haddr_t addr, size_t size, void *buffer);
	herr_t (*write)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
			haddr_t addr, size_t size, const void *buffer);
	/* NULL in our driver: HDF5 then turns vectors and selections into
	 * read and write calls. */
	herr_t (*read_vector)(H5FD_t *file, hid_t dxpl, uint32_t count,
			      H5FD_mem_t types[], haddr_t addrs[],
			      size_t sizes[], void *bufs[]);
	herr_t (*write_vector)(H5FD_t *file, hid_t dxpl, uint32_t count,
			       H5FD_mem_t types[], haddr_t addrs[],
			       size_t sizes[], const void *bufs[]);
	herr_t (*read_selection)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
				 size_t count, hid_t mem_spaces[],
				 hid_t file_spaces[], haddr_t offsets[],
				 size_t element_sizes[], void *bufs[]);
	herr_t (*write_selection)(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
				  size_t count, hid_t mem_spaces[],
				  hid_t file_spaces[], haddr_t offsets[],
				  size_t element_sizes[], const void *bufs[]);
	herr_t (*flush)(H5FD_t *file, hid_t dxpl_id, hbool_t closing);
	herr_t (*truncate)(H5FD_t *file, hid_t dxpl_id, hbool_t closing);
	herr_t (*lock)(H5FD_t *file, hbool_t rw);
	herr_t (*unlock)(H5FD_t *file);
	herr_t (*del)(const char *name, hid_t fapl);
	herr_t (*ctl)(H5FD_t *file, uint64_t op_code, uint64_t flags,
		      const void *input, void **output);
	H5FD_mem_t fl_map[H5FD_MEM_NTYPES];
} H5FD_class_t;

/** The head of every open file; the driver allocates it with its own
 *  fields after it, HDF5 fills these. */
struct H5FD_t {
	hid_t driver_id;
	const H5FD_class_t *cls;
	unsigned long fileno;
	unsigned access_flags;
	unsigned long feature_flags;
	haddr_t maxaddr;
	haddr_t base_addr;
	hsize_t threshold;
	hsize_t alignment;
	hbool_t paged_aggr;
};

/* ---------------------------------------------------------- plugins */

typedef enum H5PL_type_t {
	H5PL_TYPE_ERROR = -1,
	H5PL_TYPE_FILTER = 0,
	H5PL_TYPE_VOL = 1,
	H5PL_TYPE_VFD = 2,
	H5PL_TYPE_NONE = 3,
} H5PL_type_t;

/* What HDF5 calls in a plugin library (exported by name). */
H5PL_type_t H5PLget_plugin_type(void);
const void *H5PLget_plugin_info(void);

/* ------------------------------------ HDF5 functions the plugin calls
 * (looked up at run time in the libhdf5 that loaded it: h5fd_strata.c) */

typedef herr_t (*h5abi_get_libversion_t)(unsigned *maj, unsigned *min,
					 unsigned *rel);
typedef ssize_t (*h5abi_get_driver_config_str_t)(hid_t fapl, char *buf,
						 size_t size);
typedef herr_t (*h5abi_epush2_t)(hid_t stack, const char *file,
				 const char *func, unsigned line, hid_t cls,
				 hid_t maj, hid_t min, const char *fmt, ...);

#endif /* STRATA_H5FD_ABI_H */
